/* Threads: worker threads (a pool, its processes' callbacks and its requests belong to one
 * worker); main thread (gateway_pool_free, at shutdown). */
/* The 2026-07-28 era on /mcp/NAME (--upstream-pool N). A stateless request has no session and
 * so no process of its own: it is served by a pool of at most N warm processes of its upstream,
 * started when requests need them, each initialized once (as a session-era client that
 * declares elicitation and sampling) and kept until mcpactord stops or it exits (or, with
 * --upstream-idle, it has been free that long).
 *
 * One request per process at a time. A stdio server does not say which request its
 * notifications and requests relate to; with one request on a process, its progress, its log
 * messages and its input requests (MRTR, pool_req.c) are that request's, exactly; what it
 * writes after its answer is kept from the next request by a ping it must answer first
 * (pool_lease.c). A request waits on the pool's queue (bounded, and shared out between
 * clients) while every process is busy or its client holds its share; the HTTP side sends
 * every request of a name to one worker (endpoint_modern.c), so N is the number of processes.
 *
 * Each request is an ACTOR_REQUEST actor, as on /mcp, with a->upstream set and a->ps its job;
 * mcpactord answers the revision's parts itself (_meta, resultType, server/discover) and
 * forwards the rest with the upstream's own ids. */
#include "gateway/gateway.h"
#include "gateway/pool_internal.h"

#include "actor/worker.h"
#include "core/log.h"
#include "core/methodtable.h"
#include "core/stats.h"
#include "core/util.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"
#include "wire/stateless.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_all_mu = PTHREAD_MUTEX_INITIALIZER;
static pool_t *g_all;
static _Thread_local pool_t *t_pools[CFG_MAX_UPSTREAMS];

pool_t *pool_get(worker_t *w, int index)
{
    pool_t *pl = t_pools[index];
    if (pl && pl->w == w)
        return pl;
    pthread_mutex_lock(&g_all_mu);
    for (pl = g_all; pl && !(pl->w == w && pl->index == index); pl = pl->next_all)
        ;
    if (!pl) {
        pl = xcalloc(1, sizeof *pl);
        pl->w = w;
        pl->index = index;
        str_copy(pl->name, sizeof pl->name, g_cfg.upstream_names[index]);
        /* "g:": a principal of its own kind, held to its share like any ("p:" would be a
         * trusted proxy's, which takes none) */
        pl->who = principal_of('g', pl->name);
        pl->next_all = g_all;
        g_all = pl;
    }
    pthread_mutex_unlock(&g_all_mu);
    t_pools[index] = pl;
    return pl;
}

/* ---- answers ---- */

void pool_answer(pjob_t *job, json_t *response)
{
    actor_t *a = job->a;
    call_t *c = a ? a->calls : NULL;
    if (a) {
        a->ps = NULL;
        job->a = NULL;
    }
    if (!c) {
        json_decref(response);
        return;
    }
    json_object_set(response, "id", c->id);
    actor_complete_call(a, c, response);
    if (t_pool_intake != a)
        worker_note_activity(a->w, a); /* a one-request actor goes once answered */
}

void pool_answer_error(pjob_t *job, int code, const char *msg)
{
    /* the revision's status for an error the gateway makes (an upstream's own errors go with
     * 200: its codes mean what it means, not what mcpactord's do); one set before (503 +
     * Retry-After) stays */
    call_t *c = job->a ? job->a->calls : NULL;
    if (c && !c->stream->sse && !c->stream->http_status)
        stream_set_reply_status(c->stream, stateless_http_status(code), NULL);
    pool_answer(job, jsonrpc_error(NULL, code, msg, NULL));
}

/* ---- the processes ---- */

int pool_write(pproc_t *p, json_t *msg)
{
    char err[200];
    int rc = p && p->u && !p->stopping ? upstream_send(p->u, msg, err, sizeof err) : -1;
    if (rc != 0 && p && p->u)
        log_warn("%s", p->stopping ? "a stopping pool process was sent nothing" : err);
    json_decref(msg);
    return rc;
}

void pool_proc_stop(pproc_t *p)
{
    if (p->u && !p->stopping) {
        p->stopping = true;
        upstream_stop(p->u);
    }
}

