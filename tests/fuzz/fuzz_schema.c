/* libFuzzer harness: the JSON Schema subset (src/mcp/schema.c). One thread: libFuzzer's.
 *
 * Input: one byte choosing the error buffer's size, then a schema (JSON text, parsed as the
 * registry parses tool schemas) and a value (parsed as request bodies are), separated by a NUL
 * byte. Inputs nested deeper than MAX_DEPTH are skipped (bounded depth: the validator has its own
 * limit of 64 schema levels; this keeps the fuzzer on shapes a tool schema has). The error
 * buffer is malloc'd at exactly its size, so ASan reports any write or read past it.
 * Invariants: the same call twice gives the same answer; a refusal explains itself ("arguments"
 * then the reason) when the buffer has room; true and {} accept everything, false nothing;
 * schema_validate_args agrees, and its normalized arguments still validate (or, refused, are
 * left untouched).
 */
#include "fuzz.h"

#include "mcp/schema.h"

#define MAX_DEPTH 24

static int depth(const json_t *v, int limit)
{
    if (limit <= 0)
        return 1;
    int d = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            int c = depth(x, limit - 1);
            if (c > d)
                d = c;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            int c = depth(x, limit - 1);
            if (c > d)
                d = c;
        }
    }
    return d + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t b = fuzz_u8(&in);
    size_t errlen = b == 0 ? 300 : b; /* 300: what tools/call uses */
    size_t sl, vl;
    char *st = fuzz_field(&in, 0, &sl);
    if (!st)
        return 0;
    char *vt = fuzz_rest(&in, &vl);
    json_error_t e;
    json_t *schema = json_loadb(st, sl, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
    json_t *value = json_loadb(vt, vl, JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
    free(st);
    free(vt);
    if (!schema || !value || depth(schema, MAX_DEPTH + 1) > MAX_DEPTH ||
        depth(value, MAX_DEPTH + 1) > MAX_DEPTH) {
        json_decref(schema);
        json_decref(value);
        return 0;
    }
    char *err = malloc(errlen);
    FUZZ_CHECK(err != NULL);
    bool ok = schema_validate(schema, value, err, errlen);
    FUZZ_CHECK(strlen(err) < errlen);
    if (!ok && errlen >= 2) {
        /* "arguments<path>: <reason>", cut to the buffer */
        size_t m = strlen(err) < 9 ? strlen(err) : 9;
        FUZZ_CHECK(m > 0 && strncmp(err, "arguments", m) == 0);
    }
    FUZZ_CHECK(schema_validate(schema, value, err, errlen) == ok);

    /* schema_validate_args answers the same; what it normalizes (2.0 -> 2 where the schema
     * says integer) is equal by value and still valid */
    json_t *args = json_deep_copy(value);
    FUZZ_CHECK(schema_validate_args(schema, args, err, errlen) == ok);
    if (ok)
        FUZZ_CHECK(schema_validate(schema, args, err, errlen));
    else
        FUZZ_CHECK(json_equal(args, value));
    json_decref(args);

    /* the trivial schemas */
    json_t *t = json_true(), *f = json_false(), *o = json_object();
    FUZZ_CHECK(schema_validate(t, value, err, errlen));
    FUZZ_CHECK(schema_validate(o, value, err, errlen));
    FUZZ_CHECK(!schema_validate(f, value, err, errlen));
    /* the schema validating itself must not crash either */
    (void)schema_validate(schema, schema, err, errlen);
    json_decref(t);
    json_decref(f);
    json_decref(o);
    free(err);
    json_decref(schema);
    json_decref(value);
    return 0;
}
