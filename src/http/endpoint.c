/* Threads: HTTP threads. */
/* The /mcp endpoint: a request's checks (framing, Host/Origin, authentication, headers, body),
 * POST/GET/DELETE, and the hand-over to the session's worker. HTTP threads only. */
#include "http/endpoint_internal.h"
#include "http/internal.h"

#include "http/cors.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "http/oauth.h"
#include "core/blockcache.h"
#include "core/config.h"
#include "core/shard.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "core/stats.h"
#include "wire/checks.h"
#include "wire/eventid.h"
#include "wire/jsonrpc.h"
#include "wire/reqstate.h"
#include "wire/stateless.h"
#include "wire/proto.h"
#include "wire/route.h"
#include "wire/sse.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- request handling ---- */

enum { H_FIRST_WINS = 0, H_ONCE, H_MIRROR, H_FRAMING, H_CODING };

/* /mcp/NAME of --upstream NAME: 1 + its index; 0 for any other path. */
static uint8_t upstream_of_path(struct evhttp_request *req)
{
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
    if (!path || strncmp(path, "/mcp/", 5) != 0)
        return 0;
    int i = config_upstream_find(&g_cfg, path + 5, strlen(path + 5));
    return (uint8_t)(i + 1);
}

static void read_headers(struct evhttp_request *req, rhdr_t *h)
{
    memset(h, 0, sizeof *h);
    h->upstream = upstream_of_path(req);
    /* H_ONCE: a second copy is refused: a proxy in front may act on a different one than we
     * do (the session, the version, the Host checked against DNS rebinding, the token, the
     * media type, the resume point); H_MIRROR: the same for the headers 2026-07-28 mirrors
     * from the body, whose repetition that revision answers as a malformed header (-32020,
     * endpoint_modern.c); H_FRAMING: the same for the headers that frame the body,
     * which makes the connection unusable; H_CODING: every copy is looked at (a body coded
     * twice lists its codings in two headers) */
    static const struct {
        const char *name;
        size_t len;
        size_t off;
        int rule;
    } WANT[] = {
        {"Accept", 6, offsetof(rhdr_t, accept), H_FIRST_WINS},
        {"Host", 4, offsetof(rhdr_t, host), H_ONCE},
        {"Origin", 6, offsetof(rhdr_t, origin), H_FIRST_WINS},
        {"Content-Type", 12, offsetof(rhdr_t, content_type), H_ONCE},
        {"Content-Length", 14, offsetof(rhdr_t, content_length), H_FRAMING},
        {"Mcp-Session-Id", 14, offsetof(rhdr_t, session_id), H_ONCE},
        {"MCP-Protocol-Version", 20, offsetof(rhdr_t, version), H_MIRROR},
        {"Authorization", 13, offsetof(rhdr_t, authorization), H_ONCE},
        {"Last-Event-ID", 13, offsetof(rhdr_t, last_event_id), H_ONCE},
        {"Transfer-Encoding", 17, offsetof(rhdr_t, transfer_encoding), H_FRAMING},
        {"Mcp-Method", 10, offsetof(rhdr_t, mcp_method), H_MIRROR},
        {"Mcp-Name", 8, offsetof(rhdr_t, mcp_name), H_MIRROR},
        {"Content-Encoding", 16, offsetof(rhdr_t, coding), H_CODING},
    };
    struct evkeyval *kv;
    for (kv = evhttp_request_get_input_headers(req)->tqh_first; kv; kv = kv->next.tqe_next) {
        size_t kl = strlen(kv->key);
        if (kl > 10 && strncasecmp(kv->key, "Mcp-Param-", 10) == 0)
            h->mcp_param = true;
        for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) {
            if (kl == WANT[i].len && strcasecmp(kv->key, WANT[i].name) == 0) {
                const char **slot = (const char **)((char *)h + WANT[i].off);
                if (WANT[i].rule == H_CODING) {
                    if (!*slot && !content_coding_is_identity(kv->value))
                        *slot = kv->value;
                } else if (!*slot) { /* the first of repeated headers, as evhttp_find_header did */
                    *slot = kv->value;
                } else if (WANT[i].rule != H_FIRST_WINS) {
                    if (!h->twice)
                        h->twice = WANT[i].name;
                    const char **which = WANT[i].rule == H_MIRROR ? &h->twice_mirror
                                                                  : &h->twice_plain;
                    if (!*which)
                        *which = WANT[i].name;
                    h->twice_framing |= WANT[i].rule == H_FRAMING;
                }
                break;
            }
        }
    }
}

