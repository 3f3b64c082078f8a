/* Unit tests: sharing equal JSON values (src/core/jshare.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/jshare.h"

static json_t *caps(int n)
{
    return json_pack("{s:{s:b}, s:i}", "roots", "listChanged", 1, "n", n);
}

static void an_equal_value_gets_the_remembered_one(void **state)
{
    (void)state;
    jshare_t s = {0};
    json_t *a = caps(1), *b = caps(1);
    json_t *ra = jshare_get(&s, a), *rb = jshare_get(&s, b);
    assert_ptr_equal(ra, a); /* the first is remembered as given */
    assert_ptr_equal(rb, a); /* an equal one from elsewhere shares it */
    json_decref(b);          /* its own copy can go */
    assert_int_equal(a->refcount, 4); /* a itself, ra, rb, the remembered reference */
    json_decref(ra);
    json_decref(rb);
    json_decref(a);
    jshare_clear(&s);
    assert_null(jshare_get(&s, NULL));
}

static void different_values_stay_apart_and_the_oldest_is_forgotten(void **state)
{
    (void)state;
    jshare_t s = {0};
    json_t *held[JSHARE_SLOTS + 1];
    for (int i = 0; i <= JSHARE_SLOTS; i++) {
        json_t *v = caps(i);
        held[i] = jshare_get(&s, v);
        assert_ptr_equal(held[i], v); /* nothing equal yet: v itself */
        json_decref(v);
    }
    /* the first was pushed out by the ninth: an equal value is now remembered anew */
    json_t *again = caps(0);
    json_t *r = jshare_get(&s, again);
    assert_ptr_equal(r, again);
    assert_ptr_not_equal(r, held[0]);
    assert_true(json_equal(r, held[0]));
    json_decref(r);
    json_decref(again);
    /* the last ones are still shared */
    json_t *last = caps(JSHARE_SLOTS);
    r = jshare_get(&s, last);
    assert_ptr_equal(r, held[JSHARE_SLOTS]);
    json_decref(r);
    json_decref(last);
    for (int i = 0; i <= JSHARE_SLOTS; i++)
        json_decref(held[i]); /* what sessions held outlives the cache and vice versa */
    jshare_clear(&s);
}

static void a_large_value_is_not_shared(void **state)
{
    (void)state;
    jshare_t s = {0};
    json_t *big = json_object(), *big2 = json_object();
    for (int i = 0; i < JSHARE_MAX_NODES; i++) { /* the object itself and 256 members */
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        json_object_set_new(big, k, json_integer(i));
        json_object_set_new(big2, k, json_integer(i));
    }
    json_t *r = jshare_get(&s, big), *r2 = jshare_get(&s, big2);
    assert_ptr_equal(r, big);
    assert_ptr_equal(r2, big2); /* equal, but not compared: each keeps its own */
    assert_int_equal(big->refcount, 2); /* nothing remembered it */
    json_decref(r);
    json_decref(r2);
    /* one member fewer fits: shared */
    json_object_del(big, "k0");
    json_object_del(big2, "k0");
    r = jshare_get(&s, big);
    r2 = jshare_get(&s, big2);
    assert_ptr_equal(r2, big);
    json_decref(r);
    json_decref(r2);
    json_decref(big);
    json_decref(big2);
    jshare_clear(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_equal_value_gets_the_remembered_one),
        cmocka_unit_test(different_values_stay_apart_and_the_oldest_is_forgotten),
        cmocka_unit_test(a_large_value_is_not_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
