/* Unit tests: a connection's bytes scanned as evhttp frames them (src/wire/httpscan.c). Every
 * case is fed whole and then one byte at a time, which must give the same answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "wire/httpscan.h"

#define HEAD "Host: h\r\nContent-Type: application/json\r\n"
#define POST(extra) "POST /mcp HTTP/1.1\r\n" HEAD extra "\r\n"

typedef struct result {
    httpscan_status_t status;
    uint64_t request, line_at, pos;
} result_t;

static result_t scan(const char *data, size_t n, size_t step)
{
    httpscan_t s;
    httpscan_init(&s);
    for (size_t off = 0; off < n; off += step)
        httpscan_feed(&s, data + off, n - off < step ? n - off : step);
    return (result_t){s.status, s.request, s.line_at, s.pos};
}

/* The scan of the n bytes at data, the same whole and byte by byte. */
static result_t scan_both(const char *data, size_t n)
{
    result_t whole = scan(data, n, n ? n : 1), bytes = scan(data, n, 1);
    assert_int_equal(whole.status, bytes.status);
    assert_int_equal(whole.request, bytes.request);
    if (whole.status == HTTPSCAN_NUL || whole.status == HTTPSCAN_BAD_CHUNK) {
        assert_int_equal(whole.line_at, bytes.line_at);
        assert_int_equal(whole.pos, bytes.pos);
    }
    return whole;
}

#define SCAN(lit) scan_both(lit, sizeof(lit) - 1)

/* ---- requests that go on ---- */

static void pipelined_requests_with_bodies_are_counted_and_stay_running(void **state)
{
    /* the bodies hold what would be faults in a head: a NUL, a chunk extension */
    static const char s[] = POST("Content-Length: 5\r\n") "a\0;x\n" POST(
        "content-length:   3  \t\r\n") "\0\0\0"
                                       "GET /mcp HTTP/1.1\r\n" HEAD "\r\n"
                                       "GET /mcp HTTP/1.1\r\n";
    result_t r = SCAN(s);
    assert_int_equal(r.status, HTTPSCAN_RUNNING);
    assert_int_equal(r.request, 4);
}

static void a_chunked_body_is_followed_to_its_end(void **state)
{
    static const char s[] = POST(
        "Transfer-Encoding: Chunked \r\n") "5\r\nab\0;x\r\n"
                                           "A\r\n0123456789\r\n"
                                           "0\r\nX-Trailer: 1\r\n\r\n" POST(
                                               "transfer-encoding: chunked\r\n") "00\n\n"
                                                                                 "DELETE /mcp HTTP/1.1\r\n";
    result_t r = SCAN(s);
    assert_int_equal(r.status, HTTPSCAN_RUNNING);
    assert_int_equal(r.request, 3);
}

static void a_head_request_with_a_body_ends_the_scan(void **state)
{
    /* evhttp reads no body for HEAD, a proxy framing by the head sends one: what follows is
     * not framed alike, so the scan (and the connection) ends with it */
    static const char s[] = "HEAD /mcp HTTP/1.1\r\nContent-Length: 9\r\n\r\n"
                            "GET /mcp HTTP/1.1\r\nX: \0\r\n\r\n";
    result_t r = SCAN(s);
    assert_int_equal(r.status, HTTPSCAN_STOPPED);
    assert_int_equal(r.request, 1);
    static const char te[] = "HEAD /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_int_equal(SCAN(te).status, HTTPSCAN_STOPPED);
    /* without a body: the next request follows, and its NUL is found */
    static const char none[] = "HEAD /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
                               "GET /mcp HTTP/1.1\r\nX: \0\r\n\r\n";
    r = SCAN(none);
    assert_int_equal(r.status, HTTPSCAN_NUL);
    assert_int_equal(r.request, 2);
}

static void other_headers_that_resemble_the_framing_ones_are_not_them(void **state)
{
    static const char s[] = POST(
        "Content-Lengthy: 5\r\nTransfer-Encoding : chunked\r\n"
        "Content-Length-X: 1\r\nX-Content-Length: 2\r\n") "GET / HTTP/1.1\r\n";
    result_t r = SCAN(s);
    assert_int_equal(r.status, HTTPSCAN_RUNNING);
    assert_int_equal(r.request, 2);
}

