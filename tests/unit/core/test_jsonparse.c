/* Unit tests: the buffer JSON parser accepts and builds what json_loadb does, and refuses what
 * it refuses (src/core/jsonparse.c), but for an integer literal beyond the 64-bit range, which
 * it reads as a real. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/jsonparse.h"

static void agrees_with_jansson(const char *text, size_t len)
{
    json_error_t e;
    json_t *want = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    char err[160];
    size_t pos = 0;
    json_t *got = json_parse_buf(text, len, err, sizeof err, &pos);
    if (!want) {
        if (got)
            fail_msg("jansson refuses [%.*s] (%s) but we accept it", (int)len, text, e.text);
        assert_true(err[0] != '\0');
        assert_true(pos <= len);
        return;
    }
    if (!got)
        fail_msg("jansson accepts [%.*s] but we refuse it: %s", (int)len, text, err);
    assert_true(json_equal(want, got));
    /* types must match too (json_equal says 1 == 1.0 is false already, keep it explicit) */
    assert_int_equal(json_typeof(want), json_typeof(got));
    json_decref(want);
    json_decref(got);
}

#define AGREE(s) agrees_with_jansson((s), sizeof(s) - 1)

static void valid_documents_build_the_same_values(void **state)
{
    AGREE("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
          "\"arguments\":{\"text\":\"hello\"}}}");
    AGREE("[1,2.5,-3,-0,0.0,1e10,1E-3,-1.5e+2,true,false,null,\"s\",[],{},[[]],{\"a\":{}}]");
    AGREE("  \n\t\r{ \"a\" : [ 1 , { \"b\" : null } ] }  \n");
    AGREE("\"just a string\"");
    AGREE("42");
    AGREE("-9223372036854775808");
    AGREE("9223372036854775807");
    AGREE("1.7976931348623157e308");
    AGREE("1e-400");
    AGREE("{\"dup\":1,\"dup\":2}");
    AGREE("{\"\":\"empty key\"}");
}

