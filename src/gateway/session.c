/* Threads: worker threads (the gateway's sessions and their upstreams' callbacks). */
/* A gateway session: a session actor (ACTOR_SESSION, a->upstream = 1 + the --upstream index)
 * whose protocol is its upstream process's, not mcp/'s. One process per session, driven by the
 * session's worker's event_base, so its callbacks run on the thread that owns the actor.
 *
 * The ops table. The process has one actor_ops_t; gateway_actor_ops(inner) wraps mcp's: a
 * gateway session (a->upstream != 0, or an initialize that came on /mcp/NAME) is handled here,
 * everything else goes to `inner`. For a gateway session a->ps is a gw_sess_t (mcp never sees
 * it: every entry that reads ps is wrapped).
 *
 * Ids. A client request goes to the upstream with a gateway id (gs->next_id); the map (out)
 * gives back the call (its stream and the client's id), so two clients never collide and a
 * client's id is never trusted by the upstream. An upstream request goes to the client with an
 * id of the session's server->client counter (a->next_req_num, stored); the client's answer
 * goes back with the upstream's own id (in).
 *
 * The process. Started at initialize (the client's initialize is forwarded, its params kept
 * in the session's metadata, "gi"; an error for an answer, or an exit before one, and there is
 * no session); when it is gone (it exited, crashed, or the session hibernated and was woken),
 * the next request starts a new one, re-initialized with the stored initialize: its answer is
 * dropped, notifications/initialized follows (the client's own, once the process has it, is
 * not sent again), and what the client sent meanwhile waits in a queue. Its exit gives every
 * open call an error at once. The
 * session's end (DELETE, expiry, hibernation) stops it (state_free -> upstream_stop): the
 * gw_sess_t outlives the actor until the process has exited. The ops table and the state
 * entries are in ops.c; what the client POSTs (gw_post) is in session_client.c. */
#include "gateway/gateway.h"
#include "gateway/session_internal.h"

#include "actor/actor.h"
#include "core/config.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"
#include "gateway/upstream.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <event2/event.h>
#include <string.h>

gw_sess_t *gs_of(const actor_t *a)
{
    /* (a one-request actor on /mcp/NAME holds a pool job: pool_internal.h) */
    return a->upstream && a->kind == ACTOR_SESSION ? (gw_sess_t *)(void *)a->ps : NULL;
}

const char *gw_name(const gw_sess_t *gs)
{
    return gs->name;
}

/* ---- to the upstream ---- */

static int gs_write(gw_sess_t *gs, const json_t *msg)
{
    char err[200];
    gs->last_us = now_mono_us(); /* --upstream-idle */
    if (upstream_send(gs->u, msg, err, sizeof err) != 0) {
        log_warn("%s", err); /* it names the upstream and the session */
        return -1;
    }
    return 0;
}

/* Messages that wait for a (re)started process's answer to initialize, at most (and at most
 * UPSTREAM_MAX_QUEUED_DEFAULT bytes of them, as a process's stdin); and upstream
 * requests that wait for the client's answer, at most (past it the upstream gets an error). */
#define GW_MAX_QUEUED 1024
#define GW_MAX_IN 256

int gs_send(gw_sess_t *gs, json_t *msg)
{
    int rc = 0;
    if (!gs->u)
        rc = -1;
    else if (!gs->ready) {
        size_t n = json_dumpb(msg, NULL, 0, JSON_COMPACT) + 1;
        if (json_array_size(gs->queue) >= GW_MAX_QUEUED ||
            gs->queued_bytes + n > UPSTREAM_MAX_QUEUED_DEFAULT) {
            log_warn("%s: %zu messages (%zu bytes) wait for the process to answer initialize: "
                     "one more refused",
                     gs->tag, json_array_size(gs->queue), gs->queued_bytes);
            rc = -1;
        } else {
            json_array_append(gs->queue, msg);
            gs->queued_bytes += n;
        }
    } else
        rc = gs_write(gs, msg);
    json_decref(msg);
    return rc;
}

json_t *request_to_up(gw_sess_t *gs, const char *method, json_t *params, uint64_t *id)
{
    *id = gs->next_id++;
    json_t *r = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)*id, "method",
                          method);
    if (params)
        json_object_set(r, "params", params);
    return r;
}

static void on_message(upstream_t *u, json_t *msg, void *arg);
static void on_exit_cb(upstream_t *u, const upstream_exit_t *how, void *arg);

static const upstream_cbs_t CBS = {.on_message = on_message,
                                   .on_bad_line = gw_on_bad_line,
                                   .on_exit = on_exit_cb};

