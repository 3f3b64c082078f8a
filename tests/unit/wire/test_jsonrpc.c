/* Unit tests: JSON-RPC 2.0 classification and construction (src/wire/jsonrpc.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"
#include "core/jsonparse.h"
#include "wire/jsonrpc.h"

/* Classifies the JSON text; *why is set only on JR_INVALID (NULL otherwise). */
static jr_kind_t classify_text(const char *text, const char **why)
{
    json_error_t e;
    json_t *msg = json_loads(text, JSON_DECODE_ANY, &e);
    assert_non_null(msg);
    const char *w = NULL;
    jr_kind_t k = jsonrpc_classify(msg, &w);
    json_decref(msg);
    if (k == JR_INVALID) {
        assert_non_null(w);
        assert_true(strlen(w) > 0);
    }
    if (why)
        *why = w;
    return k;
}

static void assert_invalid(const char *text)
{
    const char *why = NULL;
    jr_kind_t k = classify_text(text, &why);
    if (k != JR_INVALID)
        fail_msg("expected %s to be invalid, got kind %d", text, (int)k);
}

/* ---- valid shapes ---- */

static void a_request_with_an_integer_id_is_a_request(void **state)
{
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", NULL),
                     JR_REQUEST);
}

static void a_request_with_a_string_id_and_object_params_is_a_request(void **state)
{
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"tools/call\","
                                   "\"params\":{\"name\":\"x\"}}",
                                   NULL),
                     JR_REQUEST);
}

static void a_request_with_a_negative_integer_id_is_a_request(void **state)
{
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"m\"}", NULL),
                     JR_REQUEST);
}

static void a_message_with_a_method_and_no_id_is_a_notification(void **state)
{
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
                                   NULL),
                     JR_NOTIFICATION);
}

static void a_notification_may_carry_object_params(void **state)
{
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{}}", NULL),
                     JR_NOTIFICATION);
}

static void a_result_with_an_id_is_a_response(void **state)
{
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", NULL),
                     JR_RESPONSE);
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":null}", NULL),
                     JR_RESPONSE);
}

static void an_error_with_an_integer_code_is_a_response(void **state)
{
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":3,"
                                   "\"error\":{\"code\":-32601,\"message\":\"no\"}}",
                                   NULL),
                     JR_RESPONSE);
}

static void an_error_response_with_a_null_id_is_valid(void **state)
{
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":null,"
                                   "\"error\":{\"code\":-32700,\"message\":\"parse\"}}",
                                   NULL),
                     JR_RESPONSE);
}

/* ---- invalid shapes ---- */

static void a_non_object_message_is_invalid(void **state)
{
    assert_invalid("[]");
    assert_invalid("[{\"jsonrpc\":\"2.0\",\"method\":\"m\"}]");
    assert_invalid("\"2.0\"");
    assert_invalid("42");
    assert_invalid("null");
    assert_invalid("true");
}

static void a_missing_or_wrong_jsonrpc_member_is_invalid(void **state)
{
    assert_invalid("{\"id\":1,\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":2.0,\"id\":1,\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":\"2.0 \",\"id\":1,\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":null,\"id\":1,\"method\":\"m\"}");
}

static void a_non_string_or_empty_method_is_invalid(void **state)
{
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"method\":[\"m\"]}");
}

static void params_that_are_not_an_object_are_invalid(void **state)
{
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[1,2]}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":\"x\"}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":3}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":null}");
}

static void a_request_id_that_is_null_bool_real_or_object_is_invalid(void **state)
{
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":false,\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}");
}

/* The request parser reads an integer literal past 64 bits as a real (core/jsonparse.h): as
 * an id it is invalid, as 1.5 is (a double cannot echo 9223372036854775809 exactly), and no
 * answer echoes it */
