/* The MCP endpoint: HTTP threads. See server.h.
 *
 * Every request to /mcp gets an hconn in the thread's slot table; its {thread, slot, gen} is
 * the conn_ref_t that travels to the actor. The slot's generation changes when the hconn is
 * freed, so a message for a connection that is gone is recognised and dropped.
 *
 * libevent facts this relies on (2.1):
 *  - after the body is read, evhttp stops reading the socket, so a client that disconnects
 *    while its request is pending is noticed only when we write the reply (harmless: a
 *    disconnect is not a cancellation);
 *  - after evhttp_send_reply_start, evhttp reads again to detect a close; on EOF the request is
 *    detached from its connection (evcon NULL) and left to us: the close callback finishes it
 *    with evhttp_send_reply_end, which then only frees it;
 *  - when the whole evhttp is freed (shutdown) the close callback also runs, but the request is
 *    still attached and libevent frees it itself.
 */
#include "http/server.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/config.h"
#include "core/log.h"
#include "core/ptrmap.h"
#include "core/stats.h"
#include "core/auth.h"
#include "wire/checks.h"
#include "wire/sse.h"
#include "core/jsonparse.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"
#include "wire/eventid.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

typedef enum { H_PENDING = 0, H_SSE } hstate_t;

typedef struct http_thread http_thread_t;
typedef struct hconn hconn_t;

/* One per accepted client connection: counts it in connections_open and against
 * --max-connections, and is the one close callback of its connection, which also ends the SSE
 * stream the connection carries, if any. */
typedef struct hlink {
    http_thread_t *t;
    struct evhttp_connection *evcon;
    hconn_t *sse;
    bool admitted; /* holds one of the --max-connections places */
} hlink_t;

struct hconn {
    http_thread_t *t;
    hlink_t *link;
    struct evhttp_request *req;
    struct evhttp_connection *evcon;
    uint32_t slot;
    uint32_t gen;
    hstate_t state;
    uint64_t stream;
    char sid[SESSION_ID_LEN + 1];
    struct event *keepalive;
    json_t *id; /* the request's id, for an answer of our own at shutdown (a copy: the body is
                   the actor's), or NULL */
};

struct http_thread {
    uint32_t idx;
    pthread_t thread;
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    evutil_socket_t fd;
    mq_t inbox;
    struct event *inbox_ev;
    bool started;
    hconn_t **slots;
    uint32_t *gens;
    uint32_t *free_slots;
    uint32_t nslots, nfree, cap;
    ptrmap_t links; /* evhttp_connection -> hlink_t */
    struct bufferevent **fresh; /* accepted this loop iteration, not yet tracked (on_fresh) */
    uint32_t nfresh, capfresh;
    struct event *fresh_ev;
    bool stopping;
};

static http_thread_t *T;
static int NT;
static hostcheck_t HC;
/* Connections holding one of the --max-connections places, across the HTTP threads. */
static atomic_llong ADMITTED;

/* ---- replies ---- */

static const char *reason_of(int status)
{
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

static void send_reply(struct evhttp_request *req, int status, const char *ctype, const char *body,
                       size_t len, const char *sid, const char *retry_after)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    if (ctype)
        evhttp_add_header(out, "Content-Type", ctype);
    if (sid && *sid)
        evhttp_add_header(out, "Mcp-Session-Id", sid);
    if (retry_after)
        evhttp_add_header(out, "Retry-After", retry_after);
    struct evbuffer *b = evhttp_request_get_output_buffer(req);
    if (body && len)
        evbuffer_add(b, body, len);
    stats_count_status(status);
    evhttp_send_reply(req, status, reason_of(status), NULL);
}

/* id: the request's id to echo (borrowed), NULL for null. */
static void reply_error(struct evhttp_request *req, const json_t *id, int status, int code,
                        const char *msg, const char *retry_after)
{
    json_t *e = jsonrpc_error(id, code, msg, NULL);
    size_t len;
    char *text = jsonrpc_dump(e, &len);
    json_decref(e);
    send_reply(req, status, "application/json", text, len, NULL, retry_after);
    free(text);
}

/* ---- slots ---- */

static hconn_t *hconn_new(http_thread_t *t, struct evhttp_request *req, hlink_t *link)
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

