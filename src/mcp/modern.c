/* MCP 2026-07-28: one request, one actor. Worker thread only.
 *
 * The HTTP thread has checked the request's _meta, its mirrored headers and its method
 * (wire/modern.h). Here the worker makes an actor that is never stored (actor_t.modern): it
 * carries the request's client capabilities, client info and log level for this request only,
 * serves the request through the methods both eras share (methods.c), and is freed once the
 * request is answered (worker_note_activity -> actor_discard). Its stream is the response:
 * JSON, or SSE when the call streams (progress, logs), never resumable.
 *
 * Every answer gets resultType, the server's identity in _meta and, on discover, lists and
 * reads, the caching hints (--cache-ttl-ms, --cache-private): modern_decorate. */
#include "mcp/internal.h"

#include "core/config.h"
#include "core/log.h"
#include "wire/jsonrpc.h"
#include "wire/modern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void set_cache_hints(json_t *result)
{
    if (!json_object_get(result, "ttlMs"))
        json_object_set_new(result, "ttlMs", json_integer(g_cfg.cache_ttl_ms));
    if (!json_object_get(result, "cacheScope"))
        json_object_set_new(result, "cacheScope",
                            json_string(g_cfg.cache_private ? "private" : "public"));
}

void modern_decorate(actor_t *a, call_t *c, json_t *result)
{
    (void)a;
    if (!json_is_object(result))
        return;
    if (!json_object_get(result, "resultType"))
        json_object_set_new(result, "resultType", json_string("complete"));
    json_t *meta = json_object_get(result, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(result, "_meta", meta);
    }
    if (!json_object_get(meta, META_SERVER_INFO))
        json_object_set_new(meta, META_SERVER_INFO, mcp_server_info());
    switch (c->method) {
    case SM_server_discover:
    case SM_tools_list:
    case SM_resources_list:
    case SM_resources_templates_list:
    case SM_prompts_list:
    case SM_resources_read:
        set_cache_hints(result);
        break;
    default:
        break;
    }
}

/* ---- x-mcp-header parameters ---- */

/* Compares a decoded header value with the body's value (a string, an integer or a boolean:
 * the types x-mcp-header may annotate; integers compare numerically, "42.0" equals 42). */
static bool header_matches(const json_t *v, const char *h, size_t hl)
{
    if (json_is_string(v))
        return json_string_length(v) == hl && memcmp(json_string_value(v), h, hl) == 0;
    if (json_is_boolean(v))
        return strcmp(h, json_is_true(v) ? "true" : "false") == 0;
    if (json_is_integer(v) || json_is_real(v)) {
        char *end;
        errno = 0;
        double d = strtod(h, &end);
        if (end == h || *end || errno)
            return false;
        return d == json_number_value(v);
    }
    return false;
}

/* Walks the schema's properties (only through "properties": the spec's statically reachable
 * paths) alongside the arguments. */
static const char *check_props(const json_t *schema, const json_t *args, const json_t *hdrs,
                               char *why, size_t whylen, int depth)
{
    const json_t *props = json_object_get(schema, "properties");
    if (!json_is_object(props) || depth > 16)
        return NULL;
    const char *name;
    const json_t *ps;
    json_object_foreach((json_t *)props, name, ps) {
        const json_t *v = json_is_object(args) ? json_object_get(args, name) : NULL;
        const char *hn = json_string_value(json_object_get(ps, "x-mcp-header"));
        if (hn) {
            char lower[129];
            size_t n = strlen(hn);
            if (n >= sizeof lower)
                n = sizeof lower - 1;
            for (size_t i = 0; i < n; i++)
                lower[i] = (char)(hn[i] >= 'A' && hn[i] <= 'Z' ? hn[i] + 32 : hn[i]);
            lower[n] = '\0';
            const char *raw = json_string_value(json_object_get(hdrs, lower));
            bool present = v && !json_is_null(v);
            if (present && !raw) {
                snprintf(why, whylen, "Header mismatch: the Mcp-Param-%s header is required: "
                         "argument '%s' is set", hn, name);
                return why;
            }
            if (raw) {
                static _Thread_local char dec[MODERN_HEADER_VALUE_MAX + 1];
                size_t dl;
                if (modern_header_decode(raw, dec, sizeof dec, &dl) != 0) {
                    snprintf(why, whylen, "Header mismatch: Mcp-Param-%s holds characters a header "
                             "may not carry, or malformed =?base64?...?=", hn);
                    return why;
                }
                if (!present) {
                    snprintf(why, whylen, "Header mismatch: Mcp-Param-%s was sent but argument "
                             "'%s' is not set", hn, name);
                    return why;
                }
                if (!header_matches(v, dec, dl)) {
                    snprintf(why, whylen, "Header mismatch: Mcp-Param-%s header value does not "
                             "match argument '%s'", hn, name);
                    return why;
                }
            }
        }
        if (json_is_object(ps) && json_object_get(ps, "properties") &&
            check_props(ps, v, hdrs, why, whylen, depth + 1))
            return why;
    }
    return NULL;
}

