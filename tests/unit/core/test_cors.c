/* Unit tests: CORS values (src/core/cors.c): --cors-origin's form, the allowed origin, and the
 * Access-Control-Allow-Headers value a preflight gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <string.h>

#include "core/cors.h"

static const char *norm(const char *in)
{
    static char out[320];
    return cors_origin_norm(in, out, sizeof out) == 0 ? out : NULL;
}

static void an_origin_is_kept_in_the_form_a_browser_sends(void **state)
{
    assert_string_equal(norm("https://app.example"), "https://app.example");
    assert_string_equal(norm("HTTPS://App.Example:443/"), "https://app.example");
    assert_string_equal(norm("http://127.0.0.1:80"), "http://127.0.0.1");
    assert_string_equal(norm("http://127.0.0.1:8443"), "http://127.0.0.1:8443");
    assert_string_equal(norm("https://app.example:80"), "https://app.example:80");
    assert_string_equal(norm("http://[::1]:3000"), "http://[::1]:3000");
    assert_string_equal(norm("chrome-extension://abcdefghijklmnop"),
                         "chrome-extension://abcdefghijklmnop");
    assert_string_equal(norm("*"), "*");
    /* what it gives back is its own normal form */
    assert_string_equal(norm(norm("HTTP://X.Example:80/")), "http://x.example");
}

static void what_is_not_an_origin_is_refused(void **state)
{
    const char *bad[] = {"", "null", "app.example", "http://", "http:///", "http://a/path",
                         "http://a//", "http://a?q", "http://a#f", "http://user@a",
                         "http://a:", "http://a:0", "http://a:65536", "http://a:1234567",
                         "http://a:+80", "http://[::1", "http://[]", "http://a b", "1http://a",
                         "http://\xc3\xa9.example", "**", " http://a", "http://a "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[320];
        if (cors_origin_norm(bad[i], out, sizeof out) == 0)
            fail_msg("accepted '%s' as '%s'", bad[i], out);
    }
    char tiny[8];
    assert_int_not_equal(cors_origin_norm("https://app.example", tiny, sizeof tiny), 0);
}

static void the_allowed_origin_is_an_exact_match_or_a_star(void **state)
{
    char *list[] = {"https://app.example", "http://127.0.0.1:9999"};
    const char *o = "http://127.0.0.1:9999";
    assert_ptr_equal(cors_allow_origin(list, 2, o), o);
    assert_null(cors_allow_origin(list, 2, "http://127.0.0.1:999"));
    assert_null(cors_allow_origin(list, 2, "https://APP.example"));
    assert_null(cors_allow_origin(list, 2, "https://app.example/"));
    assert_null(cors_allow_origin(list, 2, "null"));
    assert_null(cors_allow_origin(list, 2, NULL));
    assert_false(cors_any_origin(list, 2));
    char *any[] = {"https://app.example", "*"};
    assert_string_equal(cors_allow_origin(any, 2, "https://elsewhere.example"), "*");
    assert_null(cors_allow_origin(any, 2, NULL));
    assert_true(cors_any_origin(any, 2));
}

static void a_preflight_gets_the_fixed_headers_and_the_mcp_params_it_asks_for(void **state)
{
    char out[512];
    cors_allow_headers(NULL, out, sizeof out);
    assert_string_equal(out, CORS_ALLOW_HEADERS);
    cors_allow_headers("", out, sizeof out);
    assert_string_equal(out, CORS_ALLOW_HEADERS);
    size_t n = cors_allow_headers("content-type,mcp-param-region, X-Other ,\tMcp-Param-Handle\t,"
                                  "cookie,mcp-param-,mcp-param-a b,mcp-param-ok", out, sizeof out);
    assert_string_equal(out, CORS_ALLOW_HEADERS ", mcp-param-region, Mcp-Param-Handle, mcp-param-ok");
    assert_int_equal(n, strlen(out));
    /* a name past CORS_PARAM_NAME_MAX is one the endpoint would not read */
    char longname[CORS_PARAM_NAME_MAX + 2];
    memcpy(longname, "mcp-param-", 10);
    memset(longname + 10, 'x', CORS_PARAM_NAME_MAX + 1 - 10);
    longname[CORS_PARAM_NAME_MAX + 1] = '\0';
    cors_allow_headers(longname, out, sizeof out);
    assert_string_equal(out, CORS_ALLOW_HEADERS);
    longname[CORS_PARAM_NAME_MAX] = '\0';
    cors_allow_headers(longname, out, sizeof out);
    assert_int_equal(strlen(out), strlen(CORS_ALLOW_HEADERS) + 2 + CORS_PARAM_NAME_MAX);
}

static void names_that_do_not_fit_are_left_out(void **state)
{
    char out[sizeof CORS_ALLOW_HEADERS + 16];
    cors_allow_headers("mcp-param-aaaaaaaaaaaa,mcp-param-b", out, sizeof out);
    assert_string_equal(out, CORS_ALLOW_HEADERS ", mcp-param-b");
    char small[8] = "junk";
    assert_int_equal(cors_allow_headers("mcp-param-b", small, sizeof small), 0);
    assert_string_equal(small, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_origin_is_kept_in_the_form_a_browser_sends),
        cmocka_unit_test(what_is_not_an_origin_is_refused),
        cmocka_unit_test(the_allowed_origin_is_an_exact_match_or_a_star),
        cmocka_unit_test(a_preflight_gets_the_fixed_headers_and_the_mcp_params_it_asks_for),
        cmocka_unit_test(names_that_do_not_fit_are_left_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
