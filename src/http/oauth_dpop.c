/* Threads: HTTP threads; http_dpop_free on the main thread after they have ended. */
/* DPoP (RFC 9449) at the resource server: a DPoP-bound token must come with the DPoP scheme and
 * one valid proof for this request (method, URL, the token's hash, fresh, its jti never seen
 * before: actor/jti.c's durable replay cache), and a refusal carries both challenges. HTTP
 * threads only (http_authorize calls http_dpop_gate). */
#include "http/oauth.h"

#include "http/internal.h"

#include "actor/jti.h"
#include "core/auth.h"
#include "core/authz.h"
#include "core/crypto.h"
#include "core/dpop.h"
#include "core/issuer.h"
#include "core/jwt.h"
#include "core/log.h"
#include "core/stats.h"
#include "wire/jsonrpc.h"

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- DPoP (RFC 9449) ---- */

static dpop_keycache_t *g_dpop_keys[64]; /* DPoP proof keys by HTTP thread index; each touched
                                            by its thread alone */

void http_dpop_free(void)
{
    for (int i = 0; i < 64; i++) {
        dpop_keycache_clear(g_dpop_keys[i]);
        free(g_dpop_keys[i]);
        g_dpop_keys[i] = NULL;
    }
}

/* The answer of a DPoP refusal: status (401, or 403 for insufficient_scope, whose DPoP challenge
 * names the scope too), the DPoP challenge (error NULL: none), the Bearer challenge with the
 * metadata URL (and error="invalid_token" when bearer_invalid). */
static void dpop_answer(struct evhttp_request *req, const json_t *id, int status, const char *need,
                        const char *error, bool bearer_invalid, const char *why)
{
    STAT_INC(auth_rejected_total);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    /* room for every part at its longest (need < 1024 twice, the metadata URL < 1200, why a
     * fixed text): a header is never cut mid-value */
    char h[2 * (1024 + sizeof g_authz.prm_url + 256)];
    int n = snprintf(h, sizeof h, "DPoP algs=\"%s\"", DPOP_ALGS);
    if (error && n > 0 && (size_t)n < sizeof h)
        n += snprintf(h + n, sizeof h - (size_t)n, ", error=\"%s\"", error);
    if (error && why && n > 0 && (size_t)n < sizeof h)
        n += snprintf(h + n, sizeof h - (size_t)n, ", error_description=\"%s\"", why);
    if (status == 403 && *need && n > 0 && (size_t)n < sizeof h)
        snprintf(h + n, sizeof h - (size_t)n, ", scope=\"%s\"", need);
    evhttp_add_header(out, "WWW-Authenticate", h);
    n = snprintf(h, sizeof h, "Bearer ");
    if (bearer_invalid)
        n += snprintf(h + n, sizeof h - (size_t)n,
                      "error=\"invalid_token\", error_description=\"%s\", ", why);
    if (*need && n > 0 && (size_t)n < sizeof h)
        n += snprintf(h + n, sizeof h - (size_t)n, "scope=\"%s\", ", need);
    if (n > 0 && (size_t)n < sizeof h)
        snprintf(h + n, sizeof h - (size_t)n, "resource_metadata=\"%s\"", g_authz.prm_url);
    evhttp_add_header(out, "WWW-Authenticate", h);
    char msg[1400];
    if (status == 403)
        snprintf(msg, sizeof msg, "Forbidden: insufficient scope: this request needs %s", need);
    else
        snprintf(msg, sizeof msg, "Unauthorized: %s", why);
    http_reply_error(req, id, status, MCP_ERR_BAD_REQUEST, msg, NULL);
}

void http_dpop_refuse(struct evhttp_request *req, const json_t *id, const char *need,
                      const char *error, bool bearer_invalid, const char *why)
{
    dpop_answer(req, id, 401, need, error, bearer_invalid, why);
}

void http_dpop_challenge(struct evhttp_request *req, const json_t *id, challenge_t kind,
                         const char *need, const char *why)
{
    if (kind == CH_SCOPE)
        dpop_answer(req, id, 403, need, "insufficient_scope", false, NULL);
    else
        dpop_answer(req, id, 401, need, "invalid_token", false,
                    why ? why : "the access token is not valid");
}

static const char *method_name(enum evhttp_cmd_type c)
{
    switch (c) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    default:
        return "?";
    }
}

/* htu (RFC 9449 4.3): the URL the client addressed, without query or fragment. Its public
 * form is the resource (--auth-resource: behind a proxy the scheme, host and even the path
 * this server sees are the proxy's), so /mcp is the resource itself and /mcp/NAME (a gateway
 * path) the resource followed by "/NAME": the request's own path below /mcp, byte for byte.
 * Only /mcp and /mcp/NAME reach here (endpoint.c); NULL (no proof fits) when it does not fit
 * in buf. */
