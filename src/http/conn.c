/* Threads: HTTP threads; http_deliver from any thread. */
/* HTTP connections: the slot table, connection tracking (--max-connections), replies, the SSE
 * writer and the frames workers send. HTTP threads only (http_deliver: any thread).
 *
 * The replies (status lines, the Date header, JSON-RPC errors) and the memory trim after a big
 * body are in reply.c; a connection's input scanner and its requests' deadline in input.c.
 *
 * Every request to /mcp gets an hconn in the thread's slot table; its {thread, slot, gen} is
 * the conn_ref_t that travels to the actor. The slot's generation changes when the hconn is
 * freed, so a message for a connection that is gone is recognised and dropped.
 */
#include "http/internal.h"

#include "http/cors.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/auth.h"
#include "core/blockcache.h"
#include "core/config.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"
#include "wire/checks.h"
#include "wire/eventid.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"
#include "wire/sse.h"

#include <assert.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- slots ---- */

hconn_t *http_hconn_new(http_thread_t *t, struct evhttp_request *req, hlink_t *link)
{
    uint32_t slot;
    if (t->nfree) {
        slot = t->free_slots[--t->nfree];
    } else {
        if (t->nslots == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 256;
            t->slots = xrealloc(t->slots, t->cap * sizeof *t->slots);
            t->gens = xrealloc(t->gens, t->cap * sizeof *t->gens);
            t->free_slots = xrealloc(t->free_slots, t->cap * sizeof *t->free_slots);
        }
        slot = t->nslots++;
        t->gens[slot] = 0;
    }
    hconn_t *c = xcalloc(1, sizeof *c);
    c->t = t;
    c->req = req;
    c->evcon = evhttp_request_get_connection(req);
    c->link = link;
    c->slot = slot;
    if (++t->gens[slot] == 0)
        t->gens[slot] = 1; /* 0 means "no connection" */
    c->gen = t->gens[slot];
    t->slots[slot] = c;
    return c;
}

void http_hconn_free(hconn_t *c)
{
    http_thread_t *t = c->t;
    t->slots[c->slot] = NULL;
    t->gens[c->slot]++; /* invalidate refs still in flight */
    t->free_slots[t->nfree++] = c->slot;
    if (c->keepalive)
        event_free(c->keepalive);
    if (c->idle)
        event_free(c->idle);
    json_decref(c->id);
    if (c->state == H_SSE) {
        if (c->stream == STREAM_GET)
            STAT_DEC(streams_open_get);
        else
            STAT_DEC(streams_open_post);
    }
    free(c);
}

hconn_t *http_hconn_get(http_thread_t *t, conn_ref_t ref)
{
    if (ref.slot >= t->nslots)
        return NULL;
    hconn_t *c = t->slots[ref.slot];
    return c && c->gen == ref.gen ? c : NULL;
}

conn_ref_t http_ref_of(const hconn_t *c)
{
    return (conn_ref_t){c->t->idx, c->slot, c->gen};
}

/* Tells the actor that the client's SSE connection is gone (it may resume later). */
static void notify(hconn_t *c, bool by_server)
{
    wmsg_t *m = wmsg_new(WM_CONN_CLOSED);
    memcpy(m->sid, c->sid, SESSION_ID_LEN + 1);
    m->u.closed.conn = http_ref_of(c);
    m->u.closed.stream = c->stream;
    m->u.closed.by_server = by_server;
    worker_push(worker_for_session(c->sid), m);
}

void http_notify_closed(hconn_t *c)
{
    notify(c, false);
}

void http_notify_ended(hconn_t *c)
{
    notify(c, true);
}

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    hlink_t *l = arg;
    hconn_t *c = l->sse;
    if (c) {
        log_debug("SSE client of session %.8s stream %llu disconnected", c->sid,
                  (unsigned long long)c->stream);
        http_notify_closed(c);
        if (evhttp_request_get_connection(c->req) == NULL)
            evhttp_send_reply_end(c->req); /* detached: this only frees it */
        http_hconn_free(c);
    }
    if (l->admitted)
        principal_give(l->principal, PR_CONNECTIONS);
    ptrmap_del(&l->t->links, evcon);
    STAT_DEC(connections_open);
    http_deadline_closed(l);     /* before a linger takes the socket over (its read event reset) */
    if (!http_linger_start(l)) { /* a lingering socket keeps both until it closes (linger.c) */
        principal_give(l->principal, PR_OPEN);
        http_gate_closed(l->t);
    }
    principal_unref(l->principal);
    http_deadline_free(l);
    http_scan_detach(l->scan); /* its bufferevent is freed after this callback */
    http_backlog_give(l);
    http_fence_end(l);
    http_flush_forget(l);
    http_shadow_free(l);
    free(l);
}

