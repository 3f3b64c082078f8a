/* Unit tests: the admin listener (src/admin/admin.c) on 127.0.0.1, port 0, over a real store in
 * a temporary directory, asked by the loopback client (tests/unit/http/loopback.h): /healthz
 * and /healthz/mint without the admin token, the token check on everything else, the keys of
 * /stats, and the Prometheus text of /metrics (every counter of STATS_SCALARS with its HELP and
 * TYPE lines, the labelled series, the value of each line). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "admin/admin.h"
#include "core/auth.h"
#include "core/shard.h"
#include "core/stats.h"
#include "http/loopback.h"
#include "store/store.h"

#include <event2/thread.h>
#include <ftw.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKEN "admin-token-0123456789"

static char DIR_[64];
static store_t *STORE;
static int PORT;
static stats_method_t CALL;

static int setup(void **state)
{
    evthread_use_pthreads(); /* as main does: admin_stop wakes the admin thread's loop */
    strcpy(DIR_, "/tmp/mcpd-test-admin-XXXXXX");
    if (!mkdtemp(DIR_))
        return -1;
    char err[256];
    STORE = store_open(DIR_, false, 0, err, sizeof err);
    if (!STORE || auth_parse(&g_admin_auth, "ops:" TOKEN "\n", err, sizeof err) != 0)
        return -1;
    /* counters with values to find, set before the admin thread starts */
    STAT_ADD(sessions_created_total, 3);
    CALL = stats_method_of("tools/call");
    STAT_ADD(requests_total[CALL], 2);
    stats_count_status(404);
    stats_count_status(404);
    return admin_start("127.0.0.1", 0, STORE, &PORT);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int teardown(void **state)
{
    admin_stop();
    store_close(STORE);
    auth_free(&g_admin_auth);
    nftw(DIR_, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* GET path with Authorization: Bearer token (NULL: none). */
static void get(const char *method, const char *path, const char *token, lb_answer_t *a)
{
    char raw[512];
    snprintf(raw, sizeof raw,
             "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%sConnection: close\r\n\r\n", method, path,
             token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "");
    if (lb_exchange(NULL, PORT, raw, a) != 0 || a->status == 0)
        fail_msg("no answer to %s %s", method, path);
}

static void expect_body(const lb_answer_t *a, int status, const char *body)
{
    if (a->status != status || a->body_len != strlen(body) || memcmp(a->body, body, a->body_len))
        fail_msg("expected %d '%s', got %d '%.*s'", status, body, a->status, (int)a->body_len,
                 a->body);
}

static void healthz_answers_ok_without_the_token(void **state)
{
    lb_answer_t a;
    get("GET", "/healthz", NULL, &a);
    expect_body(&a, 200, "ok\n");
    char v[128];
    assert_string_equal(lb_header(&a, "Content-Type", v, sizeof v), "text/plain");
    lb_answer_free(&a);
    /* HEAD: the length a GET would have, no body */
    get("HEAD", "/healthz", NULL, &a);
    assert_int_equal(a.status, 200);
    assert_string_equal(lb_header(&a, "Content-Length", v, sizeof v), "3");
    assert_int_equal(a.body_len, 0);
    lb_answer_free(&a);
}

static void everything_else_needs_the_admin_token(void **state)
{
    static const char *paths[] = {"/stats", "/metrics", "/shards", "/nowhere"};
    lb_answer_t a;
    char v[128];
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        get("GET", paths[i], NULL, &a);
        expect_body(&a, 401, "unauthorized: send Authorization: Bearer <admin token>\n");
        assert_string_equal(lb_header(&a, "WWW-Authenticate", v, sizeof v),
                            "Bearer realm=\"mcpactord-admin\"");
        lb_answer_free(&a);
        get("GET", paths[i], "not-" TOKEN, &a);
        assert_int_equal(a.status, 401);
        lb_answer_free(&a);
    }
    get("GET", "/nowhere", TOKEN, &a);
    expect_body(&a, 404, "not found: GET /healthz, /stats, /metrics or /shards\n");
    lb_answer_free(&a);
    get("DELETE", "/stats", TOKEN, &a);
    assert_int_equal(a.status, 404);
    lb_answer_free(&a);
}

static void stats_holds_every_counter_and_the_grouped_documents(void **state)
{
    lb_answer_t a;
    get("GET", "/stats", TOKEN, &a);
    assert_int_equal(a.status, 200);
    char v[128];
    assert_string_equal(lb_header(&a, "Content-Type", v, sizeof v), "application/json");
    json_t *o = json_loadb(a.body, a.body_len, 0, NULL);
    assert_true(json_is_object(o));
    /* one key per counter of the table, under the counter's own name */
#define X(name, type, help)                          \
    if (!json_is_integer(json_object_get(o, #name))) \
        fail_msg("/stats lacks the counter %s", #name);
    STATS_SCALARS(X)
#undef X
    assert_int_equal(json_integer_value(json_object_get(o, "sessions_created_total")), 3);
    assert_true(json_is_integer(json_object_get(o, "uptime_s")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "requests_total"),
                                                        stats_method_name(CALL))),
                     2);
    /* a method never counted is left out */
    assert_int_equal(json_object_size(json_object_get(o, "requests_total")), 1);
    assert_int_equal(json_integer_value(
                         json_object_get(json_object_get(o, "http_responses_total"), "404")),
                     2);
    json_t *streams = json_object_get(o, "streams_open");
    assert_true(json_is_integer(json_object_get(streams, "post")));
    assert_true(json_is_integer(json_object_get(streams, "get")));
    assert_true(json_is_true(json_object_get(o, "store_writable")));
    assert_true(json_integer_value(json_object_get(o, "rss_bytes")) > 0);
    static const char *rdb[] = {"estimate_live_data_size_bytes",
                                "memtable_bytes",
                                "estimate_num_keys",
                                "block_cache_budget_bytes",
                                "block_cache_bytes",
                                "memtable_budget_bytes",
                                "partitions",
                                "background_work"};
    for (size_t i = 0; i < sizeof rdb / sizeof rdb[0]; i++)
        if (!json_is_integer(json_object_get(json_object_get(o, "rocksdb"), rdb[i])))
            fail_msg("/stats lacks rocksdb.%s", rdb[i]);
    json_decref(o);
    lb_answer_free(&a);
}

static bool has_line(const lb_answer_t *a, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = a->body; (p = strstr(p, line)) != NULL; p++)
        if ((p == a->body || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

static void expect_line(const lb_answer_t *a, const char *line)
{
    if (!has_line(a, line))
        fail_msg("/metrics lacks the line '%s'", line);
}

static void metrics_is_prometheus_text_with_every_counter(void **state)
{
    lb_answer_t a;
    get("GET", "/metrics", TOKEN, &a);
    assert_int_equal(a.status, 200);
    char v[128], line[1024];
    assert_string_equal(lb_header(&a, "Content-Type", v, sizeof v),
                        "text/plain; version=0.0.4; charset=utf-8");
    /* each counter of the table: HELP, TYPE and its value, under mcpactord_<name> */
#define X(name, type, help)                                                          \
    snprintf(line, sizeof line, "# HELP mcpactord_%s %s", #name, help);              \
    expect_line(&a, line);                                                           \
    snprintf(line, sizeof line, "# TYPE mcpactord_%s %s", #name, STATS_PROM_##type); \
    expect_line(&a, line);
    STATS_SCALARS(X)
#undef X
    expect_line(&a, "mcpactord_sessions_created_total 3");
    snprintf(line, sizeof line, "mcpactord_requests_total{method=\"%s\"} 2",
             stats_method_name(CALL));
    expect_line(&a, line);
    expect_line(&a, "mcpactord_http_responses_total{code=\"404\"} 2");
    expect_line(&a, "# TYPE mcpactord_request_duration_seconds histogram");
    snprintf(line, sizeof line,
             "mcpactord_request_duration_seconds_bucket{method=\"%s\",le=\"+Inf\"} 0",
             stats_method_name(CALL));
    expect_line(&a, line);
    expect_line(&a, "mcpactord_store_writable 1");
    expect_line(&a, "mcpactord_streams_open{kind=\"post\"} 0");
    /* every other line is a sample: a name, labels perhaps, one number */
    regex_t re;
    assert_int_equal(regcomp(&re,
                             "^mcpactord_[a-z_]+(\\{[a-z]+=\"[^\"]*\"(,[a-z]+=\"[^\"]*\")*\\})? "
                             "-?[0-9]+(\\.[0-9]+)?(e[-+][0-9]+)?$",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    int samples = 0;
    for (const char *p = a.body; p < a.body + a.body_len;) {
        const char *eol = memchr(p, '\n', (size_t)(a.body + a.body_len - p));
        assert_non_null(eol); /* every line ends with a newline, the last too */
        snprintf(line, sizeof line, "%.*s", (int)(eol - p), p);
        if (line[0] != '#') {
            if (regexec(&re, line, 0, NULL, 0) != 0)
                fail_msg("/metrics line is not a sample: '%s'", line);
            samples++;
        }
        p = eol + 1;
    }
    regfree(&re);
    assert_true(samples > 100);
    lb_answer_free(&a);
}

static void healthz_mint_is_503_while_the_node_owns_no_shard(void **state)
{
    lb_answer_t a;
    get("GET", "/healthz/mint", NULL, &a);
    expect_body(&a, 200, "ok\n");
    lb_answer_free(&a);
    static bool none[SHARD_COUNT];
    shard_begin_cluster(none); /* a cluster node that owns nothing (drained) */
    get("GET", "/healthz/mint", NULL, &a);
    expect_body(&a, 503, "unhealthy for new sessions: this node owns no shard\n");
    lb_answer_free(&a);
    get("GET", "/healthz", NULL, &a); /* it still runs */
    expect_body(&a, 200, "ok\n");
    lb_answer_free(&a);
}

/* The Host check against DNS rebinding (admin_host_ok), without a listener: bound at addr. */
static bool admin_host_ok_t(const char *bound, bool loopback, const char *host)
{
    return admin_host_ok(bound, loopback ? "127.0.1.1" : "10.0.0.9", loopback, host);
}
static void a_loopback_listener_answers_loopback_hosts_only(void **state)
{
    assert_true(admin_host_ok_t("127.0.0.1", true, "localhost:8081"));
    assert_true(admin_host_ok_t("127.0.0.1", true, "LOCALHOST"));
    assert_true(admin_host_ok_t("127.0.0.1", true, "[::1]:8081"));
    assert_true(admin_host_ok_t("127.0.0.2", true, "127.0.0.2:8081"));
    assert_true(admin_host_ok_t("::1", true, "[::1]"));
    assert_true(admin_host_ok_t("127.0.0.1", true, NULL));
    assert_false(admin_host_ok_t("127.0.0.1", true, "attacker.example:8081"));
    assert_false(admin_host_ok_t("127.0.0.1", true, "localhost.attacker.example"));
    assert_false(admin_host_ok_t("127.0.0.1", true, "127.0.0.1.nip.io:8081"));
    assert_false(admin_host_ok_t("localhost", true, ""));
    /* off loopback the Host names no address to check it against */
    assert_true(admin_host_ok_t("0.0.0.0", false, "attacker.example"));
    assert_true(admin_host_ok_t("10.1.2.3", false, "attacker.example"));
    /* a name bound to a loopback address (its socket says so): checked, the name allowed */
    assert_false(admin_host_ok_t("vm", true, "evil.example"));
    assert_true(admin_host_ok_t("vm", true, "vm:8081"));
    assert_true(admin_host_ok_t("vm", true, "127.0.1.1:8081")); /* the address it bound */
    assert_true(admin_host_ok("::1", "::1", true, "[::1]:8081"));
    assert_false(admin_host_ok("vm", NULL, true, "[]"));
    assert_false(admin_host_ok("", NULL, true, "")); /* an empty name names nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(healthz_answers_ok_without_the_token),
        cmocka_unit_test(everything_else_needs_the_admin_token),
        cmocka_unit_test(stats_holds_every_counter_and_the_grouped_documents),
        cmocka_unit_test(metrics_is_prometheus_text_with_every_counter),
        cmocka_unit_test(healthz_mint_is_503_while_the_node_owns_no_shard),
        cmocka_unit_test(a_loopback_listener_answers_loopback_hosts_only),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
