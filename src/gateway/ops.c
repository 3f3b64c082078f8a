/* Threads: worker threads (the ops table's entries); main thread (gateway_actor_ops, once;
 * gateway_free_detached at shutdown). */
/* The gateway's actor ops: one table for the process, wrapped around mcp's (session.c says
 * why): a gateway session's entries here, everything else to `inner`. And the state entries
 * of a gateway session: what it stores, how it is read back, how it is freed. */
#include "gateway/gateway.h"
#include "gateway/pool_internal.h"
#include "gateway/session_internal.h"

#include "core/log.h"
#include "core/principal.h"
#include "core/stats.h"
#include "core/util.h"
#include "wire/jsonrpc.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const actor_ops_t *g_inner;
static actor_ops_t g_ops;

/* Sessions freed while their process ends: each goes at its process's exit, and those left
 * when upstream_kill_all ran (no callbacks) at gateway_free. Several workers: a mutex. */
static pthread_mutex_t g_detached_mu = PTHREAD_MUTEX_INITIALIZER;
static gw_sess_t *g_detached;

void detach(gw_sess_t *gs, bool add)
{
    pthread_mutex_lock(&g_detached_mu);
    if (add) {
        gs->dnext = g_detached;
        if (g_detached)
            g_detached->dprev = gs;
        g_detached = gs;
    } else {
        if (gs->dprev)
            gs->dprev->dnext = gs->dnext;
        else
            g_detached = gs->dnext;
        if (gs->dnext)
            gs->dnext->dprev = gs->dprev;
    }
    pthread_mutex_unlock(&g_detached_mu);
}

void gateway_free_detached(void)
{
    gateway_pool_free();
    pthread_mutex_lock(&g_detached_mu);
    while (g_detached) {
        gw_sess_t *gs = g_detached;
        g_detached = gs->dnext;
        gs_free(gs);
    }
    pthread_mutex_unlock(&g_detached_mu);
}

/* ---- the actor's state ---- */

static void gw_state_free(actor_t *a)
{
    gw_sess_t *gs = gs_of(a);
    a->ps = NULL;
    if (!gs)
        return;
    gs->a = NULL;
    if (gs->u) {
        detach(gs, true);
        gs_stop(gs); /* gs goes at its exit */
    } else
        gs_free(gs);
}

static void gw_meta_put(const actor_t *a, jobj_t *meta, int at)
{
    gw_sess_t *gs = gs_of(a);
    if (!a->upstream) {
        g_inner->meta_put(a, meta, at);
        return;
    }
    if (at != ACTOR_META_HEAD || !gs)
        return;
    jobj_str(meta, "gw", gw_name(gs));
    jobj_json(meta, "gi", gs->init);
    jobj_json(meta, "gl", gs->level);
}

static void gw_meta_load(actor_t *a, const json_t *meta)
{
    const char *name = json_string_value(json_object_get(meta, "gw"));
    if (!name) {
        g_inner->meta_load(a, meta);
        return;
    }
    int i = config_upstream_find(&g_cfg, name, strlen(name));
    if (i < 0) /* no longer served: the session stays, its requests get an error */
        log_warn("session %.8s: its upstream %s is no longer configured", a->sid, name);
    gw_sess_t *gs = gs_new(a->w, i, name, a->sid);
    gs->a = a;
    gs->init = json_deep_copy(json_object_get(meta, "gi"));
    gs->level = json_deep_copy(json_object_get(meta, "gl"));
    /* UINT8_MAX: a gateway session whose path is gone (no request matches it) */
    a->upstream = (uint8_t)(i < 0 ? UINT8_MAX : i + 1);
    a->ps = (struct proto_state *)(void *)gs;
}

/* ---- the table ---- */

static void gw_on_initialize(worker_t *w, wmsg_t *m)
{
    if (m->upstream)
        gw_initialize(w, m);
    else
        g_inner->on_initialize(w, m);
}