static void on_message(upstream_t *u, json_t *msg, void *arg);
static void on_exit_cb(upstream_t *u, const upstream_exit_t *how, void *arg);
static void on_bad_line(upstream_t *u, upstream_bad_t why, const char *detail, void *arg);
static const upstream_cbs_t CBS = {.on_message = on_message,
                                   .on_bad_line = on_bad_line,
                                   .on_exit = on_exit_cb};

/* A new process, its initialize sent; NULL with the reason in err (*full: --upstream-max). */
pproc_t *pool_proc_start(pool_t *pl, bool *full, char *err, size_t errlen)
{
    *full = false;
    /* not counted as a refusal here: the waiting requests may be served by the processes
     * running (pool_pump); pool_fail_waiting counts those it refuses */
    int rc = principal_take(pl->who, PR_UPSTREAMS);
    if (rc != 0) {
        *full = true;
        snprintf(err, errlen,
                 rc == -EDQUOT ? "the pool holds its share of --upstream-max (--principal-share)"
                               : "%lld upstream processes are running (--upstream-max)",
                 (long long)g_cfg.upstream_max);
        return NULL;
    }
    pproc_t *p = xcalloc(1, sizeof *p);
    p->pool = pl;
    p->slot = principal_ref(pl->who);
    p->next_id = 1;
    p->started_us = now_mono_us();
    snprintf(p->tag, sizeof p->tag, "upstream %s pool", pl->name);
    upstream_opts_t o = {.tag = p->tag};
    p->u = upstream_start(worker_base(pl->w), gateway_argv(pl->index), NULL, &o, &CBS, p, err,
                          errlen);
    if (!p->u) {
        principal_give(p->slot, PR_UPSTREAMS);
        principal_unref(p->slot);
        free(p);
        return NULL;
    }
    p->init_id = p->next_id++;
    json_t *init = json_pack("{s:s, s:I, s:s, s:{s:s, s:{s:{}, s:{}}, s:{s:s, s:s}}}", "jsonrpc",
                             "2.0", "id", (json_int_t)p->init_id, "method", "initialize", "params",
                             "protocolVersion", "2025-11-25", "capabilities", "elicitation",
                             "sampling", "clientInfo", "name", "mcpactord-pool", "version",
                             MCPD_VERSION);
    pool_write(p, init);
    p->next = pl->procs;
    pl->procs = p;
    pl->nprocs++;
    pool_timer_arm(pl); /* its initialize answer is awaited as a call is */
    log_info("%s: process started (%d of at most %lld)", p->tag, pl->nprocs,
             (long long)g_cfg.upstream_pool);
    return p;
}

void pool_job_free(pjob_t *job)
{
    if (job->a)
        job->a->ps = NULL;
    principal_unref(job->owner);
    json_decref(job->req);
    json_decref(job->progress);
    json_decref(job->client_progress);
    json_decref(job->caps);
    json_decref(job->pending);
    json_decref(job->final);
    free(job);
}

/* p will not serve: stopped; with no process of the pool that does, what waits hears why now,
 * rather than from a process started for it after this one's exit (a loop of starts). */
static void init_failed(pproc_t *p, const char *why)
{
    pool_t *pl = p->pool;
    snprintf(p->why, sizeof p->why, "%s", why);
    pool_proc_stop(p);
    bool served = false;
    for (pproc_t *q = pl->procs; q; q = q->next)
        served |= q->ready && !q->stopping;
    if (!served) {
        char m[300];
        snprintf(m, sizeof m, "the upstream %s %s", pl->name, p->why);
        pool_fail_waiting(pl, m, false);
    }
}

/* ---- from the upstream ---- */

/* A notification: the job's progress and its log messages at or above the level its request
 * asked for go on its response stream; the rest (list changes: no subscription here) are
 * dropped. An upstream's cancellation of one of its input requests takes it back. */
