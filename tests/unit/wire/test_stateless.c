/* Unit tests: the 2026-07-28 wire rules (src/wire/stateless.c): which requests claim the era, the
 * _meta checks, the mirrored headers and their base64 form, the method table, the statuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/b64.h"
#include "core/methodtable.h"
#include "wire/jsonrpc.h"
#include "wire/stateless.h"

static json_t *req(const char *method, const char *version, json_t *extra_params)
{
    json_t *meta = json_pack("{s:s,s:{}}", META_PROTOCOL_VERSION, version, META_CLIENT_CAPS);
    json_t *params = extra_params ? extra_params : json_object();
    json_object_set_new(params, "_meta", meta);
    return json_pack("{s:s,s:i,s:s,s:o}", "jsonrpc", "2.0", "id", 1, "method", method, "params",
                     params);
}

/* a capability (or an extension's settings) that is not an object declares nothing */
static void a_capability_that_is_not_an_object_is_left_out(void **state)
{
    (void)state;
    json_t *clean = json_pack("{s:{},s:{s:{}}}", "elicitation", "extensions", "x/y");
    json_t *got = stateless_declared_caps(clean);
    assert_ptr_equal(got, clean); /* nothing left out: no copy */
    json_decref(got);
    json_t *dirty = json_pack("{s:n,s:b,s:{s:{}},s:{s:n,s:{}},s:{s:s}}", "elicitation", "sampling",
                              1, "roots", "listChanged", "extensions", "a/tasks", "b/ok",
                              "experimental", "z", "on");
    got = stateless_declared_caps(dirty);
    json_t *want = json_pack("{s:{s:{}},s:{s:{}},s:{}}", "roots", "listChanged", "extensions",
                             "b/ok", "experimental");
    assert_true(json_equal(got, want));
    assert_null(stateless_declared_caps(NULL));
    json_decref(got);
    json_decref(want);
    json_decref(dirty);
    json_decref(clean);
}

static void the_claim_is_the_meta_key_or_a_2026_header(void **state)
{
    (void)state;
    json_t *m = req("tools/list", "2026-07-28", NULL);
    assert_true(stateless_claims(m, NULL));
    json_t *plain = json_pack("{s:s,s:i,s:s}", "jsonrpc", "2.0", "id", 1, "method", "tools/list");
    assert_false(stateless_claims(plain, NULL));
    assert_false(stateless_claims(plain, "2025-11-25"));
    assert_false(stateless_claims(plain, "2025-03-26"));
    assert_true(stateless_claims(plain, "2026-07-28"));
    assert_true(stateless_claims(plain, "2027-01-01"));
    /* a batch: by the header, or by one of its messages' _meta */
    json_t *batch = json_pack("[O]", plain);
    assert_false(stateless_claims(batch, NULL));
    assert_true(stateless_claims(batch, "2026-07-28"));
    json_array_append(batch, m);
    assert_true(stateless_claims(batch, NULL));
    json_decref(batch);
    json_decref(m);
    json_decref(plain);
}

static void meta_fields_are_required_and_the_version_checked(void **state)
{
    (void)state;
    char msg[300];
    json_t *data;
    json_t *m = req("tools/list", "2026-07-28", NULL);
    json_t *params = json_object_get(m, "params");
    assert_int_equal(stateless_check_meta(params, msg, sizeof msg, &data), 0);
    json_object_del(json_object_get(params, "_meta"), META_CLIENT_CAPS);
    assert_int_equal(stateless_check_meta(params, msg, sizeof msg, &data), JSONRPC_INVALID_PARAMS);
    assert_null(data);
    json_object_del(params, "_meta");
    assert_int_equal(stateless_check_meta(params, msg, sizeof msg, &data), JSONRPC_INVALID_PARAMS);
    json_decref(m);

    m = req("tools/list", "1900-01-01", NULL);
    assert_int_equal(stateless_check_meta(json_object_get(m, "params"), msg, sizeof msg, &data),
                     MCP_ERR_UNSUPPORTED_VERSION);
    assert_non_null(data);
    assert_string_equal(json_string_value(json_object_get(data, "requested")), "1900-01-01");
    assert_string_equal(json_string_value(json_array_get(json_object_get(data, "supported"), 0)),
                        "2026-07-28");
    assert_int_equal(json_array_size(json_object_get(data, "supported")), 4);
    json_decref(data);
    json_decref(m);
}

