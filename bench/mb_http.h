/* mcpbench HTTP/1.1 client on libevent bufferevents. Main thread only.
 *
 * One mb_conn_t is one keep-alive TCP connection carrying one request at a time (no pipelining).
 * The response parser is incremental and zero-copy where it can be: it reads the contiguous input,
 * consumes whole header blocks, chunks and SSE lines, and leaves only an incomplete remainder in
 * the input buffer. SSE bodies are decoded as they arrive and delivered event by event; other
 * bodies are collected and handed over when the response ends.
 *
 * Callback rules (so a callback can start the next request without reentrancy surprises):
 * - on_done is the last thing the connection does for a request: from inside it the caller may
 *   send the next request on the same connection, or free it.
 * - on_headers and on_event must not free or reset their own connection; on_event returns
 *   MB_SSE_STOP to end the request early: the connection is closed and on_done reports
 *   resp->stopped.
 * - Freeing or resetting a busy connection drops its request silently (no callback).
 * - No callback is ever called from inside mb_conn_send.
 */
#ifndef MCPBENCH_MB_HTTP_H
#define MCPBENCH_MB_HTTP_H

#include "mb.h"

#include <stdbool.h>
#include <sys/socket.h>

struct event_base;

#define MB_SID_MAX 256
#define MB_HOST_MAX 300
#define MB_PATH_MAX 1024

/* Where requests go: a resolved address plus the Host header and path from the URL. */
typedef struct mb_target {
    struct event_base *base;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char host[MB_HOST_MAX]; /* Host header value, as written in the URL */
    char path[MB_PATH_MAX];
    char url[MB_HOST_MAX + MB_PATH_MAX + 16];
} mb_target_t;

/* Header lines ("Name: value\r\n" each) added to every request (--header); set before any
 * run, read-only afterwards. */
extern char mb_extra_headers[4096];
extern size_t mb_extra_headers_len;

/* Parses http://HOST[:PORT][/PATH] and resolves HOST. Unless allow_remote, only 127.0.0.1,
 * localhost and ::1 are accepted. 0, or -1 with a message in err. */
int mb_target_parse(mb_target_t *t, struct event_base *base, const char *url, bool allow_remote,
                    char *err, size_t errlen);

typedef enum { MB_CT_NONE = 0, MB_CT_JSON, MB_CT_SSE, MB_CT_OTHER } mb_ctype_t;

typedef struct mb_resp {
    int status;
    mb_ctype_t ctype;
    bool keep_alive;
    bool stopped; /* the caller's on_event ended the request */
    char session_id[MB_SID_MAX];
    const char *body; /* non-SSE bodies; valid until the next send on this connection */
    size_t body_len;
    uint64_t sse_events, sse_comments;
} mb_resp_t;

/* One SSE event. Pointers are valid during the on_event call only. */
typedef struct mb_sse_ev {
    const char *id;
    size_t id_len;
    bool has_id;
    const char *data;
    size_t data_len;
    bool has_data;
} mb_sse_ev_t;

enum { MB_SSE_CONTINUE = 0, MB_SSE_STOP = 1 };

typedef struct mb_req mb_req_t;
struct mb_req {
    const char *method;        /* "POST", "GET", "DELETE" */
    const char *headers;       /* extra header lines, each ending in \r\n (may be NULL) */
    size_t headers_len;
    const char *body;          /* POST only */
    size_t body_len;
    void (*on_headers)(mb_req_t *r, const mb_resp_t *resp);    /* optional */
    int (*on_event)(mb_req_t *r, const mb_sse_ev_t *ev);       /* optional, SSE bodies */
    void (*on_done)(mb_req_t *r, mb_err_t err, const mb_resp_t *resp);
    void *ud;
    int64_t t_sent; /* set by the connection when the request is written */
};

typedef struct mb_conn mb_conn_t;

mb_conn_t *mb_conn_new(mb_target_t *t);
void mb_conn_free(mb_conn_t *c);
/* Closes the socket, dropping any request silently; the next send reconnects. */
void mb_conn_reset(mb_conn_t *c);
/* Starts r on c (connecting first when needed). c must not be busy. 0 or -1. */
int mb_conn_send(mb_conn_t *c, mb_req_t *r);
bool mb_conn_busy(const mb_conn_t *c);

/* Process-wide connection counters, for the report. */
typedef struct mb_http_counters {
    uint64_t connects, reconnect_retries;
} mb_http_counters_t;
extern mb_http_counters_t mb_http_counters;

#endif