/* ---- NUL ---- */

static void a_nul_in_a_head_is_found_on_its_line(void **state)
{
    static const char value[] = POST("X-Note: a\0b\r\nContent-Length: 1\r\n") "x";
    result_t r = SCAN(value);
    assert_int_equal(r.status, HTTPSCAN_NUL);
    assert_int_equal(r.request, 1);
    assert_int_equal(r.line_at, strstr(value, "X-Note") - value);
    assert_int_equal(r.pos, strstr(value, "X-Note") - value + 9);

    static const char line_start[] = POST("\0X: 1\r\n");
    assert_int_equal(SCAN(line_start).status, HTTPSCAN_NUL);
    static const char in_length[] = POST("Content-Length: 1\0\r\n") "x";
    assert_int_equal(SCAN(in_length).status, HTTPSCAN_NUL);
    static const char in_name[] = POST("Content-Le\0ngth: 1\r\n") "x";
    assert_int_equal(SCAN(in_name).status, HTTPSCAN_NUL);
    static const char in_request_line[] = "POST /m\0cp HTTP/1.1\r\n\r\n";
    assert_int_equal(SCAN(in_request_line).status, HTTPSCAN_NUL);
    static const char in_method[] = "PO\0ST /mcp HTTP/1.1\r\n\r\n";
    assert_int_equal(SCAN(in_method).status, HTTPSCAN_NUL);
}

static void a_nul_in_a_later_request_names_that_request(void **state)
{
    static const char s[] = POST("Content-Length: 2\r\n") "{}" POST(
        "Content-Length: 2\r\n") "{}"
                                 "GET /mcp HTTP/1.1\r\nAccept: \0\r\n\r\n";
    result_t r = SCAN(s);
    assert_int_equal(r.status, HTTPSCAN_NUL);
    assert_int_equal(r.request, 3);
}

/* ---- chunks ---- */

static void a_bad_chunk_size_line_is_found_where_it_begins(void **state)
{
    static const char *const bad[] = {"5;ext=1", "5 ", "5\t", "+5",   "0x5", "-5",
                                      "z",       "",   " 5",  "5\r5", "5\0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char s[200];
        size_t at = (size_t)snprintf(s, sizeof s, POST("Transfer-Encoding: chunked\r\n"));
        size_t len = strlen(bad[i]) + (strcmp(bad[i], "5\0") == 0 ? 1 : 0);
        memcpy(s + at, bad[i], len);
        memcpy(s + at + len, "\r\nhello\r\n0\r\n\r\n", 15);
        result_t r = scan_both(s, at + len + 15);
        assert_int_equal(r.status, HTTPSCAN_BAD_CHUNK);
        assert_int_equal(r.request, 1);
        assert_int_equal(r.line_at, at);
    }
}

static void an_extension_on_the_last_chunk_is_bad_too(void **state)
{
    static const char s[] = POST("Transfer-Encoding: chunked\r\n") "2\r\nhi\r\n0;x=y\r\n\r\n";
    result_t r = SCAN(s);
    assert_int_equal(r.status, HTTPSCAN_BAD_CHUNK);
    assert_int_equal(r.line_at, strstr(s, "0;x") - s);
}

static void data_not_followed_by_crlf_is_bad_where_the_crlf_belongs(void **state)
{
    static const char s[] = POST("Transfer-Encoding: chunked\r\n") "2\r\nhiX\r\n0\r\n\r\n";
    result_t r = SCAN(s);
    assert_int_equal(r.status, HTTPSCAN_BAD_CHUNK);
    assert_int_equal(r.line_at, strstr(s, "X\r\n0") - s);
    static const char cr[] = POST("Transfer-Encoding: chunked\r\n") "2\r\nhi\rX0\r\n\r\n";
    r = SCAN(cr);
    assert_int_equal(r.status, HTTPSCAN_BAD_CHUNK);
    assert_int_equal(r.line_at, strstr(cr, "\rX0") - cr);
    static const char extra_line[] = POST(
        "Transfer-Encoding: chunked\r\n") "2\r\nhi\r\n\r\n0\r\n\r\n";
    assert_int_equal(SCAN(extra_line).status, HTTPSCAN_BAD_CHUNK);
}

