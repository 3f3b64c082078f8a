/* Threads: any thread (pure functions). */
/* Compact JSON serialisation. Pure, any thread. See jsondump.h. */
#include "core/jsondump.h"

#include "core/jsonparse.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 2048

static void dump_string(buf_t *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF"; /* as jansson writes \u001F */
    buf_reserve(out, n + 2);
    out->p[out->len++] = '"';
    size_t run = 0; /* start of the pending run of bytes that need no escape */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        buf_add(out, s + run, i - run);
        run = i + 1;
        char esc[7] = {'\\', 0};
        size_t el = 2;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            el = 6;
        }
        buf_add(out, esc, el);
    }
    buf_add(out, s + run, n - run);
    buf_add(out, "\"", 1);
}

static void dump_int(buf_t *out, json_int_t v)
{
    char tmp[24];
    char *p = tmp + sizeof tmp;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    buf_add(out, p, (size_t)(tmp + sizeof tmp - p));
}

static void dump_real(buf_t *out, double d)
{
    char tmp[48];
    int n = snprintf(tmp, sizeof tmp, "%.17g", d);
    if (n <= 0 || n >= (int)sizeof tmp - 2)
        return;
    /* as jansson writes it: an integral value keeps a fraction (so it reads back as a real),
     * and an exponent loses its '+' and leading zeros ("1e+05" -> "1e5") */
    if (!strpbrk(tmp, ".e")) {
        tmp[n++] = '.';
        tmp[n++] = '0';
        tmp[n] = '\0';
    }
    char *e = strchr(tmp, 'e');
    if (e) {
        char *start = e + 1;
        char *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, (size_t)(tmp + n - end) + 1);
            n -= (int)(end - start);
        }
    }
    buf_add(out, tmp, (size_t)n);
}

/* storable: a key with a NUL in it fails too (the store's reader refuses one, jansson's
 * json_object_setn takes one) */
static bool dump(buf_t *out, const json_t *v, int depth, bool storable)
{
    if (depth > MAX_DEPTH)
        return false;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        buf_add(out, "{", 1);
        const char *key;
        size_t klen;
        json_t *val;
        bool first = true;
        void *iter = json_object_iter((json_t *)v);
        while (iter) {
            key = json_object_iter_key(iter);
            klen = json_object_iter_key_len(iter);
            val = json_object_iter_value(iter);
            if (storable && memchr(key, '\0', klen))
                return false;
            if (!first)
                buf_add(out, ",", 1);
            first = false;
            dump_string(out, key, klen);
            buf_add(out, ":", 1);
            if (!dump(out, val, depth + 1, storable))
                return false;
            iter = json_object_iter_next((json_t *)v, iter);
        }
        buf_add(out, "}", 1);
        return true;
    }
    case JSON_ARRAY: {
        buf_add(out, "[", 1);
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            if (i)
                buf_add(out, ",", 1);
            if (!dump(out, json_array_get(v, i), depth + 1, storable))
                return false;
        }
        buf_add(out, "]", 1);
        return true;
    }
    case JSON_STRING:
        dump_string(out, json_string_value(v), json_string_length(v));
        return true;
    case JSON_INTEGER:
        dump_int(out, json_integer_value(v));
        return true;
    case JSON_REAL:
        dump_real(out, json_real_value(v));
        return true;
    case JSON_TRUE:
        buf_add(out, "true", 4);
        return true;
    case JSON_FALSE:
        buf_add(out, "false", 5);
        return true;
    case JSON_NULL:
        buf_add(out, "null", 4);
        return true;
    }
    return false;
}

bool json_dump_into(buf_t *out, const json_t *v)
{
    return v && dump(out, v, 0, false);
}

/* A container being written by dump_deep: the next member to write. */
typedef struct open_value {
    const json_t *v;
    void *iter; /* an object's next member (NULL: none left) */
    size_t i;   /* members written */
} open_value_t;

/* dump's text at any depth, with its own stack on the heap: jansson's json_dumps recurses (and
 * snprintfs a loop key) once a level, and a handler's result some 25,000 levels deep overflowed
 * a thread's stack there; it also refuses a string that is not UTF-8 (_nocheck), which dump
 * writes as it is. */
