/* Unit tests: the compact JSON writer gives exactly json_dumps' text (src/mcp/jsondump.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/jsondump.h"
#include "core/jsonparse.h"

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
    const double vals[] = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.1,
                           1.5,
                           3.0,
                           1e20,
                           1e21,
                           1e-7,
                           1.25e-300,
                           -2.5e+300,
                           123456789012345680000.0,
                           0.30000000000000004,
                           1e5,
                           7e-5};
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

/* [[...[1]...]], depth arrays deep */
static json_t *nested_arrays(int depth)
{
    json_t *v = json_integer(1);
    for (int i = 0; i < depth; i++) {
        json_t *a = json_array();
        json_array_append_new(a, v);
        v = a;
    }
    return v;
}

static void deep_nesting_falls_back_but_still_matches(void **state)
{
    json_t *v = nested_arrays(3000);
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t len;
    char *got = json_dump_compact(v, &len);
    if (want) /* jansson has its own depth limit; when it writes, we write the same */
        assert_string_equal(got, want);
    free(want);
    free(got);
    json_decref(v);
}

/* jobj_*: the same members set on a jansson object dump to the same text */
static void assert_jobj_is(buf_t *b, json_t *want_obj)
{
    char *want = json_dumps(want_obj, JSON_COMPACT);
    assert_non_null(want);
    assert_int_equal(b->len, strlen(want));
    assert_memory_equal(b->p, want, b->len);
    free(want);
    json_decref(want_obj);
    buf_free(b);
}

static void an_object_written_member_by_member_is_what_jansson_dumps(void **state)
{
    json_t *caps = json_pack("{s:{s:b},s:[i,s,n]}", "roots", "listChanged", 1, "x", 1, "y");
    buf_t b = {0};
    jobj_t o;
    jobj_begin(&o, &b);
    jobj_str(&o, "v", "2025-06-18");
    jobj_json(&o, "cc", caps);
    jobj_json(&o, "ci", json_null());
    jobj_int(&o, "c", 1733472000123LL);
    jobj_int(&o, "neg", -42);
    jobj_int(&o, "min", INT64_MIN);
    jobj_bool(&o, "i", true);
    jobj_bool(&o, "u", false);
    jobj_str(&o, "a", "h\xc3\xa9 \"quoted\" \\ \n");
    jobj_str(&o, "k\"ey", "r");
    jobj_end(&o);

    json_t *m = json_object();
    json_object_set_new(m, "v", json_string("2025-06-18"));
    json_object_set(m, "cc", caps);
    json_object_set(m, "ci", json_null());
    json_object_set_new(m, "c", json_integer(1733472000123LL));
    json_object_set_new(m, "neg", json_integer(-42));
    json_object_set_new(m, "min", json_integer(INT64_MIN));
    json_object_set_new(m, "i", json_true());
    json_object_set_new(m, "u", json_false());
    json_object_set_new(m, "a", json_string("h\xc3\xa9 \"quoted\" \\ \n"));
    json_object_set_new(m, "k\"ey", json_string("r"));
    assert_jobj_is(&b, m);
    json_decref(caps);
}

static void members_jansson_would_refuse_are_left_out_as_it_leaves_them(void **state)
{
    buf_t b = {0};
    jobj_t o;
    jobj_begin(&o, &b);
    jobj_str(&o, "null", NULL);
    jobj_str(&o, "bad", "not utf-8: \xff\xfe");
    jobj_str(&o, "cut", "a cut sequence \xc3");
    jobj_json(&o, "none", NULL);
    jobj_str(&o, "ok", "\xe2\x82\xac");
    jobj_end(&o);

    json_t *m = json_object();
    /* what json_object_set_new(m, k, json_string(s)) does with these: the member is absent */
    assert_int_equal(json_object_set_new(m, "null", json_string(NULL)), -1);
    assert_int_equal(json_object_set_new(m, "bad", json_string("not utf-8: \xff\xfe")), -1);
    assert_int_equal(json_object_set_new(m, "cut", json_string("a cut sequence \xc3")), -1);
    json_object_set_new(m, "ok", json_string("\xe2\x82\xac"));
    assert_jobj_is(&b, m);

    buf_t e = {0};
    jobj_begin(&o, &e);
    jobj_str(&o, "only", NULL);
    jobj_end(&o);
    assert_jobj_is(&e, json_object());
}

