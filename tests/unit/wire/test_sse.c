/* Unit tests: server-sent events framing (src/wire/sse.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/sse.h"

/* Frames one event and compares the whole buffer with want. */
static void assert_frame(const char *id, const char *data, size_t len, const char *want)
{
    buf_t b = {0};
    sse_frame_event(&b, id, data, len);
    assert_non_null(b.p);
    assert_int_equal(b.len, strlen(want));
    assert_string_equal(b.p, want);
    buf_free(&b);
}

static void an_event_with_an_id_has_an_id_line_then_data(void **state)
{
    const char *d = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
    assert_frame("abcd0123-p1:0000000000000001", d, strlen(d),
                 "id: abcd0123-p1:0000000000000001\n"
                 "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n");
}

static void line_breaks_in_an_id_are_dropped_so_it_stays_one_field(void **state)
{
    assert_frame("a\r\nevent: x\nb", "{}", 2, "id: aevent: xb\ndata: {}\n\n");
}

static void an_event_without_an_id_has_only_data(void **state)
{
    assert_frame(NULL, "{}", 2, "data: {}\n\n");
}

static void a_priming_event_has_an_id_and_one_empty_data_line(void **state)
{
    assert_frame("X", "", 0, "id: X\ndata: \n\n");
}

static void an_empty_event_without_an_id_is_one_empty_data_line(void **state)
{
    assert_frame(NULL, "", 0, "data: \n\n");
}

static void only_len_bytes_of_data_are_framed(void **state)
{
    assert_frame(NULL, "abcdef", 3, "data: abc\n\n");
}

static void line_feeds_split_data_into_several_lines(void **state)
{
    const char *d = "a\nb\nc";
    assert_frame("7", d, strlen(d), "id: 7\ndata: a\ndata: b\ndata: c\n\n");
}

static void crlf_is_one_line_break(void **state)
{
    const char *d = "a\r\nb";
    assert_frame(NULL, d, strlen(d), "data: a\ndata: b\n\n");
}

static void a_lone_carriage_return_is_a_line_break(void **state)
{
    const char *d = "a\rb";
    assert_frame(NULL, d, strlen(d), "data: a\ndata: b\n\n");
}

static void consecutive_breaks_give_empty_data_lines(void **state)
{
    const char *d = "a\n\nb";
    assert_frame(NULL, d, strlen(d), "data: a\ndata: \ndata: b\n\n");
    const char *e = "a\r\rb";
    assert_frame(NULL, e, strlen(e), "data: a\ndata: \ndata: b\n\n");
    const char *f = "a\n\rb"; /* LF then CR: two breaks, not one */
    assert_frame(NULL, f, strlen(f), "data: a\ndata: \ndata: b\n\n");
}

static void a_trailing_break_ends_with_an_empty_data_line(void **state)
{
    const char *d = "a\n";
    assert_frame(NULL, d, strlen(d), "data: a\ndata: \n\n");
    const char *e = "a\r\n";
    assert_frame(NULL, e, strlen(e), "data: a\ndata: \n\n");
    const char *f = "a\r";
    assert_frame(NULL, f, strlen(f), "data: a\ndata: \n\n");
}

static void a_crlf_split_by_the_length_is_a_lone_cr(void **state)
{
    /* the byte after len is not part of the data */
    assert_frame(NULL, "a\r\nb", 2, "data: a\ndata: \n\n");
}

static void events_append_to_what_is_already_in_the_buffer(void **state)
{
    buf_t b = {0};
    sse_frame_retry(&b, 1000);
    sse_frame_event(&b, "id1", "", 0);
    sse_frame_event(&b, NULL, "x", 1);
    buf_adds(&b, SSE_KEEPALIVE);
    assert_string_equal(b.p, "retry: 1000\nid: id1\ndata: \n\ndata: x\n\n: keepalive\n\n");
    buf_free(&b);
}

static void a_retry_field_is_one_line(void **state)
{
    buf_t b = {0};
    sse_frame_retry(&b, 2500);
    assert_string_equal(b.p, "retry: 2500\n");
    buf_free(&b);
    sse_frame_retry(&b, 0);
    assert_string_equal(b.p, "retry: 0\n");
    buf_free(&b);
    sse_frame_retry(&b, 9223372036854775807LL);
    assert_string_equal(b.p, "retry: 9223372036854775807\n");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_event_with_an_id_has_an_id_line_then_data),
        cmocka_unit_test(an_event_without_an_id_has_only_data),
        cmocka_unit_test(line_breaks_in_an_id_are_dropped_so_it_stays_one_field),
        cmocka_unit_test(a_priming_event_has_an_id_and_one_empty_data_line),
        cmocka_unit_test(an_empty_event_without_an_id_is_one_empty_data_line),
        cmocka_unit_test(only_len_bytes_of_data_are_framed),
        cmocka_unit_test(line_feeds_split_data_into_several_lines),
        cmocka_unit_test(crlf_is_one_line_break),
        cmocka_unit_test(a_lone_carriage_return_is_a_line_break),
        cmocka_unit_test(consecutive_breaks_give_empty_data_lines),
        cmocka_unit_test(a_trailing_break_ends_with_an_empty_data_line),
        cmocka_unit_test(a_crlf_split_by_the_length_is_a_lone_cr),
        cmocka_unit_test(events_append_to_what_is_already_in_the_buffer),
        cmocka_unit_test(a_retry_field_is_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