static void dump_deep(buf_t *out, const json_t *v)
{
    size_t cap = 4096, n = 0;
    open_value_t *st = xmalloc(cap * sizeof *st);
    while (v) {
        if (json_is_object(v) || json_is_array(v)) {
            buf_add(out, json_is_object(v) ? "{" : "[", 1);
            if (n == cap)
                st = xrealloc(st, (cap *= 2) * sizeof *st);
            st[n++] = (open_value_t){v, json_object_iter((json_t *)v), 0};
        } else {
            dump(out, v, 0, false);
        }
        v = NULL; /* the next value: the innermost open container's next member */
        while (n && !v) {
            open_value_t *o = &st[n - 1];
            bool object = json_is_object(o->v);
            if (object ? !o->iter : o->i == json_array_size(o->v)) {
                buf_add(out, object ? "}" : "]", 1);
                n--;
                continue;
            }
            if (o->i++)
                buf_add(out, ",", 1);
            if (!object) {
                v = json_array_get(o->v, o->i - 1);
                continue;
            }
            dump_string(out, json_object_iter_key(o->iter), json_object_iter_key_len(o->iter));
            buf_add(out, ":", 1);
            v = json_object_iter_value(o->iter);
            o->iter = json_object_iter_next((json_t *)o->v, o->iter);
        }
    }
    free(st);
}

void json_dump_whole_into(buf_t *out, const json_t *v)
{
    size_t mark = out->len;
    if (json_dump_into(out, v))
        return;
    out->len = mark; /* too deep for the recursion: the same text from dump_deep */
    dump_deep(out, v);
}

static char *dump_storable_at(const json_t *v, int depth, size_t *len)
{
    buf_t b = {0};
    if (!v || !dump(&b, v, depth, true) || !json_text_utf8(b.p, b.len)) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b, len);
}

char *json_dump_storable(const json_t *v, size_t *len)
{
    /* from depth 1: the reader counts the outermost value as one level, json_dump_into as 0 */
    return dump_storable_at(v, 1, len);
}

bool json_storable_at(const json_t *v, int depth)
{
    size_t len;
    char *t = dump_storable_at(v, depth, &len);
    free(t);
    return t != NULL;
}

char *json_dump_compact(const json_t *v, size_t *len)
{
    buf_t b = {0};
    buf_reserve(&b, 256);
    json_dump_whole_into(&b, v);
    return buf_steal(&b, len);
}

/* ---- an object written member by member ---- */

void jobj_begin(jobj_t *o, buf_t *out)
{
    o->out = out;
    o->more = false;
    buf_add(out, "{", 1);
}

static void jobj_key(jobj_t *o, const char *key)
{
    if (o->more)
        buf_add(o->out, ",", 1);
    o->more = true;
    dump_string(o->out, key, strlen(key));
    buf_add(o->out, ":", 1);
}

void jobj_str(jobj_t *o, const char *key, const char *s)
{
    if (!s)
        return;
    size_t n = strlen(s);
    size_t i = 0;
    while (i < n && (unsigned char)s[i] < 0x80)
        i++;
    if (i < n) { /* not ASCII: json_string's own check decides (its text is the same) */
        json_t *t = json_string(s);
        if (!t)
            return;
        json_decref(t);
    }
    jobj_key(o, key);
    dump_string(o->out, s, n);
}

void jobj_int(jobj_t *o, const char *key, json_int_t v)
{
    jobj_key(o, key);
    dump_int(o->out, v);
}

void jobj_bool(jobj_t *o, const char *key, bool v)
{
    jobj_key(o, key);
    if (v)
        buf_add(o->out, "true", 4);
    else
        buf_add(o->out, "false", 5);
}

void jobj_json(jobj_t *o, const char *key, const json_t *v)
{
    if (!v)
        return;
    jobj_key(o, key);
    json_dump_whole_into(o->out, v);
}

void jobj_end(jobj_t *o)
{
    buf_add(o->out, "}", 1);
}
