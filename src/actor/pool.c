/* Threads: the tool pool threads run the jobs; any thread submits; main thread starts and stops. */
/* The tool pool: N threads running handlers, which may block (sleep, wait for a client's
 * answer, run for minutes as a task). Any thread submits; the pool threads run the jobs.
 *
 * Fair shares. Handlers block for as long as they like and a running one cannot be taken
 * back, so one client with a few long calls could hold every thread and make everyone else
 * wait (issue 21: two sessions with two 6 s calls each made a third session's 1 ms call wait
 * 5.5 s). Every job runs in the share of its principal (job_t.fair, core/principal.h: the
 * token name; without tokens the session, or the client's address for 2026-07-28 calls and
 * tasks), and a free thread takes, in this order:
 *   1. a job cancelled while it waited (it ends at once, without running its handler);
 *   2. the oldest waiting job of a principal that has nothing running;
 *   3. a job of the principal with the fewest running, while that principal runs fewer than
 *      its share (--principal-share percent of the threads, at least 1) AND taking it still
 *      leaves the reserve free (a quarter of the threads, at least 1; none when the share is
 *      100 %, which turns the shares off).
 * So a principal with nothing running finds a thread at once unless every thread runs a
 * different principal's job (the reserve is there for it), and a principal's extra jobs wait
 * for threads nobody else asks for. No thread is idle while a job of a principal with nothing
 * running waits, and when nothing runs at all every waiting job is eligible, so nothing
 * starves. --session-jobs still bounds one session's jobs before they reach the pool (actor.c).
 *
 * A plain mutex + condvar is enough: a job is milliseconds or more of work, so the hand-off is
 * not the bottleneck; non-blocking tools bypass the pool entirely. */
#include "actor/job.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/blockcache.h"
#include "core/config.h"
#include "core/log.h"
#include "core/principal.h"
#include "core/stats.h"

#include <stdio.h>
#include <stdlib.h>

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job_t *express, *express_tail;       /* cancelled while waiting: they end at once */
    principal_t *waiting, *waiting_tail; /* principals with waiting jobs, round robin */
    int busy;                            /* threads running a job */
    int reserve;                         /* threads kept for principals with nothing running */
    int share;                           /* threads one principal may hold */
    bool stopping;
    pthread_t *threads;
    int n;
} P = {PTHREAD_MUTEX_INITIALIZER,
       PTHREAD_COND_INITIALIZER,
       NULL,
       NULL,
       NULL,
       NULL,
       0,
       1,
       1,
       false,
       NULL,
       0};

/* ---- the waiting queues (P.mu held) ---- */

static void waiting_append(principal_t *p)
{
    principal_sched_t *s = principal_sched(p);
    s->waiting = true;
    s->next_waiting = NULL;
    if (P.waiting_tail)
        principal_sched(P.waiting_tail)->next_waiting = p;
    else
        P.waiting = p;
    P.waiting_tail = p;
}

static void waiting_unlink(principal_t *p, principal_t *prev)
{
    principal_sched_t *s = principal_sched(p);
    if (prev)
        principal_sched(prev)->next_waiting = s->next_waiting;
    else
        P.waiting = s->next_waiting;
    if (P.waiting_tail == p)
        P.waiting_tail = prev;
    s->next_waiting = NULL;
    s->waiting = false;
}

static void express_append(job_t *j)
{
    j->pool_next = NULL;
    if (P.express_tail)
        P.express_tail->pool_next = j;
    else
        P.express = j;
    P.express_tail = j;
}

/* Takes the head job of p (at prev in the waiting list); p goes to the back of the list if
 * it has more waiting. */
static job_t *take_from(principal_t *p, principal_t *prev)
{
    principal_sched_t *s = principal_sched(p);
    job_t *j = s->head;
    s->head = j->pool_next;
    if (!s->head)
        s->tail = NULL;
    j->pool_next = NULL;
    j->pool_waiting = false;
    waiting_unlink(p, prev);
    if (s->head)
        waiting_append(p);
    STAT_DEC(tool_jobs_waiting);
    return j;
}

/* The next job for a free thread, or NULL (see the rules above); *express: it came from
 * the express list (it runs outside every share). */
static job_t *choose(bool *express)
{
    *express = P.express != NULL;
    if (P.express) {
        job_t *j = P.express;
        P.express = j->pool_next;
        if (!P.express)
            P.express_tail = NULL;
        j->pool_next = NULL;
        return j;
    }
    int free_threads = P.n - P.busy;
    principal_t *best = NULL, *best_prev = NULL, *prev = NULL;
    for (principal_t *p = P.waiting; p; prev = p, p = principal_sched(p)->next_waiting) {
        int running = principal_sched(p)->running;
        if (running == 0 || P.stopping)
            return take_from(p, prev);
        if (running < P.share && free_threads - 1 >= P.reserve &&
            (!best || running < principal_sched(best)->running)) {
            best = p;
            best_prev = prev;
        }
    }
    return best ? take_from(best, best_prev) : NULL;
}

/* ---- threads ---- */

