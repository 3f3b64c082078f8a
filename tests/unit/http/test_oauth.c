/* Unit tests: authentication's answers on /mcp (src/http/oauth.c) through http_on_mcp on a
 * loopback evhttp (fixture.h): the WWW-Authenticate challenge of a request without a token,
 * with a token that is not valid, and with too few scopes (http_challenge), with static tokens
 * alone (realm="mcpactord") and with an issuer (scope and RFC 9728's resource_metadata); the
 * client's token never reaches the answer; and the Protected Resource Metadata route. A JWT
 * that would be verified needs the issuer's keys (the integration tests' part). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"

#include "core/auth.h"
#include "core/authz.h"
#include "core/jwt.h"
#include "core/stats.h"
#include "wire/jsonrpc.h"

#include <event2/http.h>

#define ACCEPT "Accept: application/json, text/event-stream\r\n"
#define CTYPE "Content-Type: application/json\r\n"
#define LIST "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}"
#define DEPLOY \
    "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"deploy\"}}"
#define TOKEN "alice-token-0123456789"
#define PRM "https://mcp.example/.well-known/oauth-protected-resource/mcp"

static fixture_t F;

static void post(const char *headers, const char *body, lb_answer_t *a)
{
    fixture_send(&F, "POST", "/mcp", headers, body, a);
}

/* ---- static tokens alone (--auth-tokens) ---- */

static int static_setup(void **state)
{
    fixture_config();
    char err[200];
    if (auth_parse(&g_auth, "alice:" TOKEN "\n", err, sizeof err) != 0)
        return -1;
    return fixture_listen(&F, NULL);
}

static int static_teardown(void **state)
{
    fixture_stop(&F);
    auth_free(&g_auth);
    memset(&g_auth, 0, sizeof g_auth);
    return 0;
}

static void without_a_token_the_challenge_names_the_realm(void **state)
{
    lb_answer_t a;
    long long before = STAT_GET(auth_rejected_total);
    post(ACCEPT CTYPE, LIST, &a);
    expect_error(&a, 401, MCP_ERR_BAD_REQUEST, "send Authorization: Bearer <token>", "7");
    expect_header(&a, "WWW-Authenticate", "Bearer realm=\"mcpactord\"");
    assert_int_equal(STAT_GET(auth_rejected_total), before + 1);
    lb_answer_free(&a);
}

static void an_unknown_token_or_another_scheme_is_invalid_token(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE "Authorization: Bearer not-" TOKEN "\r\n", LIST, &a);
    expect_error(&a, 401, MCP_ERR_BAD_REQUEST, "the bearer token is not valid", "7");
    expect_header(&a, "WWW-Authenticate", "Bearer realm=\"mcpactord\", error=\"invalid_token\"");
    assert_null(strstr(a.raw, "not-" TOKEN)); /* the token is never echoed */
    lb_answer_free(&a);
    post(ACCEPT CTYPE "Authorization: Basic YWxpY2U6cGFzcw==\r\n", LIST, &a);
    expect_error(&a, 401, MCP_ERR_BAD_REQUEST, "the bearer token is not valid", "7");
    expect_header(&a, "WWW-Authenticate", "Bearer realm=\"mcpactord\", error=\"invalid_token\"");
    lb_answer_free(&a);
}

static void a_known_token_passes_to_the_next_check(void **state)
{
    lb_answer_t a;
    post(CTYPE "Authorization: Bearer " TOKEN "\r\n", LIST, &a);
    expect_error(&a, 406, MCP_ERR_BAD_REQUEST, "Not Acceptable", "7");
    expect_header(&a, "WWW-Authenticate", NULL);
    lb_answer_free(&a);
}

/* ---- with an issuer (--auth-issuer) ---- */

static void on_challenge(struct evhttp_request *req, void *arg);

static int issuer_setup(void **state)
{
    fixture_config();
    if (fixture_listen(&F, NULL) != 0)
        return -1;
    evhttp_set_cb(F.http, "/challenge", on_challenge, NULL);
    char why[300];
    if (authz_set_tool_scopes("deploy", "tools:deploy") != 0 ||
        authz_configure("https://issuer.example", "https://mcp.example/mcp", NULL, "mcp:read", 60,
                        "127.0.0.1", F.port, why, sizeof why) != 0)
        return -1;
    return 0;
}

