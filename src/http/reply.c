/* Threads: HTTP threads. */
/* HTTP replies: the reason phrase, the Date header (formatted once a second per thread),
 * complete answers and JSON-RPC errors, the refusal of CONNECT, and the memory trim after a big
 * body. HTTP threads only. */
#include "http/internal.h"

#include "http/cors.h"

#include "core/blockcache.h"
#include "core/shard.h"
#include "core/stats.h"
#include "wire/jsonrpc.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- replies ---- */

static const char *reason_of(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 413:
        return "Payload Too Large";
    case 415:
        return "Unsupported Media Type";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    default:
        return "Status";
    }
}

/* The Date header's value, formatted once per second per HTTP thread. evhttp formats one per
 * reply when the reply has none (evutil_date_rfc1123 and an snprintf, ~3.5k instructions). */
const char *http_date_now(void)
{
    static __thread time_t sec = -1;
    static __thread char text[32];
    time_t now = time(NULL);
    if (now != sec) {
        static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        struct tm tm;
        gmtime_r(&now, &tm);
        /* "Thu, 03 Dec 2026 17:37:17 GMT" (RFC 9110 IMF-fixdate) */
        char *p = text;
        memcpy(p, days[tm.tm_wday % 7], 3), p += 3;
        *p++ = ',', *p++ = ' ';
        *p++ = (char)('0' + tm.tm_mday / 10), *p++ = (char)('0' + tm.tm_mday % 10), *p++ = ' ';
        memcpy(p, months[tm.tm_mon % 12], 3), p += 3;
        *p++ = ' ';
        int y = tm.tm_year + 1900;
        *p++ = (char)('0' + y / 1000 % 10), *p++ = (char)('0' + y / 100 % 10);
        *p++ = (char)('0' + y / 10 % 10), *p++ = (char)('0' + y % 10), *p++ = ' ';
        *p++ = (char)('0' + tm.tm_hour / 10), *p++ = (char)('0' + tm.tm_hour % 10), *p++ = ':';
        *p++ = (char)('0' + tm.tm_min / 10), *p++ = (char)('0' + tm.tm_min % 10), *p++ = ':';
        *p++ = (char)('0' + tm.tm_sec / 10 % 10), *p++ = (char)('0' + tm.tm_sec % 10);
        memcpy(p, " GMT", 5);
        sec = now;
    }
    return text;
}

void http_send_reply(struct evhttp_request *req, int status, const char *ctype, const char *body,
                     size_t len, const char *sid, const char *retry_after)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    /* Date and Content-Length given here so evhttp does not format them with snprintf.
     * (1xx, 204 and 304 carry no Content-Length; no caller sends them today.) */
    evhttp_add_header(out, "Date", http_date_now());
    if (status >= 200 && status != 204 && status != 304) {
        char clen[24], *d = clen + sizeof clen;
        size_t n = body ? len : 0;
        *--d = '\0';
        do
            *--d = (char)('0' + n % 10);
        while ((n /= 10) != 0);
        evhttp_add_header(out, "Content-Length", d); /* a HEAD's: what a GET would carry */
    }
    if (ctype)
        evhttp_add_header(out, "Content-Type", ctype);
    if (sid && *sid)
        evhttp_add_header(out, "Mcp-Session-Id", sid);
    if (retry_after)
        evhttp_add_header(out, "Retry-After", retry_after);
    http_cors_headers(req);
    struct evbuffer *b = evhttp_request_get_output_buffer(req);
    /* evhttp (2.1.12) writes the output buffer after the head even for HEAD: a body there
     * would be read as the start of the next response on the connection */
    if (body && len && evhttp_request_get_command(req) != EVHTTP_REQ_HEAD)
        evbuffer_add(b, body, len);
    stats_count_status(status);
    /* noted first: evhttp_send_reply frees a request whose connection is gone */
    http_flush_soon(req);
    evhttp_send_reply(req, status, reason_of(status), NULL);
}

/* id: the request's id to echo (borrowed), NULL for null. */
void http_reply_error(struct evhttp_request *req, const json_t *id, int status, int code,
                      const char *msg, const char *retry_after)
{
    http_reply_error_data(req, id, status, code, msg, NULL, retry_after);
}

void http_reply_retry(struct evhttp_request *req, const json_t *id, int code, const char *msg,
                      const char *retry)
{
    http_reply_error_data(req, id, 503, code, msg, NULL, retry);
}

void http_reply_not_here(struct evhttp_request *req, const json_t *id, const char *what,
                         const char *xid)
{
    char msg[300];
    if (what)
        snprintf(msg, sizeof msg,
                 "Misdirected: the %s's shard %.3s is not served by this node (%s); retry: the "
                 "cluster routes it to the node that owns it",
                 what, xid, shard_node_name());
    else
        snprintf(msg, sizeof msg, "Misdirected: this node serves no shards now (drained); retry");
    STAT_INC(misdirected_total);
    http_reply_retry(req, id, MCP_ERR_NOT_HERE, msg, "1");
}

void http_reply_error_data(struct evhttp_request *req, const json_t *id, int status, int code,
                           const char *msg, json_t *data, const char *retry_after)
{
    json_t *e = jsonrpc_error(id, code, msg, data);
    size_t len;
    char *text = jsonrpc_dump(e, &len);
    json_decref(e);
    http_send_reply(req, status, "application/json", text, len, NULL, retry_after);
    free(text);
}

/* ---- memory ---- */

static void on_trim(evutil_socket_t fd, short what, void *arg)
{
    STAT_INC(timer_wakeups_total);
    blockcache_give_back();
}

void http_trim_soon(http_thread_t *t)
{
    if (!t)
        return;
    if (!t->trim_ev)
        t->trim_ev = evtimer_new(t->base, on_trim, t);
    struct timeval tv = {1, 0}; /* pushed back by every further big body: one trim at the end */
    if (t->trim_ev)
        evtimer_add(t->trim_ev, &tv);
}

bool http_refuse_method(struct evhttp_request *req)
{
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (m &
        (EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
         EVHTTP_REQ_OPTIONS | EVHTTP_REQ_HEAD | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT))
        return false; /* a method HTTP defines: 405 where the path does not serve it */
    evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    http_reply_error(req, NULL, 501, MCP_ERR_BAD_REQUEST,
                     "Not Implemented: this server serves GET, POST and DELETE (and OPTIONS for "
                     "CORS preflights)",
                     NULL);
    return true;
}

void http_refuse_connect(struct evhttp_request *req)
{
    /* evhttp 2.1 expects a tunnel after any answer to CONNECT: it writes neither the length
     * nor, for a non-2xx answer, a way to tell where the answer ends, and keeps the connection
     * whatever Connection says, so a client saw the answer end only at --read-timeout. The
     * answer goes out as a GET's would (http_struct.h's type), framed, and the connection is
     * closed after it: what the client sends next may be meant for the tunnel. */
    req->type = EVHTTP_REQ_GET;
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Allow", "GET, POST, DELETE");
    evhttp_add_header(out, "Connection", "close");
    http_reply_error(req, NULL, 405, MCP_ERR_BAD_REQUEST,
                     "Method Not Allowed: CONNECT (this server opens no tunnels); use POST, GET "
                     "or DELETE on /mcp",
                     NULL);
}
