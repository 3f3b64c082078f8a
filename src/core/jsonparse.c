/* Threads: any thread (pure functions). */
/* A JSON parser that builds jansson values straight from a buffer. Pure, any thread.
 *
 * Why not json_loadb: jansson reads its input through a per-character callback, which made
 * parsing a 100-byte tools/call about 23k instructions, a fifth of a whole call in callgrind.
 * This scans the buffer with a pointer and makes the same values (json_equal to json_loadb's
 * with JSON_DECODE_ANY | JSON_ALLOW_NUL), refusing what jansson refuses: invalid UTF-8, lone
 * surrogates, control characters in strings, NUL in keys, numbers beyond double, nesting deeper
 * than 2048, trailing text. Duplicate keys keep the last value, as jansson does.
 *
 * One difference on purpose: an integer literal beyond json_int_t is a real (the nearest double,
 * as JSON_DECODE_INT_AS_REAL reads every integer), where jansson fails with "too big integer".
 * It is valid JSON, and what a JavaScript client writes for any number from 2^63 to 1e21
 * (JSON.stringify(1e19) is "10000000000000000000"); jansson's refusal made the whole request a
 * parse error. Where an integer is needed, the real says so: a request id must be an integer
 * (jsonrpc_id_valid), and the schema validator reports an "integer" argument outside the 64-bit
 * range as the tool's error. Integers within range stay integers, exact.
 */
#include "core/jsonparse.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 2048

typedef struct parser {
    const char *p, *end, *start;
    char *err;
    size_t errlen;
    size_t *err_pos;
    int depth;
    char *scratch; /* unescaped string bytes */
    size_t scap;
    size_t nodes;     /* values made so far */
    size_t max_nodes; /* 0: no limit */
    bool too_many;
    const char *id_at; /* bounded: the top-level object's scalar "id" (json_parse_info_t) */
    size_t id_len;
} parser_t;

static json_t *fail(parser_t *ps, const char *why)
{
    if (ps->err && ps->errlen && !ps->err[0])
        snprintf(ps->err, ps->errlen, "%s", why);
    if (ps->err_pos)
        *ps->err_pos = (size_t)(ps->p - ps->start);
    return NULL;
}

static void skip_ws(parser_t *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
        ps->p++;
}

static bool scratch_reserve(parser_t *ps, size_t n)
{
    if (n <= ps->scap)
        return true;
    size_t cap = ps->scap ? ps->scap : 64;
    while (cap < n)
        cap *= 2;
    char *s = realloc(ps->scratch, cap);
    if (!s)
        return false;
    ps->scratch = s;
    ps->scap = cap;
    return true;
}

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = (v << 4) | d;
    }
    return v;
}

/* Length of the UTF-8 sequence at s (valid, shortest form, no surrogates), or 0. */
static size_t utf8_seq(const unsigned char *s, const unsigned char *end)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - s) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

bool json_text_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = *p < 0x80 ? 1 : utf8_seq(p, end);
        if (!n)
            return false;
        p += n;
    }
    return true;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Parses a string at ps->p (on the opening quote). On success out and len point either into the
 * input (no escapes) or into the scratch buffer. */
static bool parse_string(parser_t *ps, const char **out, size_t *len)
{
    const char *p = ++ps->p; /* past the quote */
    const char *run = p;
    bool escaped = false;
    size_t sl = 0; /* scratch length */
    while (1) {
        if (p >= ps->end) {
            ps->p = p;
            fail(ps, "premature end of input in a string");
            return false;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            break;
        if (c < 0x20) {
            ps->p = p;
            fail(ps, "control character in a string");
            return false;
        }
        if (c == '\\') {
            if (!escaped) {
                escaped = true;
                if (!scratch_reserve(ps, (size_t)(ps->end - run) + 8)) {
                    fail(ps, "out of memory");
                    return false;
                }
            }
            memcpy(ps->scratch + sl, run, (size_t)(p - run));
            sl += (size_t)(p - run);
            if (p + 1 >= ps->end) {
                ps->p = p;
                fail(ps, "premature end of input in a string");
                return false;
            }
            char e = p[1];
            p += 2;
            switch (e) {
            case '"':
                ps->scratch[sl++] = '"';
                break;
            case '\\':
                ps->scratch[sl++] = '\\';
                break;
            case '/':
                ps->scratch[sl++] = '/';
                break;
            case 'b':
                ps->scratch[sl++] = '\b';
                break;
            case 'f':
                ps->scratch[sl++] = '\f';
                break;
            case 'n':
                ps->scratch[sl++] = '\n';
                break;
            case 'r':
                ps->scratch[sl++] = '\r';
                break;
            case 't':
                ps->scratch[sl++] = '\t';
                break;
            case 'u': {
                int v = ps->end - p >= 4 ? hex4(p) : -1;
                if (v < 0) {
                    ps->p = p;
                    fail(ps, "invalid \\u escape");
                    return false;
                }
                p += 4;
                uint32_t cp = (uint32_t)v;
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    int lo = ps->end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2) : -1;
                    if (lo < 0xdc00 || lo > 0xdfff) {
                        ps->p = p;
                        fail(ps, "invalid Unicode surrogate pair");
                        return false;
                    }
                    p += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    ps->p = p;
                    fail(ps, "invalid Unicode surrogate");
                    return false;
                }
                sl += put_utf8(ps->scratch + sl, cp);
                break;
            }
            default:
                ps->p = p - 1;
                fail(ps, "invalid escape");
                return false;
            }
            run = p;
            continue;
        }
        if (c >= 0x80) {
            size_t n = utf8_seq((const unsigned char *)p, (const unsigned char *)ps->end);
            if (!n) {
                ps->p = p;
                fail(ps, "invalid UTF-8 in a string");
                return false;
            }
            p += n;
            continue;
        }
        p++;
    }
    if (escaped) {
        memcpy(ps->scratch + sl, run, (size_t)(p - run));
        sl += (size_t)(p - run);
        *out = ps->scratch;
        *len = sl;
    } else {
        *out = run;
        *len = (size_t)(p - run);
    }
    ps->p = p + 1;
    return true;
}