static void a_member_too_deep_for_us_is_jansson_s_text(void **state)
{
    json_t *v = nested_arrays(2100);
    buf_t b = {0};
    jobj_t o;
    jobj_begin(&o, &b);
    jobj_int(&o, "before", 1);
    jobj_json(&o, "deep", v);
    jobj_int(&o, "after", 2);
    jobj_end(&o);
    json_t *m = json_object();
    json_object_set_new(m, "before", json_integer(1));
    json_object_set(m, "deep", v);
    json_object_set_new(m, "after", json_integer(2));
    assert_jobj_is(&b, m);
    json_decref(v);
}

/* The text of [[...[1]...]], depth arrays deep, built without a recursion. */
static char *nested_text(int depth)
{
    char *t = malloc((size_t)depth * 2 + 2);
    memset(t, '[', (size_t)depth);
    t[depth] = '1';
    memset(t + depth + 1, ']', (size_t)depth);
    t[depth * 2 + 1] = '\0';
    return t;
}

static void a_value_too_deep_for_jansson_s_recursion_is_written_whole(void **state)
{
    /* jansson's json_dumps overflowed the stack some 25,000 levels down (a handler's result
     * took the server with it); json_decref still frees this depth */
    enum { DEPTH = 60000 };
    json_t *v = nested_arrays(DEPTH);
    char *want = nested_text(DEPTH);
    buf_t b = {0};
    buf_adds(&b, "x");
    json_dump_whole_into(&b, v);
    assert_int_equal(b.len, strlen(want) + 1);
    assert_memory_equal(b.p + 1, want, strlen(want));
    size_t len;
    char *got = json_dump_compact(v, &len);
    assert_int_equal(len, strlen(want));
    assert_string_equal(got, want);
    free(got);
    free(want);
    buf_free(&b);
    json_decref(v);
}

static void a_deep_value_is_the_same_text_as_a_shallow_one(void **state)
{
    /* every kind of member past 2048 levels, as jansson writes them where it can */
    json_t *inner = json_pack("{s:[i,f,s,n,b,{}],s:{s:[]},s:s}", "a", 1, 2.5, "x\"\n", 1, "o", "e",
                              "k\u00e9", "v");
    json_t *v = json_pack("[o,{s:o}]", inner, "deep", nested_arrays(2100));
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(want);
    buf_t b = {0};
    json_dump_whole_into(&b, v);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.p, want, b.len);
    free(want);
    buf_free(&b);

    /* a string jansson would refuse (_nocheck, not UTF-8) is written as dump writes it: the
     * fallback to jansson's text aborted the server (REQUIRE) */
    json_t *bad = json_pack("[o,o]", json_stringn_nocheck("caf\xc3", 4), nested_arrays(2100));
    buf_t c = {0};
    json_dump_whole_into(&c, bad);
    assert_true(c.len > 4200);
    assert_memory_equal(c.p, "[\"caf\xc3\",[[[", 11);
    buf_free(&c);
    json_decref(bad);
    json_decref(v);
}

