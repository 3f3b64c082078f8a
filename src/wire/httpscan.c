/* Threads: any thread (pure functions). */
/* A connection's bytes scanned as evhttp will frame them: see httpscan.h. Any thread.
 *
 * One byte-driven state machine over the whole stream, request after request. Lines end at LF;
 * a CR just before it is not part of the line (evbuffer_readln's EVBUFFER_EOL_CRLF), so a CR
 * is held (the *_CR states) until the next byte says which it was. */
#include "wire/httpscan.h"

#include <stdbool.h>
#include <string.h>

enum {
    /* looked at byte by byte (step), with fast paths at a line's start (feed) */
    ST_REQ,        /* before a request line's first byte */
    ST_METHOD,     /* in the method: the request line's text before its first space */
    ST_HLINE,      /* before a header line's first byte */
    ST_HLINE_CR,   /* after a header line's first byte, a CR */
    ST_NAME,       /* in a header name that may still be Content-Length or Transfer-Encoding */
    ST_VALUE_LEAD, /* after the colon of one of them: leading spaces */
    ST_VALUE,      /* in its value */
    ST_VALUE_CR,   /* in its value, after a CR */
    ST_CSIZE,      /* in a chunk-size line */
    ST_CSIZE_CR,   /* in a chunk-size line, after a CR */
    ST_CDATA_END,  /* right after a chunk's data: CRLF must follow */
    ST_CDATA_CR,   /* after that CR */
    ST_TRAILER,    /* before a trailer line's first byte */
    ST_TRAILER_CR, /* after a trailer line's first byte, a CR */
    /* skipped in bulk (feed) */
    ST_BODY,        /* in a body of known length (left bytes to go) */
    ST_CDATA,       /* in a chunk's data (left bytes to go) */
    ST_LINE_REST,   /* in the rest of the request line */
    ST_SKIP_HEAD,   /* in a header line that is neither */
    ST_SKIP_TRAILER /* in a trailer line */
};

/* what the method means for the body (evhttp_method_may_have_body) and the connection */
enum { M_BODY, M_HEAD, M_END };

/* header bits: the candidates while a name is read, then the one it is */
enum { H_OTHER = 0, H_CL = 1, H_TE = 2 };

/* flags: per head (F_CL .. F_BAD), per value (F_TRAIL, F_JUNK), per chunked body
 * (F_TRAILERS) */
enum {
    F_CL = 1,         /* a Content-Length came (its value is in left) */
    F_TE = 2,         /* a Transfer-Encoding came */
    F_CHUNKED = 4,    /* ... and it is "chunked" */
    F_BAD = 8,        /* the framing is ambiguous: the server closes the connection after it */
    F_TRAIL = 16,     /* the value has had trailing blanks: anything else after them is junk */
    F_JUNK = 32,      /* the value is not a plain one */
    F_TRAILERS = 128, /* the chunked body's trailers are being read */
};

static const char CL_NAME[] = "content-length";    /* 14 */
static const char TE_NAME[] = "transfer-encoding"; /* 17 */

void httpscan_init(httpscan_t *s)
{
    memset(s, 0, sizeof *s);
    s->state = ST_REQ;
}

bool httpscan_between(const httpscan_t *s)
{
    return s->state == ST_REQ;
}

/* Whether the state is in a head, after its first byte. */
static bool in_head(const httpscan_t *s)
{
    return (s->state > ST_REQ && s->state < ST_CSIZE) || s->state == ST_LINE_REST ||
           s->state == ST_SKIP_HEAD;
}

const char *httpscan_body_end(const httpscan_t *s)
{
    if (s->status == HTTPSCAN_HEAD_TOO_BIG && s->line_at == s->head_at)
        return "GET / HTTP/1.1\r\n\r\n"; /* the request line itself: a stand-in */
    if ((s->status == HTTPSCAN_HEAD_TOO_BIG || s->status == HTTPSCAN_BODY_TOO_BIG) && in_head(s))
        return "\r\n";
    return s->flags & F_TRAILERS ? "\r\n" : "0\r\n\r\n";
}