/* A request whose body length is ambiguous, or whose bytes hold what evhttp misreads (a NUL
 * in its head, a malformed chunked body: the input scanner's find, counted here; 431 or 413 for
 * a head or a body over its limit, counted as a refusal by the scanner): 400 and the
 * connection is closed, since what follows the body cannot be trusted as the next request
 * (nor the body: id null). evhttp refuses some of these itself, with its own reply. True when
 * refused. */
static bool refuse_framing(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h)
{
    int status = 400;
    const char *why = http_scan_fault(t, req, &status);
    if (!why)
        why = framing_problem(h->content_length, h->transfer_encoding, h->twice_framing);
    if (!why)
        return false;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    http_linger_mark(t, req); /* its client may still be sending: it must read this first */
    http_reply_error(req, NULL, status, MCP_ERR_BAD_REQUEST, why, NULL);
    return true;
}

/* A header that must come once came twice: 400 + -32000 (the connection stays usable). A
 * 2026-07-28 request whose repeated headers are all ones it mirrors from the body goes on:
 * its header checks answer -32020 (endpoint_modern.c). True when refused. */
static bool refuse_repeated(struct evhttp_request *req, const pbody_t *b, const rhdr_t *h)
{
    if (!h->twice)
        return false;
    const char *name = h->twice;
    if (h->twice_mirror && evhttp_request_get_command(req) == EVHTTP_REQ_POST &&
        route_takes_stateless(
            &(route_in_t){.verb = ROUTE_POST,
                          .stateless_on = g_cfg.modern,
                          .session_id = h->session_id,
                          .version = h->version,
                          .body = b->json,
                          .view = &b->v,
                          .is_init = jsonrpc_str_is(b->v.method, "initialize")})) {
        if (!h->twice_plain)
            return false;
        name = h->twice_plain;
    }
    char msg[160];
    snprintf(msg, sizeof msg, "Bad Request: the %s header was sent more than once", name);
    http_reply_error(req, b->id, 400, MCP_ERR_BAD_REQUEST, msg, NULL);
    return true;
}

static void parse_body(struct evhttp_request *req, pbody_t *b)
{
    b->json = NULL;
    b->kind = JR_INVALID;
    b->why = NULL;
    b->id = NULL;
    b->v = (jr_view_t){0};
    b->err[0] = '\0';
    b->pos = 0;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST)
        return;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *data = len ? (const char *)evbuffer_pullup(in, -1) : "";
    b->json = json_parse_buf_bounded(data, len, (size_t)g_cfg.max_json_nodes, &b->info, b->err,
                                     sizeof b->err, &b->pos);
    if (b->info.nodes >= HTTP_BIG_PARSE_NODES)
        http_trim_soon(g_http_self); /* its memory goes back once it is freed */
    if (!b->json || json_is_array(b->json))
        return;
    b->kind = jsonrpc_classify_view(b->json, &b->why, &b->v);
    if (b->kind == JR_REQUEST)
        b->id = b->v.id;
}

/* A session-era request's route (wire/route.h): its session must be named, be an id, and be
 * served here. On failure replies and returns false. */
static bool check_session_route(struct evhttp_request *req, const json_t *id, const route_t *r)
{
    switch (r->err) {
    case ROUTE_ERR_NO_SESSION:
        http_reply_error(
            req, id, 400, MCP_ERR_BAD_REQUEST,
            "Bad Request: the Mcp-Session-Id header is required (send initialize first to get one)",
            NULL);
        return false;
    case ROUTE_ERR_BAD_SESSION:
        http_reply_error(req, id, 400, MCP_ERR_BAD_REQUEST,
                         "Bad Request: Mcp-Session-Id must be 1..256 visible ASCII characters",
                         NULL);
        return false;
    case ROUTE_ERR_UNKNOWN_SESSION:
        http_reply_error(req, id, 404, MCP_ERR_SESSION_NOT_FOUND, "Session not found", NULL);
        return false;
    default:
        break;
    }
    REQUIRE(r->kind == ROUTE_SESSION); /* the callers answer the other refusals first */
    if (!shard_owns_id(r->key)) {
        http_reply_not_here(req, id, route_key_name(r->kind), r->key);
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
        snprintf(msg, sizeof msg,
                 "Bad Request: unsupported MCP-Protocol-Version '%.40s' (supported: %s)", v,
                 proto_supported_list());
        http_reply_error(req, id, 400, MCP_ERR_BAD_REQUEST, msg, NULL);
        return false;
    }
    str_copy(out, 32, v);
    return true;
}

