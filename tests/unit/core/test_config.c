/* Unit tests: command-line parsing (src/core/config.c). config_parse prints errors and help. */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/log.h"
#include "core/util.h"

static config_t g_c;

/* Parses a NULL-terminated argument list (without argv[0]) into g_c from the defaults. The
 * arguments are copied into the same buffers on every call, as a caller that reuses its
 * storage would: nothing may point into a previous call's argv. */
static char g_slots[64][2048];

static int parse_args(const char *const *args)
{
    char *argv[64];
    int argc = 0;
    snprintf(g_slots[argc], sizeof g_slots[argc], "%s", "mcpactord");
    argv[argc] = g_slots[argc];
    argc++;
    for (; *args; args++) {
        assert_true(strlen(*args) < sizeof g_slots[argc]);
        snprintf(g_slots[argc], sizeof g_slots[argc], "%s", *args);
        argv[argc] = g_slots[argc];
        argc++;
    }
    argv[argc] = NULL;
    config_defaults(&g_c);
    return config_parse(&g_c, argc, argv);
}

#define PARSE(...) parse_args((const char *const[]){__VA_ARGS__, NULL})

static char g_stderr[4096];

/* parse_args with stderr captured into g_stderr. */
static int parse_args_quiet(const char *const *args)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    int rc = parse_args(args);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(g_stderr, 1, sizeof g_stderr - 1, tmp);
    g_stderr[n] = '\0';
    fclose(tmp);
    return rc;
}

#define PARSE_QUIET(...) parse_args_quiet((const char *const[]){__VA_ARGS__, NULL})

static int teardown(void **state)
{
    config_free(&g_c);
    return 0;
}

static void no_flags_give_the_documented_defaults(void **state)
{
    assert_int_equal(parse_args((const char *const[]){NULL}), 0);
    assert_string_equal(g_c.listen_host, "127.0.0.1");
    assert_int_equal(g_c.listen_port, 8080);
    assert_true(g_c.admin_enabled);
    assert_string_equal(g_c.admin_host, "127.0.0.1");
    assert_int_equal(g_c.admin_port, 8081);
    assert_string_equal(g_c.data_dir, "./mcpactord-data");
    /* one HTTP thread per CPU the process may use (see the test below), actors on them */
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    assert_int_equal(g_c.http_threads, CPU_COUNT(&set) > 64 ? 64 : CPU_COUNT(&set));
    assert_int_equal(g_c.workers, 0);
    assert_int_equal(g_c.tool_threads, 4);
    assert_int_equal(g_c.n_toolsets, 1);
    assert_string_equal(g_c.toolsets[0], "demo");
    assert_int_equal(g_c.n_plugins, 0);
    assert_int_equal(g_c.n_allowed_hosts, 0);
    assert_int_equal(g_c.n_allowed_origins, 0);
    assert_int_equal(g_c.log_level, LOG_INFO);
    assert_true(g_c.max_body == 4194304);
    assert_true(g_c.max_headers == 16384);
    assert_true(g_c.mailbox == 1024);
    assert_true(g_c.page_size == 100);
    assert_int_equal(g_c.response_mode, RESPONSE_AUTO);
    assert_true(g_c.json_window_ms == 1000);
    assert_true(g_c.keepalive_s == 25);
    assert_true(g_c.retry_ms == 1000);
    assert_true(g_c.stream_cap == 256);
    assert_true(g_c.event_store);
    assert_true(g_c.request_timeout_ms == 300000);
    assert_false(g_c.sync);
    assert_true(g_c.read_timeout_s == 30);
}

static void listen_sets_host_and_port(void **state)
{
    assert_int_equal(PARSE("--listen", "0.0.0.0:9000"), 0);
    assert_string_equal(g_c.listen_host, "0.0.0.0");
    assert_int_equal(g_c.listen_port, 9000);
    config_free(&g_c);
    assert_int_equal(PARSE("--listen=[::1]:9001"), 0);
    assert_string_equal(g_c.listen_host, "::1");
    assert_int_equal(g_c.listen_port, 9001);
}

