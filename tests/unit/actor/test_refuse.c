/* Unit tests: what replaces the frames of a turn whose writes were refused (src/actor/refuse.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "actor/refuse.h"
#include "core/jsonparse.h"

static const conn_ref_t CONN = {0, 3, 7};

static hmsg_t *frame(hmsg_type_t type, const char *body)
{
    hmsg_t *m = hmsg_new(type, CONN);
    if (body) {
        m->body = strdup(body);
        m->len = strlen(body);
    }
    return m;
}

/* The JSON body of a replacement reply. */
static json_t *body_of(const hmsg_t *m)
{
    json_t *j = json_parse_buf(m->body, m->len, NULL, 0, NULL);
    assert_non_null(j);
    return j;
}

static void a_json_reply_becomes_503_with_retry_after_and_its_id(void **state)
{
    hmsg_t *m = refuse_frame(frame(HM_REPLY,
                                   "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"result\":{\"n\":8}}"),
                             REFUSE_MESSAGE);
    assert_non_null(m);
    assert_int_equal(m->type, HM_REPLY);
    assert_int_equal(m->status, 503);
    assert_string_equal(m->retry_after, REFUSE_RETRY_AFTER);
    assert_true(m->conn.slot == CONN.slot && m->conn.gen == CONN.gen);
    json_t *b = body_of(m);
    assert_string_equal(json_string_value(json_object_get(b, "id")), "r1");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "error"), "code")),
                     -32603);
    assert_null(json_object_get(b, "result"));
    assert_null(strstr(m->body, "\"n\":8"));
    json_decref(b);
    hmsg_free(m);
}

static void a_202_becomes_503_with_a_null_id(void **state)
{
    hmsg_t *m = frame(HM_REPLY, NULL);
    m->status = 202;
    m = refuse_frame(m, REFUSE_MESSAGE);
    assert_int_equal(m->status, 503);
    json_t *b = body_of(m);
    assert_true(json_is_null(json_object_get(b, "id")));
    json_decref(b);
    hmsg_free(m);
}