static json_t *parse_number(parser_t *ps)
{
    const char *s = ps->p, *p = s;
    bool real = false;
    if (p < ps->end && *p == '-')
        p++;
    if (p >= ps->end)
        return fail(ps, "invalid number");
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    } else {
        return fail(ps, "invalid number");
    }
    if (p < ps->end && *p == '.') {
        real = true;
        p++;
        if (p >= ps->end || *p < '0' || *p > '9')
            return fail(ps, "invalid number");
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < ps->end && (*p == 'e' || *p == 'E')) {
        real = true;
        p++;
        if (p < ps->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= ps->end || *p < '0' || *p > '9')
            return fail(ps, "invalid number");
        while (p < ps->end && *p >= '0' && *p <= '9')
            p++;
    }
    char tmp[128];
    size_t n = (size_t)(p - s);
    char *num = n < sizeof tmp ? tmp : malloc(n + 1);
    if (!num)
        return fail(ps, "out of memory");
    memcpy(num, s, n);
    num[n] = '\0';
    json_t *v = NULL;
    errno = 0;
    char *endp;
    if (!real) {
        long long ll = strtoll(num, &endp, 10);
        if (errno != ERANGE)
            v = json_integer((json_int_t)ll);
        else
            real = true; /* beyond json_int_t: read as a real (see the top of the file) */
    }
    if (real) {
        errno = 0;
        double d = strtod(num, &endp);
        if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL))
            v = fail(ps, "real number overflow");
        else
            v = json_real(d);
    }
    if (num != tmp)
        free(num);
    if (v)
        ps->p = p;
    return v;
}

static json_t *parse_value(parser_t *ps);

static json_t *parse_object(parser_t *ps)
{
    ps->p++; /* { */
    json_t *obj = json_object();
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return obj;
    }
    while (1) {
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') {
            json_decref(obj);
            return fail(ps, "string or '}' expected");
        }
        const char *k;
        size_t kl;
        if (!parse_string(ps, &k, &kl)) {
            json_decref(obj);
            return NULL;
        }
        if (memchr(k, 0, kl)) {
            json_decref(obj);
            return fail(ps, "NUL byte in object key not supported");
        }
        /* the key may live in the scratch buffer, which the value may reuse: copy it */
        char kbuf[128];
        char *key = kl < sizeof kbuf ? kbuf : malloc(kl + 1);
        if (!key) {
            json_decref(obj);
            return fail(ps, "out of memory");
        }
        memcpy(key, k, kl);
        key[kl] = '\0';
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') {
            if (key != kbuf)
                free(key);
            json_decref(obj);
            return fail(ps, "':' expected");
        }
        ps->p++;
        skip_ws(ps);
        const char *at = ps->p;
        json_t *val = parse_value(ps);
        if (!val) {
            if (key != kbuf)
                free(key);
            json_decref(obj);
            return NULL;
        }
        if (ps->max_nodes && ps->depth == 1 && kl == 2 && key[0] == 'i' && key[1] == 'd') {
            /* the top level's (its depth is 1 inside); a later "id" replaces an earlier one,
             * as in the value, a container too (then none is located) */
            bool scalar = !json_is_object(val) && !json_is_array(val);
            ps->id_at = scalar ? at : NULL;
            ps->id_len = scalar ? (size_t)(ps->p - at) : 0;
        }
        /* validated UTF-8 already: the nocheck form skips jansson's second pass */
        json_object_setn_new_nocheck(obj, key, kl, val);
        if (key != kbuf)
            free(key);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            return obj;
        }
        json_decref(obj);
        return fail(ps, "',' or '}' expected");
    }
}

