/* Unit tests: the JSON Schema subset validator (src/mcp/schema.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <stdlib.h>

#include "core/jsonparse.h"
#include "mcp/schema.h"

static char g_err[512];

/* Validates value text against schema text; both must parse. */
static bool check(const char *schema_text, const char *value_text)
{
    json_error_t e;
    json_t *schema = json_loads(schema_text, JSON_DECODE_ANY, &e);
    if (!schema)
        fail_msg("schema does not parse: %s", schema_text);
    json_t *value = json_loads(value_text, JSON_DECODE_ANY, &e);
    if (!value)
        fail_msg("value does not parse: %s", value_text);
    memset(g_err, 'Z', sizeof g_err);
    g_err[sizeof g_err - 1] = '\0';
    bool ok = schema_validate(schema, value, g_err, sizeof g_err);
    json_decref(schema);
    json_decref(value);
    return ok;
}

static void assert_ok(const char *schema, const char *value)
{
    if (!check(schema, value))
        fail_msg("%s should satisfy %s, got error '%s'", value, schema, g_err);
}

static void assert_bad(const char *schema, const char *value)
{
    if (check(schema, value))
        fail_msg("%s should violate %s", value, schema);
    if (strncmp(g_err, "arguments", 9) != 0)
        fail_msg("error '%s' does not name a path", g_err);
}

/* ---- type ---- */

static void each_type_accepts_its_own_kind_only(void **state)
{
    const char *values[] = {"{}", "[]", "\"s\"", "3", "1.5", "true", "null"};
    const char *types[] = {"object", "array", "string", "integer", "number", "boolean", "null"};
    /* accept[t][v]: whether type t admits value v */
    static const bool accept[7][7] = {
        {1, 0, 0, 0, 0, 0, 0}, {0, 1, 0, 0, 0, 0, 0}, {0, 0, 1, 0, 0, 0, 0}, {0, 0, 0, 1, 0, 0, 0},
        {0, 0, 0, 1, 1, 0, 0}, {0, 0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 0, 1},
    };
    char schema[64];
    for (int t = 0; t < 7; t++) {
        snprintf(schema, sizeof schema, "{\"type\":\"%s\"}", types[t]);
        for (int v = 0; v < 7; v++) {
            bool ok = check(schema, values[v]);
            if (ok != accept[t][v])
                fail_msg("type %s on %s: got %d", types[t], values[v], ok);
        }
    }
    assert_ok("{\"type\":\"boolean\"}", "false");
}

static void integer_accepts_whole_reals_but_not_fractions(void **state)
{
    assert_ok("{\"type\":\"integer\"}", "3");
    assert_ok("{\"type\":\"integer\"}", "3.0");
    assert_ok("{\"type\":\"integer\"}", "-0.0");
    assert_bad("{\"type\":\"integer\"}", "3.5");
    assert_bad("{\"type\":\"integer\"}", "\"3\"");
}

static void a_type_array_accepts_any_listed_type(void **state)
{
    const char *s = "{\"type\":[\"string\",\"null\"]}";
    assert_ok(s, "\"x\"");
    assert_ok(s, "null");
    assert_bad(s, "1");
    assert_bad(s, "{}");
}

static void a_type_error_names_the_expected_and_actual_types(void **state)
{
    assert_bad("{\"type\":\"string\"}", "7");
    assert_string_equal(g_err, "arguments: expected string, got integer");
    assert_bad("{\"type\":\"integer\"}", "7.5");
    assert_string_equal(g_err, "arguments: expected integer, got number");
}

/* ---- objects ---- */

static void a_missing_required_property_fails(void **state)
{
    const char *s = "{\"type\":\"object\",\"required\":[\"a\",\"b\"]}";
    assert_ok(s, "{\"a\":1,\"b\":2}");
    assert_bad(s, "{\"a\":1}");
    assert_non_null(strstr(g_err, "\"b\""));
    assert_bad(s, "{}");
}

static void properties_are_validated_with_their_path(void **state)
{
    const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},"
                    "\"n\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}}}}}";
    assert_ok(s, "{\"a\":\"ok\",\"n\":{\"x\":1}}");
    assert_bad(s, "{\"a\":1}");
    assert_string_equal(g_err, "arguments.a: expected string, got integer");
    assert_bad(s, "{\"n\":{\"x\":\"no\"}}");
    assert_string_equal(g_err, "arguments.n.x: expected integer, got string");
}

