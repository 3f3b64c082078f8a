/* Unit tests: the checks of the /mcp endpoint (src/http/endpoint.c), through http_on_mcp on a
 * loopback evhttp (fixture.h): Accept, Content-Type and Content-Encoding, the JSON value limit,
 * a header sent twice, Origin and Host, Mcp-Session-Id and MCP-Protocol-Version, the
 * 2026-07-28 mirrored headers and method table, the methods /mcp takes. Every refusal echoes
 * the request's id when it could be read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#include "core/config.h"
#include "wire/jsonrpc.h"
#include "wire/stateless.h"

#define ACCEPT "Accept: application/json, text/event-stream\r\n"
#define CTYPE "Content-Type: application/json\r\n"
#define SID "0123456789abcdef0123456789abcdef"
#define LIST "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}"

static fixture_t F;

static int setup(void **state)
{
    fixture_config();
    return fixture_listen(&F, NULL);
}

static int teardown(void **state)
{
    fixture_stop(&F);
    return 0;
}

static void post(const char *headers, const char *body, lb_answer_t *a)
{
    fixture_send(&F, "POST", "/mcp", headers, body, a);
}

static void a_post_must_accept_both_json_and_an_event_stream(void **state)
{
    lb_answer_t a;
    post("Accept: application/json\r\n" CTYPE, LIST, &a);
    expect_error(&a, 406, MCP_ERR_BAD_REQUEST, "Accept header must list both", "7");
    lb_answer_free(&a);
    post(CTYPE, LIST, &a); /* no Accept at all */
    expect_error(&a, 406, MCP_ERR_BAD_REQUEST, "Not Acceptable", "7");
    lb_answer_free(&a);
}

static void a_post_body_must_be_typed_json_and_uncoded(void **state)
{
    lb_answer_t a;
    post(ACCEPT "Content-Type: text/plain\r\n", LIST, &a);
    expect_error(&a, 415, MCP_ERR_BAD_REQUEST, "Content-Type must be application/json", "7");
    lb_answer_free(&a);
    post(ACCEPT CTYPE "Content-Encoding: gzip\r\n", LIST, &a);
    expect_error(&a, 415, MCP_ERR_BAD_REQUEST, "Content-Encoding 'gzip' is not accepted", "7");
    expect_header(&a, "Accept-Encoding", "identity");
    lb_answer_free(&a);
}

static void a_body_of_more_json_values_than_the_limit_is_413(void **state)
{
    lb_answer_t a;
    long long saved = g_cfg.max_json_nodes;
    g_cfg.max_json_nodes = 64;
    char body[1024] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"a\":[";
    for (int i = 0; i < 80; i++)
        strcat(body, i ? ",1" : "1");
    strcat(body, "]}}");
    post(ACCEPT CTYPE, body, &a);
    g_cfg.max_json_nodes = saved;
    /* the id came before the parse stopped: echoed */
    expect_error(&a, 413, JSONRPC_INVALID_REQUEST, "more than 64 JSON values (--max-json-nodes)",
                 "7");
    lb_answer_free(&a);
}

static void a_body_that_is_not_json_is_a_parse_error(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE, "{\"jsonrpc\":", &a);
    expect_error(&a, 400, JSONRPC_PARSE_ERROR, "Parse error", "null");
    lb_answer_free(&a);
}

static void a_header_that_must_come_once_and_came_twice_is_400(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE "Mcp-Session-Id: " SID "\r\nMcp-Session-Id: " SID "\r\n", LIST, &a);
    expect_error(&a, 400, MCP_ERR_BAD_REQUEST, "the Mcp-Session-Id header was sent more than once",
                 "7");
    lb_answer_free(&a);
}

static void an_origin_or_host_that_is_not_allowed_is_403(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE "Origin: https://evil.example\r\n", LIST, &a);
    expect_error(&a, 403, MCP_ERR_BAD_REQUEST, "Origin 'https://evil.example' is not allowed", "7");
    lb_answer_free(&a);
    post(ACCEPT CTYPE "Host: evil.example\r\n", LIST, &a);
    expect_error(&a, 403, MCP_ERR_BAD_REQUEST, "Host 'evil.example' is not allowed", "7");
    lb_answer_free(&a);
    /* the server's own origin passes: the next check answers (no session) */
    char h[256];
    snprintf(h, sizeof h, ACCEPT CTYPE "Origin: http://127.0.0.1:%d\r\n", F.port);
    post(h, LIST, &a);
    expect_error(&a, 400, MCP_ERR_BAD_REQUEST, "the Mcp-Session-Id header is required", "7");
    lb_answer_free(&a);
}

