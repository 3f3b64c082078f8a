/* Unit tests: stream record value encoding (src/store/records.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/records.h"

#define HDR 26

static void a_record_without_request_ids_round_trips(void **state)
{
    streamrec_t in = {.finished = false, .is_get = false, .seq = 42, .last_write_ms = 1700000000123LL,
                      .req_ids = NULL};
    size_t len = 0;
    char *v = streamrec_encode(&in, &len);
    assert_int_equal(len, HDR);
    assert_int_equal(v[0], 'T');
    streamrec_t out;
    memset(&out, 0x5a, sizeof out);
    assert_int_equal(streamrec_decode(v, len, &out), 0);
    assert_false(out.finished);
    assert_false(out.is_get);
    assert_true(out.seq == 42);
    assert_true(out.last_write_ms == 1700000000123LL);
    assert_null(out.req_ids);
    free(v);
}

static void an_empty_request_id_array_is_encoded_as_no_ids(void **state)
{
    json_t *ids = json_array();
    streamrec_t in = {.seq = 1, .req_ids = ids};
    size_t len = 0;
    char *v = streamrec_encode(&in, &len);
    assert_int_equal(len, HDR);
    streamrec_t out;
    assert_int_equal(streamrec_decode(v, len, &out), 0);
    assert_null(out.req_ids);
    free(v);
    json_decref(ids);
}

static void a_record_with_request_ids_round_trips(void **state)
{
    json_t *ids = json_pack("[i,s,i]", 1, "two", -3);
    streamrec_t in = {.finished = true, .is_get = false, .seq = UINT64_MAX,
                      .last_write_ms = INT64_MAX, .req_ids = ids};
    size_t len = 0;
    char *v = streamrec_encode(&in, &len);
    assert_true(len > HDR);
    streamrec_t out;
    assert_int_equal(streamrec_decode(v, len, &out), 0);
    assert_true(out.finished);
    assert_false(out.is_get);
    assert_true(out.seq == UINT64_MAX);
    assert_true(out.last_write_ms == INT64_MAX);
    assert_non_null(out.req_ids);
    assert_true(json_equal(out.req_ids, ids));
    /* a new reference: independent of the encoder's array */
    assert_true(out.req_ids != ids);
    json_decref(out.req_ids);
    json_decref(ids);
    free(v);
}

static void each_flag_is_encoded_independently(void **state)
{
    for (int f = 0; f < 4; f++) {
        streamrec_t in = {.finished = (f & 1) != 0, .is_get = (f & 2) != 0, .seq = (uint64_t)f};
        size_t len;
        char *v = streamrec_encode(&in, &len);
        assert_int_equal((unsigned char)v[1], f);
        streamrec_t out;
        assert_int_equal(streamrec_decode(v, len, &out), 0);
        assert_int_equal(out.finished, in.finished);
        assert_int_equal(out.is_get, in.is_get);
        assert_true(out.seq == (uint64_t)f);
        free(v);
    }
}

static void integers_are_stored_big_endian_after_magic_and_flags(void **state)
{
    streamrec_t in = {.seq = 0x0102030405060708ULL, .last_write_ms = 0x1112131415161718LL,
                      .bytes = 0x2122232425262728ULL};
    size_t len;
    unsigned char *v = (unsigned char *)streamrec_encode(&in, &len);
    const unsigned char want[HDR] = {'T', 0, 1, 2, 3, 4, 5, 6, 7, 8,
                                     0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
                                     0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28};
    assert_memory_equal(v, want, HDR);
    streamrec_t out;
    assert_int_equal(streamrec_decode((char *)v, len, &out), 0);
    assert_true(out.bytes == in.bytes);
    free(v);
}

static void an_older_record_without_a_bytes_field_decodes_with_zero_bytes(void **state)
{
    const unsigned char old[] = {'S', 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 7,
                                 '[', '1', ']'};
    streamrec_t out;
    assert_int_equal(streamrec_decode((const char *)old, sizeof old, &out), 0);
    assert_true(out.finished);
    assert_true(out.seq == 9);
    assert_true(out.last_write_ms == 7);
    assert_true(out.bytes == 0);
    assert_int_equal(json_array_size(out.req_ids), 1);
    json_decref(out.req_ids);
}

