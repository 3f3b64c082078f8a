/* Threads: any thread. */
/* Process-wide counters. Any thread. */
#include "core/stats.h"

#include <stdio.h>
#include <unistd.h>

stats_t g_stats;

const double stats_latency_bounds[STATS_LATENCY_BUCKETS] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025,   0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   10.0,
};

void stats_observe_latency(stats_method_t m, long long us)
{
    double secs = (double)us / 1e6;
    int b = 0;
    while (b < STATS_LATENCY_BUCKETS && secs > stats_latency_bounds[b])
        b++;
    atomic_fetch_add_explicit(&g_stats.latency_buckets[m][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_stats.latency_sum_us[m], us, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_stats.latency_count[m], 1, memory_order_relaxed);
}

void stats_count_status(int status)
{
    if (status >= 100 && status < 600)
        atomic_fetch_add_explicit(&g_stats.http_responses[status], 1, memory_order_relaxed);
}

void stats_note_mailbox_depth(long long depth)
{
    long long cur = atomic_load_explicit(&g_stats.mailbox_depth_max, memory_order_relaxed);
    while (depth > cur &&
           !atomic_compare_exchange_weak_explicit(&g_stats.mailbox_depth_max, &cur, depth,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

long long stats_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    long long size = 0, rss = 0;
    int n = fscanf(f, "%lld %lld", &size, &rss);
    fclose(f);
    if (n != 2)
        return -1;
    return rss * sysconf(_SC_PAGESIZE);
}