static void *pool_main(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "tool%d", (int)(intptr_t)arg);
    log_set_thread_name(name);
    pthread_mutex_lock(&P.mu);
    for (;;) {
        bool express;
        job_t *j = choose(&express);
        if (!j) {
            if (P.stopping && !P.waiting)
                break;
            if (blockcache_kept()) {
                /* idle: its kept blocks go back (up to ~303 KiB a thread, of up to 1024) */
                pthread_mutex_unlock(&P.mu);
                blockcache_trim();
                pthread_mutex_lock(&P.mu);
                continue;
            }
            pthread_cond_wait(&P.cv, &P.mu);
            continue;
        }
        principal_sched_t *s = j->fair ? principal_sched(j->fair) : NULL;
        bool counted = s && !express;
        if (counted)
            s->running++;
        P.busy++;
        STAT_INC(tool_threads_busy);
        pthread_mutex_unlock(&P.mu);
        if (j->pool_skip) {
            /* cancelled while it waited for a thread: its handler has nothing to do */
            if (atomic_load(&j->moving))
                mcpd_ctx_set_error(j, MCPD_ERR_MOVED,
                                   "this session's shard is moving to "
                                   "another node: the call did not run; retry");
            else
                mcpd_ctx_set_error(j, MCPD_ERR_INTERNAL, "the call was cancelled");
        } else {
            job_run(j);
        }
        pthread_mutex_lock(&P.mu);
        if (counted)
            s->running--;
        P.busy--;
        STAT_DEC(tool_threads_busy);
        if (P.waiting && P.n - P.busy > 1)
            pthread_cond_broadcast(&P.cv); /* a place a waiting job may take besides ours */
        pthread_mutex_unlock(&P.mu);
        wmsg_t *m = wmsg_new(WM_TOOL_DONE);
        m->u.tool.job = j;
        worker_push(j->w, m); /* the job belongs to the worker from here on */
        pthread_mutex_lock(&P.mu);
    }
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

int pool_start(int nthreads)
{
    /* --principal-share 100 turns the shares off: no reserve either, any job takes any free
     * thread (only --session-jobs applies, as before the shares) */
    P.reserve = g_cfg.principal_share >= 100 ? 0 : nthreads / 4 > 1 ? nthreads / 4 : 1;
    int64_t share = (int64_t)nthreads * g_cfg.principal_share / 100;
    P.share = share > 1 ? (int)share : 1;
    P.threads = xcalloc((size_t)nthreads, sizeof *P.threads);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&P.threads[i], NULL, pool_main, (void *)(intptr_t)i) != 0)
            return -1;
        pthread_mutex_lock(&P.mu); /* the running threads read it (free threads) */
        P.n++;
        pthread_mutex_unlock(&P.mu);
    }
    log_debug("tool pool: %d threads, %d per principal, %d kept for principals with nothing "
              "running",
              P.n, P.share, P.reserve);
    return 0;
}

void pool_submit(job_t *j)
{
    j->pool_next = NULL;
    pthread_mutex_lock(&P.mu);
    if (P.stopping) {
        /* the threads may be gone: a job that comes this late (a request still in a mailbox
         * at shutdown; it starts cancelled) ends without running, and its worker frees it */
        pthread_mutex_unlock(&P.mu);
        mcpd_ctx_set_error(j, MCPD_ERR_INTERNAL, "the server is shutting down");
        wmsg_t *m = wmsg_new(WM_TOOL_DONE);
        m->u.tool.job = j;
        worker_push(j->w, m);
        return;
    }
    if (!j->fair || atomic_load(&j->cancelled)) {
        /* cancelled already (its caller went, or the server is stopping): it ends at once
         * without running its handler, as a job cancelled while it waited does (a handler
         * that never looks at the flag must not take a thread outside every share); every
         * job has a principal, this is the safe answer if one has not */
        j->pool_skip = atomic_load(&j->cancelled);
        express_append(j);
    } else {
        principal_sched_t *s = principal_sched(j->fair);
        if (s->tail)
            s->tail->pool_next = j;
        else
            s->head = j;
        s->tail = j;
        j->pool_waiting = true;
        if (!s->waiting)
            waiting_append(j->fair);
        STAT_INC(tool_jobs_waiting);
    }
    pthread_cond_signal(&P.cv);
    pthread_mutex_unlock(&P.mu);
}

void pool_expedite(job_t *j)
{
    pthread_mutex_lock(&P.mu);
    if (j->pool_waiting) {
        principal_t *p = j->fair;
        principal_sched_t *s = principal_sched(p);
        job_t *prev = NULL;
        for (job_t *q = s->head; q; prev = q, q = q->pool_next) {
            if (q != j)
                continue;
            if (prev)
                prev->pool_next = j->pool_next;
            else
                s->head = j->pool_next;
            if (s->tail == j)
                s->tail = prev;
            break;
        }
        if (!s->head) {
            principal_t *pp = NULL;
            for (principal_t *q = P.waiting; q && q != p; q = principal_sched(q)->next_waiting)
                pp = q;
            waiting_unlink(p, pp);
        }
        j->pool_waiting = false;
        j->pool_skip = true;
        STAT_DEC(tool_jobs_waiting);
        express_append(j);
        pthread_cond_signal(&P.cv);
    }
    pthread_mutex_unlock(&P.mu);
}

void pool_stop(void)
{
    /* waiting jobs still run (they see their cancelled flag) so that every job reaches
     * WM_TOOL_DONE and its worker frees it; the shares no longer hold them back */
    pthread_mutex_lock(&P.mu);
    P.stopping = true;
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.mu);
    for (int i = 0; i < P.n; i++)
        pthread_join(P.threads[i], NULL);
    free(P.threads);
    P.threads = NULL;
    P.n = 0; /* (every pool thread has ended) */
}
