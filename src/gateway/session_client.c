/* Threads: worker threads (a gateway session's POSTs, in its worker's turn). */
/* A gateway session: what its client POSTs (session.c has the session's start and its
 * process). Notifications go to the upstream (a cancellation with the upstream's id),
 * responses go back to the upstream request they answer (ops.c: gw_client_response), and
 * requests become calls on one stream, forwarded with gateway ids; a request the gateway
 * answers itself (an invalid batch item, a method holding U+0000) starts no process. */
#include "gateway/session_internal.h"

#include "actor/actor.h"
#include "core/config.h"
#include "core/stats.h"
#include "wire/jsonrpc.h"

#include <stdio.h>

/* A client's notification: forwarded (a cancellation with the upstream's id). False when it
 * could not be (more than a restarting process may have waiting: gs_send), so that the POST is
 * not answered 202 for it. */
static bool client_notification(actor_t *a, gw_sess_t *gs, json_t *msg)
{
    const json_t *method = json_object_get(msg, "method");
    STAT_INC(requests_total[SM_notification]);
    if (jsonrpc_str_is(method, "notifications/initialized")) {
        a->initialized = true;
        if (gs->noted)
            return true; /* this process has it already (the gateway sent it after a restart) */
        if (gs_send(gs, json_incref(msg)) != 0)
            return false; /* not noted: the client's retry is sent */
        gs->noted = true;
        return true;
    }
    if (jsonrpc_str_is(method, "notifications/cancelled")) {
        json_t *params = json_object_get(msg, "params");
        json_t *rid = json_object_get(params, "requestId");
        for (gw_out_t **op = &gs->out; rid && *op; op = &(*op)->next) {
            gw_out_t *o = *op;
            if (!o->client_id || !json_equal(o->client_id, rid))
                continue;
            call_t *c = gw_find_call(a, o->stream, rid);
            if (c && c->method == SM_initialize)
                return true; /* initialize is never cancelled */
            json_t *copy = json_deep_copy(msg);
            json_object_set_new(json_object_get(copy, "params"), "requestId",
                                json_integer((json_int_t)o->up_id));
            /* the call ends here whether or not the process hears of it (its answer would
             * be dropped): the client's cancel is done */
            gs_send(gs, copy);
            *op = o->next; /* before the drop: its hook (gw_call_dropped) finds nothing more */
            out_free(o);
            if (c)
                actor_drop_call(a, c);
            return true;
        }
        return true; /* nothing of ours: dropped */
    }
    return gs_send(gs, json_incref(msg)) == 0;
}

/* The requests of a POST body: calls on one stream, forwarded with gateway ids. */
static void client_requests(actor_t *a, gw_sess_t *gs, wmsg_t *m, int requests)
{
    json_t *body = m->u.post.body;
    bool batch = json_is_array(body);
    stream_t *s = stream_begin(a, m->u.client.conn, requests, batch ? STREAM_BEGIN_BATCH : 0);
    if (g_cfg.response_mode == RESPONSE_SSE)
        actor_stream_start_sse(a, s);
    for (size_t i = 0; i < m->u.post.n; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        if (m->u.post.kinds[i] == JR_INVALID) { /* a repeated id included (wmsg_classify) */
            const json_t *id = jsonrpc_batch_item_id(msg); /* echoed where readable, as mcp's */
            json_t *null_id = json_null();
            call_t *c = actor_add_call(a, s, id ? id : null_id, SM_other);
            json_decref(null_id);
            char text[300];
            snprintf(text, sizeof text, "Invalid Request: batch item %zu: %s", i,
                     jsonrpc_batch_item_why(msg));
            actor_complete_call(a, c, jsonrpc_error(c->id, JSONRPC_INVALID_REQUEST, text, NULL));
        } else if (m->u.post.kinds[i] == JR_REQUEST) {
            jr_view_t v;
            jsonrpc_view(msg, &v);
            call_t *c = stream_add_call(a, s, v.id, jsonrpc_method_slot(v.method),
                                        m->u.client.recv_us);
            STAT_INC(requests_total[c->method]);
            const char *method = jsonrpc_cstr(v.method); /* NULL: it holds U+0000 */
            if (!method) {                               /* names no method, as on /mcp */
                actor_complete_call(a, c, jsonrpc_method_not_found(c->id, v.method));
                continue;
            }
            uint64_t up_id;
            json_t *r = request_to_up(gs, method, v.params, &up_id);
            if (gs_send(gs, r) != 0) {
                char why[200];
                snprintf(why, sizeof why,
                         "the upstream %s cannot take this request (it is gone "
                         "or does not read its input)",
                         gw_name(gs));
                actor_complete_call(a, c, jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR, why, NULL));
                continue;
            }
            gw_add_out(gs, up_id, s->num, v.id, v.params);
            if (c->method == SM_logging_setLevel) { /* sent again to a restarted process */
                json_decref(gs->level);
                gs->level = json_deep_copy(v.params);
                actor_persist_meta(a);
            }
        }
    }
    stream_settle(a, s, true);
}

