/* Unit tests: a worker's mailbox counts (src/actor/mbox.c): each session's count is its own,
 * also for sessions of one bucket; the limit is a session's; a session's entry is gone once its
 * count is back to 0; threads counting sessions of one bucket in and out at once (and one
 * session from several threads) keep the counts exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "actor/mbox.h"
#include "core/util.h"

/* Fills ids[0..n) with distinct session ids (lowercase hex) that share one bucket. */
static unsigned same_bucket(const mbox_t *mb, char ids[][SESSION_ID_LEN + 1], int n)
{
    unsigned want = 0;
    int got = 0;
    for (unsigned long k = 0; got < n; k++) {
        char id[SESSION_ID_LEN + 1];
        snprintf(id, sizeof id, "%032lx", k * 2654435761UL + 17);
        if (got == 0)
            want = mbox_bucket(mb, id);
        if (mbox_bucket(mb, id) == want)
            memcpy(ids[got++], id, sizeof id);
    }
    return want;
}

/* Each table hashes with a seed of its own: a client cannot know which ids share a bucket (a
 * list every count walks); the environment's seed makes one for tests. */
static void test_the_bucket_of_an_id_is_the_tables_own(void **state)
{
    (void)state;
    mbox_t *one = mbox_new(), *two = mbox_new();
    char ids[64][SESSION_ID_LEN + 1];
    same_bucket(one, ids, 64);
    unsigned first = mbox_bucket(two, ids[0]);
    int same = 0;
    for (int i = 1; i < 64; i++)
        same += mbox_bucket(two, ids[i]) == first;
    assert_true(same < 8); /* 63 ids of one bucket in one table: ~0.06 share one in another */
    mbox_free(one);
    mbox_free(two);
    setenv("MCPD_MBOX_SEED", "0123456789abcdef", 1);
    one = mbox_new();
    two = mbox_new();
    for (int i = 0; i < 64; i++)
        assert_int_equal(mbox_bucket(one, ids[i]), mbox_bucket(two, ids[i]));
    assert_int_equal(mbox_bucket(one, ids[0]),
                     (unsigned)(hash_id_seeded(ids[0], SESSION_ID_LEN, 0x0123456789abcdefULL) >>
                                40) %
                         MBOX_BUCKETS);
    unsetenv("MCPD_MBOX_SEED");
    mbox_free(one);
    mbox_free(two);
}