static void a_malformed_listen_address_returns_2(void **state)
{
    assert_int_equal(PARSE("--listen", "localhost"), 2);
    config_free(&g_c);
    assert_int_equal(PARSE("--listen", "localhost:70000"), 2);
    config_free(&g_c);
    assert_int_equal(PARSE("--listen", ":80"), 2);
}

static void admin_listen_off_disables_the_admin_listener(void **state)
{
    assert_int_equal(PARSE("--admin-listen", "off"), 0);
    assert_false(g_c.admin_enabled);
    config_free(&g_c);
    assert_int_equal(PARSE("--admin-listen", "127.0.0.1:9999"), 0);
    assert_true(g_c.admin_enabled);
    assert_int_equal(g_c.admin_port, 9999);
    config_free(&g_c);
    assert_int_equal(PARSE("--admin-listen", "nope"), 2);
}

static void data_dir_takes_a_non_empty_path(void **state)
{
    assert_int_equal(PARSE("--data-dir", "/var/lib/mcpd"), 0);
    assert_string_equal(g_c.data_dir, "/var/lib/mcpd");
    config_free(&g_c);
    assert_int_equal(PARSE("--data-dir", ""), 2);
    config_free(&g_c);
    char *long_dir = malloc(2000);
    memset(long_dir, 'd', 1999);
    long_dir[1999] = '\0';
    assert_int_equal(PARSE("--data-dir", long_dir), 2);
    free(long_dir);
}

static void integer_flags_set_their_fields(void **state)
{
    assert_int_equal(PARSE("--http-threads", "2", "--workers", "8", "--tool-threads=16",
                           "--max-body", "2048", "--page-size", "7", "--keepalive", "5",
                           "--retry-ms", "0", "--stream-cap", "10", "--json-window", "250",
                           "--request-timeout", "1500", "--read-timeout", "3", "--mailbox", "3",
                           "--max-headers", "4096"),
                     0);
    assert_int_equal(g_c.http_threads, 2);
    assert_int_equal(g_c.workers, 8);
    assert_int_equal(g_c.tool_threads, 16);
    assert_true(g_c.max_body == 2048);
    assert_true(g_c.page_size == 7);
    assert_true(g_c.keepalive_s == 5);
    assert_true(g_c.retry_ms == 0);
    assert_true(g_c.stream_cap == 10);
    assert_true(g_c.json_window_ms == 250);
    assert_true(g_c.request_timeout_ms == 1500);
    assert_true(g_c.read_timeout_s == 3);
    assert_true(g_c.mailbox == 3);
    assert_true(g_c.max_headers == 4096);
}

