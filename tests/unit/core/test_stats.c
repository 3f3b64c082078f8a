/* Unit tests: per-thread counters summed by readers (src/core/stats.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>

#include <cmocka.h>

#include "core/stats.h"

#define NTHREADS 4
#define NINC 100000

static atomic_bool writers_done;
static pthread_barrier_t all_alive;

/* Each thread waits for the others before it exits: all are alive at once, so each counts in a
 * block of its own (an exited thread's block is taken over by the next). */
static void *count_calls(void *arg)
{
    (void)arg;
    for (int i = 0; i < NINC; i++) {
        STAT_INC(tool_calls_total);
        STAT_ADD(requests_total[SM_ping], 2);
        stats_count_status(200);
    }
    stats_observe_latency(SM_ping, 1000);
    pthread_barrier_wait(&all_alive);
    return NULL;
}

static void run_threads(void *(*fn)(void *), void *arg, int n)
{
    pthread_t t[NTHREADS];
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, fn, arg), 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
}

static void *run_counters(void *arg)
{
    run_threads(count_calls, arg, NTHREADS);
    atomic_store(&writers_done, true);
    return NULL;
}

static void counts_from_several_threads_sum_exactly(void **state)
{
    (void)state;
    long long calls = STAT_GET(tool_calls_total), ping = STAT_GET(requests_total[SM_ping]);
    long long ok = STAT_GET(http_responses[200]), lat = STAT_GET(latency_count[SM_ping]);
    long long lat_sum = STAT_GET(latency_sum_us[SM_ping]);
    atomic_store(&writers_done, false);
    pthread_barrier_init(&all_alive, NULL, NTHREADS);
    pthread_t runner;
    assert_int_equal(pthread_create(&runner, NULL, run_counters, NULL), 0);
    /* a reader while they count: a counter never goes back */
    long long seen = calls;
    while (!atomic_load(&writers_done)) {
        long long now = STAT_GET(tool_calls_total);
        assert_true(now >= seen);
        seen = now;
    }
    assert_int_equal(pthread_join(runner, NULL), 0);
    pthread_barrier_destroy(&all_alive);
    assert_int_equal(STAT_GET(tool_calls_total), calls + NTHREADS * NINC);
    assert_int_equal(STAT_GET(requests_total[SM_ping]), ping + 2LL * NTHREADS * NINC);
    assert_int_equal(STAT_GET(http_responses[200]), ok + NTHREADS * NINC);
    assert_int_equal(STAT_GET(latency_count[SM_ping]), lat + NTHREADS);
    assert_int_equal(STAT_GET(latency_sum_us[SM_ping]), lat_sum + 1000LL * NTHREADS);
}

static void *gauge_up(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        STAT_INC(connections_open);
    return NULL;
}

static void *gauge_down(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        STAT_DEC(connections_open);
    return NULL;
}

static void *gauge_up_then_wait(void *arg)
{
    pthread_barrier_t *b = arg;
    STAT_ADD(connections_open, 3);
    pthread_barrier_wait(b); /* counted */
    pthread_barrier_wait(b); /* the other thread lowered it */
    return NULL;
}

static void *gauge_down_then_wait(void *arg)
{
    pthread_barrier_t *b = arg;
    pthread_barrier_wait(b);
    STAT_ADD(connections_open, -3);
    pthread_barrier_wait(b);
    return NULL;
}

static void a_gauge_up_on_one_thread_and_down_on_another_reads_zero(void **state)
{
    (void)state;
    assert_int_equal(STAT_GET(connections_open), 0);
    run_threads(gauge_up, NULL, 1);
    assert_int_equal(STAT_GET(connections_open), 5);
    run_threads(gauge_down, NULL, 1);
    assert_int_equal(STAT_GET(connections_open), 0);
    /* both threads alive: one block holds 3, the other -3 */
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, 2);
    pthread_t up, down;
    assert_int_equal(pthread_create(&up, NULL, gauge_up_then_wait, &b), 0);
    assert_int_equal(pthread_create(&down, NULL, gauge_down_then_wait, &b), 0);
    assert_int_equal(pthread_join(up, NULL), 0);
    assert_int_equal(pthread_join(down, NULL), 0);
    pthread_barrier_destroy(&b);
    assert_int_equal(STAT_GET(connections_open), 0);
    STAT_INC(connections_open);
    STAT_DEC(connections_open);
    assert_int_equal(STAT_GET(connections_open), 0);
}