static void a_request_id_past_64_bits_is_invalid_and_not_echoed(void **state)
{
    (void)state;
    static const char *const TEXTS[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775808,\"method\":\"m\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775809,\"method\":\"m\"}",
    };
    for (size_t i = 0; i < 2; i++) {
        json_t *msg = json_parse_buf(TEXTS[i], strlen(TEXTS[i]), NULL, 0, NULL);
        assert_non_null(msg);
        const char *why = NULL;
        assert_int_equal(jsonrpc_classify(msg, &why), JR_INVALID);
        assert_string_equal(why, "a request \"id\" must be a 64-bit integer or a string of at "
                                 "most 256 bytes");
        assert_null(jsonrpc_request_id(msg));
        json_decref(msg);
    }
    const char *edge = "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"m\"}";
    json_t *msg = json_parse_buf(edge, strlen(edge), NULL, 0, NULL);
    const char *why = NULL;
    assert_int_equal(jsonrpc_classify(msg, &why), JR_REQUEST);
    json_decref(msg);
}

/* a repeat is a request whose id (by value and type: 7 is not "7") an earlier request of the
 * batch has; it becomes JR_INVALID and says why. Notifications, responses and invalid items
 * neither repeat nor count. */
static void a_batch_repeat_is_a_later_request_with_an_earlier_requests_id(void **state)
{
    (void)state;
    const char *text = "[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"a\"},"
                       "{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"method\":\"a\"},"
                       "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}},"
                       "{\"jsonrpc\":\"1.0\",\"id\":8,\"method\":\"a\"},"
                       "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"a\"},"
                       "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"b\"},"
                       "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"a\"},"
                       "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"a\"},"
                       "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"a\"},"
                       "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}]";
    json_t *batch = json_parse_buf(text, strlen(text), NULL, 0, NULL);
    assert_non_null(batch);
    size_t n = json_array_size(batch);
    signed char kinds[16], before[16];
    const char *why;
    for (size_t i = 0; i < n; i++)
        before[i] = kinds[i] = (signed char)jsonrpc_classify(json_array_get(batch, i), &why);
    static const bool WANT[] = {false, false, false, false, false, true, false, false, true, false};
    assert_int_equal(n, sizeof WANT / sizeof WANT[0]);
    assert_int_equal(jsonrpc_batch_repeats(batch, kinds), 2);
    for (size_t i = 0; i < n; i++) {
        signed char want = WANT[i] ? (signed char)JR_INVALID : before[i];
        if (kinds[i] != want)
            fail_msg("item %zu: kind %d, want %d", i, kinds[i], want);
    }
    assert_non_null(strstr(jsonrpc_batch_item_why(json_array_get(batch, 5)), "duplicate id"));
    assert_non_null(strstr(jsonrpc_batch_item_why(json_array_get(batch, 3)), "\"jsonrpc\""));
    /* the id their -32600 echoes: a request's where it can be read, never a response's */
    assert_int_equal(json_integer_value(jsonrpc_batch_item_id(json_array_get(batch, 5))), 7);
    assert_int_equal(json_integer_value(jsonrpc_batch_item_id(json_array_get(batch, 3))), 8);
    assert_null(jsonrpc_batch_item_id(json_array_get(batch, 2)));
    assert_null(jsonrpc_batch_item_id(json_array_get(batch, 9)));
    json_decref(batch);
}

static void a_method_together_with_result_or_error_is_invalid(void **state)
{
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"result\":{}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\","
                   "\"error\":{\"code\":1,\"message\":\"x\"}}");
}

static void a_response_with_both_result_and_error_is_invalid(void **state)
{
    const char *why = NULL;
    assert_int_equal(classify_text("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},"
                                   "\"error\":{\"code\":1,\"message\":\"x\"}}",
                                   &why),
                     JR_INVALID);
    assert_non_null(strstr(why, "both"));
}

static void a_message_with_neither_method_nor_result_nor_error_is_invalid(void **state)
{
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1}");
    assert_invalid("{\"jsonrpc\":\"2.0\"}");
}

static void an_error_without_an_integer_code_is_invalid(void **state)
{
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"x\"}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"-1\",\"message\":\"x\"}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1.5,\"message\":\"x\"}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"boom\"}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":[1]}");
}

static void an_error_response_id_must_be_present_and_not_bool_or_real(void **state)
{
    assert_invalid("{\"jsonrpc\":\"2.0\",\"error\":{\"code\":1,\"message\":\"x\"}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":true,\"error\":{\"code\":1,\"message\":\"x\"}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":2.5,\"error\":{\"code\":1,\"message\":\"x\"}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{\"code\":1,\"message\":\"x\"}}");
}

