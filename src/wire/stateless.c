/* Threads: any thread (pure functions). */
/* MCP 2026-07-28 (stateless) on the wire. Pure functions, any thread. */
#include "wire/stateless.h"

#include "core/b64.h"
#include "core/jsonparse.h"
#include "core/methodtable.h"
#include "core/util.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const json_t *meta_of(const json_t *body)
{
    return json_object_get(json_object_get(body, "params"), "_meta");
}

bool stateless_claims(const json_t *body, const char *version_hdr)
{
    if (json_is_object(body) && json_object_get(meta_of(body), META_PROTOCOL_VERSION))
        return true;
    size_t i;
    const json_t *item;
    json_array_foreach(body, i, item) /* a batch claims it when one of its messages does */
        if (json_is_object(item) && json_object_get(meta_of(item), META_PROTOCOL_VERSION))
            return true;
    /* "2026-07-28" and every later date; a session-era version never compares that high */
    return version_hdr && strcmp(version_hdr, "2026") >= 0 && !proto_find(version_hdr);
}

json_t *stateless_supported_versions(void)
{
    json_t *a = json_array();
    json_array_append_new(a, json_string(MODERN_VERSION));
    for (const proto_t *p = proto_latest(); p; p = proto_older(p))
        json_array_append_new(a, json_string(p->version));
    return a;
}

int stateless_check_meta(const json_t *params, char *msg, size_t msglen, json_t **data)
{
    *data = NULL;
    if (params && !json_is_object(params)) {
        snprintf(msg, msglen, "Invalid params: params must be an object");
        return JSONRPC_INVALID_PARAMS;
    }
    const json_t *meta = json_object_get(params, "_meta");
    if (!json_is_object(meta)) {
        snprintf(msg, msglen, "Invalid params: params._meta is required (an object with %s and %s)",
                 META_PROTOCOL_VERSION, META_CLIENT_CAPS);
        return JSONRPC_INVALID_PARAMS;
    }
    static const jkey_t KEYS[] = {JKEY(META_PROTOCOL_VERSION), JKEY(META_CLIENT_CAPS),
                                  JKEY(META_CLIENT_INFO), JKEY(META_LOG_LEVEL)};
    json_t *mv[4];
    json_pick(meta, KEYS, 4, mv);
    const json_t *pv = mv[0];
    if (!json_is_string(pv)) {
        snprintf(msg, msglen, "Invalid params: params._meta[\"%s\"] is required (a string)",
                 META_PROTOCOL_VERSION);
        return JSONRPC_INVALID_PARAMS;
    }
    if (!json_is_object(mv[1])) {
        snprintf(msg, msglen, "Invalid params: params._meta[\"%s\"] is required (an object)",
                 META_CLIENT_CAPS);
        return JSONRPC_INVALID_PARAMS;
    }
    const json_t *ci = mv[2];
    if (ci && !json_is_object(ci)) {
        snprintf(msg, msglen, "Invalid params: params._meta[\"%s\"] must be an object",
                 META_CLIENT_INFO);
        return JSONRPC_INVALID_PARAMS;
    }
    const json_t *ll = mv[3];
    if (ll) {
        static const char *const LEVELS[] = {"debug", "info",     "notice", "warning",
                                             "error", "critical", "alert",  "emergency"};
        bool ok = false;
        for (size_t i = 0; i < 8 && !ok; i++)
            ok = jsonrpc_str_is(ll, LEVELS[i]);
        if (!ok) {
            snprintf(msg, msglen,
                     "Invalid params: params._meta[\"%s\"] must be one of debug, info, notice, "
                     "warning, error, critical, alert, emergency",
                     META_LOG_LEVEL);
            return JSONRPC_INVALID_PARAMS;
        }
    }
    if (!jsonrpc_str_is(pv, MODERN_VERSION)) {
        char quoted[64];
        jsonrpc_quote_name(pv, quoted, sizeof quoted);
        snprintf(msg, msglen, "Unsupported protocol version: %s", quoted);
        *data = json_pack("{s:o,s:O}", "supported", stateless_supported_versions(), "requested",
                          pv);
        return MCP_ERR_UNSUPPORTED_VERSION;
    }
    return 0;
}

/* The maps whose members are settings objects too (ClientCapabilities.extensions and
 * .experimental: { [key: string]: JSONObject }). */
static bool is_map_of_settings(const char *key)
{
    return strcmp(key, "extensions") == 0 || strcmp(key, "experimental") == 0;
}