static void *count_seven(void *arg)
{
    (void)arg;
    STAT_ADD(wakes_total, 7);
    return NULL;
}

static void *count_three(void *arg)
{
    (void)arg;
    STAT_ADD(wakes_total, 3);
    return NULL;
}

static void a_thread_that_exits_keeps_its_counts(void **state)
{
    (void)state;
    long long before = STAT_GET(wakes_total);
    run_threads(count_seven, NULL, 1);
    assert_int_equal(STAT_GET(wakes_total), before + 7);
    /* the next thread takes the exited one's block over and adds to it */
    run_threads(count_three, NULL, 2);
    assert_int_equal(STAT_GET(wakes_total), before + 13);
}

static void *note_depth(void *arg)
{
    stats_note_mailbox_depth(*(long long *)arg);
    return NULL;
}

static void the_deepest_mailbox_is_the_largest_of_the_threads(void **state)
{
    (void)state;
    long long d9 = 9, d5 = 5;
    stats_note_mailbox_depth(3);
    run_threads(note_depth, &d9, 1);
    run_threads(note_depth, &d5, 1);
    assert_int_equal(STAT_GET(mailbox_depth_max), 9);
    stats_note_mailbox_depth(4);
    assert_int_equal(STAT_GET(mailbox_depth_max), 9);
}

static void a_set_gauge_reads_its_value(void **state)
{
    (void)state;
    run_threads(gauge_up, NULL, 1); /* another thread's part: 5 */
    STAT_SET(connections_open, 42);
    assert_int_equal(STAT_GET(connections_open), 42);
    run_threads(gauge_down, NULL, 1);
    assert_int_equal(STAT_GET(connections_open), 37);
}

/* A gauge raised on one thread and lowered on another, in turns (the true value is 0 or 1 at
 * every moment): a reader meanwhile never sees another value. Summed per-thread parts, read at
 * different moments, showed thousands. */
#define TURNS 200000
static atomic_int turn; /* 0: the raiser's, 1: the lowerer's */
static atomic_bool turns_done;

static void *raise_in_turns(void *arg)
{
    (void)arg;
    for (int i = 0; i < TURNS; i++) {
        while (atomic_load(&turn) != 0)
            sched_yield(); /* three spinning threads on two busy cores: let the other run */
        STAT_INC(tool_jobs_waiting);
        atomic_store(&turn, 1);
    }
    return NULL;
}

static void *lower_in_turns(void *arg)
{
    (void)arg;
    for (int i = 0; i < TURNS; i++) {
        while (atomic_load(&turn) != 1)
            sched_yield();
        STAT_DEC(tool_jobs_waiting);
        atomic_store(&turn, 0);
    }
    atomic_store(&turns_done, true);
    return NULL;
}