static void test_sessions_of_one_bucket_count_apart(void **state)
{
    (void)state;
    mbox_t *mb = mbox_new();
    char ids[3][SESSION_ID_LEN + 1];
    unsigned b = same_bucket(mb, ids, 3);
    /* the first session fills its limit: its next request is refused, the others' are not */
    assert_int_equal(mbox_add(mb, b, ids[0], 2), 1);
    assert_int_equal(mbox_add(mb, b, ids[0], 2), 2);
    assert_int_equal(mbox_add(mb, b, ids[0], 2), 0);
    assert_int_equal(mbox_add(mb, b, ids[1], 2), 1);
    assert_int_equal(mbox_add(mb, b, ids[2], 2), 1);
    assert_int_equal(mbox_add(mb, b, ids[2], 2), 2);
    assert_int_equal(mbox_add(mb, b, ids[2], 2), 0);
    assert_int_equal(mbox_count(mb, ids[0]), 2);
    assert_int_equal(mbox_count(mb, ids[1]), 1);
    assert_int_equal(mbox_count(mb, ids[2]), 2);
    assert_int_equal(mbox_sessions(mb), 3);
    /* the one kept in place drains first: the others keep their counts, and a session counted
     * again then takes the place without a second entry of a listed one */
    mbox_done(mb, b, ids[0]);
    mbox_done(mb, b, ids[0]);
    assert_int_equal(mbox_count(mb, ids[0]), 0);
    assert_int_equal(mbox_sessions(mb), 2);
    assert_int_equal(mbox_add(mb, b, ids[2], 2), 0); /* still listed, still full */
    assert_int_equal(mbox_add(mb, b, ids[0], 1), 1);
    assert_int_equal(mbox_sessions(mb), 3);
    mbox_done(mb, b, ids[1]);
    mbox_done(mb, b, ids[2]);
    assert_int_equal(mbox_add(mb, b, ids[2], 2), 2);
    mbox_done(mb, b, ids[2]);
    mbox_done(mb, b, ids[2]);
    mbox_done(mb, b, ids[0]);
    assert_int_equal(mbox_sessions(mb), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(mbox_count(mb, ids[i]), 0);
    mbox_free(mb);
}

static void test_a_full_table_frees_its_entries(void **state)
{
    (void)state;
    mbox_t *mb = mbox_new();
    char ids[8][SESSION_ID_LEN + 1];
    unsigned b = same_bucket(mb, ids, 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(mbox_add(mb, b, ids[i], 1), 1);
    /* freed with the table while counted: no leak (ASan) */
    mbox_free(mb);
}

#define THREADS 4
#define ROUNDS 20000

typedef struct {
    mbox_t *mb;
    unsigned b;
    const char *sid;
    int limit;
    atomic_int *in; /* the requests of sid counted in now, all threads */
    atomic_int refused, over;
} arg_t;

static void *churn(void *p)
{
    arg_t *a = p;
    for (int i = 0; i < ROUNDS; i++) {
        int n = mbox_add(a->mb, a->b, a->sid, a->limit);
        if (n == 0) {
            atomic_fetch_add(&a->refused, 1);
            continue;
        }
        if (atomic_fetch_add(a->in, 1) + 1 > a->limit || n > a->limit)
            atomic_fetch_add(&a->over, 1);
        atomic_fetch_sub(a->in, 1);
        mbox_done(a->mb, a->b, a->sid);
    }
    return NULL;
}

/* Each thread its own session, all of one bucket, limit 1: none is ever refused. */
static void test_threads_on_sessions_of_one_bucket(void **state)
{
    (void)state;
    mbox_t *mb = mbox_new();
    char ids[THREADS][SESSION_ID_LEN + 1];
    unsigned b = same_bucket(mb, ids, THREADS);
    atomic_int in[THREADS];
    arg_t a[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        atomic_init(&in[i], 0);
        a[i] = (arg_t){.mb = mb, .b = b, .sid = ids[i], .limit = 1, .in = &in[i]};
        assert_int_equal(pthread_create(&t[i], NULL, churn, &a[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&a[i].refused), 0);
        assert_int_equal(atomic_load(&a[i].over), 0);
    }
    assert_int_equal(mbox_sessions(mb), 0);
    mbox_free(mb);
}

/* All threads on one session, limit 2, with another session of its bucket listed: the count
 * never passes 2 and it ends at 0. */
static void test_threads_on_one_session(void **state)
{
    (void)state;
    mbox_t *mb = mbox_new();
    char ids[2][SESSION_ID_LEN + 1];
    unsigned b = same_bucket(mb, ids, 2);
    assert_int_equal(mbox_add(mb, b, ids[1], 1), 1);
    atomic_int in;
    atomic_init(&in, 0);
    arg_t a[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i] = (arg_t){.mb = mb, .b = b, .sid = ids[0], .limit = 2, .in = &in};
        assert_int_equal(pthread_create(&t[i], NULL, churn, &a[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&a[i].over), 0);
    }
    assert_int_equal(mbox_count(mb, ids[0]), 0);
    assert_int_equal(mbox_count(mb, ids[1]), 1);
    mbox_done(mb, b, ids[1]);
    assert_int_equal(mbox_sessions(mb), 0);
    mbox_free(mb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_bucket_of_an_id_is_the_tables_own),
        cmocka_unit_test(test_sessions_of_one_bucket_count_apart),
        cmocka_unit_test(test_a_full_table_frees_its_entries),
        cmocka_unit_test(test_threads_on_sessions_of_one_bucket),
        cmocka_unit_test(test_threads_on_one_session),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