static bool caps_all_objects(const json_t *caps)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)caps, k, v) {
        if (!json_is_object(v))
            return false;
        if (is_map_of_settings(k)) {
            const char *k2;
            const json_t *v2;
            json_object_foreach((json_t *)v, k2, v2)
                if (!json_is_object(v2))
                    return false;
        }
    }
    return true;
}

json_t *stateless_declared_caps(json_t *caps)
{
    if (!json_is_object(caps))
        return NULL;
    if (caps_all_objects(caps)) /* what clients send: kept as it is, no copy */
        return json_incref(caps);
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(caps, k, v) {
        if (!json_is_object(v))
            continue;
        if (!is_map_of_settings(k)) {
            json_object_set(out, k, v);
            continue;
        }
        json_t *m = json_object();
        const char *k2;
        json_t *v2;
        json_object_foreach(v, k2, v2)
            if (json_is_object(v2))
                json_object_set(m, k2, v2);
        json_object_set_new(out, k, m);
    }
    return out;
}

/* A plain header value: visible ASCII, spaces and tabs only inside. */
static bool plain_ok(const char *v, size_t n)
{
    if (n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (!(c == ' ' || c == '\t' || (c >= 0x21 && c <= 0x7e)))
            return false;
    }
    return true;
}

int stateless_header_decode(const char *v, char *out, size_t outsize, size_t *outlen)
{
    size_t n = strlen(v);
    static const char PRE[] = "=?base64?", SUF[] = "?=";
    if (n >= sizeof PRE - 1 + sizeof SUF - 1 && memcmp(v, PRE, sizeof PRE - 1) == 0 &&
        memcmp(v + n - 2, SUF, 2) == 0) {
        const char *b = v + sizeof PRE - 1;
        size_t bl = n - (sizeof PRE - 1) - 2;
        /* b64_decode may write bl / 4 * 3 + 3 bytes, up to 5 more than the value holds (its
         * padding, then the NUL): a value that fits but leaves out no room for that is decoded
         * aside, so what fits is accepted whatever its encoding costs */
        size_t room = bl / 4 * 3 + 3;
        if (bl / 4 * 3 > outsize + 1) /* more than outsize - 1 bytes, whatever the padding */
            return -1;
        unsigned char *dst = room <= outsize ? (unsigned char *)out : xmalloc(room);
        long got = b64_decode(b, bl, dst, false);
        if (got >= 0 && (size_t)got + 1 > outsize)
            got = -1;
        if (dst != (unsigned char *)out) {
            if (got > 0)
                memcpy(out, dst, (size_t)got);
            free(dst);
        }
        if (got < 0)
            return -1;
        out[got] = '\0';
        *outlen = (size_t)got;
        return 0;
    }
    if (!plain_ok(v, n) || n + 1 > outsize)
        return -1;
    memcpy(out, v, n + 1);
    *outlen = n;
    return 0;
}

const char *stateless_check_headers(const jr_view_t *v, const char *version_hdr,
                                    const char *method_hdr, const char *name_hdr, char *msg,
                                    size_t msglen)
{
    const json_t *pv = json_object_get(json_object_get(v->params, "_meta"), META_PROTOCOL_VERSION);
    char q[80];
    if (!version_hdr) {
        snprintf(msg, msglen, "Header mismatch: the MCP-Protocol-Version header is required");
        return msg;
    }
    if (!jsonrpc_str_is(pv, version_hdr)) {
        jsonrpc_quote_name(pv, q, sizeof q);
        snprintf(msg, msglen,
                 "Header mismatch: MCP-Protocol-Version header value '%.40s' does not match "
                 "_meta value '%s'",
                 version_hdr, q);
        return msg;
    }
    const json_t *method = v->method;
    if (!method_hdr) {
        snprintf(msg, msglen, "Header mismatch: the Mcp-Method header is required");
        return msg;
    }
    if (!jsonrpc_str_is(method, method_hdr)) {
        jsonrpc_quote_name(method, q, sizeof q);
        snprintf(msg, msglen,
                 "Header mismatch: Mcp-Method header value '%.60s' does not match body value '%s'",
                 method_hdr, q);
        return msg;
    }
    /* Mcp-Name mirrors the params member the method table names as the method's target */
    const char *field = method_rule(stats_method_of(method_hdr))->target;
    if (!field)
        return NULL;
    const json_t *src = json_object_get(v->params, field);
    if (src && !json_is_string(src))
        return NULL; /* invalid params (the method's -32602: SEP-2663 for a taskId), which no
                        header value can mirror: the method answers it, whatever the header */
    if (!name_hdr) { /* required whatever the body holds (SEP-2243) */
        snprintf(msg, msglen, "Header mismatch: the Mcp-Name header is required for %s",
                 method_hdr);
        return msg;
    }
    static _Thread_local char dec[MODERN_HEADER_VALUE_MAX + 1];
    size_t dl;
    if (stateless_header_decode(name_hdr, dec, sizeof dec, &dl) != 0) {
        snprintf(msg, msglen,
                 "Header mismatch: Mcp-Name holds characters a header may not carry, or "
                 "malformed =?base64?...?= (non-ASCII values are sent base64-encoded)");
        return msg;
    }
    if (!src)
        return NULL; /* no target in the body: the method's own -32602 */
    if (json_string_length(src) != dl || memcmp(json_string_value(src), dec, dl) != 0) {
        jsonrpc_quote_name(src, q, sizeof q);
        snprintf(msg, msglen,
                 "Header mismatch: Mcp-Name header value '%.60s' does not match params.%s '%s'",
                 name_hdr, field, q);
        return msg;
    }
    return NULL;
}