static void additional_properties_false_rejects_unknown_keys(void **state)
{
    const char *s =
        "{\"type\":\"object\",\"properties\":{\"a\":{}},\"additionalProperties\":false}";
    assert_ok(s, "{\"a\":1}");
    assert_ok(s, "{}");
    assert_bad(s, "{\"a\":1,\"b\":2}");
    assert_non_null(strstr(g_err, "\"b\""));
}

static void additional_properties_schema_validates_unknown_keys(void **state)
{
    const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
                    "\"additionalProperties\":{\"type\":\"integer\"}}";
    assert_ok(s, "{\"a\":\"x\",\"b\":2,\"c\":3}");
    assert_bad(s, "{\"a\":\"x\",\"b\":\"two\"}");
    assert_string_equal(g_err, "arguments.b: expected integer, got string");
}

static void additional_properties_are_allowed_by_default(void **state)
{
    assert_ok("{\"type\":\"object\",\"properties\":{\"a\":{}}}", "{\"zzz\":[1]}");
    assert_ok("{\"type\":\"object\",\"additionalProperties\":true}", "{\"zzz\":[1]}");
}

/* ---- enum, const ---- */

static void enum_accepts_only_listed_values(void **state)
{
    const char *s = "{\"enum\":[\"red\",2,null,{\"k\":[1]}]}";
    assert_ok(s, "\"red\"");
    assert_ok(s, "2");
    assert_ok(s, "null");
    assert_ok(s, "{\"k\":[1]}");
    assert_bad(s, "\"blue\"");
    assert_bad(s, "3");
    assert_bad(s, "{\"k\":[2]}");
}

static void const_accepts_only_the_equal_value(void **state)
{
    assert_ok("{\"const\":\"v1\"}", "\"v1\"");
    assert_bad("{\"const\":\"v1\"}", "\"v2\"");
    assert_ok("{\"const\":[1,{\"a\":true}]}", "[1,{\"a\":true}]");
    assert_bad("{\"const\":[1,{\"a\":true}]}", "[1,{\"a\":false}]");
    assert_bad("{\"const\":null}", "false");
}

/* ---- numbers ---- */

static void minimum_and_maximum_are_inclusive(void **state)
{
    const char *s = "{\"type\":\"number\",\"minimum\":1,\"maximum\":10}";
    assert_ok(s, "1");
    assert_ok(s, "10");
    assert_ok(s, "5.5");
    assert_bad(s, "0.999");
    assert_string_equal(g_err, "arguments: must be >= 1");
    assert_bad(s, "10.01");
    assert_string_equal(g_err, "arguments: must be <= 10");
    assert_bad(s, "-3");
}

static void exclusive_bounds_reject_the_bound_itself(void **state)
{
    const char *s = "{\"exclusiveMinimum\":0,\"exclusiveMaximum\":1.5}";
    assert_ok(s, "0.001");
    assert_ok(s, "1");
    assert_bad(s, "0");
    assert_bad(s, "1.5");
    assert_bad(s, "-1");
    assert_bad(s, "2");
}

static void numeric_bounds_do_not_apply_to_other_types(void **state)
{
    assert_ok("{\"minimum\":5}", "\"abc\"");
    assert_ok("{\"maximum\":5}", "[1,2,3,4,5,6]");
}

/* ---- strings ---- */

static void string_length_bounds_count_characters(void **state)
{
    const char *s = "{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}";
    assert_ok(s, "\"ab\"");
    assert_ok(s, "\"abc\"");
    assert_bad(s, "\"a\"");
    assert_bad(s, "\"abcd\"");
    assert_bad(s, "\"\"");
}