static void a_session_header_is_not_kept(void **state)
{
    hmsg_t *m = frame(HM_REPLY, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
    strcpy(m->session_id, "0123456789abcdef0123456789abcdef");
    m = refuse_frame(m, REFUSE_MESSAGE);
    assert_string_equal(m->session_id, "");
    hmsg_free(m);
}

static void an_sse_start_becomes_503_echoing_the_id_it_carries(void **state)
{
    hmsg_t *m = frame(HM_SSE_START, "retry: 1000\nid: t-p1:01\ndata: \n\n");
    m->req_id = strdup("42");
    m = refuse_frame(m, REFUSE_MESSAGE);
    assert_int_equal(m->type, HM_REPLY);
    assert_int_equal(m->status, 503);
    json_t *b = body_of(m);
    assert_int_equal(json_integer_value(json_object_get(b, "id")), 42);
    json_decref(b);
    hmsg_free(m);
}

static void more_sse_bytes_keep_only_an_unnumbered_error_per_response(void **state)
{
    hmsg_t *m =
        frame(HM_SSE_DATA,
              "id: t-p1:02\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"
              "id: t-p1:03\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"secret\":1}}\n\n");
    m = refuse_frame(m, REFUSE_MESSAGE);
    assert_non_null(m);
    assert_int_equal(m->type, HM_SSE_DATA);
    assert_null(strstr(m->body, "id: "));
    assert_null(strstr(m->body, "secret"));
    assert_null(strstr(m->body, "notifications/message"));
    json_t *ids = refuse_response_ids_in_sse(m->body, m->len);
    assert_int_equal(json_array_size(ids), 1);
    assert_int_equal(json_integer_value(json_array_get(ids, 0)), 5);
    json_decref(ids);
    assert_non_null(strstr(m->body, "-32603"));
    hmsg_free(m);
}

static void sse_bytes_without_a_response_are_dropped(void **state)
{
    hmsg_t *m = frame(HM_SSE_DATA, "id: t-p1:02\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n");
    assert_null(refuse_frame(m, REFUSE_MESSAGE));
}

static void the_end_of_a_stream_is_kept(void **state)
{
    hmsg_t *m = frame(HM_SSE_END, NULL);
    hmsg_t *r = refuse_frame(m, REFUSE_MESSAGE);
    assert_ptr_equal(r, m);
    hmsg_free(r);
}

static void response_ids_are_found_across_split_data_lines_and_batches(void **state)
{
    const char *t = "data: [{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},\r\n"
                    "data: {\"jsonrpc\":\"2.0\",\"id\":\"b\",\"error\":{}}]\r\n\r\n"
                    "data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"elicitation/create\"}\n\n"
                    "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}";
    json_t *ids = refuse_response_ids_in_sse(t, strlen(t));
    assert_int_equal(json_array_size(ids), 3);
    assert_int_equal(json_integer_value(json_array_get(ids, 0)), 1);
    assert_string_equal(json_string_value(json_array_get(ids, 1)), "b");
    assert_int_equal(json_integer_value(json_array_get(ids, 2)), 3);
    json_decref(ids);
}

/* "{"jsonrpc":"2.0","id":ID,"result":{"v":[[...0...]]}}" with n arrays, as the server writes a
 * handler's result (malloc'd). */
static char *deep_response(const char *id, int n)
{
    size_t cap = strlen(id) + 2 * (size_t)n + 64;
    char *t = malloc(cap);
    if (!t)
        abort();
    size_t len = (size_t)snprintf(t, cap, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"v\":", id);
    memset(t + len, '[', (size_t)n);
    len += (size_t)n;
    t[len++] = '0';
    memset(t + len, ']', (size_t)n);
    len += (size_t)n;
    memcpy(t + len, "}}", 3);
    return t;
}

static void the_id_of_a_response_too_deep_to_parse_is_found(void **state)
{
    (void)state;
    /* a result past the parser's 2048 levels (a handler's may nest 50,000): its stream got no
     * error at all when its turn was refused */
    char *one = deep_response("\"a,\\\",\\\"result\\\":\"", 3000); /* id "a,\",\"result\":" */
    char *two = deep_response("7", 50000);
    size_t cap = strlen(one) + strlen(two) + 64;
    char *sse = malloc(cap);
    if (!sse)
        abort();
    snprintf(sse, cap, "data: %s\n\n", one);
    json_t *ids = refuse_response_ids_in_sse(sse, strlen(sse));
    assert_int_equal(json_array_size(ids), 1);
    assert_string_equal(json_string_value(json_array_get(ids, 0)), "a,\",\"result\":");
    json_decref(ids);
    /* a batch's, each of them; a reply of one answers with its id */
    snprintf(sse, cap, "data: [%s,{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}},%s]", one, two);
    ids = refuse_response_ids_in_sse(sse, strlen(sse));
    assert_int_equal(json_array_size(ids), 3);
    assert_int_equal(json_integer_value(json_array_get(ids, 1)), 5);
    assert_int_equal(json_integer_value(json_array_get(ids, 2)), 7);
    json_decref(ids);
    /* an error response beside it is one of the batch's too (not a batch of one); an id no
     * request may have (null, a real) is none */
    snprintf(sse, cap,
             "data: [%s,{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":1,\"message\":\"x\"}},"
             "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}},{\"jsonrpc\":\"2.0\",\"id\":1.5,"
             "\"result\":{}}]",
             one);
    ids = refuse_response_ids_in_sse(sse, strlen(sse));
    assert_int_equal(json_array_size(ids), 2);
    assert_int_equal(json_integer_value(json_array_get(ids, 1)), 2);
    json_decref(ids);
    hmsg_t *m = refuse_frame(frame(HM_REPLY, two), REFUSE_MESSAGE);
    json_t *b = body_of(m);
    assert_int_equal(json_integer_value(json_object_get(b, "id")), 7);
    json_decref(b);
    hmsg_free(m);
    free(sse);
    free(one);
    free(two);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_json_reply_becomes_503_with_retry_after_and_its_id),
        cmocka_unit_test(a_202_becomes_503_with_a_null_id),
        cmocka_unit_test(a_session_header_is_not_kept),
        cmocka_unit_test(an_sse_start_becomes_503_echoing_the_id_it_carries),
        cmocka_unit_test(more_sse_bytes_keep_only_an_unnumbered_error_per_response),
        cmocka_unit_test(sse_bytes_without_a_response_are_dropped),
        cmocka_unit_test(the_end_of_a_stream_is_kept),
        cmocka_unit_test(response_ids_are_found_across_split_data_lines_and_batches),
        cmocka_unit_test(the_id_of_a_response_too_deep_to_parse_is_found),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
