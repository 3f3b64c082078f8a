/* Unit tests: the store's writes and reads (src/store/access.c) on a real RocksDB in a temporary
 * directory, as they concern the threads that make them: a thread's commits, point reads,
 * bounded iterators and scans each leave RocksDB's thread-local perf context untouched (nothing
 * reads it, and counting into it costs every key comparison the context's TLS init function
 * and an increment). Each case runs its work on a fresh thread (the perf level is per thread,
 * and a new one starts at RocksDB's default, counting) and starts with that one path. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <rocksdb/c.h>

#include "store_fixture.h"

#define NKEYS 200

typedef enum { DO_COMMIT, DO_GET, DO_ITER, DO_SCAN, DO_GET_COUNTING } path_t;

typedef struct work {
    store_t *s;
    path_t path;
    int done;            /* keys committed, found or walked */
    uint64_t counted[4]; /* comparisons, memtable gets, seeks, nexts */
} work_t;

static void put_keys(store_t *s)
{
    store_batch_t *b = store_batch_new(s);
    char k[16];
    for (int i = 0; i < NKEYS; i++) {
        int n = snprintf(k, sizeof k, "key%05d", (i * 7919) % NKEYS);
        store_batch_put(b, CF_NODE, k, (size_t)n, "v", 1);
        if (i % 10 == 9)
            assert_int_equal(store_commit(s, b), 0);
    }
    store_batch_free(b);
}

static int walk(store_iter_t *it, bool seek)
{
    int n = 0;
    if (seek)
        store_iter_seek(it, "key", 3);
    else
        store_iter_seek_first(it);
    for (; store_iter_valid(it); store_iter_next(it))
        n++;
    store_iter_free(it);
    return n;
}

static void *one_path(void *arg)
{
    work_t *w = arg;
    rocksdb_perfcontext_t *pc = rocksdb_perfcontext_create();
    rocksdb_perfcontext_reset(pc);
    char k[16];
    switch (w->path) {
    case DO_COMMIT: {
        store_batch_t *b = store_batch_new(w->s);
        for (int i = 0; i < NKEYS; i++) {
            int n = snprintf(k, sizeof k, "new%05d", (i * 7919) % NKEYS);
            store_batch_put(b, CF_NODE, k, (size_t)n, "v", 1);
            if (i % 10 == 9 && store_commit(w->s, b) == 0)
                w->done += 10;
        }
        store_batch_free(b);
        break;
    }
    case DO_GET:
        for (int i = 0; i < NKEYS; i++) {
            int n = snprintf(k, sizeof k, "key%05d", i);
            w->done += store_exists(w->s, CF_NODE, k, (size_t)n) == 1;
        }
        break;
    case DO_ITER:
        w->done = walk(store_iter_new(w->s, CF_NODE, "key", 3, "kez", 3), true);
        break;
    case DO_SCAN:
        w->done = walk(store_iter_new_scan(w->s, CF_NODE), false);
        break;
    case DO_GET_COUNTING: /* the control: counting turned back on after the first read */
        w->done += store_exists(w->s, CF_NODE, "key00000", 8) == 1;
        rocksdb_set_perf_level(rocksdb_enable_count);
        rocksdb_perfcontext_reset(pc);
        for (int i = 0; i < NKEYS; i++) {
            int n = snprintf(k, sizeof k, "key%05d", i);
            w->done += store_exists(w->s, CF_NODE, k, (size_t)n) == 1;
        }
        break;
    }
    w->counted[0] = rocksdb_perfcontext_metric(pc, rocksdb_user_key_comparison_count);
    w->counted[1] = rocksdb_perfcontext_metric(pc, rocksdb_get_from_memtable_count);
    w->counted[2] = rocksdb_perfcontext_metric(pc, rocksdb_seek_on_memtable_count);
    w->counted[3] = rocksdb_perfcontext_metric(pc, rocksdb_next_on_memtable_count);
    rocksdb_perfcontext_destroy(pc);
    return NULL;
}

/* Runs one path on a fresh thread against the fixture's store, which holds NKEYS keys. */
static work_t run_path(void **state, path_t path)
{
    fixture_t *f = *state;
    put_keys(f->s);
    work_t w = {.s = f->s, .path = path};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, one_path, &w), 0);
    pthread_join(t, NULL);
    return w;
}

static void check_path(void **state, path_t path)
{
    work_t w = run_path(state, path);
    assert_true(w.done >= NKEYS); /* the work was done (a scan also meets the keeper's key) */
    for (int i = 0; i < 4; i++)
        assert_int_equal(w.counted[i], 0);
}

/* The control: the same reads with counting on do count (RocksDB is built with its perf
 * context), so a case above cannot pass for want of counting. */
static void point_reads_with_counting_on_count_comparisons_and_memtable_gets(void **state)
{
    work_t w = run_path(state, DO_GET_COUNTING);
    assert_int_equal(w.done, NKEYS + 1);
    assert_true(w.counted[0] > 0);
    assert_int_equal(w.counted[1], NKEYS);
}

static void a_threads_commits_count_nothing_in_the_perf_context(void **state)
{
    check_path(state, DO_COMMIT);
}

static void a_threads_point_reads_count_nothing_in_the_perf_context(void **state)
{
    check_path(state, DO_GET);
}

static void a_threads_bounded_iterators_count_nothing_in_the_perf_context(void **state)
{
    check_path(state, DO_ITER);
}

static void a_threads_scans_count_nothing_in_the_perf_context(void **state)
{
    check_path(state, DO_SCAN);
}

static int setup(void **state)
{
    return store_fixture_setup(state, "/tmp/mcpd-access-XXXXXX");
}

static int teardown(void **state)
{
    store_fixture_free(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(a_threads_commits_count_nothing_in_the_perf_context),
        T(a_threads_point_reads_count_nothing_in_the_perf_context),
        T(a_threads_bounded_iterators_count_nothing_in_the_perf_context),
        T(a_threads_scans_count_nothing_in_the_perf_context),
        T(point_reads_with_counting_on_count_comparisons_and_memtable_gets),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