static void a_negative_last_write_time_round_trips(void **state)
{
    streamrec_t in = {.seq = 3, .last_write_ms = -5};
    size_t len;
    char *v = streamrec_encode(&in, &len);
    streamrec_t out;
    assert_int_equal(streamrec_decode(v, len, &out), 0);
    assert_true(out.last_write_ms == -5);
    free(v);
}

static void a_value_shorter_than_the_header_is_malformed(void **state)
{
    streamrec_t in = {.seq = 5};
    size_t len;
    char *v = streamrec_encode(&in, &len);
    streamrec_t out;
    for (size_t n = 0; n < HDR; n++)
        assert_int_equal(streamrec_decode(v, n, &out), -1);
    free(v);
}

static void a_value_with_the_wrong_magic_is_malformed(void **state)
{
    streamrec_t in = {.seq = 5};
    size_t len;
    char *v = streamrec_encode(&in, &len);
    v[0] = 's';
    streamrec_t out;
    assert_int_equal(streamrec_decode(v, len, &out), -1);
    v[0] = '\0';
    assert_int_equal(streamrec_decode(v, len, &out), -1);
    free(v);
}

static void assert_tail_rejected(const char *tail)
{
    char v[HDR + 64];
    streamrec_t in = {.seq = 9};
    size_t len;
    char *enc = streamrec_encode(&in, &len);
    memcpy(v, enc, HDR);
    free(enc);
    size_t tl = strlen(tail);
    memcpy(v + HDR, tail, tl);
    streamrec_t out;
    if (streamrec_decode(v, HDR + tl, &out) != -1)
        fail_msg("tail '%s' was accepted", tail);
    assert_null(out.req_ids);
}

static void a_tail_that_is_not_a_json_array_is_malformed(void **state)
{
    assert_tail_rejected("[1,2");
    assert_tail_rejected("{\"a\":1}");
    assert_tail_rejected("\"x\"");
    assert_tail_rejected("17");
    assert_tail_rejected("garbage");
    assert_tail_rejected("[1] x");
}

/* Found by tests/fuzz/fuzz_records (input: tests/fuzz/corpus/records/regression_nul_in_request_id).
 * A request id may hold U+0000 (request bodies are parsed with JSON_ALLOW_NUL), so the stored
 * ids hold "\u0000"; the record must decode, or the stream cannot be resumed once it is out of
 * memory (404, "malformed record"). */
static void a_request_id_with_a_nul_character_round_trips(void **state)
{
    json_error_t e;
    const char text[] = "[\"a\\u0000b\",7]";
    json_t *ids = json_loadb(text, strlen(text), JSON_ALLOW_NUL, &e);
    assert_non_null(ids);
    assert_int_equal(json_string_length(json_array_get(ids, 0)), 3);
    streamrec_t in = {.seq = 1, .last_write_ms = 1, .bytes = 1, .req_ids = ids};
    size_t len;
    char *v = streamrec_encode(&in, &len);
    streamrec_t out;
    assert_int_equal(streamrec_decode(v, len, &out), 0);
    assert_non_null(out.req_ids);
    assert_true(json_equal(out.req_ids, ids));
    json_decref(out.req_ids);
    free(v);
    json_decref(ids);

    /* the fuzzer's input, a stored value as it is */
    const char stored[] = "T\0\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0\1[\"a\\u0000b\"]";
    assert_int_equal(streamrec_decode(stored, sizeof stored - 1, &out), 0);
    assert_int_equal(json_string_length(json_array_get(out.req_ids, 0)), 3);
    assert_memory_equal(json_string_value(json_array_get(out.req_ids, 0)), "a\0b", 3);
    json_decref(out.req_ids);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_record_without_request_ids_round_trips),
        cmocka_unit_test(an_empty_request_id_array_is_encoded_as_no_ids),
        cmocka_unit_test(a_record_with_request_ids_round_trips),
        cmocka_unit_test(each_flag_is_encoded_independently),
        cmocka_unit_test(integers_are_stored_big_endian_after_magic_and_flags),
        cmocka_unit_test(an_older_record_without_a_bytes_field_decodes_with_zero_bytes),
        cmocka_unit_test(a_negative_last_write_time_round_trips),
        cmocka_unit_test(a_value_shorter_than_the_header_is_malformed),
        cmocka_unit_test(a_value_with_the_wrong_magic_is_malformed),
        cmocka_unit_test(a_tail_that_is_not_a_json_array_is_malformed),
        cmocka_unit_test(a_request_id_with_a_nul_character_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