static const char *request_htu(struct evhttp_request *req, char *buf, size_t n)
{
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
    if (!path || strncmp(path, "/mcp", 4) != 0 || !path[4])
        return g_authz.resource;
    size_t rl = strlen(g_authz.resource);
    if (rl && g_authz.resource[rl - 1] == '/')
        rl--; /* a resource of "https://host/" maps /mcp/NAME to https://host/NAME */
    int w = snprintf(buf, n, "%.*s%s", (int)rl, g_authz.resource, path + 4);
    return w > 0 && (size_t)w < n ? buf : NULL;
}

/* The request's single DPoP header (NULL: none, or *twice when it came more than once). */
static const char *dpop_header(struct evhttp_request *req, bool *twice)
{
    const char *v = NULL;
    *twice = false;
    struct evkeyval *kv;
    for (kv = evhttp_request_get_input_headers(req)->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcasecmp(kv->key, "DPoP") != 0)
            continue;
        if (v)
            *twice = true;
        v = kv->value;
    }
    return v;
}

/* A token the checks above accepted, sent with the DPoP scheme or bound to a key (jkt): true
 * when it may be used (a bound token with a valid, fresh proof for this request); false after
 * answering. A bound token sent as a bearer token is refused (RFC 9449 7.2), and so is an
 * unbound token sent with the DPoP scheme (7.1: the scheme says the token is bound; accepting
 * it would let a stolen bearer token pass with any key's proof). */
bool http_dpop_gate(http_thread_t *t, struct evhttp_request *req, const json_t *id,
                    const char *need, bool dpop, const char *tok, size_t len, const char *jkt,
                    const char *who)
{
    if (!dpop) {
        http_dpop_refuse(
            req, id, need, NULL, true,
            "the token is bound to a key (DPoP): send Authorization: DPoP <token> with a "
            "DPoP proof");
        return false;
    }
    if (!jkt[0]) {
        http_dpop_refuse(req, id, need, "invalid_token", false,
                         "the token is not bound to a key (no cnf.jkt): send it as Bearer");
        return false;
    }
    bool twice;
    const char *proof = dpop_header(req, &twice);
    if (!proof || twice) {
        http_dpop_refuse(req, id, need, "invalid_dpop_proof", false,
                         twice ? "more than one DPoP header" : "no DPoP proof (the DPoP header)");
        return false;
    }
    char buf[2 * sizeof g_authz.resource];
    const char *htu = request_htu(req, buf, sizeof buf);
    uint32_t ti = t ? t->idx : 0;
    if (ti < 64 && !g_dpop_keys[ti])
        g_dpop_keys[ti] = xcalloc(1, sizeof(dpop_keycache_t));
    dpop_expect_t ex = {method_name(evhttp_request_get_command(req)),
                        htu,
                        tok,
                        len,
                        jkt,
                        (int64_t)time(NULL),
                        g_authz.leeway,
                        DPOP_MAX_AGE_S,
                        ti < 64 ? g_dpop_keys[ti] : NULL};
    dpop_proof_t p;
    const char *why = NULL;
    if (dpop_check(proof, strlen(proof), &ex, &p, &why) != 0) {
        http_dpop_refuse(req, id, need, "invalid_dpop_proof", false, why);
        return false;
    }
    jti_result_t r = jti_check(who, p.jkt, p.jti, p.jti_len, p.iat);
    switch (r) {
    case JTI_FRESH:
        STAT_INC(auth_dpop_verified_total);
        return true;
    case JTI_REPLAY:
        STAT_INC(auth_dpop_replays_total);
        http_dpop_refuse(req, id, need, "invalid_dpop_proof", false,
                         "the DPoP proof was used before (jti)");
        return false;
    case JTI_STALE:
        STAT_INC(auth_dpop_replays_total);
        http_dpop_refuse(req, id, need, "invalid_dpop_proof", false,
                         "the DPoP proof was issued before the replay cache's last sweep (iat)");
        return false;
    case JTI_SHARE:
    case JTI_FULL: {
        /* a limit (--auth-dpop-jti-max) and its share, counted as every other's */
        STAT_INC(limit_refusals_total);
        if (r == JTI_SHARE)
            STAT_INC(share_refusals_total);
        char retry[24];
        snprintf(retry, sizeof retry, "%lld", (long long)jti_retry_after());
        http_auth_unavailable(req, id,
                              r == JTI_SHARE
                                  ? "the DPoP replay cache holds this client's share of proofs "
                                    "(--principal-share of --auth-dpop-jti-max)"
                                  : "the DPoP replay cache is full (--auth-dpop-jti-max)",
                              retry);
        return false;
    }
    case JTI_UNREAD:
        http_auth_unavailable(req, id,
                              "the DPoP proof cannot be checked for a replay (the store failed to "
                              "read its replay cache: its disk is failing)",
                              "5");
        return false;
    default:
        http_auth_unavailable(req, id,
                              "the DPoP proof cannot be recorded (the store refuses writes)", "5");
        return false;
    }
}
