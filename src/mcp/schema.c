/* Threads: any thread (pure functions). */
/* A small JSON Schema validator. Pure, any thread. */
#include "mcp/schema.h"

#include "core/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Steps (schema nodes visited) one validation may take: a recursive schema whose anyOf
 * branches both follow $ref doubles the work per level, and a worker must never spin on it.
 * The budget is MAX_STEPS plus STEPS_PER_VALUE for every value in the arguments, so large but
 * plain arguments (an array of 100k numbers) are checked in full. */
#define MAX_STEPS 100000
#define STEPS_PER_VALUE 16

typedef struct vctx {
    const json_t *root;
    char *err;
    size_t errlen;
    int depth;
    long steps;
    long max_steps;
    /* schema_validate_args: the integral reals accepted as "integer" by a subschema that held */
    bool collect;
    const json_t **ints;
    size_t n_ints, cap_ints;
} vctx_t;

static bool fail(vctx_t *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(vctx_t *c, const char *path, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s: %s", path, why);
    return false;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* An integral real the tool API can hand over as a json_int_t: 2^63 itself is out. */
static bool real_is_int64(double d)
{
    return isfinite(d) && floor(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

/* "integer" admits 2.0 (JSON Schema compares numbers by value) as long as it fits in 64 bits:
 * a handler reads json_int_t. The parser reads an integer literal past json_int_t as a real,
 * the nearest double, so this is where such a literal is refused; one whose nearest double is
 * -2^63 itself (-9223372036854775809 to -9223372036854776832) is -2^63 here. */
static bool is_type(const json_t *v, const char *t)
{
    if (strcmp(t, "object") == 0)
        return json_is_object(v);
    if (strcmp(t, "array") == 0)
        return json_is_array(v);
    if (strcmp(t, "string") == 0)
        return json_is_string(v);
    if (strcmp(t, "boolean") == 0)
        return json_is_boolean(v);
    if (strcmp(t, "null") == 0)
        return json_is_null(v);
    if (strcmp(t, "number") == 0)
        return json_is_number(v);
    if (strcmp(t, "integer") == 0) {
        if (json_is_integer(v))
            return true;
        return json_is_real(v) && real_is_int64(json_real_value(v));
    }
    return true; /* unknown type names do not reject */
}

static bool numbers_equal(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b))
        return json_integer_value(a) == json_integer_value(b);
    if (json_is_real(a) && json_is_real(b))
        return json_real_value(a) == json_real_value(b);
    const json_t *i = json_is_integer(a) ? a : b;
    double d = json_real_value(i == a ? b : a);
    return real_is_int64(d) && (json_int_t)d == json_integer_value(i);
}

/* Equality for enum and const: numbers by value (2 equals 2.0), the rest as json_equal. */
static bool values_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return numbers_equal(a, b);
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!values_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *key;
        const json_t *va;
        json_object_foreach((json_t *)a, key, va) {
            const json_t *vb = json_object_get(b, key);
            if (!vb || !values_equal(va, vb))
                return false;
        }
        return true;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* Notes an integral real that a "type" naming integer accepted, for schema_validate_args. */
static void note_int(vctx_t *c, const json_t *v)
{
    if (!c->collect || !json_is_real(v))
        return;
    if (c->n_ints == c->cap_ints) {
        c->cap_ints = c->cap_ints ? c->cap_ints * 2 : 8;
        c->ints = xrealloc(c->ints, c->cap_ints * sizeof *c->ints);
    }
    c->ints[c->n_ints++] = v;
}

static size_t utf8_len(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80)
            count++;
    return count;
}

static bool validate(vctx_t *c, const json_t *schema, const json_t *v, const char *path);

/* The keywords of one schema object this validator reads, found in one pass over its members
 * (a lookup per keyword cost a hash of the name each, for every value checked). */
typedef struct kw {
    const json_t *ref, *type, *enum_, *const_, *min_len, *max_len, *minimum, *maximum, *ex_min,
        *ex_max, *props, *required, *addl, *min_items, *max_items, *items, *all_of, *any_of,
        *one_of, *not_;
} kw_t;

static void gather(const json_t *schema, kw_t *k)
{
    memset(k, 0, sizeof *k);
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)schema, key, val) {
        const json_t **slot = NULL;
        switch (key[0]) {
        case '$':
            if (strcmp(key, "$ref") == 0)
                slot = &k->ref;
            break;
        case 't':
            if (strcmp(key, "type") == 0)
                slot = &k->type;
            break;
        case 'e':
            if (strcmp(key, "enum") == 0)
                slot = &k->enum_;
            else if (strcmp(key, "exclusiveMinimum") == 0)
                slot = &k->ex_min;
            else if (strcmp(key, "exclusiveMaximum") == 0)
                slot = &k->ex_max;
            break;
        case 'c':
            if (strcmp(key, "const") == 0)
                slot = &k->const_;
            break;
        case 'm':
            if (strcmp(key, "minLength") == 0)
                slot = &k->min_len;
            else if (strcmp(key, "maxLength") == 0)
                slot = &k->max_len;
            else if (strcmp(key, "minimum") == 0)
                slot = &k->minimum;
            else if (strcmp(key, "maximum") == 0)
                slot = &k->maximum;
            else if (strcmp(key, "minItems") == 0)
                slot = &k->min_items;
            else if (strcmp(key, "maxItems") == 0)
                slot = &k->max_items;
            break;
        case 'p':
            if (strcmp(key, "properties") == 0)
                slot = &k->props;
            break;
        case 'r':
            if (strcmp(key, "required") == 0)
                slot = &k->required;
            break;
        case 'a':
            if (strcmp(key, "additionalProperties") == 0)
                slot = &k->addl;
            else if (strcmp(key, "allOf") == 0)
                slot = &k->all_of;
            else if (strcmp(key, "anyOf") == 0)
                slot = &k->any_of;
            break;
        case 'i':
            if (strcmp(key, "items") == 0)
                slot = &k->items;
            break;
        case 'o':
            if (strcmp(key, "oneOf") == 0)
                slot = &k->one_of;
            break;
        case 'n':
            if (strcmp(key, "not") == 0)
                slot = &k->not_;
            break;
        default:
            break;
        }
        if (slot)
            *slot = val;
    }
}