static void gw_on_post(actor_t *a, wmsg_t *m)
{
    if (a->upstream)
        gw_post(a, m);
    else if (m->upstream) /* a built-in session's id on /mcp/NAME */
        actor_reply_error(a->w, m->u.client.conn, jsonrpc_request_id(m->u.post.body), 404,
                          MCP_ERR_SESSION_NOT_FOUND, "Session not found");
    else
        g_inner->on_post(a, m);
}

static void gw_on_modern(worker_t *w, wmsg_t *m)
{
    if (m->upstream)
        gw_pool_modern(w, m);
    else
        g_inner->on_modern(w, m);
}

static bool gw_log_enabled(const actor_t *a, const char *level)
{
    return a->upstream ? false : g_inner->log_enabled(a, level);
}

static void gw_on_broadcast(actor_t *a, wmsg_t *m)
{
    if (!a->upstream)
        g_inner->on_broadcast(a, m);
}

static void gw_end_listen(actor_t *a)
{
    if (!a->upstream)
        g_inner->end_listen(a);
    else if (a->kind == ACTOR_REQUEST)
        gw_pool_end(a);
}

/* A call dropped unanswered by the actor layer: with --no-event-store, a POST stream whose
 * connection closed (resume.c: its answer could never reach the client). The upstream would
 * work on and the map would keep its entry: unbounded work for nothing. So it is told with its
 * own id, as a client's cancellation is, and the entry goes. initialize is never cancelled.
 * The gateway's own drop (a client's notifications/cancelled) takes its entry off first: this
 * finds nothing then. */
static void gw_on_call_dropped(actor_t *a, const call_t *c)
{
    gw_sess_t *gs = gs_of(a);
    if (!a->upstream) {
        g_inner->on_call_dropped(a, c);
        return;
    }
    if (a->kind == ACTOR_REQUEST) {
        gw_pool_call_dropped(a, c);
        return;
    }
    if (!gs || c->method == SM_initialize)
        return;
    for (gw_out_t **op = &gs->out; *op; op = &(*op)->next) {
        gw_out_t *o = *op;
        if (!o->client_id || o->stream != c->stream->num || !json_equal(o->client_id, c->id))
            continue;
        *op = o->next;
        json_t *note = json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
                                 "notifications/cancelled", "params", "requestId",
                                 (json_int_t)o->up_id, "reason",
                                 "the client's response stream closed and cannot be resumed");
        gs_send(gs, note); /* no process (it exited): nothing to tell */
        out_free(o);
        return;
    }
}

static void gw_any_state_free(actor_t *a)
{
    if (a->upstream && a->kind == ACTOR_REQUEST)
        gw_pool_actor_gone(a);
    else if (a->upstream)
        gw_state_free(a);
    else
        g_inner->state_free(a);
}

const actor_ops_t *gateway_actor_ops(const actor_ops_t *inner)
{
    g_inner = inner;
    g_ops = *inner;
    g_ops.on_initialize = gw_on_initialize;
    g_ops.on_post = gw_on_post;
    g_ops.on_modern = gw_on_modern;
    g_ops.state_free = gw_any_state_free;
    g_ops.meta_put = gw_meta_put;
    g_ops.meta_load = gw_meta_load;
    g_ops.log_enabled = gw_log_enabled;
    g_ops.on_broadcast = gw_on_broadcast;
    g_ops.end_listen = gw_end_listen;
    g_ops.on_call_dropped = gw_on_call_dropped;
    return &g_ops;
}

/* A client's answer to an upstream request: back with the upstream's id, after the turn's
 * commit (gs_send_after_commit). */
void gw_client_response(actor_t *a, gw_sess_t *gs, json_t *msg)
{
    STAT_INC(requests_total[SM_response]);
    json_t *id = json_object_get(msg, "id");
    for (gw_in_t **ip = &gs->in; json_is_integer(id) && *ip; ip = &(*ip)->next) {
        gw_in_t *i = *ip;
        if ((json_int_t)i->our_id != json_integer_value(id))
            continue;
        json_t *copy = json_deep_copy(msg);
        json_object_set(copy, "id", i->up_id);
        gs_send_after_commit(gs, copy);
        *ip = i->next;
        json_decref(i->up_id);
        free(i);
        return;
    }
    STAT_INC(client_responses_unknown_total);
    log_info("session %.8s: a response to an unknown upstream request was ignored", a->sid);
}

