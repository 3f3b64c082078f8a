/* Threads: main and T counting threads (micro-benchmark of core/stats). */
/* Micro-benchmark of the per-request counters: what one request counts (requests_total[method],
 * http_responses[200], a latency bucket, its sum and count), done N times by each of T threads.
 *
 * "shared": the way before the counters were per thread: relaxed atomic read-modify-writes on one
 * process-wide stats_t, so the threads' writes bounce the same cache lines between cores.
 * "per thread": core/stats.h as it is (STAT_INC, stats_count_status, stats_observe_latency):
 * each thread writes its own block. Prints ns per request and the ratio, for 1 thread and for T.
 * Figures only: nothing here asserts on time.
 *
 * usage: micro-stats [N [T]]   (default 5,000,000 and 2)
 */
#include "core/stats.h"

#include "threads.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static stats_t shared; /* the old g_stats */
static long n_ops;

static void *count_shared(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&micro_start);
    for (long i = 0; i < n_ops; i++) {
        long long us = 100 + (i & 255);
        atomic_fetch_add_explicit(&shared.requests_total[SM_ping], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&shared.http_responses[200], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&shared.latency_buckets[SM_ping][3], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&shared.latency_sum_us[SM_ping], us, memory_order_relaxed);
        atomic_fetch_add_explicit(&shared.latency_count[SM_ping], 1, memory_order_relaxed);
    }
    return NULL;
}

static void *count_per_thread(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&micro_start);
    for (long i = 0; i < n_ops; i++) {
        STAT_INC(requests_total[SM_ping]);
        stats_count_status(200);
        stats_observe_latency(SM_ping, 100 + (i & 255));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    n_ops = argc > 1 ? atol(argv[1]) : 5000000;
    int nthreads = argc > 2 ? atoi(argv[2]) : 2;
    if (n_ops <= 0 || nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "usage: micro-stats [N [T]]\n");
        return 2;
    }
    int ts[2] = {1, nthreads};
    for (int k = 0; k < (nthreads > 1 ? 2 : 1); k++) {
        double a = micro_run(count_shared, ts[k], n_ops),
               b = micro_run(count_per_thread, ts[k], n_ops);
        printf(
            "%d thread(s), %ld requests each: shared %.1f ns/request, per thread %.1f ns/request "
            "(%.2fx)\n",
            ts[k], n_ops, a, b, a / b);
    }
    long long want = (long long)n_ops * (1 + (nthreads > 1 ? nthreads : 0));
    if (STAT_GET(requests_total[SM_ping]) != want)
        printf("per-thread sum %lld, expected %lld\n", STAT_GET(requests_total[SM_ping]), want);
    return 0;
}