static void header_values_decode_plain_and_base64(void **state)
{
    (void)state;
    char out[64];
    size_t n;
    assert_int_equal(stateless_header_decode("us-west1", out, sizeof out, &n), 0);
    assert_string_equal(out, "us-west1");
    assert_int_equal(stateless_header_decode("=?base64?SGVsbG8sIOS4lueVjA==?=", out, sizeof out,
                                             &n),
                     0);
    assert_string_equal(out, "Hello, \xe4\xb8\x96\xe7\x95\x8c");
    assert_int_equal(stateless_header_decode("=?base64?IHBhZGRlZCA=?=", out, sizeof out, &n), 0);
    assert_string_equal(out, " padded ");
    assert_int_equal(stateless_header_decode(" padded", out, sizeof out, &n), -1);
    assert_int_equal(stateless_header_decode("caf\xc3\xa9", out, sizeof out, &n), -1);
    assert_int_equal(stateless_header_decode("=?base64?!!?=", out, sizeof out, &n), -1);
    assert_int_equal(stateless_header_decode("a\x01"
                                             "b",
                                             out, sizeof out, &n),
                     -1);
    char small[4];
    assert_int_equal(stateless_header_decode("toolong", small, sizeof small, &n), -1);
}

/* stateless_check_headers on a message's view, as the HTTP thread calls it */
static const char *check_headers(const json_t *m, const char *version, const char *method,
                                 const char *name, char *msg, size_t msglen)
{
    jr_view_t v;
    jsonrpc_view(m, &v);
    return stateless_check_headers(&v, version, method, name, msg, msglen);
}

/* A value decodes whenever it fits outsize - 1 bytes, in base64 as in plain text: the buffer is
 * not sized by the encoded length's worst case (fuzz_mcp_headers found the empty value refused
 * with a 1-byte buffer, and a server's 4093..4096-byte names were refused in base64 alone). */
