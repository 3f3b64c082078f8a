/* Unit tests: CORS on the MCP listener (src/http/cors.c) through http_on_mcp and http_on_other
 * on a loopback evhttp (fixture.h): the preflight's 204 for an allowed origin and 403 for
 * another, the headers every answer to an allowed origin carries (a refusal too), Vary on
 * every answer, and nothing of it without --cors-origin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#include "core/config.h"
#include "core/cors.h"
#include "wire/jsonrpc.h"

#define APP "https://app.example"
#define LIST "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}"

static fixture_t F;
static char *ORIGINS[] = {APP};

static int setup(void **state)
{
    fixture_config();
    g_cfg.cors_origins[0] = ORIGINS[0];
    g_cfg.n_cors_origins = 1;
    return fixture_listen(&F, NULL);
}

static int teardown(void **state)
{
    fixture_stop(&F);
    g_cfg.n_cors_origins = 0;
    return 0;
}

static void a_preflight_from_an_allowed_origin_gets_204_with_what_it_may_send(void **state)
{
    lb_answer_t a;
    fixture_send(&F, "OPTIONS", "/mcp",
                 "Origin: " APP "\r\nAccess-Control-Request-Method: POST\r\n"
                 "Access-Control-Request-Headers: content-type, mcp-param-region\r\n",
                 NULL, &a);
    assert_int_equal(a.status, 204);
    expect_header(&a, "Access-Control-Allow-Methods", CORS_ALLOW_METHODS);
    expect_header(&a, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS ", mcp-param-region");
    expect_header(&a, "Access-Control-Max-Age", CORS_MAX_AGE);
    expect_header(&a, "Access-Control-Allow-Origin", APP);
    expect_header(&a, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
    expect_header(&a, "Vary", "Origin");
    expect_header(&a, "Content-Length", NULL); /* a 204 has none */
    assert_int_equal(a.body_len, 0);
    lb_answer_free(&a);
}

static void a_preflight_from_another_origin_is_403_without_cors_headers(void **state)
{
    lb_answer_t a;
    fixture_send(&F, "OPTIONS", "/mcp",
                 "Origin: https://evil.example\r\nAccess-Control-Request-Method: POST\r\n", NULL,
                 &a);
    expect_error(&a, 403, MCP_ERR_BAD_REQUEST,
                 "pages of origin 'https://evil.example' may not call this server", "null");
    expect_header(&a, "Access-Control-Allow-Origin", NULL);
    expect_header(&a, "Access-Control-Allow-Methods", NULL);
    expect_header(&a, "Vary", "Origin");
    lb_answer_free(&a);
}

static void a_preflight_is_answered_on_any_path_before_the_host_check(void **state)
{
    lb_answer_t a;
    /* http_on_other serves every path but /mcp; a preflight carries no token and its Host is
     * checked by the request that follows it */
    fixture_send(&F, "OPTIONS", "/elsewhere",
                 "Host: evil.example\r\nOrigin: " APP "\r\nAccess-Control-Request-Method: GET\r\n",
                 NULL, &a);
    assert_int_equal(a.status, 204);
    expect_header(&a, "Access-Control-Allow-Origin", APP);
    lb_answer_free(&a);
}

static void an_options_without_a_request_method_is_not_a_preflight(void **state)
{
    lb_answer_t a;
    fixture_send(&F, "OPTIONS", "/mcp", "Origin: " APP "\r\n", NULL, &a);
    expect_error(&a, 405, MCP_ERR_BAD_REQUEST, "use POST, GET or DELETE", "null");
    expect_header(&a, "Access-Control-Allow-Origin", APP); /* still an answer to that origin */
    expect_header(&a, "Access-Control-Allow-Methods", NULL);
    lb_answer_free(&a);
}

static void a_refusal_to_an_allowed_origin_carries_the_cors_headers(void **state)
{
    lb_answer_t a;
    fixture_send(&F, "POST", "/mcp", "Origin: " APP "\r\nContent-Type: application/json\r\n", LIST,
                 &a);
    expect_error(&a, 406, MCP_ERR_BAD_REQUEST, "Not Acceptable", "7");
    expect_header(&a, "Access-Control-Allow-Origin", APP);
    expect_header(&a, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
    expect_header(&a, "Vary", "Origin");
    assert_int_equal(lb_header_count(&a, "Vary"), 1);
    lb_answer_free(&a);
    /* a request without Origin: Vary alone (a cache must not reuse it for an origin) */
    fixture_send(&F, "POST", "/mcp", "Content-Type: application/json\r\n", LIST, &a);
    expect_error(&a, 406, MCP_ERR_BAD_REQUEST, "Not Acceptable", "7");
    expect_header(&a, "Access-Control-Allow-Origin", NULL);
    expect_header(&a, "Vary", "Origin");
    lb_answer_free(&a);
}

static void without_cors_origins_nothing_of_cors_is_added_nor_answered(void **state)
{
    lb_answer_t a;
    g_cfg.n_cors_origins = 0;
    fixture_send(&F, "OPTIONS", "/mcp",
                 "Origin: http://127.0.0.1\r\nAccess-Control-Request-Method: POST\r\n", NULL, &a);
    g_cfg.n_cors_origins = 1;
    /* not a preflight here: the endpoint answers the OPTIONS (the Origin is the server's own
     * host on another port: refused by the Origin check) */
    assert_int_not_equal(a.status, 204);
    expect_header(&a, "Access-Control-Allow-Methods", NULL);
    expect_header(&a, "Access-Control-Allow-Origin", NULL);
    expect_header(&a, "Vary", NULL);
    lb_answer_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_preflight_from_an_allowed_origin_gets_204_with_what_it_may_send),
        cmocka_unit_test(a_preflight_from_another_origin_is_403_without_cors_headers),
        cmocka_unit_test(a_preflight_is_answered_on_any_path_before_the_host_check),
        cmocka_unit_test(an_options_without_a_request_method_is_not_a_preflight),
        cmocka_unit_test(a_refusal_to_an_allowed_origin_carries_the_cors_headers),
        cmocka_unit_test(without_cors_origins_nothing_of_cors_is_added_nor_answered),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