/* sub = path + sep + name, cut to size like snprintf (no printf on the per-value path). */
static void join_path(char *sub, size_t size, const char *path, char sep, const char *name,
                      char close)
{
    size_t n = 0;
    for (const char *p = path; *p && n + 1 < size; p++)
        sub[n++] = *p;
    if (n + 1 < size)
        sub[n++] = sep;
    for (const char *p = name; *p && n + 1 < size; p++)
        sub[n++] = *p;
    if (close && n + 1 < size)
        sub[n++] = close;
    sub[n] = '\0';
}

static const json_t *resolve_ref(vctx_t *c, const char *ref)
{
    const char *name = NULL;
    const json_t *defs = NULL;
    if (strncmp(ref, "#/$defs/", 8) == 0) {
        defs = json_object_get(c->root, "$defs");
        name = ref + 8;
    } else if (strncmp(ref, "#/definitions/", 14) == 0) {
        defs = json_object_get(c->root, "definitions");
        name = ref + 14;
    } else if (strcmp(ref, "#") == 0) {
        return c->root;
    }
    return defs && name ? json_object_get(defs, name) : NULL;
}

static bool check_number(vctx_t *c, const kw_t *kw, const json_t *v, const char *path)
{
    double d = json_number_value(v);
    const json_t *k;
    char lim[64];
    if ((k = kw->minimum) && json_is_number(k) && d < json_number_value(k)) {
        snprintf(lim, sizeof lim, "%g", json_number_value(k));
        return fail(c, path, "must be >= %s", lim);
    }
    if ((k = kw->maximum) && json_is_number(k) && d > json_number_value(k)) {
        snprintf(lim, sizeof lim, "%g", json_number_value(k));
        return fail(c, path, "must be <= %s", lim);
    }
    if ((k = kw->ex_min) && json_is_number(k) && d <= json_number_value(k)) {
        snprintf(lim, sizeof lim, "%g", json_number_value(k));
        return fail(c, path, "must be > %s", lim);
    }
    if ((k = kw->ex_max) && json_is_number(k) && d >= json_number_value(k)) {
        snprintf(lim, sizeof lim, "%g", json_number_value(k));
        return fail(c, path, "must be < %s", lim);
    }
    return true;
}