static void string_length_counts_utf8_characters_not_bytes(void **state)
{
    const char *max3 = "{\"type\":\"string\",\"maxLength\":3}";
    const char *min3 = "{\"type\":\"string\",\"minLength\":3}";
    /* "é€😀": 2 + 3 + 4 bytes, 3 characters */
    assert_ok(max3, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
    assert_ok(min3, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
    assert_bad(max3, "\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"");
    assert_bad(min3, "\"\xc3\xa9\xc3\xa9\"");
    assert_ok(max3, "\"\\u00e9\\u00e9\\u00e9\"");
}

/* ---- arrays ---- */

static void items_are_validated_with_their_index(void **state)
{
    const char *s = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}";
    assert_ok(s, "[]");
    assert_ok(s, "[1,2,3]");
    assert_bad(s, "[1,\"x\",3]");
    assert_string_equal(g_err, "arguments[1]: expected integer, got string");
}

static void min_and_max_items_bound_the_length(void **state)
{
    const char *s = "{\"type\":\"array\",\"minItems\":1,\"maxItems\":2}";
    assert_ok(s, "[1]");
    assert_ok(s, "[1,2]");
    assert_bad(s, "[]");
    assert_bad(s, "[1,2,3]");
}

static void nested_paths_combine_properties_and_indexes(void **state)
{
    const char *s = "{\"type\":\"object\",\"properties\":{\"list\":{\"type\":\"array\","
                    "\"items\":{\"type\":\"object\",\"required\":[\"id\"]}}}}";
    assert_ok(s, "{\"list\":[{\"id\":1}]}");
    assert_bad(s, "{\"list\":[{\"id\":1},{}]}");
    assert_string_equal(g_err, "arguments.list[1]: missing required property \"id\"");
}

/* ---- combinators ---- */

static void any_of_needs_at_least_one_match(void **state)
{
    const char *s = "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\",\"minimum\":10}]}";
    assert_ok(s, "\"x\"");
    assert_ok(s, "11");
    assert_bad(s, "5");
    assert_bad(s, "true");
    assert_non_null(strstr(g_err, "anyOf"));
}

static void one_of_needs_exactly_one_match(void **state)
{
    const char *s = "{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":5}]}";
    assert_ok(s, "2");   /* integer only */
    assert_ok(s, "7.5"); /* minimum only */
    assert_bad(s, "7");  /* both */
    assert_non_null(strstr(g_err, "oneOf"));
    assert_bad(s, "2.5"); /* neither */
}

static void all_of_needs_every_match(void **state)
{
    const char *s = "{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":5},{\"maximum\":9}]}";
    assert_ok(s, "5");
    assert_ok(s, "9");
    assert_bad(s, "4");
    assert_bad(s, "10");
    assert_bad(s, "6.5");
}

static void not_inverts_its_schema(void **state)
{
    const char *s = "{\"not\":{\"type\":\"string\"}}";
    assert_ok(s, "1");
    assert_ok(s, "null");
    assert_bad(s, "\"s\"");
    /* a passing value leaves no stale error text behind */
    assert_true(check(s, "{}"));
    assert_string_equal(g_err, "");
}

static void boolean_schemas_allow_or_forbid_everything(void **state)
{
    assert_ok("true", "{\"any\":1}");
    assert_bad("false", "1");
    assert_ok("{\"properties\":{\"a\":true}}", "{\"a\":[]}");
    assert_bad("{\"properties\":{\"a\":false}}", "{\"a\":[]}");
    assert_string_equal(g_err, "arguments.a: is not allowed");
}

/* ---- $ref ---- */

static void a_local_ref_to_defs_is_followed(void **state)
{
    const char *s = "{\"$defs\":{\"pos\":{\"type\":\"integer\",\"minimum\":1}},"
                    "\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/$defs/pos\"}}}";
    assert_ok(s, "{\"n\":3}");
    assert_bad(s, "{\"n\":0}");
    assert_string_equal(g_err, "arguments.n: must be >= 1");
    assert_bad(s, "{\"n\":\"3\"}");
}

static void a_local_ref_to_definitions_is_followed(void **state)
{
    const char *s = "{\"definitions\":{\"name\":{\"type\":\"string\",\"minLength\":1}},"
                    "\"type\":\"array\",\"items\":{\"$ref\":\"#/definitions/name\"}}";
    assert_ok(s, "[\"a\",\"b\"]");
    assert_bad(s, "[\"a\",\"\"]");
    assert_string_equal(g_err, "arguments[1]: is too short");
}

static void a_recursive_ref_validates_nested_values(void **state)
{
    const char *s = "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{"
                    "\"v\":{\"type\":\"integer\"},\"next\":{\"$ref\":\"#/$defs/node\"}}}},"
                    "\"$ref\":\"#/$defs/node\"}";
    assert_ok(s, "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":3}}}");
    assert_bad(s, "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":\"x\"}}}");
    assert_string_equal(g_err, "arguments.next.next.v: expected integer, got string");
}

static void an_unresolvable_ref_fails(void **state)
{
    assert_bad("{\"$ref\":\"#/$defs/missing\"}", "1");
    assert_non_null(strstr(g_err, "#/$defs/missing"));
    assert_bad("{\"$defs\":{},\"$ref\":\"#/$defs/missing\"}", "1");
    assert_bad("{\"$ref\":\"https://example.com/schema.json\"}", "1");
    assert_bad("{\"definitions\":{\"a\":{}},\"$ref\":\"#/$defs/a\"}", "1");
}