/* A request for an actor on another loop carries its body's text, not the tree this thread
 * parsed: that loop parses its own (wmsg_parse_raw). A tree handed over is some 30 blocks made
 * here, read and freed there, each a cache miss on the other core and a block cache or malloc
 * arena fed by the wrong thread; a second parse of a small body costs less (server CPU a call,
 * half of them crossing, 2 loops: docs/PERFORMANCE.md). Past PASS_TEXT_MAX bytes a parse would
 * cost more than the tree: it moves. */
#define PASS_TEXT_MAX (16 * 1024)

/* Gives m the body: its tree (b->json moves to m and is then NULL) with each message's kind,
 * so the actor does not classify again; or, for an actor on another loop (local false), its
 * text (b->json stays, freed by this thread). */
static void hand_body(struct evhttp_request *req, wmsg_t *m, pbody_t *b, bool local)
{
    if (!local) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        if (len > 0 && len <= PASS_TEXT_MAX) {
            m->u.post.raw = blockcache_alloc(len);
            memcpy(m->u.post.raw, evbuffer_pullup(in, -1), len); /* (parse_body pulled it up) */
            m->u.post.raw_len = (uint32_t)len;
            m->u.post.as_text = true;
            return;
        }
    }
    m->u.post.body = b->json; /* ownership moves to the actor with the message */
    b->json = NULL;
    wmsg_classify(m, b->kind, &b->v, b->info.nodes);
}

/* Gives a WM_POST its body (b; NULL for GET and DELETE), then queues m for its session's
 * worker, or answers 503 when the session's mailbox is full (echoing b's request id). */
void ep_submit(http_thread_t *t, struct evhttp_request *req, wmsg_t *m, pbody_t *b, const char *who,
               hlink_t *link)
{
    str_copy(m->u.client.auth_name, sizeof m->u.client.auth_name, who);
    worker_t *w = worker_for_session(m->sid);
    bool local = worker_is_on_thread(w, t->idx);
    const json_t *id = b ? b->id : NULL; /* in the tree this thread parsed, or m's (copied below) */
    if (b)
        hand_body(req, m, b, local);
    admit_t why = worker_admit(w, m);
    if (why != ADMIT_OK) {
        char msg[160];
        if (why == ADMIT_SESSION_FULL)
            snprintf(msg, sizeof msg,
                     "Server busy: this session has %lld messages queued (the --mailbox limit); "
                     "retry shortly",
                     (long long)g_cfg.mailbox);
        else
            snprintf(msg, sizeof msg,
                     "Server busy: its worker has %lld messages queued (%d times --mailbox); "
                     "retry shortly",
                     (long long)g_cfg.mailbox * WORKER_QUEUE_MAX, WORKER_QUEUE_MAX);
        http_reply_retry(req, id, MCP_ERR_BAD_REQUEST, msg, "1");
        wmsg_free(m);
        return;
    }
    hconn_t *c = http_hconn_new(t, req, link);
    memcpy(c->sid, m->sid, SESSION_ID_LEN + 1);
    if (who && who[0])
        str_copy(c->who, sizeof c->who, who);
    c->id = id ? json_deep_copy(id) : NULL;
    c->modern = m->type == WM_POST && m->u.post.modern;
    m->u.client.conn = http_ref_of(c);
    m->u.client.recv_us = now_mono_us();
    STAT_INC(requests_handed_total);
    if (!local) {
        STAT_INC(requests_crossed_total);
        if (m->type == WM_POST && m->u.post.as_text)
            STAT_INC(requests_crossed_as_text_total);
    }
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
            http_reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST,
                             "Invalid Request: empty batch", NULL);
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            /* an invalid item gets its own -32600 in the batch's answer (the actor's part);
             * the valid ones are served */
            json_t *m = json_array_get(body, i);
            if (jsonrpc_str_is(json_object_get(m, "method"), "initialize")) {
                http_reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST,
                                 "Invalid Request: initialize must not be part of a batch", NULL);
                return false;
            }
        }
        return true;
    }
    if (b->kind == JR_INVALID) {
        char msg[300];
        snprintf(msg, sizeof msg, "Invalid Request: %s", b->why);
        /* a request's id echoed where it can be read (JSON-RPC: null only when it cannot);
         * a message without "method" is a response, whose id is one of the server's own
         * requests: null, so the client does not take it for that request's answer */
        const json_t *id = b->v.method && jsonrpc_id_valid(b->v.id) ? b->v.id : NULL;
        http_reply_error(req, id, 400, JSONRPC_INVALID_REQUEST, msg, NULL);
        return false;
    }
    if (jsonrpc_str_is(b->v.method, "initialize")) {
        if (b->kind != JR_REQUEST) {
            http_reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST,
                             "Invalid Request: initialize must be a request (with an id)", NULL);
            return false;
        }
        *is_init = true;
    }
    return true;
}

