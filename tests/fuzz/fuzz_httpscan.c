/* libFuzzer harness: a connection's bytes scanned as evhttp frames them (src/wire/httpscan.c).
 * One thread: libFuzzer's.
 *
 * Input: a byte of split size, then the stream. The stream is scanned whole and in pieces of
 * that size, which must agree on the status, the request and, for a fault, where it is. A NUL
 * fault sits on a NUL byte; a bad chunked body needs a "chunked" in the stream; a stream with
 * neither a NUL nor "chunked" has no fault; the fault's line starts at or before it; once the
 * scan has ended more bytes change nothing; the request count never passes the number of
 * lines begun.
 */
#include "fuzz.h"

#include "wire/httpscan.h"

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
    size_t piece = (size_t)fuzz_u8(&in) % 17 + 1;
    size_t n;
    char *stream = fuzz_rest(&in, &n); /* an exact-size copy: ASan sees any read past it */

    httpscan_t whole, split;
    httpscan_init(&whole);
    httpscan_init(&split);
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
        FUZZ_CHECK(st == HTTPSCAN_RUNNING || st == HTTPSCAN_STOPPED);

    if (st != HTTPSCAN_RUNNING) {
        httpscan_t before = whole;
        FUZZ_CHECK(httpscan_feed(&whole, stream, n) == st);
        FUZZ_CHECK(memcmp(&before, &whole, sizeof whole) == 0);
    }
    free(stream);
    return 0;
}