/* The upstream cancels one of its requests (notifications/cancelled, params.requestId its id):
 * the client knows that request by our id, so the notice goes on with it and the request is
 * forgotten. true: msg was a cancellation of a request the client was not sent (or already
 * answered): dropped. */
bool up_cancel(gw_sess_t *gs, json_t *msg)
{
    if (!jsonrpc_str_is(json_object_get(msg, "method"), "notifications/cancelled"))
        return false;
    json_t *params = json_object_get(msg, "params");
    json_t *rid = json_object_get(params, "requestId");
    for (gw_in_t **ip = &gs->in; rid && *ip; ip = &(*ip)->next) {
        gw_in_t *i = *ip;
        if (!json_equal(i->up_id, rid))
            continue;
        json_object_set_new(params, "requestId", json_integer((json_int_t)i->our_id));
        *ip = i->next;
        json_decref(i->up_id);
        free(i);
        return false;
    }
    return true;
}

/* ---- what waits for the turn's commit ---- */

/* The client's answer to an upstream request goes to the process only once the turn that
 * took it is committed, as a frame goes to a client only then (worker.h, worker_turn_end):
 * nothing leaves the server ahead of the disk. The messages wait in gs->held, in order
 * (after what else the client sent in that turn: JSON-RPC does not order them); one
 * worker_after_commit per turn, keyed by the session's id, not by gs: the session may be
 * freed before the commit (a DELETE in the same turn), and then its held messages go with it
 * (gs_free). A turn the store refuses resets the sessions it wrote for (actor_reset: freed,
 * the process stopped): not found here, their answers are dropped with them. A session it
 * left as it was (it wrote nothing) still sends: its client, told 503, may answer again, and
 * that second answer names an id already forgotten (ignored). */
static void send_held(worker_t *w, void *arg, bool committed)
{
    char *sid = arg;
    actor_t *a = worker_find_actor(w, sid);
    gw_sess_t *gs = a ? gs_of(a) : NULL;
    free(sid);
    if (!gs || !gs->held)
        return;
    json_t *held = gs->held, *msg;
    gs->held = NULL;
    size_t i;
    json_array_foreach(held, i, msg)
        gs_send(gs, json_incref(msg)); /* its process gone meanwhile: dropped, logged */
    json_decref(held);
}

void gs_send_after_commit(gw_sess_t *gs, json_t *msg)
{
    if (!gs->held) {
        gs->held = json_array();
        worker_after_commit(gs->w, send_held, xstrdup(gs->a->sid));
    }
    json_array_append_new(gs->held, msg);
}

/* ---- a gateway session's state: made, cleared, freed ---- */

gw_sess_t *gs_new(worker_t *w, int index, const char *name, const char *sid)
{
    gw_sess_t *gs = xcalloc(1, sizeof *gs);
    gs->w = w;
    gs->index = index;
    str_copy(gs->name, sizeof gs->name, name);
    gs->queue = json_array();
    gs->next_id = 1;
    snprintf(gs->tag, sizeof gs->tag, "upstream %s session %.8s", name, sid);
    return gs;
}

gw_out_t *gw_add_out(gw_sess_t *gs, uint64_t up_id, uint64_t stream, const json_t *client_id,
                     const json_t *params)
{
    gw_out_t *o = xcalloc(1, sizeof *o);
    o->up_id = up_id;
    o->stream = stream;
    o->client_id = client_id ? json_deep_copy(client_id) : NULL;
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    o->progress = token ? json_deep_copy(token) : NULL;
    o->later = gs->stopping;
    o->touched_us = now_mono_us();
    o->next = gs->out;
    gs->out = o;
    gw_call_timer_arm(gs);
    return o;
}

void out_free(gw_out_t *o)
{
    json_decref(o->client_id);
    json_decref(o->progress);
    free(o);
}