static void a_result_response_needs_a_string_or_integer_id(void **state)
{
    assert_invalid("{\"jsonrpc\":\"2.0\",\"result\":{}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":false,\"result\":{}}");
    assert_invalid("{\"jsonrpc\":\"2.0\",\"id\":1.0,\"result\":{}}");
}

/* ---- jsonrpc_id_valid ---- */

/* ---- the id an error echoes ---- */

/* jsonrpc_request_id on the JSON text, dumped ("" for NULL). */
static void assert_echoed_id(const char *text, const char *want)
{
    json_error_t e;
    json_t *msg = json_loads(text, JSON_DECODE_ANY, &e);
    assert_non_null(msg);
    const json_t *id = jsonrpc_request_id(msg);
    char *got = id ? json_dumps(id, JSON_ENCODE_ANY) : NULL;
    if (strcmp(got ? got : "", want) != 0)
        fail_msg("%s: echoed id %s, expected %s", text, got ? got : "NULL", want);
    free(got);
    json_decref(msg);
}

static void a_single_request_has_its_integer_or_string_id_echoed(void **state)
{
    assert_echoed_id("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", "7");
    assert_echoed_id("{\"jsonrpc\":\"2.0\",\"id\":\"r-7\",\"method\":\"ping\"}", "\"r-7\"");
    assert_echoed_id("{\"jsonrpc\":\"2.0\",\"id\":-1,\"method\":\"x\",\"params\":{}}", "-1");
}

static void nothing_else_has_an_id_to_echo(void **state)
{
    assert_echoed_id("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", "");
    assert_echoed_id("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", "");
    assert_echoed_id("[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}]", "");
    assert_echoed_id("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}", "");
    assert_echoed_id("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":[]}", "");
    assert_echoed_id("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", "");
    assert_echoed_id("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", "");
    assert_echoed_id("\"text\"", "");
    assert_null(jsonrpc_request_id(NULL));
}

static void only_strings_and_integers_are_valid_ids(void **state)
{
    json_t *s = json_string("x"), *i = json_integer(0), *r = json_real(1.0), *n = json_null(),
           *t = json_true(), *o = json_object(), *a = json_array();
    assert_true(jsonrpc_id_valid(s));
    assert_true(jsonrpc_id_valid(i));
    assert_false(jsonrpc_id_valid(r));
    assert_false(jsonrpc_id_valid(n));
    assert_false(jsonrpc_id_valid(t));
    assert_false(jsonrpc_id_valid(o));
    assert_false(jsonrpc_id_valid(a));
    assert_false(jsonrpc_id_valid(NULL));
    json_t *all[] = {s, i, r, n, t, o, a};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        json_decref(all[k]);
}

static void a_string_id_is_valid_up_to_its_bound(void **state)
{
    char text[JSONRPC_MAX_ID_BYTES + 2];
    memset(text, 'i', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    json_t *over = json_string(text);                      /* 257 bytes */
    json_t *at = json_stringn(text, JSONRPC_MAX_ID_BYTES); /* 256 bytes */
    assert_true(jsonrpc_id_valid(at));
    assert_false(jsonrpc_id_valid(over));
    json_t *req = json_pack("{s:s,s:O,s:s}", "jsonrpc", "2.0", "id", over, "method", "ping");
    const char *why = NULL;
    assert_int_equal(jsonrpc_classify(req, &why), JR_INVALID);
    assert_non_null(strstr(why, "256 bytes"));
    json_object_set(req, "id", at);
    assert_int_equal(jsonrpc_classify(req, &why), JR_REQUEST);
    json_t *resp = json_pack("{s:s,s:O,s:{}}", "jsonrpc", "2.0", "id", over, "result");
    assert_int_equal(jsonrpc_classify(resp, &why), JR_INVALID);
    json_decref(resp);
    json_decref(req);
    json_decref(over);
    json_decref(at);
}

/* ---- construction ---- */

static void a_result_message_carries_the_id_and_the_stolen_result(void **state)
{
    json_t *id = json_string("req-1");
    json_t *m = jsonrpc_result(id, json_pack("{s:i}", "n", 5));
    const char *why = NULL;
    assert_int_equal(jsonrpc_classify(m, &why), JR_RESPONSE);
    assert_string_equal(json_string_value(json_object_get(m, "jsonrpc")), "2.0");
    assert_true(json_equal(json_object_get(m, "id"), id));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "result"), "n")), 5);
    json_decref(m);
    /* the id was borrowed: still ours and still alive */
    assert_string_equal(json_string_value(id), "req-1");
    json_decref(id);
}