static void hconn_free(hconn_t *c)
{
    http_thread_t *t = c->t;
    t->slots[c->slot] = NULL;
    t->gens[c->slot]++; /* invalidate refs still in flight */
    t->free_slots[t->nfree++] = c->slot;
    if (c->keepalive)
        event_free(c->keepalive);
    json_decref(c->id);
    if (c->state == H_SSE) {
        if (c->stream == STREAM_GET)
            STAT_DEC(streams_open_get);
        else
            STAT_DEC(streams_open_post);
    }
    free(c);
}

static hconn_t *hconn_get(http_thread_t *t, conn_ref_t ref)
{
    if (ref.slot >= t->nslots)
        return NULL;
    hconn_t *c = t->slots[ref.slot];
    return c && c->gen == ref.gen ? c : NULL;
}

static conn_ref_t ref_of(const hconn_t *c)
{
    return (conn_ref_t){c->t->idx, c->slot, c->gen};
}

/* Tells the actor that the client's SSE connection is gone (it may resume later). */
static void notify_closed(hconn_t *c)
{
    wmsg_t *m = wmsg_new(WM_CONN_CLOSED);
    memcpy(m->sid, c->sid, SESSION_ID_LEN + 1);
    m->conn = ref_of(c);
    m->stream = c->stream;
    worker_push(worker_for_session(c->sid), m);
}

static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    hlink_t *l = arg;
    hconn_t *c = l->sse;
    if (c) {
        log_debug("SSE client of session %.8s stream %llu disconnected", c->sid,
                  (unsigned long long)c->stream);
        notify_closed(c);
        if (evhttp_request_get_connection(c->req) == NULL)
            evhttp_send_reply_end(c->req); /* detached: this only frees it */
        hconn_free(c);
    }
    if (l->admitted)
        atomic_fetch_sub_explicit(&ADMITTED, 1, memory_order_relaxed);
    ptrmap_del(&l->t->links, evcon);
    STAT_DEC(connections_open);
    free(l);
}

/* Takes one of the --max-connections places; false when none is free. */
static bool admit(void)
{
    if (atomic_fetch_add_explicit(&ADMITTED, 1, memory_order_relaxed) < g_cfg.max_connections)
        return true;
    atomic_fetch_sub_explicit(&ADMITTED, 1, memory_order_relaxed);
    return false;
}

/* Starts tracking a connection: counted, and admitted when a place is free. */
static hlink_t *link_make(http_thread_t *t, struct evhttp_connection *evcon)
{
    hlink_t *l = xcalloc(1, sizeof *l);
    l->t = t;
    l->evcon = evcon;
    l->admitted = admit();
    ptrmap_put(&t->links, evcon, l);
    STAT_INC(connections_open);
    evhttp_connection_set_closecb(evcon, on_conn_close, l);
    return l;
}

/* A connection accepted past --max-connections is kept, so that its request gets the 503
 * answer (or is served, if a place was freed meanwhile); a silent one is dropped by
 * --read-timeout. At twice the limit a new connection is closed at once instead, so that
 * silent connections cannot pile up descriptors. */
static void link_accepted(http_thread_t *t, struct evhttp_connection *evcon)
{
    if (STAT_GET(connections_open) >= 2 * g_cfg.max_connections) {
        STAT_INC(limit_refusals_total);
        log_debug("closing a new connection at once: %lld are open (twice --max-connections)",
                  (long long)STAT_GET(connections_open));
        evhttp_connection_free(evcon);
        return;
    }
    link_make(t, evcon);
}

/* Picks up the connections accepted in this loop iteration (see on_new_bev). */
static void on_fresh(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    for (uint32_t i = 0; i < t->nfresh; i++) {
        struct bufferevent *bev = t->fresh[i];
        void *evcon = NULL;
        bufferevent_getcb(bev, NULL, NULL, NULL, &evcon); /* NULL: evhttp freed it already */
        if (evcon && !ptrmap_get(&t->links, evcon))
            link_accepted(t, evcon);
        bufferevent_decref(bev);
    }
    t->nfresh = 0;
}

/* Connections count from accept, so that silent and half-sent ones count against
 * --max-connections too. libevent 2.1 calls nothing with a new evhttp_connection (2.2 has
 * evhttp_set_newreqcb), but it lets us make the connection's bufferevent, and right after
 * this evhttp sets that bufferevent's callbacks with the connection as their argument. So the
 * bufferevent is noted here, with a reference in case evhttp frees it first, and on_fresh
 * takes the connection from it later in this loop iteration, before any byte is read. */
static struct bufferevent *on_new_bev(struct event_base *base, void *arg)
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
    t->fresh[t->nfresh++] = bev;
    event_active(t->fresh_ev, EV_TIMEOUT, 1);
    return bev;
}