static void escapes_and_unicode_match(void **state)
{
    AGREE("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"");
    AGREE("\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"");
    AGREE("\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"");
    AGREE("\"nul \\u0000 inside\"");
    AGREE("{\"k\\u0000ey\":1}");
    AGREE("{\"a\\nb\":\"c\\td\",\"x\":\"\\u00e9\"}");
}

static void invalid_documents_are_refused(void **state)
{
    const char *bad[] = {
        "",
        " ",
        "{",
        "}",
        "[",
        "[1,]",
        "[1 2]",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{a:1}",
        "'single'",
        "tru",
        "nul",
        "falsey",
        "01",
        "1.",
        ".5",
        "-",
        "1e",
        "1e+",
        "+1",
        "0x10",
        "NaN",
        "Infinity",
        "\"unterminated",
        "\"bad \\x escape\"",
        "\"\\u12\"",
        "\"\\uZZZZ\"",
        "\"\\ud83d\"",
        "\"\\ude00\"",
        "\"\\ud83d\\u0041\"",
        "\"tab\tinside\"",
        "\"nl\ninside\"",
        "1 2",
        "{} []",
        "[1]x",
        "1e400",
        "-1e400",
        "\"\xc3\"",
        "\"\xc0\xaf\"",
        "\"\xed\xa0\x80\"",
        "\"\xf5\x80\x80\x80\"",
        "\"\xff\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        agrees_with_jansson(bad[i], strlen(bad[i]));
    agrees_with_jansson("\"a\0b\"", 5); /* a raw NUL byte is a control character */
}

/* text holds one number: we read it as jansson reads it with JSON_DECODE_INT_AS_REAL (a real,
 * the nearest double of its digits), and plain jansson refuses it ("too big integer") */
static void is_the_real_jansson_reads(const char *text)
{
    json_error_t e;
    assert_null(json_loadb(text, strlen(text), JSON_DECODE_ANY, &e));
    json_t *want = json_loadb(text, strlen(text), JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &e);
    assert_non_null(want);
    char err[160];
    json_t *got = json_parse_buf(text, strlen(text), err, sizeof err, NULL);
    if (!got)
        fail_msg("[%s] is valid JSON, but refused: %s", text, err);
    if (!json_is_real(got))
        fail_msg("[%s] should be a real", text);
    assert_true(json_real_value(got) == json_real_value(want));
    json_decref(want);
    json_decref(got);
}

/* An integer literal past the 64-bit range is valid JSON (what JSON.stringify writes for 1e19):
 * a real, where jansson says "too big integer"; within the range it stays an exact integer, and
 * a number past double is refused as before */
static void integers_beyond_64_bits_are_reals(void **state)
{
    (void)state;
    is_the_real_jansson_reads("9223372036854775808");
    is_the_real_jansson_reads("-9223372036854775809");
    is_the_real_jansson_reads("10000000000000000000");
    is_the_real_jansson_reads("-99999999999999999999999999999999999999");
    is_the_real_jansson_reads("123456789012345678901234567890123456789012345678901234567890");
    const char *doc = "[9223372036854775807,9223372036854775808,-9223372036854775808,"
                      "-9223372036854775809,{\"n\":10000000000000000000}]";
    json_t *v = json_parse_buf(doc, strlen(doc), NULL, 0, NULL);
    assert_non_null(v);
    assert_true(json_is_integer(json_array_get(v, 0)));
    assert_true(json_integer_value(json_array_get(v, 0)) == INT64_MAX);
    assert_true(json_is_real(json_array_get(v, 1)));
    assert_true(json_real_value(json_array_get(v, 1)) == 9223372036854775808.0);
    assert_true(json_is_integer(json_array_get(v, 2)));
    assert_true(json_integer_value(json_array_get(v, 2)) == INT64_MIN);
    assert_true(json_is_real(json_array_get(v, 3)));
    assert_true(json_real_value(json_object_get(json_array_get(v, 4), "n")) == 1e19);
    json_decref(v);
    /* 310 digits (about 1e310) is beyond double, as 1e400 is; and so is -1e310 */
    char big[320];
    memset(big, '9', 311);
    big[311] = '\0';
    char err[160] = "";
    assert_null(json_parse_buf(big + 1, 310, err, sizeof err, NULL));
    assert_string_equal(err, "real number overflow");
    big[0] = '-';
    assert_null(json_parse_buf(big, 311, err, sizeof err, NULL));
    assert_string_equal(err, "real number overflow");
}

static void nesting_is_bounded_like_jansson(void **state)
{
    for (size_t depth = 2040; depth <= 2056; depth += 4) {
        char *s = malloc(2 * depth + 1);
        memset(s, '[', depth);
        memset(s + depth, ']', depth);
        agrees_with_jansson(s, 2 * depth);
        free(s);
    }
}

static void an_error_points_at_the_problem(void **state)
{
    char err[160];
    size_t pos = 0;
    const char *t = "{\"a\":1,\"b\":tru}";
    assert_null(json_parse_buf(t, strlen(t), err, sizeof err, &pos));
    assert_int_equal(pos, 11);
    assert_string_equal(err, "invalid token");
}

/* Every value counts one, containers included: [{},{"a":1}] is 4; one past the bound is
 * refused with too_many, the bound itself is accepted, and 0 is no bound. */
static void the_node_bound_counts_every_value(void **state)
{
    const char *t = "[{},{\"a\":1}]";
    json_parse_info_t info;
    char err[160];
    size_t pos = 0;
    json_t *v = json_parse_buf_bounded(t, strlen(t), 4, &info, err, sizeof err, &pos);
    assert_non_null(v);
    assert_int_equal(info.nodes, 4);
    assert_false(info.too_many);
    json_decref(v);
    assert_null(json_parse_buf_bounded(t, strlen(t), 3, &info, err, sizeof err, &pos));
    assert_true(info.too_many);
    assert_string_equal(err, "too many JSON values");
    v = json_parse_buf_bounded(t, strlen(t), 0, &info, NULL, 0, NULL);
    assert_non_null(v);
    assert_false(info.too_many);
    json_decref(v);
    /* a malformed body within the bound is a parse error, not too_many */
    assert_null(json_parse_buf_bounded("[1,", 3, 10, &info, err, sizeof err, &pos));
    assert_false(info.too_many);
    assert_int_equal(info.id_len, 0);
}

/* Past the bound, the top-level object's scalar "id" read before the stop is located (for the
 * refusal's answer); one after it, a nested one, a container, or a parse within the bound
 * locate none. */
static void a_refusal_past_the_bound_locates_the_id_read_before_it(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *id; /* NULL: none located */
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\": \"a b\" ,\"p\":[1,2,3,4,5,6,7,8]}", "\"a b\""},
        {"{\"id\":-7.5e1,\"p\":[1,2,3,4,5,6,7,8]}", "-7.5e1"},
        {"{\"id\":1,\"id\":null,\"p\":[1,2,3,4,5,6,7,8]}", "null"},
        {"{\"p\":[1,2,3,4,5,6,7,8],\"id\":3}", NULL},
        {"{\"q\":{\"id\":4},\"p\":[1,2,3,4,5,6,7,8]}", NULL},
        {"{\"id\":[4],\"p\":[1,2,3,4,5,6,7,8]}", NULL},
        {"{\"id\":1,\"id\":{},\"p\":[1,2,3,4,5,6,7,8]}", NULL},
        {"[{\"id\":4},1,2,3,4,5,6,7,8]", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *t = cases[i].text;
        json_parse_info_t info;
        assert_null(json_parse_buf_bounded(t, strlen(t), 6, &info, NULL, 0, NULL));
        assert_true(info.too_many);
        if (!cases[i].id) {
            assert_int_equal(info.id_len, 0);
            continue;
        }
        assert_int_equal(info.id_len, strlen(cases[i].id));
        assert_memory_equal(t + info.id_off, cases[i].id, info.id_len);
    }
    json_parse_info_t info;
    const char *ok = "{\"id\":1}";
    json_t *v = json_parse_buf_bounded(ok, strlen(ok), 6, &info, NULL, 0, NULL);
    assert_non_null(v);
    assert_int_equal(info.id_len, 0);
    json_decref(v);
}

static void long_keys_and_strings_round_trip(void **state)
{
    char buf[5000];
    int n = snprintf(buf, sizeof buf, "{\"");
    for (int i = 0; i < 300; i++)
        buf[n++] = (char)('a' + i % 26);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "\\n\":\"");
    for (int i = 0; i < 3000; i++)
        buf[n++] = (char)('A' + i % 26);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "\\\"\"}");
    agrees_with_jansson(buf, (size_t)n);
}

/* json_pick agrees with json_object_get, key by key, on objects small enough to be walked and
 * large enough to be looked up, with keys missing, keys holding U+0000 and values of any kind */
static void pick_agrees_with_object_get(void **state)
{
    (void)state;
    static const char *const POOL[] = {"jsonrpc", "id",        "method", "params", "result",
                                       "error",   "i",         "idx",    "",       "_meta",
                                       "name",    "arguments", "a",      "b"};
    const size_t npool = sizeof POOL / sizeof *POOL;
    srand(7);
    for (int round = 0; round < 400; round++) {
        json_t *o = json_object();
        size_t members = (size_t)(round % (2 * JSON_PICK_WALK_MAX + 4));
        for (size_t i = 0; json_object_size(o) < members; i++) {
            char extra[32];
            snprintf(extra, sizeof extra, "k%zu", i);
            const char *k = i < npool && rand() % 3 ? POOL[rand() % npool] : extra;
            json_object_set_new(o, k, json_integer((json_int_t)i));
        }
        /* a key "id\u0000x" and "name\u0000": the same C strings as "id" and "name" */
        if (round % 5 == 0)
            json_object_setn_new(o, "id\0x", 4, json_string("not id"));
        if (round % 7 == 0)
            json_object_setn_new(o, "name\0", 5, json_string("not name"));
        const char *keys[8];
        size_t n = (size_t)(round % 9);
        for (size_t i = 0; i < n; i++) {
            const char *k;
            bool dup;
            do {
                k = POOL[rand() % npool];
                dup = false;
                for (size_t j = 0; j < i; j++)
                    dup = dup || strcmp(keys[j], k) == 0;
            } while (dup);
            keys[i] = k;
        }
        jkey_t jk[8];
        for (size_t i = 0; i < n; i++)
            jk[i] = (jkey_t){keys[i], strlen(keys[i])};
        json_t *out[8];
        size_t found = json_pick(o, jk, n, out);
        size_t expect = 0;
        for (size_t i = 0; i < n; i++) {
            json_t *want = json_object_get(o, keys[i]);
            assert_ptr_equal(out[i], want);
            expect += want != NULL;
        }
        assert_int_equal(found, expect);
        json_decref(o);
    }
    json_t *out[2] = {(json_t *)1, (json_t *)1};
    const jkey_t keys[2] = {JKEY("id"), JKEY("method")};
    json_t *arr = json_array();
    assert_int_equal(json_pick(NULL, keys, 2, out), 0);
    assert_null(out[0]);
    assert_null(out[1]);
    out[0] = out[1] = (json_t *)1;
    assert_int_equal(json_pick(arr, keys, 2, out), 0);
    assert_null(out[0]);
    assert_null(out[1]);
    json_decref(arr);
}

/* json_stringn_lossy keeps valid UTF-8 as it is (U+0000 included) and replaces each byte that
 * starts no valid sequence (a cut character, obs-text, a surrogate's encoding) by U+FFFD */
static void lossy_strings_are_always_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t len;
        const char *want;
        size_t want_len;
    } CASES[] = {
        {"abc", 3, "abc", 3},
        {"a\0b", 3, "a\0b", 3},
        {"\xc3\xa9", 2, "\xc3\xa9", 2},
        {"a\xc3", 2, "a\xef\xbf\xbd", 4},
        {"\xff\xfe", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
        {"\xe2\x82x", 3, "\xef\xbf\xbd\xef\xbf\xbdx", 7},
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        json_t *v = json_stringn_lossy(CASES[i].in, CASES[i].len);
        assert_non_null(v);
        assert_int_equal(json_string_length(v), CASES[i].want_len);
        assert_memory_equal(json_string_value(v), CASES[i].want, CASES[i].want_len);
        json_decref(v);
    }
    json_t *v = json_string_lossy("x\x80");
    assert_string_equal(json_string_value(v), "x\xef\xbf\xbd");
    json_decref(v);
    assert_null(json_string_lossy(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_documents_build_the_same_values),
        cmocka_unit_test(escapes_and_unicode_match),
        cmocka_unit_test(invalid_documents_are_refused),
        cmocka_unit_test(integers_beyond_64_bits_are_reals),
        cmocka_unit_test(nesting_is_bounded_like_jansson),
        cmocka_unit_test(an_error_points_at_the_problem),
        cmocka_unit_test(the_node_bound_counts_every_value),
        cmocka_unit_test(a_refusal_past_the_bound_locates_the_id_read_before_it),
        cmocka_unit_test(long_keys_and_strings_round_trip),
        cmocka_unit_test(pick_agrees_with_object_get),
        cmocka_unit_test(lossy_strings_are_always_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
