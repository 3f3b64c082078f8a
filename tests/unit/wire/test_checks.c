/* Unit tests: HTTP media-type and Host/Origin checks (src/wire/checks.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/checks.h"

#define JSON "application/json"
#define SSE "text/event-stream"

/* ---- accept_allows ---- */

static void an_exact_media_type_is_accepted(void **state)
{
    assert_true(accept_allows(JSON, JSON));
    assert_true(accept_allows(SSE, SSE));
    assert_false(accept_allows(JSON, SSE));
    assert_false(accept_allows(SSE, JSON));
}

static void a_list_of_types_admits_each_of_them(void **state)
{
    const char *a = "application/json, text/event-stream";
    assert_true(accept_allows(a, JSON));
    assert_true(accept_allows(a, SSE));
    assert_false(accept_allows(a, "text/html"));
    assert_true(accept_allows("text/event-stream,application/json", JSON));
}

static void media_types_compare_case_insensitively(void **state)
{
    assert_true(accept_allows("Application/JSON", JSON));
    assert_true(accept_allows("TEXT/EVENT-STREAM", SSE));
}

static void spaces_around_ranges_and_parameters_are_ignored(void **state)
{
    assert_true(accept_allows("  application/json  ", JSON));
    assert_true(accept_allows("text/html ,\tapplication/json ,text/plain", JSON));
    assert_true(accept_allows("application/json ; charset=utf-8", JSON));
    assert_true(accept_allows("application/* ; q=0.5", JSON));
    assert_true(accept_allows("application/* , text/event-stream", JSON));
    assert_true(accept_allows("*/* , text/html", SSE));
}

static void parameters_do_not_prevent_a_match(void **state)
{
    assert_true(accept_allows("application/json;charset=utf-8", JSON));
    assert_true(accept_allows("text/event-stream;charset=utf-8;q=1", SSE));
    assert_true(accept_allows("application/json;q=1.0", JSON));
}

static void a_zero_q_value_excludes_the_type(void **state)
{
    assert_false(accept_allows("application/json;q=0", JSON));
    assert_false(accept_allows("application/json; q=0.0", JSON));
    assert_false(accept_allows("application/json;Q=0.000", JSON));
    assert_false(accept_allows("application/json;charset=utf-8;q=0", JSON));
    assert_false(accept_allows("application/json;q=0 , text/event-stream", JSON));
    assert_true(accept_allows("application/json;q=0 , text/event-stream", SSE));
    assert_false(accept_allows("*/*;q=0", JSON));
    assert_false(accept_allows("application/*;q=0.0", JSON));
}

static void a_positive_q_value_admits_the_type(void **state)
{
    assert_true(accept_allows("application/json;q=0.5", JSON));
    assert_true(accept_allows("application/json;q=0.001", JSON));
    assert_true(accept_allows("application/json;q=1", JSON));
    assert_true(accept_allows("application/json;q=0.01, text/html", JSON));
}

static void the_most_specific_range_decides(void **state)
{
    /* RFC 9110 12.5.1: a more specific range overrides a wildcard */
    assert_false(accept_allows("application/json;q=0, */*", JSON));
    assert_false(accept_allows("*/*, application/json;q=0", JSON));
    assert_false(accept_allows("application/*, application/json;q=0", JSON));
    assert_false(accept_allows("text/*;q=0, */*", SSE));
    assert_true(accept_allows("*/*;q=0, application/json", JSON));
    assert_true(accept_allows("application/*;q=0, application/json;q=0.2", JSON));
    assert_true(accept_allows("*/*;q=0, text/*", SSE));
}

static void wildcard_ranges_admit_matching_types(void **state)
{
    assert_true(accept_allows("*/*", JSON));
    assert_true(accept_allows("*/*", SSE));
    assert_true(accept_allows("application/*", JSON));
    assert_false(accept_allows("application/*", SSE));
    assert_true(accept_allows("text/*", SSE));
    assert_true(accept_allows("APPLICATION/*", JSON));
    assert_false(accept_allows("appl/*", JSON));
    assert_false(accept_allows("application*", JSON));
    assert_false(accept_allows("*/json", JSON));
}