/* The connection's tracker; NULL when it holds no --max-connections place and none is free
 * now (the request is then refused). */
static hlink_t *link_of(http_thread_t *t, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    hlink_t *l = ptrmap_get(&t->links, evcon);
    if (!l)
        l = link_make(t, evcon); /* not seen at accept (its bufferevent could not be made) */
    if (!l->admitted)
        l->admitted = admit();
    return l->admitted ? l : NULL;
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

static void end_stream(hconn_t *c)
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
    evhttp_send_reply_end(c->req);
    hconn_free(c);
}

static size_t pending_output(hconn_t *c)
{
    struct bufferevent *bev = conn_bev(c);
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static size_t pending_input(hconn_t *c)
{
    struct bufferevent *bev = conn_bev(c);
    return bev ? evbuffer_get_length(bufferevent_get_input(bev)) : 0;
}

/* Writes SSE bytes; false when the stream was cut for a slow reader (c is freed). */
static bool sse_write(hconn_t *c, const char *data, size_t len)
{
    if (pending_input(c) >= SSE_INPUT_MAX) {
        log_warn("session %.8s: client sent %zu bytes on its SSE stream, ending the stream",
                 c->sid, pending_input(c));
        notify_closed(c);
        end_stream(c);
        return false;
    }
    if (pending_output(c) > (size_t)g_cfg.sse_buffer) {
        log_warn("session %.8s: SSE reader too slow (%zu bytes unsent), ending its stream; it can resume",
                 c->sid, pending_output(c));
        notify_closed(c);
        end_stream(c);
        return false;
    }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, data, len);
    evhttp_send_reply_chunk(c->req, b);
    evbuffer_free(b);
    return true;
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
    hconn_t *c = arg;
    sse_write(c, SSE_KEEPALIVE, sizeof SSE_KEEPALIVE - 1);
}

static void start_sse(hconn_t *c, hmsg_t *m)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(c->req);
    evhttp_add_header(out, "Content-Type", "text/event-stream");
    evhttp_add_header(out, "Cache-Control", "no-cache, no-transform");
    evhttp_add_header(out, "X-Accel-Buffering", "no");
    if (m->session_id[0])
        evhttp_add_header(out, "Mcp-Session-Id", m->session_id);
    stats_count_status(200);
    evhttp_send_reply_start(c->req, 200, "OK");
    c->state = H_SSE;
    c->stream = m->stream;
    if (c->stream == STREAM_GET)
        STAT_INC(streams_open_get);
    else
        STAT_INC(streams_open_post);
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
    }
}

static void handle_hmsg(http_thread_t *t, hmsg_t *m)
{
    hconn_t *c = hconn_get(t, m->conn);
    if (!c)
        return; /* the connection is gone; the actor learns it from WM_CONN_CLOSED */
    switch (m->type) {
    case HM_REPLY:
        if (c->state == H_SSE) {
            end_stream(c);
            break;
        }
        send_reply(c->req, m->status, m->content_type, m->body, m->len, m->session_id,
                   m->retry_after);
        hconn_free(c);
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
            end_stream(c);
        } else {
            /* ended before it started (replaced, deleted): an empty reply */
            send_reply(c->req, 202, NULL, NULL, 0, NULL, NULL);
            hconn_free(c);
        }
        break;
    }
}

static void on_inbox(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    mq_node_t *n = mq_take_all(&t->inbox);
    while (n) {
        mq_node_t *next = n->next;
        handle_hmsg(t, (hmsg_t *)n);
        hmsg_free((hmsg_t *)n);
        n = next;
    }
}

void http_deliver(uint32_t thread, mq_node_t *first, mq_node_t *last, size_t n)
{
    mq_push_chain(&T[thread].inbox, first, last, n);
}

/* ---- request handling ---- */

/* The request headers this endpoint reads, found in one pass over the header list (seven
 * evhttp_find_header calls were seven case-insensitive scans per request). */
typedef struct rhdr {
    const char *origin, *host, *authorization, *accept, *content_type, *session_id, *version,
        *last_event_id, *content_length, *transfer_encoding;
    const char *twice;  /* the first header that must come once and came again, or NULL */
    bool twice_framing; /* Content-Length or Transfer-Encoding came again */
} rhdr_t;

enum { H_FIRST_WINS = 0, H_ONCE, H_FRAMING };

