/* Unit tests: event ids, the stream tag, format and parse (src/wire/eventid.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "wire/eventid.h"

static const char SID_A[] = "0123456789abcdef0123456789abcdef";
static const char SID_B[] = "0123456789abcdef0123456789abcdf0";
static const char SID_C[] = "fedcba9876543210fedcba9876543210";

/* ---- tags and ids ---- */

static void the_session_tag_is_deterministic_and_depends_on_the_sid(void **state)
{
    assert_true(session_tag(SID_A) == session_tag(SID_A));
    assert_true(session_tag(SID_A) != session_tag(SID_B));
    assert_true(session_tag(SID_A) != session_tag(SID_C));
}

static void the_standalone_stream_id_is_tag_get(void **state)
{
    char out[32];
    size_t n = stream_id_format(out, 0x00abcdef, STREAM_GET);
    assert_string_equal(out, "00abcdef-get");
    assert_int_equal(n, strlen(out));
}

static void a_post_stream_id_is_tag_p_hex(void **state)
{
    char out[32];
    assert_int_equal(stream_id_format(out, 0xdeadbeef, 1), strlen("deadbeef-p1"));
    assert_string_equal(out, "deadbeef-p1");
    stream_id_format(out, 0xdeadbeef, 0x1f);
    assert_string_equal(out, "deadbeef-p1f");
    stream_id_format(out, 0, UINT64_MAX);
    assert_string_equal(out, "00000000-pffffffffffffffff");
    assert_null(strchr(out, ':'));
}

static void an_event_id_is_stream_id_colon_16_hex_seq(void **state)
{
    char out[EVENT_ID_MAX];
    size_t n = event_id_format(out, 0x12345678, 2, 1);
    assert_string_equal(out, "12345678-p2:0000000000000001");
    assert_int_equal(n, strlen(out));
    event_id_format(out, 0x12345678, STREAM_GET, 0xabc);
    assert_string_equal(out, "12345678-get:0000000000000abc");
}

static void round_trip(uint32_t tag, uint64_t stream, uint64_t seq)
{
    char out[EVENT_ID_MAX];
    size_t n = event_id_format(out, tag, stream, seq);
    assert_true(n < EVENT_ID_MAX);
    assert_int_equal(n, strlen(out));
    uint32_t t = ~tag;
    uint64_t st = ~stream, sq = ~seq;
    if (event_id_parse(out, &t, &st, &sq) != 0)
        fail_msg("'%s' did not parse", out);
    assert_true(t == tag);
    assert_true(st == stream);
    assert_true(sq == seq);
}

static void an_event_id_round_trips_through_parse(void **state)
{
    round_trip(0x12345678, 1, 1);
    round_trip(0, 2, 0x10);
    round_trip(0xffffffffu, 3, 0xffffffffffffffffULL);
}

static void a_standalone_stream_event_id_round_trips(void **state)
{
    round_trip(0xcafebabe, STREAM_GET, 1);
    round_trip(0x00000001, STREAM_GET, 0xffffffffffffffffULL);
}

static void a_large_stream_number_round_trips(void **state)
{
    round_trip(0xa1b2c3d4, 0x100000000ULL, 7);
    round_trip(0xa1b2c3d4, 0xffffffffffffffffULL, 0xffffffffffffffffULL);
    round_trip(session_tag(SID_A), 0x8000000000000000ULL, 0x8000000000000000ULL);
}

static void assert_rejected(const char *s)
{
    uint32_t t = 1;
    uint64_t st = 2, sq = 3;
    if (event_id_parse(s, &t, &st, &sq) != -1)
        fail_msg("'%s' parsed but is malformed", s);
    assert_true(t == 1 && st == 2 && sq == 3);
}

static void an_event_id_without_a_tag_is_rejected(void **state)
{
    assert_rejected("-p1:0000000000000001");
    assert_rejected("p1:0000000000000001");
    assert_rejected(":0000000000000001");
    assert_rejected("get:0000000000000001");
}

static void a_tag_of_7_or_9_hex_digits_is_rejected(void **state)
{
    assert_rejected("1234567-p1:0000000000000001");
    assert_rejected("123456789-p1:0000000000000001");
    assert_rejected("1234567-get:0000000000000001");
    assert_rejected("123456789-get:0000000000000001");
    assert_rejected("1234567");
}

