/* libFuzzer harness: the POST body parser with its node limit, and the lossy string maker that
 * quotes a client's header bytes in error messages (src/core/jsonparse.c:
 * json_parse_buf_bounded, json_stringn_lossy). Both run on every request before any
 * authentication. One thread: libFuzzer's.
 *
 * Input: a byte that sets the limit (1..128, or 16 times that with the top bit), then a body.
 * Against the unbounded parse of the same bytes (json_parse_buf, which fuzz_json holds to
 * jansson): an accepted body is the same value, counted as parsed (every object, array,
 * string, number, true, false and null, keys not; a duplicate key's replaced value too, so the
 * count is the value's own exactly when jansson finds no duplicate key) and within the limit;
 * a body within the limit is accepted when the unbounded parser accepts it; a refusal for too
 * many values has counted one past the limit (and the "id" it located, if any, is a scalar's
 * text in the body, the whole object's "id"); any other refusal is the unbounded parser's,
 * with its message and position. The whole body
 * as a string through json_stringn_lossy is valid UTF-8, is the body itself when the body is
 * UTF-8, and keeps every byte of a valid sequence; each other byte becomes U+FFFD. */
#include "fuzz.h"

#include "core/jsonparse.h"

static size_t count(const json_t *v)
{
    size_t n = 1;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            n += count(json_array_get(v, i));
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
            n += count(x);
    }
    return n;
}

/* True when jansson reads the body without duplicate keys (it refuses integers past 64 bits
 * too: those bodies are left out of the exact count check). */
static bool no_duplicate_keys(const char *body, size_t len)
{
    json_t *v = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
                           NULL);
    json_decref(v);
    return v != NULL;
}

/* A refusal's located id: a scalar's whole text within the body, and, when the whole body is an
 * object without duplicate keys, its "id" member. */
static void check_id_span(const char *body, size_t len, const json_parse_info_t *info,
                          const json_t *whole)
{
    if (!info->id_len)
        return;
    FUZZ_CHECK(info->id_off < len && info->id_len <= len - info->id_off);
    json_t *id = json_parse_buf(body + info->id_off, info->id_len, NULL, 0, NULL);
    FUZZ_CHECK(id && !json_is_object(id) && !json_is_array(id));
    if (whole && json_is_object(whole) && no_duplicate_keys(body, len))
        FUZZ_CHECK(json_equal(id, json_object_get(whole, "id")));
    json_decref(id);
}

static void check_bounded(const char *body, size_t len, size_t max)
{
    char err0[160], err1[160];
    size_t pos0 = 0, pos1 = 0;
    json_t *v = json_parse_buf(body, len, NULL, 0, NULL);
    /* counted without a limit that bites: what the body costs */
    json_parse_info_t all = {.nodes = (size_t)-1, .too_many = true};
    json_t *v0 = json_parse_buf_bounded(body, len, SIZE_MAX, &all, err0, sizeof err0, &pos0);
    FUZZ_CHECK((v0 == NULL) == (v == NULL) && !all.too_many);
    if (v0) {
        FUZZ_CHECK(json_equal(v0, v));
        /* a duplicate key's first value was made, then replaced: it counts */
        size_t c = count(v0);
        FUZZ_CHECK(all.nodes >= c);
        if (all.nodes != c)
            FUZZ_CHECK(!no_duplicate_keys(body, len));
    }
    json_parse_info_t info = {.nodes = (size_t)-1, .too_many = true};
    json_t *v1 = json_parse_buf_bounded(body, len, max, &info, err1, sizeof err1, &pos1);
    if (v1) {
        FUZZ_CHECK(v0 != NULL && json_equal(v0, v1) && json_typeof(v0) == json_typeof(v1));
        FUZZ_CHECK(!info.too_many && info.nodes == all.nodes && info.nodes <= max &&
                   info.id_len == 0);
    } else {
        FUZZ_CHECK(err1[0] != '\0' && pos1 <= len);
        FUZZ_CHECK(!v0 || all.nodes > max);
        if (info.too_many) {
            FUZZ_CHECK(info.nodes == max + 1 && strcmp(err1, "too many JSON values") == 0);
            check_id_span(body, len, &info, v0);
        } else {
            FUZZ_CHECK(v0 == NULL && info.nodes <= max);
            FUZZ_CHECK(strcmp(err0, err1) == 0 && pos0 == pos1);
        }
    }
    json_decref(v);
    json_decref(v0);
    json_decref(v1);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF). A reference of its own, not the parser's. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

static void check_lossy(const char *body, size_t len)
{
    json_t *s = json_stringn_lossy(body, len);
    FUZZ_CHECK(s != NULL && json_is_string(s));
    const unsigned char *o = (const unsigned char *)json_string_value(s);
    size_t ol = json_string_length(s);
    /* the expected text, built by the reference */
    const unsigned char *p = (const unsigned char *)body, *end = p + len;
    size_t at = 0;
    while (p < end) {
        size_t n = utf8_len(p, end);
        if (n) {
            FUZZ_CHECK(at + n <= ol && memcmp(o + at, p, n) == 0);
            p += n;
            at += n;
        } else {
            FUZZ_CHECK(at + 3 <= ol && memcmp(o + at, "\xef\xbf\xbd", 3) == 0);
            p++;
            at += 3;
        }
    }
    FUZZ_CHECK(at == ol && ol <= 3 * len);
    /* and jansson takes it as UTF-8 */
    json_t *again = json_stringn(json_string_value(s), ol);
    FUZZ_CHECK(again != NULL);
    json_decref(again);
    json_decref(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t b = fuzz_u8(&in);
    size_t max = (size_t)(b & 0x7f) + 1;
    if (b & 0x80)
        max *= 16;
    size_t len;
    char *body = fuzz_rest(&in, &len);
    check_bounded(body, len, max);
    check_lossy(body, len);
    free(body);
    return 0;
}