static json_t *parse_array(parser_t *ps)
{
    ps->p++; /* [ */
    json_t *arr = json_array();
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return arr;
    }
    while (1) {
        json_t *val = parse_value(ps);
        if (!val) {
            json_decref(arr);
            return NULL;
        }
        json_array_append_new(arr, val);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return arr;
        }
        json_decref(arr);
        return fail(ps, "',' or ']' expected");
    }
}

static bool literal(parser_t *ps, const char *word, size_t n)
{
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return false;
    ps->p += n;
    return true;
}

static json_t *parse_value(parser_t *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "premature end of input");
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "maximum parsing depth reached");
    if (ps->max_nodes && ++ps->nodes > ps->max_nodes) {
        /* refused before it is made: what a body may cost is bounded by the count, not by
         * its bytes (a 4 MB body of empty objects made 1.4 M objects, ~260 MB) */
        ps->too_many = true;
        ps->depth--;
        return fail(ps, "too many JSON values");
    }
    json_t *v;
    switch (*ps->p) {
    case '{':
        v = parse_object(ps);
        break;
    case '[':
        v = parse_array(ps);
        break;
    case '"': {
        const char *s;
        size_t n;
        v = parse_string(ps, &s, &n) ? json_stringn_nocheck(s, n) : NULL;
        break;
    }
    case 't':
        v = literal(ps, "true", 4) ? json_true() : fail(ps, "invalid token");
        break;
    case 'f':
        v = literal(ps, "false", 5) ? json_false() : fail(ps, "invalid token");
        break;
    case 'n':
        v = literal(ps, "null", 4) ? json_null() : fail(ps, "invalid token");
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            v = parse_number(ps);
        else
            v = fail(ps, "invalid token");
    }
    ps->depth--;
    return v;
}

json_t *json_parse_buf(const char *buf, size_t len, char *err, size_t errlen, size_t *err_pos)
{
    return json_parse_buf_bounded(buf, len, 0, NULL, err, errlen, err_pos);
}

json_t *json_parse_buf_bounded(const char *buf, size_t len, size_t max_nodes,
                               json_parse_info_t *info, char *err, size_t errlen, size_t *err_pos)
{
    parser_t ps = {.p = buf,
                   .end = buf + len,
                   .start = buf,
                   .err = err,
                   .errlen = errlen,
                   .err_pos = err_pos,
                   .max_nodes = max_nodes};
    if (err && errlen)
        err[0] = '\0';
    json_t *v = parse_value(&ps);
    if (v) {
        skip_ws(&ps);
        if (ps.p != ps.end) {
            json_decref(v);
            v = fail(&ps, "end of input expected");
        }
    }
    free(ps.scratch);
    if (info) {
        info->nodes = ps.nodes;
        info->too_many = ps.too_many;
        info->id_off = ps.too_many && ps.id_at ? (size_t)(ps.id_at - buf) : 0;
        info->id_len = ps.too_many && ps.id_at ? ps.id_len : 0;
    }
    return v;
}

size_t json_pick(const json_t *obj, const jkey_t *keys, size_t n, json_t **out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    size_t members = json_object_size(obj); /* 0 for NULL and non-objects */
    if (members == 0 || n == 0)
        return 0;
    json_t *o = (json_t *)obj; /* jansson's iterators take a non-const object; nothing changes */
    size_t found = 0;
    if (members > JSON_PICK_WALK_MAX) {
        for (size_t i = 0; i < n; i++)
            found += (out[i] = json_object_getn(o, keys[i].s, keys[i].n)) != NULL;
        return found;
    }
    for (void *it = json_object_iter(o); it && found < n; it = json_object_iter_next(o, it)) {
        size_t kl = json_object_iter_key_len(it);
        const char *k = NULL;
        for (size_t i = 0; i < n; i++) {
            if (out[i] || keys[i].n != kl)
                continue;
            if (!k)
                k = json_object_iter_key(it);
            if (memcmp(keys[i].s, k, kl) == 0) {
                out[i] = json_object_iter_value(it);
                found++;
                break;
            }
        }
    }
    return found;
}

json_t *json_stringn_lossy(const char *s, size_t len)
{
    json_t *v = s ? json_stringn(s, len) : NULL;
    if (v || !s)
        return v;
    /* the rare case (a header's obs-text, a name cut to fit inside a character): each byte
     * that starts no valid sequence becomes U+FFFD, 3 bytes */
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    while (p < end) {
        size_t n = utf8_seq(p, end);
        if (n) {
            memcpy(out + o, p, n);
            p += n;
            o += n;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            p++;
            o += 3;
        }
    }
    v = json_stringn_nocheck(out, o);
    free(out);
    return v;
}

json_t *json_string_lossy(const char *s)
{
    return s ? json_stringn_lossy(s, strlen(s)) : NULL;
}
