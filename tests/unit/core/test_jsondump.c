/* Unit tests: the compact JSON writer gives exactly json_dumps' text (src/mcp/jsondump.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/jsondump.h"

static void assert_same_as_jansson(json_t *v)
{
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len;
    char *got = json_dump_compact(v, &len);
    assert_non_null(want);
    assert_string_equal(got, want);
    assert_int_equal(len, strlen(want));
    free(want);
    free(got);
    json_decref(v);
}

static void scalars_match_jansson(void **state)
{
    assert_same_as_jansson(json_null());
    assert_same_as_jansson(json_true());
    assert_same_as_jansson(json_false());
    assert_same_as_jansson(json_integer(0));
    assert_same_as_jansson(json_integer(-1));
    assert_same_as_jansson(json_integer(INT64_MAX));
    assert_same_as_jansson(json_integer(INT64_MIN));
    assert_same_as_jansson(json_integer(1234567890123LL));
}

static void reals_match_jansson(void **state)
{
    const double vals[] = {0.0, -0.0, 1.0, -1.0, 0.1, 1.5, 3.0, 1e20, 1e21, 1e-7, 1.25e-300,
                           -2.5e+300, 123456789012345680000.0, 0.30000000000000004, 1e5, 7e-5};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        assert_same_as_jansson(json_real(vals[i]));
}

static void strings_with_escapes_match_jansson(void **state)
{
    assert_same_as_jansson(json_string(""));
    assert_same_as_jansson(json_string("plain text"));
    assert_same_as_jansson(json_string("quote \" backslash \\ slash /"));
    assert_same_as_jansson(json_string("\b\f\n\r\t\x01\x1f\x7f"));
    assert_same_as_jansson(json_string("h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80"));
    assert_same_as_jansson(json_stringn("nul\0inside", 10));
}

static void nested_objects_keep_insertion_order(void **state)
{
    json_t *o = json_object();
    json_object_set_new(o, "zeta", json_integer(1));
    json_object_set_new(o, "alpha", json_pack("{s:[i,s,n,{}],s:{}}", "x", 1, "two", "e", "f"));
    json_object_set_new(o, "mid", json_array());
    json_object_set_new(o, "k\"ey", json_string("v"));
    assert_same_as_jansson(o);
    assert_same_as_jansson(json_pack("{s:s,s:i,s:{s:[{s:s,s:s}]}}", "jsonrpc", "2.0", "id", 7,
                                     "result", "content", "type", "text", "text", "hi"));
}

static void deep_nesting_falls_back_but_still_matches(void **state)
{
    json_t *v = json_integer(1);
    for (int i = 0; i < 3000; i++) {
        json_t *a = json_array();
        json_array_append_new(a, v);
        v = a;
    }
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len;
    char *got = json_dump_compact(v, &len);
    if (want) /* jansson has its own depth limit; when it writes, we write the same */
        assert_string_equal(got, want);
    free(want);
    free(got);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scalars_match_jansson),
        cmocka_unit_test(reals_match_jansson),
        cmocka_unit_test(strings_with_escapes_match_jansson),
        cmocka_unit_test(nested_objects_keep_insertion_order),
        cmocka_unit_test(deep_nesting_falls_back_but_still_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
