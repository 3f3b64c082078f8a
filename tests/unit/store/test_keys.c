/* Unit tests: store key encodings (src/store/keys.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "store/keys.h"

static const char SID_A[] = "0123456789abcdef0123456789abcdef";
static const char SID_B[] = "0123456789abcdef0123456789abcdf0"; /* the next sid after A */
static const char SID_C[] = "fedcba9876543210fedcba9876543210";

/* RocksDB's bytewise comparator: memcmp, then a prefix sorts first. */
static int bytecmp(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* ---- integer encoding ---- */

static void u64_is_stored_big_endian_and_read_back(void **state)
{
    unsigned char b[8];
    key_put_u64(b, 0x0102030405060708ULL);
    const unsigned char want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_memory_equal(b, want, 8);
    assert_true(key_get_u64(b) == 0x0102030405060708ULL);
    key_put_u64(b, UINT64_MAX);
    assert_true(key_get_u64(b) == UINT64_MAX);
    key_put_u64(b, 0);
    assert_true(key_get_u64(b) == 0);
}

/* ---- ordering ---- */

static void event_keys_sort_by_seq_under_memcmp(void **state)
{
    unsigned char k1[KEY_EVENT_LEN], k2[KEY_EVENT_LEN], k256[KEY_EVENT_LEN], kmax[KEY_EVENT_LEN];
    key_event(k1, SID_A, 1, 1);
    key_event(k2, SID_A, 1, 2);
    key_event(k256, SID_A, 1, 256);
    key_event(kmax, SID_A, 1, UINT64_MAX);
    assert_true(memcmp(k1, k2, KEY_EVENT_LEN) < 0);
    assert_true(memcmp(k2, k256, KEY_EVENT_LEN) < 0);
    assert_true(memcmp(k1, k256, KEY_EVENT_LEN) < 0);
    assert_true(memcmp(k256, kmax, KEY_EVENT_LEN) < 0);
}

static void event_keys_sort_by_stream_before_seq(void **state)
{
    unsigned char s1[KEY_EVENT_LEN], s2[KEY_EVENT_LEN], s256[KEY_EVENT_LEN];
    key_event(s1, SID_A, 1, UINT64_MAX);
    key_event(s2, SID_A, 2, 1);
    key_event(s256, SID_A, 256, 1);
    assert_true(memcmp(s1, s2, KEY_EVENT_LEN) < 0);
    assert_true(memcmp(s2, s256, KEY_EVENT_LEN) < 0);
    unsigned char g[KEY_EVENT_LEN];
    key_event(g, SID_A, 0, UINT64_MAX); /* the standalone stream */
    assert_true(memcmp(g, s1, KEY_EVENT_LEN) < 0);
}

static void stream_keys_sort_by_stream_number(void **state)
{
    unsigned char a[KEY_STREAM_LEN], b[KEY_STREAM_LEN], c[KEY_STREAM_LEN];
    assert_int_equal(key_stream(a, SID_A, 1), KEY_STREAM_LEN);
    key_stream(b, SID_A, 2);
    key_stream(c, SID_A, 0x100);
    assert_true(memcmp(a, b, KEY_STREAM_LEN) < 0);
    assert_true(memcmp(b, c, KEY_STREAM_LEN) < 0);
}

static void every_session_key_starts_with_the_session_id(void **state)
{
    unsigned char ev[KEY_EVENT_LEN], st[KEY_STREAM_LEN], sk[KEY_STATE_MAX], rq[SESSION_ID_LEN + 64];
    assert_int_equal(key_event(ev, SID_C, 5, 6), KEY_EVENT_LEN);
    assert_memory_equal(ev, SID_C, SESSION_ID_LEN);
    key_stream(st, SID_C, 5);
    assert_memory_equal(st, SID_C, SESSION_ID_LEN);
    assert_true(key_state(sk, SID_C, "counter") > 0);
    assert_memory_equal(sk, SID_C, SESSION_ID_LEN);
    key_reqmap(rq, SID_C, "7", 1, 5);
    assert_memory_equal(rq, SID_C, SESSION_ID_LEN);
}

static void alarm_keys_sort_by_due_time_first(void **state)
{
    unsigned char a[KEY_ALARM_LEN], b[KEY_ALARM_LEN];
    assert_int_equal(key_alarm(a, 1000, SID_C), KEY_ALARM_LEN);
    key_alarm(b, 1001, SID_A);
    assert_true(memcmp(a, b, KEY_ALARM_LEN) < 0);
}

/* ---- session range upper bound ---- */

static void session_upper_bound_is_above_every_key_of_the_session(void **state)
{
    unsigned char up[SESSION_ID_LEN];
    key_session_upper(up, SID_A);

    unsigned char k[KEY_STATE_MAX + 64];
    assert_true(bytecmp((const unsigned char *)SID_A, SESSION_ID_LEN, up, SESSION_ID_LEN) < 0);
    key_event(k, SID_A, UINT64_MAX, UINT64_MAX);
    assert_true(bytecmp(k, KEY_EVENT_LEN, up, SESSION_ID_LEN) < 0);
    key_stream(k, SID_A, UINT64_MAX);
    assert_true(bytecmp(k, KEY_STREAM_LEN, up, SESSION_ID_LEN) < 0);
    char name[201];
    memset(name, 0xff, 200);
    name[200] = '\0';
    long n = key_state(k, SID_A, name);
    assert_int_equal(n, SESSION_ID_LEN + 200);
    assert_true(bytecmp(k, (size_t)n, up, SESSION_ID_LEN) < 0);
    size_t rn = key_reqmap(k, SID_A, "\xff\xff\xff", 3, UINT64_MAX);
    assert_true(bytecmp(k, rn, up, SESSION_ID_LEN) < 0);
}

static void session_upper_bound_is_at_or_below_every_key_of_the_next_session(void **state)
{
    unsigned char up[SESSION_ID_LEN];
    key_session_upper(up, SID_A);
    unsigned char k[KEY_EVENT_LEN];
    /* the exclusive bound may equal the next sid's bare key, never exceed it */
    assert_true(bytecmp(up, SESSION_ID_LEN, (const unsigned char *)SID_B, SESSION_ID_LEN) <= 0);
    key_event(k, SID_B, 0, 0);
    assert_true(bytecmp(up, SESSION_ID_LEN, k, KEY_EVENT_LEN) < 0);
    key_stream(k, SID_B, 0);
    assert_true(bytecmp(up, SESSION_ID_LEN, k, KEY_STREAM_LEN) < 0);
    key_event(k, SID_C, 0, 0);
    assert_true(bytecmp(up, SESSION_ID_LEN, k, KEY_EVENT_LEN) < 0);
}

static void session_upper_bound_differs_only_in_the_last_byte(void **state)
{
    unsigned char up[SESSION_ID_LEN];
    key_session_upper(up, SID_C);
    assert_memory_equal(up, SID_C, SESSION_ID_LEN - 1);
    assert_int_equal(up[SESSION_ID_LEN - 1], (unsigned char)SID_C[SESSION_ID_LEN - 1] + 1);
}

/* ---- other encodings ---- */

static void a_state_key_is_the_sid_then_the_name(void **state)
{
    unsigned char k[KEY_STATE_MAX];
    long n = key_state(k, SID_A, "abc");
    assert_int_equal(n, SESSION_ID_LEN + 3);
    assert_memory_equal(k + SESSION_ID_LEN, "abc", 3);
}

static void a_state_key_name_must_be_1_to_200_bytes(void **state)
{
    unsigned char k[KEY_STATE_MAX + 16];
    char name[202];
    assert_int_equal(key_state(k, SID_A, ""), -1);
    memset(name, 'x', 201);
    name[201] = '\0';
    assert_int_equal(key_state(k, SID_A, name), -1);
    name[200] = '\0';
    assert_int_equal(key_state(k, SID_A, name), SESSION_ID_LEN + 200);
    assert_int_equal(key_state(k, SID_A, "x"), SESSION_ID_LEN + 1);
}

static void a_reqmap_key_is_sid_id_zero_byte_then_stream(void **state)
{
    unsigned char k[SESSION_ID_LEN + 32];
    const char *id = "\"req-1\"";
    size_t idlen = strlen(id);
    size_t n = key_reqmap(k, SID_A, id, idlen, 0x0a0b);
    assert_int_equal(n, SESSION_ID_LEN + idlen + 9);
    assert_memory_equal(k + SESSION_ID_LEN, id, idlen);
    assert_int_equal(k[SESSION_ID_LEN + idlen], 0);
    assert_true(key_get_u64(k + SESSION_ID_LEN + idlen + 1) == 0x0a0b);
}

/* ---- decoders ---- */

static void an_event_key_decodes_to_its_stream_and_seq(void **state)
{
    unsigned char k[KEY_EVENT_LEN];
    uint64_t st = 0, sq = 0;
    key_event(k, SID_A, 0x1234, 0xffffffffffffffffULL);
    assert_int_equal(key_event_decode(k, KEY_EVENT_LEN, &st, &sq), 0);
    assert_true(st == 0x1234);
    assert_true(sq == 0xffffffffffffffffULL);
}

static void decoders_reject_keys_of_the_wrong_length(void **state)
{
    unsigned char k[KEY_EVENT_LEN + 1] = {0};
    uint64_t st = 77, sq = 88;
    int64_t due = 99;
    char sid[SESSION_ID_LEN + 1];
    assert_int_equal(key_event_decode(k, KEY_EVENT_LEN - 1, &st, &sq), -1);
    assert_int_equal(key_event_decode(k, KEY_EVENT_LEN + 1, &st, &sq), -1);
    assert_int_equal(key_event_decode(k, KEY_STREAM_LEN, &st, &sq), -1);
    assert_int_equal(key_stream_decode(k, KEY_STREAM_LEN - 1, &st), -1);
    assert_int_equal(key_stream_decode(k, KEY_EVENT_LEN, &st), -1);
    assert_int_equal(key_alarm_decode(k, KEY_ALARM_LEN - 1, &due, sid), -1);
    assert_int_equal(key_alarm_decode(k, KEY_ALARM_LEN + 1, &due, sid), -1);
    assert_int_equal(key_event_decode(k, 0, &st, &sq), -1);
    /* outputs untouched on failure */
    assert_true(st == 77 && sq == 88 && due == 99);
}

static void a_stream_key_decodes_to_its_stream(void **state)
{
    unsigned char k[KEY_STREAM_LEN];
    uint64_t st = 0;
    key_stream(k, SID_B, 0xdeadbeefcafeULL);
    assert_int_equal(key_stream_decode(k, KEY_STREAM_LEN, &st), 0);
    assert_true(st == 0xdeadbeefcafeULL);
}

static void an_alarm_key_decodes_to_its_due_time_and_sid(void **state)
{
    unsigned char k[KEY_ALARM_LEN];
    int64_t due = 0;
    char sid[SESSION_ID_LEN + 1];
    key_alarm(k, 1700000000123LL, SID_C);
    assert_int_equal(key_alarm_decode(k, KEY_ALARM_LEN, &due, sid), 0);
    assert_true(due == 1700000000123LL);
    assert_string_equal(sid, SID_C);
}

static void a_negative_alarm_time_is_stored_as_zero(void **state)
{
    unsigned char k[KEY_ALARM_LEN];
    int64_t due = 5;
    char sid[SESSION_ID_LEN + 1];
    key_alarm(k, -42, SID_A);
    assert_int_equal(key_alarm_decode(k, KEY_ALARM_LEN, &due, sid), 0);
    assert_true(due == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(u64_is_stored_big_endian_and_read_back),
        cmocka_unit_test(event_keys_sort_by_seq_under_memcmp),
        cmocka_unit_test(event_keys_sort_by_stream_before_seq),
        cmocka_unit_test(stream_keys_sort_by_stream_number),
        cmocka_unit_test(every_session_key_starts_with_the_session_id),
        cmocka_unit_test(alarm_keys_sort_by_due_time_first),
        cmocka_unit_test(session_upper_bound_is_above_every_key_of_the_session),
        cmocka_unit_test(session_upper_bound_is_at_or_below_every_key_of_the_next_session),
        cmocka_unit_test(session_upper_bound_differs_only_in_the_last_byte),
        cmocka_unit_test(a_state_key_is_the_sid_then_the_name),
        cmocka_unit_test(a_state_key_name_must_be_1_to_200_bytes),
        cmocka_unit_test(a_reqmap_key_is_sid_id_zero_byte_then_stream),
        cmocka_unit_test(an_event_key_decodes_to_its_stream_and_seq),
        cmocka_unit_test(decoders_reject_keys_of_the_wrong_length),
        cmocka_unit_test(a_stream_key_decodes_to_its_stream),
        cmocka_unit_test(an_alarm_key_decodes_to_its_due_time_and_sid),
        cmocka_unit_test(a_negative_alarm_time_is_stored_as_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
