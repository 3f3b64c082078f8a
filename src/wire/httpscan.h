/* A client connection's bytes scanned as evhttp (libevent 2.1.12) will frame them, for two
 * faults evhttp lets through or misreports. Pure functions over a caller-owned state: any
 * thread, no allocation. The HTTP thread feeds it every byte a connection receives before
 * evhttp reads them (http/conn.c), and refuses the faulty request itself.
 *
 *   - A NUL byte in a request head (HTTPSCAN_NUL): evhttp keeps a header's value up to it (a
 *     proxy in front may have read the whole line) and takes a line that starts with one for
 *     the end of the head, so the rest of the head becomes the body or the next request.
 *   - A malformed chunked body (HTTPSCAN_BAD_CHUNK): a chunk-size line that is not hex digits
 *     and CRLF (a chunk extension, a sign, a 0x prefix, spaces, an empty line), a chunk's data
 *     not followed by CRLF, a NUL in the trailers. evhttp answers 413 to some of these and
 *     takes "5 junk", "+5" or "0x5" for 5, so a proxy and evhttp may disagree on where the
 *     body ends.
 *
 * What it must know of evhttp's framing it follows exactly, for the requests after which evhttp
 * keeps the connection: the method (the text before the request line's first space: HEAD has
 * no body), the first Transfer-Encoding (a body is chunked when its value, less leading spaces
 * and trailing spaces and tabs, is "chunked" in any case) and the first Content-Length
 * (decimal digits). Where the framing is ambiguous (either header twice, both, another coding,
 * a length that is not digits, a folded line after one of them) the server refuses the request
 * and closes the connection (wire/checks.c framing_problem), as evhttp closes it after a head it
 * cannot parse, an empty request line or a method it does not serve; CONNECT is refused with a
 * close too. The scanner stops there (HTTPSCAN_STOPPED): nothing after that request is read.
 *
 * Two limits, when the caller sets them (0: none), are found here too, so that the server
 * refuses such a request with its own counted answer rather than evhttp with its HTML one
 * (evhttp's own limits are set at or above these): a head of more than max_head bytes, its
 * request line, header lines and empty line with their line ends (HTTPSCAN_HEAD_TOO_BIG, at the
 * byte past the limit; line_at: where its line begins), and a body of more than max_body bytes
 * (HTTPSCAN_BODY_TOO_BIG, at the LF of the line that says so: the empty line after a head whose
 * Content-Length is over it, or the chunk-size line that takes the chunks' sizes over it;
 * line_at: where that line begins). The caller cuts the input at line_at and puts
 * httpscan_body_end there, so that evhttp hands over a request at once without reading on; a
 * head it cuts at frame_at instead, when evhttp has not read that line yet, and ends it there
 * ("\r\n"), so that evhttp sees no framing and reads no body (Debian's evhttp refuses a
 * Content-Length beside a Transfer-Encoding itself: one cannot be put in to override the other).
 *
 * It does not look at what it need not: a body of known length and a chunk's data are skipped
 * by count, and lines that are not Content-Length or Transfer-Encoding are searched for their
 * end and for a NUL with memchr.
 */
#ifndef MCPD_WIRE_HTTPSCAN_H
#define MCPD_WIRE_HTTPSCAN_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    HTTPSCAN_RUNNING = 0,
    HTTPSCAN_STOPPED,      /* the connection ends with the current request: nothing more to check */
    HTTPSCAN_NUL,          /* a NUL byte in a head or a trailer */
    HTTPSCAN_BAD_CHUNK,    /* a chunk-size line that is not 1*HEXDIG CRLF, no CRLF after a chunk's
                           data, or a NUL in the trailers */
    HTTPSCAN_HEAD_TOO_BIG, /* a head past max_head */
    HTTPSCAN_BODY_TOO_BIG, /* a body past max_body */
} httpscan_status_t;

/* Hex digits a chunk-size line may hold (leading zeros included): past them it is bad. */
#define HTTPSCAN_CSIZE_MAX 16

typedef struct httpscan {
    /* limits, set by the caller after httpscan_init (0: none) */
    uint64_t max_head; /* bytes of a head: request line, header lines, empty line, with line ends */
    uint64_t max_body; /* bytes of a body: its Content-Length, or its chunks' sizes together */
    /* results: status; once it is a fault, the request it is in (1 = the connection's first)
     * and the stream offset where the line of the fault begins (for a missing CRLF after a
     * chunk's data: the first byte after the data) */
    httpscan_status_t status;
    uint64_t request;
    uint64_t line_at;
    /* the parser's state (httpscan.c) */
    uint64_t pos;      /* bytes scanned */
    uint64_t left;     /* body or chunk-data bytes still to skip */
    uint64_t value;    /* the Content-Length or chunk size being read */
    uint64_t head_at;  /* the stream offset of the request's first byte */
    uint64_t frame_at; /* where its head's first Content-Length or Transfer-Encoding line begins
                          (0: none yet) */
    uint64_t body;     /* a chunked body's chunk sizes so far */
    uint32_t n;        /* bytes of the current token (method, name, value, size) seen */
    uint8_t state;
    uint8_t method; /* what the request line's method means for the body */
    uint8_t header; /* the header whose name or value is being read */
    uint8_t last;   /* the last header line's header (a folded line continues it) */
    uint8_t flags;  /* per head and per value (httpscan.c) */
} httpscan_t;

/* For HTTPSCAN_BAD_CHUNK and the two limits: the bytes that, put at line_at in place of the
 * rest, end the request there in evhttp's eyes (so that it reaches the server, which refuses
 * it): the last chunk and the end of the trailers, or only the latter when the fault is in the
 * trailers; for a head, its end, or a whole request line and head when the request line itself
 * is too long. At most HTTPSCAN_END_MAX bytes: evhttp's own head limit leaves room. */
#define HTTPSCAN_END_MAX 64
/* Where to cut for a fault (line_at, or frame_at for a head over a limit when the caller still
 * holds it: held is the stream offset of the first byte evhttp has not read), and in *end what
 * to put there. */
uint64_t httpscan_cut_at(const httpscan_t *s, uint64_t held, const char **end);
const char *httpscan_body_end(const httpscan_t *s);
/* A fresh connection: the next byte begins its first request. */
void httpscan_init(httpscan_t *s);
/* Whether the scanner stands between two requests: the last request begun has ended (whole),
 * and no byte of another has come. */
bool httpscan_between(const httpscan_t *s);
/* Scans the next n bytes of the connection. Returns s->status; once it is not
 * HTTPSCAN_RUNNING, later calls change nothing. */
httpscan_status_t httpscan_feed(httpscan_t *s, const void *data, size_t n);

#endif
