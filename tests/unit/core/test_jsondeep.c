/* Unit tests: a value's depth and its release without recursion (src/core/jsondeep.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/jsondeep.h"

/* n arrays around 0: depth n */
static json_t *nested(long n)
{
    json_t *v = json_integer(0);
    for (long i = 0; i < n; i++) {
        json_t *a = json_array();
        json_array_append_new(a, v);
        v = a;
    }
    return v;
}

static void a_scalar_has_no_level_and_a_container_one(void **state)
{
    (void)state;
    json_t *i = json_integer(1), *a = json_array(), *o = json_object();
    assert_true(json_depth_within(i, 0));
    assert_true(json_depth_within(NULL, 0));
    assert_true(json_depth_within(a, 1));
    assert_false(json_depth_within(a, 0));
    assert_true(json_depth_within(o, 1));
    assert_false(json_depth_within(o, 0));
    json_decref(i);
    json_decref(a);
    json_decref(o);
}

static void the_deepest_member_counts_wherever_it_is(void **state)
{
    (void)state;
    /* depth 4, the deep part in the last member of an object, after shallow ones */
    json_t *v = json_pack("{s:i,s:[i,i],s:{s:[[i]]}}", "a", 1, "b", 1, 2, "c", "d", 3);
    assert_true(json_depth_within(v, 4));
    assert_false(json_depth_within(v, 3));
    json_t *arr = json_pack("[[],[[]],{}]", NULL); /* depth 3 in the middle item */
    assert_true(json_depth_within(arr, 3));
    assert_false(json_depth_within(arr, 2));
    json_decref(v);
    json_decref(arr);
}

static void a_million_levels_are_measured_and_freed_without_recursion(void **state)
{
    (void)state;
    /* json_decref recursed once a level: some 250,000 overflowed an 8 MiB stack */
    for (int n = 63; n <= 130; n++) { /* around the first 64 levels kept on the C stack */
        json_t *w = nested(n);
        assert_true(json_depth_within(w, n));
        assert_false(json_depth_within(w, n - 1));
        json_decref(w);
    }
    json_t *v = nested(1000000);
    assert_false(json_depth_within(v, 50000));
    assert_true(json_depth_within(v, 1000000));
    assert_false(json_depth_within(v, 999999));
    json_t *o = json_object(); /* deep through objects too */
    json_t *inner = o;
    for (int i = 0; i < 1000000; i++) {
        json_t *next = json_object();
        json_object_set_new(inner, "k", next);
        inner = next;
    }
    json_decref_deep(v);
    json_decref_deep(o);
    json_decref_deep(NULL);
}

static void a_shared_member_outlives_the_value_it_was_in(void **state)
{
    (void)state;
    json_t *shared = json_pack("{s:[i,i]}", "x", 1, 2);
    json_t *v = json_array();
    json_array_append(v, shared);
    json_t *outer = json_pack("{s:O,s:o}", "again", shared, "v", v);
    json_decref_deep(outer);
    assert_int_equal(shared->refcount, 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(shared, "x"), 1)), 2);
    json_decref_deep(shared);
    /* a container held elsewhere is only counted down: what it holds stays */
    json_t *held = json_pack("[[i]]", 7);
    json_incref(held);
    json_decref_deep(held);
    assert_int_equal(held->refcount, 1);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(held, 0), 0)), 7);
    json_decref(held);
}

static void a_value_past_the_bound_is_dropped_and_one_within_kept(void **state)
{
    (void)state;
    json_t *within = nested(2047);
    assert_false(json_drop_if_deeper(within, 2047));
    assert_int_equal(within->refcount, 1); /* untouched: still the caller's */
    json_decref(within);
    assert_false(json_drop_if_deeper(NULL, 0));
    assert_true(json_drop_if_deeper(nested(2048), 2047));
    assert_true(json_drop_if_deeper(nested(300000), 50000)); /* freed without recursion */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_scalar_has_no_level_and_a_container_one),
        cmocka_unit_test(the_deepest_member_counts_wherever_it_is),
        cmocka_unit_test(a_million_levels_are_measured_and_freed_without_recursion),
        cmocka_unit_test(a_shared_member_outlives_the_value_it_was_in),
        cmocka_unit_test(a_value_past_the_bound_is_dropped_and_one_within_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