static void a_nul_in_the_trailers_is_a_bad_chunked_body(void **state)
{
    static const char s[] = POST("Transfer-Encoding: chunked\r\n") "0\r\nX: 1\r\nY: \0\r\n\r\n";
    httpscan_t sc;
    httpscan_init(&sc);
    assert_int_equal(httpscan_feed(&sc, s, sizeof s - 1), HTTPSCAN_BAD_CHUNK);
    assert_int_equal(sc.line_at, strstr(s, "Y: ") - s);
    assert_string_equal(httpscan_body_end(&sc), "\r\n");
    static const char size[] = POST("Transfer-Encoding: chunked\r\n") "1;\r\n";
    httpscan_init(&sc);
    assert_int_equal(httpscan_feed(&sc, size, sizeof size - 1), HTTPSCAN_BAD_CHUNK);
    assert_string_equal(httpscan_body_end(&sc), "0\r\n\r\n");
}

/* ---- limits ---- */

/* A scan with limits, fed whole and byte by byte (the same answer); *end: httpscan_body_end's,
 * scan_frame_at: the scan's frame_at. */
static uint64_t scan_frame_at;

static result_t scan_limited(const char *data, size_t n, uint64_t head, uint64_t body,
                             const char **end)
{
    result_t out[2];
    for (int k = 0; k < 2; k++) {
        httpscan_t s;
        httpscan_init(&s);
        s.max_head = head;
        s.max_body = body;
        size_t step = k == 0 ? n : 1;
        for (size_t off = 0; off < n; off += step)
            httpscan_feed(&s, data + off, n - off < step ? n - off : step);
        out[k] = (result_t){s.status, s.request, s.line_at, s.pos};
        if (k == 0) {
            *end = httpscan_body_end(&s);
            scan_frame_at = s.frame_at;
        } else {
            assert_string_equal(*end, httpscan_body_end(&s));
            assert_int_equal(scan_frame_at, s.frame_at);
        }
    }
    assert_int_equal(out[0].status, out[1].status);
    assert_int_equal(out[0].request, out[1].request);
    assert_int_equal(out[0].line_at, out[1].line_at);
    assert_int_equal(out[0].pos, out[1].pos);
    return out[0];
}

static void a_content_length_over_max_body_is_found_at_the_heads_end(void **state)
{
    static const char s[] = POST("Content-Length: 11\r\n") "0123456789X" POST(
        "Content-Length: 1\r\n") "x";
    const char *end;
    result_t r = scan_limited(s, sizeof s - 1, 0, 10, &end);
    assert_int_equal(r.status, HTTPSCAN_BODY_TOO_BIG);
    assert_int_equal(r.request, 1);
    assert_int_equal(r.line_at, strstr(s, "\r\n\r\n0123") - s + 2); /* the empty line */
    assert_int_equal(r.pos, r.line_at + 1);                         /* its LF */
    assert_string_equal(end, "\r\n");
    assert_int_equal(scan_frame_at, strstr(s, "Content-Length") - s); /* where the cut goes */
    r = scan_limited(s, sizeof s - 1, 0, 11, &end);                   /* at the limit: served */
    assert_int_equal(r.status, HTTPSCAN_RUNNING);
    assert_int_equal(r.request, 2);
    static const char head[] = "HEAD /mcp HTTP/1.1\r\nContent-Length: 99\r\n\r\n";
    assert_int_equal(scan_limited(head, sizeof head - 1, 0, 10, &end).status, HTTPSCAN_STOPPED);
}

static void chunk_sizes_over_max_body_are_found_at_the_size_line(void **state)
{
    static const char s[] = POST(
        "Transfer-Encoding: chunked\r\n") "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    const char *end;
    result_t r = scan_limited(s, sizeof s - 1, 0, 10, &end);
    assert_int_equal(r.status, HTTPSCAN_BODY_TOO_BIG);
    assert_int_equal(r.line_at, strstr(s, "6\r\n") - s);
    assert_string_equal(end, "0\r\n\r\n");
    assert_int_equal(scan_limited(s, sizeof s - 1, 0, 11, &end).status, HTTPSCAN_RUNNING);
    static const char huge[] = POST("Transfer-Encoding: chunked\r\n") "1000000000000000\r\n";
    assert_int_equal(scan_limited(huge, sizeof huge - 1, 0, 10, &end).status,
                     HTTPSCAN_BODY_TOO_BIG);
}