static void only_what_the_reader_reads_back_is_storable(void **state)
{
    (void)state;
    size_t len;
    json_t *v = json_pack("{s:[i,s]}", "a", 1, "caf\xc3\xa9");
    char *t = json_dump_storable(v, &len);
    assert_non_null(t);
    assert_string_equal(t, "{\"a\":[1,\"caf\xc3\xa9\"]}");
    assert_int_equal(len, strlen(t));
    free(t);
    json_decref(v);
    v = nested_arrays(2047); /* 2048 values deep, the innermost 1 included */
    t = json_dump_storable(v, &len);
    assert_non_null(t); /* the reader's own bound: it reads it back */
    json_t *back = json_parse_buf(t, len, NULL, 0, NULL);
    assert_non_null(back);
    assert_true(json_equal(back, v));
    json_decref(back);
    free(t);
    json_decref(v);
    v = nested_arrays(2048);
    assert_null(json_dump_storable(v, NULL));
    json_decref(v);
    v = json_pack("[o]", json_stringn_nocheck("caf\xc3", 4)); /* cut inside a character */
    assert_null(json_dump_storable(v, NULL));
    json_decref(v);
}

/* What json_dump_storable writes, the reader reads back as the same value: a key with a NUL in
 * it (json_object_setn takes one) the reader refuses, so the value is not storable; objects
 * count their levels as arrays do. */
static void a_storable_text_reads_back_keys_and_objects_included(void **state)
{
    (void)state;
    json_t *v = json_object();
    json_object_setn_new(v, "a\0b", 3, json_integer(1));
    size_t len;
    char *t = json_dump_storable(v, &len);
    json_t *back = t ? json_parse_buf(t, len, NULL, 0, NULL) : NULL;
    assert_true(t == NULL || (back && json_equal(back, v))); /* never stored unreadable */
    assert_null(t);
    json_decref(back);
    free(t);
    json_decref(v);
    v = json_pack("[s]", "a\0b"); /* a NUL in a string value reads back: stored */
    json_array_set_new(v, 0, json_stringn("a\0b", 3));
    t = json_dump_storable(v, &len);
    assert_non_null(t);
    back = json_parse_buf(t, len, NULL, 0, NULL);
    assert_true(back && json_equal(back, v));
    json_decref(back);
    free(t);
    json_decref(v);
    for (int n = 2046; n <= 2049; n++) { /* n objects, the innermost holding 1 */
        v = json_integer(1);
        for (int i = 0; i < n; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "k", v);
            v = o;
        }
        t = json_dump_storable(v, &len);
        back = json_parse_buf(t ? t : "", t ? len : 0, NULL, 0, NULL);
        assert_int_equal(t != NULL, n + 1 <= 2048);
        assert_int_equal(back != NULL, n + 1 <= 2048);
        json_decref(back);
        free(t);
        json_decref(v);
    }
}

/* A value kept inside a stored text (a task's input requests, level 3 of its metadata) reads
 * back only when it fits the reader's 2048 levels from there. */
static void a_value_stored_inside_another_counts_the_levels_above_it(void **state)
{
    (void)state;
    json_t *v = nested_arrays(2045); /* 2046 values deep: levels 3..2048 */
    assert_true(json_storable_at(v, 3));
    json_decref(v);
    v = nested_arrays(2046);
    assert_false(json_storable_at(v, 3));
    assert_true(json_storable_at(v, 1));
    json_decref(v);
    v = json_object();
    json_object_setn_new(v, "a\0b", 3, json_null());
    assert_false(json_storable_at(v, 3));
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
        cmocka_unit_test(an_object_written_member_by_member_is_what_jansson_dumps),
        cmocka_unit_test(members_jansson_would_refuse_are_left_out_as_it_leaves_them),
        cmocka_unit_test(a_member_too_deep_for_us_is_jansson_s_text),
        cmocka_unit_test(a_value_too_deep_for_jansson_s_recursion_is_written_whole),
        cmocka_unit_test(a_deep_value_is_the_same_text_as_a_shallow_one),
        cmocka_unit_test(only_what_the_reader_reads_back_is_storable),
        cmocka_unit_test(a_storable_text_reads_back_keys_and_objects_included),
        cmocka_unit_test(a_value_stored_inside_another_counts_the_levels_above_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