/* The process did not answer initialize in time: stopped; its exit errors what waits. */
static void on_init_timeout(evutil_socket_t fd, short what, void *arg)
{
    gw_sess_t *gs = arg;
    if (!gs->u || gs->ready)
        return;
    log_warn("%s: no answer to initialize within %lld s (--upstream-init-timeout): stopped",
             gs->tag, (long long)g_cfg.upstream_init_timeout_s);
    gs_stop(gs);
}

/* Starts the process for owner's session sid; false with the reason in err (*full: past
 * --upstream-max or owner's share of it). */
static bool gs_start(gw_sess_t *gs, principal_t *owner, const char *sid, bool *full, char *err,
                     size_t errlen)
{
    *full = !gw_slot_take(gs, owner, sid, err, errlen);
    if (*full)
        return false;
    upstream_opts_t o = {.tag = gs->tag};
    gs->u = upstream_start(worker_base(gs->w), gateway_argv(gs->index), NULL, &o, &CBS, gs, err,
                           errlen);
    gs->ready = false;
    if (!gs->u) {
        gw_slot_give(gs);
        return false;
    }
    if (!gs->init_timer)
        gs->init_timer = evtimer_new(worker_base(gs->w), on_init_timeout, gs);
    struct timeval tv = {(time_t)g_cfg.upstream_init_timeout_s, 0};
    if (gs->init_timer)
        evtimer_add(gs->init_timer, &tv);
    gw_idle_arm(gs);
    return true;
}

/* A session woken, or whose process ended: a new process, initialized with the stored
 * initialize. false when it cannot be started (err says why; *full: past --upstream-max). */
bool gs_ensure(gw_sess_t *gs, bool *full, char *err, size_t errlen)
{
    *full = false;
    if (gs->u)
        return true;
    if (gs->index < 0 || !gs->init) {
        snprintf(err, errlen, "this session's upstream is not configured");
        return false;
    }
    if (!gs_start(gs, gs->a ? gs->a->owner : NULL, gs->a ? gs->a->sid : "", full, err, errlen))
        return false;
    uint64_t id;
    json_t *r = request_to_up(gs, "initialize", gs->init, &id);
    gw_add_out(gs, id, 0, NULL, NULL)->init = true;
    gs->noted = true; /* gs_became_ready sends notifications/initialized: the client's is late */
    gs_write(gs, r);
    json_decref(r);
    return true;
}

/* ---- initialize ---- */

/* What a session keeps of its client's initialize (its params, compact), as mcp/ does. */
#define GW_MAX_INIT_BYTES 65536

void gw_initialize(worker_t *w, wmsg_t *m)
{
    json_t *params = m->u.post.v.params, *id = m->u.post.v.id;
    json_t *pv = json_object_get(params, "protocolVersion");
    const char *bad = NULL;
    if (!json_is_string(pv))
        bad = "initialize needs params.protocolVersion (a string)";
    else if (json_dumpb(params, NULL, 0, JSON_COMPACT) > GW_MAX_INIT_BYTES)
        /* kept in the session's metadata, which is rewritten at every change of it */
        bad = "initialize's params take more than 65536 bytes";
    if (bad) {
        actor_reply(w, m->u.client.conn, 400, jsonrpc_error(id, JSONRPC_INVALID_PARAMS, bad, NULL),
                    NULL);
        return;
    }
    int index = m->upstream - 1;
    gw_sess_t *gs = gs_new(w, index, g_cfg.upstream_names[index], m->sid);
    char err[300];
    bool full;
    if (!gs_start(gs, m->u.client.principal, m->sid, &full, err, sizeof err)) {
        char msg[400];
        snprintf(msg, sizeof msg, "cannot start the upstream %s: %s", gw_name(gs), err);
        log_warn("%s: %s", gs->tag, msg);
        if (full)
            actor_reply_retry(w, m->u.client.conn, id, 503, msg, "5");
        else
            actor_reply(w, m->u.client.conn, 502,
                        jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, msg, NULL), NULL);
        gs_free(gs);
        return;
    }
    actor_t *a = actor_create(w, m->sid);
    a->upstream = (uint8_t)m->upstream;
    a->ps = (struct proto_state *)(void *)gs;
    gs->a = a;
    gs->init = json_incref(params);
    a->owner = m->u.client.principal; /* its place of --max-sessions is the session's now */
    m->u.client.principal = NULL;
    m->u.post.holds_session = false;
    a->proto = proto_negotiate(jsonrpc_cstr(pv));
    str_copy(a->auth_name, sizeof a->auth_name, m->u.client.auth_name);
    int64_t expiry = a->created_ms + g_cfg.session_ttl_s * 1000;
    a->used = false;
    actor_alarm_set(a, actor_unused_expiry(a) < expiry ? actor_unused_expiry(a) : expiry);
    actor_persist_meta(a);
    STAT_INC(sessions_created_total);
    worker_stat_add(w, DS_SESSIONS_STORED, 1);
    STAT_INC(requests_total[SM_initialize]);
    log_info("session %.8s created on upstream %s", a->sid, gw_name(gs));

    /* The reply stays one JSON response until the upstream answers (no SSE, no window, and
     * nothing else goes on it: related_call), so that Mcp-Session-Id goes out only with a
     * result: an error makes no session (up_init_answer). --upstream-init-timeout bounds it. */
    stream_t *s = stream_begin(a, m->u.client.conn, 1, STREAM_BEGIN_SESSION_ID);
    stream_add_call(a, s, id, SM_initialize, m->u.client.recv_us);
    uint64_t up_id;
    json_t *r = request_to_up(gs, "initialize", params, &up_id);
    gw_add_out(gs, up_id, s->num, id, params)->init = true;
    gs_write(gs, r); /* straight: the queue waits for this answer */
    json_decref(r);
    stream_settle(a, s, false);
}

