/* Threads: worker threads. */
/* The MCP methods of a session: worker thread only.
 *
 * A POST body is dispatched in order: notifications and responses take effect at once;
 * requests become calls on one POST stream. The exchange is opened (stream_begin, actor.h) for
 * all its requests before the first runs and settled once after the last (stream_settle), so a
 * body whose requests all answer synchronously gets one JSON reply (an array for a batch). The methods themselves
 * are in methods.c (shared with the 2026-07-28 path, modern.c). */
#include "mcp/internal.h"

#include "core/config.h"
#include "core/jsondump.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "wire/jsonrpc.h"
#include "wire/stateless.h"

#include <string.h>

/* ---- initialize ---- */

/* What a session keeps of its client's initialize (capabilities and clientInfo, compact). */
#define MCP_MAX_CLIENT_META_BYTES 65536

/* The length of v's compact text (0 for NULL): json_dump_into writes jansson's JSON_COMPACT
 * text, without its generic dumper (two of those were 5.8k instructions a handshake). */
static size_t compact_len(const json_t *v)
{
    if (!v)
        return 0;
    buf_t b = {0};
    /* (a value nested past the writer's 2048 levels cannot have been parsed: counted too big) */
    size_t n = json_dump_into(&b, v) ? b.len : MCP_MAX_CLIENT_META_BYTES + 1;
    buf_free(&b);
    return n;
}

static void mcp_handle_initialize(worker_t *w, wmsg_t *m)
{
    json_t *params = m->u.post.v.params, *id = m->u.post.v.id;
    static const jkey_t KEYS[] = {JKEY("protocolVersion"), JKEY("capabilities"),
                                  JKEY("clientInfo")};
    json_t *pp[3];
    json_pick(params, KEYS, 3, pp);
    json_t *pv = pp[0], *caps = pp[1], *info = pp[2];
    const char *bad = NULL;
    if (!json_is_string(pv))
        bad = "initialize needs params.protocolVersion (a string)";
    else if (caps && !json_is_object(caps))
        bad = "params.capabilities must be an object";
    else if (info && !json_is_object(info))
        bad = "params.clientInfo must be an object";
    else if (compact_len(caps) + compact_len(info) > MCP_MAX_CLIENT_META_BYTES)
        /* both are kept in the session's metadata, which is rewritten at every change of it:
         * an unbounded clientInfo would make each of those writes that large */
        bad = "params.capabilities and params.clientInfo together take more than 65536 bytes";
    if (bad) {
        actor_reply(w, m->u.client.conn, 400, jsonrpc_error(id, JSONRPC_INVALID_PARAMS, bad, NULL),
                    NULL);
        return;
    }
    actor_t *a = actor_create(w, m->sid);
    /* its place of --max-sessions, taken by the HTTP thread, is the session's from now on */
    a->owner = m->u.client.principal;
    m->u.client.principal = NULL;
    m->u.post.holds_session = false;
    a->proto = proto_negotiate(jsonrpc_cstr(pv)); /* one holding U+0000 is unknown: the latest */
    /* shared with the worker's other sessions that sent the same (read-only from here on) */
    json_t *none = caps ? NULL : json_object();
    a->client_caps = worker_share_json(w, caps ? caps : none);
    json_decref(none);
    a->client_info = info ? worker_share_json(w, info) : NULL;
    str_copy(a->auth_name, sizeof a->auth_name, m->u.client.auth_name);
    /* every session holds one alarm while it exists: at the latest, its own expiry; until a
     * request comes after initialize, the earlier --unused-session-ttl */
    int64_t expiry = a->created_ms + g_cfg.session_ttl_s * 1000;
    a->used = false;
    actor_alarm_set(a, actor_unused_expiry(a) < expiry ? actor_unused_expiry(a) : expiry);
    STAT_INC(sessions_created_total);
    worker_stat_add(w, DS_SESSIONS_STORED, 1);
    STAT_INC(requests_total[SM_initialize]);
    log_info("session %.8s created: protocol %s, client %s", a->sid, a->proto->version,
             json_string_value(json_object_get(info, "name"))
                 ? json_string_value(json_object_get(info, "name"))
                 : "?");

    stream_t *s = stream_begin(a, m->u.client.conn, 1, STREAM_BEGIN_SESSION_ID);
    call_t *c = stream_add_call(a, s, id, SM_initialize, m->u.client.recv_us);
    if (g_cfg.response_mode == RESPONSE_SSE)
        actor_stream_start_sse(a, s);
    /* the text built at start: a session-era call has no 2026-07-28 decorations (mcp_answer) */
    size_t len;
    const char *result = mcp_initialize_result(a->proto, &len);
    actor_complete_result(a, c, NULL, result, len);
    stream_settle(a, s, false);
}