static void a_session_request_needs_a_well_formed_session_id(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE, LIST, &a);
    expect_error(&a, 400, MCP_ERR_BAD_REQUEST, "send initialize first", "7");
    lb_answer_free(&a);
    post(ACCEPT CTYPE "Mcp-Session-Id: not-a-session\r\n", LIST, &a);
    expect_error(&a, 404, MCP_ERR_SESSION_NOT_FOUND, "Session not found", "7");
    lb_answer_free(&a);
}

static void an_unsupported_protocol_version_header_is_400(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE "Mcp-Session-Id: " SID "\r\nMCP-Protocol-Version: 1999-01-01\r\n", LIST, &a);
    expect_error(&a, 400, MCP_ERR_BAD_REQUEST,
                 "unsupported MCP-Protocol-Version '1999-01-01' (supported: ", "7");
    lb_answer_free(&a);
}

static void initialize_is_refused_in_a_batch_and_with_a_session_id(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}]",
         &a);
    expect_error(&a, 400, JSONRPC_INVALID_REQUEST, "initialize must not be part of a batch",
                 "null");
    lb_answer_free(&a);
    post(ACCEPT CTYPE "Mcp-Session-Id: " SID "\r\n",
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
         "{\"protocolVersion\":\"2025-06-18\"}}",
         &a);
    expect_error(&a, 400, JSONRPC_INVALID_REQUEST, "must be sent without Mcp-Session-Id", "1");
    lb_answer_free(&a);
    post(ACCEPT CTYPE, "[]", &a);
    expect_error(&a, 400, JSONRPC_INVALID_REQUEST, "empty batch", "null");
    lb_answer_free(&a);
}

/* ---- 2026-07-28 ---- */

static char *modern_call(const char *method, const char *name)
{
    char *s = malloc(512);
    snprintf(s, 512,
             "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"%s\",\"params\":{\"name\":\"%s\","
             "\"_meta\":{\"" META_PROTOCOL_VERSION "\":\"" MODERN_VERSION "\",\"" META_CLIENT_CAPS
             "\":{}}}}",
             method, name);
    return s;
}

#define MODERN ACCEPT CTYPE "MCP-Protocol-Version: " MODERN_VERSION "\r\n"

static void a_modern_request_whose_headers_disagree_with_its_body_is_a_header_mismatch(void **state)
{
    lb_answer_t a;
    char *body = modern_call("tools/call", "echo");
    post(MODERN "Mcp-Method: tools/list\r\nMcp-Name: echo\r\n", body, &a);
    expect_error(&a, 400, MCP_ERR_HEADER_MISMATCH, "Mcp-Method", "9");
    lb_answer_free(&a);
    post(MODERN "Mcp-Method: tools/call\r\nMcp-Name: other\r\n", body, &a);
    expect_error(&a, 400, MCP_ERR_HEADER_MISMATCH, "Mcp-Name", "9");
    lb_answer_free(&a);
    /* the version header must be there and name the claim */
    post(ACCEPT CTYPE "Mcp-Method: tools/call\r\nMcp-Name: echo\r\n", body, &a);
    expect_error(&a, 400, MCP_ERR_HEADER_MISMATCH, "MCP-Protocol-Version", "9");
    lb_answer_free(&a);
    post(MODERN "Mcp-Method: tools/call\r\nMcp-Name: echo\r\nMcp-Param-Region: a\r\n"
                "mcp-param-region: b\r\n",
         body, &a);
    expect_error(&a, 400, MCP_ERR_HEADER_MISMATCH, "was sent more than once", "9");
    lb_answer_free(&a);
    free(body);
}

static void a_modern_request_for_a_removed_or_unknown_method_is_404(void **state)
{
    lb_answer_t a;
    char *body = modern_call("resources/subscribe", "x");
    post(MODERN "Mcp-Method: resources/subscribe\r\n", body, &a);
    expect_error(&a, 404, JSONRPC_METHOD_NOT_FOUND,
                 "does not exist in protocol version " MODERN_VERSION, "9");
    lb_answer_free(&a);
    free(body);
    body = modern_call("no/such", "x");
    post(MODERN "Mcp-Method: no/such\r\n", body, &a);
    expect_error(&a, 404, JSONRPC_METHOD_NOT_FOUND, "Method not found", "9");
    lb_answer_free(&a);
    free(body);
}

static void a_modern_notification_is_accepted_and_a_response_refused(void **state)
{
    lb_answer_t a;
    post(
        MODERN "Mcp-Method: notifications/cancelled\r\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"_meta\":{\"" META_PROTOCOL_VERSION
        "\":\"" MODERN_VERSION "\"}}}",
        &a);
    assert_int_equal(a.status, 202);
    assert_int_equal(a.body_len, 0);
    lb_answer_free(&a);
    post(MODERN, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &a);
    expect_error(&a, 400, JSONRPC_INVALID_REQUEST, "never a response", "null");
    lb_answer_free(&a);
}

/* ---- GET, DELETE and the other methods ---- */

