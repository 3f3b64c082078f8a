/* libFuzzer harness: CORS values (src/core/cors.c): a --cors-origin value (cors_origin_norm)
 * and a preflight's Access-Control-Request-Headers, which any page may fill
 * (cors_allow_headers). One thread: libFuzzer's.
 *
 * The input's first byte sizes the output buffer; the rest, cut at its first NUL, is the value.
 * Neither may crash or write past its buffer. An accepted origin is "*" or
 * scheme://host[:port] in lowercase with no default port, is its own normal form, and is
 * allowed by a list holding it. The Allow-Headers value fits its buffer, is CORS_ALLOW_HEADERS
 * followed by ", name" items, each an Mcp-Param-* token of at most CORS_PARAM_NAME_MAX bytes
 * that the input lists. */
#include "fuzz.h"

#include "core/cors.h"

#include <strings.h>

static bool tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static void check_origin(const char *in)
{
    char out[320];
    if (cors_origin_norm(in, out, sizeof out) != 0)
        return;
    size_t n = strlen(out);
    FUZZ_CHECK(n < sizeof out);
    char again[320];
    FUZZ_CHECK(cors_origin_norm(out, again, sizeof again) == 0);
    FUZZ_CHECK(strcmp(out, again) == 0);
    char *list[] = {out};
    FUZZ_CHECK(cors_allow_origin(list, 1, out) != NULL);
    if (strcmp(out, "*") == 0)
        return;
    const char *sep = strstr(out, "://");
    FUZZ_CHECK(sep && sep > out && sep[3] != '\0');
    for (const char *p = out; *p; p++) {
        FUZZ_CHECK(*p > ' ' && *p < 0x7f);
        FUZZ_CHECK(!(*p >= 'A' && *p <= 'Z'));
        if (*p == '/')
            FUZZ_CHECK(p == sep + 1 || p == sep + 2); /* no path */
    }
    FUZZ_CHECK(!(strncmp(out, "http://", 7) == 0 && n > 3 && strcmp(out + n - 3, ":80") == 0 &&
                 strchr(sep + 3, ':') == out + n - 3));
    FUZZ_CHECK(!(strncmp(out, "https://", 8) == 0 && n > 4 && strcmp(out + n - 4, ":443") == 0 &&
                 strchr(sep + 3, ':') == out + n - 4));
    /* a tiny buffer: refused, never overrun (ASan watches) */
    char tiny[6];
    cors_origin_norm(in, tiny, sizeof tiny);
}

static void check_allow_headers(const char *in, size_t cap)
{
    char *out = malloc(cap); /* exactly cap: ASan sees a byte past it */
    if (!out)
        abort();
    size_t n = cors_allow_headers(in, out, cap);
    if (cap < sizeof CORS_ALLOW_HEADERS) {
        FUZZ_CHECK(n == 0);
        FUZZ_CHECK(cap == 0 || out[0] == '\0');
        free(out);
        return;
    }
    FUZZ_CHECK(n == strlen(out) && n < cap);
    FUZZ_CHECK(strncmp(out, CORS_ALLOW_HEADERS, sizeof CORS_ALLOW_HEADERS - 1) == 0);
    const char *p = out + sizeof CORS_ALLOW_HEADERS - 1;
    while (*p) {
        FUZZ_CHECK(p[0] == ',' && p[1] == ' ');
        p += 2;
        const char *name = p;
        while (*p && *p != ',')
            FUZZ_CHECK(tchar(*p++));
        size_t len = (size_t)(p - name);
        FUZZ_CHECK(len > 10 && len <= CORS_PARAM_NAME_MAX);
        FUZZ_CHECK(strncasecmp(name, "Mcp-Param-", 10) == 0);
        char *copy = malloc(len + 1);
        if (!copy)
            abort();
        memcpy(copy, name, len);
        copy[len] = '\0';
        FUZZ_CHECK(strstr(in, copy) != NULL);
        free(copy);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t b = fuzz_u8(&in);
    size_t cap = b < 128 ? 4096 : (size_t)(b - 128) * 2; /* or 0..254: the small cases */
    size_t len;
    char *value = fuzz_rest(&in, &len); /* cut at its first NUL, as a header value is */
    check_origin(value);
    check_allow_headers(value, cap);
    free(value);
    return 0;
}