static void read_headers(struct evhttp_request *req, rhdr_t *h)
{
    memset(h, 0, sizeof *h);
    /* H_ONCE: a second copy is refused: a proxy in front may act on a different one than we
     * do (the session, the version, the Host checked against DNS rebinding); H_FRAMING: the
     * same for the headers that frame the body, which makes the connection unusable */
    static const struct {
        const char *name;
        size_t len;
        size_t off;
        int rule;
    } WANT[] = {
        {"Accept", 6, offsetof(rhdr_t, accept), H_FIRST_WINS},
        {"Host", 4, offsetof(rhdr_t, host), H_ONCE},
        {"Origin", 6, offsetof(rhdr_t, origin), H_FIRST_WINS},
        {"Content-Type", 12, offsetof(rhdr_t, content_type), H_FIRST_WINS},
        {"Content-Length", 14, offsetof(rhdr_t, content_length), H_FRAMING},
        {"Mcp-Session-Id", 14, offsetof(rhdr_t, session_id), H_ONCE},
        {"MCP-Protocol-Version", 20, offsetof(rhdr_t, version), H_ONCE},
        {"Authorization", 13, offsetof(rhdr_t, authorization), H_FIRST_WINS},
        {"Last-Event-ID", 13, offsetof(rhdr_t, last_event_id), H_FIRST_WINS},
        {"Transfer-Encoding", 17, offsetof(rhdr_t, transfer_encoding), H_FRAMING},
    };
    struct evkeyval *kv;
    for (kv = evhttp_request_get_input_headers(req)->tqh_first; kv; kv = kv->next.tqe_next) {
        size_t kl = strlen(kv->key);
        for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) {
            if (kl == WANT[i].len && strcasecmp(kv->key, WANT[i].name) == 0) {
                const char **slot = (const char **)((char *)h + WANT[i].off);
                if (!*slot) { /* the first of repeated headers, as evhttp_find_header did */
                    *slot = kv->value;
                } else if (WANT[i].rule != H_FIRST_WINS) {
                    if (!h->twice)
                        h->twice = WANT[i].name;
                    h->twice_framing |= WANT[i].rule == H_FRAMING;
                }
                break;
            }
        }
    }
}

/* A request whose body length is ambiguous: 400 and the connection is closed, since what
 * follows the body cannot be trusted as the next request (nor the body: id null). evhttp
 * refuses some of these itself, with its own reply. True when refused. */
static bool refuse_framing(struct evhttp_request *req, const rhdr_t *h)
{
    const char *why = framing_problem(h->content_length, h->transfer_encoding, h->twice_framing);
    if (!why)
        return false;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    reply_error(req, NULL, 400, MCP_ERR_BAD_REQUEST, why, NULL);
    return true;
}

/* A header that must come once came twice: 400 (the connection stays usable). True when
 * refused. */
static bool refuse_repeated(struct evhttp_request *req, const json_t *id, const rhdr_t *h)
{
    if (!h->twice)
        return false;
    char msg[160];
    snprintf(msg, sizeof msg, "Bad Request: the %s header was sent more than once", h->twice);
    reply_error(req, id, 400, MCP_ERR_BAD_REQUEST, msg, NULL);
    return true;
}

/* A POST body, parsed once before any check so that every refusal can echo the request's id
 * (JSON-RPC asks for it whenever it can be read), and classified once. */
typedef struct pbody {
    json_t *json;     /* NULL: not a POST, or not JSON (err, pos say why); owned here until it
                         moves to the actor with the message */
    jr_kind_t kind;   /* of a single message; JR_INVALID for a batch */
    const char *why;  /* a single JR_INVALID message: what is wrong */
    const json_t *id; /* a single request's id, borrowed from json; NULL otherwise */
    char err[160];
    size_t pos;
} pbody_t;

static void parse_body(struct evhttp_request *req, pbody_t *b)
{
    b->json = NULL;
    b->kind = JR_INVALID;
    b->why = NULL;
    b->id = NULL;
    b->err[0] = '\0';
    b->pos = 0;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST)
        return;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *data = len ? (const char *)evbuffer_pullup(in, -1) : "";
    b->json = json_parse_buf(data, len, b->err, sizeof b->err, &b->pos);
    if (!b->json || json_is_array(b->json))
        return;
    b->kind = jsonrpc_classify(b->json, &b->why);
    if (b->kind == JR_REQUEST)
        b->id = json_object_get(b->json, "id");
}

