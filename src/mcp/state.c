/* Threads: worker threads (each actor's state on its worker). */
/* The protocol layer's state of an actor (state.h) and what the actor layer asks of it through
 * actor_ops_t: freeing it, its part of the stored metadata, the log threshold, and the delivery
 * of broadcasts (subscriptions/listen filters, resources/subscribe); and the session era's
 * resources/subscribe and unsubscribe themselves. Worker thread only. */
#include "mcp/internal.h"
#include "mcp/registry.h"
#include "mcp/state.h"

#include "core/buf.h"
#include "core/jsondump.h"
#include "core/stats.h"
#include "core/util.h"
#include "wire/jsonrpc.h"

#include <stdlib.h>
#include <string.h>

struct proto_state *mcp_state(actor_t *a)
{
    if (!a->ps) {
        a->ps = xcalloc(1, sizeof *a->ps);
        a->ps->log_level = a->kind == ACTOR_REQUEST ? 8 : -1;
    }
    return a->ps;
}

void mcp_state_free(actor_t *a)
{
    struct proto_state *ps = a->ps;
    if (!ps)
        return;
    json_decref(ps->subscriptions);
    switch (a->kind) {
    case ACTOR_REQUEST:
        json_decref(ps->modern.param_hdrs);
        json_decref(ps->modern.bound);
        json_decref(ps->modern.mrtr);
        json_decref(ps->modern.listen_id);
        json_decref(ps->modern.listen_filter);
        break;
    case ACTOR_RECORD:
        json_decref(ps->record.rec);
        break;
    case ACTOR_TASK:
        json_decref(ps->task.status);
        json_decref(ps->task.result);
        break;
    default:
        break;
    }
    free(ps);
    a->ps = NULL;
}

/* ---- log levels ---- */

static const char *const LOG_LEVELS[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};

int log_level_index(const char *level)
{
    for (int i = 0; i < 8; i++)
        if (level && strcmp(level, LOG_LEVELS[i]) == 0)
            return i;
    return -1;
}

bool mcp_log_enabled(const actor_t *a, const char *level)
{
    int threshold = mcp_log_level(a);
    if (threshold < 0)
        return true;
    int l = log_level_index(level);
    return l < 0 || l >= threshold;
}

/* ---- the stored metadata ---- */

void mcp_meta_put(const actor_t *a, jobj_t *m, int at)
{
    switch (at) {
    case ACTOR_META_HEAD:
        jobj_json(m, "ci", a->client_info ? a->client_info : json_null());
        jobj_json(m, "cc", a->client_caps ? a->client_caps : json_null());
        jobj_int(m, "ll", mcp_log_level(a));
        break;
    case ACTOR_META_MIDDLE: {
        json_t *sub = mcp_subscriptions(a);
        if (sub && json_object_size(sub))
            jobj_json(m, "sub", sub);
        break;
    }
    case ACTOR_META_TAIL:
        if (a->kind == ACTOR_RECORD)
            jobj_json(m, "rec", mcp_record_rec(a) ? mcp_record_rec(a) : json_null());
        else if (a->kind == ACTOR_TASK)
            jobj_json(m, "task", mcp_task_status(a) ? mcp_task_status(a) : json_null());
        break;
    default:
        break;
    }
}

void mcp_meta_load(actor_t *a, const json_t *m)
{
    if (a->kind == ACTOR_RECORD || a->kind == ACTOR_TASK) {
        json_t *st = json_object_get(m, a->kind == ACTOR_RECORD ? "rec" : "task");
        st = json_is_object(st) ? json_incref(st) : json_object();
        if (a->kind == ACTOR_RECORD)
            mcp_state_set(&mcp_state(a)->record.rec, st);
        else
            mcp_state_set(&mcp_state(a)->task.status, st);
    }
    json_t *ci = json_object_get(m, "ci"), *cc = json_object_get(m, "cc");
    a->client_info = json_is_object(ci) ? worker_share_json(a->w, ci) : NULL;
    a->client_caps = json_is_object(cc) ? worker_share_json(a->w, cc) : NULL;
    /* a session that never set a level (-1) and has no subscriptions keeps no state */
    int ll = (int)json_integer_value(json_object_get(m, "ll"));
    if (ll != mcp_log_level(a))
        mcp_state(a)->log_level = ll;
    json_t *sub = json_object_get(m, "sub");
    if (json_is_object(sub))
        mcp_state_set(&mcp_state(a)->subscriptions, json_incref(sub));
}

/* ---- broadcasts and listen streams ---- */

static call_t *listen_call(actor_t *a)
{
    for (call_t *c = a->calls; c; c = c->next)
        if (c->method == SM_subscriptions_listen)
            return c;
    return NULL;
}

static bool filter_wants(const json_t *f, int what, const char *uri)
{
    switch (what) {
    case BC_TOOLS_CHANGED:
        return json_is_true(json_object_get(f, "toolsListChanged"));
    case BC_PROMPTS_CHANGED:
        return json_is_true(json_object_get(f, "promptsListChanged"));
    case BC_RESOURCES_CHANGED:
        return json_is_true(json_object_get(f, "resourcesListChanged"));
    case BC_RESOURCE_UPDATED: {
        size_t i;
        json_t *u;
        json_array_foreach(json_object_get(f, "resourceSubscriptions"), i, u)
            if (uri && jsonrpc_str_is(u, uri))
                return true;
        return false;
    }
    default:
        return false;
    }
}

