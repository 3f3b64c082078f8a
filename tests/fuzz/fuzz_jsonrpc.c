/* libFuzzer harness: JSON-RPC message validation (src/wire/jsonrpc.c). One thread: libFuzzer's.
 *
 * The input is a POST body. It is parsed the way the HTTP thread parses it (json_parse_buf: an
 * integer literal past the 64-bit range arrives as a real, an id that must be refused); the
 * value and, for a batch, each element go through jsonrpc_classify and jsonrpc_id_valid. A valid
 * message must survive jsonrpc_dump: one line (an SSE data line), and parsing it back gives an
 * equal value of the same kind. The replies the server builds for it (result, error,
 * notification) must classify as what they are. jsonrpc_dump of the whole value
 * (any JSON) must also give exactly the text of json_dumps(JSON_COMPACT | JSON_ENCODE_ANY), which
 * is what its writer (src/core/jsondump.c) promises. For a batch, jsonrpc_batch_repeats marks
 * exactly the requests whose id an earlier request of it has.
 */
#include "fuzz.h"

#include "core/jsonparse.h"
#include "wire/jsonrpc.h"

static jr_kind_t classify(const json_t *m)
{
    const char *why = NULL;
    jr_kind_t k = jsonrpc_classify(m, &why);
    FUZZ_CHECK(k == JR_INVALID || k == JR_REQUEST || k == JR_NOTIFICATION || k == JR_RESPONSE);
    if (k == JR_INVALID)
        FUZZ_CHECK(why != NULL && why[0] != '\0');
    return k;
}

static void check_round_trip(const json_t *m, jr_kind_t k)
{
    size_t len = 0;
    char *s = jsonrpc_dump(m, &len);
    FUZZ_CHECK(s != NULL && strlen(s) == len);
    /* compact: no raw line break, so one SSE data line carries it */
    FUZZ_CHECK(memchr(s, '\n', len) == NULL && memchr(s, '\r', len) == NULL);
    json_error_t e;
    json_t *back = json_loadb(s, len, JSON_ALLOW_NUL, &e);
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(json_equal(back, (json_t *)m));
    FUZZ_CHECK(classify(back) == k);
    json_decref(back);
    free(s);
}

static void check_replies(const json_t *m, jr_kind_t k)
{
    const json_t *id = json_object_get(m, "id");
    if (k == JR_REQUEST) {
        json_t *r = jsonrpc_result(id, json_object());
        FUZZ_CHECK(classify(r) == JR_RESPONSE);
        json_decref(r);
        r = jsonrpc_error(id, JSONRPC_INVALID_PARAMS, "Invalid params", json_string("x"));
        FUZZ_CHECK(classify(r) == JR_RESPONSE);
        json_decref(r);
    }
    /* an error for a message whose id could not be read */
    json_t *r = jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST, "Invalid Request", NULL);
    FUZZ_CHECK(classify(r) == JR_RESPONSE);
    json_decref(r);
    if (k == JR_REQUEST || k == JR_NOTIFICATION) {
        /* the server sends notifications with its own method names; a C string ends at NUL */
        const char *method = json_string_value(json_object_get(m, "method"));
        if (method[0] != '\0') {
            json_t *params = json_object_get(m, "params");
            json_t *n = jsonrpc_notification(method, params ? json_deep_copy(params) : NULL);
            FUZZ_CHECK(classify(n) == JR_NOTIFICATION);
            check_round_trip(n, JR_NOTIFICATION);
            json_decref(n);
        }
    }
}

static void check_message(const json_t *m)
{
    jr_kind_t k = classify(m);
    const json_t *id = json_is_object(m) ? json_object_get(m, "id") : NULL;
    bool id_ok = jsonrpc_id_valid(id);
    FUZZ_CHECK(id_ok == (json_is_integer(id) ||
                         (json_is_string(id) && json_string_length(id) <= JSONRPC_MAX_ID_BYTES)));
    FUZZ_CHECK(!jsonrpc_id_valid(NULL));
    switch (k) {
    case JR_REQUEST:
        FUZZ_CHECK(id_ok && json_is_string(json_object_get(m, "method")));
        break;
    case JR_NOTIFICATION:
        FUZZ_CHECK(id == NULL && json_is_string(json_object_get(m, "method")));
        break;
    case JR_RESPONSE:
        FUZZ_CHECK(json_object_get(m, "method") == NULL);
        FUZZ_CHECK((json_object_get(m, "result") == NULL) != (json_object_get(m, "error") == NULL));
        FUZZ_CHECK(id_ok || json_is_null(id));
        break;
    case JR_INVALID:
        return;
    }
    check_round_trip(m, k);
    check_replies(m, k);
}

/* Any value: the same text as jansson's compact writer, which reads back as an equal value. */
static void check_dump_matches_jansson(const json_t *v)
{
    size_t len = 0;
    char *ours = jsonrpc_dump(v, &len);
    char *theirs = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    FUZZ_CHECK(ours != NULL && theirs != NULL);
    FUZZ_CHECK(strlen(ours) == len);
    if (strcmp(ours, theirs) != 0) {
        fprintf(stderr, "jsonrpc_dump: %s\njson_dumps:   %s\n", ours, theirs);
        FUZZ_CHECK(!"jsonrpc_dump text differs from json_dumps");
    }
    json_error_t e;
    json_t *back = json_loadb(ours, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
    FUZZ_CHECK(back != NULL && json_equal(back, (json_t *)v));
    json_decref(back);
    free(theirs);
    free(ours);
}

/* jsonrpc_batch_repeats marks exactly the requests whose id (json_equal) an earlier request
 * has, against a plain quadratic scan, and jsonrpc_batch_item_why says so for them. */
static void check_repeats(const json_t *batch)
{
    size_t n = json_array_size(batch);
    if (n == 0 || n > 512)
        return;
    signed char *kinds = malloc(n), *before = malloc(n);
    const char *why;
    for (size_t i = 0; i < n; i++)
        kinds[i] = before[i] = (signed char)jsonrpc_classify(json_array_get(batch, i), &why);
    size_t marked = jsonrpc_batch_repeats(batch, kinds), want = 0;
    for (size_t i = 0; i < n; i++) {
        bool repeat = false;
        const json_t *id = json_object_get(json_array_get(batch, i), "id");
        for (size_t k = 0; k < i && before[i] == JR_REQUEST && !repeat; k++)
            repeat = before[k] == JR_REQUEST &&
                     json_equal(json_object_get(json_array_get(batch, k), "id"), (json_t *)id);
        want += repeat;
        FUZZ_CHECK(kinds[i] == (repeat ? JR_INVALID : before[i]));
        if (repeat)
            FUZZ_CHECK(
                strncmp(jsonrpc_batch_item_why(json_array_get(batch, i)), "duplicate id", 12) == 0);
    }
    FUZZ_CHECK(marked == want);
    free(kinds);
    free(before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = json_parse_buf((const char *)data, size, NULL, 0, NULL);
    if (!body)
        return 0;
    check_dump_matches_jansson(body);
    check_message(body);
    if (json_is_array(body)) {
        size_t i;
        json_t *m;
        json_array_foreach(body, i, m)
            check_message(m);
        check_repeats(body);
    }
    json_decref(body);
    return 0;
}
