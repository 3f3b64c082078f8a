/* libFuzzer harness: a tool's x-mcp-header parameters against a request's Mcp-Param-* headers
 * (src/mcp/modern.c: modern_check_params, its header_matches, through stateless_header_decode).
 * A 2026-07-28 client fills both the arguments and the headers. One thread: libFuzzer's.
 *
 * Input: a tool's input schema, its arguments and a headers object ({lowercased name: raw
 * value}, as src/http/endpoint_modern.c collects them), JSON texts separated by NUL bytes.
 *   - with the input's headers: a refusal says why (a HeaderMismatch message);
 *   - with the headers a conforming client sends for these arguments (each annotated string,
 *     integer or boolean argument as its text, a string in the =?base64?...?= form when it is
 *     not plain ASCII, nothing for an absent or null one): accepted, whatever the nesting;
 *     and an integer's header written as "+N" or "N.0" is accepted as well. Schemas whose
 *     annotated names collide (in any case), run past 128 bytes, or whose annotated values are
 *     of another type (a conforming client has no text for them) are left to the first check. */
#include "fuzz.h"

#include "core/b64.h"
#include "core/jsonparse.h"
#include "mcp/internal.h"
#include "wire/stateless.h"

#include <inttypes.h>

static bool plain(const char *v, size_t n)
{
    if (n == 0)
        return true;
    if (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t')
        return false;
    if (n >= 11 && memcmp(v, "=?base64?", 9) == 0 && memcmp(v + n - 2, "?=", 2) == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c != ' ' && c != '\t' && (c < 0x21 || c > 0x7e))
            return false;
    }
    return true;
}

/* The header text a conforming client sends for v (malloc'd), or NULL when it has none. */
static char *header_text(const json_t *v, int style)
{
    char buf[64];
    if (json_is_boolean(v))
        return strdup(json_is_true(v) ? "true" : "false");
    if (json_is_integer(v)) {
        long long x = (long long)json_integer_value(v);
        if (style == 1 && x >= 0)
            snprintf(buf, sizeof buf, "+%lld", x);
        else if (style == 2)
            snprintf(buf, sizeof buf, "%lld.0", x);
        else
            snprintf(buf, sizeof buf, "%lld", x);
        return strdup(buf);
    }
    if (!json_is_string(v))
        return NULL;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (plain(s, n) && memchr(s, '\0', n) == NULL)
        return strndup(s, n);
    char *out = malloc(9 + B64_ENCODED_SIZE(n) + 2);
    if (!out)
        abort();
    memcpy(out, "=?base64?", 9);
    size_t e = b64_encode(s, n, out + 9, false);
    memcpy(out + 9 + e, "?=", 3);
    return out;
}

/* Walks the schema as modern_check_params does, filling hdrs; false when the case is not one a
 * conforming client can express (see the top). */
static bool conforming(const json_t *schema, const json_t *args, json_t *hdrs, int style, int depth)
{
    const json_t *props = json_object_get(schema, "properties");
    if (!json_is_object(props) || depth > 16)
        return true;
    const char *name;
    json_t *ps;
    json_object_foreach((json_t *)props, name, ps) {
        const json_t *v = json_is_object(args) ? json_object_get(args, name) : NULL;
        const char *hn = json_string_value(json_object_get(ps, "x-mcp-header"));
        if (hn) {
            size_t n = strlen(hn);
            if (n == 0 || n > 128 || n != json_string_length(json_object_get(ps, "x-mcp-header")))
                return false;
            char lower[129];
            for (size_t i = 0; i <= n; i++)
                lower[i] = (char)(hn[i] >= 'A' && hn[i] <= 'Z' ? hn[i] + 32 : hn[i]);
            if (json_object_get(hdrs, lower))
                return false; /* two parameters, one header */
            if (v && !json_is_null(v)) {
                char *text = header_text(v, style);
                if (!text || strlen(text) > MODERN_HEADER_VALUE_MAX) {
                    free(text);
                    return false;
                }
                json_object_set_new(hdrs, lower, json_string(text));
                free(text);
            } else {
                json_object_set_new(hdrs, lower, json_null()); /* taken, but not sent */
            }
        }
        if (json_is_object(ps) && json_object_get(ps, "properties") &&
            !conforming(ps, v, hdrs, style, depth + 1))
            return false;
    }
    return true;
}

/* hdrs without the names reserved by absent arguments. */
static void drop_nulls(json_t *hdrs)
{
    const char *k;
    json_t *x;
    void *tmp;
    json_object_foreach_safe(hdrs, tmp, k, x) {
        if (json_is_null(x))
            json_object_del(hdrs, k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    size_t sl = 0, al = 0, hl = 0;
    char *s = fuzz_field(&in, 0, &sl);
    char *a = fuzz_field(&in, 0, &al);
    char *h = fuzz_rest(&in, &hl);
    json_t *schema = s ? json_parse_buf(s, sl, NULL, 0, NULL) : NULL;
    json_t *args = a ? json_parse_buf(a, al, NULL, 0, NULL) : NULL;
    json_t *hdrs = json_parse_buf(h, hl, NULL, 0, NULL);
    char why[300];
    if (schema) {
        why[0] = '\0';
        const char *r = modern_check_params(schema, args, hdrs, why, sizeof why);
        FUZZ_CHECK(r == NULL || (r == why && strncmp(why, "Header mismatch: ", 17) == 0));
        for (int style = 0; style < 3; style++) {
            json_t *mine = json_object();
            if (conforming(schema, args, mine, style, 0)) {
                drop_nulls(mine);
                r = modern_check_params(schema, args, mine, why, sizeof why);
                if (r)
                    fprintf(stderr, "refused (style %d): %s\n", style, r);
                FUZZ_CHECK(r == NULL);
            }
            json_decref(mine);
        }
    }
    json_decref(schema);
    json_decref(args);
    json_decref(hdrs);
    free(h);
    free(a);
    free(s);
    return 0;
}