static void a_null_or_empty_accept_admits_nothing(void **state)
{
    assert_false(accept_allows(NULL, JSON));
    assert_false(accept_allows("", JSON));
    assert_false(accept_allows("   ", JSON));
    assert_false(accept_allows(",", JSON));
}

static void a_similar_but_different_type_is_not_a_match(void **state)
{
    assert_false(accept_allows("application/jsonx", JSON));
    assert_false(accept_allows("application/json-seq", JSON));
    assert_false(accept_allows("application/jso", JSON));
    assert_false(accept_allows("text/json", JSON));
    assert_false(accept_allows("xapplication/json", JSON));
}

/* ---- content_type_is_json ---- */

static void content_type_json_with_or_without_charset_is_json(void **state)
{
    assert_true(content_type_is_json("application/json"));
    assert_true(content_type_is_json("application/json; charset=utf-8"));
    assert_true(content_type_is_json("application/json;charset=UTF-8"));
    assert_true(content_type_is_json("application/json ; charset=utf-8"));
    assert_true(content_type_is_json("  application/json"));
}

static void content_type_comparison_ignores_case(void **state)
{
    assert_true(content_type_is_json("Application/JSON"));
    assert_true(content_type_is_json("APPLICATION/JSON; Charset=utf-8"));
}

static void other_content_types_are_not_json(void **state)
{
    assert_false(content_type_is_json("text/plain"));
    assert_false(content_type_is_json("text/json"));
    assert_false(content_type_is_json("application/json-patch+json"));
    assert_false(content_type_is_json("application/jsonx"));
    assert_false(content_type_is_json("application/x-www-form-urlencoded"));
    assert_false(content_type_is_json("application/json, text/plain"));
    assert_false(content_type_is_json(""));
    assert_false(content_type_is_json(NULL));
}

/* ---- content_coding_is_identity ---- */

static void identity_alone_or_listed_codes_nothing(void **state)
{
    assert_true(content_coding_is_identity("identity"));
    assert_true(content_coding_is_identity("IDENTITY"));
    assert_true(content_coding_is_identity(" identity\t, identity "));
    assert_true(content_coding_is_identity(""));
    assert_true(content_coding_is_identity("identity, ,"));
}

static void any_other_coding_is_a_coding(void **state)
{
    assert_false(content_coding_is_identity("gzip"));
    assert_false(content_coding_is_identity("identity, gzip"));
    assert_false(content_coding_is_identity("gzip,identity"));
    assert_false(content_coding_is_identity("br"));
    assert_false(content_coding_is_identity("identityx"));
    assert_false(content_coding_is_identity("identity;q=1"));
    assert_false(content_coding_is_identity("iden tity"));
}

/* ---- header_is_visible_ascii ---- */

static void visible_ascii_within_the_limit_passes(void **state)
{
    assert_true(header_is_visible_ascii("0123456789abcdef0123456789abcdef", 256));
    assert_true(header_is_visible_ascii("!~", 2));
    assert_true(header_is_visible_ascii("a", 1));
}

static void spaces_and_control_characters_fail(void **state)
{
    assert_false(header_is_visible_ascii("ab cd", 256));
    assert_false(header_is_visible_ascii(" ", 256));
    assert_false(header_is_visible_ascii("ab\tcd", 256));
    assert_false(header_is_visible_ascii("ab\r\n", 256));
    assert_false(header_is_visible_ascii("\x01", 256));
    assert_false(header_is_visible_ascii("\x1f", 256));
}

static void del_and_bytes_above_ascii_fail(void **state)
{
    assert_false(header_is_visible_ascii("ab\x7f", 256));
    assert_false(header_is_visible_ascii("\x80", 256));
    assert_false(header_is_visible_ascii("caf\xc3\xa9", 256));
    assert_false(header_is_visible_ascii("\xff", 256));
}

