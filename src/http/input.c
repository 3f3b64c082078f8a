/* Threads: HTTP threads. */
/* A connection's input: the scanner that follows its bytes as evhttp will frame them
 * (wire/httpscan.h), and the deadline by which each request must have arrived whole.
 *
 * The scanner. evhttp parses a connection's bytes itself and calls the server only with a
 * whole request, so what it lets through or misreports in the framing (a NUL in a head, a
 * malformed chunked body) is found by scanning the bytes as they arrive: a callback on the
 * bufferevent's input buffer runs when the socket read has added them, before evhttp's read
 * callback parses them.
 *   - A NUL in a head: evhttp still hands the request over (with a value cut at the NUL); the
 *     fault names the request by its number on the connection, and the endpoint refuses that
 *     request when it comes (http_scan_fault).
 *   - A bad chunked body: evhttp would answer 413 itself, or read a size where none is. The
 *     input is cut where the bad line begins and the end of a chunked body is put there
 *     (httpscan_body_end), so evhttp hands over the request, which is refused.
 *   - A head over --max-headers, a body over --max-body (a Content-Length, or the chunk sizes
 *     so far): cut the same way at the line that says so, with what ends the request there
 *     (for a head, Transfer-Encoding: chunked and an empty body, which evhttp reads instead of
 *     any Content-Length), so the endpoint answers 431 or 413 itself, counted as refusals by a
 *     limit; evhttp would answer with its HTML, counted nowhere. evhttp's own head limit is set
 *     a little above ours, for what the cut puts in (listener.c).
 * Either refusal closes the connection, so nothing after the faulty request is ever read; the
 * scanner stops there too. Every request evhttp parses reaches the endpoint's callbacks or
 * ends the connection (evhttp's own refusals close it; CONNECT, whose answer evhttp would not
 * close, stops the scanner), so counting the requests handed over keeps the numbers in step.
 *
 * The deadline. evhttp's own timeout (evhttp_set_timeout) is one of inactivity: every byte
 * starts it again, so a client that sends a byte a second never meets it, and a few such
 * clients hold every --max-connections place for as long as they like. So a request has
 * --read-timeout from its start to its handover to the endpoint: its start is the connection's
 * accept for the first request, and for the next ones the first byte read after the answer to
 * the one before (the scanner counts the requests begun; the endpoint's http_scan_fault, the
 * ones handed over). Past it the connection is freed. The deadline does not run while a
 * request is with the endpoint (evhttp does not read then) nor while the connection carries an
 * SSE stream (evhttp reads then only to see a close, and what the client sends is bounded
 * apart: conn.c's SSE_INPUT_MAX). A connection silent after an answer is left to evhttp's
 * timeout. Every deadline of a thread has the same length: a common timeout of the loop (a
 * queue, not the timer heap). It is not armed and disarmed per request (about 800 instructions
 * per call with libevent's locks): a request's start is noted, and the event, armed by the
 * first request after it last fired, looks when it fires: a request under way past its deadline
 * drops the connection unless it keeps coming at HTTP_READ_MIN_RATE or waits for evhttp
 * (pipelined behind one with the endpoint, or whole behind an answer evhttp is writing), whose
 * time starts again; one begun later re-arms it
 * for what it has left; none leaves it unarmed until the next request begins. So a busy
 * connection wakes once per --read-timeout, and a quiet one not at all after its last wake-up. */
#include "http/internal.h"

#include "core/config.h"
#include "core/log.h"
#include "core/stats.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_struct.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the deadline ---- */

/* Milliseconds of a monotonic clock, coarse (a few ms; the vDSO's: no system call). */
static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A request whose bytes keep coming at this rate (bytes per second) or more is never cut: at its
 * deadline, one that got --read-timeout's worth at this rate since the last look gets another
 * --read-timeout, so a big body on a slow but steady link arrives whole, while a trickle, or a
 * burst then a trickle, is cut at the next look (2 x --read-timeout at most). */
#define HTTP_READ_MIN_RATE 4096

/* A request has begun that has not been handed over, and the deadline may run. */
static bool request_under_way(const hlink_t *l)
{
    return l->scan->s.request > l->scan->served && !l->sse;
}

/* A whole request waits behind an answer evhttp is writing: evhttp reads then only to see a
 * close (its read callback unset, from the reply's start to its end), and the scanner stands
 * after the request's end. That is the client not reading the answer, not a slow sender:
 * neither the deadline nor the close counts it (the connection goes either way). A part of a
 * request there is a stalled sender still. */