static void up_notification(pproc_t *p, json_t *msg)
{
    pjob_t *job = p->job;
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    if (!job && p->fence_id && method)
        log_debug("%s: %s after its request's answer, before the ping's: dropped", p->tag, method);
    if (!job || !method)
        return;
    if (strcmp(method, "notifications/cancelled") == 0) {
        const char *key;
        void *tmp;
        json_t *v;
        json_object_foreach_safe(job->pending, tmp, key, v)
            if (json_equal(json_object_get(v, "id"), json_object_get(params, "requestId")))
                json_object_del(job->pending, key);
        return;
    }
    bool go = false;
    if (strcmp(method, "notifications/progress") == 0) {
        go = job->progress && json_equal(job->progress, json_object_get(params, "progressToken"));
        if (go)
            job->touched_us = now_mono_us();
    } else if (strcmp(method, "notifications/message") == 0) {
        int lv = pool_level_index(json_object_get(params, "level"));
        go = lv < 99 && lv >= job->log_min; /* (99: no level asked, or not a level) */
    }
    call_t *c = job->a ? job->a->calls : NULL;
    if (!go || !c)
        return;
    json_t *out = json_deep_copy(msg);
    if (strcmp(method, "notifications/progress") == 0) {
        if (!job->client_progress) { /* this round's request asked for none */
            json_decref(out);
            return;
        }
        json_object_set(json_object_get(out, "params"), "progressToken", job->client_progress);
    }
    actor_stream_send(job->a, c->stream, out);
}

static void up_response(pproc_t *p, json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    pool_t *pl = p->pool;
    json_int_t n = json_integer_value(id);
    if (!p->ready && !p->fence_id && json_is_integer(id) && (uint64_t)n == p->init_id) {
        json_t *result = json_object_get(msg, "result");
        if (!json_is_object(result)) {
            log_warn("%s: the upstream answered initialize with an error: stopped", p->tag);
            init_failed(p, "answered initialize with an error");
            return;
        }
        if (!pl->info)
            pl->info = json_incref(result);
        pool_write(p, json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method",
                                "notifications/initialized"));
        /* ready at the ping's answer: what it says at notifications/initialized is no
         * request's, and one that never answers a ping is found within the init timeout */
        pool_proc_fence(p);
        return;
    }
    if (p->fence_id && json_is_integer(id) && (uint64_t)n == p->fence_id) {
        p->fence_id = 0; /* what it wrote before is behind: it may be leased (on_message) */
        p->ready = true;
        p->free_us = now_mono_us();
        pool_timer_arm(pl); /* --upstream-idle, unless on_message's pump leases it */
        return;
    }
    pjob_t *job = p->job;
    if (!job || !json_is_integer(id) || (uint64_t)n != job->up_id) {
        /* one request at a time: an id the process was never sent (not an integer, or none
         * given yet) answers the one it has, gone wrong; as a bad line, it ends that request
         * at once (not at --upstream-call-timeout) and the process is stopped */
        char why[300];
        gateway_bad_id_why(pl->name, msg, why, sizeof why);
        if ((job || !p->ready) && (!json_is_integer(id) || n < 1 || (uint64_t)n >= p->next_id)) {
            log_warn("%s: %s", p->tag, why);
            if (job)
                pool_job_abort(job, why);
            else
                init_failed(p, p->fence_id ? "answered the ping after initialize with an id "
                                             "it was never sent"
                                           : "answered initialize with an id it was never sent");
            return;
        }
        if (p->fence_id) /* the ended request's (a second answer): as its notifications */
            log_debug("%s: a response after its request's end was dropped", p->tag);
        else
            log_warn("%s: a response to an id it was never sent (or one cancelled) was dropped",
                     p->tag);
        return;
    }
    json_t *r = json_deep_copy(msg);
    json_t *result = json_object_get(r, "result");
    json_t *err = json_object_get(r, "error");
    if (result)
        json_object_set_new(r, "result", pool_decorate(pl, job, json_incref(result)));
    else if (json_is_integer(json_object_get(err, "code")))
        /* an error code this revision may emit: the upstream speaks an older one (-32002) */
        json_object_set_new(err, "code",
                            json_integer(stateless_error_code(
                                (int)json_integer_value(json_object_get(err, "code")))));
    if (!job->a && job->xid[0]) {
        /* between rounds: the client's retry gets it (mrtr_retry) */
        json_decref(job->final);
        job->final = r;
        return;
    }
    pool_answer(job, r);
    pool_job_done(job);
}