/* True when the request msg goes to the upstream; false when it is answered here: a method
 * that holds U+0000 is no name an upstream can be sent (client_requests answers -32601). */
static bool forwards(const json_t *msg)
{
    return jsonrpc_cstr(json_object_get(msg, "method")) != NULL;
}

void gw_post(actor_t *a, wmsg_t *m)
{
    gw_sess_t *gs = gs_of(a);
    if (m->upstream != a->upstream) { /* another path's session: not one of this path */
        actor_reply_error(a->w, m->u.client.conn, jsonrpc_request_id(m->u.post.body), 404,
                          MCP_ERR_SESSION_NOT_FOUND, "Session not found");
        return;
    }
    json_t *body = m->u.post.body;
    bool batch = json_is_array(body);
    int requests = 0, forwarded = 0;
    for (size_t i = 0; i < m->u.post.n; i++) {
        jr_kind_t k = (jr_kind_t)m->u.post.kinds[i];
        requests += k == JR_REQUEST || k == JR_INVALID;
        forwarded += k == JR_REQUEST && forwards(batch ? json_array_get(body, i) : body);
    }
    if (requests > 0 && actor_requests_in_flight(a) + requests > g_cfg.max_streams) {
        STAT_INC(limit_refusals_total);
        actor_reply_retry(a->w, m->u.client.conn, jsonrpc_request_id(body), 429,
                          "Too Many Requests: this session has too many requests in flight "
                          "(--max-streams); retry when one finishes",
                          "1");
        return;
    }
    /* only a request the upstream is sent starts a process: a notification or a response for
     * a process that has gone has nobody to reach (its maps went with it) and is dropped, and
     * a request answered here (an invalid batch item, a method holding U+0000) needs none */
    char err[300];
    bool full;
    if (forwarded > 0 && !gs_ensure(gs, &full, err, sizeof err)) {
        char msg[400];
        snprintf(msg, sizeof msg, "cannot start the upstream %s: %s", gw_name(gs), err);
        if (full)
            actor_reply_retry(a->w, m->u.client.conn, jsonrpc_request_id(body), 503, msg, "5");
        else
            actor_reply_error(a->w, m->u.client.conn, jsonrpc_request_id(body), 502,
                              JSONRPC_INTERNAL_ERROR, msg);
        return;
    }
    size_t refused = 0;
    for (size_t i = 0; i < m->u.post.n && gs->u; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        jr_kind_t k = (jr_kind_t)m->u.post.kinds[i];
        if (k == JR_NOTIFICATION)
            refused += !client_notification(a, gs, msg);
        else if (k == JR_RESPONSE)
            gw_client_response(a, gs, msg);
    }
    if (requests == 0) {
        if (refused) /* not 202 for what the process will not get (gs_send logged it) */
            actor_reply_retry(a->w, m->u.client.conn, NULL, 503,
                              "Service Unavailable: the upstream's process holds all it may have "
                              "waiting (it is starting, or does not read its input); the "
                              "notification was not delivered: retry shortly",
                              "1");
        else
            actor_reply(a->w, m->u.client.conn, 202, NULL, NULL);
        return;
    }
    client_requests(a, gs, m, requests);
}
