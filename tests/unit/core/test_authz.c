/* Unit tests: the resource server's configuration (src/core/authz.c) and the pure parts of
 * the key fetcher (src/core/issuer.c): metadata URLs, max-age. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "core/authz.h"
#include "core/issuer.h"

static void the_metadata_url_inserts_the_well_known_path_before_the_resource_path(void **state)
{
    (void)state;
    char url[300], path[300];
    assert_int_equal(authz_prm_url("https://mcp.example.com/mcp", url, sizeof url, path, sizeof path), 0);
    assert_string_equal(url, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    assert_string_equal(path, "/.well-known/oauth-protected-resource/mcp");
    assert_int_equal(authz_prm_url("http://127.0.0.1:8080/a/b", url, sizeof url, path, sizeof path), 0);
    assert_string_equal(url, "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/b");
    assert_int_equal(authz_prm_url("https://mcp.example.com", url, sizeof url, path, sizeof path), 0);
    assert_string_equal(url, "https://mcp.example.com/.well-known/oauth-protected-resource");
    assert_int_equal(authz_prm_url("https://mcp.example.com/", url, sizeof url, path, sizeof path), 0);
    assert_string_equal(path, "/.well-known/oauth-protected-resource");
    assert_int_equal(authz_prm_url("mcp.example.com", url, sizeof url, path, sizeof path), -1);
    assert_int_equal(authz_prm_url("https://mcp.example.com#f", url, sizeof url, path, sizeof path), -1);
    assert_int_equal(authz_prm_url("ftp://x/y", url, sizeof url, path, sizeof path), -1);
}

static void a_scope_union_adds_each_scope_once(void **state)
{
    (void)state;
    char list[32] = "a";
    assert_true(authz_scope_union(list, sizeof list, "b a  c"));
    assert_string_equal(list, "a b c");
    assert_true(authz_scope_union(list, sizeof list, ""));
    assert_string_equal(list, "a b c");
    char big[1024] = "";
    char longest[300];
    memset(longest, 'x', 256);
    longest[256] = '\0';
    assert_true(authz_scope_union(big, sizeof big, longest));
    assert_string_equal(big, longest); /* a long scope is a scope, not skipped */
    char small[8] = "abc";
    assert_false(authz_scope_union(small, sizeof small, "defgh"));
    assert_string_equal(small, "abc");
}

static void tool_scopes_flags_win_and_metadata_lists_every_scope(void **state)
{
    (void)state;
    assert_int_equal(authz_set_tool_scopes("echo", "tools:echo"), 0);
    assert_int_equal(authz_set_tool_scopes("add", "math, tools:echo"), 0);
    char scope[300];
    memset(scope, 's', 256);
    scope[256] = '\0';
    assert_int_equal(authz_set_tool_scopes("bad", scope), -1); /* over 255 characters */
    scope[255] = '\0';
    assert_int_equal(authz_set_tool_scopes("echo", scope), 0);
    assert_int_equal(authz_set_tool_scopes("bad", "x\x7f"), -1);
    assert_int_equal(authz_set_tool_scopes("echo", "tools:echo2"), 0); /* replaces */
    assert_int_equal(authz_set_tool_scopes("bad", "a\"b"), -1);
    char why[200];
    assert_int_equal(authz_configure("http://127.0.0.1:9000", NULL, NULL, "mcp", 30, "127.0.0.1",
                                     8080, why, sizeof why), 0);
    assert_true(g_authz.on);
    assert_string_equal(g_authz.resource, "http://127.0.0.1:8080/mcp");
    assert_string_equal(g_authz.prm_url,
                        "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp");
    assert_string_equal(authz_tool_scopes("echo"), "tools:echo2");
    assert_string_equal(authz_tool_scopes("add"), "math tools:echo");
    assert_string_equal(authz_tool_scopes("nope"), "");
    assert_string_equal(authz_tool_scopes(NULL), "");
    json_t *doc = json_loads(g_authz.metadata, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "resource")), "http://127.0.0.1:8080/mcp");
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "authorization_servers"), 0)),
                        "http://127.0.0.1:9000");
    const json_t *sc = json_object_get(doc, "scopes_supported");
    assert_int_equal(json_array_size(sc), 4); /* mcp, math, tools:echo, tools:echo2 */
    assert_string_equal(json_string_value(json_array_get(sc, 0)), "mcp");
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "bearer_methods_supported"), 0)),
                        "header");
    json_decref(doc);
    authz_free();
    /* an explicit list, an IPv6 listen address, a bad resource */
    assert_int_equal(authz_configure("http://i", NULL, "x  y", NULL, 0, "::1", 81, why, sizeof why), 0);
    assert_string_equal(g_authz.resource, "http://[::1]:81/mcp");
    assert_non_null(strstr(g_authz.metadata, "\"scopes_supported\":[\"x\",\"y\"]"));
    authz_free();
    assert_int_equal(authz_configure("http://i", "urn:x", NULL, NULL, 0, "h", 1, why, sizeof why), -1);
    authz_free();
    assert_int_equal(authz_configure("http://i", NULL, NULL, "a b", 0, "h", 1, why, sizeof why), -1);
    authz_free();
}

static void metadata_urls_follow_the_spec_order(void **state)
{
    (void)state;
    char *u[3];
    assert_int_equal(issuer_metadata_urls("http://as.example", u), 2);
    assert_string_equal(u[0], "http://as.example/.well-known/oauth-authorization-server");
    assert_string_equal(u[1], "http://as.example/.well-known/openid-configuration");
    free(u[0]), free(u[1]);
    assert_int_equal(issuer_metadata_urls("http://as.example:9/tenant1/", u), 3);
    assert_string_equal(u[0], "http://as.example:9/.well-known/oauth-authorization-server/tenant1");
    assert_string_equal(u[1], "http://as.example:9/.well-known/openid-configuration/tenant1");
    assert_string_equal(u[2], "http://as.example:9/tenant1/.well-known/openid-configuration");
    free(u[0]), free(u[1]), free(u[2]);
}

static void max_age_is_read_and_clamped(void **state)
{
    (void)state;
    assert_int_equal(issuer_max_age(NULL), 3600);
    assert_int_equal(issuer_max_age("public, max-age=600"), 600);
    assert_int_equal(issuer_max_age("max-age=1"), 60);
    assert_int_equal(issuer_max_age("max-age=99999999"), 86400);
    assert_int_equal(issuer_max_age("no-cache"), 3600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_metadata_url_inserts_the_well_known_path_before_the_resource_path),
        cmocka_unit_test(a_scope_union_adds_each_scope_once),
        cmocka_unit_test(tool_scopes_flags_win_and_metadata_lists_every_scope),
        cmocka_unit_test(metadata_urls_follow_the_spec_order),
        cmocka_unit_test(max_age_is_read_and_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