/* The id of a body refused past --max-json-nodes, where the parse read it before it stopped
 * (json_parse_info_t) and it is a valid id: a new reference, or NULL (the answer's id null). */
static json_t *too_many_id(struct evhttp_request *req, const json_parse_info_t *info)
{
    if (!info->id_len)
        return NULL;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    const char *data = (const char *)evbuffer_pullup(in, -1); /* one piece already: parse_body */
    if (!data || info->id_off + info->id_len > evbuffer_get_length(in))
        return NULL;
    return jsonrpc_id_parse(data + info->id_off, info->id_len);
}

static void handle_post(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                        const char *who, hlink_t *link, pbody_t *b)
{
    const json_t *id = b->id;
    const char *accept = h->accept;
    if (!accept_allows(accept, "application/json") || !accept_allows(accept, "text/event-stream")) {
        http_reply_error(
            req, id, 406, MCP_ERR_BAD_REQUEST,
            "Not Acceptable: the Accept header must list both application/json and text/event-stream",
            NULL);
        return;
    }
    if (!content_type_is_json(h->content_type)) {
        http_reply_error(req, id, 415, MCP_ERR_BAD_REQUEST,
                         "Unsupported Media Type: Content-Type must be application/json", NULL);
        return;
    }
    if (h->coding) {
        /* the body is read as it comes: a compressed one would only fail to parse (RFC 9110
         * 15.5.16: 415, and Accept-Encoding says which codings would do) */
        char msg[200];
        snprintf(msg, sizeof msg,
                 "Unsupported Media Type: Content-Encoding '%.60s' is not "
                 "accepted; send the body uncoded (identity)",
                 h->coding);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Accept-Encoding", "identity");
        http_reply_error(req, id, 415, MCP_ERR_BAD_REQUEST, msg, NULL);
        return;
    }
    if (b->info.too_many) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "Payload Too Large: the body holds more than %lld JSON values "
                 "(--max-json-nodes)",
                 (long long)g_cfg.max_json_nodes);
        STAT_INC(limit_refusals_total);
        json_t *read_id = too_many_id(req, &b->info);
        http_reply_error(req, read_id, 413, JSONRPC_INVALID_REQUEST, msg, NULL);
        json_decref(read_id);
        return;
    }
    if (!b->json) {
        char msg[300];
        snprintf(msg, sizeof msg, "Parse error: %s (at byte %zu)", b->err, b->pos);
        http_reply_error(req, NULL, 400, JSONRPC_PARSE_ERROR, msg, NULL);
        return;
    }
    bool is_init;
    if (!validate_body(req, b, &is_init))
        return;
    route_t r;
    route_request(&(route_in_t){.verb = ROUTE_POST,
                                .stateless_on = g_cfg.modern,
                                .session_id = h->session_id,
                                .version = h->version,
                                .body = b->json,
                                .view = &b->v,
                                .is_init = is_init},
                  &r);
    if (r.kind == ROUTE_STATELESS && h->upstream && g_cfg.upstream_pool == 0) {
        http_reply_error(req, id, 400, MCP_ERR_BAD_REQUEST,
                         "Bad Request: this gateway path (/mcp/NAME) serves the session era only "
                         "(--upstream-pool 0): send initialize first",
                         NULL);
        return;
    }
    if (r.kind == ROUTE_STATELESS) {
        ep_handle_modern(t, req, h, who, link, b, &r);
        return;
    }
    wmsg_t *m = wmsg_new(WM_POST);
    m->upstream = h->upstream;
    if (is_init) {
        if (r.err == ROUTE_ERR_INIT_IN_SESSION) {
            http_reply_error(
                req, id, 400, JSONRPC_INVALID_REQUEST,
                "Invalid Request: initialize starts a new session and must be sent without Mcp-Session-Id",
                NULL);
            wmsg_free(m);
            return;
        }
        /* the session's place is taken here, before it exists: the cap is exact however many
         * initializes are in flight, and one client holds at most its share of it */
        principal_t *pr = http_request_principal(req, who, link);
        if (!http_take_share(req, id, pr, PR_SESSIONS)) {
            principal_unref(pr);
            wmsg_free(m);
            return;
        }
        m->u.client.principal = pr;
        m->u.post.holds_session = true; /* given back unless the session is made */
        if (shard_owned_count() == 0) { /* drained: a new session could not be served here */
            http_reply_not_here(req, id, NULL, NULL);
            wmsg_free(m);
            return;
        }
        if (session_id_new(m->sid) != 0) {
            http_reply_error(req, id, 500, JSONRPC_INTERNAL_ERROR, "cannot generate a session id",
                             NULL);
            wmsg_free(m);
            return;
        }
        worker_place_on_thread(m->sid, t->idx); /* its actor lives on this thread */
        m->u.post.create = true;
    } else {
        if (!check_session_route(req, id, &r) ||
            !check_version_header(req, id, h, m->u.client.proto_hdr)) {
            wmsg_free(m);
            return;
        }
        memcpy(m->sid, r.key, SESSION_ID_LEN + 1);
    }
    ep_submit(t, req, m, b, who, link);
}