void gs_clear_maps(gw_sess_t *gs)
{
    while (gs->out) {
        gw_out_t *o = gs->out;
        gs->out = o->next;
        out_free(o);
    }
    while (gs->in) {
        gw_in_t *i = gs->in;
        gs->in = i->next;
        json_decref(i->up_id);
        free(i);
    }
    json_array_clear(gs->queue);
    gs->queued_bytes = 0;
}

/* ---- calls and lines ---- */

/* Only answers count as use (--upstream-idle, hibernation): notifications and requests an
 * upstream sends on its own (log ticks, list changes) must not keep an abandoned session, its
 * process and its --upstream-max place alive. */
bool gw_is_answer(const json_t *msg)
{
    if (!json_is_array(msg))
        return json_is_object(msg) && !json_object_get(msg, "method");
    return json_array_size(msg) > 0 && gw_is_answer(json_array_get(msg, 0));
}

/* The open call of stream `num` with the client's id, or NULL (answered, cancelled, lost). */
call_t *gw_find_call(actor_t *a, uint64_t num, const json_t *id)
{
    for (call_t *c = a->calls; c; c = c->next)
        if (c->stream->num == num && json_equal(c->id, id))
            return c;
    return NULL;
}

/* The one client request open, or NULL (none, several, or the process is not past
 * initialize). A line that is not a message, or an answer with an id never sent, was that
 * request's answer, as good as certain (an MCP server writes nothing else on stdout); with
 * more open, which one cannot be told: they wait (their answers may still come). */
static gw_out_t *sole_call(gw_sess_t *gs)
{
    gw_out_t *one = NULL;
    int n = 0;
    for (gw_out_t *o = gs->out; o; o = o->next)
        if (o->client_id) {
            one = o;
            n++;
        }
    /* before the process answered initialize, a line is no call's answer (a start-up banner:
     * the initialize, or a request queued meanwhile, was not what it answered) */
    return gs->a && gs->ready && n == 1 ? one : NULL;
}

/* one's call gets -32603 with why; one is forgotten (in a turn of gs's worker). */
static void fail_call(gw_sess_t *gs, gw_out_t *one, const char *why)
{
    actor_t *a = gs->a;
    call_t *c = gw_find_call(a, one->stream, one->client_id);
    if (c)
        actor_complete_call(a, c, jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR, why, NULL));
    for (gw_out_t **op = &gs->out; *op; op = &(*op)->next)
        if (*op == one) {
            *op = one->next;
            out_free(one);
            break;
        }
    worker_note_activity(gs->w, a);
}

/* A stdout line that is not a message (logged by the process layer). */
void gw_on_bad_line(upstream_t *u, upstream_bad_t why, const char *detail, void *arg)
{
    (void)u;
    gw_sess_t *gs = arg;
    gw_out_t *one = sole_call(gs);
    if (!one)
        return;
    char msg[300];
    snprintf(msg, sizeof msg, "the upstream %s wrote a line that is not a message (%s: %.160s)",
             gw_name(gs), upstream_bad_name(why), detail ? detail : "");
    worker_t *prev = worker_enter(gs->w);
    fail_call(gs, one, msg);
    worker_turn_end(gs->w);
    worker_leave(prev);
}

void gw_unknown_response(gw_sess_t *gs, const json_t *msg)
{
    const json_t *id = json_object_get(msg, "id");
    json_int_t n = json_integer_value(id);
    gw_out_t *one = sole_call(gs);
    /* not an integer, or none given yet: never one of ours */
    if (one && (!json_is_integer(id) || n < 1 || (uint64_t)n >= gs->next_id)) {
        char why[300];
        gateway_bad_id_why(gw_name(gs), msg, why, sizeof why);
        log_warn("%s: %s: its one open request gets an error", gs->tag, why);
        fail_call(gs, one, why);
        return;
    }
    log_warn("%s: a response to an id it was never sent (or one cancelled) was dropped", gs->tag);
}

/* ---- --upstream-max and its shares ---- */