static void an_empty_value_fails(void **state)
{
    assert_false(header_is_visible_ascii("", 256));
}

static void a_value_longer_than_the_limit_fails(void **state)
{
    char v[300];
    memset(v, 'a', 257);
    v[257] = '\0';
    assert_false(header_is_visible_ascii(v, 256));
    v[256] = '\0';
    assert_true(header_is_visible_ascii(v, 256));
    assert_false(header_is_visible_ascii("abc", 2));
    assert_true(header_is_visible_ascii("abc", 3));
}

/* ---- framing_problem ---- */

static void a_single_content_length_or_chunked_alone_is_sound(void **state)
{
    assert_null(framing_problem(NULL, NULL, false));
    assert_null(framing_problem("0", NULL, false));
    assert_null(framing_problem("161", NULL, false));
    assert_null(framing_problem("007", NULL, false));
    assert_null(framing_problem(NULL, "chunked", false));
    assert_null(framing_problem(NULL, "Chunked", false));
}

static void a_repeated_length_header_is_ambiguous(void **state)
{
    assert_non_null(framing_problem("5", NULL, true));
    assert_non_null(framing_problem(NULL, "chunked", true));
}

static void content_length_with_transfer_encoding_is_ambiguous(void **state)
{
    assert_non_null(framing_problem("5", "chunked", false));
}

static void a_transfer_encoding_other_than_chunked_is_refused(void **state)
{
    assert_non_null(framing_problem(NULL, "gzip", false));
    assert_non_null(framing_problem(NULL, "gzip, chunked", false));
    assert_non_null(framing_problem(NULL, "identity", false));
    assert_non_null(framing_problem(NULL, "", false));
}

static void a_content_length_that_is_not_plain_digits_is_refused(void **state)
{
    assert_non_null(framing_problem("+5", NULL, false));
    assert_non_null(framing_problem("-1", NULL, false));
    assert_non_null(framing_problem("0x10", NULL, false));
    assert_non_null(framing_problem("5, 5", NULL, false));
    assert_non_null(framing_problem("", NULL, false));
}

/* ---- hostcheck: loopback listen ---- */

static void loopback_listen_accepts_every_loopback_spelling_with_the_port(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_true(hostcheck_host_ok(&hc, "127.0.0.1:8080"));
    assert_true(hostcheck_host_ok(&hc, "localhost:8080"));
    assert_true(hostcheck_host_ok(&hc, "[::1]:8080"));
    assert_true(hostcheck_host_ok(&hc, "LocalHost:8080"));
    hostcheck_free(&hc);

    hostcheck_init(&hc, "localhost", 3000, NULL, 0, NULL, 0);
    assert_true(hostcheck_host_ok(&hc, "127.0.0.1:3000"));
    assert_true(hostcheck_host_ok(&hc, "[::1]:3000"));
    hostcheck_free(&hc);

    hostcheck_init(&hc, "::1", 3000, NULL, 0, NULL, 0);
    assert_true(hostcheck_host_ok(&hc, "localhost:3000"));
    assert_true(hostcheck_host_ok(&hc, "[::1]:3000"));
    hostcheck_free(&hc);
}

static void loopback_listen_refuses_a_wrong_port_or_a_missing_port(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_false(hostcheck_host_ok(&hc, "127.0.0.1:8081"));
    assert_false(hostcheck_host_ok(&hc, "localhost:80"));
    assert_false(hostcheck_host_ok(&hc, "[::1]:808"));
    assert_false(hostcheck_host_ok(&hc, "localhost"));
    assert_false(hostcheck_host_ok(&hc, "localhost:80800"));
    hostcheck_free(&hc);
}