static bool waits_behind_answer(const hlink_t *l, const struct bufferevent *bev)
{
    return bev->readcb == NULL && httpscan_between(&l->scan->s);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    hlink_t *l = arg;
    STAT_INC(timer_wakeups_total);
    l->deadline_armed = false;
    if (l->cut_now) {
        STAT_INC(limit_refusals_total);
        log_debug("a head over --max-headers came in pieces after its framing line: its "
                  "connection is closed without an answer");
        l->deadline_dropped = true;
        evhttp_connection_free(l->evcon); /* on_conn_close frees l and this event */
        return;
    }
    bool silent = l->scan->s.request == 0; /* since accept: dropped too (evhttp's would) */
    if (!silent && !request_under_way(l))
        return; /* with the endpoint, between requests, or a stream: the next request arms it */
    int64_t now = mono_ms(), timeout = g_cfg.read_timeout_s * 1000;
    int64_t left = l->deadline_from + timeout - now;
    if (left <= 0 && !silent) {
        /* evhttp is not reading (the request under way waits in its buffer for the one before
         * it, with the endpoint, not for the client), or the request keeps coming at the
         * minimum rate: its time starts again */
        struct bufferevent *bev = evhttp_connection_get_bufferevent(l->evcon);
        bool waiting = !bev || waits_behind_answer(l, bev) ||
                       !event_pending(&bev->ev_read, EV_READ, NULL);
        if (waiting || l->deadline_bytes >= HTTP_READ_MIN_RATE * (now - l->deadline_from) / 1000) {
            l->deadline_from = now;
            l->deadline_bytes = 0;
            left = timeout;
        }
    }
    if (left > 0) { /* a request begun since it was armed, or one still arriving */
        struct timeval tv = {(time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000};
        l->deadline_armed = evtimer_add(l->deadline, &tv) == 0;
        return;
    }
    if (!silent) {
        STAT_INC(read_timeouts_total);
        log_debug("a request did not arrive whole within --read-timeout (%lld s) of its start: "
                  "its connection is dropped",
                  (long long)g_cfg.read_timeout_s);
    }
    l->deadline_dropped = true;
    evhttp_connection_free(l->evcon); /* on_conn_close frees l and this event */
}

void http_deadline_closed(hlink_t *l)
{
    if (!l->scan || !l->deadline || l->deadline_dropped || !request_under_way(l))
        return;
    /* the read event's last result: libevent sets it at each activation and leaves it */
    struct bufferevent *bev = evhttp_connection_get_bufferevent(l->evcon);
    if (!bev || waits_behind_answer(l, bev) || !(bev->ev_read.ev_res & EV_TIMEOUT))
        return;
    STAT_INC(read_timeouts_total);
    log_debug("a request stopped coming for --read-timeout (%lld s): its connection is dropped",
              (long long)g_cfg.read_timeout_s);
}

/* The request deadline_req began now. */
static void deadline_arm(hlink_t *l)
{
    l->deadline_from = mono_ms();
    l->deadline_bytes = 0;
    if (!l->deadline_armed)
        l->deadline_armed = evtimer_add(l->deadline, l->t->read_deadline) == 0;
}

void http_deadline_start(hlink_t *l)
{
    if (!l->scan || !l->t->read_deadline)
        return;
    l->deadline = evtimer_new(l->t->base, on_deadline, l);
    if (!l->deadline)
        return;
    l->scan->link = l;
    l->deadline_req = 1; /* the first request begins at the accept */
    deadline_arm(l);
}

void http_deadline_free(hlink_t *l)
{
    if (l->scan)
        l->scan->link = NULL;
    if (l->deadline)
        event_free(l->deadline);
    l->deadline = NULL;
}

/* fresh new bytes came: the first of a request after an answer starts its deadline, and those
 * of one under way count for its rate (HTTP_READ_MIN_RATE). */
static void deadline_on_input(hscan_t *h, size_t fresh)
{
    hlink_t *l = h->link;
    if (!l || !l->deadline || !request_under_way(l))
        return;
    if (l->deadline_req != h->s.request) {
        l->deadline_req = h->s.request;
        deadline_arm(l);
        return;
    }
    l->deadline_bytes += (int64_t)fresh;
}

/* ---- the scanner ---- */

static void scan_cut(hscan_t *h, struct evbuffer *in)
{
    size_t len = evbuffer_get_length(in);
    uint64_t first = h->added - len; /* the stream offset of in's first byte */
    const char *end;
    uint64_t at = httpscan_cut_at(&h->s, first, &end);
    if (h->s.status == HTTPSCAN_BODY_TOO_BIG && h->s.frame_at && h->s.frame_at < first &&
        strcmp(end, "\r\n") == 0) {
        /* a Content-Length over the limit (the fault at its head's end, not at a chunk's size
         * line) whose line evhttp has read (a head sent in pieces): evhttp refuses it,
         * with its HTML 413, which nothing else counts. Every other refusal by a limit is
         * counted where it is answered (http_scan_fault) or dropped (on_deadline) */
        STAT_INC(limit_refusals_total);
    }
    if (at < first || at > h->added)
        return; /* never: evhttp consumes only whole lines, and the line is not whole yet */
    hlink_t *l = h->link;
    if (h->s.status == HTTPSCAN_HEAD_TOO_BIG && h->s.frame_at && h->s.frame_at < first && l &&
        l->deadline) {
        /* evhttp has read its Content-Length or Transfer-Encoding line already: cut here, it
         * would wait for a body that never comes. The connection goes, at once (not from
         * inside evhttp's read: at the loop's next turn), without an answer */
        static const struct timeval now = {0, 0};
        l->cut_now = true;
        l->deadline_armed = evtimer_add(l->deadline, &now) == 0;
        return;
    }
    struct evbuffer *keep = evbuffer_new();
    if (!keep)
        return;
    evbuffer_remove_buffer(in, keep, (size_t)(at - first));
    evbuffer_drain(in, evbuffer_get_length(in));
    evbuffer_add_buffer(in, keep);
    evbuffer_add(in, end, strlen(end));
    evbuffer_free(keep);
}

static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
    hscan_t *h = arg;
    size_t fresh = info->n_added; /* the buffer's last bytes: evhttp only drains the front */
    size_t added = fresh;
    h->added += fresh;
    if (fresh == 0 || h->s.status != HTTPSCAN_RUNNING)
        return; /* (scan_cut's own changes come here too, once the scan has ended) */
    size_t off = evbuffer_get_length(in) - fresh; /* where the new bytes begin */
    while (fresh > 0 && h->s.status == HTTPSCAN_RUNNING) {
        /* usually evhttp has taken everything before them: they are the whole buffer */
        struct evbuffer_ptr at;
        if (off > 0 && evbuffer_ptr_set(in, &at, off, EVBUFFER_PTR_SET) != 0)
            return;
        struct evbuffer_iovec v[4];
        int nv = evbuffer_peek(in, (ev_ssize_t)fresh, off > 0 ? &at : NULL, v, 4);
        if (nv <= 0)
            return;
        for (int i = 0; i < nv && i < 4 && fresh > 0 && h->s.status == HTTPSCAN_RUNNING; i++) {
            size_t k = v[i].iov_len < fresh ? v[i].iov_len : fresh;
            httpscan_feed(&h->s, v[i].iov_base, k);
            fresh -= k;
            off += k;
        }
    }
    if (h->s.status == HTTPSCAN_BAD_CHUNK || h->s.status == HTTPSCAN_HEAD_TOO_BIG ||
        h->s.status == HTTPSCAN_BODY_TOO_BIG)
        scan_cut(h, in);
    deadline_on_input(h, added);
}