static int issuer_teardown(void **state)
{
    fixture_stop(&F);
    authz_free();
    return 0;
}

static void without_a_token_the_challenge_names_the_scopes_and_the_metadata(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE, LIST, &a);
    expect_error(&a, 401, MCP_ERR_BAD_REQUEST, "send Authorization: Bearer <token>", "7");
    expect_header(&a, "WWW-Authenticate",
                  "Bearer scope=\"mcp:read\", resource_metadata=\"" PRM "\"");
    lb_answer_free(&a);
    /* a tools/call asks for its tool's scopes too */
    post(ACCEPT CTYPE, DEPLOY, &a);
    expect_error(&a, 401, MCP_ERR_BAD_REQUEST, "send Authorization", "8");
    expect_header(&a, "WWW-Authenticate",
                  "Bearer scope=\"mcp:read tools:deploy\", resource_metadata=\"" PRM "\"");
    lb_answer_free(&a);
}

static void a_token_that_is_not_valid_gets_invalid_token_and_why(void **state)
{
    lb_answer_t a;
    post(ACCEPT CTYPE "Authorization: Basic YWxpY2U6cGFzcw==\r\n", LIST, &a);
    expect_error(&a, 401, MCP_ERR_BAD_REQUEST,
                 "the bearer token is not valid: send Authorization: Bearer <token>", "7");
    expect_header(&a, "WWW-Authenticate",
                  "Bearer error=\"invalid_token\", error_description=\"send Authorization: "
                  "Bearer <token>\", scope=\"mcp:read\", resource_metadata=\"" PRM "\"");
    lb_answer_free(&a);
    /* an opaque token, and no introspection configured */
    post(ACCEPT CTYPE "Authorization: Bearer opaque-\"quoted\\-token\r\n", LIST, &a);
    expect_error(&a, 401, MCP_ERR_BAD_REQUEST, "not a JWT this server can verify", "7");
    expect_header(&a, "WWW-Authenticate",
                  "Bearer error=\"invalid_token\", error_description=\"the token is not a JWT "
                  "this server can verify\", scope=\"mcp:read\", resource_metadata=\"" PRM "\"");
    /* the client's bytes (its quotes, its backslash) never reach the challenge */
    assert_null(strstr(a.raw, "opaque-"));
    lb_answer_free(&a);
}

static void a_token_longer_than_a_jwt_may_be_is_refused_as_too_long(void **state)
{
    lb_answer_t a;
    static char h[JWT_MAX_LEN + 256];
    int n = sprintf(h, ACCEPT CTYPE "Authorization: Bearer ");
    memset(h + n, 'a', JWT_MAX_LEN + 1);
    strcpy(h + n + JWT_MAX_LEN + 1, "\r\n");
    post(h, LIST, &a);
    expect_error(&a, 401, MCP_ERR_BAD_REQUEST, "the token is too long", "7");
    lb_answer_free(&a);
}

/* /challenge?scope=...: http_challenge(CH_SCOPE) with that need, as a request whose token
 * lacks scopes gets it */
static void on_challenge(struct evhttp_request *req, void *arg)
{
    const char *uri = evhttp_request_get_uri(req);
    const char *need = strstr(uri, "?need=");
    char *n = evhttp_decode_uri(need ? need + 6 : "");
    json_t *id = json_integer(5);
    http_challenge(req, id, CH_SCOPE, n, NULL);
    json_decref(id);
    free(n);
}

static void too_few_scopes_is_403_insufficient_scope_with_what_is_needed(void **state)
{
    lb_answer_t a;
    fixture_send(&F, "GET", "/challenge?need=mcp:read%20tools:deploy", "", NULL, &a);
    expect_error(&a, 403, MCP_ERR_BAD_REQUEST,
                 "Forbidden: insufficient scope: this request needs mcp:read tools:deploy", "5");
    expect_header(&a, "WWW-Authenticate",
                  "Bearer error=\"insufficient_scope\", scope=\"mcp:read tools:deploy\", "
                  "resource_metadata=\"" PRM "\"");
    lb_answer_free(&a);
}

