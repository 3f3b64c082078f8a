/* Unit tests: principals and their shares of the global caps (src/core/principal.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "core/principal.h"

static void configure(int64_t sessions, int share)
{
    const int64_t caps[PR__COUNT] = {
        [PR_SESSIONS] = sessions, [PR_HANDLES] = 0, [PR_TASKS] = 0, [PR_CONNECTIONS] = 0};
    principals_configure(caps, share);
}

static void one_name_is_one_entry_and_it_goes_when_unused(void **state)
{
    configure(10, 50);
    long long before = principals_live();
    principal_t *a = principal_get("a:10.0.0.1");
    principal_t *b = principal_of('a', "10.0.0.1");
    assert_ptr_equal(a, b);
    assert_string_equal(principal_name(a), "a:10.0.0.1");
    assert_int_equal(principals_live(), before + 1);
    principal_unref(a);
    principal_unref(b);
    assert_int_equal(principals_live(), before);
}

static void a_principal_takes_its_share_and_the_cap_holds(void **state)
{
    configure(10, 50);
    assert_int_equal(principal_limit(PR_SESSIONS), 5);
    principal_t *a = principal_get("t:alice"), *b = principal_get("t:bob"),
                *c = principal_get("t:carol");
    for (int i = 0; i < 5; i++)
        assert_int_equal(principal_take(a, PR_SESSIONS), 0);
    assert_int_equal(principal_take(a, PR_SESSIONS), -EDQUOT);
    for (int i = 0; i < 5; i++)
        assert_int_equal(principal_take(b, PR_SESSIONS), 0);
    assert_int_equal(principal_take(c, PR_SESSIONS), -ENOSPC);
    assert_int_equal(principal_total(PR_SESSIONS), 10);
    principal_give(a, PR_SESSIONS);
    assert_int_equal(principal_take(c, PR_SESSIONS), 0);
    assert_int_equal(principal_held(c, PR_SESSIONS), 1);
    /* an entry holding something stays without references: the counts of stored things */
    long long live = principals_live();
    principal_unref(c);
    assert_int_equal(principals_live(), live);
    principal_add("t:carol", PR_SESSIONS, -1);
    assert_int_equal(principals_live(), live - 1);
    for (int i = 0; i < 4; i++)
        principal_give(a, PR_SESSIONS);
    for (int i = 0; i < 5; i++)
        principal_give(b, PR_SESSIONS);
    assert_int_equal(principal_total(PR_SESSIONS), 0);
    principal_unref(a);
    principal_unref(b);
}

static void no_cap_means_no_limit_and_a_share_is_at_least_one(void **state)
{
    configure(1, 50);
    assert_int_equal(principal_limit(PR_SESSIONS), 1);
    assert_int_equal(principal_limit(PR_HANDLES), 0);
    principal_t *p = principal_get("a:x");
    for (int i = 0; i < 1000; i++)
        assert_int_equal(principal_take(p, PR_HANDLES), 0);
    principal_add("a:x", PR_HANDLES, -5000); /* never below nothing */
    assert_int_equal(principal_held(p, PR_HANDLES), 0);
    assert_int_equal(principal_total(PR_HANDLES), 0);
    principal_unref(p);
    /* the same share of what is counted elsewhere (a gateway pool's processes and queue) */
    assert_int_equal(principal_share_of(2), 1);
    assert_int_equal(principal_share_of(1024), 512);
    assert_int_equal(principal_share_of(0), 0);
    configure(1, 1);
    assert_int_equal(principal_share_of(1024), 10);
    assert_int_equal(principal_share_of(2), 1);
}

static void a_gateway_pool_holds_its_share_and_a_trusted_proxy_none(void **state)
{
    configure(4, 50);
    principal_t *pool = principal_of('g', "py"), *proxy = principal_of('p', "10.0.0.9");
    assert_int_equal(principal_take(pool, PR_SESSIONS), 0);
    assert_int_equal(principal_take(pool, PR_SESSIONS), 0);
    assert_int_equal(principal_take(pool, PR_SESSIONS), -EDQUOT);
    assert_int_equal(principal_take(proxy, PR_SESSIONS), 0);
    assert_int_equal(principal_take(proxy, PR_SESSIONS), 0);
    assert_int_equal(principal_take(proxy, PR_SESSIONS), -ENOSPC); /* the cap, not a share */
    for (int i = 0; i < 2; i++) {
        principal_give(pool, PR_SESSIONS);
        principal_give(proxy, PR_SESSIONS);
    }
    principal_unref(pool);
    principal_unref(proxy);
}

#define THREADS 8
#define TRIES 2000

static void *taker(void *arg)
{
    principal_t *p = principal_get(arg);
    long got = 0;
    for (int i = 0; i < TRIES; i++)
        got += principal_take(p, PR_SESSIONS) == 0;
    principal_unref(p);
    return (void *)got;
}

static void the_cap_is_exact_under_concurrent_takes(void **state)
{
    configure(1000, 100);
    pthread_t t[THREADS];
    char names[THREADS][16];
    for (int i = 0; i < THREADS; i++) {
        snprintf(names[i], sizeof names[i], "a:%d", i);
        pthread_create(&t[i], NULL, taker, names[i]);
    }
    long total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *got;
        pthread_join(t[i], &got);
        total += (long)got;
    }
    assert_int_equal(total, 1000);
    assert_int_equal(principal_total(PR_SESSIONS), 1000);
    for (int i = 0; i < THREADS; i++) {
        principal_t *p = principal_get(names[i]);
        principal_add(names[i], PR_SESSIONS, -principal_held(p, PR_SESSIONS));
        principal_unref(p);
    }
    assert_int_equal(principal_total(PR_SESSIONS), 0);
}