bool gw_slot_take(gw_sess_t *gs, principal_t *owner, const char *sid, char *err, size_t errlen)
{
    /* a session stored before owners were kept counts as its own principal, as in the pool */
    principal_t *p = owner ? principal_ref(owner) : principal_of('s', sid);
    int rc = principal_take_counted(p, PR_UPSTREAMS);
    if (rc != 0) {
        principal_unref(p);
        if (rc == -EDQUOT)
            snprintf(err, errlen,
                     "this client runs %lld upstream processes, its share of --upstream-max "
                     "(--principal-share); retry later",
                     (long long)principal_limit(PR_UPSTREAMS));
        else
            snprintf(err, errlen,
                     "%lld upstream processes are running (--upstream-max); retry later",
                     (long long)g_cfg.upstream_max);
        return false;
    }
    gs->slot = p;
    return true;
}

void gw_slot_give(gw_sess_t *gs)
{
    if (!gs->slot)
        return;
    if (gs->share_back)
        principal_give_global(PR_UPSTREAMS);
    else
        principal_give(gs->slot, PR_UPSTREAMS);
    principal_unref(gs->slot);
    gs->slot = NULL;
    gs->share_back = false;
}

void gs_stop(gw_sess_t *gs)
{
    if (!gs->u || gs->stopping)
        return;
    gs->stopping = true;
    gs->ready = false; /* gs_send queues from here on */
    gs->keep_from = json_array_size(gs->queue);
    if (gs->slot && !gs->share_back) {
        principal_give_share(gs->slot, PR_UPSTREAMS);
        gs->share_back = true;
    }
    upstream_stop(gs->u);
}

/* ---- --upstream-idle ---- */

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    gw_sess_t *gs = arg;
    if (!gs->u || !gs->a) /* gone, or stopping with its session */
        return;
    int64_t limit = g_cfg.upstream_idle_s * 1000000, quiet = now_mono_us() - gs->last_us;
    bool busy = gs->out || gs->in || !gs->ready;
    if (busy || quiet < limit) {
        /* look again when it could have been quiet for long enough */
        int64_t wait = busy ? limit : limit - quiet;
        struct timeval tv = {(time_t)(wait / 1000000), (suseconds_t)(wait % 1000000)};
        evtimer_add(gs->idle_timer, &tv);
        return;
    }
    log_info("%s: no request or answer for %lld s (--upstream-idle): stopped; the session's "
             "next request starts it again",
             gs->tag, (long long)g_cfg.upstream_idle_s);
    gs->idle_stop = true;
    gs_stop(gs);
}

void gw_idle_arm(gw_sess_t *gs)
{
    if (g_cfg.upstream_idle_s <= 0)
        return;
    gs->last_us = now_mono_us();
    if (!gs->idle_timer)
        gs->idle_timer = evtimer_new(worker_base(gs->w), on_idle, gs);
    struct timeval tv = {(time_t)g_cfg.upstream_idle_s, 0};
    if (gs->idle_timer)
        evtimer_add(gs->idle_timer, &tv);
}

/* ---- --upstream-call-timeout ---- */

/* MCP asks a sender of requests for a timeout, reset by progress if it likes, so that a request
 * never answered cannot hold what it holds forever: here the session (awake while a call is
 * open), its process and its place. A call the upstream has not answered (nor reported
 * progress on) within SECS gets -32603 saying so, and the upstream a notifications/cancelled.
 * The timer is armed when a call is added and re-armed for the next due while calls are open;
 * with none open it fires at most once more, doing nothing. A call that waited for a new
 * process counts from when the client sent it. */