/* GET and DELETE need a session (2025 era); without one, 2026-07-28 answers 405
 * (streamable-http, "Backward Compatibility"). */
static void refuse_sessionless(struct evhttp_request *req, const char *what)
{
    char msg[200];
    snprintf(
        msg, sizeof msg,
        "Method Not Allowed: %s needs an Mcp-Session-Id (session era); protocol version " MODERN_VERSION
        " uses POST only",
        what);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
    http_reply_error(req, NULL, 405, MCP_ERR_BAD_REQUEST, msg, NULL);
}

static void handle_get(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                       const char *who, hlink_t *link)
{
    if (!accept_allows(h->accept, "text/event-stream")) {
        http_reply_error(req, NULL, 406, MCP_ERR_BAD_REQUEST,
                         "Not Acceptable: a GET must accept text/event-stream", NULL);
        return;
    }
    route_t r;
    route_request(&(route_in_t){.verb = ROUTE_GET,
                                .stateless_on = g_cfg.modern,
                                .session_id = h->session_id},
                  &r);
    if (r.err == ROUTE_ERR_SESSIONLESS) {
        refuse_sessionless(req, "GET");
        return;
    }
    wmsg_t *m = wmsg_new(WM_GET);
    m->upstream = h->upstream;
    if (!check_session_route(req, NULL, &r) ||
        !check_version_header(req, NULL, h, m->u.client.proto_hdr)) {
        wmsg_free(m);
        return;
    }
    memcpy(m->sid, r.key, SESSION_ID_LEN + 1);
    const char *last = h->last_event_id;
    if (last) {
        if (!g_cfg.event_store) {
            http_reply_error(
                req, NULL, 400, MCP_ERR_BAD_REQUEST,
                "Bad Request: this server runs with --no-event-store and cannot resume streams",
                NULL);
            wmsg_free(m);
            return;
        }
        if (event_id_parse(last, &m->u.get.tag, &m->u.get.stream, &m->u.get.seq) != 0) {
            http_reply_error(
                req, NULL, 400, MCP_ERR_BAD_REQUEST,
                "Bad Request: malformed Last-Event-ID (expected <streamId>:<16 hex digits>)", NULL);
            wmsg_free(m);
            return;
        }
        m->u.get.resume = true;
    }
    ep_submit(t, req, m, NULL, who, link);
}