/* Takes one of the --max-connections places for l's address; false when none is free or the
 * address holds its share of them (--principal-share). */
static bool admit(hlink_t *l)
{
    l->refused = principal_take(l->principal, PR_CONNECTIONS);
    return l->refused == 0;
}

static const char *cap_name(pres_t r)
{
    switch (r) {
    case PR_SESSIONS:
        return "sessions";
    case PR_HANDLES:
        return "handles";
    case PR_TASKS:
        return "tasks";
    default:
        return "connections";
    }
}

/* The answer to a request refused by a cap (rc -ENOSPC) or a share (-EDQUOT). */
static void reply_refused(struct evhttp_request *req, const json_t *id, pres_t r, int rc,
                          const char *retry_after)
{
    char msg[300];
    const char *what = cap_name(r);
    STAT_INC(limit_refusals_total);
    if (rc == -EDQUOT) {
        STAT_INC(share_refusals_total);
        snprintf(msg, sizeof msg,
                 "Too Many Requests: this client holds %lld %s, its share of "
                 "--max-%s (--principal-share %lld%%); %s, or retry later",
                 (long long)principal_limit(r), what, what, (long long)g_cfg.principal_share,
                 r == PR_SESSIONS ? "end the sessions it no longer uses (DELETE)"
                                  : "close connections it does not use");
        http_reply_error(req, id, 429, MCP_ERR_BAD_REQUEST, msg, retry_after);
        return;
    }
    snprintf(msg, sizeof msg, "Server busy: %lld %s are %s (--max-%s); retry later",
             (long long)principal_total(r), what, r == PR_CONNECTIONS ? "open" : "stored", what);
    http_reply_retry(req, id, MCP_ERR_BAD_REQUEST, msg, retry_after);
}

principal_t *http_request_principal(struct evhttp_request *req, const char *who,
                                    const hlink_t *link)
{
    if (who && who[0])
        return principal_of('t', who);
    if (!link->trusted)
        return principal_ref(link->principal);
    /* the proxy appends the address it saw to the last X-Forwarded-For (or adds a header of
     * its own after the client's): only that last entry is the proxy's word */
    const char *last = NULL;
    struct evkeyval *h;
    TAILQ_FOREACH(h, evhttp_request_get_input_headers(req), next)
    if (evutil_ascii_strcasecmp(h->key, "X-Forwarded-For") == 0)
        last = h->value;
    char norm[64];
    if (!last || principal_forwarded(last, norm, sizeof norm) != 0)
        return principal_ref(link->principal); /* not an address: the proxy's own share */
    return principal_of('a', norm);
}

bool http_take_share(struct evhttp_request *req, const json_t *id, principal_t *p, pres_t r)
{
    int rc = principal_take(p, r);
    if (rc == 0)
        return true;
    reply_refused(req, id, r, rc, "30");
    return false;
}

/* The principal a connection counts for (a new reference), and whether its peer is a
 * --trusted-proxy. */
static principal_t *conn_principal(struct evhttp_connection *evcon, bool *trusted)
{
    char *addr = NULL;
    ev_uint16_t port = 0;
    evhttp_connection_get_peer(evcon, &addr, &port);
    char norm[64];
    *trusted = false;
    if (principal_address(addr, norm, sizeof norm) == 0)
        for (int i = 0; i < g_cfg.n_trusted_proxies && !*trusted; i++)
            *trusted = strcmp(norm, g_cfg.trusted_proxies[i]) == 0;
    /* a trusted proxy's connections take no share: they carry many clients */
    return *trusted ? principal_of('p', norm) : principal_of_address(addr);
}

/* Starts tracking a connection: counted, and admitted when a place is free. scan (taken) is its
 * input's scanner, or NULL; p (taken) its principal, which holds the connection's PR_OPEN unit
 * already. */