hscan_t *http_scan_attach(struct bufferevent *bev)
{
    hscan_t *h = xcalloc(1, sizeof *h);
    httpscan_init(&h->s);
    h->s.max_head = (uint64_t)g_cfg.max_headers;
    h->s.max_body = (uint64_t)g_cfg.max_body;
    h->in = bufferevent_get_input(bev);
    h->cb = evbuffer_add_cb(h->in, on_input, h);
    if (!h->cb) {
        free(h);
        return NULL;
    }
    return h;
}

void http_scan_detach(hscan_t *h)
{
    if (!h)
        return;
    evbuffer_remove_cb_entry(h->in, h->cb);
    free(h);
}

const char *http_scan_fault(http_thread_t *t, struct evhttp_request *req, int *status)
{
    *status = 400;
    hlink_t *l = ptrmap_get(&t->links, evhttp_request_get_connection(req));
    hscan_t *h = l ? l->scan : NULL;
    if (!h)
        return NULL;
    ++h->served;
    if (h->s.status == HTTPSCAN_STOPPED && h->served >= h->s.request) {
        /* the scan stopped at this request (TRACE, CONNECT, a method HTTP does not define,
         * ambiguous framing): whatever follows it is not framed as evhttp would frame it (evhttp
         * reads no body after TRACE), so its answer ends the connection, and a request evhttp
         * found after it (a body read as one: smuggled) is refused */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        if (h->served > h->s.request)
            return "Bad Request: a request after one that ends the connection";
        return NULL;
    }
    if (h->served != h->s.request)
        return NULL;
    switch (h->s.status) {
    case HTTPSCAN_NUL:
        return "Bad Request: a header line holds a NUL byte";
    case HTTPSCAN_BAD_CHUNK:
        return "Bad Request: a malformed chunked body (a chunk-size line is hex digits and CRLF: "
               "no extension, sign or space; each chunk's data ends with CRLF)";
    case HTTPSCAN_HEAD_TOO_BIG:
        STAT_INC(limit_refusals_total);
        *status = 431;
        return "Request Header Fields Too Large: the request line and header lines are longer "
               "than --max-headers";
    case HTTPSCAN_BODY_TOO_BIG:
        STAT_INC(limit_refusals_total);
        *status = 413;
        return "Payload Too Large: the body is longer than --max-body";
    default:
        return NULL;
    }
}
