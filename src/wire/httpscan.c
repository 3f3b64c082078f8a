/* A connection's bytes scanned as evhttp will frame them: see httpscan.h. Any thread.
 *
 * One byte-driven state machine over the whole stream, request after request. Lines end at LF;
 * a CR just before it is not part of the line (evbuffer_readln's EVBUFFER_EOL_CRLF), so a CR
 * is held (the *_CR states) until the next byte says which it was. */
#include "wire/httpscan.h"

#include <stdbool.h>
#include <string.h>

enum {
    ST_REQ,         /* before a request line's first byte */
    ST_METHOD,      /* in the method: the request line's text before its first space */
    ST_LINE_REST,   /* in the rest of the request line */
    ST_HLINE,       /* before a header line's first byte */
    ST_HLINE_CR,    /* after a header line's first byte, a CR */
    ST_NAME,        /* in a header name that may still be Content-Length or Transfer-Encoding */
    ST_SKIP_HEAD,   /* in a header line that is neither */
    ST_VALUE_LEAD,  /* after the colon of one of them: leading spaces */
    ST_VALUE,       /* in its value */
    ST_VALUE_CR,    /* in its value, after a CR */
    ST_BODY,        /* in a body of known length (left bytes to go) */
    ST_CSIZE,       /* in a chunk-size line */
    ST_CSIZE_CR,    /* in a chunk-size line, after a CR */
    ST_CDATA,       /* in a chunk's data (left bytes to go) */
    ST_CDATA_END,   /* right after a chunk's data: CRLF must follow */
    ST_CDATA_CR,    /* after that CR */
    ST_TRAILER,     /* before a trailer line's first byte */
    ST_TRAILER_CR,  /* after a trailer line's first byte, a CR */
    ST_SKIP_TRAILER /* in a trailer line */
};

/* what the method means for the body (evhttp_method_may_have_body) and the connection */
enum { M_BODY, M_HEAD, M_END };

/* header bits: the candidates while a name is read, then the one it is */
enum { H_OTHER = 0, H_CL = 1, H_TE = 2 };

/* flags: per head (F_CL .. F_BAD), per value (F_TRAIL, F_JUNK), per chunked body (F_HUGE,
 * F_TRAILERS) */
enum {
    F_CL = 1,       /* a Content-Length came (its value is in left) */
    F_TE = 2,       /* a Transfer-Encoding came */
    F_CHUNKED = 4,  /* ... and it is "chunked" */
    F_BAD = 8,      /* the framing is ambiguous: the server closes the connection after it */
    F_TRAIL = 16,   /* the value has had trailing blanks: anything else after them is junk */
    F_JUNK = 32,    /* the value is not a plain one */
    F_HUGE = 64,    /* a chunk size past 2^60: evhttp refuses it (413) and closes */
    F_TRAILERS = 128, /* the chunked body's trailers are being read */
};

static const char CL_NAME[] = "content-length";    /* 14 */
static const char TE_NAME[] = "transfer-encoding"; /* 17 */

void httpscan_init(httpscan_t *s)
{
    memset(s, 0, sizeof *s);
    s->state = ST_REQ;
}

const char *httpscan_body_end(const httpscan_t *s)
{
    return s->flags & F_TRAILERS ? "\r\n" : "0\r\n\r\n";
}

static uint64_t pack(const char *m)
{
    uint64_t v = 0;
    while (*m)
        v = v << 8 | (unsigned char)*m++;
    return v;
}