/* Checks the session id header; on failure replies and returns false. */
static bool check_session_header(struct evhttp_request *req, const json_t *id, const char *sid)
{
    if (!sid) {
        reply_error(req, id, 400, MCP_ERR_BAD_REQUEST,
                    "Bad Request: the Mcp-Session-Id header is required (send initialize first to get one)",
                    NULL);
        return false;
    }
    if (!header_is_visible_ascii(sid, 256)) {
        reply_error(req, id, 400, MCP_ERR_BAD_REQUEST,
                    "Bad Request: Mcp-Session-Id must be 1..256 visible ASCII characters", NULL);
        return false;
    }
    if (!session_id_valid(sid)) {
        reply_error(req, id, 404, MCP_ERR_SESSION_NOT_FOUND, "Session not found", NULL);
        return false;
    }
    return true;
}

/* Checks MCP-Protocol-Version; copies it into out. false after replying 400. */
static bool check_version_header(struct evhttp_request *req, const json_t *id, const rhdr_t *h,
                                 char out[32])
{
    const char *v = h->version;
    out[0] = '\0';
    if (!v)
        return true; /* absent: 2025-03-26 is assumed */
    if (!proto_find(v)) {
        char msg[200];
        snprintf(msg, sizeof msg, "Bad Request: unsupported MCP-Protocol-Version '%.40s' (supported: %s)",
                 v, proto_supported_list());
        reply_error(req, id, 400, MCP_ERR_BAD_REQUEST, msg, NULL);
        return false;
    }
    snprintf(out, 32, "%s", v);
    return true;
}

/* Queues m for its session's worker, or answers 503 when the session's mailbox is full. id:
 * the request's id (borrowed from m->body), NULL for none. */
static void submit(http_thread_t *t, struct evhttp_request *req, wmsg_t *m, const json_t *id,
                   const char *who, hlink_t *link)
{
    snprintf(m->auth_name, sizeof m->auth_name, "%s", who);
    worker_t *w = worker_for_session(m->sid);
    if (!worker_admit(w, m)) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "Server busy: this session has %lld messages queued (the --mailbox limit); retry shortly",
                 (long long)g_cfg.mailbox);
        reply_error(req, id, 503, MCP_ERR_BAD_REQUEST, msg, "1");
        wmsg_free(m);
        return;
    }
    hconn_t *c = hconn_new(t, req, link);
    memcpy(c->sid, m->sid, SESSION_ID_LEN + 1);
    c->id = id ? json_deep_copy(id) : NULL;
    m->conn = ref_of(c);
    m->recv_us = now_mono_us();
    worker_push(w, m);
}

/* Validates a POST body's JSON-RPC shape. On failure replies 400 and returns false. */
static bool validate_body(struct evhttp_request *req, const pbody_t *b, bool *is_init)
{
    json_t *body = b->json;
    *is_init = false;
    if (json_is_array(body)) {
        size_t n = json_array_size(body);
        if (n == 0) {
            reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST, "Invalid Request: empty batch", NULL);
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            /* an invalid item gets its own -32600 in the batch's answer (the actor's part);
             * the valid ones are served */
            json_t *m = json_array_get(body, i);
            if (jsonrpc_str_is(json_object_get(m, "method"), "initialize")) {
                reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST,
                            "Invalid Request: initialize must not be part of a batch", NULL);
                return false;
            }
        }
        return true;
    }
    if (b->kind == JR_INVALID) {
        char msg[300];
        snprintf(msg, sizeof msg, "Invalid Request: %s", b->why);
        reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST, msg, NULL);
        return false;
    }
    if (jsonrpc_str_is(json_object_get(body, "method"), "initialize")) {
        if (b->kind != JR_REQUEST) {
            reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST,
                        "Invalid Request: initialize must be a request (with an id)", NULL);
            return false;
        }
        *is_init = true;
    }
    return true;
}