static hlink_t *link_make(http_thread_t *t, struct evhttp_connection *evcon, hscan_t *scan,
                          principal_t *p, bool trusted)
{
    hlink_t *l = xcalloc(1, sizeof *l);
    l->t = t;
    l->evcon = evcon;
    l->scan = scan;
    l->trusted = trusted;
    l->principal = p;
    l->admitted = admit(l);
    ptrmap_put(&t->links, evcon, l);
    STAT_INC(connections_open);
    evhttp_connection_set_closecb(evcon, on_conn_close, l);
    http_shadow_start(l);
    http_deadline_start(l);
    return l;
}

/* A connection accepted past --max-connections is kept, so that its request gets the 503
 * answer (or is served, if a place was freed meanwhile); a silent one is dropped by
 * --read-timeout. At twice the limit the listeners stop (gate.c), so that silent connections
 * cannot pile up descriptors; one accepted past it anyway (threads accepting at the same
 * moment) is closed at once. So is one from an address that has twice its share of the places
 * open already (held or not): one address alone cannot reach twice the limit and stop the
 * listeners for every other client. */
static bool link_accepted(http_thread_t *t, struct evhttp_connection *evcon, hscan_t *scan)
{
    bool trusted;
    principal_t *p = conn_principal(evcon, &trusted);
    int64_t share = principal_limit(PR_CONNECTIONS);
    bool bounded = !trusted && share > 0 && g_cfg.principal_share < 100;
    /* counted and checked under one lock: the HTTP threads accept at the same time */
    bool over_share = principal_take_upto(p, PR_OPEN, bounded ? 2 * share : 0) != 0;
    if (over_share || STAT_GET(connections_open) >= 2 * g_cfg.max_connections) {
        if (!over_share)
            principal_give(p, PR_OPEN);
        STAT_INC(limit_refusals_total);
        if (over_share)
            STAT_INC(share_refusals_total);
        log_debug("closing a new connection at once: %s",
                  over_share ? "its address has twice its share of --max-connections open"
                             : "twice --max-connections are open");
        principal_unref(p);
        http_scan_detach(scan);
        evhttp_connection_free(evcon);
        return false;
    }
    link_make(t, evcon, scan, p, trusted)->own_bev = true;
    return true;
}

/* Picks up the connections accepted in this loop iteration (see http_on_new_bev). One that is
 * not tracked now (closed, or tracked at its request already) ends its count at accept. */
void http_on_fresh(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    for (uint32_t i = 0; i < t->nfresh; i++) {
        struct bufferevent *bev = t->fresh[i].bev;
        void *evcon = NULL;
        bufferevent_getcb(bev, NULL, NULL, NULL, &evcon); /* NULL: evhttp freed it already */
        bool tracked = false;
        if (evcon && !ptrmap_get(&t->links, evcon))
            tracked = link_accepted(t, evcon, t->fresh[i].scan);
        else
            http_scan_detach(t->fresh[i].scan);
        bufferevent_decref(bev);
        if (!tracked)
            http_gate_closed(t);
    }
    t->nfresh = 0;
}

void http_fresh_free(http_thread_t *t)
{
    for (uint32_t i = 0; i < t->nfresh; i++) {
        http_scan_detach(t->fresh[i].scan);
        bufferevent_decref(t->fresh[i].bev);
        http_gate_closed(t);
    }
    t->nfresh = 0;
    free(t->fresh);
    t->fresh = NULL;
}

/* Connections count from accept, so that silent and half-sent ones count against
 * --max-connections too. libevent 2.1 calls nothing with a new evhttp_connection (2.2 has
 * evhttp_set_newreqcb), but it lets us make the connection's bufferevent, and right after
 * this evhttp sets that bufferevent's callbacks with the connection as their argument. So the
 * bufferevent is noted here, with a reference in case evhttp frees it first, and on_fresh
 * takes the connection from it later in this loop iteration, before any byte is read. */
struct bufferevent *http_on_new_bev(struct event_base *base, void *arg)
{
    http_thread_t *t = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev)
        return NULL; /* evhttp makes one itself; the connection is counted at its request */
    if (t->nfresh == t->capfresh) {
        t->capfresh = t->capfresh ? t->capfresh * 2 : 16;
        t->fresh = xrealloc(t->fresh, t->capfresh * sizeof *t->fresh);
    }
    bufferevent_incref(bev);
    t->fresh[t->nfresh++] = (hfresh_t){bev, http_scan_attach(bev)};
    event_active(t->fresh_ev, EV_TIMEOUT, 1);
    http_gate_accepted(t); /* at the mark, libevent's accept loop stops after this one */
    return bev;
}