static void up_one(pproc_t *p, json_t *msg)
{
    if (!json_is_object(msg))
        return;
    bool has_method = json_is_string(json_object_get(msg, "method"));
    bool has_id = json_object_get(msg, "id") != NULL;
    if (!has_method && has_id)
        up_response(p, msg);
    else if (has_method && has_id && jsonrpc_str_is(json_object_get(msg, "method"), "ping"))
        pool_write(p, json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id",
                                json_object_get(msg, "id"), "result"));
    else if (has_method && has_id)
        mrtr_upstream_request(p, msg);
    else if (has_method)
        up_notification(p, msg);
    else
        log_warn("%s: a message that is not JSON-RPC was dropped", p->tag);
}

static void on_message(upstream_t *u, json_t *msg, void *arg)
{
    (void)u;
    pproc_t *p = arg;
    worker_t *w = p->pool->w, *prev = worker_enter(w);
    if (json_is_array(msg)) {
        size_t i;
        json_t *one;
        json_array_foreach(msg, i, one)
            up_one(p, one);
    } else {
        up_one(p, msg);
    }
    json_decref(msg);
    pool_pump(p->pool);
    worker_turn_end(w);
    worker_leave(prev);
}

/* A bad stdout line: with one request per process, it is that request's answer gone wrong. */
static void on_bad_line(upstream_t *u, upstream_bad_t why, const char *detail, void *arg)
{
    (void)u;
    (void)why;
    pproc_t *p = arg;
    if (!p->job || !p->job->a || !p->ready)
        return; /* (logged by the process layer) */
    worker_t *w = p->pool->w, *prev = worker_enter(w);
    char msg[300];
    snprintf(msg, sizeof msg, "the upstream %s wrote a line that is not a message: %s",
             p->pool->name, detail);
    pool_job_abort(p->job, msg);
    worker_turn_end(w);
    worker_leave(prev);
}