static void a_result_message_with_a_null_result_carries_an_empty_object(void **state)
{
    json_t *id = json_integer(9);
    json_t *m = jsonrpc_result(id, NULL);
    json_t *res = json_object_get(m, "result");
    assert_true(json_is_object(res));
    assert_int_equal(json_object_size(res), 0);
    json_decref(m);
    json_decref(id);
}

static void an_error_message_has_code_message_and_data(void **state)
{
    json_t *id = json_integer(4);
    json_t *m = jsonrpc_error(id, JSONRPC_INVALID_PARAMS, "bad args", json_string("detail"));
    const char *why = NULL;
    assert_int_equal(jsonrpc_classify(m, &why), JR_RESPONSE);
    json_t *err = json_object_get(m, "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32602);
    assert_string_equal(json_string_value(json_object_get(err, "message")), "bad args");
    assert_string_equal(json_string_value(json_object_get(err, "data")), "detail");
    assert_int_equal(json_integer_value(json_object_get(m, "id")), 4);
    json_decref(m);
    json_decref(id);
}

static void an_error_message_without_an_id_has_a_null_id_and_no_data(void **state)
{
    json_t *m = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR, "parse error", NULL);
    json_t *id = json_object_get(m, "id");
    assert_non_null(id);
    assert_true(json_is_null(id));
    assert_null(json_object_get(json_object_get(m, "error"), "data"));
    const char *why = NULL;
    assert_int_equal(jsonrpc_classify(m, &why), JR_RESPONSE);
    json_decref(m);
}

static void a_notification_message_has_no_id(void **state)
{
    json_t *m = jsonrpc_notification("notifications/progress", json_pack("{s:i}", "progress", 1));
    const char *why = NULL;
    assert_int_equal(jsonrpc_classify(m, &why), JR_NOTIFICATION);
    assert_null(json_object_get(m, "id"));
    assert_string_equal(json_string_value(json_object_get(m, "method")), "notifications/progress");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "params"), "progress")),
                     1);
    json_decref(m);

    m = jsonrpc_notification("n", NULL);
    assert_null(json_object_get(m, "params"));
    assert_int_equal(jsonrpc_classify(m, &why), JR_NOTIFICATION);
    json_decref(m);
}

static void dump_is_compact_one_line_and_reports_its_length(void **state)
{
    json_t *id = json_integer(1);
    json_t *m = jsonrpc_result(id, json_pack("{s:s}", "text", "a\nb"));
    size_t len = 0;
    char *s = jsonrpc_dump(m, &len);
    assert_int_equal(len, strlen(s));
    assert_null(strchr(s, '\n'));
    assert_null(strstr(s, ", "));
    assert_null(strstr(s, ": "));
    json_error_t e;
    json_t *back = json_loads(s, 0, &e);
    assert_non_null(back);
    assert_true(json_equal(back, m));
    json_decref(back);
    free(s);
    s = jsonrpc_dump(m, NULL);
    assert_non_null(s);
    free(s);
    json_decref(m);
    json_decref(id);
}

/* ---- strings holding U+0000 ---- */

static void a_string_holding_nul_is_no_c_string_and_matches_no_name(void **state)
{
    json_t *plain = json_string("ping"), *nul = json_stringn("ping\0x", 6), *num = json_integer(1);
    assert_string_equal(jsonrpc_cstr(plain), "ping");
    assert_null(jsonrpc_cstr(nul));
    assert_null(jsonrpc_cstr(num));
    assert_null(jsonrpc_cstr(NULL));
    assert_true(jsonrpc_str_is(plain, "ping"));
    assert_false(jsonrpc_str_is(nul, "ping"));
    assert_false(jsonrpc_str_is(plain, "pin"));
    assert_false(jsonrpc_str_is(num, "1"));
    json_decref(plain);
    json_decref(nul);
    json_decref(num);
}