/* The connection's tracker; NULL when it holds no --max-connections place and none is free
 * now (the request is then refused). */
hlink_t *http_link_of(http_thread_t *t, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    hlink_t *l = ptrmap_get(&t->links, evcon);
    if (!l) { /* not seen at accept (its bufferevent was not ours) */
        bool trusted;
        principal_t *p = conn_principal(evcon, &trusted);
        principal_take(p, PR_OPEN); /* no bound: it counts what the address has open */
        http_gate_counted();
        l = link_make(t, evcon, NULL, p, trusted);
    }
    if (!l->admitted)
        l->admitted = admit(l);
    return l->admitted ? l : NULL;
}

void http_reply_link_refused(http_thread_t *t, struct evhttp_request *req, const json_t *id)
{
    hlink_t *l = ptrmap_get(&t->links, evhttp_request_get_connection(req));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    reply_refused(req, id, PR_CONNECTIONS, l && l->refused ? l->refused : -ENOSPC, "1");
}

/* What a client may send on a connection while it carries an SSE response before the server
 * stops reading it: evhttp keeps reading such a connection only to notice a close, and keeps
 * what arrives. Past this, the rest waits in the kernel and the stream is ended at its next
 * write (the client can resume). */
#define SSE_INPUT_MAX (64 * 1024)

/* The connection's bufferevent, or NULL when the request is detached from it (closed). */
static struct bufferevent *conn_bev(hconn_t *c)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
    return evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
}

void http_end_stream(hconn_t *c)
{
    if (c->link)
        c->link->sse = NULL;
    struct bufferevent *bev = conn_bev(c);
    if (bev) {
        /* an ordinary keep-alive connection again: --read-timeout (evhttp_set_timeout sets it
         * both ways) and unbounded reads, as evhttp left them before the stream */
        struct timeval rt = {g_cfg.read_timeout_s, 0};
        bufferevent_set_timeouts(bev, &rt, &rt);
        bufferevent_setwatermark(bev, EV_READ, 0, 0);
    }
    /* noted first: evhttp may free it at once (HTTP/1.0), and its close unnotes it */
    http_flush_soon(c->req);
    evhttp_send_reply_end(c->req);
    http_hconn_free(c);
}

/* Ends a stream the server cuts (a reader too slow: past --sse-buffer, or past the backlog mark
 * with no --sse-backlog place; or sending too much): the answers its connection held for its
 * bytes go now (fence.c), since those bytes may never be read. A slow reader's connection is
 * closed at once, its unsent bytes (up to --sse-buffer) dropped (and its --sse-backlog place
 * given back with them): ended the ordinary way, they stayed queued until the 60 s write
 * timeout, so a client with many such streams held many times --sse-buffer. Its client resumes
 * from the event log (Last-Event-ID). The close is abortive (RST): the kernel drops what its
 * socket buffer holds too. */
static void cut_stream(hconn_t *c, bool slow_reader)
{
    if (c->link)
        http_fence_end(c->link);
    http_notify_ended(c);
    struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
    if (!slow_reader || !evcon) {
        http_end_stream(c);
        return;
    }
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    struct evbuffer *out = bufferevent_get_output(bev);
    evbuffer_drain(out, evbuffer_get_length(out));
    struct linger abort_close = {1, 0};
    setsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_LINGER, &abort_close, sizeof abort_close);
    if (c->link)
        c->link->sse = NULL; /* ended here: its close callback leaves c alone */
    http_hconn_free(c);
    evhttp_connection_free(evcon); /* the request with it */
    http_trim_soon(g_http_self);   /* the drained pages go back to the kernel */
}

/* SSE bytes into the connection's output, framed as evhttp_send_reply_chunk would (a hex size
 * line, the bytes, CRLF) but without its evbuffer_add_printf and a buffer per frame; evhttp's
 * write callback is already set from the reply's start. */
