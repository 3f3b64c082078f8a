/* libFuzzer harness: the 2026-07-28 headers that mirror the body (src/wire/stateless.c:
 * stateless_header_decode, stateless_check_headers) and the base64 codec under them
 * (src/core/b64.c). A client fills Mcp-Name and Mcp-Param-* as it likes. One thread:
 * libFuzzer's.
 *
 * Input: a byte that sizes the decode buffer (1..128, or MODERN_HEADER_VALUE_MAX + 1 as the
 * server uses with the top bit) and picks a method, then the bytes x.
 *   - x cut at its first NUL, as a header value: a decoded value fits the buffer and is
 *     NUL-terminated; a plain one is the value itself, and is accepted exactly when it is
 *     visible ASCII with spaces and tabs only inside and fits; a =?base64?...?= one encodes
 *     back to the very text inside (one encoding per value);
 *   - x whole (NULs too) as the value's bytes: its sentinel form =?base64?b64(x)?= decodes to x
 *     whenever x fits the buffer (outsize - 1 bytes, as the header promises);
 *   - b64_decode of x in both alphabets gives bytes that encode back to x, and b64_encode of x
 *     decodes back to x;
 *   - a 2026-07-28 message whose params name x (when x is UTF-8) passes
 *     stateless_check_headers with the headers a conforming client sends for it (plain, or the
 *     sentinel form when x is not plain ASCII or looks like one), and fails with another Mcp-Name. */
#include "fuzz.h"

#include "core/b64.h"
#include "wire/jsonrpc.h"
#include "wire/stateless.h"

static bool plain_ref(const char *v, size_t n)
{
    if (n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c != ' ' && c != '\t' && (c < 0x21 || c > 0x7e))
            return false;
    }
    return true;
}

static bool is_sentinel(const char *v, size_t n)
{
    return n >= 11 && memcmp(v, "=?base64?", 9) == 0 && memcmp(v + n - 2, "?=", 2) == 0;
}

/* "=?base64?" b64(x) "?=", malloc'd. */
static char *sentinel_of(const char *x, size_t n)
{
    char *s = malloc(9 + B64_ENCODED_SIZE(n) + 2);
    if (!s)
        abort();
    memcpy(s, "=?base64?", 9);
    size_t e = b64_encode(x, n, s + 9, false);
    memcpy(s + 9 + e, "?=", 3);
    return s;
}

static void check_value(const char *v, size_t outsize)
{
    size_t n = strlen(v);
    char *out = malloc(outsize);
    if (!out)
        abort();
    size_t ol = (size_t)-1;
    int rc = stateless_header_decode(v, out, outsize, &ol);
    if (!is_sentinel(v, n)) {
        FUZZ_CHECK((rc == 0) == (plain_ref(v, n) && n + 1 <= outsize));
        if (rc == 0)
            FUZZ_CHECK(ol == n && memcmp(out, v, n + 1) == 0);
    } else if (rc == 0) {
        FUZZ_CHECK(ol < outsize && out[ol] == '\0');
        char *back = malloc(B64_ENCODED_SIZE(ol));
        if (!back)
            abort();
        size_t bl = b64_encode(out, ol, back, false);
        FUZZ_CHECK(bl == n - 11 && memcmp(back, v + 9, bl) == 0);
        free(back);
    }
    free(out);
}

static void check_sentinel_round_trip(const char *x, size_t n, size_t outsize)
{
    char *s = sentinel_of(x, n);
    char *out = malloc(outsize);
    if (!out)
        abort();
    size_t ol = (size_t)-1;
    int rc = stateless_header_decode(s, out, outsize, &ol);
    if (n + 1 <= outsize)
        FUZZ_CHECK(rc == 0);
    else
        FUZZ_CHECK(rc != 0);
    if (rc == 0)
        FUZZ_CHECK(ol == n && memcmp(out, x, n) == 0 && out[n] == '\0');
    free(out);
    free(s);
}

static void check_b64(const char *x, size_t n)
{
    for (int url = 0; url < 2; url++) {
        unsigned char *d = malloc(n / 4 * 3 + 3);
        char *e = malloc(B64_ENCODED_SIZE(n));
        if (!d || !e)
            abort();
        long got = b64_decode(x, n, d, url);
        if (got >= 0) {
            size_t el = b64_encode(d, (size_t)got, e, url);
            FUZZ_CHECK(el == n && memcmp(e, x, n) == 0);
        }
        size_t el = b64_encode(x, n, e, url);
        FUZZ_CHECK(strlen(e) == el);
        unsigned char *back = malloc(el / 4 * 3 + 3);
        if (!back)
            abort();
        FUZZ_CHECK(b64_decode(e, el, back, url) == (long)n && memcmp(back, x, n) == 0);
        free(back);
        free(e);
        free(d);
    }
}

static void check_mirror(const char *x, size_t n, uint8_t pick)
{
    static const char *const METHODS[][2] = {
        {"tools/call", "name"},
        {"resources/read", "uri"},
        {"prompts/get", "name"},
        {"tasks/get", "taskId"},
    };
    const char *method = METHODS[pick % 4][0];
    json_t *target = json_stringn(x, n);
    if (!target)
        return; /* not UTF-8: no JSON string holds it */
    json_t *msg = json_pack("{s:s,s:i,s:s,s:{s:o,s:{s:s}}}", "jsonrpc", "2.0", "id", 1, "method",
                            method, "params", METHODS[pick % 4][1], target, "_meta",
                            META_PROTOCOL_VERSION, MODERN_VERSION);
    FUZZ_CHECK(msg != NULL);
    const char *why = NULL;
    jr_view_t v;
    FUZZ_CHECK(jsonrpc_classify_view(msg, &why, &v) == JR_REQUEST);
    bool plain = memchr(x, '\0', n) == NULL && plain_ref(x, n) && !is_sentinel(x, n);
    char *hdr = plain ? strndup(x, n) : sentinel_of(x, n);
    char m[256];
    if (strlen(hdr) <= MODERN_HEADER_VALUE_MAX && n <= MODERN_HEADER_VALUE_MAX - 1) {
        const char *r = stateless_check_headers(&v, MODERN_VERSION, method, hdr, m, sizeof m);
        if (r)
            fprintf(stderr, "refused: %s\n", r);
        FUZZ_CHECK(r == NULL);
    }
    /* another name: one byte more */
    char *other = malloc(n + 2);
    if (!other)
        abort();
    memcpy(other, x, n);
    other[n] = 'x';
    other[n + 1] = '\0';
    char *ohdr = plain ? strdup(other) : sentinel_of(other, n + 1);
    FUZZ_CHECK(stateless_check_headers(&v, MODERN_VERSION, method, ohdr, m, sizeof m) != NULL);
    free(ohdr);
    free(other);
    free(hdr);
    json_decref(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t b = fuzz_u8(&in);
    size_t outsize = b & 0x80 ? MODERN_HEADER_VALUE_MAX + 1 : (size_t)(b & 0x7f) + 1;
    size_t n;
    char *x = fuzz_rest(&in, &n);
    check_value(x, outsize); /* cut at its first NUL */
    check_sentinel_round_trip(x, n, outsize);
    check_b64(x, n);
    check_mirror(x, n, (uint8_t)(b >> 3));
    free(x);
    return 0;
}