static void uppercase_hex_is_rejected(void **state)
{
    assert_rejected("ABCDEF01-p1:0000000000000001");
    assert_rejected("abcdef01-pA:0000000000000001");
    assert_rejected("abcdef01-p1:000000000000000A");
    assert_rejected("abcdef01-GET:0000000000000001");
    assert_rejected("abcdef01-P1:0000000000000001");
}

static void an_event_id_without_a_colon_is_rejected(void **state)
{
    assert_rejected("abcdef01-p1");
    assert_rejected("abcdef01-p10000000000000001");
    assert_rejected("abcdef01-get");
    assert_rejected("abcdef01-get0000000000000001");
}

static void a_seq_of_15_or_17_digits_is_rejected(void **state)
{
    assert_rejected("abcdef01-p1:000000000000001");
    assert_rejected("abcdef01-p1:00000000000000001");
    assert_rejected("abcdef01-get:000000000000001");
    assert_rejected("abcdef01-get:00000000000000001");
    assert_rejected("abcdef01-p1:");
}

static void a_seq_of_zero_is_rejected(void **state)
{
    assert_rejected("abcdef01-p1:0000000000000000");
    assert_rejected("abcdef01-get:0000000000000000");
}

static void stream_p0_p_alone_and_leading_zeros_are_rejected(void **state)
{
    assert_rejected("abcdef01-p0:0000000000000001");
    assert_rejected("abcdef01-p:0000000000000001");
    assert_rejected("abcdef01-p01:0000000000000001");
    assert_rejected("abcdef01-:0000000000000001");
    assert_rejected("abcdef01-q1:0000000000000001");
    assert_rejected("abcdef01-ge:0000000000000001");
    assert_rejected("abcdef01-gets:0000000000000001");
}

static void a_stream_number_of_more_than_16_hex_digits_is_rejected(void **state)
{
    assert_rejected("abcdef01-p10000000000000000:0000000000000001");
    assert_rejected("abcdef01-p1g:0000000000000001");
}

static void extra_characters_are_rejected(void **state)
{
    assert_rejected("abcdef01-p1:0000000000000001x");
    assert_rejected("abcdef01-p1:0000000000000001 ");
    assert_rejected(" abcdef01-p1:0000000000000001");
    assert_rejected("abcdef01-p1:0000000000000001:0000000000000001");
    assert_rejected("abcdef01-p1:000000000000000g");
    assert_rejected("abcdef01_p1:0000000000000001");
    assert_rejected("abcdef01-p 1:0000000000000001");
}

static void an_empty_event_id_is_rejected(void **state)
{
    assert_rejected("");
}

static void a_very_long_event_id_is_rejected(void **state)
{
    char s[4096];
    memset(s, 'a', sizeof s - 1);
    s[sizeof s - 1] = '\0';
    assert_rejected(s);
    /* a well-formed prefix followed by a long tail */
    snprintf(s, sizeof s, "abcdef01-p1:0000000000000001");
    memset(s + strlen(s), '0', 100);
    s[28 + 100] = '\0';
    assert_rejected(s);
    /* a long stream part */
    snprintf(s, sizeof s, "abcdef01-p");
    memset(s + 10, '1', 60);
    snprintf(s + 70, sizeof s - 70, ":0000000000000001");
    assert_rejected(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_session_tag_is_deterministic_and_depends_on_the_sid),
        cmocka_unit_test(the_standalone_stream_id_is_tag_get),
        cmocka_unit_test(a_post_stream_id_is_tag_p_hex),
        cmocka_unit_test(an_event_id_is_stream_id_colon_16_hex_seq),
        cmocka_unit_test(an_event_id_round_trips_through_parse),
        cmocka_unit_test(a_standalone_stream_event_id_round_trips),
        cmocka_unit_test(a_large_stream_number_round_trips),
        cmocka_unit_test(an_event_id_without_a_tag_is_rejected),
        cmocka_unit_test(a_tag_of_7_or_9_hex_digits_is_rejected),
        cmocka_unit_test(uppercase_hex_is_rejected),
        cmocka_unit_test(an_event_id_without_a_colon_is_rejected),
        cmocka_unit_test(a_seq_of_15_or_17_digits_is_rejected),
        cmocka_unit_test(a_seq_of_zero_is_rejected),
        cmocka_unit_test(stream_p0_p_alone_and_leading_zeros_are_rejected),
        cmocka_unit_test(a_stream_number_of_more_than_16_hex_digits_is_rejected),
        cmocka_unit_test(extra_characters_are_rejected),
        cmocka_unit_test(an_empty_event_id_is_rejected),
        cmocka_unit_test(a_very_long_event_id_is_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