/* ---- from the upstream ---- */

/* The call an upstream message relates to: a progress notification's by its progressToken
 * (the client's, passed through); anything else the newest open call (the stdio transport
 * does not say which request a message relates to). NULL: none open. */
static call_t *related_call(actor_t *a, gw_sess_t *gs, const json_t *msg)
{
    const json_t *token = json_object_get(json_object_get(msg, "params"), "progressToken");
    if (token && jsonrpc_str_is(json_object_get(msg, "method"), "notifications/progress"))
        for (gw_out_t *o = gs->out; o; o = o->next)
            if (o->progress && o->client_id && !o->init && json_equal(o->progress, token)) {
                call_t *c = gw_find_call(a, o->stream, o->client_id);
                if (c)
                    return c;
            }
    call_t *best = NULL; /* not initialize: its reply is held for the result (gw_initialize) */
    for (call_t *c = a->calls; c; c = c->next)
        if (c->method != SM_initialize && (!best || c->started_us >= best->started_us))
            best = c;
    return best;
}

/* The stream an upstream message goes on, as a tool's (actor_send_tool_request): the related
 * call's POST stream (not in JSON-only mode), else the standalone GET stream. A notification
 * may wait there for a GET (stored); a request needs a GET attached now: NULL, none can carry
 * it. A call's progress or log message that JSON-only mode sends there marks the call's stream,
 * whose answer then waits for it to be written (stream_t.diverted). */
static stream_t *route_for(actor_t *a, gw_sess_t *gs, const json_t *msg, bool request)
{
    call_t *c = related_call(a, gs, msg);
    if (c && g_cfg.response_mode != RESPONSE_JSON)
        return c->stream;
    const json_t *method = json_object_get(msg, "method");
    if (c && !request &&
        (jsonrpc_str_is(method, "notifications/progress") ||
         jsonrpc_str_is(method, "notifications/message")))
        c->stream->diverted = true; /* a call's own: not a list change or the like */
    stream_t *g = actor_get_stream(a, !request, NULL); /* NULL too: its record is unreadable */
    return request && !(g && g->conn.gen) ? NULL : g;
}

/* The process answered initialize: what waited goes now. `restarted`: the stored initialize
 * was re-sent, so the gateway sends notifications/initialized in the client's place. */
static void gs_became_ready(gw_sess_t *gs, bool restarted)
{
    if (restarted) {
        json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method",
                                 "notifications/initialized");
        gs_write(gs, note);
        json_decref(note);
        if (gs->level) { /* the client's log level, which the new process does not know */
            uint64_t id;
            json_t *r = request_to_up(gs, "logging/setLevel", gs->level, &id);
            gw_add_out(gs, id, 0, NULL, NULL); /* its answer is dropped, as initialize's */
            gs_write(gs, r);
            json_decref(r);
        }
    }
    gs->ready = true;
    if (gs->init_timer)
        evtimer_del(gs->init_timer);
    size_t i;
    json_t *q;
    json_array_foreach(gs->queue, i, q)
        gs_write(gs, q);
    json_array_clear(gs->queue);
    gs->queued_bytes = 0;
}