static void loopback_listen_refuses_other_hosts(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_false(hostcheck_host_ok(&hc, "evil.com:8080"));
    assert_false(hostcheck_host_ok(&hc, "evil.com"));
    assert_false(hostcheck_host_ok(&hc, "localhost.evil.com:8080"));
    assert_false(hostcheck_host_ok(&hc, "127.0.0.2:8080"));
    hostcheck_free(&hc);
}

static void a_missing_or_empty_host_is_refused_when_checking(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_false(hostcheck_host_ok(&hc, NULL));
    assert_false(hostcheck_host_ok(&hc, ""));
    hostcheck_free(&hc);
}

static void an_absent_origin_is_always_allowed(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_true(hostcheck_origin_ok(&hc, NULL));
    hostcheck_free(&hc);
}

static void the_null_origin_is_refused(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_false(hostcheck_origin_ok(&hc, "null"));
    assert_false(hostcheck_origin_ok(&hc, ""));
    hostcheck_free(&hc);
}

static void loopback_origins_with_the_port_are_allowed_over_http_and_https(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_true(hostcheck_origin_ok(&hc, "http://127.0.0.1:8080"));
    assert_true(hostcheck_origin_ok(&hc, "https://127.0.0.1:8080"));
    assert_true(hostcheck_origin_ok(&hc, "http://localhost:8080"));
    assert_true(hostcheck_origin_ok(&hc, "https://localhost:8080"));
    assert_true(hostcheck_origin_ok(&hc, "http://[::1]:8080"));
    assert_true(hostcheck_origin_ok(&hc, "HTTP://LOCALHOST:8080"));
    hostcheck_free(&hc);
}

static void an_origin_with_a_trailing_slash_is_the_same_origin(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_true(hostcheck_origin_ok(&hc, "http://localhost:8080/"));
    hostcheck_free(&hc);
}

static void foreign_origins_and_wrong_ports_are_refused(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_false(hostcheck_origin_ok(&hc, "http://evil.com"));
    assert_false(hostcheck_origin_ok(&hc, "http://evil.com:8080"));
    assert_false(hostcheck_origin_ok(&hc, "http://localhost:8081"));
    assert_false(hostcheck_origin_ok(&hc, "http://localhost"));
    assert_false(hostcheck_origin_ok(&hc, "ftp://localhost:8080"));
    assert_false(hostcheck_origin_ok(&hc, "http://localhost:8080.evil.com"));
    assert_false(hostcheck_origin_ok(&hc, "http://localhost:80"));
    hostcheck_free(&hc);
}

static void a_specific_listen_address_allows_only_itself(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "192.168.1.5", 9000, NULL, 0, NULL, 0);
    assert_true(hostcheck_host_ok(&hc, "192.168.1.5:9000"));
    assert_false(hostcheck_host_ok(&hc, "localhost:9000"));
    assert_false(hostcheck_host_ok(&hc, "192.168.1.5:9001"));
    assert_true(hostcheck_origin_ok(&hc, "http://192.168.1.5:9000"));
    assert_false(hostcheck_origin_ok(&hc, "http://localhost:9000"));
    hostcheck_free(&hc);

    hostcheck_init(&hc, "fe80::1", 9000, NULL, 0, NULL, 0);
    assert_true(hostcheck_host_ok(&hc, "[fe80::1]:9000"));
    assert_false(hostcheck_host_ok(&hc, "[fe80::2]:9000"));
    hostcheck_free(&hc);
}

/* ---- hostcheck: wildcard listen ---- */

static void a_wildcard_listen_without_allowed_hosts_checks_nothing(void **state)
{
    const char *wilds[] = {"0.0.0.0", "::"};
    for (int i = 0; i < 2; i++) {
        hostcheck_t hc;
        hostcheck_init(&hc, wilds[i], 8080, NULL, 0, NULL, 0);
        assert_true(hostcheck_host_ok(&hc, "anything.example:1"));
        assert_true(hostcheck_host_ok(&hc, "evil.com"));
        assert_true(hostcheck_host_ok(&hc, NULL));
        assert_true(hostcheck_origin_ok(&hc, "http://evil.com"));
        assert_true(hostcheck_origin_ok(&hc, "null"));
        hostcheck_free(&hc);
    }
}