/* The listen filter of a modern request's actor serving subscriptions/listen, else NULL. */
static const struct proto_state *listening(const actor_t *a)
{
    return a->ps && a->kind == ACTOR_REQUEST && a->ps->modern.listen_filter ? a->ps : NULL;
}

void mcp_on_broadcast(actor_t *a, wmsg_t *m)
{
    const json_t *params = json_object_get(m->u.bcast.note, "params");
    const char *uri = json_string_value(json_object_get(params, "uri"));
    const struct proto_state *ps = listening(a);
    if (ps) {
        call_t *c = listen_call(a);
        if (!c || !filter_wants(ps->modern.listen_filter, m->u.bcast.what, uri))
            return;
        json_t *note = json_deep_copy(m->u.bcast.note);
        json_t *p = json_object_get(note, "params");
        if (!json_is_object(p)) {
            p = json_object();
            json_object_set_new(note, "params", p);
        }
        json_t *meta = json_object_get(p, "_meta");
        if (!json_is_object(meta)) {
            meta = json_object();
            json_object_set_new(p, "_meta", meta);
        }
        json_object_set(meta, "io.modelcontextprotocol/subscriptionId", ps->modern.listen_id);
        actor_stream_send(a, c->stream, note);
        return;
    }
    if (a->kind == ACTOR_SESSION && m->u.bcast.what == BC_RESOURCE_UPDATED && uri &&
        json_object_get(mcp_subscriptions(a), uri))
        /* dropped for a session whose standalone stream's record cannot be read (a new one
         * would reuse its event ids): a notification, and the others' go on */
        (void)actor_send_session(a, json_deep_copy(m->u.bcast.note));
}

void mcp_end_listen(actor_t *a)
{
    const struct proto_state *ps = listening(a);
    call_t *c = ps ? listen_call(a) : NULL;
    if (!c)
        return;
    /* subscriptions/listen's closing result: the stream ends gracefully */
    json_t *r = json_pack("{s:s,s:{s:O}}", "resultType", "complete", "_meta",
                          "io.modelcontextprotocol/subscriptionId", ps->modern.listen_id);
    actor_complete_call(a, c, jsonrpc_result(c->id, r));
}

/* ---- resources/subscribe and unsubscribe (session era) ---- */

/* A session's subscriptions go into its metadata, which every turn that changes the session
 * rewrites whole: a template marked subscribable matches URIs without end, so the text they are
 * stored as is bounded (escapes included: a control character takes six bytes there). */
#define SUBSCRIPTIONS_MAX_BYTES 65536

/* The length of v's compact JSON text, as the metadata stores it (0 for NULL). */
static size_t stored_len(const json_t *v)
{
    if (!v)
        return 0;
    buf_t b = {0};
    size_t n = json_dump_into(&b, v) ? b.len : SUBSCRIPTIONS_MAX_BYTES + 1;
    buf_free(&b);
    return n;
}

void mcp_subscribe(actor_t *a, call_t *c, json_t *params, bool on)
{
    json_t *uri = json_object_get(params, "uri");
    if (!json_is_string(uri)) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, "params.uri must be a string", NULL);
        return;
    }
    json_t *vars = NULL;
    const char *u = jsonrpc_cstr(uri); /* NULL: it holds U+0000, and names nothing */
    const resource_t *r = u ? registry_find_resource(mcp_reg(), u, &vars) : NULL;
    json_decref(vars);
    if (!r) {
        mcp_answer_error(a, c, MCP_ERR_RESOURCE_NOT_FOUND, "Resource not found",
                         json_pack("{s:O}", "uri", uri));
        return;
    }
    if (on && !r->subscribable) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS,
                         "this resource does not support subscriptions",
                         json_pack("{s:O}", "uri", uri));
        return;
    }
    struct proto_state *ps = mcp_state(a);
    if (on && !json_object_get(ps->subscriptions, json_string_value(uri)) &&
        /* the object's text grows by the key's text, a colon, "true" and a comma */
        stored_len(ps->subscriptions) + stored_len(uri) + 6 > SUBSCRIPTIONS_MAX_BYTES) {
        STAT_INC(limit_refusals_total);
        mcp_answer_error(a, c, MCP_ERR_OVERLOADED,
                         "this session's resource subscriptions hold their most (64 KiB stored): "
                         "unsubscribe from one first",
                         json_pack("{s:O}", "uri", uri));
        return;
    }
    if (!ps->subscriptions)
        ps->subscriptions = json_object();
    if (on)
        json_object_set_new(ps->subscriptions, json_string_value(uri), json_true());
    else
        json_object_del(ps->subscriptions, json_string_value(uri));
    actor_persist_meta(a);
    mcp_answer(a, c, json_object());
}