/* b->json moves to the message when the request is submitted (b->json is then NULL). */
static void handle_post(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                        const char *who, hlink_t *link, pbody_t *b)
{
    const json_t *id = b->id;
    const char *accept = h->accept;
    if (!accept_allows(accept, "application/json") || !accept_allows(accept, "text/event-stream")) {
        reply_error(req, id, 406, MCP_ERR_BAD_REQUEST,
                    "Not Acceptable: the Accept header must list both application/json and text/event-stream",
                    NULL);
        return;
    }
    if (!content_type_is_json(h->content_type)) {
        reply_error(req, id, 415, MCP_ERR_BAD_REQUEST,
                    "Unsupported Media Type: Content-Type must be application/json", NULL);
        return;
    }
    if (!b->json) {
        char msg[300];
        snprintf(msg, sizeof msg, "Parse error: %s (at byte %zu)", b->err, b->pos);
        reply_error(req, NULL, 400, JSONRPC_PARSE_ERROR, msg, NULL);
        return;
    }
    bool is_init;
    if (!validate_body(req, b, &is_init))
        return;
    const char *sid = h->session_id;
    wmsg_t *m = wmsg_new(WM_POST);
    if (is_init) {
        if (sid) {
            reply_error(req, id, 400, JSONRPC_INVALID_REQUEST,
                        "Invalid Request: initialize starts a new session and must be sent without Mcp-Session-Id",
                        NULL);
            wmsg_free(m);
            return;
        }
        if (STAT_GET(sessions_stored) >= g_cfg.max_sessions) {
            char msg[160];
            snprintf(msg, sizeof msg, "Server busy: %lld sessions are stored (--max-sessions); retry later",
                     (long long)g_cfg.max_sessions);
            STAT_INC(limit_refusals_total);
            reply_error(req, id, 503, MCP_ERR_BAD_REQUEST, msg, "30");
            wmsg_free(m);
            return;
        }
        if (session_id_new(m->sid) != 0) {
            reply_error(req, id, 500, JSONRPC_INTERNAL_ERROR, "cannot generate a session id", NULL);
            wmsg_free(m);
            return;
        }
        m->create = true;
    } else {
        if (!check_session_header(req, id, sid) || !check_version_header(req, id, h, m->proto_hdr)) {
            wmsg_free(m);
            return;
        }
        memcpy(m->sid, sid, SESSION_ID_LEN + 1);
    }
    m->body = b->json; /* ownership moves to the actor with the message */
    b->json = NULL;
    submit(t, req, m, id, who, link);
}

static void handle_get(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                        const char *who, hlink_t *link)
{
    if (!accept_allows(h->accept, "text/event-stream")) {
        reply_error(req, NULL, 406, MCP_ERR_BAD_REQUEST,
                    "Not Acceptable: a GET must accept text/event-stream", NULL);
        return;
    }
    const char *sid = h->session_id;
    wmsg_t *m = wmsg_new(WM_GET);
    if (!check_session_header(req, NULL, sid) || !check_version_header(req, NULL, h, m->proto_hdr)) {
        wmsg_free(m);
        return;
    }
    memcpy(m->sid, sid, SESSION_ID_LEN + 1);
    const char *last = h->last_event_id;
    if (last) {
        if (!g_cfg.event_store) {
            reply_error(req, NULL, 400, MCP_ERR_BAD_REQUEST,
                        "Bad Request: this server runs with --no-event-store and cannot resume streams",
                        NULL);
            wmsg_free(m);
            return;
        }
        if (event_id_parse(last, &m->resume_tag, &m->resume_stream, &m->resume_seq) != 0) {
            reply_error(req, NULL, 400, MCP_ERR_BAD_REQUEST,
                        "Bad Request: malformed Last-Event-ID (expected <streamId>:<16 hex digits>)",
                        NULL);
            wmsg_free(m);
            return;
        }
        m->has_last_event_id = true;
    }
    submit(t, req, m, NULL, who, link);
}

static void handle_delete(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                        const char *who, hlink_t *link)
{
    const char *sid = h->session_id;
    wmsg_t *m = wmsg_new(WM_DELETE);
    if (!check_session_header(req, NULL, sid) || !check_version_header(req, NULL, h, m->proto_hdr)) {
        wmsg_free(m);
        return;
    }
    memcpy(m->sid, sid, SESSION_ID_LEN + 1);
    submit(t, req, m, NULL, who, link);
}