static void a_self_referencing_schema_stops_at_the_depth_limit(void **state)
{
    assert_bad("{\"$ref\":\"#\"}", "1");
    assert_non_null(strstr(g_err, "deep"));
}

/* ---- misc ---- */

static void unknown_keywords_are_ignored(void **state)
{
    assert_ok("{\"type\":\"string\",\"format\":\"email\",\"pattern\":\"^x$\"}", "\"not-an-email\"");
    assert_ok("{\"type\":\"madeup\"}", "1");
}

static void the_error_is_truncated_to_the_buffer(void **state)
{
    json_t *schema = json_pack("{s:s}", "type", "string");
    json_t *value = json_integer(1);
    char small[12];
    memset(small, 'Z', sizeof small);
    assert_false(schema_validate(schema, value, small, sizeof small));
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, "arguments: ", 11);
    json_decref(schema);
    json_decref(value);
}

static void a_recursive_schema_that_would_take_exponential_time_fails_quickly(void **state)
{
    json_t *schema = json_loads("{\"anyOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#\"}]}", 0, NULL);
    json_t *notted = json_loads("{\"not\":{\"anyOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#\"}]}}", 0,
                                NULL);
    json_t *value = json_object();
    char err[256];
    assert_false(schema_validate(schema, value, err, sizeof err));
    assert_non_null(strstr(err, "too complex"));
    /* out of budget under a "not" must not turn into a pass */
    assert_false(schema_validate(notted, value, err, sizeof err));
    assert_non_null(strstr(err, "too complex"));
    json_decref(schema);
    json_decref(notted);
    json_decref(value);
}

static void a_large_plain_array_is_checked_in_full(void **state)
{
    json_t *schema = json_loads("{\"type\":\"object\",\"properties\":{\"xs\":{\"type\":\"array\","
                                "\"items\":{\"type\":\"integer\"}}}}",
                                0, NULL);
    json_t *xs = json_array();
    for (int i = 0; i < 200000; i++)
        json_array_append_new(xs, json_integer(i));
    json_t *value = json_pack("{s:o}", "xs", xs);
    char err[256];
    assert_true(schema_validate(schema, value, err, sizeof err));
    json_array_append_new(xs,
                          json_string("not a number")); /* and the last one is still looked at */
    assert_false(schema_validate(schema, value, err, sizeof err));
    assert_non_null(strstr(err, "arguments.xs[200000]"));
    json_decref(schema);
    json_decref(value);
}

/* ---- integral reals: JSON Schema compares numbers by value ---- */

static void an_integral_real_is_an_integer_within_64_bits(void **state)
{
    assert_ok("{\"type\":\"integer\"}", "2.0");
    assert_ok("{\"type\":\"integer\"}", "-9223372036854775808.0");
    assert_ok("{\"type\":\"integer\"}", "9.2e18");
    assert_bad("{\"type\":\"integer\"}", "2.5");
    assert_string_equal(g_err, "arguments: expected integer, got number");
    assert_bad("{\"type\":\"integer\"}", "1e19");
    assert_string_equal(g_err, "arguments: is outside the 64-bit integer range");
    assert_bad("{\"type\":\"integer\"}", "9223372036854775808.0");
    assert_ok("{\"type\":[\"integer\",\"number\"]}", "1e19");
    /* non-finite reals cannot reach the validator: jansson refuses to build them */
    assert_null(json_real(INFINITY));
    assert_null(json_real(NAN));
}

static void bounds_enum_and_const_compare_integral_reals_by_value(void **state)
{
    const char *s = "{\"type\":\"integer\",\"minimum\":2,\"maximum\":4}";
    assert_ok(s, "2.0");
    assert_ok(s, "4.0");
    assert_bad(s, "1.0");
    assert_bad(s, "5.0");
    assert_ok("{\"enum\":[1,2,3]}", "2.0");
    assert_bad("{\"enum\":[1,2,3]}", "2.5");
    assert_ok("{\"enum\":[2.0]}", "2");
    assert_ok("{\"const\":2}", "2.0");
    assert_bad("{\"const\":2}", "2.000001");
    assert_ok("{\"const\":{\"a\":[1,2]}}", "{\"a\":[1.0,2]}");
    assert_bad("{\"const\":{\"a\":[1,2]}}", "{\"a\":[1.0,3]}");
    assert_bad("{\"const\":{\"a\":1}}", "{\"a\":1,\"b\":1}");
    assert_bad("{\"const\":9007199254740993}", "9007199254740992.0"); /* 2^53 + 1 vs 2^53 */
}