static void a_wildcard_listen_with_allowed_hosts_checks_host_and_origin(void **state)
{
    char *hosts[] = {"mcp.example.com:8080"};
    hostcheck_t hc;
    hostcheck_init(&hc, "0.0.0.0", 8080, hosts, 1, NULL, 0);
    assert_true(hostcheck_host_ok(&hc, "mcp.example.com:8080"));
    assert_true(hostcheck_host_ok(&hc, "MCP.Example.COM:8080"));
    assert_false(hostcheck_host_ok(&hc, "mcp.example.com:9090"));
    assert_false(hostcheck_host_ok(&hc, "evil.com:8080"));
    assert_false(hostcheck_host_ok(&hc, "127.0.0.1:8080"));
    assert_false(hostcheck_host_ok(&hc, NULL));
    assert_true(hostcheck_origin_ok(&hc, "http://mcp.example.com:8080"));
    assert_true(hostcheck_origin_ok(&hc, "https://mcp.example.com:8080"));
    assert_false(hostcheck_origin_ok(&hc, "http://evil.com:8080"));
    assert_false(hostcheck_origin_ok(&hc, "null"));
    assert_true(hostcheck_origin_ok(&hc, NULL));
    hostcheck_free(&hc);
}

static void an_allowed_host_without_a_port_matches_any_port(void **state)
{
    char *hosts[] = {"Example.com", "[fd00::7]"};
    hostcheck_t hc;
    hostcheck_init(&hc, "0.0.0.0", 8080, hosts, 2, NULL, 0);
    assert_true(hostcheck_host_ok(&hc, "example.com:8080"));
    assert_true(hostcheck_host_ok(&hc, "example.com:1"));
    assert_true(hostcheck_host_ok(&hc, "example.com"));
    assert_true(hostcheck_host_ok(&hc, "EXAMPLE.COM:443"));
    assert_true(hostcheck_host_ok(&hc, "[fd00::7]:8080"));
    assert_true(hostcheck_host_ok(&hc, "[fd00::7]"));
    assert_false(hostcheck_host_ok(&hc, "example.com.evil.com:8080"));
    assert_false(hostcheck_host_ok(&hc, "xexample.com:8080"));
    assert_false(hostcheck_host_ok(&hc, "example.co:8080"));
    assert_false(hostcheck_host_ok(&hc, "[fd00::70]:8080"));
    hostcheck_free(&hc);
}

static void an_allowed_host_without_a_port_allows_its_origins_on_any_port(void **state)
{
    char *hosts[] = {"example.com"};
    hostcheck_t hc;
    hostcheck_init(&hc, "0.0.0.0", 8080, hosts, 1, NULL, 0);
    assert_true(hostcheck_origin_ok(&hc, "http://example.com"));
    assert_true(hostcheck_origin_ok(&hc, "https://example.com"));
    /* the server's own origin, as a browser at http://example.com:8080 sends it */
    assert_true(hostcheck_origin_ok(&hc, "http://example.com:8080"));
    assert_true(hostcheck_origin_ok(&hc, "https://example.com:8443/"));
    assert_false(hostcheck_origin_ok(&hc, "http://example.com.evil.com"));
    assert_false(hostcheck_origin_ok(&hc, "http://example.com:8080.evil.com"));
    assert_false(hostcheck_origin_ok(&hc, "http://example.com:"));
    assert_false(hostcheck_origin_ok(&hc, "http://example.com:80x"));
    assert_false(hostcheck_origin_ok(&hc, "http://evil.com:8080"));
    hostcheck_free(&hc);
}