static void on_call_timer(evutil_socket_t fd, short what, void *arg)
{
    gw_sess_t *gs = arg;
    actor_t *a = gs->a;
    if (!a)
        return;
    long long secs = (long long)g_cfg.upstream_call_timeout_s;
    int64_t now = now_mono_us(), limit = secs * 1000000, next = 0;
    worker_t *prev = worker_enter(gs->w);
    bool was_idle = actor_is_idle(a);
    for (gw_out_t **op = &gs->out; *op;) {
        gw_out_t *o = *op;
        int64_t due = o->touched_us + limit;
        /* initialize has its own timeout; a later one was not sent yet */
        if (!o->client_id || o->init || o->later || due > now) {
            if (o->client_id && !o->init && !o->later && (!next || due < next))
                next = due;
            op = &o->next;
            continue;
        }
        *op = o->next;
        log_warn("%s: a request got no answer within %lld s (--upstream-call-timeout): cancelled",
                 gs->tag, secs);
        if (!gs->stopping) /* a stopping process gets nothing more (nor a new one for this) */
            gs_send(gs, json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
                                  "notifications/cancelled", "params", "requestId",
                                  (json_int_t)o->up_id, "reason",
                                  "no answer within --upstream-call-timeout"));
        call_t *c = gw_find_call(a, o->stream, o->client_id);
        if (c) {
            char why[200];
            snprintf(why, sizeof why,
                     "the upstream %s did not answer within %lld s (--upstream-call-timeout); "
                     "the request was cancelled there",
                     gw_name(gs), secs);
            actor_complete_call(a, c, jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR, why, NULL));
        }
        out_free(o);
    }
    /* an upstream request the client has not answered: the upstream hears so (and its
     * process is not held busy for --upstream-idle by it) */
    for (gw_in_t **ip = &gs->in; *ip;) {
        gw_in_t *i = *ip;
        int64_t due = i->sent_us + limit;
        if (due > now) {
            if (!next || due < next)
                next = due;
            ip = &i->next;
            continue;
        }
        *ip = i->next;
        log_info("%s: the client did not answer a request of the upstream within %lld s "
                 "(--upstream-call-timeout)",
                 gs->tag, secs);
        if (!gs->stopping)
            gs_send(gs, jsonrpc_error(i->up_id, JSONRPC_INTERNAL_ERROR,
                                      "the client did not answer within --upstream-call-timeout",
                                      NULL));
        json_decref(i->up_id);
        free(i);
    }
    if (next) {
        int64_t wait = next - now;
        struct timeval tv = {(time_t)(wait / 1000000), (suseconds_t)(wait % 1000000)};
        evtimer_add(gs->call_timer, &tv);
    }
    if (!was_idle || !actor_is_idle(a)) /* a firing with nothing due leaves idleness as it was */
        worker_note_activity(gs->w, a);
    worker_turn_end(gs->w);
    worker_leave(prev);
}

void gw_progress_seen(gw_sess_t *gs, const json_t *msg)
{
    if (!jsonrpc_str_is(json_object_get(msg, "method"), "notifications/progress"))
        return;
    const json_t *token = json_object_get(json_object_get(msg, "params"), "progressToken");
    for (gw_out_t *o = gs->out; token && o; o = o->next)
        if (o->progress && o->client_id && json_equal(o->progress, token))
            o->touched_us = now_mono_us();
}

void gw_call_timer_arm(gw_sess_t *gs)
{
    if (g_cfg.upstream_call_timeout_s <= 0)
        return;
    if (!gs->call_timer)
        gs->call_timer = evtimer_new(worker_base(gs->w), on_call_timer, gs);
    /* a pending one fires no later than this call's due: the calls before it are due first */
    if (!gs->call_timer || evtimer_pending(gs->call_timer, NULL))
        return;
    struct timeval tv = {(time_t)g_cfg.upstream_call_timeout_s, 0};
    evtimer_add(gs->call_timer, &tv);
}

void gw_timers_del(gw_sess_t *gs)
{
    if (gs->idle_timer)
        evtimer_del(gs->idle_timer);
    if (gs->call_timer)
        evtimer_del(gs->call_timer);
}

void gs_free(gw_sess_t *gs)
{
    if (gs->call_timer)
        event_free(gs->call_timer);
    if (gs->idle_timer)
        event_free(gs->idle_timer);
    gw_slot_give(gs); /* a process ended with no callback (shutdown: upstream_kill_all) */
    if (gs->init_timer)
        event_free(gs->init_timer);
    gs_clear_maps(gs);
    json_decref(gs->queue);
    json_decref(gs->held);
    json_decref(gs->init);
    json_decref(gs->level);
    free(gs);
}
