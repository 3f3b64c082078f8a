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

static pjob_t *dequeue(pool_t *pl)
{
    pjob_t *job = pl->wait_head;
    if (job) {
        pl->wait_head = job->next;
        if (!pl->wait_head)
            pl->wait_tail = NULL;
        job->next = NULL;
        pl->nwaiting--;
        STAT_DEC(upstream_pool_waiting);
    }
    return job;
}

/* No process can serve: every waiting request gets msg (full: 503 + Retry-After, the cap). */
void pool_fail_waiting(pool_t *pl, const char *msg, bool full)
{
    pjob_t *head;
    while ((head = dequeue(pl))) {
        if (full && head->a && head->a->calls && !head->a->calls->stream->sse)
            stream_set_reply_status(head->a->calls->stream, 503, "5");
        pool_answer_error(head, full ? MCP_ERR_OVERLOADED : JSONRPC_INTERNAL_ERROR, msg);
        pool_job_free(head);
    }
}

/* Requests waiting go to free ready processes; more are started while fewer than N run and
 * requests wait for them; with none running and none startable, the waiting get the reason. */
void pool_pump(pool_t *pl)
{
    for (;;) {
        pjob_t *head = pl->wait_head;
        if (pl->closing || !head)
            return;
        if (head->discover && pl->info) {
            dequeue(pl);
            pool_answer(head, json_pack("{s:s, s:o}", "jsonrpc", "2.0", "result",
                                        pool_decorate(pl, head, pool_discover_result(pl))));
            pool_job_free(head);
            continue;
        }
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
        if (free_p && !head->discover) {
            lease(free_p, dequeue(pl));
            continue;
        }
        if (starting >= pl->nwaiting)
            return; /* those starting will take them */
        if (active >= g_cfg.upstream_pool) {
            if (!held || starting > 0)
                return; /* those running take them as they come free */
            /* every process is busy, one with an exchange that waits for its client: a waiting
             * request gets its place (that exchange's retry runs its request again) */
            pool_job_abort(held->job, "its process was needed by another request "
                                      "(--upstream-pool): a retry runs the request again");
            continue;
        }
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
    if (!job->p) { /* still waiting: off the queue */
        pool_t *pl = job->pool;
        pjob_t **jp = &pl->wait_head, *prev = NULL;
        while (*jp && *jp != job) {
            prev = *jp;
            jp = &(*jp)->next;
        }
        if (*jp) {
            *jp = job->next;
            if (pl->wait_tail == job)
                pl->wait_tail = prev;
            pl->nwaiting--;
            STAT_DEC(upstream_pool_waiting);
        }
    }
    pool_job_done(job);
}