static void a_get_must_accept_an_event_stream_and_needs_a_session(void **state)
{
    lb_answer_t a;
    fixture_send(&F, "GET", "/mcp", "Accept: application/json\r\n", NULL, &a);
    expect_error(&a, 406, MCP_ERR_BAD_REQUEST, "a GET must accept text/event-stream", "null");
    lb_answer_free(&a);
    fixture_send(&F, "GET", "/mcp", "Accept: text/event-stream\r\n", NULL, &a);
    expect_error(&a, 405, MCP_ERR_BAD_REQUEST, "GET needs an Mcp-Session-Id", "null");
    expect_header(&a, "Allow", "POST");
    lb_answer_free(&a);
    fixture_send(&F, "GET", "/mcp",
                 "Accept: text/event-stream\r\nMcp-Session-Id: " SID
                 "\r\nLast-Event-ID: nonsense\r\n",
                 NULL, &a);
    expect_error(&a, 400, MCP_ERR_BAD_REQUEST, "malformed Last-Event-ID", "null");
    lb_answer_free(&a);
    fixture_send(&F, "DELETE", "/mcp", "", NULL, &a);
    expect_error(&a, 405, MCP_ERR_BAD_REQUEST, "DELETE needs an Mcp-Session-Id", "null");
    lb_answer_free(&a);
}

static void other_methods_are_405_and_connect_closes_the_connection(void **state)
{
    lb_answer_t a;
    fixture_send(&F, "PUT", "/mcp", "", "x", &a);
    expect_error(&a, 405, MCP_ERR_BAD_REQUEST, "use POST, GET or DELETE", "null");
    expect_header(&a, "Allow", "GET, POST, DELETE");
    lb_answer_free(&a);
    fixture_send(&F, "CONNECT", "127.0.0.1:1", "", NULL, &a);
    assert_int_equal(a.status, 405);
    expect_header(&a, "Connection", "close");
    lb_answer_free(&a);
}

static void every_answer_carries_a_date_and_its_length(void **state)
{
    lb_answer_t a;
    post(CTYPE, LIST, &a);
    char v[64];
    assert_non_null(lb_header(&a, "Date", v, sizeof v));
    assert_non_null(strstr(v, " GMT"));
    assert_non_null(lb_header(&a, "Content-Length", v, sizeof v));
    assert_int_equal(strtoul(v, NULL, 10), a.body_len);
    expect_header(&a, "Content-Type", "application/json");
    assert_int_equal(lb_header_count(&a, "Date"), 1); /* evhttp adds none of its own */
    lb_answer_free(&a);
}

static void another_path_is_404_with_the_id_of_a_posted_request(void **state)
{
    lb_answer_t a;
    fixture_send(&F, "POST", "/other", ACCEPT CTYPE, LIST, &a);
    expect_error(&a, 404, MCP_ERR_BAD_REQUEST, "the MCP endpoint is /mcp", "7");
    lb_answer_free(&a);
}

static void a_request_while_the_server_stops_is_503_with_retry_after(void **state)
{
    lb_answer_t a;
    F.t.stopping = true;
    post(ACCEPT CTYPE, LIST, &a);
    F.t.stopping = false;
    expect_error(&a, 503, MCP_ERR_BAD_REQUEST, "the server is shutting down", "7");
    expect_header(&a, "Retry-After", "5");
    lb_answer_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_post_must_accept_both_json_and_an_event_stream),
        cmocka_unit_test(a_post_body_must_be_typed_json_and_uncoded),
        cmocka_unit_test(a_body_of_more_json_values_than_the_limit_is_413),
        cmocka_unit_test(a_body_that_is_not_json_is_a_parse_error),
        cmocka_unit_test(a_header_that_must_come_once_and_came_twice_is_400),
        cmocka_unit_test(an_origin_or_host_that_is_not_allowed_is_403),
        cmocka_unit_test(a_session_request_needs_a_well_formed_session_id),
        cmocka_unit_test(an_unsupported_protocol_version_header_is_400),
        cmocka_unit_test(initialize_is_refused_in_a_batch_and_with_a_session_id),
        cmocka_unit_test(
            a_modern_request_whose_headers_disagree_with_its_body_is_a_header_mismatch),
        cmocka_unit_test(a_modern_request_for_a_removed_or_unknown_method_is_404),
        cmocka_unit_test(a_modern_notification_is_accepted_and_a_response_refused),
        cmocka_unit_test(a_get_must_accept_an_event_stream_and_needs_a_session),
        cmocka_unit_test(other_methods_are_405_and_connect_closes_the_connection),
        cmocka_unit_test(every_answer_carries_a_date_and_its_length),
        cmocka_unit_test(another_path_is_404_with_the_id_of_a_posted_request),
        cmocka_unit_test(a_request_while_the_server_stops_is_503_with_retry_after),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