/* Everything after framing, in the order the checks have always had. */
static void handle_mcp(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h, pbody_t *b)
{
    const json_t *id = b->id;
    if (t->stopping) {
        reply_error(req, id, 503, MCP_ERR_BAD_REQUEST, "the server is shutting down", "5");
        return;
    }
    hlink_t *link = link_of(t, req);
    if (!link) {
        char msg[160];
        snprintf(msg, sizeof msg, "Server busy: %lld client connections are open (--max-connections); retry shortly",
                 (long long)g_cfg.max_connections);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        STAT_INC(limit_refusals_total);
        reply_error(req, id, 503, MCP_ERR_BAD_REQUEST, msg, "1");
        return;
    }
    if (refuse_repeated(req, id, h))
        return;
    const char *origin = h->origin;
    if (!hostcheck_origin_ok(&HC, origin)) {
        char msg[300];
        snprintf(msg, sizeof msg, "Forbidden: Origin '%.200s' is not allowed (see --allowed-origin)", origin);
        reply_error(req, id, 403, MCP_ERR_BAD_REQUEST, msg, NULL);
        return;
    }
    const char *host = h->host;
    if (!hostcheck_host_ok(&HC, host)) {
        char msg[300];
        snprintf(msg, sizeof msg, "Forbidden: Host '%.200s' is not allowed (see --allowed-host)",
                 host ? host : "");
        reply_error(req, id, 403, MCP_ERR_BAD_REQUEST, msg, NULL);
        return;
    }
    const char *who = "";
    if (g_auth.n) {
        const char *authz = h->authorization;
        who = auth_check(&g_auth, authz);
        if (!who) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                              authz ? "Bearer realm=\"mcpactord\", error=\"invalid_token\""
                                    : "Bearer realm=\"mcpactord\"");
            reply_error(req, id, 401, MCP_ERR_BAD_REQUEST,
                        authz ? "Unauthorized: the bearer token is not valid"
                              : "Unauthorized: send Authorization: Bearer <token>",
                        NULL);
            return;
        }
    }
    switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_POST:
        handle_post(t, req, h, who, link, b);
        return;
    case EVHTTP_REQ_GET:
        handle_get(t, req, h, who, link);
        return;
    case EVHTTP_REQ_DELETE:
        handle_delete(t, req, h, who, link);
        return;
    default:
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, POST, DELETE");
        reply_error(req, NULL, 405, MCP_ERR_BAD_REQUEST, "Method Not Allowed: use POST, GET or DELETE", NULL);
        return;
    }
}

static void on_mcp(struct evhttp_request *req, void *arg)
{
    rhdr_t h;
    read_headers(req, &h);
    if (refuse_framing(req, &h))
        return;
    pbody_t b;
    parse_body(req, &b);
    handle_mcp(arg, req, &h, &b);
    json_decref(b.json); /* NULL when it moved to the actor */
}

static void on_other(struct evhttp_request *req, void *arg)
{
    rhdr_t h;
    read_headers(req, &h);
    if (refuse_framing(req, &h))
        return;
    pbody_t b;
    parse_body(req, &b); /* a POST of a request gets its id back, as on /mcp */
    reply_error(req, b.id, 404, MCP_ERR_BAD_REQUEST, "Not Found: the MCP endpoint is /mcp", NULL);
    json_decref(b.json);
}

/* ---- threads ---- */

/* SO_REUSEPORT would let a second server silently share the port with us (same user): a
 * plain bind tells whether anyone already holds it. */
static bool port_taken(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bool taken = bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno == EADDRINUSE;
    close(fd);
    return taken;
}