const char *modern_check_params(const json_t *input_schema, const json_t *args,
                                const json_t *param_hdrs, char *why, size_t whylen)
{
    return check_props(input_schema, args, param_hdrs, why, whylen, 0);
}

/* ---- server/discover ---- */

static json_t *discover_result(void)
{
    json_t *caps = registry_capabilities(mcp_reg());
    /* resources/subscribe does not exist in this revision; subscriptions/listen is not served
     * yet, so nothing is advertised that only it could deliver */
    json_t *res = json_object_get(caps, "resources");
    if (res)
        json_object_set_new(res, "subscribe", json_false());
    json_t *r = json_object();
    json_object_set_new(r, "supportedVersions", modern_supported_versions());
    json_object_set_new(r, "capabilities", caps);
    json_object_set_new(r, "instructions",
                        json_string("mcpactord: durable MCP server. Tools are listed by tools/list."));
    return r;
}

/* ---- the request ---- */

void mcp_handle_modern(worker_t *w, wmsg_t *m)
{
    json_t *body = m->u.post.body;
    json_t *meta = json_object_get(json_object_get(body, "params"), "_meta");
    actor_t *a = actor_create_kind(w, m->sid, true);
    STAT_INC(modern_requests_total);
    a->proto = proto_modern();
    a->client_caps = json_incref(json_object_get(meta, META_CLIENT_CAPS));
    json_t *ci = json_object_get(meta, META_CLIENT_INFO);
    a->client_info = json_is_object(ci) ? json_incref(ci) : NULL;
    /* without a level in _meta, no log message is sent for the request */
    json_t *ll = json_object_get(meta, META_LOG_LEVEL);
    a->log_level = ll ? log_level_index(json_string_value(ll)) : 8;
    a->param_hdrs = m->u.post.param_hdrs;
    m->u.post.param_hdrs = NULL;
    snprintf(a->auth_name, sizeof a->auth_name, "%s", m->u.client.auth_name);

    stream_t *s = actor_new_post_stream(a, m->u.client.conn);
    s->outstanding = 1;
    s->dispatching = true;
    const char *method = jsonrpc_cstr(json_object_get(body, "method"));
    call_t *c = actor_add_call(a, s, json_object_get(body, "id"), stats_method_of(method));
    if (m->u.client.recv_us)
        c->started_us = m->u.client.recv_us;
    if (g_cfg.response_mode == RESPONSE_SSE)
        actor_stream_start_sse(a, s);
    if (c->method == SM_server_discover) {
        STAT_INC(requests_total[SM_server_discover]);
        mcp_answer(a, c, discover_result());
    } else if (c->method == SM_subscriptions_listen) {
        STAT_INC(requests_total[SM_subscriptions_listen]);
        mcp_answer_error(a, c, JSONRPC_METHOD_NOT_FOUND,
                         "Method not found: subscriptions/listen is not served yet", NULL);
    } else {
        mcp_dispatch_request(a, c, body);
    }
    s->dispatching = false;
    if (!actor_stream_settle(a, s))
        actor_stream_arm_window(a, s);
}
