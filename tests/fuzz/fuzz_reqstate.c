/* libFuzzer harness: requestState tokens and request routing (src/wire/reqstate.c,
 * src/wire/route.c). A 2026-07-28 client sends params.requestState back as it likes; the HTTP
 * thread reads its payload's record id to route the retry (reqstate_peek_record, unverified),
 * and the worker verifies it (reqstate_open). One thread: libFuzzer's.
 *
 * Input: a mode byte, then three NUL-separated fields: a token or payload, a Mcp-Session-Id
 * value and a body.
 *   - the first field as a token as it comes: peeking names a record only as a valid id;
 *     opening with the harness key succeeds only for an object with an integer "e" in the
 *     future (and then names the same record peeking does); a token over REQSTATE_MAX never
 *     opens;
 *   - the first field as JSON text for a payload (an object; with mode & 1 its "e" is set in
 *     the future): the token minted for it opens to an equal payload (payloads whose strings
 *     hold U+0000 aside: the server's never do), peeks to its "r" exactly when that is an id,
 *     and no longer opens once one character is changed (at a place the input picks) or once
 *     opened with another key;
 *   - the body (a message, as parsed from a POST) and the session id through route_request,
 *     then route_stateless: a refusal says why, a session, task or record route carries a
 *     valid id as its key, the handle is a valid id or NULL, and the node id is one of them. */
#include "fuzz.h"

#include "core/jsonparse.h"
#include "core/util.h"
#include "wire/jsonrpc.h"
#include "wire/reqstate.h"
#include "wire/route.h"

#include <errno.h>

#define NOW 1800000000000LL

static const unsigned char KEY[REQSTATE_KEY_LEN] = "fuzz-reqstate-key-0123456789abcd";
static const unsigned char OTHER[REQSTATE_KEY_LEN] = "another-key-0123456789abcdefghij";

static const char *record_of(const json_t *p)
{
    const char *r = json_string_value(json_object_get(p, "r"));
    return r && strlen(r) == json_string_length(json_object_get(p, "r")) && session_id_valid(r)
               ? r
               : NULL;
}

static void check_token(const char *tok)
{
    char rid[SESSION_ID_LEN + 1];
    memset(rid, 0x7f, sizeof rid);
    int peek = reqstate_peek_record(tok, rid);
    FUZZ_CHECK(peek == 0 || peek == -1);
    if (peek == 0)
        FUZZ_CHECK(session_id_valid(rid));
    json_t *p = NULL;
    int rc = reqstate_open(KEY, tok, NOW, &p);
    FUZZ_CHECK(rc == 0 || rc == -EBADMSG || rc == -ETIME);
    if (rc != 0) {
        FUZZ_CHECK(p == NULL);
        return;
    }
    FUZZ_CHECK(strlen(tok) <= REQSTATE_MAX);
    FUZZ_CHECK(json_is_object(p) && json_is_integer(json_object_get(p, "e")) &&
               json_integer_value(json_object_get(p, "e")) > NOW);
    const char *r = record_of(p);
    FUZZ_CHECK((peek == 0) == (r != NULL));
    if (r)
        FUZZ_CHECK(strcmp(r, rid) == 0);
    json_decref(p);
}

static bool holds_nul(const char *text)
{
    return strstr(text, "\\u0000") != NULL;
}

