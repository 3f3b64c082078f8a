/* libFuzzer harness: what a 2026-07-28 request's body and version header are read for
 * (src/wire/stateless.c: stateless_claims, stateless_check_meta, stateless_method_kind) and the
 * quoting of a client's strings in error messages (src/wire/jsonrpc.c: jsonrpc_quote_name).
 * One thread: libFuzzer's.
 *
 * Input: a buffer-size byte, then a MCP-Protocol-Version value and a body (JSON text, parsed
 * as the HTTP thread parses bodies), NUL-separated.
 *   - a body whose params._meta holds the protocol-version key claims the modern era, whatever
 *     the header; a body without it claims it only through a header of "2026" or later that
 *     names no session-era version;
 *   - stateless_check_meta answers 0, -32602 or -32022 with a message, and data (the
 *     supported versions and the one requested) exactly for -32022; 0 only for a _meta whose
 *     version is 2026-07-28 and whose client capabilities are an object;
 *   - every string of the body quoted into a buffer of the input's size (1..256) is at most
 *     size - 1 bytes, a prefix of the string with U+0000 written as \u0000, cut between
 *     characters (valid UTF-8, since the string is) and never more than one character (or one
 *     \u0000) short of filling the buffer. */
#include "fuzz.h"

#include "core/jsonparse.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"
#include "wire/stateless.h"

/* The string with U+0000 written as \u0000 (malloc'd, *n bytes). */
static char *escaped(const json_t *s, size_t *n)
{
    const char *p = json_string_value(s);
    size_t len = json_string_length(s), o = 0;
    char *out = malloc(len * 6 + 1);
    if (!out)
        abort();
    for (size_t i = 0; i < len; i++) {
        if (p[i]) {
            out[o++] = p[i];
        } else {
            memcpy(out + o, "\\u0000", 6);
            o += 6;
        }
    }
    out[o] = '\0';
    *n = o;
    return out;
}

static void check_quote(const json_t *s, size_t outlen)
{
    char *out = malloc(outlen);
    if (!out)
        abort();
    jsonrpc_quote_name(s, out, outlen);
    size_t ql = strlen(out), el;
    char *full = escaped(s, &el);
    FUZZ_CHECK(ql < outlen && ql <= el && memcmp(out, full, ql) == 0);
    json_t *again = json_stringn(out, ql);
    FUZZ_CHECK(again != NULL); /* cut between characters */
    json_decref(again);
    if (ql < el) /* cut: only for want of room, by less than a character or an escape */
        FUZZ_CHECK(ql + 6 >= outlen);
    free(full);
    free(out);
}

static void quote_all(const json_t *v, size_t outlen, int depth)
{
    if (depth > 32)
        return;
    if (json_is_string(v)) {
        check_quote(v, outlen);
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            quote_all(json_array_get(v, i), outlen, depth + 1);
    } else if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
            quote_all(x, outlen, depth + 1);
    }
}

static void check_meta(const json_t *body)
{
    const json_t *params = json_object_get(body, "params");
    char msg[400];
    msg[0] = '\0';
    json_t *data = (json_t *)(uintptr_t)1;
    int code = stateless_check_meta(params, msg, sizeof msg, &data);
    FUZZ_CHECK(code == 0 || code == JSONRPC_INVALID_PARAMS || code == MCP_ERR_UNSUPPORTED_VERSION);
    if (code != 0)
        FUZZ_CHECK(msg[0] != '\0');
    FUZZ_CHECK((data != NULL) == (code == MCP_ERR_UNSUPPORTED_VERSION));
    if (data) {
        FUZZ_CHECK(json_is_array(json_object_get(data, "supported")) &&
                   json_object_get(data, "requested") != NULL);
        json_decref(data);
    }
    const json_t *meta = json_object_get(params, "_meta");
    if (code == 0) {
        const json_t *pv = json_object_get(meta, META_PROTOCOL_VERSION);
        FUZZ_CHECK(json_is_string(pv) && strcmp(json_string_value(pv), MODERN_VERSION) == 0 &&
                   json_string_length(pv) == strlen(MODERN_VERSION));
        FUZZ_CHECK(json_is_object(json_object_get(meta, META_CLIENT_CAPS)));
    }
}

static void check_claims(const json_t *body, const char *hdr)
{
    bool claims = stateless_claims(body, hdr);
    bool by_meta = json_is_object(body) &&
                   json_object_get(json_object_get(json_object_get(body, "params"), "_meta"),
                                   META_PROTOCOL_VERSION) != NULL;
    if (by_meta)
        FUZZ_CHECK(claims);
    else if (!hdr)
        FUZZ_CHECK(!claims);
    else
        FUZZ_CHECK(claims == (strcmp(hdr, "2026") >= 0 && proto_find(hdr) == NULL));
    FUZZ_CHECK(!stateless_claims(NULL, NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    size_t outlen = (size_t)fuzz_u8(&in) + 1;
    char *hdr = fuzz_field(&in, 0, NULL);
    size_t blen;
    char *text = fuzz_rest(&in, &blen);
    json_t *body = json_parse_buf(text, blen, NULL, 0, NULL);
    check_claims(body, hdr);
    if (body) {
        check_meta(body);
        quote_all(body, outlen, 0);
        const char *method = json_string_value(json_object_get(body, "method"));
        stateless_method_t k = stateless_method_kind(method);
        FUZZ_CHECK(k == MM_UNKNOWN || k == MM_REMOVED || k == MM_KNOWN);
    }
    json_decref(body);
    free(text);
    free(hdr);
    return 0;
}