stateless_method_t stateless_method_kind(const char *method)
{
    const method_rule_t *r = method_rule(stats_method_of(method)); /* NULL: "other" */
    if (r->eras & METHOD_ERA_MODERN)
        return MM_KNOWN;
    if (r->removed_in && strcmp(r->removed_in, MODERN_VERSION) <= 0)
        return MM_REMOVED;
    return MM_UNKNOWN;
}

int stateless_http_status(int code)
{
    switch (code) {
    case JSONRPC_METHOD_NOT_FOUND:
        return 404;
    case JSONRPC_PARSE_ERROR:
    case JSONRPC_INVALID_REQUEST:
    case MCP_ERR_HEADER_MISMATCH:
    case MCP_ERR_MISSING_CAPABILITY:
    case MCP_ERR_UNSUPPORTED_VERSION:
        return 400;
    case MCP_ERR_NOT_HERE:
        return 503; /* with Retry-After (actor_reply_text) */
    default:
        return 200;
    }
}

int stateless_error_code(int code)
{
    if (code == MCP_ERR_RESOURCE_NOT_FOUND)
        return JSONRPC_INVALID_PARAMS;
    if (code == MCP_ERR_HEADER_MISMATCH || code == MCP_ERR_MISSING_CAPABILITY ||
        code == MCP_ERR_UNSUPPORTED_VERSION)
        return code;
    if (code <= -32020 && code >= -32099) /* -32042 among them */
        return JSONRPC_INTERNAL_ERROR;
    return code;
}

const char *stateless_input_capability(const char *method)
{
    if (strcmp(method, "elicitation/create") == 0)
        return "elicitation";
    if (strcmp(method, "sampling/createMessage") == 0)
        return "sampling";
    if (strcmp(method, "roots/list") == 0)
        return "roots";
    return NULL;
}

void stateless_decorate(json_t *result, const json_t *server_info, stats_method_t m,
                        long long ttl_ms, bool private_scope, bool retry)
{
    json_t *type = json_object_get(result, "resultType");
    if (!type)
        json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    if (server_info && !json_object_get(meta, META_SERVER_INFO))
        json_object_set(meta, META_SERVER_INFO, (json_t *)server_info);
    if (!(method_rule(m)->flags & METHOD_CACHE_HINTS) ||
        (type && !jsonrpc_str_is(type, "complete")))
        return;
    if (retry) {
        ttl_ms = 0;
        private_scope = true;
    }
    if (!json_object_get(result, "ttlMs"))
        json_object_set_new(result, "ttlMs", json_integer(ttl_ms));
    if (!json_object_get(result, "cacheScope"))
        json_object_set_new(result, "cacheScope",
                            json_string(private_scope ? "private" : "public"));
}

const char *stateless_answer_problem(const char *method, const json_t *ans)
{
    if (!json_is_object(ans))
        return "is not an object";
    if (strcmp(method, "elicitation/create") == 0) {
        const json_t *act = json_object_get(ans, "action");
        if (!jsonrpc_str_is(act, "accept") && !jsonrpc_str_is(act, "decline") &&
            !jsonrpc_str_is(act, "cancel"))
            return "is not an ElicitResult (action must be accept, decline or cancel)";
    } else if (strcmp(method, "sampling/createMessage") == 0) {
        if (!json_object_get(ans, "role") || !json_object_get(ans, "content"))
            return "is not a CreateMessageResult (role and content are required)";
    } else if (strcmp(method, "roots/list") == 0) {
        if (!json_is_array(json_object_get(ans, "roots")))
            return "is not a ListRootsResult (roots must be an array)";
    }
    return NULL;
}