static void check_mint(const char *text, size_t len, uint8_t mode, uint32_t where, uint8_t to)
{
    json_t *p = json_parse_buf(text, len, NULL, 0, NULL);
    if (!json_is_object(p)) {
        json_decref(p);
        return;
    }
    if (mode & 1)
        json_object_set_new(p, "e", json_integer(NOW + 60000));
    char *tok = reqstate_mint(KEY, p);
    FUZZ_CHECK(tok != NULL && strchr(tok, '.') != NULL);
    size_t tl = strlen(tok);
    char *dump = json_dumps(p, JSON_COMPACT);
    json_t *e = json_object_get(p, "e");
    bool opens = tl <= REQSTATE_MAX && !holds_nul(dump) && json_is_integer(e) &&
                 json_integer_value(e) > NOW;
    json_t *back = NULL;
    int rc = reqstate_open(KEY, tok, NOW, &back);
    if (opens) {
        FUZZ_CHECK(rc == 0 && json_equal(back, p));
    } else if (tl > REQSTATE_MAX) {
        FUZZ_CHECK(rc == -EBADMSG);
    }
    json_decref(back);
    back = NULL;
    FUZZ_CHECK(reqstate_open(OTHER, tok, NOW, &back) == -EBADMSG && back == NULL);
    if (tl <= REQSTATE_MAX && !holds_nul(dump)) {
        char rid[SESSION_ID_LEN + 1];
        const char *r = record_of(p);
        int peek = reqstate_peek_record(tok, rid);
        FUZZ_CHECK((peek == 0) == (r != NULL));
        if (r)
            FUZZ_CHECK(strcmp(rid, r) == 0);
    }
    /* one character changed: never opens */
    size_t at = where % tl;
    char c = (char)to;
    if (c != tok[at] && c != '\0') {
        tok[at] = c;
        FUZZ_CHECK(reqstate_open(KEY, tok, NOW, &back) != 0 && back == NULL);
    }
    free(dump);
    free(tok);
    json_decref(p);
}

static void check_route(const char *sid, const char *body, size_t blen, uint8_t mode)
{
    json_t *msg = json_parse_buf(body, blen, NULL, 0, NULL);
    if (!msg)
        return;
    jr_view_t v = {0};
    const char *why = NULL;
    jr_kind_t k = json_is_array(msg) ? JR_INVALID : jsonrpc_classify_view(msg, &why, &v);
    const char *method = json_string_value(v.method);
    bool is_init = k == JR_REQUEST && method && strcmp(method, "initialize") == 0;
    static const char *const VERSIONS[] = {NULL, "2026-07-28", "2025-11-25", "2027-01-01"};
    route_in_t in = {
        .verb = (mode >> 1 & 3) == 1   ? ROUTE_GET
                : (mode >> 1 & 3) == 2 ? ROUTE_DELETE
                                       : ROUTE_POST,
        .stateless_on = mode & 8,
        .session_id = mode & 16 ? NULL : sid,
        .version = VERSIONS[mode >> 5 & 3],
        .body = msg,
        .view = &v,
        .is_init = is_init,
    };
    route_t r;
    memset(&r, 0x7f, sizeof r);
    route_request(&in, &r);
    if (r.kind == ROUTE_REFUSED) {
        FUZZ_CHECK(r.err != ROUTE_OK && route_node_id(&r) == NULL);
        json_decref(msg);
        return;
    }
    FUZZ_CHECK(r.err == ROUTE_OK);
    if (r.kind == ROUTE_SESSION)
        FUZZ_CHECK(session_id_valid(r.key) && in.session_id && strcmp(r.key, sid) == 0);
    if (r.kind == ROUTE_STATELESS) {
        FUZZ_CHECK(in.verb == ROUTE_POST && in.stateless_on && !in.session_id);
        const char *handle = json_string_value(json_object_get(v.params, "handle"));
        route_stateless(&v, handle, &r);
        FUZZ_CHECK(r.kind == ROUTE_STATELESS || r.kind == ROUTE_TASK || r.kind == ROUTE_RECORD);
        FUZZ_CHECK(r.handle == NULL || (r.handle == handle && session_id_valid(r.handle)));
        if (r.kind == ROUTE_STATELESS)
            FUZZ_CHECK(r.key[0] == '\0');
        else
            FUZZ_CHECK(session_id_valid(r.key));
        const char *node = route_node_id(&r);
        FUZZ_CHECK(node == NULL || node == r.handle || node == r.key);
    }
    json_decref(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t mode = fuzz_u8(&in);
    uint32_t where = fuzz_u32(&in);
    uint8_t to = fuzz_u8(&in);
    size_t tlen = 0, blen = 0;
    char *tok = fuzz_field(&in, 0, &tlen);
    char *sid = fuzz_field(&in, 0, NULL);
    char *body = fuzz_rest(&in, &blen);
    if (tok) {
        check_token(tok);
        check_mint(tok, tlen, mode, where, to);
    }
    check_route(sid ? sid : "", body, blen, mode);
    free(body);
    free(sid);
    free(tok);
    return 0;
}