static void handle_delete(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                          const char *who, hlink_t *link)
{
    route_t r;
    route_request(&(route_in_t){.verb = ROUTE_DELETE,
                                .stateless_on = g_cfg.modern,
                                .session_id = h->session_id},
                  &r);
    if (r.err == ROUTE_ERR_SESSIONLESS) {
        refuse_sessionless(req, "DELETE");
        return;
    }
    wmsg_t *m = wmsg_new(WM_DELETE);
    m->upstream = h->upstream;
    if (!check_session_route(req, NULL, &r) ||
        !check_version_header(req, NULL, h, m->u.client.proto_hdr)) {
        wmsg_free(m);
        return;
    }
    memcpy(m->sid, r.key, SESSION_ID_LEN + 1);
    ep_submit(t, req, m, NULL, who, link);
}

/* Everything after framing, in the order the checks have always had. */
static void handle_mcp(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h, pbody_t *b)
{
    const json_t *id = b->id;
    if (t->stopping) {
        http_reply_retry(req, id, MCP_ERR_BAD_REQUEST, "the server is shutting down", "5");
        return;
    }
    hlink_t *link = http_link_of(t, req);
    if (!link) {
        http_reply_link_refused(t, req, id); /* 503 (the cap) or 429 (its address's share) */
        return;
    }
    if (refuse_repeated(req, b, h))
        return;
    const char *origin = h->origin;
    if (!hostcheck_origin_ok(&g_hostcheck, origin)) {
        char msg[300];
        snprintf(
            msg, sizeof msg,
            "Forbidden: Origin '%.200s' is not allowed (see --allowed-origin and --cors-origin)",
            origin);
        http_reply_error(req, id, 403, MCP_ERR_BAD_REQUEST, msg, NULL);
        return;
    }
    const char *host = h->host;
    if (!hostcheck_host_ok(&g_hostcheck, host)) {
        char msg[300];
        snprintf(msg, sizeof msg, "Forbidden: Host '%.200s' is not allowed (see --allowed-host)",
                 host ? host : "");
        http_reply_error(req, id, 403, MCP_ERR_BAD_REQUEST, msg, NULL);
        return;
    }
    char who[64]; /* the token's name, "o:<hex>" for an OAuth subject, "" without auth */
    if (!http_authorize(t, req, h->authorization, b->json, id, who))
        return; /* 401, 403 or 503 (http/oauth.c) */
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
        http_reply_error(req, NULL, 405, MCP_ERR_BAD_REQUEST,
                         "Method Not Allowed: use POST, GET or DELETE", NULL);
        return;
    }
}

void http_on_mcp(struct evhttp_request *req, void *arg)
{
    if (evhttp_request_get_command(req) == EVHTTP_REQ_CONNECT) {
        http_refuse_connect(req);
        return;
    }
    rhdr_t h;
    read_headers(req, &h);
    if (refuse_framing(arg, req, &h) || http_refuse_method(req) || http_cors_preflight(req))
        return;
    pbody_t b;
    parse_body(req, &b);
    handle_mcp(arg, req, &h, &b);
    json_decref(b.json); /* NULL when it moved to the actor */
}

void http_mcp_resume(http_thread_t *t, struct evhttp_request *req)
{
    rhdr_t h;
    read_headers(req, &h);
    pbody_t b;
    parse_body(req, &b);
    handle_mcp(t, req, &h, &b);
    json_decref(b.json);
}

void http_on_other(struct evhttp_request *req, void *arg)
{
    if (evhttp_request_get_command(req) == EVHTTP_REQ_CONNECT) {
        http_refuse_connect(req);
        return;
    }
    rhdr_t h;
    read_headers(req, &h);
    if (refuse_framing(arg, req, &h) || http_refuse_method(req) || http_cors_preflight(req))
        return;
    if (http_serve_prm(req)) /* RFC 9728 metadata, without a token */
        return;
    pbody_t b;
    parse_body(req, &b); /* a POST of a request gets its id back, as on /mcp */
    if (h.upstream) {    /* /mcp/NAME of --upstream NAME: the gateway's sessions */
        handle_mcp(arg, req, &h, &b);
        json_decref(b.json);
        return;
    }
    http_reply_error(req, b.id, 404, MCP_ERR_BAD_REQUEST, "Not Found: the MCP endpoint is /mcp",
                     NULL);
    json_decref(b.json);
}