static evutil_socket_t bind_reuseport(const char *host, int port, bool first)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0) {
        log_error("cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    evutil_socket_t fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (first && port != 0 && port_taken(ai)) {
            log_error("cannot listen on %s:%d: address already in use", host, port);
            break;
        }
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        /* accepted sockets inherit it: SSE events are small writes that must not wait for
         * the peer's delayed ACK (Nagle), or a multi-event stream stalls ~40 ms per event */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0)
            break;
        log_error("cannot listen on %s:%d: %s", host, port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int bound_port_of(evutil_socket_t fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void *http_main(void *arg)
{
    http_thread_t *t = arg;
    char name[16];
    snprintf(name, sizeof name, "http%u", t->idx);
    log_set_thread_name(name);
    event_base_dispatch(t->base);
    return NULL;
}

int http_init(int n, const char *host, int port, int *bound_port)
{
    NT = n;
    T = xcalloc((size_t)n, sizeof *T);
    for (int i = 0; i < n; i++)
        T[i].fd = -1;
    for (int i = 0; i < n; i++) {
        http_thread_t *t = &T[i];
        t->idx = (uint32_t)i;
        t->fd = bind_reuseport(host, port, i == 0);
        if (t->fd < 0)
            return -1;
        if (port == 0)
            port = bound_port_of(t->fd); /* the other threads join the same port */
        t->base = event_base_new();
        t->http = evhttp_new(t->base);
        if (!t->base || !t->http || mq_init(&t->inbox) != 0)
            return -1;
        evhttp_set_allowed_methods(t->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
                                                EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
                                                EVHTTP_REQ_OPTIONS | EVHTTP_REQ_HEAD);
        /* bodiless replies (202, a DELETE's 200) carry no Content-Type rather than libevent's
         * default text/html; every reply with a body names its own */
        evhttp_set_default_content_type(t->http, NULL);
        evhttp_set_max_body_size(t->http, g_cfg.max_body);
        evhttp_set_max_headers_size(t->http, g_cfg.max_headers);
        evhttp_set_timeout(t->http, (int)g_cfg.read_timeout_s);
        evhttp_set_cb(t->http, "/mcp", on_mcp, t);
        evhttp_set_gencb(t->http, on_other, t);
        evhttp_set_bevcb(t->http, on_new_bev, t);
        t->fresh_ev = event_new(t->base, -1, 0, on_fresh, t);
        if (!t->fresh_ev)
            return -1;
        t->bound = evhttp_accept_socket_with_handle(t->http, t->fd);
        if (!t->bound)
            return -1;
        t->inbox_ev = event_new(t->base, t->inbox.efd, EV_READ | EV_PERSIST, on_inbox, t);
        event_add(t->inbox_ev, NULL);
    }
    *bound_port = port;
    hostcheck_init(&HC, host, port, g_cfg.allowed_hosts, g_cfg.n_allowed_hosts,
                   g_cfg.allowed_origins, g_cfg.n_allowed_origins);
    if (!HC.check_host)
        log_warn("listening on a wildcard address without --allowed-host: Host and Origin are not checked");
    return 0;
}

struct event_base *http_base(int i)
{
    return T[i].base;
}

int http_run(void)
{
    for (int i = 0; i < NT; i++) {
        if (pthread_create(&T[i].thread, NULL, http_main, &T[i]) != 0)
            return -1;
        T[i].started = true;
    }
    return 0;
}

static pthread_mutex_t quiesce_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t quiesce_cv = PTHREAD_COND_INITIALIZER;
static int quiesced;

static void on_quiesce(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    t->stopping = true;
    if (t->bound) {
        evhttp_del_accept_socket(t->http, t->bound);
        t->bound = NULL;
    }
    for (uint32_t i = 0; i < t->nslots; i++) {
        hconn_t *c = t->slots[i];
        if (!c)
            continue;
        if (c->state == H_SSE) {
            end_stream(c);
        } else {
            reply_error(c->req, c->id, 503, MCP_ERR_BAD_REQUEST, "the server is shutting down", "5");
            hconn_free(c);
        }
    }
    pthread_mutex_lock(&quiesce_mu);
    quiesced++;
    pthread_cond_broadcast(&quiesce_cv);
    pthread_mutex_unlock(&quiesce_mu);
}

void http_quiesce(void)
{
    int n = 0;
    for (int i = 0; i < NT; i++) {
        if (T[i].started) {
            event_base_once(T[i].base, -1, EV_TIMEOUT, on_quiesce, &T[i], NULL);
            n++;
        }
    }
    pthread_mutex_lock(&quiesce_mu);
    while (quiesced < n)
        pthread_cond_wait(&quiesce_cv, &quiesce_mu);
    quiesced = 0;
    pthread_mutex_unlock(&quiesce_mu);
}

static void on_exit_loop(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    event_base_loopexit(t->base, NULL);
}

void http_stop(void)
{
    for (int i = 0; i < NT; i++)
        if (T[i].started)
            event_base_once(T[i].base, -1, EV_TIMEOUT, on_exit_loop, &T[i], NULL);
    for (int i = 0; i < NT; i++) {
        if (T[i].started)
            pthread_join(T[i].thread, NULL);
        T[i].started = false;
    }
}

void http_free(void)
{
    for (int i = 0; i < NT; i++) {
        http_thread_t *t = &T[i];
        if (t->inbox_ev) {
            mq_node_t *n = mq_take_all(&t->inbox);
            while (n) {
                mq_node_t *next = n->next;
                hmsg_free((hmsg_t *)n);
                n = next;
            }
            event_free(t->inbox_ev);
            mq_destroy(&t->inbox);
        }
        if (t->http)
            evhttp_free(t->http);
        else if (t->fd >= 0)
            close(t->fd);
        ptrmap_free(&t->links); /* evhttp_free ran every connection's close callback */
        for (uint32_t j = 0; j < t->nfresh; j++)
            bufferevent_decref(t->fresh[j]); /* accepted as the loop ended: freed by evhttp_free */
        free(t->fresh);
        if (t->fresh_ev)
            event_free(t->fresh_ev);
        if (t->base)
            event_base_free(t->base);
        free(t->slots);
        free(t->gens);
        free(t->free_slots);
    }
    free(T);
    T = NULL;
    NT = 0;
    hostcheck_free(&HC);
}