static void a_jsonrpc_version_holding_nul_is_invalid(void **state)
{
    json_t *msg = json_pack("{s:s%,s:i,s:s}", "jsonrpc", "2.0\0", (size_t)4, "id", 1, "method",
                            "ping");
    const char *why = NULL;
    assert_int_equal(jsonrpc_classify(msg, &why), JR_INVALID);
    assert_non_null(strstr(why, "2.0"));
    json_decref(msg);
}

static void quote_name_shows_nul_and_never_cuts_a_character(void **state)
{
    char out[16];
    json_t *v = json_stringn("a\0b", 3);
    jsonrpc_quote_name(v, out, sizeof out);
    assert_string_equal(out, "a\\u0000b");
    json_decref(v);
    v = json_string("abcdefghij\xc3\xa9\xc3\xa9\xc3\xa9"); /* 10 ASCII then three 2-byte é */
    jsonrpc_quote_name(v, out, 12);                        /* room for 11: half an é */
    assert_string_equal(out, "abcdefghij");
    jsonrpc_quote_name(v, out, 13);
    assert_string_equal(out, "abcdefghij\xc3\xa9");
    json_decref(v);
    v = json_string("abcdefghij\xe2\x82\xac"); /* a 3-byte € with room for two of its bytes */
    jsonrpc_quote_name(v, out, 13);
    assert_string_equal(out, "abcdefghij");
    json_decref(v);
    v = json_stringn("abcdefghijk\0", 12); /* no room for the whole \u0000 */
    jsonrpc_quote_name(v, out, 16);
    assert_string_equal(out, "abcdefghijk");
    json_decref(v);
}

/* jsonrpc_result_into's text for (id, result, extra), NUL-terminated (caller frees). */
static char *result_text(const json_t *id, const char *result, const char *extra)
{
    json_t *r = result ? json_loads(result, JSON_DECODE_ANY, NULL) : NULL;
    buf_t b = {0};
    buf_add(&b, "x", 1); /* appends: what was there stays */
    jsonrpc_result_into(&b, id, r, extra, extra ? strlen(extra) : 0);
    json_decref(r);
    size_t len;
    char *t = buf_steal(&b, &len);
    assert_int_equal(len, strlen(t));
    return t;
}