static void put_frame(const hconn_t *c, struct evbuffer *out, const char *data, size_t len)
{
    if (c->chunked) {
        char head[20];
        size_t n = hex_put(head, len, 0);
        head[n++] = '\r';
        head[n++] = '\n';
        evbuffer_add(out, head, n);
        evbuffer_add(out, data, len);
        evbuffer_add(out, "\r\n", 2);
    } else {
        evbuffer_add(out, data, len); /* HTTP/1.0: the body runs to the connection's close */
    }
}

/* Writes SSE bytes; false when the stream was cut for a slow reader (c is freed). */
static bool sse_write(hconn_t *c, const char *data, size_t len)
{
    struct bufferevent *bev = conn_bev(c);
    if (!bev)
        return true; /* the connection is going: evhttp would drop it too */
    size_t input = evbuffer_get_length(bufferevent_get_input(bev));
    if (input >= SSE_INPUT_MAX) {
        log_warn("session %.8s: client sent %zu bytes on its SSE stream, ending the stream", c->sid,
                 input);
        cut_stream(c, false);
        return false;
    }
    struct evbuffer *out = bufferevent_get_output(bev);
    size_t unsent = evbuffer_get_length(out);
    if (unsent > (size_t)g_cfg.sse_buffer) {
        STAT_INC(sse_slow_reader_cuts_total);
        log_warn(
            "session %.8s: SSE reader too slow (%zu bytes unsent): its connection is closed and "
            "the bytes dropped; it can resume",
            c->sid, unsent);
        cut_stream(c, true);
        return false;
    }
    if (!len)
        return true;
    if (c->idle) {
        struct timeval tv = {g_cfg.get_idle_timeout_s, 0};
        evtimer_add(c->idle, &tv); /* it is not idle: the count starts again */
    }
    put_frame(c, out, data, len);
    /* far behind: the connection holds an --sse-backlog place, or is cut when none is free.
     * Judged after the frame went in, so that a stream's last frame counts too, and after the
     * socket has taken what it will: the loop writes at most 16 KiB a turn (libevent's max
     * single write), so what waits before that is not a reader behind */
    unsent = evbuffer_get_length(out);
    if (unsent > HTTP_BACKLOG_MARK && c->link && !c->link->backlog) {
        http_write_now(bev);
        unsent = evbuffer_get_length(out);
        if (unsent > HTTP_BACKLOG_MARK && !http_backlog_take(c, out, unsent)) {
            cut_stream(c, true);
            return false;
        }
    }
    return true;
}

void http_end_stream_at_stop(hconn_t *c)
{
    if (c->modern && c->id) {
        /* SHOULD: the final response terminates the stream; a client that cannot resume it
         * learns why the call ended, as a pending JSON answer does (its 503's body) */
        json_t *e = jsonrpc_error(c->id, MCP_ERR_BAD_REQUEST, "the server is shutting down", NULL);
        size_t len;
        char *text = jsonrpc_dump(e, &len);
        json_decref(e);
        buf_t b = {0};
        sse_frame_event(&b, NULL, text, len);
        free(text);
        /* put in whatever the reader's lag: the stream ends now and what it holds is drained
         * for a bounded time (http_end_stream), where sse_write would cut a slow reader (an
         * abortive close: every queued byte lost, this one too) */
        struct bufferevent *bev = conn_bev(c);
        if (bev)
            put_frame(c, bufferevent_get_output(bev), b.p, b.len);
        buf_free(&b);
    }
    http_end_stream(c);
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
    hconn_t *c = arg;
    sse_write(c, SSE_KEEPALIVE, sizeof SSE_KEEPALIVE - 1);
}

/* A standalone GET stream that sent nothing for --get-idle-timeout ends: it holds a
 * connection (and a --max-connections place) for as long as it is open, and one that nobody
 * reads would hold it forever (no keepalive goes on it while the event store is on: a proxy may
 * cut it). Its client resumes with Last-Event-ID and misses nothing (every event is stored). */
static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    hconn_t *c = arg;
    STAT_INC(timer_wakeups_total);
    STAT_INC(get_streams_idle_ended_total);
    log_debug("session %.8s: standalone stream idle for %lld s (--get-idle-timeout): ended; the "
              "client resumes",
              c->sid, (long long)g_cfg.get_idle_timeout_s);
    http_notify_ended(c);
    http_end_stream(c);
}

