/* Threads: the caller's (it starts and joins the runners). */
/* The timing both thread micro-benchmarks share (micro-stats, micro-principal): nthreads
 * threads run fn, released together; returns the ns per operation of one thread, for n_ops
 * operations each. fn waits on micro_start before its loop. */
#ifndef MCPD_BENCH_MICRO_THREADS_H
#define MCPD_BENCH_MICRO_THREADS_H

#include <pthread.h>
#include <time.h>

static pthread_barrier_t micro_start;

static inline double micro_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double micro_run(void *(*fn)(void *), int nthreads, long n_ops)
{
    pthread_t t[64];
    pthread_barrier_init(&micro_start, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, fn, NULL);
    double t0 = micro_now_s(); /* before the barrier lets them go: none may be done before it */
    pthread_barrier_wait(&micro_start);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    double dt = micro_now_s() - t0;
    pthread_barrier_destroy(&micro_start);
    return dt * 1e9 / (double)n_ops;
}

#endif