static bool check_object(vctx_t *c, const kw_t *kw, const json_t *v, const char *path)
{
    const json_t *props = kw->props;
    const json_t *req = kw->required;
    char sub[512];
    if (json_is_array(req)) {
        size_t i;
        const json_t *name;
        json_array_foreach(req, i, name) {
            if (json_is_string(name) && !json_object_get(v, json_string_value(name)))
                return fail(c, path, "missing required property \"%s\"", json_string_value(name));
        }
    }
    const json_t *addl = kw->addl;
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        join_path(sub, sizeof sub, path, '.', key, 0);
        const json_t *ps = json_is_object(props) ? json_object_get(props, key) : NULL;
        if (ps) {
            if (!validate(c, ps, val, sub))
                return false;
        } else if (json_is_false(addl)) {
            return fail(c, path, "unexpected property \"%s\"", key);
        } else if (json_is_object(addl)) {
            if (!validate(c, addl, val, sub))
                return false;
        }
    }
    return true;
}

static bool check_array(vctx_t *c, const kw_t *kw, const json_t *v, const char *path)
{
    const json_t *k;
    size_t n = json_array_size(v);
    if ((k = kw->min_items) && json_is_integer(k) && (json_int_t)n < json_integer_value(k))
        return fail(c, path, "has too few items");
    if ((k = kw->max_items) && json_is_integer(k) && (json_int_t)n > json_integer_value(k))
        return fail(c, path, "has too many items");
    const json_t *items = kw->items;
    if (json_is_object(items)) {
        char sub[512], num[24];
        for (size_t i = 0; i < n; i++) {
            size_t d = sizeof num - 1, x = i;
            num[d] = '\0';
            do
                num[--d] = (char)('0' + x % 10);
            while ((x /= 10) && d);
            join_path(sub, sizeof sub, path, '[', num + d, ']');
            if (!validate(c, items, json_array_get(v, i), sub))
                return false;
        }
    }
    return true;
}

/* The "type" keyword k: a name or a list of names. */
static bool check_type(vctx_t *c, const json_t *k, const json_t *v, const char *path)
{
    bool match = false, as_int = false;
    if (json_is_string(k)) {
        match = is_type(v, json_string_value(k));
        as_int = match && strcmp(json_string_value(k), "integer") == 0;
    } else if (json_is_array(k)) {
        size_t i;
        const json_t *t;
        json_array_foreach(k, i, t) {
            if (json_is_string(t) && is_type(v, json_string_value(t))) {
                match = true;
                as_int = as_int || strcmp(json_string_value(t), "integer") == 0;
            }
        }
    } else {
        match = true;
    }
    if (as_int)
        note_int(c, v);
    if (match)
        return true;
    if (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) && json_is_string(k) &&
        strcmp(json_string_value(k), "integer") == 0)
        return fail(c, path, "is outside the 64-bit integer range");
    if (json_is_string(k))
        return fail(c, path, "expected %s, got %s", json_string_value(k), type_name(v));
    return fail(c, path, "has the wrong type (%s)", type_name(v));
}

static bool validate(vctx_t *c, const json_t *schema, const json_t *v, const char *path)
{
    if (json_is_true(schema) || !schema)
        return true;
    if (json_is_false(schema))
        return fail(c, path, "is not allowed");
    if (!json_is_object(schema))
        return true;
    if (++c->steps > c->max_steps)
        return false; /* schema_validate reports it */
    if (++c->depth > 64) {
        c->depth--;
        return fail(c, path, "schema nesting too deep");
    }
    bool ok = false;
    /* what a failing subschema noted does not count: an anyOf branch that failed, a "not" */
    size_t ints_mark = c->n_ints;
    const json_t *k;
    kw_t kw;
    gather(schema, &kw);
    if ((k = kw.ref) && json_is_string(k)) {
        const json_t *target = resolve_ref(c, json_string_value(k));
        if (!target) {
            fail(c, path, "unresolvable $ref %s", json_string_value(k));
            goto out;
        }
        if (!validate(c, target, v, path))
            goto out;
    }
    if ((k = kw.type) && !check_type(c, k, v, path))
        goto out;
    if ((k = kw.enum_) && json_is_array(k)) {
        bool found = false;
        size_t i;
        const json_t *e;
        json_array_foreach(k, i, e) {
            if (values_equal(e, v))
                found = true;
        }
        if (!found) {
            fail(c, path, "is not one of the allowed values");
            goto out;
        }
    }
    if ((k = kw.const_) && !values_equal(k, v)) {
        fail(c, path, "does not equal the required constant");
        goto out;
    }
    if (json_is_string(v)) {
        size_t n = utf8_len(json_string_value(v), json_string_length(v));
        if ((k = kw.min_len) && json_is_integer(k) && (json_int_t)n < json_integer_value(k)) {
            fail(c, path, "is too short");
            goto out;
        }
        if ((k = kw.max_len) && json_is_integer(k) && (json_int_t)n > json_integer_value(k)) {
            fail(c, path, "is too long");
            goto out;
        }
    }
    if (json_is_number(v) && !check_number(c, &kw, v, path))
        goto out;
    if (json_is_object(v) && !check_object(c, &kw, v, path))
        goto out;
    if (json_is_array(v) && !check_array(c, &kw, v, path))
        goto out;
    if ((k = kw.all_of) && json_is_array(k)) {
        size_t i;
        const json_t *s;
        json_array_foreach(k, i, s) {
            if (!validate(c, s, v, path))
                goto out;
        }
    }
    const json_t *alts[] = {kw.any_of, kw.one_of};
    for (int a = 0; a < 2; a++) {
        if ((k = alts[a]) && json_is_array(k)) {
            size_t i, matches = 0;
            const json_t *s;
            char saved[256];
            snprintf(saved, sizeof saved, "%s", c->err);
            json_array_foreach(k, i, s) {
                if (validate(c, s, v, path))
                    matches++;
            }
            snprintf(c->err, c->errlen, "%s", saved);
            if (matches == 0 || (a == 1 && matches > 1)) {
                fail(c, path, "%s",
                     a == 0 ? "matches none of anyOf" : "must match exactly one of oneOf");
                goto out;
            }
        }
    }
    if ((k = kw.not_)) {
        if (validate(c, k, v, path)) {
            fail(c, path, "matches a schema it must not match");
            goto out;
        }
        c->err[0] = '\0';
    }
    ok = true;
out:
    if (!ok)
        c->n_ints = ints_mark;
    c->depth--;
    return ok;
}