static void start_sse(hconn_t *c, hmsg_t *m)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(c->req);
    evhttp_add_header(out, "Content-Type", "text/event-stream");
    evhttp_add_header(out, "Date", http_date_now());
    evhttp_add_header(out, "Cache-Control", "no-cache, no-transform");
    evhttp_add_header(out, "X-Accel-Buffering", "no");
    if (m->session_id[0])
        evhttp_add_header(out, "Mcp-Session-Id", m->session_id);
    http_cors_headers(c->req);
    stats_count_status(200);
    if (c->req->major == 1 && c->req->minor == 0) { /* http_struct.h's fields (2.1 has no getter) */
        /* HTTP/1.0 has no chunks: the stream's body ends with the connection. evhttp would
         * answer a keep-alive request with "Connection: keep-alive" and "Content-Length: 0"
         * before the events, so the request is made one that closes */
        evhttp_remove_header(evhttp_request_get_input_headers(c->req), "Connection");
    }
    evhttp_send_reply_start(c->req, 200, "OK");
    c->chunked = evhttp_find_header(out, "Transfer-Encoding") != NULL; /* evhttp chose it */
    c->state = H_SSE;
    c->stream = m->stream;
    if (c->stream == STREAM_GET)
        STAT_INC(streams_open_get);
    else
        STAT_INC(streams_open_post);
    /* the timers below count from the loop's cached time, read when the turn began: a turn
     * that worked long before this (a replay, actors on this thread) would start them already
     * part spent, or past due (as http_on_flush's answers would be) */
    event_base_update_cache_time(c->t->base);
    if (c->evcon) {
        if (c->link)
            c->link->sse = c;
        /* a stream is quiet for as long as it likes: no read timeout; a reader that stops
         * reading is still cut by the write timeout. What the client sends meanwhile is
         * bounded (SSE_INPUT_MAX). */
        struct bufferevent *bev = evhttp_connection_get_bufferevent(c->evcon);
        struct timeval wt = {60, 0};
        bufferevent_set_timeouts(bev, NULL, &wt);
        bufferevent_setwatermark(bev, EV_READ, 0, SSE_INPUT_MAX);
    }
    if (m->flags & HM_KEEPALIVE) {
        c->keepalive = event_new(c->t->base, -1, EV_PERSIST, on_keepalive, c);
        struct timeval tv = {g_cfg.keepalive_s, 0};
        event_add(c->keepalive, &tv);
    } else if (c->stream == STREAM_GET) {
        c->idle = evtimer_new(c->t->base, on_idle, c);
        struct timeval tv = {g_cfg.get_idle_timeout_s, 0};
        if (c->idle)
            evtimer_add(c->idle, &tv);
    }
}

static void handle_hmsg(http_thread_t *t, hmsg_t *m)
{
    assert(g_http_self == t && "only its HTTP thread touches a connection");
    hconn_t *c = http_hconn_get(t, m->conn);
    if (!c)
        return; /* the connection is gone; the actor learns it from WM_CONN_CLOSED */
    switch (m->type) {
    case HM_REPLY:
        if (c->state == H_SSE) {
            http_end_stream(c);
            break;
        }
        http_send_reply(c->req, m->status, m->content_type, m->body, m->len, m->session_id,
                        m->retry_after);
        http_hconn_free(c);
        break;
    case HM_SSE_START:
        if (c->state != H_SSE)
            start_sse(c, m);
        if (m->len)
            sse_write(c, m->body, m->len);
        break;
    case HM_SSE_DATA:
        if (c->state == H_SSE)
            sse_write(c, m->body, m->len);
        break;
    case HM_SSE_END:
        if (c->state == H_SSE) {
            http_end_stream(c);
        } else {
            /* ended before it started (replaced, deleted): an empty reply */
            http_send_reply(c->req, 202, NULL, NULL, 0, NULL, NULL);
            http_hconn_free(c);
        }
        break;
    }
}

static void on_hmsg(mq_node_t *n, void *arg)
{
    hmsg_t *m = (hmsg_t *)n;
    if (m->after.gen) { /* held here until another connection's output is written */
        http_fence_hold(arg, m);
        return;
    }
    handle_hmsg(arg, m);
    hmsg_free(m);
}

void http_on_inbox(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    mq_drain(&t->inbox, on_hmsg, t);
}

void http_deliver(uint32_t thread, mq_node_t *first, mq_node_t *last, size_t n)
{
    mq_push_chain(&g_http[thread].inbox, first, last, n);
}