static void extra_allowed_origins_are_accepted_besides_the_listen_origins(void **state)
{
    char *origins[] = {"https://App.Example.com", "http://tools.example.org:3000/"};
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, origins, 2);
    assert_true(hostcheck_origin_ok(&hc, "https://app.example.com"));
    assert_true(hostcheck_origin_ok(&hc, "https://app.example.com/"));
    assert_true(hostcheck_origin_ok(&hc, "http://tools.example.org:3000"));
    assert_true(hostcheck_origin_ok(&hc, "http://localhost:8080"));
    assert_false(hostcheck_origin_ok(&hc, "http://app.example.com"));
    assert_false(hostcheck_origin_ok(&hc, "https://app.example.com:8443"));
    assert_false(hostcheck_origin_ok(&hc, "http://tools.example.org"));
    /* extra origins do not widen the Host check */
    assert_false(hostcheck_host_ok(&hc, "app.example.com"));
    hostcheck_free(&hc);
}

static void a_wildcard_listen_with_only_allowed_origins_checks_origin_not_host(void **state)
{
    char *origins[] = {"https://app.example.com"};
    hostcheck_t hc;
    hostcheck_init(&hc, "0.0.0.0", 8080, NULL, 0, origins, 1);
    assert_true(hostcheck_host_ok(&hc, "whatever:1"));
    assert_true(hostcheck_origin_ok(&hc, "https://app.example.com"));
    assert_false(hostcheck_origin_ok(&hc, "https://evil.com"));
    hostcheck_free(&hc);
}

static void a_host_without_a_port_names_port_80(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 80, NULL, 0, NULL, 0);
    assert_true(hostcheck_host_ok(&hc, "localhost"));
    assert_true(hostcheck_host_ok(&hc, "127.0.0.1"));
    assert_true(hostcheck_host_ok(&hc, "[::1]"));
    assert_true(hostcheck_host_ok(&hc, "localhost:80"));
    assert_false(hostcheck_host_ok(&hc, "localhost:8080"));
    assert_false(hostcheck_host_ok(&hc, "evil.com"));
    hostcheck_free(&hc);

    /* on another port a bare host stays refused */
    hostcheck_init(&hc, "127.0.0.1", 8080, NULL, 0, NULL, 0);
    assert_false(hostcheck_host_ok(&hc, "localhost"));
    hostcheck_free(&hc);
}

static void an_origin_without_a_port_names_its_scheme_default_port(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 80, NULL, 0, NULL, 0);
    assert_true(hostcheck_origin_ok(&hc, "http://localhost"));
    assert_true(hostcheck_origin_ok(&hc, "http://127.0.0.1/"));
    assert_false(hostcheck_origin_ok(&hc, "https://localhost"));
    assert_false(hostcheck_origin_ok(&hc, "http://evil.com"));
    hostcheck_free(&hc);

    char *hosts[] = {"mcp.example.com:443"};
    hostcheck_init(&hc, "0.0.0.0", 8080, hosts, 1, NULL, 0);
    assert_true(hostcheck_origin_ok(&hc, "https://mcp.example.com"));
    assert_false(hostcheck_origin_ok(&hc, "http://mcp.example.com"));
    hostcheck_free(&hc);
}

static void malformed_origins_are_refused(void **state)
{
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 80, NULL, 0, NULL, 0);
    const char *bad[] = {"http://", "http:///", "https://", "://localhost", "http:", "/",
                         "localhost", "http://:80", "http://localhost:", "ws://localhost"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (hostcheck_origin_ok(&hc, bad[i]))
            fail_msg("origin '%s' was allowed", bad[i]);
    }
    char long_origin[600];
    memset(long_origin, 'a', sizeof long_origin - 1);
    memcpy(long_origin, "http://", 7);
    long_origin[sizeof long_origin - 1] = '\0';
    assert_false(hostcheck_origin_ok(&hc, long_origin));
    hostcheck_free(&hc);
}