static uint8_t method_kind(uint64_t packed, uint32_t len)
{
    static const char *const BODY[] = {"GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};
    if (len > 7)
        return M_END;
    for (size_t i = 0; i < sizeof BODY / sizeof BODY[0]; i++)
        if (packed == pack(BODY[i]) && len == strlen(BODY[i]))
            return M_BODY;
    if (packed == pack("HEAD") && len == 4)
        return M_HEAD;
    return M_END; /* CONNECT (refused, closed), TRACE and the rest (evhttp: 501, closed) */
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
    s->flags &= (uint8_t)~(F_TRAIL | F_JUNK);
    s->state = ST_HLINE;
}

/* The empty line after a head: where its body, if any, ends. */
static void head_end(httpscan_t *s)
{
    uint8_t f = s->flags;
    s->flags = 0;
    if (s->method == M_END || (f & F_BAD) || ((f & F_CL) && (f & F_TE))) {
        s->status = HTTPSCAN_STOPPED; /* the connection ends with this request */
        return;
    }
    if (s->method == M_HEAD) { /* no body, whatever the head says */
        s->state = ST_REQ;
    } else if (f & F_CHUNKED) {
        s->state = ST_CSIZE;
        s->line_at = s->pos + 1;
        s->n = 0;
        s->value = 0;
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
    } else if (s->flags & F_HUGE) {
        s->status = HTTPSCAN_STOPPED; /* evhttp: 413, and the connection closes */
    } else if (s->value == 0) {
        s->flags |= F_TRAILERS;
        s->state = ST_TRAILER;
        s->line_at = s->pos + 1;
    } else {
        s->left = s->value;
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

/* One byte of a head or a chunked body's framing; s->pos is its offset. Returns false when
 * the byte must be looked at again in the new state (a held CR turned out to be content). */
static bool step(httpscan_t *s, unsigned char c)
{
    switch (s->state) {
    case ST_REQ:
        s->request++;
        s->line_at = s->pos;
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
            if (h == H_OTHER) {
                s->state = ST_SKIP_HEAD;
                return true;
            }
            uint8_t seen = h == H_CL ? F_CL : F_TE;
            if (s->flags & seen)
                s->flags |= F_BAD; /* twice: framing_problem refuses it */
            s->flags |= seen;
            s->header = s->last = h;
            s->n = 0;
            s->value = 0;
            s->state = ST_VALUE_LEAD;
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
    case ST_CSIZE: {
        int d = hexval(c);
        if (d >= 0) {
            if (s->value >> 60)
                s->flags |= F_HUGE;
            else
                s->value = s->value << 4 | (uint64_t)d;
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

/* Skips to the end of a line that needs no parsing; a NUL in it is a fault. Returns the
 * bytes consumed (the LF included when found). */
static size_t skip_line(httpscan_t *s, const unsigned char *p, size_t n)
{
    const unsigned char *lf = memchr(p, '\n', n);
    size_t span = lf ? (size_t)(lf - p) : n;
    const unsigned char *nul = memchr(p, 0, span);
    if (nul) {
        s->pos += (uint64_t)(nul - p);
        fault(s, s->state == ST_SKIP_TRAILER ? HTTPSCAN_BAD_CHUNK : HTTPSCAN_NUL);
        return (size_t)(nul - p);
    }
    s->pos += span;
    if (!lf)
        return n;
    s->pos++;
    s->state = s->state == ST_LINE_REST || s->state == ST_SKIP_HEAD ? ST_HLINE : ST_TRAILER;
    return span + 1;
}

httpscan_status_t httpscan_feed(httpscan_t *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n > 0 && s->status == HTTPSCAN_RUNNING) {
        size_t used;
        switch (s->state) {
        case ST_BODY:
        case ST_CDATA:
            used = s->left < n ? (size_t)s->left : n;
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
            break;
        case ST_LINE_REST:
        case ST_SKIP_HEAD:
        case ST_SKIP_TRAILER:
            used = skip_line(s, p, n);
            break;
        default:
            used = 0;
            while (used < n && s->status == HTTPSCAN_RUNNING && s->state != ST_BODY &&
                   s->state != ST_CDATA && s->state != ST_LINE_REST &&
                   s->state != ST_SKIP_HEAD && s->state != ST_SKIP_TRAILER) {
                if (step(s, p[used])) {
                    if (s->status != HTTPSCAN_RUNNING && s->status != HTTPSCAN_STOPPED)
                        break; /* a fault: pos stays at its byte */
                    used++;
                    s->pos++;
                }
            }
            break;
        }
        p += used;
        n -= used;
    }
    return s->status;
}