static void a_base64_value_that_fits_the_buffer_decodes(void **state)
{
    (void)state;
    char one[1], four[4];
    size_t n = 99;
    assert_int_equal(stateless_header_decode("=?base64?"
                                             "?=",
                                             one, sizeof one, &n),
                     0);
    assert_int_equal(n, 0);
    assert_string_equal(one, "");
    assert_int_equal(stateless_header_decode("=?base64?YWJj?=", four, sizeof four, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(four, "abc");
    assert_int_equal(stateless_header_decode("=?base64?YWI=?=", four, sizeof four, &n), 0);
    assert_string_equal(four, "ab");
    assert_int_equal(stateless_header_decode("=?base64?YWJjZA==?=", four, sizeof four, &n), -1);
    /* the server's own size: a name of MODERN_HEADER_VALUE_MAX bytes, sent in base64 */
    static char big[MODERN_HEADER_VALUE_MAX + 1],
        hdr[16 + B64_ENCODED_SIZE(MODERN_HEADER_VALUE_MAX)];
    static char out[MODERN_HEADER_VALUE_MAX + 1];
    memset(big, '\xe9', MODERN_HEADER_VALUE_MAX);
    for (size_t len = MODERN_HEADER_VALUE_MAX - 4; len <= MODERN_HEADER_VALUE_MAX + 1; len++) {
        memcpy(hdr, "=?base64?", 9);
        size_t e = b64_encode(big, len, hdr + 9, false);
        memcpy(hdr + 9 + e, "?=", 3);
        int want = len <= MODERN_HEADER_VALUE_MAX ? 0 : -1;
        assert_int_equal(stateless_header_decode(hdr, out, sizeof out, &n), want);
        if (want == 0) {
            assert_int_equal(n, len);
            assert_memory_equal(out, big, len);
        }
    }
}

static void mirrored_headers_must_match_the_body(void **state)
{
    (void)state;
    char msg[300];
    json_t *m = req("tools/call", "2026-07-28", json_pack("{s:s}", "name", "echo"));
    assert_null(check_headers(m, "2026-07-28", "tools/call", "echo", msg, sizeof msg));
    assert_null(
        check_headers(m, "2026-07-28", "tools/call", "=?base64?ZWNobw==?=", msg, sizeof msg));
    assert_non_null(check_headers(m, NULL, "tools/call", "echo", msg, sizeof msg));
    assert_non_null(check_headers(m, "2025-11-25", "tools/call", "echo", msg, sizeof msg));
    assert_non_null(check_headers(m, "2026-07-28", NULL, "echo", msg, sizeof msg));
    assert_non_null(check_headers(m, "2026-07-28", "tools/list", "echo", msg, sizeof msg));
    assert_non_null(check_headers(m, "2026-07-28", "tools/call", NULL, msg, sizeof msg));
    assert_non_null(check_headers(m, "2026-07-28", "tools/call", "add", msg, sizeof msg));
    json_decref(m);
    /* Mcp-Name is required whatever the body holds; a name that is not a string is the
     * method's invalid params (checked there), whatever the header */
    m = req("tools/call", "2026-07-28", json_object());
    assert_non_null(check_headers(m, "2026-07-28", "tools/call", NULL, msg, sizeof msg));
    assert_non_null(strstr(msg, "Mcp-Name header is required"));
    assert_null(check_headers(m, "2026-07-28", "tools/call", "echo", msg, sizeof msg));
    assert_non_null(check_headers(m, "2026-07-28", "tools/call", "bad\x01", msg, sizeof msg));
    json_decref(m);
    m = req("tools/call", "2026-07-28", json_pack("{s:i}", "name", 5));
    assert_null(check_headers(m, "2026-07-28", "tools/call", NULL, msg, sizeof msg));
    assert_null(check_headers(m, "2026-07-28", "tools/call", "5", msg, sizeof msg));
    json_decref(m);
    /* no Mcp-Name for a method without a name */
    m = req("tools/list", "2026-07-28", NULL);
    assert_null(check_headers(m, "2026-07-28", "tools/list", NULL, msg, sizeof msg));
    json_decref(m);
}

static void tasks_methods_mirror_the_task_id_in_mcp_name(void **state)
{
    (void)state;
    char msg[300];
    const char *id = "0123456789abcdef0123456789abcdef";
    const char *methods[] = {"tasks/get", "tasks/update", "tasks/cancel"};
    for (size_t i = 0; i < 3; i++) {
        json_t *m = req(methods[i], "2026-07-28", json_pack("{s:s}", "taskId", id));
        assert_null(check_headers(m, "2026-07-28", methods[i], id, msg, sizeof msg));
        assert_non_null(check_headers(m, "2026-07-28", methods[i], NULL, msg, sizeof msg));
        assert_non_null(check_headers(m, "2026-07-28", methods[i], "wrong", msg, sizeof msg));
        assert_non_null(strstr(msg, "params.taskId"));
        json_decref(m);
    }
    /* tasks/result names nothing (and is not a method: 404 comes after the header checks) */
    json_t *m = req("tasks/result", "2026-07-28", json_pack("{s:s}", "taskId", id));
    assert_null(check_headers(m, "2026-07-28", "tasks/result", NULL, msg, sizeof msg));
    json_decref(m);
}

static void input_answers_are_checked_by_method(void **state)
{
    (void)state;
    json_t *ok = json_pack("{s:s}", "action", "accept"), *bad = json_pack("{s:b}", "ignored", 1);
    assert_null(stateless_answer_problem("elicitation/create", ok));
    assert_non_null(stateless_answer_problem("elicitation/create", bad));
    assert_non_null(stateless_answer_problem("sampling/createMessage", ok));
    assert_non_null(stateless_answer_problem("roots/list", ok));
    assert_non_null(stateless_answer_problem("elicitation/create", json_null()));
    json_decref(ok);
    json_decref(bad);
}

/* caching.mdx: a complete result of a cacheable method carries the hints the flags set; an
 * input_required one carries none; one that answers a retry is not cacheable (0, private). */
static void only_complete_results_carry_cache_hints(void **state)
{
    (void)state;
    json_t *first = json_object();
    stateless_decorate(first, NULL, SM_resources_read, 60000, false, false);
    assert_string_equal(json_string_value(json_object_get(first, "resultType")), "complete");
    assert_int_equal(json_integer_value(json_object_get(first, "ttlMs")), 60000);
    assert_string_equal(json_string_value(json_object_get(first, "cacheScope")), "public");

    json_t *asks = json_pack("{s:s,s:s}", "resultType", "input_required", "requestState", "x");
    stateless_decorate(asks, NULL, SM_resources_read, 60000, false, false);
    assert_null(json_object_get(asks, "ttlMs"));
    assert_null(json_object_get(asks, "cacheScope"));
    assert_string_equal(json_string_value(json_object_get(asks, "resultType")), "input_required");

    json_t *retry = json_object();
    stateless_decorate(retry, NULL, SM_resources_read, 60000, false, true);
    assert_int_equal(json_integer_value(json_object_get(retry, "ttlMs")), 0);
    assert_string_equal(json_string_value(json_object_get(retry, "cacheScope")), "private");

    json_t *call = json_object(); /* tools/call: never hints */
    stateless_decorate(call, NULL, SM_tools_call, 60000, false, true);
    assert_null(json_object_get(call, "ttlMs"));
    json_decref(first);
    json_decref(asks);
    json_decref(retry);
    json_decref(call);
}

/* basic/index.mdx, "Error Codes": a handler's code as this revision may emit it. */
static void handler_codes_are_those_the_revision_may_emit(void **state)
{
    (void)state;
    assert_int_equal(stateless_error_code(MCP_ERR_RESOURCE_NOT_FOUND), JSONRPC_INVALID_PARAMS);
    assert_int_equal(stateless_error_code(-32042), JSONRPC_INTERNAL_ERROR);
    assert_int_equal(stateless_error_code(-32099), JSONRPC_INTERNAL_ERROR);
    assert_int_equal(stateless_error_code(-32023), JSONRPC_INTERNAL_ERROR);
    assert_int_equal(stateless_error_code(MCP_ERR_HEADER_MISMATCH), MCP_ERR_HEADER_MISMATCH);
    assert_int_equal(stateless_error_code(MCP_ERR_MISSING_CAPABILITY), MCP_ERR_MISSING_CAPABILITY);
    assert_int_equal(stateless_error_code(MCP_ERR_UNSUPPORTED_VERSION),
                     MCP_ERR_UNSUPPORTED_VERSION);
    assert_int_equal(stateless_error_code(JSONRPC_INVALID_PARAMS), JSONRPC_INVALID_PARAMS);
    assert_int_equal(stateless_error_code(JSONRPC_INTERNAL_ERROR), JSONRPC_INTERNAL_ERROR);
    assert_int_equal(stateless_error_code(MCP_ERR_OVERLOADED), MCP_ERR_OVERLOADED);
    assert_int_equal(stateless_error_code(MCP_ERR_NOT_HERE), MCP_ERR_NOT_HERE);
    assert_int_equal(stateless_error_code(-32019), -32019);
    assert_int_equal(stateless_error_code(-32100), -32100);
    assert_int_equal(stateless_error_code(1234), 1234);
}

static void the_method_table_and_statuses(void **state)
{
    (void)state;
    assert_int_equal(stateless_method_kind("server/discover"), MM_KNOWN);
    assert_int_equal(stateless_method_kind("subscriptions/listen"), MM_KNOWN);
    assert_int_equal(stateless_method_kind("ping"), MM_REMOVED);
    assert_int_equal(stateless_method_kind("initialize"), MM_REMOVED);
    assert_int_equal(stateless_method_kind("logging/setLevel"), MM_REMOVED);
    assert_int_equal(stateless_method_kind("tools/lists"), MM_UNKNOWN);
    assert_int_equal(stateless_method_kind("tasks/get"), MM_KNOWN);
    assert_int_equal(stateless_method_kind("tasks/update"), MM_KNOWN);
    assert_int_equal(stateless_method_kind("tasks/cancel"), MM_KNOWN);
    assert_int_equal(stateless_method_kind("tasks/result"), MM_UNKNOWN); /* SEP-2663 removed it */
    assert_int_equal(stateless_method_kind("tasks/list"), MM_UNKNOWN);
    assert_int_equal(stateless_method_kind(NULL), MM_UNKNOWN);
    assert_int_equal(stateless_http_status(JSONRPC_METHOD_NOT_FOUND), 404);
    assert_int_equal(stateless_http_status(MCP_ERR_HEADER_MISMATCH), 400);
    assert_int_equal(stateless_http_status(MCP_ERR_MISSING_CAPABILITY), 400);
    assert_int_equal(stateless_http_status(MCP_ERR_UNSUPPORTED_VERSION), 400);
    assert_int_equal(stateless_http_status(JSONRPC_INVALID_PARAMS), 200);
}

/* The KNOWN and REMOVED lists are the method table's MODERN and removed_in columns: every row
 * agrees, and the slots that are not methods are unknown. */
static void known_and_removed_are_what_the_method_table_says(void **state)
{
    (void)state;
    int known = 0, removed = 0;
    for (int i = 0; i < SM__COUNT; i++) {
        const method_rule_t *r = &method_table[i];
        stateless_method_t want = i >= SM_notification            ? MM_UNKNOWN
                                  : (r->eras & METHOD_ERA_MODERN) ? MM_KNOWN
                                  : r->removed_in                 ? MM_REMOVED
                                                                  : MM_UNKNOWN;
        if (stateless_method_kind(r->name) != want)
            fail_msg("%s: kind %d, expected %d", r->name, (int)stateless_method_kind(r->name),
                     (int)want);
        known += want == MM_KNOWN;
        removed += want == MM_REMOVED;
    }
    /* what the revision had before the table made the lists: 13 methods, 5 removed */
    assert_int_equal(known, 13);
    assert_int_equal(removed, 5);
}

/* Mcp-Name is required exactly for the methods whose row names a target, and compared with
 * that params member. */
static void mcp_name_follows_each_methods_target(void **state)
{
    (void)state;
    char msg[300];
    for (int i = 0; i < SM_notification; i++) {
        const method_rule_t *r = &method_table[i];
        if (!(r->eras & METHOD_ERA_MODERN))
            continue;
        json_t *params = json_pack("{s:s,s:s,s:s}", "name", "n1", "uri", "u1", "taskId", "t1");
        json_t *m = req(r->name, "2026-07-28", params);
        const char *without = check_headers(m, "2026-07-28", r->name, NULL, msg, sizeof msg);
        if (r->target) {
            if (!without)
                fail_msg("%s: no Mcp-Name was accepted, though it mirrors params.%s", r->name,
                         r->target);
            const char *right = json_string_value(json_object_get(params, r->target));
            if (check_headers(m, "2026-07-28", r->name, right, msg, sizeof msg))
                fail_msg("%s: Mcp-Name %s refused: %s", r->name, right, msg);
            assert_non_null(check_headers(m, "2026-07-28", r->name, "x", msg, sizeof msg));
        } else if (without) {
            fail_msg("%s: names no target, yet Mcp-Name was required: %s", r->name, msg);
        }
        json_decref(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_claim_is_the_meta_key_or_a_2026_header),
        cmocka_unit_test(a_capability_that_is_not_an_object_is_left_out),
        cmocka_unit_test(meta_fields_are_required_and_the_version_checked),
        cmocka_unit_test(header_values_decode_plain_and_base64),
        cmocka_unit_test(a_base64_value_that_fits_the_buffer_decodes),
        cmocka_unit_test(mirrored_headers_must_match_the_body),
        cmocka_unit_test(only_complete_results_carry_cache_hints),
        cmocka_unit_test(handler_codes_are_those_the_revision_may_emit),
        cmocka_unit_test(the_method_table_and_statuses),
        cmocka_unit_test(tasks_methods_mirror_the_task_id_in_mcp_name),
        cmocka_unit_test(input_answers_are_checked_by_method),
        cmocka_unit_test(known_and_removed_are_what_the_method_table_says),
        cmocka_unit_test(mcp_name_follows_each_methods_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
