/* libFuzzer harness: what resources/read and the list methods read of a client's params
 * (src/mcp/registry.c: uri_template_match; src/core/util.c: parse_int64, the list cursor).
 * One thread: libFuzzer's.
 *
 * Input: a selector byte, then a template and a URI separated by a NUL byte (the template is
 * the conformance toolset's with selector & 1, since a template is the server's own text and
 * the URI the client's); the URI is also read as a cursor.
 *   - a match with variables binds every {name} of the template to a non-empty value holding
 *     no '/' (nor the literal character that follows the variable), as a JSON string when the
 *     URI is UTF-8, and the template expanded with those values is the URI again (templates
 *     with each name once); matching with and without a variables object agrees for
 *     templates whose names are 1..127 bytes;
 *   - a cursor is accepted exactly when it is decimal digits only, with a value in the range,
 *     and then is that value (checked against strtoll). */
#include "fuzz.h"

#include "core/util.h"
#include "mcp/registry.h"

#include <errno.h>

/* True when every {name} is 1..127 bytes, no name comes twice and braces are balanced. */
static bool simple_template(const char *t)
{
    const char *names[64];
    size_t lens[64], n = 0;
    for (const char *p = t; *p; p++) {
        if (*p == '}')
            return false;
        if (*p != '{')
            continue;
        const char *close = strchr(p, '}');
        if (!close || n == 64)
            return false;
        size_t l = (size_t)(close - p - 1);
        if (l == 0 || l >= 128 || memchr(p + 1, '{', l))
            return false;
        for (size_t i = 0; i < n; i++)
            if (lens[i] == l && memcmp(names[i], p + 1, l) == 0)
                return false;
        names[n] = p + 1;
        lens[n++] = l;
        p = close;
    }
    return true;
}

/* The template with each {name} replaced by vars[name]; malloc'd, NULL when one is missing. */
static char *expand(const char *t, const json_t *vars)
{
    size_t cap = strlen(t) + 1, len = 0;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)vars, k, x)
        cap += json_string_length(x);
    char *out = malloc(cap);
    if (!out)
        abort();
    for (const char *p = t; *p;) {
        if (*p != '{') {
            out[len++] = *p++;
            continue;
        }
        const char *close = strchr(p, '}');
        char name[128];
        size_t l = (size_t)(close - p - 1);
        memcpy(name, p + 1, l);
        name[l] = '\0';
        json_t *v = json_object_get(vars, name);
        if (!json_is_string(v)) {
            free(out);
            return NULL;
        }
        memcpy(out + len, json_string_value(v), json_string_length(v));
        len += json_string_length(v);
        p = close + 1;
    }
    out[len] = '\0';
    return out;
}

static void check_values(const char *t, const json_t *vars)
{
    for (const char *p = t; (p = strchr(p, '{')) != NULL;) {
        const char *close = strchr(p, '}');
        char name[128];
        size_t l = (size_t)(close - p - 1);
        memcpy(name, p + 1, l);
        name[l] = '\0';
        const json_t *v = json_object_get(vars, name);
        FUZZ_CHECK(json_is_string(v) && json_string_length(v) > 0);
        const char *s = json_string_value(v);
        FUZZ_CHECK(memchr(s, '/', json_string_length(v)) == NULL);
        if (close[1] != '\0')
            FUZZ_CHECK(memchr(s, close[1], json_string_length(v)) == NULL);
        p = close + 1;
    }
}

static void check_template(const char *t, const char *uri)
{
    json_t *vars = json_object();
    bool m = uri_template_match(t, uri, vars);
    bool simple = simple_template(t);
    if (simple)
        FUZZ_CHECK(uri_template_match(t, uri, NULL) == m);
    json_t *pu = json_string(uri), *pt = json_string(t);
    bool utf8 = pu != NULL && pt != NULL; /* a template is the server's text, UTF-8 */
    json_decref(pu);
    json_decref(pt);
    if (m && simple && utf8) {
        check_values(t, vars);
        char *again = expand(t, vars);
        FUZZ_CHECK(again != NULL && strcmp(again, uri) == 0);
        free(again);
    }
    json_decref(vars);
}

static void check_cursor(const char *s, int64_t max)
{
    int64_t v = -1;
    int rc = parse_int64(s, 1, max, &v);
    bool digits = *s != '\0' && strspn(s, "0123456789") == strlen(s);
    errno = 0;
    long long ref = digits ? strtoll(s, NULL, 10) : -1;
    bool ok = digits && errno == 0 && ref >= 1 && ref <= max;
    FUZZ_CHECK((rc == 0) == ok);
    if (rc == 0)
        FUZZ_CHECK(v == ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t sel = fuzz_u8(&in);
    char *t = fuzz_field(&in, 0, NULL);
    size_t ul;
    char *uri = fuzz_rest(&in, &ul);
    check_template(sel & 1 ? "test://template/{id}/data" : t ? t : "", uri);
    check_cursor(uri, sel & 2 ? INT64_MAX : (int64_t)(sel >> 2));
    free(uri);
    free(t);
    return 0;
}
