/* Unit tests: the store's writes and reads (src/store/access.c) on a real RocksDB in a temporary
 * directory, as they concern the threads that make them: a thread's commits, reads and scans
 * leave RocksDB's thread-local perf context untouched (nothing reads it, and counting into it
 * costs every key comparison a TLS lookup). */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <rocksdb/c.h>

#include "store_fixture.h"

typedef struct work {
    store_t *s;
    uint64_t comparisons, gets;
    int found;
} work_t;

/* On a thread of its own (the perf level is per thread, and a new one starts at RocksDB's
 * default): 200 keys committed in 20 batches, each read back, then all of them scanned. */
static void *commit_read_scan(void *arg)
{
    work_t *w = arg;
    rocksdb_perfcontext_t *pc = rocksdb_perfcontext_create();
    rocksdb_perfcontext_reset(pc);
    store_batch_t *b = store_batch_new(w->s);
    char k[16];
    for (int i = 0; i < 200; i++) {
        int n = snprintf(k, sizeof k, "key%05d", (i * 7919) % 200);
        store_batch_put(b, CF_NODE, k, (size_t)n, "v", 1);
        if (i % 10 == 9)
            store_commit(w->s, b);
    }
    for (int i = 0; i < 200; i++) {
        int n = snprintf(k, sizeof k, "key%05d", i);
        w->found += store_exists(w->s, CF_NODE, k, (size_t)n) == 1;
    }
    store_iter_t *it = store_iter_new(w->s, CF_NODE, "key", 3, "kez", 3);
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
        w->found++;
    store_iter_free(it);
    store_batch_free(b);
    w->comparisons = rocksdb_perfcontext_metric(pc, rocksdb_user_key_comparison_count);
    w->gets = rocksdb_perfcontext_metric(pc, rocksdb_get_from_memtable_count);
    rocksdb_perfcontext_destroy(pc);
    return NULL;
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

static void a_threads_commits_reads_and_scans_count_nothing_in_the_perf_context(void **state)
{
    fixture_t *f = *state;
    work_t w = {.s = f->s};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, commit_read_scan, &w), 0);
    pthread_join(t, NULL);
    assert_int_equal(w.found, 400); /* every key read back and scanned: the work was done */
    assert_int_equal(w.comparisons, 0);
    assert_int_equal(w.gets, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            a_threads_commits_reads_and_scans_count_nothing_in_the_perf_context, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