/* ---- notifications and responses from the client ---- */

static void do_cancelled(actor_t *a, json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");
    if (!rid)
        return;
    /* ids may repeat across streams; the newest matching call is the one meant */
    for (call_t *c = a->calls; c; c = c->next) {
        if (json_equal(c->id, rid)) {
            if (c->method == SM_initialize)
                return; /* initialize is never cancelled */
            log_debug("session %.8s: call cancelled by the client", a->sid);
            actor_drop_call(a, c); /* cancels its job */
            return;
        }
    }
}

static void handle_notification(actor_t *a, json_t *msg)
{
    const json_t *method = json_object_get(msg, "method");
    STAT_INC(requests_total[SM_notification]);
    if (jsonrpc_str_is(method, "notifications/initialized")) {
        /* kept in memory; the next metadata write (at the latest, hibernation) carries it:
         * nothing depends on it across a crash, and it saves a write per session */
        a->initialized = true;
    } else if (jsonrpc_str_is(method, "notifications/cancelled")) {
        do_cancelled(a, json_object_get(msg, "params"));
    }
    /* other notifications (roots/list_changed, progress) need no action */
}

static void handle_response(actor_t *a, json_t *msg)
{
    STAT_INC(requests_total[SM_response]);
    json_t *id = json_object_get(msg, "id");
    if (json_is_integer(id)) {
        for (pending_t **pp = &a->pending; *pp; pp = &(*pp)->next) {
            pending_t *p = *pp;
            if ((json_int_t)p->num != json_integer_value(id))
                continue;
            *pp = p->next;
            json_t *err = json_object_get(msg, "error");
            if (err) {
                char why[256];
                snprintf(why, sizeof why, "the client answered with error %lld: %s",
                         (long long)json_integer_value(json_object_get(err, "code")),
                         json_string_value(json_object_get(err, "message"))
                             ? json_string_value(json_object_get(err, "message"))
                             : "");
                job_reply(p->job, p->wait_seq, NULL, why);
            } else {
                /* checked as a 2026-07-28 retry's answer is (a handler may trust "action" to
                 * be a string); a copy: the body stays with this worker, the result goes to the
                 * tool thread */
                json_t *res = json_object_get(msg, "result");
                const char *bad = stateless_answer_problem(p->method, res);
                char why[200];
                if (bad)
                    snprintf(why, sizeof why, "the client's answer to %s %s", p->method, bad);
                job_reply(p->job, p->wait_seq, bad ? NULL : json_deep_copy(res), bad ? why : NULL);
            }
            free(p);
            return;
        }
    }
    STAT_INC(client_responses_unknown_total);
    log_info("session %.8s: a response to an unknown server request was ignored", a->sid);
}