static void on_exit_cb(upstream_t *u, const upstream_exit_t *how, void *arg)
{
    (void)u;
    pproc_t *p = arg;
    pool_t *pl = p->pool;
    worker_t *w = pl->w, *prev = worker_enter(w);
    if (!p->stopping || how->crashed)
        log_warn("%s: %s (%s %d)", p->tag, how->crashed ? "crashed" : "exited",
                 how->signo ? "signal" : "status", how->signo ? how->signo : how->code);
    for (pproc_t **pp = &pl->procs; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    pl->nprocs--;
    principal_give(p->slot, PR_UPSTREAMS);
    principal_unref(p->slot);
    pjob_t *job = p->job;
    p->u = NULL;
    if (job) {
        char why[200];
        snprintf(why, sizeof why, "the upstream %s %s while this request was in flight", pl->name,
                 how->signo ? "was killed" : "exited");
        job->p = NULL;
        p->job = NULL;
        if (job->a)
            pool_answer_error(job, JSONRPC_INTERNAL_ERROR, why);
        pool_job_free(job);
    }
    bool served = false; /* does a process of the pool answer initialize? */
    for (pproc_t *q = pl->procs; q; q = q->next)
        served |= q->ready;
    if (!p->ready && !served) {
        /* it never served: what waits gets why, rather than a process started for each request
         * in a loop (a program that is not an MCP server, or that refuses initialize) */
        char msg[400];
        if (p->why[0])
            snprintf(msg, sizeof msg, "the upstream %s %s", pl->name, p->why);
        else
            snprintf(msg, sizeof msg, "the upstream %s %s (%s %d) before it answered initialize",
                     pl->name, how->signo ? "was killed" : "exited",
                     how->signo ? "signal" : "status", how->signo ? how->signo : how->code);
        pool_fail_waiting(pl, msg, false);
    }
    free(p);
    pool_pump(pl);
    worker_turn_end(w);
    worker_leave(prev);
}

/* ---- --upstream-call-timeout and --upstream-init-timeout ---- */

static int64_t job_due(const pjob_t *j)
{
    int64_t lim = g_cfg.upstream_call_timeout_s > 0 ? g_cfg.upstream_call_timeout_s * 1000000
                                                    : INT64_MAX;
    /* between rounds: no longer than its requestState is good */
    if (!j->a && j->xid[0] && g_cfg.request_state_ttl_s * 1000000 < lim)
        lim = g_cfg.request_state_ttl_s * 1000000;
    return lim == INT64_MAX ? INT64_MAX : j->touched_us + lim;
}

static int64_t proc_due(const pproc_t *p)
{
    if (p->stopping)
        return INT64_MAX;
    if (!p->ready)
        return p->started_us + g_cfg.upstream_init_timeout_s * 1000000;
    if (p->job)
        return job_due(p->job);
    if (p->fence_id)
        return g_cfg.upstream_call_timeout_s > 0
                   ? p->fence_us + g_cfg.upstream_call_timeout_s * 1000000
                   : INT64_MAX;
    return g_cfg.upstream_idle_s > 0 ? p->free_us + g_cfg.upstream_idle_s * 1000000 : INT64_MAX;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pool_t *pl = arg;
    int64_t now = now_mono_us();
    worker_t *w = pl->w, *prev = worker_enter(w);
    for (pproc_t *p = pl->procs, *next; p; p = next) {
        next = p->next;
        if (proc_due(p) > now)
            continue;
        if (!p->ready) {
            const char *asked = p->fence_id ? "the ping after initialize" : "initialize";
            log_warn("%s: no answer to %s within %lld s (--upstream-init-timeout): stopped", p->tag,
                     asked, (long long)g_cfg.upstream_init_timeout_s);
            char why[120];
            snprintf(why, sizeof why, "did not answer %s within %lld s (--upstream-init-timeout)",
                     asked, (long long)g_cfg.upstream_init_timeout_s);
            init_failed(p, why);
        } else if (p->fence_id) {
            log_warn("%s: no answer to a ping within %lld s (--upstream-call-timeout): stopped",
                     p->tag, (long long)g_cfg.upstream_call_timeout_s);
            pool_proc_stop(p);
        } else if (!p->job) { /* its --upstream-max place back; the next request starts one */
            log_info("%s: no request for %lld s (--upstream-idle): stopped", p->tag,
                     (long long)g_cfg.upstream_idle_s);
            pool_proc_stop(p);
        } else {
            pool_job_abort(p->job, p->job->a ? "the upstream did not answer within "
                                               "--upstream-call-timeout"
                                             : "the client did not retry within "
                                               "--upstream-call-timeout");
        }
    }
    /* the queue is in the order of arrival: its head is the oldest */
    while (pl->wait_head && job_due(pl->wait_head) <= now)
        pool_job_abort(pl->wait_head,
                       "no upstream process came free within --upstream-call-timeout");
    pool_timer_arm(pl);
    worker_turn_end(w);
    worker_leave(prev);
}

void pool_timer_arm(pool_t *pl)
{
    int64_t first = pl->wait_head ? job_due(pl->wait_head) : INT64_MAX;
    for (pproc_t *p = pl->procs; p; p = p->next)
        if (proc_due(p) < first)
            first = proc_due(p);
    if (first == INT64_MAX) {
        if (pl->timer)
            evtimer_del(pl->timer);
        return; /* nothing open: nothing armed */
    }
    if (!pl->timer)
        pl->timer = evtimer_new(worker_base(pl->w), on_timer, pl);
    if (!pl->timer)
        return;
    int64_t due = first - now_mono_us();
    if (due < 1000)
        due = 1000;
    struct timeval tv = {(time_t)(due / 1000000), (suseconds_t)(due % 1000000)};
    evtimer_add(pl->timer, &tv);
}

/* ---- shutdown ---- */

void gateway_pool_free(void)
{
    pthread_mutex_lock(&g_all_mu);
    while (g_all) {
        pool_t *pl = g_all;
        g_all = pl->next_all;
        for (pproc_t *p = pl->procs, *next; p; p = next) { /* upstream_kill_all freed p->u */
            next = p->next;
            if (p->job) {
                p->job->a = NULL;
                pool_job_free(p->job);
            }
            principal_unref(p->slot);
            free(p);
        }
        for (pjob_t *j = pl->wait_head, *next; j; j = next) {
            next = j->next;
            j->a = NULL;
            pool_job_free(j);
        }
        STAT_ADD(upstream_pool_waiting, -pl->nwaiting);
        if (pl->timer)
            event_free(pl->timer);
        json_decref(pl->info);
        principal_unref(pl->who);
        free(pl);
    }
    pthread_mutex_unlock(&g_all_mu);
}