uint64_t httpscan_cut_at(const httpscan_t *s, uint64_t held, const char **end)
{
    *end = httpscan_body_end(s);
    bool limit = s->status == HTTPSCAN_HEAD_TOO_BIG || s->status == HTTPSCAN_BODY_TOO_BIG;
    if (limit && in_head(s) && s->frame_at > s->head_at && s->frame_at >= held &&
        s->frame_at < s->line_at)
        return s->frame_at; /* the head ends before its framing: *end is its end already */
    return s->line_at;
}

/* A method's bytes, big-endian in a word (at most 8). */
#define M3(a, b, c) ((uint64_t)(a) << 16 | (uint64_t)(b) << 8 | (uint64_t)(c))
#define M4(a, b, c, d) (M3(a, b, c) << 8 | (uint64_t)(d))
#define M5(a, b, c, d, e) (M4(a, b, c, d) << 8 | (uint64_t)(e))
#define M6(a, b, c, d, e, f) (M5(a, b, c, d, e) << 8 | (uint64_t)(f))
#define M7(a, b, c, d, e, f, g) (M6(a, b, c, d, e, f) << 8 | (uint64_t)(g))

static uint8_t method_kind(uint64_t packed, uint32_t len)
{
    switch (len) {
    case 3:
        return packed == M3('G', 'E', 'T') || packed == M3('P', 'U', 'T') ? M_BODY : M_END;
    case 4:
        return packed == M4('P', 'O', 'S', 'T')   ? M_BODY
               : packed == M4('H', 'E', 'A', 'D') ? M_HEAD
                                                  : M_END;
    case 5:
        return packed == M5('P', 'A', 'T', 'C', 'H') ? M_BODY : M_END;
    case 6:
        return packed == M6('D', 'E', 'L', 'E', 'T', 'E') ? M_BODY : M_END;
    case 7:
        return packed == M7('O', 'P', 'T', 'I', 'O', 'N', 'S') ? M_BODY : M_END;
    default:
        return M_END; /* CONNECT (refused, closed), TRACE and the rest (evhttp: 501, closed) */
    }
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void fault(httpscan_t *s, httpscan_status_t st)
{
    s->status = st;
}

/* A header name turned out to be Content-Length or Transfer-Encoding (h), its colon read. */
static void name_matched(httpscan_t *s, uint8_t h)
{
    uint8_t seen = h == H_CL ? F_CL : F_TE;
    if (!(s->flags & (F_CL | F_TE)))
        s->frame_at = s->line_at;
    if (s->flags & seen)
        s->flags |= F_BAD; /* twice: framing_problem refuses it */
    s->flags |= seen;
    s->header = s->last = h;
    s->n = 0;
    s->value = 0;
    s->state = ST_VALUE_LEAD;
}

/* The end of a Content-Length or Transfer-Encoding value. */
static void value_end(httpscan_t *s)
{
    bool plain = !(s->flags & F_JUNK) && s->n > 0;
    if (s->header == H_CL) {
        if (plain)
            s->left = s->value;
        else
            s->flags |= F_BAD;
    } else if (plain && s->n == 7) {
        s->flags |= F_CHUNKED;
    } else {
        s->flags |= F_BAD; /* another coding: framing_problem refuses it */
    }
    s->flags &= (uint8_t) ~(F_TRAIL | F_JUNK);
    s->state = ST_HLINE;
}

/* The empty line after a head: where its body, if any, ends. */
static void head_end(httpscan_t *s)
{
    if (s->max_head && s->pos - s->head_at >= s->max_head) {
        fault(s, HTTPSCAN_HEAD_TOO_BIG); /* its LF is the first byte past the limit */
        return;
    }
    uint8_t f = s->flags;
    s->flags = 0;
    if (s->method == M_END || (f & F_BAD) || ((f & F_CL) && (f & F_TE))) {
        s->status = HTTPSCAN_STOPPED; /* the connection ends with this request */
        return;
    }
    if (s->method == M_HEAD && ((f & F_TE) || ((f & F_CL) && s->left > 0))) {
        /* evhttp reads no body after HEAD, but a proxy that frames by the head would send one:
         * what follows is not framed alike, so the connection ends with this request */
        s->status = HTTPSCAN_STOPPED;
        return;
    }
    if (s->method == M_HEAD) { /* no body */
        s->state = ST_REQ;
    } else if (f & F_CHUNKED) {
        s->state = ST_CSIZE;
        s->line_at = s->pos + 1;
        s->n = 0;
        s->value = 0;
        s->body = 0;
    } else if ((f & F_CL) && s->max_body && s->left > s->max_body) {
        fault(s, HTTPSCAN_BODY_TOO_BIG); /* line_at: the empty line; the state stays a head's */
    } else if ((f & F_CL) && s->left > 0) {
        s->state = ST_BODY;
    } else {
        s->state = ST_REQ;
    }
}

/* The end of a chunk-size line. */
static void size_end(httpscan_t *s)
{
    if (s->n == 0) {
        fault(s, HTTPSCAN_BAD_CHUNK); /* an empty line where a size belongs */
    } else if (s->max_body && s->value > s->max_body - s->body) {
        fault(s, HTTPSCAN_BODY_TOO_BIG); /* (evhttp's test: the data so far and this size) */
    } else if (s->value == 0) {
        s->flags |= F_TRAILERS;
        s->state = ST_TRAILER;
        s->line_at = s->pos + 1;
    } else {
        s->left = s->value;
        s->body += s->value;
        s->state = ST_CDATA;
    }
}

static void start_size_line(httpscan_t *s)
{
    s->state = ST_CSIZE;
    s->line_at = s->pos + 1;
    s->n = 0;
    s->value = 0;
}

/* One byte of the request line: its first byte, the method. */
static bool step_request_line(httpscan_t *s, unsigned char c)
{
    switch (s->state) {
    case ST_REQ:
        s->request++;
        s->line_at = s->head_at = s->pos;
        s->frame_at = 0;
        s->n = 0;
        s->value = 0;
        s->flags = 0;
        s->state = ST_METHOD;
        return false;
    case ST_METHOD:
        if (c == 0) {
            fault(s, HTTPSCAN_NUL);
        } else if (c == '\n') {
            s->status = HTTPSCAN_STOPPED; /* no space: evhttp refuses the line and closes */
        } else if (c == ' ') {
            s->method = method_kind(s->value, s->n);
            s->state = ST_LINE_REST;
        } else {
            if (s->n < 8)
                s->value = s->value << 8 | c;
            s->n++;
        }
        return true;
    }
    return true;
}

/* One byte of a header line's start and its name (is it Content-Length or Transfer-Encoding?). */
static bool step_header_name(httpscan_t *s, unsigned char c)
{
    switch (s->state) {
    case ST_HLINE:
        s->line_at = s->pos;
        if (c == '\n') {
            head_end(s);
        } else if (c == '\r') {
            s->state = ST_HLINE_CR;
        } else if (c == 0) {
            fault(s, HTTPSCAN_NUL);
        } else if (c == ' ' || c == '\t') {
            /* a folded line continues the last header: one of the two, and its value is not
             * what it seemed */
            if (s->last != H_OTHER)
                s->flags |= F_BAD;
            s->state = ST_SKIP_HEAD;
        } else {
            s->last = H_OTHER;
            s->header = H_CL | H_TE;
            s->n = 0;
            s->state = ST_NAME;
            return false;
        }
        return true;
    case ST_HLINE_CR:
        if (c == '\n') {
            head_end(s);
            return true;
        }
        s->last = H_OTHER; /* a name that starts with CR: neither */
        s->state = ST_SKIP_HEAD;
        return false;
    case ST_NAME:
        if (c == 0) {
            fault(s, HTTPSCAN_NUL);
        } else if (c == '\n') {
            s->state = ST_HLINE; /* no colon: evhttp refuses the head and closes */
        } else if (c == ':') {
            uint8_t h = (s->header & H_CL) && s->n == 14   ? H_CL
                        : (s->header & H_TE) && s->n == 17 ? H_TE
                                                           : H_OTHER;
            if (h == H_OTHER)
                s->state = ST_SKIP_HEAD;
            else
                name_matched(s, h);
        } else {
            int l = lower(c);
            if (s->n >= 14 || CL_NAME[s->n] != l)
                s->header &= (uint8_t)~H_CL;
            if (s->n >= 17 || TE_NAME[s->n] != l)
                s->header &= (uint8_t)~H_TE;
            s->n++;
            if (!s->header)
                s->state = ST_SKIP_HEAD;
        }
        return true;
    }
    return true;
}

/* One byte of the value of a Content-Length or Transfer-Encoding. */
static bool step_header_value(httpscan_t *s, unsigned char c)
{
    switch (s->state) {
    case ST_VALUE_LEAD:
        if (c == ' ')
            return true; /* evhttp skips leading spaces (not tabs) */
        s->state = ST_VALUE;
        return false;
    case ST_VALUE:
        if (c == 0) {
            fault(s, HTTPSCAN_NUL);
        } else if (c == '\n') {
            value_end(s);
        } else if (c == '\r') {
            s->state = ST_VALUE_CR;
        } else if (c == ' ' || c == '\t') {
            s->flags |= F_TRAIL; /* evhttp trims trailing spaces and tabs */
        } else if (s->flags & F_TRAIL) {
            s->flags |= F_JUNK;
        } else if (s->header == H_CL) {
            if (c < '0' || c > '9' || s->value > (UINT64_MAX - 9) / 10)
                s->flags |= F_JUNK;
            else
                s->value = s->value * 10 + (uint64_t)(c - '0');
            s->n++;
        } else {
            if (s->n >= 7 || "chunked"[s->n] != lower(c))
                s->flags |= F_JUNK;
            s->n++;
        }
        return true;
    case ST_VALUE_CR:
        if (c == '\n') {
            value_end(s);
            return true;
        }
        s->flags |= F_JUNK; /* the CR is part of the value */
        s->state = ST_VALUE;
        return false;
    }
    return true;
}

/* One byte of a chunked body's size lines and the CRLF after each chunk's data. */
static bool step_chunk_framing(httpscan_t *s, unsigned char c)
{
    switch (s->state) {
    case ST_CSIZE: {
        int d = hexval(c);
        if (d >= 0 && s->n >= HTTPSCAN_CSIZE_MAX) {
            fault(s, HTTPSCAN_BAD_CHUNK); /* evhttp would buffer the line whole, rescanning it */
        } else if (d >= 0) {
            s->value = s->value << 4 | (uint64_t)d; /* at most 16 digits: no overflow */
            s->n++;
        } else if (c == '\r') {
            s->state = ST_CSIZE_CR;
        } else if (c == '\n') {
            size_end(s);
        } else {
            fault(s, HTTPSCAN_BAD_CHUNK); /* an extension, a sign, a space, a NUL... */
        }
        return true;
    }
    case ST_CSIZE_CR:
        if (c == '\n')
            size_end(s);
        else
            fault(s, HTTPSCAN_BAD_CHUNK);
        return true;
    case ST_CDATA_END:
        if (c == '\r')
            s->state = ST_CDATA_CR;
        else if (c == '\n')
            start_size_line(s);
        else
            fault(s, HTTPSCAN_BAD_CHUNK);
        return true;
    case ST_CDATA_CR:
        if (c == '\n')
            start_size_line(s);
        else
            fault(s, HTTPSCAN_BAD_CHUNK);
        return true;
    }
    return true;
}

/* One byte of a chunked body's trailer lines. */
static bool step_trailer(httpscan_t *s, unsigned char c)
{
    switch (s->state) {
    case ST_TRAILER:
        s->line_at = s->pos;
        if (c == '\n') {
            s->flags = 0;
            s->state = ST_REQ; /* the request ends here */
        } else if (c == '\r') {
            s->state = ST_TRAILER_CR;
        } else if (c == 0) {
            fault(s, HTTPSCAN_BAD_CHUNK); /* cut at this line: the trailers end before it */
        } else {
            s->state = ST_SKIP_TRAILER;
        }
        return true;
    case ST_TRAILER_CR:
        if (c == '\n') {
            s->flags = 0;
            s->state = ST_REQ;
            return true;
        }
        s->state = ST_SKIP_TRAILER;
        return false;
    }
    return true;
}

/* One byte of a head or a chunked body's framing; s->pos is its offset. Returns false when
 * the byte must be looked at again in the new state (a held CR turned out to be content). */
static bool step(httpscan_t *s, unsigned char c)
{
    switch (s->state) {
    case ST_REQ:
    case ST_METHOD:
        return step_request_line(s, c);
    case ST_HLINE:
    case ST_HLINE_CR:
    case ST_NAME:
        return step_header_name(s, c);
    case ST_VALUE_LEAD:
    case ST_VALUE:
    case ST_VALUE_CR:
        return step_header_value(s, c);
    case ST_CSIZE:
    case ST_CSIZE_CR:
    case ST_CDATA_END:
    case ST_CDATA_CR:
        return step_chunk_framing(s, c);
    case ST_TRAILER:
    case ST_TRAILER_CR:
        return step_trailer(s, c);
    }
    return true;
}

/* Skips to the end of a line that needs no parsing; a NUL in it (*nul: the piece's first NUL
 * at or after p, or NULL) is a fault. Returns the bytes consumed (the LF included when
 * found). */
static size_t skip_line(httpscan_t *s, const unsigned char *p, size_t n, const unsigned char *nul)
{
    const unsigned char *lf = memchr(p, '\n', n);
    const unsigned char *end = lf ? lf : p + n;
    if (nul && nul < end) {
        s->pos += (uint64_t)(nul - p);
        fault(s, s->state == ST_SKIP_TRAILER ? HTTPSCAN_BAD_CHUNK : HTTPSCAN_NUL);
        return (size_t)(nul - p);
    }
    s->pos += (uint64_t)(end - p);
    if (!lf)
        return n;
    s->pos++;
    s->state = s->state == ST_LINE_REST || s->state == ST_SKIP_HEAD ? ST_HLINE : ST_TRAILER;
    return (size_t)(end - p) + 1;
}

/* Bytes of a body or of a line that needs no parsing. */
static size_t bulk(httpscan_t *s, const unsigned char *p, size_t n, const unsigned char *nul)
{
    if (s->state != ST_BODY && s->state != ST_CDATA)
        return skip_line(s, p, n, nul);
    size_t used = s->left < n ? (size_t)s->left : n;
    s->left -= used;
    s->pos += used;
    if (s->left == 0) {
        if (s->state == ST_BODY) {
            s->state = ST_REQ;
        } else {
            s->state = ST_CDATA_END;
            s->line_at = s->pos;
        }
    }
    return used;
}

/* The k (<= 8) bytes at p with the 0x20 bit set, in a word: a letter's lower case, so a part
 * of a name compares at once in either case. */
static uint64_t word_or20(const void *p, size_t k)
{
    uint64_t w = 0;
    memcpy(&w, p, k);
    return w | 0x2020202020202020ull;
}

/* A request line whose method and its space are in the piece: read at once. Returns the bytes
 * consumed, 0 (nothing changed) when the byte-by-byte path must take it. */
static size_t request_line_fast(httpscan_t *s, const unsigned char *p, size_t n)
{
    const unsigned char *sp = memchr(p, ' ', n < 9 ? n : 9);
    if (!sp)
        return 0;
    size_t k = (size_t)(sp - p);
    uint64_t v = 0;
    for (size_t i = 0; i < k; i++) {
        if (p[i] == 0 || p[i] == '\n')
            return 0;
        v = v << 8 | p[i];
    }
    s->request++;
    s->line_at = s->head_at = s->pos;
    s->frame_at = 0;
    s->flags = 0;
    s->method = method_kind(v, (uint32_t)k);
    s->state = ST_LINE_REST;
    s->pos += k + 1;
    return k + 1;
}

/* A header line's start: most names are told from the two that matter by their first byte,
 * and those two are compared at once when the piece holds them. Returns the bytes consumed;
 * 0 with the state unchanged when the byte-by-byte path must take it. */
static size_t header_line_fast(httpscan_t *s, const unsigned char *p, size_t n)
{
    int l = lower(p[0]);
    if (l != 'c' && l != 't') {
        if (p[0] <= ' ' || p[0] == ':')
            return 0; /* an empty line, a folded one, a NUL, an empty name: step */
        s->line_at = s->pos;
        s->last = H_OTHER;
        s->state = ST_SKIP_HEAD;
        return 0;
    }
    if (n < 18)
        return 0; /* perhaps not all here: byte by byte */
    s->line_at = s->pos;
    s->last = H_OTHER;
    /* | 0x20 lets a letter match either case and nothing else; of the other bytes, '-' and
     * ':' are checked exactly ('-' and CR, ':' and 0x1a, differ by that bit only) */
    if (l == 'c' && word_or20(p, 8) == word_or20("content-", 8) &&
        word_or20(p + 8, 7) == word_or20("length:", 7) && p[7] == '-' && p[14] == ':') {
        name_matched(s, H_CL);
        s->pos += 15;
        return 15;
    }
    if (l == 't' && word_or20(p, 8) == word_or20("transfer", 8) &&
        word_or20(p + 8, 8) == word_or20("-encodin", 8) && lower(p[16]) == 'g' && p[8] == '-' &&
        p[17] == ':') {
        name_matched(s, H_TE);
        s->pos += 18;
        return 18;
    }
    s->state = ST_SKIP_HEAD;
    return 0;
}

/* After `used` bytes were taken (s->pos is past them): a head past max_head is a fault at its
 * first byte past the limit (pos goes back to it; line_at is where its line begins). Returns
 * the bytes taken before it. */
static size_t head_limit(httpscan_t *s, size_t used)
{
    if (!s->max_head || s->status != HTTPSCAN_RUNNING || !in_head(s) ||
        s->pos - s->head_at <= s->max_head)
        return used;
    uint64_t over = s->pos - s->head_at - s->max_head; /* that byte and those after it */
    s->pos -= over;
    if (s->frame_at >= s->line_at)
        s->frame_at = 0; /* the framing line is the one past it (read whole or not) */
    fault(s, HTTPSCAN_HEAD_TOO_BIG);
    return used - (size_t)over;
}

httpscan_status_t httpscan_feed(httpscan_t *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    /* the piece's first NUL not passed yet: one search serves every line that is skipped */
    const unsigned char *nul = n ? memchr(p, 0, n) : NULL;
    /* whether a head may pass max_head in this piece (most pieces end well within it; a head
     * begun in it starts later than head_at, so the test holds for it too) */
    bool near = s->max_head && s->pos + n - s->head_at > s->max_head;
    while (n > 0 && s->status == HTTPSCAN_RUNNING) {
        size_t used = 0;
        /* a head is looked at up to its first byte past max_head, not beyond: a fault further
         * on (a NUL) is not its first, whatever the pieces */
        size_t m = n;
        if (near && in_head(s) && s->head_at + s->max_head + 1 - s->pos < m)
            m = (size_t)(s->head_at + s->max_head + 1 - s->pos);
        if (s->state >= ST_BODY) {
            if (nul && nul < p) /* passed inside a body: the next one */
                nul = memchr(p, 0, n);
            used = bulk(s, p, m, nul);
            if (near)
                used = head_limit(s, used);
        } else {
            uint8_t before = s->state;
            if (before == ST_REQ)
                used = request_line_fast(s, p, m);
            else if (before == ST_HLINE)
                used = header_line_fast(s, p, m);
            if (used == 0 && s->state == before) {
                if (!step(s, *p))
                    continue; /* the byte is looked at again in the new state */
                if (s->status != HTTPSCAN_RUNNING && s->status != HTTPSCAN_STOPPED)
                    break; /* a fault: pos stays at its byte */
                used = 1;
                s->pos++;
            }
            if (near)
                used = head_limit(s, used);
        }
        p += used;
        n -= used;
    }
    return s->status;
}