static void a_long_scope_list_is_never_cut_from_the_challenge(void **state)
{
    lb_answer_t a;
    size_t count = 300; /* "s000 s001 ...": 1,499 bytes, more than any fixed buffer would hold */
    char *need = malloc(count * 5 + 1), path[2048 * 4];
    char *p = need;
    for (size_t i = 0; i < count; i++)
        p += sprintf(p, i ? " s%03zu" : "s%03zu", i);
    strcpy(path, "/challenge?need=");
    for (const char *c = need; *c; c++)
        strcat(path, *c == ' ' ? "%20" : (char[]){*c, 0});
    fixture_send(&F, "GET", path, "", NULL, &a);
    assert_int_equal(a.status, 403);
    char *want = malloc(strlen(need) + 512), got[8192];
    sprintf(want,
            "Bearer error=\"insufficient_scope\", scope=\"%s\", resource_metadata=\"" PRM "\"",
            need);
    assert_non_null(lb_header(&a, "WWW-Authenticate", got, sizeof got));
    assert_string_equal(got, want);
    lb_answer_free(&a);
    free(want);
    free(need);
}

static void the_resource_metadata_is_served_at_its_urls_to_get_only(void **state)
{
    lb_answer_t a;
    static const char *paths[] = {"/.well-known/oauth-protected-resource/mcp",
                                  "/.well-known/oauth-protected-resource"};
    for (int i = 0; i < 2; i++) {
        fixture_send(&F, "GET", paths[i], "", NULL, &a);
        assert_int_equal(a.status, 200);
        expect_header(&a, "Content-Type", "application/json");
        expect_header(&a, "Cache-Control", "max-age=300");
        json_t *doc = json_loadb(a.body, a.body_len, 0, NULL);
        assert_string_equal(json_string_value(json_object_get(doc, "resource")),
                            "https://mcp.example/mcp");
        assert_string_equal(json_string_value(
                                json_array_get(json_object_get(doc, "authorization_servers"), 0)),
                            "https://issuer.example");
        json_decref(doc);
        lb_answer_free(&a);
    }
    fixture_send(&F, "POST", paths[0], CTYPE, "{}", &a);
    expect_error(&a, 405, MCP_ERR_BAD_REQUEST, "use GET", "null");
    expect_header(&a, "Allow", "GET, HEAD");
    lb_answer_free(&a);
    fixture_send(&F, "GET", "/.well-known/oauth-protected-resource/other", "", NULL, &a);
    expect_error(&a, 404, MCP_ERR_BAD_REQUEST, "the MCP endpoint is /mcp", "null");
    lb_answer_free(&a);
}

int main(void)
{
    const struct CMUnitTest static_tokens[] = {
        cmocka_unit_test(without_a_token_the_challenge_names_the_realm),
        cmocka_unit_test(an_unknown_token_or_another_scheme_is_invalid_token),
        cmocka_unit_test(a_known_token_passes_to_the_next_check),
    };
    const struct CMUnitTest issuer[] = {
        cmocka_unit_test(without_a_token_the_challenge_names_the_scopes_and_the_metadata),
        cmocka_unit_test(a_token_that_is_not_valid_gets_invalid_token_and_why),
        cmocka_unit_test(a_token_longer_than_a_jwt_may_be_is_refused_as_too_long),
        cmocka_unit_test(too_few_scopes_is_403_insufficient_scope_with_what_is_needed),
        cmocka_unit_test(a_long_scope_list_is_never_cut_from_the_challenge),
        cmocka_unit_test(the_resource_metadata_is_served_at_its_urls_to_get_only),
    };
    int failed = cmocka_run_group_tests_name("static tokens", static_tokens, static_setup,
                                             static_teardown);
    failed += cmocka_run_group_tests_name("issuer", issuer, issuer_setup, issuer_teardown);
    return failed;
}
