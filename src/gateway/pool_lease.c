/* Threads: worker threads (the pool's). */
/* Who gets a pool process (pool.c, docs/design/gateway.md): the queue of requests that wait
 * for one, the lease of a free process to the oldest, the starts while fewer than
 * --upstream-pool run, and a request's end (done: its process is free again; aborted: its
 * process is stopped). */
#include "gateway/pool_internal.h"

#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"

#include <stdio.h>
#include <string.h>

void pool_proc_fence(pproc_t *p)
{
    if (!p->u || p->stopping)
        return;
    p->fence_id = p->next_id++;
    p->fence_us = now_mono_us();
    if (pool_write(p, json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)p->fence_id,
                                "method", "ping")) != 0)
        pool_proc_stop(p);
    pool_timer_arm(p->pool);
}

/* Sends job to p (p is ready, free and fenced). */
static void lease(pproc_t *p, pjob_t *job)
{
    p->job = job;
    job->p = p;
    job->up_id = p->next_id++;
    json_t *r = job->req;
    job->req = json_pack("{s:O}", "method", json_object_get(r, "method"));
    json_object_set_new(r, "jsonrpc", json_string("2.0"));
    json_object_set_new(r, "id", json_integer((json_int_t)job->up_id));
    job->touched_us = now_mono_us();
    pool_write(p, r);
    pool_timer_arm(p->pool);
}

/* Takes job off the queue (wherever it is in it). */
static void unqueue(pool_t *pl, pjob_t *job)
{
    pjob_t **jp = &pl->wait_head, *prev = NULL;
    while (*jp && *jp != job) {
        prev = *jp;
        jp = &(*jp)->next;
    }
    if (!*jp)
        return;
    *jp = job->next;
    if (pl->wait_tail == job)
        pl->wait_tail = prev;
    job->next = NULL;
    pl->nwaiting--;
    STAT_DEC(upstream_pool_waiting);
}

/* No process can serve: every waiting request gets msg (full: 503 + Retry-After, the cap). */
void pool_fail_waiting(pool_t *pl, const char *msg, bool full)
{
    pjob_t *head;
    while ((head = pl->wait_head)) {
        unqueue(pl, head);
        if (full) { /* each request refused for --upstream-max (the pool's, not a client's) */
            STAT_INC(limit_refusals_total);
            if (head->a && head->a->calls && !head->a->calls->stream->sse)
                stream_set_reply_status(head->a->calls->stream, 503, "5");
        }
        pool_answer_error(head, full ? MCP_ERR_OVERLOADED : JSONRPC_INTERNAL_ERROR, msg);
        pool_job_free(head);
    }
}

/* ---- the shares: a client holds at most --principal-share of the processes ---- */

/* The processes who holds (serving its request, or its exchange between rounds). */
static int held_by(const pool_t *pl, const principal_t *who)
{
    int n = 0;
    for (const pproc_t *p = pl->procs; p; p = p->next)
        n += p->job && p->job->owner == who;
    return n;
}

/* The oldest waiting request whose client holds fewer processes than its share, or NULL. */
static pjob_t *next_eligible(pool_t *pl, int share)
{
    for (pjob_t *j = pl->wait_head; j; j = j->next)
        if (!j->discover && held_by(pl, j->owner) < share)
            return j;
    return NULL;
}

/* How many waiting requests processes coming free now could serve, counted up to `most`: a
 * server/discover (it needs a process that answers initialize), or a request whose client,
 * with those of its requests counted before it, holds fewer than its share. At most
 * (--upstream-pool + 1) are counted, so this is O(queue x processes). */
static int wanted(pool_t *pl, int share, int most)
{
    const principal_t *counted[66]; /* --upstream-pool is at most 64 */
    int n = 0;
    if (most > (int)(sizeof counted / sizeof counted[0]))
        most = (int)(sizeof counted / sizeof counted[0]);
    for (pjob_t *j = pl->wait_head; j && n < most; j = j->next) {
        int mine = j->discover ? 0 : held_by(pl, j->owner);
        for (int i = 0; i < n && !j->discover; i++)
            mine += counted[i] == j->owner;
        if (j->discover || mine < share)
            counted[n++] = j->discover ? NULL : j->owner;
    }
    return n;
}

/* Does a request of who wait (a server/discover aside)? */
static bool waits(const pool_t *pl, const principal_t *who)
{
    for (const pjob_t *j = pl->wait_head; j; j = j->next)
        if (!j->discover && j->owner == who)
            return true;
    return false;
}

/* ---- the pump ---- */

/* server/discover requests that waited for a process's initialize answer get it (pl->info). */
static void answer_discovers(pool_t *pl)
{
    for (pjob_t *j = pl->wait_head, *next; j; j = next) {
        next = j->next;
        if (!j->discover)
            continue;
        unqueue(pl, j);
        pool_answer(j, json_pack("{s:s, s:o}", "jsonrpc", "2.0", "result",
                                 pool_decorate(pl, j, pool_discover_result(pl))));
        pool_job_free(j);
    }
}

