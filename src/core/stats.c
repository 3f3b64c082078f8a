/* Threads: any thread; each writes only its own block, readers sum them (core/stats.h). */
/* Process-wide counters, one block per thread. */
#include "core/stats.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

/* 128, not 64: the next block is then not in the pair of lines some CPUs prefetch together. */
#define STATS_ALIGN 128

typedef struct block {
    struct block *next;      /* the list of all blocks: set before the block is published */
    struct block *free_next; /* under S.mu, while no thread owns the block */
    alignas(STATS_ALIGN) stats_t s;
} block_t;

static struct {
    pthread_mutex_t mu;      /* the free list and publishing */
    _Atomic(block_t *) head; /* every block ever made; readers walk it without the lock */
    block_t *free;           /* blocks of threads that exited, counts kept */
    pthread_key_t key;       /* its destructor gives an exiting thread's block back */
    pthread_once_t once;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT};

int64_t g_stats_started_ms;
_Thread_local stats_t *stats_tls;
stats_t g_stats_gauges;

const double stats_latency_bounds[STATS_LATENCY_BUCKETS] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025,   0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   10.0,
};

/* (A thread-key destructor that ran after this one and counted would attach a block again;
 * glibc reruns destructors a few rounds, and past them the block stays off the free list, its
 * counts kept. None counts today.) */
static void give_back(void *arg)
{
    block_t *b = arg;
    stats_tls = NULL;
    pthread_mutex_lock(&S.mu);
    b->free_next = S.free;
    S.free = b;
    pthread_mutex_unlock(&S.mu);
}

static void make_key(void)
{
    REQUIRE(pthread_key_create(&S.key, give_back) == 0);
}

stats_t *stats_attach(void)
{
    pthread_once(&S.once, make_key);
    pthread_mutex_lock(&S.mu);
    block_t *b = S.free;
    if (b) {
        S.free = b->free_next; /* the lock orders its last owner's stores before ours */
    } else {
        b = aligned_alloc(STATS_ALIGN, sizeof *b);
        REQUIRE(b);
        memset(b, 0, sizeof *b);
        b->next = atomic_load_explicit(&S.head, memory_order_relaxed);
        atomic_store_explicit(&S.head, b, memory_order_release);
    }
    pthread_mutex_unlock(&S.mu);
    REQUIRE(pthread_setspecific(S.key, b) == 0);
    stats_tls = &b->s;
    return stats_tls;
}

long long stats_read(size_t off)
{
    if (stats_is_gauge(off))
        return atomic_load_explicit(stats_field(&g_stats_gauges, off), memory_order_relaxed);
    long long v = 0;
    for (block_t *b = atomic_load_explicit(&S.head, memory_order_acquire); b; b = b->next)
        v += atomic_load_explicit(stats_field(&b->s, off), memory_order_relaxed);
    return v;
}

void stats_set(size_t off, long long v)
{
    REQUIRE(stats_is_gauge(off));
    atomic_store_explicit(stats_field(&g_stats_gauges, off), v, memory_order_relaxed);
}

void stats_snapshot(stats_t *out)
{
    memset(out, 0, sizeof *out);
    size_t n = sizeof *out / sizeof(atomic_llong);
    for (block_t *b = atomic_load_explicit(&S.head, memory_order_acquire); b; b = b->next)
        for (size_t i = 0; i < n; i++) {
            size_t off = i * sizeof(atomic_llong);
            long long x = atomic_load_explicit(stats_field(&b->s, off), memory_order_relaxed);
            if (x)
                stats_bump(stats_field(out, off), x);
        }
    for (size_t i = 0; i < n; i++) {
        size_t off = i * sizeof(atomic_llong);
        if (stats_is_gauge(off))
            atomic_store_explicit(stats_field(out, off),
                                  atomic_load_explicit(stats_field(&g_stats_gauges, off),
                                                       memory_order_relaxed),
                                  memory_order_relaxed);
    }
}

void stats_observe_latency(stats_method_t m, long long us)
{
    double secs = (double)us / 1e6;
    int b = 0;
    while (b < STATS_LATENCY_BUCKETS && secs > stats_latency_bounds[b])
        b++;
    stats_t *s = stats_mine();
    stats_bump(&s->latency_buckets[m][b], 1);
    stats_bump(&s->latency_sum_us[m], us);
    stats_bump(&s->latency_count[m], 1);
}

void stats_count_status(int status)
{
    if (status >= 100 && status < 600)
        STAT_INC(http_responses[status]);
}

void stats_note_mailbox_depth(long long depth)
{
    atomic_llong *c = &g_stats_gauges.mailbox_depth_max; /* a gauge: shared, a max */
    long long cur = atomic_load_explicit(c, memory_order_relaxed);
    while (depth > cur &&
           !atomic_compare_exchange_weak_explicit(c, &cur, depth, memory_order_relaxed,
                                                  memory_order_relaxed)) {
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
