/* Unit tests: mcpbench's verdict on a JSON-RPC answer (bench/mb_mcp.c over bench/mb_http.c),
 * against a canned evhttp responder on 127.0.0.1 in the same loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>

#include "mb_mcp.h"

typedef struct canned {
    const char *ctype;
    const char *body;
} canned_t;

static canned_t answer;

/* > 0: the body goes out chunked (Transfer-Encoding), `split` bytes a chunk */
static size_t split;

static void on_request(struct evhttp_request *req, void *arg)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", answer.ctype);
    if (!split) {
        evbuffer_add(evhttp_request_get_output_buffer(req), answer.body, strlen(answer.body));
        evhttp_send_reply(req, 200, "OK", NULL);
        return;
    }
    evhttp_send_reply_start(req, 200, "OK");
    struct evbuffer *chunk = evbuffer_new();
    for (size_t off = 0, n = strlen(answer.body); off < n; off += split) {
        evbuffer_add(chunk, answer.body + off, n - off < split ? n - off : split);
        evhttp_send_reply_chunk(req, chunk);
    }
    evbuffer_free(chunk);
    evhttp_send_reply_end(req);
}

typedef struct fixture {
    struct event_base *base;
    struct evhttp *http;
    mb_target_t t;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->base = event_base_new();
    f->http = evhttp_new(f->base);
    evhttp_set_gencb(f->http, on_request, NULL);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(f->http, "127.0.0.1", 0);
    assert_non_null(bs);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &len);
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp",
             ntohs(((struct sockaddr_in *)&ss)->sin_port));
    assert_int_equal(mb_target_parse(&f->t, f->base, url, false, err, sizeof err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    evhttp_free(f->http);
    event_base_free(f->base);
    free(f);
    return 0;
}

typedef struct outcome {
    bool done;
    mb_err_t err, verdict;
} outcome_t;

static void rpc_done(mb_rpc_t *r, mb_err_t err)
{
    outcome_t *o = r->ud;
    o->done = true;
    o->err = err;
    o->verdict = err == MB_OK ? mb_rpc_verdict(r) : err;
}

/* Posts a tools/call with id 7 checking for "hello-bench" and returns the verdict. */
static mb_err_t verdict_of(fixture_t *f, const char *ctype, const char *body)
{
    answer.ctype = ctype;
    answer.body = body;
    mb_conn_t *c = mb_conn_new(&f->t);
    outcome_t o = {0};
    mb_rpc_t r;
    memset(&r, 0, sizeof r);
    r.id = 7;
    r.check = "hello-bench\"";
    r.check_len = strlen(r.check);
    r.done = rpc_done;
    r.ud = &o;
    static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\"}";
    mb_rpc_post(&r, c, NULL, req, sizeof req - 1);
    assert_true(mb_loop_until(f->base, &o.done, 5000000));
    mb_rpc_clear(&r);
    mb_conn_free(c);
    return o.verdict;
}

#define OK_RESULT \
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello-bench\"}]}}"
#define TOOL_ERROR                                                                              \
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"bad " \
    "argument: hello-bench\"}],\"isError\":true}}"

static void an_echoed_result_counts_as_ok(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(verdict_of(f, "application/json", OK_RESULT), MB_OK);
    assert_int_equal(verdict_of(f, "text/event-stream", "id: 1\ndata: " OK_RESULT "\n\n"), MB_OK);
}

static void a_tool_result_with_is_error_is_not_ok_though_it_holds_the_text(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(verdict_of(f, "application/json", TOOL_ERROR), MB_E_BODY);
    assert_int_equal(verdict_of(f, "text/event-stream", "data: " TOOL_ERROR "\n\n"), MB_E_BODY);
}

static void an_echo_of_the_words_is_error_true_is_still_ok(void **state)
{
    fixture_t *f = *state;
    /* the text is a JSON string: its quotes come escaped */
    assert_int_equal(verdict_of(f, "application/json",
                                "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":"
                                "\"text\",\"text\":\"\\\"isError\\\":true hello-bench\"}]}}"),
                     MB_OK);
}

static void a_json_rpc_error_is_a_protocol_error(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(verdict_of(f, "application/json",
                                "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,"
                                "\"message\":\"Unknown tool: hello-bench\"}}"),
                     MB_E_PROTO);
}

static void an_sse_stream_that_ends_without_the_response_is_not_ok(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(verdict_of(f, "text/event-stream",
                                "id: 1\ndata: "
                                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"),
                     MB_E_PROTO);
    /* the response for another id */
    assert_int_equal(
        verdict_of(
            f, "text/event-stream",
            "data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{\"text\":\"hello-bench\"}}\n\n"),
        MB_E_PROTO);
}

/* SSE lines cut anywhere by chunk boundaries, CRLF or CR line ends, data over several lines,
 * comments and a notification before the response: the response is still found. */
static void an_sse_answer_cut_into_small_chunks_is_read_whole(void **state)
{
    fixture_t *f = *state;
    static const char *const bodies[] = {
        ": keepalive\r\nid: 1\r\ndata:\r\n\r\nid: 2\r\ndata: "
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\r\n\r\nid: 3\r\n"
        "data: " OK_RESULT "\r\n\r\n",
        "id: 3\rdata: " OK_RESULT "\r\r",
        ("data: {\"jsonrpc\":\"2.0\",\"id\":7,\ndata: \"result\":{\"content\":[{\"type\":\"text\","
         "\"text\":\"hello-bench\"}]}}\n\n"), /* one body (parenthesised for clang's check) */
    };
    const size_t splits[] = {1, 2, 3, 7, 64};
    for (size_t b = 0; b < sizeof bodies / sizeof bodies[0]; b++)
        for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
            split = splits[i];
            assert_int_equal(verdict_of(f, "text/event-stream", bodies[b]), MB_OK);
        }
    /* and one cut before the event's blank line: no response */
    split = 5;
    assert_int_equal(verdict_of(f, "text/event-stream", "data: " OK_RESULT "\n"), MB_E_PROTO);
    split = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_echoed_result_counts_as_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_tool_result_with_is_error_is_not_ok_though_it_holds_the_text, setup, teardown),
        cmocka_unit_test_setup_teardown(an_echo_of_the_words_is_error_true_is_still_ok, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_json_rpc_error_is_a_protocol_error, setup, teardown),
        cmocka_unit_test_setup_teardown(an_sse_stream_that_ends_without_the_response_is_not_ok,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(an_sse_answer_cut_into_small_chunks_is_read_whole, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