/* The process answered an initialize. A result: it is ready (the call, if the client still
 * waits, gets it). An error, or no result: a process that cannot serve. The client's own
 * initialize then makes no session: its answer goes without Mcp-Session-Id and on_message
 * deletes the session (its process stops, its --upstream-max place comes back at the exit).
 * A restarted process's refusal stops it: its exit errors what waits. */
static void up_init_answer(actor_t *a, gw_sess_t *gs, const gw_out_t *o, call_t *c,
                           const json_t *msg)
{
    const json_t *result = json_object_get(msg, "result");
    if (json_is_object(result)) {
        const char *v = json_string_value(json_object_get(result, "protocolVersion"));
        if (o->client_id && v && proto_find(v))
            a->proto = proto_find(v);
        gs_became_ready(gs, !o->client_id);
        return;
    }
    log_warn("%s: the upstream answered initialize with an error: %s", gs->tag,
             o->client_id ? "no session" : "stopped");
    if (!o->client_id) {
        gs_stop(gs);
        return;
    }
    gs->init_failed = true;
    if (c)
        c->stream->session_header = false;
}

static void up_response(actor_t *a, gw_sess_t *gs, json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    gw_out_t **op = &gs->out;
    while (*op && !(json_is_integer(id) && (json_int_t)(*op)->up_id == json_integer_value(id)))
        op = &(*op)->next;
    gw_out_t *o = *op;
    if (!o) {
        gw_unknown_response(gs, msg);
        return;
    }
    if (o->init && gs->stopping) {
        /* past --upstream-init-timeout (or stopped otherwise): too late. Taken as ready, the
         * process would get what waits for the next one on its closed stdin. The entry stays:
         * the exit errors it as if no answer had come. */
        log_info("%s: its answer to initialize came after it was stopped: dropped", gs->tag);
        return;
    }
    *op = o->next;
    call_t *c = o->client_id ? gw_find_call(a, o->stream, o->client_id) : NULL;
    if (o->init)
        up_init_answer(a, gs, o, c, msg);
    if (c) {
        json_t *r = json_deep_copy(msg);
        json_object_set(r, "id", o->client_id);
        actor_complete_call(a, c, r);
    }
    out_free(o);
}

static void up_request(actor_t *a, gw_sess_t *gs, json_t *msg)
{
    stream_t *route = route_for(a, gs, msg, true);
    int waiting = 0;
    for (gw_in_t *i = gs->in; i; i = i->next)
        waiting++;
    if (!route || waiting >= GW_MAX_IN) { /* never silence: the upstream hears why */
        char why[200];
        if (route)
            snprintf(why, sizeof why, "%d requests already wait for the client's answer", waiting);
        else
            snprintf(why, sizeof why,
                     "no stream can carry %.80s to the client: no request of it is open and its "
                     "GET stream is not",
                     json_string_value(json_object_get(msg, "method")));
        log_info("%s: %s", gs->tag, why);
        json_t *err = jsonrpc_error(json_object_get(msg, "id"), JSONRPC_INTERNAL_ERROR, why, NULL);
        gs_write(gs, err);
        json_decref(err);
        return;
    }
    gw_in_t *i = xcalloc(1, sizeof *i);
    i->our_id = a->next_req_num++;
    i->up_id = json_incref(json_object_get(msg, "id"));
    i->sent_us = now_mono_us();
    i->next = gs->in;
    gs->in = i;
    actor_persist_meta(a); /* next_req_num: ids never reused in a session */
    json_t *copy = json_deep_copy(msg);
    json_object_set_new(copy, "id", json_integer((json_int_t)i->our_id));
    actor_stream_send(a, route, copy);
    gw_call_timer_arm(gs); /* the client's answer is awaited as a call is */
}

static void up_one(actor_t *a, gw_sess_t *gs, json_t *msg)
{
    if (!json_is_object(msg))
        return;
    bool has_method = json_is_string(json_object_get(msg, "method"));
    bool has_id = json_object_get(msg, "id") != NULL;
    stream_t *route = NULL;
    if (has_method && !has_id)
        gw_progress_seen(gs, msg);
    if (!has_method && has_id)
        up_response(a, gs, msg);
    else if (has_method && has_id)
        up_request(a, gs, msg);
    else if (has_method && up_cancel(gs, msg))
        ; /* an upstream request the client never got an answer to: nothing to tell it */
    else if (has_method && (route = route_for(a, gs, msg, false)))
        actor_stream_send(a, route, json_incref(msg));
    else if (has_method) /* not stored on a new stream over the unreadable one */
        log_info("%s: a notification was dropped: its stream's record cannot be read", gs->tag);
    else
        log_warn("%s: a message that is not JSON-RPC was dropped", gs->tag);
}