static void a_head_over_max_head_is_found_at_its_first_byte_past_the_limit(void **state)
{
    static const char s[] = POST("X-Pad: 0123456789\r\nContent-Length: 1\r\n") "x";
    size_t pad = (size_t)(strstr(s, "X-Pad") - s);
    const char *end;
    result_t r = scan_limited(s, sizeof s - 1, pad + 5, 0, &end);
    assert_int_equal(r.status, HTTPSCAN_HEAD_TOO_BIG);
    assert_int_equal(r.line_at, pad);
    assert_int_equal(r.pos, pad + 5);
    assert_string_equal(end, "\r\n");
    assert_int_equal(scan_frame_at, 0); /* no framing line before it */
    /* a Content-Length line crossing it, read by the fast path when whole */
    size_t cl = (size_t)(strstr(s, "Content-Length") - s);
    r = scan_limited(s, sizeof s - 1, cl + 3, 0, &end);
    assert_int_equal(r.status, HTTPSCAN_HEAD_TOO_BIG);
    assert_int_equal(r.line_at, cl);
    assert_int_equal(r.pos, cl + 3);
    /* a line past it after the Content-Length line: the cut goes where that one begins */
    static const char after[] = POST("Content-Length: 1\r\nX-Pad: 0123456789\r\n") "x";
    size_t pad2 = (size_t)(strstr(after, "X-Pad") - after);
    r = scan_limited(after, sizeof after - 1, pad2 + 5, 0, &end);
    assert_int_equal(r.status, HTTPSCAN_HEAD_TOO_BIG);
    assert_int_equal(r.line_at, pad2);
    assert_int_equal(scan_frame_at, strstr(after, "Content-Length") - after);
    /* the request line itself: a stand-in request */
    r = scan_limited(s, sizeof s - 1, 8, 0, &end);
    assert_int_equal(r.status, HTTPSCAN_HEAD_TOO_BIG);
    assert_int_equal(r.line_at, 0);
    assert_string_equal(end, "GET / HTTP/1.1\r\n\r\n");
    /* the whole head, its empty line included, fits: the body does not count */
    size_t whole = (size_t)(strstr(s, "\r\n\r\nx") - s) + 4;
    r = scan_limited(s, sizeof s - 1, whole, 0, &end);
    assert_int_equal(r.status, HTTPSCAN_RUNNING);
    r = scan_limited(s, sizeof s - 1, whole - 1, 0, &end); /* one byte short: its LF is past */
    assert_int_equal(r.status, HTTPSCAN_HEAD_TOO_BIG);
    assert_int_equal(r.line_at, whole - 2);
    assert_int_equal(r.pos, whole - 1);
}

static void a_nul_past_max_head_is_not_the_heads_first_fault(void **state)
{
    /* (the fuzzer's: whole, the line's NUL was found first; a byte at a time, the limit) */
    static const char s[] = POST("X-Pad: 0123456789\0abc\r\nContent-Length: 1\r\n") "x";
    size_t pad = (size_t)(strstr(s, "X-Pad") - s);
    const char *end;
    result_t r = scan_limited(s, sizeof s - 1, pad + 5, 0, &end);
    assert_int_equal(r.status, HTTPSCAN_HEAD_TOO_BIG);
    assert_int_equal(r.line_at, pad);
    assert_int_equal(r.pos, pad + 5);
    r = scan_limited(s, sizeof s - 1, pad + 40, 0, &end); /* the NUL within it: the NUL */
    assert_int_equal(r.status, HTTPSCAN_NUL);
}

/* ---- where the scan stops ---- */