/* Each round: the entry is found (or made), a second reference taken and both dropped, so it
 * goes and comes back many times while other threads hold it, find it and drop the last one. */
static void *churner(void *arg)
{
    (void)arg;
    for (int i = 0; i < TRIES * 5; i++) {
        principal_t *p = principal_get("a:churn");
        principal_t *q = principal_ref(p);
        if (i % 7 == 0 && principal_take(p, PR_HANDLES) == 0)
            principal_give(q, PR_HANDLES);
        principal_unref(p);
        assert_string_equal(principal_name(q), "a:churn"); /* q still holds it */
        principal_unref(q);
    }
    return NULL;
}

static void references_from_many_threads_keep_one_entry_and_free_it_at_the_last(void **state)
{
    configure(0, 100);
    long before = principals_live();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churner, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(principals_live(), before); /* none left behind, none freed twice (ASan) */
    assert_int_equal(principal_total(PR_HANDLES), 0);
}

typedef struct {
    principal_t *p;
    pthread_barrier_t *go;
} upto_arg_t;

static void *upto_taker(void *arg)
{
    upto_arg_t *u = arg;
    long got = 0;
    pthread_barrier_wait(u->go);
    for (int i = 0; i < TRIES; i++)
        got += principal_take_upto(u->p, PR_OPEN, 16) == 0;
    return (void *)got;
}

/* The bound an address's open connections get (twice its share, http/conn.c): the check and the
 * take are one step, so threads taking at once never pass it together. */
static void a_bound_taken_from_many_threads_at_once_is_exact(void **state)
{
    configure(1000, 100);
    principal_t *p = principal_get("a:10.9.9.9");
    assert_int_equal(principal_take_upto(p, PR_OPEN, 0), 0); /* 0: no bound of its own */
    principal_give(p, PR_OPEN);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, THREADS);
    pthread_t t[THREADS];
    upto_arg_t arg = {p, &go};
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, upto_taker, &arg);
    long total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *got;
        pthread_join(t[i], &got);
        total += (long)got;
    }
    pthread_barrier_destroy(&go);
    assert_int_equal(total, 16);
    assert_int_equal(principal_held(p, PR_OPEN), 16);
    assert_int_equal(principal_take_upto(p, PR_OPEN, 16), -EDQUOT);
    assert_int_equal(principal_take_upto(p, PR_OPEN, 17), 0); /* a higher bound: one more */
    for (int i = 0; i < 17; i++)
        principal_give(p, PR_OPEN);
    assert_int_equal(principal_held(p, PR_OPEN), 0);
    principal_unref(p);
}

static void addresses_count_ipv4_as_is_and_ipv6_by_its_64(void **state)
{
    char out[64];
    assert_int_equal(principal_address("10.0.0.1", out, sizeof out), 0);
    assert_string_equal(out, "10.0.0.1");
    assert_int_equal(principal_address("2001:db8:1:2:aaaa:bbbb:cccc:dddd", out, sizeof out), 0);
    assert_string_equal(out, "2001:db8:1:2::/64");
    assert_int_equal(principal_address("::ffff:192.0.2.7", out, sizeof out), 0);
    assert_string_equal(out, "192.0.2.7");
    assert_int_equal(principal_address("example.com", out, sizeof out), -1);
    assert_int_equal(principal_address("10.0.0.1/8", out, sizeof out), -1);
    assert_int_equal(principal_address(NULL, out, sizeof out), -1);
}

static void the_forwarded_client_is_the_last_entry_the_proxy_appended(void **state)
{
    char out[64];
    assert_int_equal(principal_forwarded("10.0.0.1", out, sizeof out), 0);
    assert_string_equal(out, "10.0.0.1");
    /* a client's own (forged) entries come first; the proxy's is the last */
    assert_int_equal(principal_forwarded("6.6.6.6, 10.0.0.9 ,  10.0.0.2  ", out, sizeof out), 0);
    assert_string_equal(out, "10.0.0.2");
    assert_int_equal(principal_forwarded("10.0.0.1, 2001:db8::1", out, sizeof out), 0);
    assert_string_equal(out, "2001:db8::/64");
    assert_int_equal(principal_forwarded("10.0.0.1, unknown", out, sizeof out), -1);
    assert_int_equal(principal_forwarded("10.0.0.1 10.0.0.2", out, sizeof out), -1);
    assert_int_equal(principal_forwarded("", out, sizeof out), -1);
    assert_int_equal(principal_forwarded("10.0.0.1,", out, sizeof out), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_name_is_one_entry_and_it_goes_when_unused),
        cmocka_unit_test(a_principal_takes_its_share_and_the_cap_holds),
        cmocka_unit_test(references_from_many_threads_keep_one_entry_and_free_it_at_the_last),
        cmocka_unit_test(no_cap_means_no_limit_and_a_share_is_at_least_one),
        cmocka_unit_test(a_gateway_pool_holds_its_share_and_a_trusted_proxy_none),
        cmocka_unit_test(the_cap_is_exact_under_concurrent_takes),
        cmocka_unit_test(a_bound_taken_from_many_threads_at_once_is_exact),
        cmocka_unit_test(addresses_count_ipv4_as_is_and_ipv6_by_its_64),
        cmocka_unit_test(the_forwarded_client_is_the_last_entry_the_proxy_appended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