/* schema_validate_args on value_text; returns whether it held, and the value as compact text
 * with sorted keys in out (caller frees). */
static bool normalize(const char *schema_text, const char *value_text, char **out)
{
    json_error_t e;
    json_t *schema = json_loads(schema_text, JSON_DECODE_ANY, &e);
    json_t *value = json_loads(value_text, JSON_DECODE_ANY, &e);
    if (!schema || !value)
        fail_msg("does not parse: %s / %s", schema_text, value_text);
    bool ok = schema_validate_args(schema, value, g_err, sizeof g_err);
    *out = json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(schema);
    json_decref(value);
    return ok;
}

static void expect_normalized(const char *schema, const char *value, const char *want)
{
    char *got;
    if (!normalize(schema, value, &got))
        fail_msg("%s should satisfy %s, got error '%s'", value, schema, g_err);
    if (strcmp(got, want) != 0)
        fail_msg("%s normalized to %s, want %s", value, got, want);
    free(got);
}

static void validated_arguments_get_integers_where_the_schema_says_integer(void **state)
{
    const char *s =
        "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"},"
        "\"x\":{\"type\":\"number\"},\"u\":{},"
        "\"xs\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
        "\"r\":{\"$ref\":\"#/$defs/i\"},"
        "\"o\":{\"type\":\"object\",\"properties\":{\"deep\":{\"type\":[\"string\",\"integer\"]}}}},"
        "\"additionalProperties\":{\"type\":\"integer\"},"
        "\"$defs\":{\"i\":{\"type\":\"integer\"}}}";
    expect_normalized(s,
                      "{\"n\":2.0,\"x\":2.0,\"u\":2.0,\"xs\":[1.0,-0.0,3],\"r\":-4.0,"
                      "\"o\":{\"deep\":5.0},\"extra\":6.0}",
                      "{\"extra\":6,\"n\":2,\"o\":{\"deep\":5},\"r\":-4,\"u\":2.0,\"x\":2.0,"
                      "\"xs\":[1,0,3]}");
    expect_normalized(
        "{\"type\":\"array\",\"items\":{\"allOf\":[{\"type\":\"integer\"},{\"type\":\"integer\"}]}}",
        "[1.0,9.2e18]", "[1,9200000000000000000]");
    expect_normalized(s, "{\"n\":7}", "{\"n\":7}");
}

static void a_real_that_only_a_failing_subschema_took_for_an_integer_stays_a_real(void **state)
{
    /* anyOf: the integer branch fails on its minimum, the number branch holds */
    const char *any = "{\"properties\":{\"v\":{\"anyOf\":[{\"type\":\"integer\",\"minimum\":5},"
                      "{\"type\":\"number\"}]}}}";
    expect_normalized(any, "{\"v\":2.0}", "{\"v\":2.0}");
    expect_normalized(any, "{\"v\":7.0}", "{\"v\":7}");
    /* not: the inner integer schema fails on its maximum, so the not holds */
    const char *not = "{\"properties\":{\"v\":{\"not\":{\"type\":\"integer\",\"maximum\":0}}}}";
    expect_normalized(not, "{\"v\":2.0}", "{\"v\":2.0}");
    /* a real past 64 bits is a number, not an integer */
    expect_normalized("{\"properties\":{\"v\":{\"type\":[\"integer\",\"number\"]}}}",
                      "{\"v\":1e19}", "{\"v\":1e19}");
}

static void arguments_that_fail_are_left_as_they_came(void **state)
{
    char *got;
    const char *s = "{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}}}";
    assert_false(normalize(s, "{\"a\":2.0,\"b\":1}", &got));
    assert_string_equal(got, "{\"a\":2.0,\"b\":1}");
    free(got);
    assert_false(
        normalize("{\"properties\":{\"by\":{\"type\":\"integer\"}}}", "{\"by\":1e19}", &got));
    assert_string_equal(g_err, "arguments.by: is outside the 64-bit integer range");
    free(got);
}

/* What a request brings: an integer literal past 64 bits (what JSON.stringify writes for 1e19)
 * is a real from the request parser, so an "integer" argument reports the range, a "number"
 * takes it, and JSON.stringify's text for -2^63 ("-9223372036854776000", itself past the
 * range) is the integer -2^63 it stands for */
