/* Unit tests: ids, integer and address parsing, hashing (src/core/util.c). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"

/* ---- session ids ---- */

static void a_new_session_id_is_32_lowercase_hex_characters(void **state)
{
    char id[SESSION_ID_LEN + 1];
    memset(id, 'X', sizeof id);
    assert_int_equal(session_id_new(id), 0);
    assert_int_equal(strlen(id), 32);
    for (int i = 0; i < 32; i++) {
        char c = id[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            fail_msg("character %d of '%s' is not lowercase hex", i, id);
    }
    assert_true(session_id_valid(id));
}

static void two_new_session_ids_differ(void **state)
{
    char a[SESSION_ID_LEN + 1], b[SESSION_ID_LEN + 1];
    assert_int_equal(session_id_new(a), 0);
    assert_int_equal(session_id_new(b), 0);
    assert_string_not_equal(a, b);
}

static void session_id_valid_requires_exactly_32_lowercase_hex(void **state)
{
    assert_true(session_id_valid("0123456789abcdef0123456789abcdef"));
    assert_false(session_id_valid("0123456789abcdef0123456789abcde"));   /* 31 */
    assert_false(session_id_valid("0123456789abcdef0123456789abcdef0")); /* 33 */
    assert_false(session_id_valid("0123456789ABCDEF0123456789abcdef"));
    assert_false(session_id_valid("0123456789abcdef0123456789abcdeg"));
    assert_false(session_id_valid("0123456789abcdef 123456789abcdef"));
    assert_false(session_id_valid("0123456789abcdef-0123456789abcde"));
    assert_false(session_id_valid(""));
    char longer[200];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    assert_false(session_id_valid(longer));
}

/* ---- hashing ---- */

static void hashing_is_deterministic_and_input_sensitive(void **state)
{
    assert_true(hash_bytes("abc", 3) == hash_bytes("abc", 3));
    assert_true(hash_bytes("abc", 3) != hash_bytes("abd", 3));
    assert_true(hash_bytes("abc", 3) != hash_bytes("abc", 2));
}

/* hash_id chooses a session's worker from its 8-character routing prefix (worker_for_session:
 * hash % workers) and its place in the tables from the whole id: every byte counts, and the
 * ids that worker_place_on_thread steps through (one hex digit after another) spread over the
 * workers as random ids do. */
static void hash_id_counts_every_byte_and_spreads_ids_over_workers(void **state)
{
    (void)state;
    char id[SESSION_ID_LEN + 1];
    assert_int_equal(session_id_new(id), 0);
    uint64_t h = hash_id(id, SESSION_ID_LEN);
    assert_true(h == hash_id(id, SESSION_ID_LEN));
    assert_true(h != hash_id(id, SESSION_ID_LEN - 1));
    for (size_t i = 0; i < SESSION_ID_LEN; i++) {
        char other[SESSION_ID_LEN + 1];
        memcpy(other, id, sizeof other);
        other[i] = other[i] == '0' ? '1' : '0';
        assert_true(hash_id(other, SESSION_ID_LEN) != h);
    }
    /* 6 workers (not a power of two) from the routing prefix, and 8 of the table's buckets
     * from the whole id (bucket_of: the bits from 7 up) */
    enum { WORKERS = 6, BUCKETS = 8, IDS = 18000 };
    unsigned random_ids[WORKERS] = {0}, stepped[WORKERS] = {0}, buckets[BUCKETS] = {0};
    char base[SESSION_ID_LEN + 1];
    assert_int_equal(session_id_new(base), 0);
    for (int i = 0; i < IDS; i++) {
        assert_int_equal(session_id_new(id), 0);
        random_ids[hash_id(id, SESSION_ROUTE_LEN) % WORKERS]++;
        buckets[(hash_id(id, SESSION_ID_LEN) >> 7) % BUCKETS]++;
        /* one shard's prefix with the 5 hex digits after the shard counting up, as
         * worker_place_on_thread steps them */
        snprintf(base + SESSION_ROUTE_LEN - 5, 6, "%05x", (unsigned)i);
        stepped[hash_id(base, SESSION_ROUTE_LEN) % WORKERS]++;
    }
    /* 3,000 and 2,250 each on average: within 15 % (more than 7 sigmas of a fair spread) */
    for (int w = 0; w < WORKERS; w++) {
        assert_in_range(random_ids[w], 2550, 3450);
        assert_in_range(stepped[w], 2550, 3450);
    }
    for (int k = 0; k < BUCKETS; k++)
        assert_in_range(buckets[k], 1912, 2588);
}

/* ---- parse_int64 ---- */

static void parse_int64_accepts_decimal_within_bounds(void **state)
{
    int64_t v = -1;
    assert_int_equal(parse_int64("0", 0, 10, &v), 0);
    assert_true(v == 0);
    assert_int_equal(parse_int64("10", 0, 10, &v), 0);
    assert_true(v == 10);
    assert_int_equal(parse_int64("007", 0, 10, &v), 0);
    assert_true(v == 7);
    assert_int_equal(parse_int64("9223372036854775807", 0, INT64_MAX, &v), 0);
    assert_true(v == INT64_MAX);
}

static void parse_int64_rejects_values_outside_the_bounds(void **state)
{
    int64_t v = 123;
    assert_int_equal(parse_int64("11", 0, 10, &v), -1);
    assert_int_equal(parse_int64("0", 1, 10, &v), -1);
    assert_int_equal(parse_int64("1024", 1025, 2048, &v), -1);
    assert_true(v == 123);
}

static void parse_int64_rejects_overflow(void **state)
{
    int64_t v = 123;
    assert_int_equal(parse_int64("9223372036854775808", 0, INT64_MAX, &v), -1);
    assert_int_equal(parse_int64("99999999999999999999", 0, INT64_MAX, &v), -1);
    assert_int_equal(parse_int64("18446744073709551617", 0, INT64_MAX, &v), -1);
    assert_true(v == 123);
}

static void parse_int64_rejects_junk_signs_and_spaces(void **state)
{
    int64_t v = 123;
    const char *bad[] = {"", "-1", "+1", " 1", "1 ", "1x", "x1", "1.0", "0x10", "1e3", "\xd9\xa1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (parse_int64(bad[i], INT64_MIN, INT64_MAX, &v) != -1)
            fail_msg("'%s' was accepted", bad[i]);
    }
    assert_int_equal(parse_int64(NULL, 0, 10, &v), -1);
    assert_true(v == 123);
}

/* ---- parse_host_port ---- */

static void host_and_port_are_split(void **state)
{
    char host[64];
    int port = -1;
    assert_int_equal(parse_host_port("127.0.0.1:8080", host, sizeof host, &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(parse_host_port("example.com:0", host, sizeof host, &port), 0);
    assert_string_equal(host, "example.com");
    assert_int_equal(port, 0);
    assert_int_equal(parse_host_port("h:65535", host, sizeof host, &port), 0);
    assert_int_equal(port, 65535);
}

static void a_bracketed_ipv6_host_loses_its_brackets(void **state)
{
    char host[64];
    int port = -1;
    assert_int_equal(parse_host_port("[::1]:80", host, sizeof host, &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 80);
    assert_int_equal(parse_host_port("[fe80::1:2]:9000", host, sizeof host, &port), 0);
    assert_string_equal(host, "fe80::1:2");
    assert_int_equal(port, 9000);
}

static void a_missing_port_is_rejected(void **state)
{
    char host[64];
    int port = -1;
    assert_int_equal(parse_host_port("localhost", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("localhost:", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("[::1]", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("[::1]:", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("[::1", host, sizeof host, &port), -1);
    assert_int_equal(port, -1);
}

/* Regression (tests/fuzz corpus cluster_file/regression_admin_dns_name_127): any host that
 * started with "127." was taken as loopback, so a cluster file's admin listener on a DNS name
 * such as 127.attacker.example ran without --admin-token wherever the name resolved. */
static void only_localhost_and_numeric_loopback_addresses_are_loopback(void **state)
{
    assert_true(host_is_loopback("127.0.0.1"));
    assert_true(host_is_loopback("127.0.0.2"));
    assert_true(host_is_loopback("127.1"));
    assert_true(host_is_loopback("::1"));
    assert_true(host_is_loopback("::ffff:127.0.0.1"));
    assert_true(host_is_loopback("localhost"));
    assert_true(host_is_loopback("LocalHost"));
    assert_false(host_is_loopback("127.attacker.example"));
    assert_false(host_is_loopback("127.0.0.1.nip.io"));
    assert_false(host_is_loopback("127."));
    assert_false(host_is_loopback("128.0.0.1"));
    assert_false(host_is_loopback("0.0.0.0"));
    assert_false(host_is_loopback("::"));
    assert_false(host_is_loopback("[::1]")); /* parse_host_port leaves no brackets */
    assert_false(host_is_loopback("localhost.attacker.example"));
    assert_false(host_is_loopback(""));
}

/* The admin listener takes its Host check from the address it bound (a name such as the
 * machine's own in /etc/hosts binds 127.0.1.1; its text said nothing). */
static void a_bound_address_in_127_8_or_at_1_is_loopback(void **state)
{
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET, "127.0.1.1", &v4.sin_addr);
    assert_true(sockaddr_is_loopback((struct sockaddr *)&v4));
    inet_pton(AF_INET, "10.0.0.1", &v4.sin_addr);
    assert_false(sockaddr_is_loopback((struct sockaddr *)&v4));
    inet_pton(AF_INET6, "::1", &v6.sin6_addr);
    assert_true(sockaddr_is_loopback((struct sockaddr *)&v6));
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &v6.sin6_addr);
    assert_true(sockaddr_is_loopback((struct sockaddr *)&v6));
    inet_pton(AF_INET6, "::", &v6.sin6_addr);
    assert_false(sockaddr_is_loopback((struct sockaddr *)&v6));
}

static void a_port_out_of_range_or_malformed_is_rejected(void **state)
{
    char host[64];
    int port = -1;
    assert_int_equal(parse_host_port("localhost:70000", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("localhost:65536", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("localhost:-1", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("localhost:80a", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("[::1]x80", host, sizeof host, &port), -1);
    assert_int_equal(port, -1);
}

static void an_empty_host_is_rejected(void **state)
{
    char host[64];
    int port = -1;
    assert_int_equal(parse_host_port(":8080", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("[]:8080", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("", host, sizeof host, &port), -1);
    assert_int_equal(port, -1);
}

static void a_host_too_long_for_the_buffer_is_rejected(void **state)
{
    char host[8];
    int port = -1;
    assert_int_equal(parse_host_port("abcdefgh:1", host, sizeof host, &port), -1);
    assert_int_equal(parse_host_port("abcdefg:1", host, sizeof host, &port), 0);
    assert_string_equal(host, "abcdefg");
}

/* ---- allocation helpers ---- */

static void string_duplicates_are_independent_copies(void **state)
{
    const char *src = "hello world";
    char *a = xstrdup(src);
    char *b = xstrndup(src, 5);
    assert_string_equal(a, src);
    assert_true(a != src);
    assert_string_equal(b, "hello");
    free(a);
    free(b);
}

static void str_copy_copies_and_cuts_like_snprintf(void **state)
{
    (void)state;
    char d[6];
    str_copy(d, sizeof d, "abc");
    assert_string_equal(d, "abc");
    str_copy(d, sizeof d, "abcdefgh");
    assert_string_equal(d, "abcde");
    str_copy(d, sizeof d, "");
    assert_string_equal(d, "");
    str_copy(d, 1, "xyz");
    assert_string_equal(d, "");
}

static void hex_put_writes_the_fewest_digits_or_the_width_asked(void **state)
{
    (void)state;
    char out[17];
    assert_int_equal(hex_put(out, 0, 0), 1);
    assert_string_equal(out, "0");
    assert_int_equal(hex_put(out, 0x141, 0), 3);
    assert_string_equal(out, "141");
    assert_int_equal(hex_put(out, 0xab, 8), 8);
    assert_string_equal(out, "000000ab");
    assert_int_equal(hex_put(out, UINT64_MAX, 0), 16);
    assert_string_equal(out, "ffffffffffffffff");
    assert_int_equal(hex_put(out, 1, 16), 16);
    assert_string_equal(out, "0000000000000001");
    for (uint64_t v = 1; v < (1ULL << 40); v = v * 7 + 3) {
        char want[17];
        snprintf(want, sizeof want, "%llx", (unsigned long long)v);
        hex_put(out, v, 0);
        assert_string_equal(out, want);
    }
}

/* A container's CPU quota lowers the default thread count: quota / period, rounded up. */
static void a_cgroup_cpu_quota_counts_whole_cpus_rounded_up(void **state)
{
    assert_int_equal(cpu_quota_cpus("200000 100000"), 2);
    assert_int_equal(cpu_quota_cpus("150000 100000\n"), 2);
    assert_int_equal(cpu_quota_cpus("50000 100000"), 1);
    assert_int_equal(cpu_quota_cpus("max 100000"), 0); /* v2: no quota */
    assert_int_equal(cpu_quota_cpus("-1 100000"), 0);  /* v1: no quota */
    assert_int_equal(cpu_quota_cpus("100000 0"), 0);
    assert_int_equal(cpu_quota_cpus(""), 0);
    assert_int_equal(cpu_quota_cpus(NULL), 0);
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int n = cpus_usable();
    assert_true(n >= 1 && n <= CPU_COUNT(&set));
}

/* Small blocks come cleared from malloc, large ones from calloc: all zero, any size. */
static void xcalloc_gives_zeroed_blocks_small_and_large(void **state)
{
    size_t sizes[] = {0, 1, 168, 4095, 4096, 1 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        /* dirty the heap first so a reused block would show */
        unsigned char *d = xmalloc(sizes[k] + 1);
        memset(d, 0xab, sizes[k] + 1);
        free(d);
        unsigned char *p = xcalloc(1, sizes[k]);
        for (size_t i = 0; i < sizes[k]; i++)
            assert_int_equal(p[i], 0);
        free(p);
    }
    unsigned char *q = xcalloc(3, 40);
    for (int i = 0; i < 120; i++)
        assert_int_equal(q[i], 0);
    free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(str_copy_copies_and_cuts_like_snprintf),
        cmocka_unit_test(a_new_session_id_is_32_lowercase_hex_characters),
        cmocka_unit_test(two_new_session_ids_differ),
        cmocka_unit_test(session_id_valid_requires_exactly_32_lowercase_hex),
        cmocka_unit_test(hashing_is_deterministic_and_input_sensitive),
        cmocka_unit_test(hash_id_counts_every_byte_and_spreads_ids_over_workers),
        cmocka_unit_test(parse_int64_accepts_decimal_within_bounds),
        cmocka_unit_test(parse_int64_rejects_values_outside_the_bounds),
        cmocka_unit_test(parse_int64_rejects_overflow),
        cmocka_unit_test(parse_int64_rejects_junk_signs_and_spaces),
        cmocka_unit_test(host_and_port_are_split),
        cmocka_unit_test(a_bracketed_ipv6_host_loses_its_brackets),
        cmocka_unit_test(a_missing_port_is_rejected),
        cmocka_unit_test(only_localhost_and_numeric_loopback_addresses_are_loopback),
        cmocka_unit_test(a_bound_address_in_127_8_or_at_1_is_loopback),
        cmocka_unit_test(a_port_out_of_range_or_malformed_is_rejected),
        cmocka_unit_test(an_empty_host_is_rejected),
        cmocka_unit_test(a_host_too_long_for_the_buffer_is_rejected),
        cmocka_unit_test(string_duplicates_are_independent_copies),
        cmocka_unit_test(hex_put_writes_the_fewest_digits_or_the_width_asked),
        cmocka_unit_test(a_cgroup_cpu_quota_counts_whole_cpus_rounded_up),
        cmocka_unit_test(xcalloc_gives_zeroed_blocks_small_and_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