static void on_message(upstream_t *u, json_t *msg, void *arg)
{
    gw_sess_t *gs = arg;
    actor_t *a = gs->a;
    if (gw_is_answer(msg))
        gs->last_us = now_mono_us();
    if (!a) {
        json_decref(msg);
        return;
    }
    worker_t *w = gs->w, *prev = worker_enter(w);
    bool was_idle = actor_is_idle(a);
    if (json_is_array(msg)) {
        size_t i;
        json_t *one;
        json_array_foreach(msg, i, one)
            if (!gs->init_failed)
                up_one(a, gs, one);
    } else {
        up_one(a, gs, msg);
    }
    json_decref(msg);
    if (gs->init_failed)
        actor_delete(a); /* its answer is queued for the turn's end; gs lives till the exit */
    else if (!was_idle || !actor_is_idle(a)) /* an idle session stays as idle as it was */
        worker_note_activity(w, a);
    worker_turn_end(w);
    worker_leave(prev);
}

/* What came while the process was being stopped (later: its calls; waiting: the messages)
 * goes to a new process, started now; if none can be started, those calls get the reason. */
static void restart_for(gw_sess_t *gs, actor_t *a, gw_out_t *later, json_t *waiting)
{
    char err[300];
    bool full;
    if (gs_ensure(gs, &full, err, sizeof err)) {
        for (gw_out_t *o = later, *next; o; o = next) {
            next = o->next;
            o->later = false;
            o->next = gs->out;
            gs->out = o;
        }
        size_t i;
        json_t *m;
        json_array_foreach(waiting, i, m)
            gs_send(gs, json_incref(m)); /* queued until the new process answers initialize */
        worker_note_activity(gs->w, a);
        return;
    }
    log_warn("%s: cannot start it again: %s", gs->tag, err);
    for (gw_out_t *o = later, *next; o; o = next) {
        next = o->next;
        call_t *c = o->client_id ? gw_find_call(a, o->stream, o->client_id) : NULL;
        if (c)
            actor_complete_call(a, c, jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR, err, NULL));
        out_free(o);
    }
    worker_note_activity(gs->w, a);
}

static void on_exit_cb(upstream_t *u, const upstream_exit_t *how, void *arg)
{
    gw_sess_t *gs = arg;
    actor_t *a = gs->a;
    gs->u = NULL;
    gs->ready = false;
    if (gs->init_timer)
        evtimer_del(gs->init_timer);
    gw_timers_del(gs);
    gw_slot_give(gs); /* its --upstream-max place */
    if (!a) {
        detach(gs, false);
        gs_free(gs);
        return;
    }
    char why[200];
    if (how->signo)
        snprintf(why, sizeof why, "the upstream %s %s (signal %d) while this request was in flight",
                 gw_name(gs), how->crashed ? "crashed" : "was stopped", how->signo);
    else
        snprintf(why, sizeof why,
                 "the upstream %s exited (status %d) while this request was in "
                 "flight",
                 gw_name(gs), how->code);
    if (!gs->idle_stop)
        log_warn("%s: %s", gs->tag, how->crashed ? "crashed" : "exited");
    gs->idle_stop = false;
    worker_t *w = gs->w, *prev = worker_enter(w);
    bool no_session = false; /* it never answered the client's initialize: no session */
    gw_out_t *later = NULL;  /* sent while it was being stopped: for the next process */
    while (gs->out) {
        gw_out_t *o = gs->out;
        gs->out = o->next;
        if (o->later) {
            o->next = later;
            later = o;
            continue;
        }
        call_t *c = o->client_id ? gw_find_call(a, o->stream, o->client_id) : NULL;
        no_session |= o->init && o->client_id;
        if (c && o->init)
            c->stream->session_header = false;
        if (c)
            actor_complete_call(a, c, jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR, why, NULL));
        out_free(o);
    }
    size_t n = json_array_size(gs->queue), from = gs->stopping ? gs->keep_from : n;
    json_t *waiting = json_array();
    for (size_t i = from; i < n; i++)
        json_array_append(waiting, json_array_get(gs->queue, i));
    gs_clear_maps(gs);
    gs->stopping = false;
    if (no_session)
        actor_delete(a); /* frees gs too (no process left) */
    else if (later || json_array_size(waiting))
        restart_for(gs, a, later, waiting);
    else
        worker_note_activity(w, a);
    json_decref(waiting);
    worker_turn_end(w);
    worker_leave(prev);
}