static void mcp_handle_post(actor_t *a, wmsg_t *m)
{
    json_t *body = m->u.post.body;
    bool batch = json_is_array(body);
    /* (a batch the session's version lacks, or one past --max-streams, was refused before:
     * actor/dispatch.c) */
    size_t n = m->u.post.n;
    int requests = 0;
    /* the HTTP thread validated every message and classified it once: the kind travels with
     * the message */
    const signed char *kinds = m->u.post.kinds;
    for (size_t i = 0; i < n; i++) /* an invalid batch item gets an error answer: it counts */
        requests += kinds[i] == JR_REQUEST || kinds[i] == JR_INVALID;
    for (size_t i = 0; i < n; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        jr_kind_t k = (jr_kind_t)kinds[i];
        if (k == JR_NOTIFICATION)
            handle_notification(a, msg);
        else if (k == JR_RESPONSE)
            handle_response(a, msg);
    }
    if (requests == 0) {
        actor_reply(a->w, m->u.client.conn, 202, NULL, NULL);
        return;
    }
    /* every request of a batch counts: a batch is no way around the limit */
    int in_flight = actor_requests_in_flight(a);
    if (in_flight + requests > g_cfg.max_streams) {
        char msg[240];
        snprintf(msg, sizeof msg,
                 "Too Many Requests: this session has %d requests in flight and this message "
                 "carries %d; the limit is %lld (--max-streams); retry when one finishes",
                 in_flight, requests, (long long)g_cfg.max_streams);
        STAT_INC(limit_refusals_total);
        actor_reply_retry(a->w, m->u.client.conn, jsonrpc_request_id(body), 429, msg, "1");
        return;
    }
    stream_t *s = stream_begin(a, m->u.client.conn, requests, batch ? STREAM_BEGIN_BATCH : 0);
    /* the calls join the stream before it starts: its first frame names them */
    call_t *calls_small[16];
    call_t **calls = n <= 16 ? calls_small : xmalloc(n * sizeof *calls);
    jr_view_t v1 = {0};
    for (size_t i = 0; i < n; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        calls[i] = NULL;
        if (kinds[i] == JR_INVALID) {
            /* its answer echoes a request's id where that can be read, else null */
            const json_t *id = jsonrpc_batch_item_id(msg);
            json_t *null_id = json_null();
            calls[i] = actor_add_call(a, s, id ? id : null_id, SM_other);
            json_decref(null_id);
        } else if (kinds[i] == JR_REQUEST) {
            /* a method name holding U+0000 is "other": unknown, never the method it starts with */
            if (batch)
                jsonrpc_view(msg, &v1);
            else
                v1 = m->u.post.v;
            calls[i] = stream_add_call(a, s, v1.id, jsonrpc_method_slot(v1.method),
                                       m->u.client.recv_us);
        }
    }
    if (g_cfg.response_mode == RESPONSE_SSE)
        actor_stream_start_sse(a, s);
    for (size_t i = 0; i < n; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        if (kinds[i] == JR_INVALID) {
            /* JSON-RPC 2.0: an invalid item of a batch is answered with -32600 (its id, or
             * null where it cannot be read), and the rest of the batch is served (only a batch
             * can get here: the HTTP thread refuses an invalid single message). A request that
             * repeats an earlier one's id is such an item (wmsg_classify). */
            char text[300];
            snprintf(text, sizeof text, "Invalid Request: batch item %zu: %s", i,
                     jsonrpc_batch_item_why(msg));
            mcp_answer_error(a, calls[i], JSONRPC_INVALID_REQUEST, text, NULL);
        } else if (kinds[i] == JR_REQUEST) {
            jr_view_t v = v1; /* a single request's, from the loop above */
            if (batch)
                jsonrpc_view(msg, &v);
            mcp_dispatch_request(a, calls[i], &v);
        }
    }
    if (calls != calls_small)
        free(calls);
    stream_settle(a, s, true);
}

/* ---- start ---- */

/* mcp keeps nothing of a call but its job, which the actor layer cancels */
static void mcp_call_dropped(actor_t *a, const call_t *c)
{
}

static const actor_ops_t OPS = {
    .on_initialize = mcp_handle_initialize,
    .on_post = mcp_handle_post,
    .on_modern = mcp_handle_modern,
    .on_job_done = mcp_job_done,
    .on_tool_request = mcp_tool_request,
    .state_free = mcp_state_free,
    .meta_put = mcp_meta_put,
    .meta_load = mcp_meta_load,
    .log_enabled = mcp_log_enabled,
    .on_broadcast = mcp_on_broadcast,
    .end_listen = mcp_end_listen,
    .on_call_dropped = mcp_call_dropped,
};

const actor_ops_t *mcp_actor_ops(void)
{
    return &OPS;
}