/* Values in v (v itself included), counting no further than limit. */
static long count_values(const json_t *v, long limit)
{
    long n = 1;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v) && n < limit; i++)
            n += count_values(json_array_get(v, i), limit - n);
    } else if (json_is_object(v)) {
        const char *key;
        const json_t *item;
        json_object_foreach((json_t *)v, key, item) {
            n += count_values(item, limit - n);
            if (n >= limit)
                break;
        }
    }
    return n;
}

static bool run(vctx_t *c, const json_t *schema, const json_t *value)
{
    c->max_steps += STEPS_PER_VALUE * count_values(value, 10L * 1000 * 1000);
    if (c->errlen)
        c->err[0] = '\0';
    bool ok = validate(c, schema, value, "arguments");
    if (c->steps > c->max_steps) {
        /* out of budget somewhere (perhaps under a "not"): fail closed, whatever came back */
        snprintf(c->err, c->errlen,
                 "arguments: the schema is too complex to check these arguments");
        return false;
    }
    return ok;
}

bool schema_validate(const json_t *schema, const json_t *value, char *err, size_t errlen)
{
    vctx_t c = {.root = schema, .err = err, .errlen = errlen, .max_steps = MAX_STEPS};
    return run(&c, schema, value);
}

static int ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const json_t *const *)a,
              y = (uintptr_t) * (const json_t *const *)b;
    return x < y ? -1 : x > y;
}

static bool noted(const vctx_t *c, const json_t *v)
{
    return json_is_real(v) && bsearch(&v, c->ints, c->n_ints, sizeof *c->ints, ptr_cmp);
}

/* Replaces, inside v, every noted real by the equal json integer. */
static void replace_ints(const vctx_t *c, json_t *v)
{
    if (json_is_object(v)) {
        const char *key;
        json_t *item;
        json_object_foreach(v, key, item) {
            if (noted(c, item)) /* replacing the value of an existing key keeps the iteration */
                json_object_set_new_nocheck(v, key,
                                            json_integer((json_int_t)json_real_value(item)));
            else
                replace_ints(c, item);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *item = json_array_get(v, i);
            if (noted(c, item))
                json_array_set_new(v, i, json_integer((json_int_t)json_real_value(item)));
            else
                replace_ints(c, item);
        }
    }
}

bool schema_validate_args(const json_t *schema, json_t *value, char *err, size_t errlen)
{
    vctx_t c = {
        .root = schema, .err = err, .errlen = errlen, .max_steps = MAX_STEPS, .collect = true};
    bool ok = run(&c, schema, value);
    if (ok && c.n_ints) {
        qsort(c.ints, c.n_ints, sizeof *c.ints, ptr_cmp);
        replace_ints(&c, value);
    }
    free(c.ints);
    return ok;
}