static void malformed_or_out_of_range_integers_return_2(void **state)
{
    const char *bad[][2] = {
        {"--workers", "abc"},   {"--workers", "65"},
        {"--workers", "257"},   {"--workers", "-1"},
        {"--workers", "1.5"},   {"--workers", ""},
        {"--max-body", "1023"}, {"--page-size", "99999999999999999999"},
        {"--keepalive", "5s"},  {"--tool-threads", " 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = PARSE(bad[i][0], bad[i][1]);
        config_free(&g_c);
        if (rc != 2)
            fail_msg("%s '%s' returned %d", bad[i][0], bad[i][1], rc);
    }
}

static void an_explicit_toolset_replaces_the_default_demo(void **state)
{
    assert_int_equal(PARSE("--toolset", "a,b"), 0);
    assert_int_equal(g_c.n_toolsets, 2);
    assert_string_equal(g_c.toolsets[0], "a");
    assert_string_equal(g_c.toolsets[1], "b");
}

static void repeated_list_flags_accumulate(void **state)
{
    assert_int_equal(PARSE("--toolset", "a", "--toolset", "b,c", "--allowed-host", "x.example",
                           "--allowed-host", "y.example:80,z.example", "--allowed-origin",
                           "https://app.example", "--plugin", "/p/one.so", "--plugin", "/p/two.so"),
                     0);
    assert_int_equal(g_c.n_toolsets, 3);
    assert_string_equal(g_c.toolsets[2], "c");
    assert_int_equal(g_c.n_allowed_hosts, 3);
    assert_string_equal(g_c.allowed_hosts[1], "y.example:80");
    assert_int_equal(g_c.n_allowed_origins, 1);
    assert_string_equal(g_c.allowed_origins[0], "https://app.example");
    assert_int_equal(g_c.n_plugins, 2);
    assert_string_equal(g_c.plugins[1], "/p/two.so");
}

static void cors_origins_are_kept_as_a_browser_sends_them_and_a_bad_one_returns_2(void **state)
{
    /* '*' needs authentication: with an issuer here, alone below */
    assert_int_equal(PARSE("--cors-origin", "HTTPS://App.Example:443/", "--cors-origin",
                           "http://127.0.0.1:9999,*", "--auth-issuer", "http://127.0.0.1:9000"),
                     0);
    assert_int_equal(g_c.n_cors_origins, 3);
    assert_string_equal(g_c.cors_origins[0], "https://app.example");
    assert_string_equal(g_c.cors_origins[1], "http://127.0.0.1:9999");
    assert_string_equal(g_c.cors_origins[2], "*");
    config_free(&g_c);
    assert_int_equal(PARSE_QUIET("--cors-origin", "https://app.example/path"), 2);
    assert_non_null(strstr(g_stderr, "--cors-origin https://app.example/path"));
    config_free(&g_c);
    assert_int_equal(PARSE_QUIET("--cors-origin", ""), 2);
    assert_non_null(strstr(g_stderr, "--cors-origin"));
    config_free(&g_c);
    assert_int_equal(PARSE_QUIET("--cors-origin", "*"), 2);
    assert_non_null(strstr(g_stderr, "needs --auth-tokens FILE or --auth-issuer URL"));
}

static void an_empty_item_in_a_list_returns_2(void **state)
{
    assert_int_equal(PARSE("--toolset", "a,,b"), 2);
    config_free(&g_c);
    assert_int_equal(PARSE("--allowed-host", ",x"), 2);
    config_free(&g_c);
    assert_int_equal(PARSE("--plugin", "x,"), 0); /* a trailing comma ends the list */
    assert_int_equal(g_c.n_plugins, 1);
}

static void an_empty_toolset_value_serves_no_built_in_toolset(void **state)
{
    assert_int_equal(PARSE("--toolset", ""), 0);
    assert_int_equal(g_c.n_toolsets, 0);
}

static void more_than_the_list_limit_returns_2(void **state)
{
    assert_int_equal(PARSE("--plugin", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"), 0);
    assert_int_equal(g_c.n_plugins, CFG_MAX_LIST);
    config_free(&g_c);
    assert_int_equal(PARSE("--plugin", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"), 2);
}

static void boolean_flags_switch_their_setting(void **state)
{
    assert_int_equal(PARSE("--no-event-store", "--sync"), 0);
    assert_false(g_c.event_store);
    assert_true(g_c.sync);
}

static void log_level_and_response_mode_take_named_values(void **state)
{
    assert_int_equal(PARSE("--log-level", "debug", "--response-mode", "json"), 0);
    assert_int_equal(g_c.log_level, LOG_DEBUG);
    assert_int_equal(g_c.response_mode, RESPONSE_JSON);
    config_free(&g_c);
    assert_int_equal(PARSE("--log-level", "error", "--response-mode", "sse"), 0);
    assert_int_equal(g_c.log_level, LOG_ERROR);
    assert_int_equal(g_c.response_mode, RESPONSE_SSE);
    config_free(&g_c);
    assert_int_equal(PARSE("--log-level", "loud"), 2);
    config_free(&g_c);
    assert_int_equal(PARSE("--response-mode", "stream"), 2);
}

static void an_unknown_flag_returns_2_and_names_it(void **state)
{
    assert_int_equal(PARSE_QUIET("--no-such-flag"), 2);
    assert_non_null(strstr(g_stderr, "unknown flag --no-such-flag"));
    config_free(&g_c);
    assert_int_equal(PARSE_QUIET("--workers", "2", "--bogus=1"), 2);
    assert_non_null(strstr(g_stderr, "unknown flag --bogus=1"));
    config_free(&g_c);
    assert_int_equal(PARSE_QUIET("-x"), 2);
    assert_non_null(strstr(g_stderr, "unknown flag -x"));
}

static void a_flag_missing_its_value_returns_2_and_says_so(void **state)
{
    assert_int_equal(PARSE_QUIET("--workers"), 2);
    assert_non_null(strstr(g_stderr, "--workers needs a value"));
    config_free(&g_c);
    assert_int_equal(PARSE_QUIET("--data-dir"), 2);
    assert_non_null(strstr(g_stderr, "--data-dir needs a value"));
    config_free(&g_c);
    assert_int_equal(PARSE_QUIET("--sync=yes"), 2);
    assert_non_null(strstr(g_stderr, "--sync=yes"));
}

static void a_positional_argument_returns_2_and_names_it(void **state)
{
    assert_int_equal(PARSE_QUIET("serve"), 2);
    assert_non_null(strstr(g_stderr, "unexpected argument 'serve'"));
    config_free(&g_c);
    assert_int_equal(PARSE_QUIET("--workers", "2", "extra"), 2);
    assert_non_null(strstr(g_stderr, "unexpected argument 'extra'"));
}

static void a_malformed_integer_error_names_the_flag_and_its_range(void **state)
{
    assert_int_equal(PARSE_QUIET("--workers", "abc"), 2);
    assert_non_null(strstr(g_stderr, "--workers"));
    assert_non_null(strstr(g_stderr, "0..64"));
    assert_non_null(strstr(g_stderr, "'abc'"));
}

static void help_and_version_return_1(void **state)
{
    assert_int_equal(PARSE("--help"), 1);
    config_free(&g_c);
    assert_int_equal(PARSE("--workers", "2", "--version"), 1);
}

static void a_rejected_short_flag_does_not_disturb_the_next_parse(void **state)
{
    /* getopt's scan position must not survive into the next config_parse */
    assert_int_equal(PARSE("-x"), 2);
    config_free(&g_c);
    assert_int_equal(PARSE("--workers", "2"), 0);
    assert_int_equal(g_c.workers, 2);
    config_free(&g_c);
    assert_int_equal(PARSE("-abc"), 2);
    config_free(&g_c);
    assert_int_equal(PARSE("--sync"), 0);
    assert_true(g_c.sync);
}

static void parsing_twice_gives_the_same_result(void **state)
{
    for (int round = 0; round < 3; round++) {
        assert_int_equal(PARSE("--workers", "3", "--toolset", "t"), 0);
        assert_int_equal(g_c.workers, 3);
        assert_int_equal(g_c.n_toolsets, 1);
        assert_string_equal(g_c.toolsets[0], "t");
        config_free(&g_c);
        assert_int_equal(PARSE("--bogus"), 2);
        config_free(&g_c);
    }
}

static void http_threads_default_to_the_cpus_the_process_may_use(void **state)
{
    cpu_set_t saved, one;
    assert_int_equal(sched_getaffinity(0, sizeof saved, &saved), 0);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &saved)) {
            CPU_SET(c, &one);
            break;
        }
    }
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    assert_int_equal(parse_args((const char *const[]){NULL}), 0);
    assert_int_equal(g_c.http_threads, 1); /* taskset -c 0: one loop */
    assert_int_equal(g_c.workers, 0);
    config_free(&g_c);
    assert_int_equal(PARSE("--http-threads", "3", "--workers", "2"), 0);
    assert_int_equal(g_c.http_threads, 3); /* an explicit choice always wins */
    assert_int_equal(g_c.workers, 2);
    config_free(&g_c);
    assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
    assert_int_equal(parse_args((const char *const[]){NULL}), 0);
    assert_int_equal(g_c.http_threads, CPU_COUNT(&saved) > 64 ? 64 : CPU_COUNT(&saved));
    config_free(&g_c);
}

/* --upstream NAME=COMMAND: the name checked (a path segment), the command kept whole. */
static void upstream_takes_name_and_command(void **state)
{
    assert_int_equal(PARSE("--upstream", "py=python3 -u 'my server.py'", "--upstream",
                           "fs_2-x=npx -y pkg"),
                     0);
    assert_int_equal(g_c.n_upstreams, 2);
    assert_string_equal(g_c.upstream_names[0], "py");
    assert_string_equal(g_c.upstream_cmds[0], "python3 -u 'my server.py'");
    assert_int_equal(config_upstream_find(&g_c, "fs_2-x", 6), 1);
    assert_int_equal(config_upstream_find(&g_c, "p", 1), -1);
    assert_int_equal(g_c.upstream_max, 100); /* the documented default */
    config_free(&g_c);
    const char *bad[] = {
        "Py=x", "=x", "py", "py=", "py=  ", "a/b=x", "abcdefghijklmnopqrstuvwxyz0123456=x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(PARSE_QUIET("--upstream", bad[i]), 2);
        assert_non_null(strstr(g_stderr, "--upstream"));
        config_free(&g_c);
    }
    assert_int_equal(PARSE_QUIET("--upstream", "a=x", "--upstream", "a=y"), 2);
    assert_non_null(strstr(g_stderr, "given twice"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(http_threads_default_to_the_cpus_the_process_may_use),
        cmocka_unit_test_teardown(no_flags_give_the_documented_defaults, teardown),
        cmocka_unit_test_teardown(listen_sets_host_and_port, teardown),
        cmocka_unit_test_teardown(upstream_takes_name_and_command, teardown),
        cmocka_unit_test_teardown(a_malformed_listen_address_returns_2, teardown),
        cmocka_unit_test_teardown(admin_listen_off_disables_the_admin_listener, teardown),
        cmocka_unit_test_teardown(data_dir_takes_a_non_empty_path, teardown),
        cmocka_unit_test_teardown(integer_flags_set_their_fields, teardown),
        cmocka_unit_test_teardown(malformed_or_out_of_range_integers_return_2, teardown),
        cmocka_unit_test_teardown(an_explicit_toolset_replaces_the_default_demo, teardown),
        cmocka_unit_test_teardown(repeated_list_flags_accumulate, teardown),
        cmocka_unit_test_teardown(an_empty_item_in_a_list_returns_2, teardown),
        cmocka_unit_test_teardown(an_empty_toolset_value_serves_no_built_in_toolset, teardown),
        cmocka_unit_test_teardown(more_than_the_list_limit_returns_2, teardown),
        cmocka_unit_test_teardown(boolean_flags_switch_their_setting, teardown),
        cmocka_unit_test_teardown(log_level_and_response_mode_take_named_values, teardown),
        cmocka_unit_test_teardown(an_unknown_flag_returns_2_and_names_it, teardown),
        cmocka_unit_test_teardown(a_flag_missing_its_value_returns_2_and_says_so, teardown),
        cmocka_unit_test_teardown(a_positional_argument_returns_2_and_names_it, teardown),
        cmocka_unit_test_teardown(a_malformed_integer_error_names_the_flag_and_its_range, teardown),
        cmocka_unit_test_teardown(help_and_version_return_1, teardown),
        cmocka_unit_test_teardown(a_rejected_short_flag_does_not_disturb_the_next_parse, teardown),
        cmocka_unit_test_teardown(parsing_twice_gives_the_same_result, teardown),
        cmocka_unit_test_teardown(
            cors_origins_are_kept_as_a_browser_sends_them_and_a_bad_one_returns_2, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