static void an_integer_literal_past_64_bits_is_a_number_not_an_integer(void **state)
{
    (void)state;
    const char *in = "{\"i\":10000000000000000000}", *num = "{\"n\":10000000000000000000}";
    const char *low = "{\"i\":-9223372036854776000}";
    json_t *schema = json_loads("{\"properties\":{\"i\":{\"type\":\"integer\"},"
                                "\"n\":{\"type\":\"number\"}}}",
                                0, NULL);
    json_t *v = json_parse_buf(in, strlen(in), NULL, 0, NULL);
    assert_false(schema_validate_args(schema, v, g_err, sizeof g_err));
    assert_string_equal(g_err, "arguments.i: is outside the 64-bit integer range");
    json_decref(v);
    v = json_parse_buf(num, strlen(num), NULL, 0, NULL);
    assert_true(schema_validate_args(schema, v, g_err, sizeof g_err));
    assert_true(json_real_value(json_object_get(v, "n")) == 1e19);
    json_decref(v);
    v = json_parse_buf(low, strlen(low), NULL, 0, NULL);
    assert_true(schema_validate_args(schema, v, g_err, sizeof g_err));
    assert_true(json_is_integer(json_object_get(v, "i")));
    assert_true(json_integer_value(json_object_get(v, "i")) == INT64_MIN);
    json_decref(v);
    json_decref(schema);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_recursive_schema_that_would_take_exponential_time_fails_quickly),
        cmocka_unit_test(a_large_plain_array_is_checked_in_full),
        cmocka_unit_test(each_type_accepts_its_own_kind_only),
        cmocka_unit_test(integer_accepts_whole_reals_but_not_fractions),
        cmocka_unit_test(a_type_array_accepts_any_listed_type),
        cmocka_unit_test(a_type_error_names_the_expected_and_actual_types),
        cmocka_unit_test(a_missing_required_property_fails),
        cmocka_unit_test(properties_are_validated_with_their_path),
        cmocka_unit_test(additional_properties_false_rejects_unknown_keys),
        cmocka_unit_test(additional_properties_schema_validates_unknown_keys),
        cmocka_unit_test(additional_properties_are_allowed_by_default),
        cmocka_unit_test(enum_accepts_only_listed_values),
        cmocka_unit_test(const_accepts_only_the_equal_value),
        cmocka_unit_test(minimum_and_maximum_are_inclusive),
        cmocka_unit_test(exclusive_bounds_reject_the_bound_itself),
        cmocka_unit_test(numeric_bounds_do_not_apply_to_other_types),
        cmocka_unit_test(string_length_bounds_count_characters),
        cmocka_unit_test(string_length_counts_utf8_characters_not_bytes),
        cmocka_unit_test(items_are_validated_with_their_index),
        cmocka_unit_test(min_and_max_items_bound_the_length),
        cmocka_unit_test(nested_paths_combine_properties_and_indexes),
        cmocka_unit_test(any_of_needs_at_least_one_match),
        cmocka_unit_test(one_of_needs_exactly_one_match),
        cmocka_unit_test(all_of_needs_every_match),
        cmocka_unit_test(not_inverts_its_schema),
        cmocka_unit_test(boolean_schemas_allow_or_forbid_everything),
        cmocka_unit_test(a_local_ref_to_defs_is_followed),
        cmocka_unit_test(a_local_ref_to_definitions_is_followed),
        cmocka_unit_test(a_recursive_ref_validates_nested_values),
        cmocka_unit_test(an_unresolvable_ref_fails),
        cmocka_unit_test(a_self_referencing_schema_stops_at_the_depth_limit),
        cmocka_unit_test(unknown_keywords_are_ignored),
        cmocka_unit_test(the_error_is_truncated_to_the_buffer),
        cmocka_unit_test(an_integral_real_is_an_integer_within_64_bits),
        cmocka_unit_test(bounds_enum_and_const_compare_integral_reals_by_value),
        cmocka_unit_test(validated_arguments_get_integers_where_the_schema_says_integer),
        cmocka_unit_test(a_real_that_only_a_failing_subschema_took_for_an_integer_stays_a_real),
        cmocka_unit_test(arguments_that_fail_are_left_as_they_came),
        cmocka_unit_test(an_integer_literal_past_64_bits_is_a_number_not_an_integer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
