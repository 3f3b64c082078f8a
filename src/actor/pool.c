/* The tool pool: N threads running handlers, which may block (sleep, wait for a client's
 * answer). A plain mutex + condvar queue is enough: a job is milliseconds or more of work,
 * so the queue hand-off is not the bottleneck; non-blocking tools bypass the pool entirely. */
#include "actor/job.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job_t *head, *tail;
    bool stopping;
    pthread_t *threads;
    int n;
} P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, false, NULL, 0};

static void *pool_main(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "tool%d", (int)(intptr_t)arg);
    log_set_thread_name(name);
    for (;;) {
        pthread_mutex_lock(&P.mu);
        while (!P.head && !P.stopping)
            pthread_cond_wait(&P.cv, &P.mu);
        if (!P.head) {
            pthread_mutex_unlock(&P.mu);
            break;
        }
        job_t *j = P.head;
        P.head = j->pool_next;
        if (!P.head)
            P.tail = NULL;
        pthread_mutex_unlock(&P.mu);
        job_run(j);
        wmsg_t *m = wmsg_new(WM_TOOL_DONE);
        m->u.tool.job = j;
        worker_push(j->w, m); /* the job belongs to the worker from here on */
    }
    return NULL;
}

int pool_start(int nthreads)
{
    P.threads = xcalloc((size_t)nthreads, sizeof *P.threads);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&P.threads[i], NULL, pool_main, (void *)(intptr_t)i) != 0)
            return -1;
        P.n++;
    }
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
    if (P.tail)
        P.tail->pool_next = j;
    else
        P.head = j;
    P.tail = j;
    pthread_cond_signal(&P.cv);
    pthread_mutex_unlock(&P.mu);
}

void pool_stop(void)
{
    /* queued jobs still run (they see their cancelled flag) so that every job reaches
     * WM_TOOL_DONE and its worker frees it */
    pthread_mutex_lock(&P.mu);
    P.stopping = true;
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.mu);
    for (int i = 0; i < P.n; i++)
        pthread_join(P.threads[i], NULL);
    free(P.threads);
    P.threads = NULL;
    P.n = 0;
}