static void a_gauge_passed_between_threads_never_reads_a_value_it_did_not_have(void **state)
{
    (void)state;
    long long base = STAT_GET(tool_jobs_waiting), lo = 0, hi = 0;
    pthread_t up, down;
    atomic_store(&turn, 0);
    atomic_store(&turns_done, false);
    assert_int_equal(pthread_create(&up, NULL, raise_in_turns, NULL), 0);
    assert_int_equal(pthread_create(&down, NULL, lower_in_turns, NULL), 0);
    while (!atomic_load(&turns_done)) {
        long long v = STAT_GET(tool_jobs_waiting) - base;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    pthread_join(up, NULL);
    pthread_join(down, NULL);
    assert_true(lo >= 0);
    assert_true(hi <= 1);
    assert_int_equal(STAT_GET(tool_jobs_waiting), base);
}

static void a_snapshot_holds_every_counter_and_gauge(void **state)
{
    (void)state;
    run_threads(count_seven, NULL, 1);
    STAT_SET(sessions_stored, 11);
    stats_t *snap = malloc(sizeof *snap);
    stats_snapshot(snap);
    assert_int_equal(atomic_load(&snap->wakes_total), STAT_GET(wakes_total));
    assert_int_equal(atomic_load(&snap->sessions_stored), 11);
    assert_int_equal(atomic_load(&snap->mailbox_depth_max), STAT_GET(mailbox_depth_max));
    free(snap);
}

/* The gauges that move with every request (modern_requests_live, streams_open_post) are kept
 * per thread, raised and lowered on one thread: each thread's own block holds its part, the
 * shared gauges never see them, and a read sums the parts. */
static pthread_barrier_t raised;
static long long own_part[NTHREADS][2]; /* what each thread's block held (checked by main) */
static void *raise_and_hold(void *arg)
{
    long n = (long)(intptr_t)arg;
    for (long i = 0; i < n; i++) {
        STAT_INC(modern_requests_live);
        STAT_INC(streams_open_post);
    }
    STAT_DEC(modern_requests_live); /* one ends */
    STAT_DEC(streams_open_post);
    own_part[n - 2][0] = atomic_load(&stats_mine()->modern_requests_live);
    own_part[n - 2][1] = atomic_load(&stats_mine()->streams_open_post);
    pthread_barrier_wait(&raised); /* all parts held at once */
    pthread_barrier_wait(&raised); /* read */
    for (long i = 0; i < n - 1; i++) {
        STAT_DEC(modern_requests_live);
        STAT_DEC(streams_open_post);
    }
    return NULL;
}

static void a_per_request_gauge_is_the_sum_of_the_threads_parts(void **state)
{
    (void)state;
    assert_false(stats_is_gauge(offsetof(stats_t, modern_requests_live)));
    assert_false(stats_is_gauge(offsetof(stats_t, streams_open_post)));
    assert_true(stats_is_gauge(offsetof(stats_t, streams_open_get)));
    long long base = STAT_GET(modern_requests_live);
    pthread_barrier_init(&raised, NULL, NTHREADS + 1);
    pthread_t t[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, raise_and_hold, (void *)(intptr_t)(i + 2)), 0);
    pthread_barrier_wait(&raised);
    /* parts 1, 2, ..., NTHREADS */
    long long live = STAT_GET(modern_requests_live) - base;
    long long shared_live = atomic_load(&g_stats_gauges.modern_requests_live);
    long long shared_post = atomic_load(&g_stats_gauges.streams_open_post);
    stats_t *snap = malloc(sizeof *snap);
    stats_snapshot(snap);
    long long snap_live = atomic_load(&snap->modern_requests_live) - base;
    long long snap_post = atomic_load(&snap->streams_open_post), post = STAT_GET(streams_open_post);
    free(snap);
    pthread_barrier_wait(&raised); /* the threads go on (and end) whatever is checked below */
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&raised);
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(own_part[i][0], i + 1);
        assert_int_equal(own_part[i][1], i + 1);
    }
    assert_int_equal(live, NTHREADS * (NTHREADS + 1) / 2);
    assert_int_equal(shared_live, 0);
    assert_int_equal(shared_post, 0);
    assert_int_equal(snap_live, NTHREADS * (NTHREADS + 1) / 2);
    assert_int_equal(snap_post, post);
    assert_int_equal(STAT_GET(modern_requests_live), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_from_several_threads_sum_exactly),
        cmocka_unit_test(a_gauge_up_on_one_thread_and_down_on_another_reads_zero),
        cmocka_unit_test(a_thread_that_exits_keeps_its_counts),
        cmocka_unit_test(the_deepest_mailbox_is_the_largest_of_the_threads),
        cmocka_unit_test(a_set_gauge_reads_its_value),
        cmocka_unit_test(a_gauge_passed_between_threads_never_reads_a_value_it_did_not_have),
        cmocka_unit_test(a_snapshot_holds_every_counter_and_gauge),
        cmocka_unit_test(a_per_request_gauge_is_the_sum_of_the_threads_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
