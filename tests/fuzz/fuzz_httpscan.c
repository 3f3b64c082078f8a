/* libFuzzer harness: a connection's bytes scanned as evhttp frames them (src/wire/httpscan.c).
 * One thread: libFuzzer's.
 *
 * Input: a byte of split size and limits, then the stream. The stream is scanned whole and in
 * pieces of that size, which must agree on the status, the request and, for a fault, where it
 * is. A NUL fault sits on a NUL byte; a bad chunked body needs a "chunked" in the stream; a
 * head or body past a limit needs that limit set, and a head past max_head that many bytes
 * from its start; a stream with neither a NUL nor "chunked" has no other fault; the fault's
 * line starts at or before it, and where a caller cuts for it (httpscan_cut_at) too, with at
 * most HTTPSCAN_END_MAX bytes to put there; once the scan has ended more bytes change nothing;
 * the request count never passes the number of lines begun.
 */
#include "fuzz.h"

#include "wire/httpscan.h"

#include <string.h>
#include <strings.h>

static bool has_chunked(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 7 <= n; i++)
        if (strncasecmp((const char *)p + i, "chunked", 7) == 0)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t first = fuzz_u8(&in);
    size_t piece = (size_t)first % 17 + 1;
    unsigned k = first / 17u; /* 0 (the seeds below 17): no limits */
    uint64_t max_head = (k & 1) ? 16 + 16 * (uint64_t)k : 0,
             max_body = (k & 2) ? 4 * (uint64_t)k : 0;
    size_t n;
    char *stream = fuzz_rest(&in, &n); /* an exact-size copy: ASan sees any read past it */

    httpscan_t whole, split;
    httpscan_init(&whole);
    httpscan_init(&split);
    whole.max_head = split.max_head = max_head;
    whole.max_body = split.max_body = max_body;
    httpscan_status_t st = httpscan_feed(&whole, stream, n);
    FUZZ_CHECK(st == whole.status);
    for (size_t off = 0; off < n; off += piece)
        httpscan_feed(&split, stream + off, n - off < piece ? n - off : piece);
    FUZZ_CHECK(split.status == whole.status && split.request == whole.request);

    FUZZ_CHECK(whole.pos <= n);
    if (n > 0)
        FUZZ_CHECK(whole.request >= 1);
    size_t lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += stream[i] == '\n';
    FUZZ_CHECK(whole.request <= lines);

    bool limit = st == HTTPSCAN_HEAD_TOO_BIG || st == HTTPSCAN_BODY_TOO_BIG;
    if (st == HTTPSCAN_HEAD_TOO_BIG)
        FUZZ_CHECK(max_head && n - whole.head_at >= max_head);
    if (st == HTTPSCAN_BODY_TOO_BIG)
        FUZZ_CHECK(max_body != 0);
    if (limit) {
        FUZZ_CHECK(split.pos == whole.pos && split.line_at == whole.line_at);
        FUZZ_CHECK(whole.line_at <= whole.pos && whole.pos <= n);
    }
    if (st == HTTPSCAN_NUL || st == HTTPSCAN_BAD_CHUNK || limit) {
        const char *end = NULL;
        uint64_t at = httpscan_cut_at(&whole, whole.head_at, &end);
        FUZZ_CHECK(end && strlen(end) <= HTTPSCAN_END_MAX && at <= whole.line_at);
    }
    if (st == HTTPSCAN_NUL || st == HTTPSCAN_BAD_CHUNK) {
        FUZZ_CHECK(split.pos == whole.pos && split.line_at == whole.line_at);
        FUZZ_CHECK(whole.line_at <= whole.pos && whole.pos < n);
        const char *end = httpscan_body_end(&whole);
        FUZZ_CHECK(strcmp(end, "\r\n") == 0 || strcmp(end, "0\r\n\r\n") == 0);
    }
    if (st == HTTPSCAN_NUL)
        FUZZ_CHECK(stream[whole.pos] == '\0');
    if (st == HTTPSCAN_BAD_CHUNK)
        FUZZ_CHECK(has_chunked((const uint8_t *)stream, whole.pos));
    if (!memchr(stream, 0, n) && !has_chunked((const uint8_t *)stream, n))
        FUZZ_CHECK(st == HTTPSCAN_RUNNING || st == HTTPSCAN_STOPPED || limit);

    if (st != HTTPSCAN_RUNNING) {
        httpscan_t before = whole;
        FUZZ_CHECK(httpscan_feed(&whole, stream, n) == st);
        FUZZ_CHECK(memcmp(&before, &whole, sizeof whole) == 0);
    }
    free(stream);
    return 0;
}