static void ambiguous_framing_stops_the_scan(void **state)
{
    static const char *const heads[] = {
        "Content-Length: 1\r\nContent-Length: 1\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 1\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: gzip\r\n",
        "Transfer-Encoding: chunked, gzip\r\n",
        "Transfer-Encoding:\tchunked\r\n",
        "Content-Length: +1\r\n",
        "Content-Length: 1 1\r\n",
        "Content-Length:\r\n",
        "Content-Length: 99999999999999999999999\r\n",
        "Content-Length: 1\r\n more\r\n",
        "Content-Length: 1\rx\r\n",
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        char s[300];
        int n = snprintf(s, sizeof s, "POST /mcp HTTP/1.1\r\n%s\r\nGET / HTTP/1.1\r\nX: \1\r\n\r\n",
                         heads[i]);
        s[strstr(s, "\1") - s] = '\0'; /* a NUL the scan must not reach */
        result_t r = scan_both(s, (size_t)n);
        assert_int_equal(r.status, HTTPSCAN_STOPPED);
        assert_int_equal(r.request, 1);
    }
}

static void methods_after_which_the_connection_ends_stop_the_scan(void **state)
{
    static const char connect[] = "CONNECT h:1 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nX: \0\r\n\r\n";
    assert_int_equal(SCAN(connect).status, HTTPSCAN_STOPPED);
    static const char trace[] = "TRACE / HTTP/1.1\r\n\r\n";
    assert_int_equal(SCAN(trace).status, HTTPSCAN_STOPPED);
    static const char lower[] = "get / HTTP/1.1\r\n\r\n";
    assert_int_equal(SCAN(lower).status, HTTPSCAN_STOPPED);
    static const char empty_line[] = "\r\nGET / HTTP/1.1\r\n\r\n";
    assert_int_equal(SCAN(empty_line).status, HTTPSCAN_STOPPED);
    /* a size line past HTTPSCAN_CSIZE_MAX digits, leading zeros too, is bad (evhttp would
     * buffer it whole, however long, rescanning it at each read) */
    static const char long_size[] = POST("Transfer-Encoding: chunked\r\n") "00000000000000005\r\n";
    result_t r = SCAN(long_size);
    assert_int_equal(r.status, HTTPSCAN_BAD_CHUNK);
    assert_int_equal(r.line_at, strstr(long_size, "00000") - long_size);
}

static void nothing_changes_after_the_scan_ends(void **state)
{
    static const char s[] = POST("X: \0\r\n");
    httpscan_t sc;
    httpscan_init(&sc);
    assert_int_equal(httpscan_feed(&sc, s, sizeof s - 1), HTTPSCAN_NUL);
    httpscan_t before = sc;
    assert_int_equal(httpscan_feed(&sc, "GET / HTTP/1.1\r\n\r\n", 18), HTTPSCAN_NUL);
    assert_memory_equal(&before, &sc, sizeof sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipelined_requests_with_bodies_are_counted_and_stay_running),
        cmocka_unit_test(a_chunked_body_is_followed_to_its_end),
        cmocka_unit_test(a_head_request_with_a_body_ends_the_scan),
        cmocka_unit_test(other_headers_that_resemble_the_framing_ones_are_not_them),
        cmocka_unit_test(a_nul_in_a_head_is_found_on_its_line),
        cmocka_unit_test(a_nul_in_a_later_request_names_that_request),
        cmocka_unit_test(a_bad_chunk_size_line_is_found_where_it_begins),
        cmocka_unit_test(an_extension_on_the_last_chunk_is_bad_too),
        cmocka_unit_test(data_not_followed_by_crlf_is_bad_where_the_crlf_belongs),
        cmocka_unit_test(a_nul_in_the_trailers_is_a_bad_chunked_body),
        cmocka_unit_test(a_content_length_over_max_body_is_found_at_the_heads_end),
        cmocka_unit_test(chunk_sizes_over_max_body_are_found_at_the_size_line),
        cmocka_unit_test(a_head_over_max_head_is_found_at_its_first_byte_past_the_limit),
        cmocka_unit_test(a_nul_past_max_head_is_not_the_heads_first_fault),
        cmocka_unit_test(ambiguous_framing_stops_the_scan),
        cmocka_unit_test(methods_after_which_the_connection_ends_stop_the_scan),
        cmocka_unit_test(nothing_changes_after_the_scan_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