static void a_result_text_is_the_envelope_with_the_result_and_extra_members_inside_it(void **state)
{
    (void)state;
    json_t *id = json_integer(7);
    char *t = result_text(id, "{\"a\":1}", NULL);
    assert_string_equal(t, "x{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}");
    free(t);
    t = result_text(id, "{\"a\":\"}\"}", "\"k\":true");
    assert_string_equal(t, "x{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":\"}\",\"k\":true}}");
    free(t);
    t = result_text(id, "{}", "\"k\":true"); /* no comma before the first member */
    assert_string_equal(t, "x{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"k\":true}}");
    free(t);
    t = result_text(id, NULL, "\"k\":1");
    assert_string_equal(t, "x{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"k\":1}}");
    free(t);
    t = result_text(id, "[1]", "\"k\":1"); /* only an object takes the extra members */
    assert_string_equal(t, "x{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":[1]}");
    free(t);
    json_decref(id);
    id = json_string("r\"1");
    t = result_text(id, "{}", NULL);
    assert_string_equal(t, "x{\"jsonrpc\":\"2.0\",\"id\":\"r\\\"1\",\"result\":{}}");
    free(t);
    json_decref(id);
    t = result_text(NULL, "{}", NULL);
    assert_string_equal(t, "x{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
    free(t);
}

static void text_len_finds_the_end_of_the_first_object_past_brackets_in_strings(void **state)
{
    (void)state;
    const char *two = "{\"a\":\"}]\\\"{\",\"b\":[{}]},{\"c\":1}";
    size_t first = strlen("{\"a\":\"}]\\\"{\",\"b\":[{}]}");
    assert_int_equal(jsonrpc_text_len(two, strlen(two)), first);
    assert_int_equal(jsonrpc_text_len(two + first + 1, strlen(two + first + 1)), 7);
    assert_int_equal(jsonrpc_text_len("{\"a\":", 5), 5); /* not closed: all of it */
}

/* The slot the method table gives a message's method: by its JSON length, so a name holding
 * U+0000 is "other", never the method it starts with. */
static void a_method_member_finds_its_slot_and_one_holding_nul_is_other(void **state)
{
    (void)state;
    json_t *m = json_string("tools/call");
    assert_int_equal(jsonrpc_method_slot(m), SM_tools_call);
    json_decref(m);
    m = json_stringn("ping\0x", 6);
    assert_int_equal(jsonrpc_method_slot(m), SM_other);
    json_decref(m);
    m = json_stringn("ping\0", 5);
    assert_int_equal(jsonrpc_method_slot(m), SM_other);
    json_decref(m);
    m = json_string("notifications/progress");
    assert_int_equal(jsonrpc_method_slot(m), SM_notification);
    json_decref(m);
    m = json_integer(1);
    assert_int_equal(jsonrpc_method_slot(m), SM_other);
    json_decref(m);
    assert_int_equal(jsonrpc_method_slot(NULL), SM_other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_request_with_an_integer_id_is_a_request),
        cmocka_unit_test(a_request_with_a_string_id_and_object_params_is_a_request),
        cmocka_unit_test(a_request_with_a_negative_integer_id_is_a_request),
        cmocka_unit_test(a_message_with_a_method_and_no_id_is_a_notification),
        cmocka_unit_test(a_notification_may_carry_object_params),
        cmocka_unit_test(a_result_with_an_id_is_a_response),
        cmocka_unit_test(an_error_with_an_integer_code_is_a_response),
        cmocka_unit_test(an_error_response_with_a_null_id_is_valid),
        cmocka_unit_test(a_non_object_message_is_invalid),
        cmocka_unit_test(a_missing_or_wrong_jsonrpc_member_is_invalid),
        cmocka_unit_test(a_non_string_or_empty_method_is_invalid),
        cmocka_unit_test(params_that_are_not_an_object_are_invalid),
        cmocka_unit_test(a_request_id_that_is_null_bool_real_or_object_is_invalid),
        cmocka_unit_test(a_request_id_past_64_bits_is_invalid_and_not_echoed),
        cmocka_unit_test(a_batch_repeat_is_a_later_request_with_an_earlier_requests_id),
        cmocka_unit_test(a_method_together_with_result_or_error_is_invalid),
        cmocka_unit_test(a_response_with_both_result_and_error_is_invalid),
        cmocka_unit_test(a_message_with_neither_method_nor_result_nor_error_is_invalid),
        cmocka_unit_test(an_error_without_an_integer_code_is_invalid),
        cmocka_unit_test(an_error_response_id_must_be_present_and_not_bool_or_real),
        cmocka_unit_test(a_result_response_needs_a_string_or_integer_id),
        cmocka_unit_test(only_strings_and_integers_are_valid_ids),
        cmocka_unit_test(a_string_id_is_valid_up_to_its_bound),
        cmocka_unit_test(a_single_request_has_its_integer_or_string_id_echoed),
        cmocka_unit_test(nothing_else_has_an_id_to_echo),
        cmocka_unit_test(a_result_message_carries_the_id_and_the_stolen_result),
        cmocka_unit_test(a_result_message_with_a_null_result_carries_an_empty_object),
        cmocka_unit_test(an_error_message_has_code_message_and_data),
        cmocka_unit_test(an_error_message_without_an_id_has_a_null_id_and_no_data),
        cmocka_unit_test(a_notification_message_has_no_id),
        cmocka_unit_test(a_method_member_finds_its_slot_and_one_holding_nul_is_other),
        cmocka_unit_test(dump_is_compact_one_line_and_reports_its_length),
        cmocka_unit_test(a_string_holding_nul_is_no_c_string_and_matches_no_name),
        cmocka_unit_test(a_jsonrpc_version_holding_nul_is_invalid),
        cmocka_unit_test(quote_name_shows_nul_and_never_cuts_a_character),
        cmocka_unit_test(a_result_text_is_the_envelope_with_the_result_and_extra_members_inside_it),
        cmocka_unit_test(text_len_finds_the_end_of_the_first_object_past_brackets_in_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