/* Free ready processes go to the oldest waiting request whose client is under its share
 * (--principal-share of --upstream-pool, at least 1: a client's further requests wait while
 * another's are served, as the tool pool's calls do); processes are started while fewer than
 * N run and more such requests wait than are starting; with none running and none
 * startable, the waiting get the reason. */
void pool_pump(pool_t *pl)
{
    int share = (int)principal_share_of(g_cfg.upstream_pool);
    for (;;) {
        if (pl->closing || !pl->wait_head)
            return;
        if (pl->info)
            answer_discovers(pl);
        if (!pl->wait_head)
            return;
        pproc_t *free_p = NULL, *held = NULL; /* held: the oldest exchange's, between rounds */
        int starting = 0, active = 0;         /* starting: not yet ready, or waiting for its ping */
        for (pproc_t *p = pl->procs; p; p = p->next) {
            if (p->stopping)
                continue;
            active++;
            if (!p->ready || p->fence_id)
                starting++;
            else if (!p->job && !free_p)
                free_p = p;
            else if (p->job && !p->job->a && p->job->xid[0] &&
                     (!held || p->job->touched_us < held->job->touched_us))
                held = p;
        }
        pjob_t *next = free_p ? next_eligible(pl, share) : NULL;
        if (next) {
            unqueue(pl, next);
            lease(free_p, next);
            continue;
        }
        if (free_p)
            return; /* what waits is of clients at their share (discovers were answered) */
        int want = wanted(pl, share, starting + 1);
        if (active >= g_cfg.upstream_pool) {
            if (!held || starting > 0)
                return; /* those running take them as they come free */
            /* none of what waits could take a process: only a request of the exchange's own
             * client has it give its process up (the client's share comes back with it) */
            if (!want && !waits(pl, held->job->owner))
                return;
            /* every process is busy, one with an exchange that waits for its client: a waiting
             * request gets its place (that exchange's retry runs its request again) */
            pool_job_abort(held->job, "its process was needed by another request "
                                      "(--upstream-pool): a retry runs the request again");
            continue;
        }
        if (starting >= want)
            return; /* those starting will take them */
        char err[300];
        bool full;
        if (pool_proc_start(pl, &full, err, sizeof err))
            continue;
        if (active > 0)
            return;
        char msg[400];
        snprintf(msg, sizeof msg, "cannot start the upstream %s: %s", pl->name, err);
        log_warn("upstream %s pool: %s", pl->name, msg);
        pool_fail_waiting(pl, msg, full);
        return;
    }
}

void pool_enqueue(pool_t *pl, pjob_t *job)
{
    if (job->discover && pl->info) {
        pool_answer(job, json_pack("{s:s, s:o}", "jsonrpc", "2.0", "result",
                                   pool_decorate(pl, job, pool_discover_result(pl))));
        pool_job_free(job);
        return;
    }
    if (pl->wait_tail)
        pl->wait_tail->next = job;
    else
        pl->wait_head = job;
    pl->wait_tail = job;
    pl->nwaiting++;
    STAT_INC(upstream_pool_waiting);
    pool_pump(pl);
    pool_timer_arm(pl);
}

void pool_job_done(pjob_t *job)
{
    pool_t *pl = job->pool;
    const char *key;
    json_t *v;
    json_object_foreach(job->pending, key, v) /* it answered without them: they end here */
        pool_write(job->p, jsonrpc_error(json_object_get(v, "id"), JSONRPC_INTERNAL_ERROR,
                                         "the request they were for is complete", NULL));
    if (job->p) {
        job->p->job = NULL;
        pool_proc_fence(job->p);
    }
    pool_job_free(job);
    pool_pump(pl);
}

void pool_job_abort(pjob_t *job, const char *why)
{
    if (job->a)
        pool_answer_error(job, JSONRPC_INTERNAL_ERROR, why);
    if (job->p && job->p->ready) {
        const char *key;
        json_t *v;
        json_object_foreach(job->pending, key, v)
            pool_write(job->p,
                       jsonrpc_error(json_object_get(v, "id"), JSONRPC_INTERNAL_ERROR, why, NULL));
        json_object_clear(job->pending);
        pool_write(job->p, json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
                                     "notifications/cancelled", "params", "requestId",
                                     (json_int_t)job->up_id, "reason", why));
    }
    /* the process may go on with the cancelled request a while: what it sends next would be
     * charged to the next request it took (another client's). It is stopped; a new one takes
     * the next request. */
    if (job->p)
        pool_proc_stop(job->p);
    if (!job->p) /* still waiting: off the queue */
        unqueue(job->pool, job);
    pool_job_done(job);
}