static void hostcheck_free_releases_every_entry(void **state)
{
    char *hosts[] = {"a.example", "b.example:1"};
    char *origins[] = {"https://c.example"};
    hostcheck_t hc;
    hostcheck_init(&hc, "127.0.0.1", 8080, hosts, 2, origins, 1);
    assert_int_equal(hc.n_hosts, 5);
    assert_int_equal(hc.n_origins, 11);
    hostcheck_free(&hc);
    assert_int_equal(hc.n_hosts, 0);
    assert_int_equal(hc.n_origins, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_exact_media_type_is_accepted),
        cmocka_unit_test(a_list_of_types_admits_each_of_them),
        cmocka_unit_test(media_types_compare_case_insensitively),
        cmocka_unit_test(spaces_around_ranges_and_parameters_are_ignored),
        cmocka_unit_test(parameters_do_not_prevent_a_match),
        cmocka_unit_test(a_zero_q_value_excludes_the_type),
        cmocka_unit_test(a_positive_q_value_admits_the_type),
        cmocka_unit_test(the_most_specific_range_decides),
        cmocka_unit_test(wildcard_ranges_admit_matching_types),
        cmocka_unit_test(a_null_or_empty_accept_admits_nothing),
        cmocka_unit_test(a_similar_but_different_type_is_not_a_match),
        cmocka_unit_test(content_type_json_with_or_without_charset_is_json),
        cmocka_unit_test(content_type_comparison_ignores_case),
        cmocka_unit_test(other_content_types_are_not_json),
        cmocka_unit_test(identity_alone_or_listed_codes_nothing),
        cmocka_unit_test(any_other_coding_is_a_coding),
        cmocka_unit_test(visible_ascii_within_the_limit_passes),
        cmocka_unit_test(spaces_and_control_characters_fail),
        cmocka_unit_test(del_and_bytes_above_ascii_fail),
        cmocka_unit_test(an_empty_value_fails),
        cmocka_unit_test(a_value_longer_than_the_limit_fails),
        cmocka_unit_test(a_single_content_length_or_chunked_alone_is_sound),
        cmocka_unit_test(a_repeated_length_header_is_ambiguous),
        cmocka_unit_test(content_length_with_transfer_encoding_is_ambiguous),
        cmocka_unit_test(a_transfer_encoding_other_than_chunked_is_refused),
        cmocka_unit_test(a_content_length_that_is_not_plain_digits_is_refused),
        cmocka_unit_test(loopback_listen_accepts_every_loopback_spelling_with_the_port),
        cmocka_unit_test(loopback_listen_refuses_a_wrong_port_or_a_missing_port),
        cmocka_unit_test(loopback_listen_refuses_other_hosts),
        cmocka_unit_test(a_missing_or_empty_host_is_refused_when_checking),
        cmocka_unit_test(an_absent_origin_is_always_allowed),
        cmocka_unit_test(the_null_origin_is_refused),
        cmocka_unit_test(loopback_origins_with_the_port_are_allowed_over_http_and_https),
        cmocka_unit_test(an_origin_with_a_trailing_slash_is_the_same_origin),
        cmocka_unit_test(foreign_origins_and_wrong_ports_are_refused),
        cmocka_unit_test(a_specific_listen_address_allows_only_itself),
        cmocka_unit_test(a_wildcard_listen_without_allowed_hosts_checks_nothing),
        cmocka_unit_test(a_wildcard_listen_with_allowed_hosts_checks_host_and_origin),
        cmocka_unit_test(an_allowed_host_without_a_port_matches_any_port),
        cmocka_unit_test(an_allowed_host_without_a_port_allows_its_origins_on_any_port),
        cmocka_unit_test(extra_allowed_origins_are_accepted_besides_the_listen_origins),
        cmocka_unit_test(a_wildcard_listen_with_only_allowed_origins_checks_origin_not_host),
        cmocka_unit_test(a_host_without_a_port_names_port_80),
        cmocka_unit_test(an_origin_without_a_port_names_its_scheme_default_port),
        cmocka_unit_test(malformed_origins_are_refused),
        cmocka_unit_test(hostcheck_free_releases_every_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
