/* Authentication and scopes of /mcp requests, and the Protected Resource Metadata route (see
 * oauth.h). HTTP threads only; each thread has its own verified-token cache, so no lock is
 * taken on a cache hit. */
#include "http/oauth.h"

#include "http/internal.h"

#include "core/auth.h"
#include "core/authz.h"
#include "core/issuer.h"
#include "core/jwt.h"
#include "core/log.h"
#include "core/stats.h"
#include "wire/jsonrpc.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- the verified-token cache: 4-way set-associative, per HTTP thread ---- */

#define OC_WAYS 4
#define OC_SETS 2048

typedef struct oc_entry {
    unsigned char key[32]; /* SHA-256 of the token */
    int64_t exp;           /* 0: empty */
    char who[OAUTH_WHO_LEN + 1];
    char *scope;           /* owned */
} oc_entry_t;

typedef struct oc {
    oc_entry_t e[OC_SETS][OC_WAYS];
} oc_t;

static oc_t *g_caches[64]; /* by HTTP thread index; each touched by its thread alone */

static oc_t *cache_of(http_thread_t *t)
{
    uint32_t i = t ? t->idx : 0;
    if (i >= 64)
        return NULL;
    if (!g_caches[i])
        g_caches[i] = xcalloc(1, sizeof(oc_t));
    return g_caches[i];
}

static oc_entry_t *cache_find(oc_t *c, const unsigned char key[32], int64_t now)
{
    uint32_t set;
    memcpy(&set, key, sizeof set);
    oc_entry_t *s = c->e[set % OC_SETS];
    for (int w = 0; w < OC_WAYS; w++)
        if (s[w].exp && memcmp(s[w].key, key, 32) == 0)
            return now <= s[w].exp + g_authz.leeway ? &s[w] : NULL;
    return NULL;
}

static void cache_put(oc_t *c, const unsigned char key[32], const jwt_claims_t *cl, const char *who)
{
    uint32_t set;
    memcpy(&set, key, sizeof set);
    oc_entry_t *s = c->e[set % OC_SETS], *victim = &s[0];
    for (int w = 0; w < OC_WAYS; w++) {
        if (!s[w].exp || memcmp(s[w].key, key, 32) == 0) {
            victim = &s[w];
            break;
        }
        if (s[w].exp < victim->exp) /* the one that expires first goes */
            victim = &s[w];
    }
    free(victim->scope);
    memcpy(victim->key, key, 32);
    victim->exp = cl->exp;
    memcpy(victim->who, who, OAUTH_WHO_LEN + 1);
    victim->scope = xstrdup(cl->scope);
}

void http_oauth_free(void)
{
    for (int i = 0; i < 64; i++) {
        if (!g_caches[i])
            continue;
        for (int s = 0; s < OC_SETS; s++)
            for (int w = 0; w < OC_WAYS; w++)
                free(g_caches[i]->e[s][w].scope);
        free(g_caches[i]);
        g_caches[i] = NULL;
    }
}

/* ---- challenges ---- */

bool http_auth_on(void)
{
    return g_auth.n || g_authz.on;
}

typedef enum { CH_NONE, CH_INVALID, CH_SCOPE } challenge_t;

/* 401 or 403 with the challenge; need: the scopes the request needs ("" for none). */
static void challenge(struct evhttp_request *req, const json_t *id, challenge_t kind,
                      const char *need, const char *why)
{
    STAT_INC(auth_rejected_total);
    char h[2048];
    if (!g_authz.on) { /* static tokens alone: no metadata to point at */
        snprintf(h, sizeof h, kind == CH_NONE ? "Bearer realm=\"mcpactord\""
                                              : "Bearer realm=\"mcpactord\", error=\"invalid_token\"");
    } else {
        int n = snprintf(h, sizeof h, "Bearer ");
        if (kind == CH_INVALID)
            n += snprintf(h + n, sizeof h - (size_t)n,
                          "error=\"invalid_token\", error_description=\"%s\", ", why);
        else if (kind == CH_SCOPE)
            n += snprintf(h + n, sizeof h - (size_t)n, "error=\"insufficient_scope\", ");
        if (*need && n > 0 && (size_t)n < sizeof h)
            n += snprintf(h + n, sizeof h - (size_t)n, "scope=\"%s\", ", need);
        if (n > 0 && (size_t)n < sizeof h)
            snprintf(h + n, sizeof h - (size_t)n, "resource_metadata=\"%s\"", g_authz.prm_url);
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", h);
    char msg[1400];
    if (kind == CH_NONE)
        snprintf(msg, sizeof msg, "Unauthorized: send Authorization: Bearer <token>");
    else if (kind == CH_INVALID)
        snprintf(msg, sizeof msg, "Unauthorized: the bearer token is not valid%s%s", why ? ": " : "",
                 why ? why : "");
    else
        snprintf(msg, sizeof msg, "Forbidden: insufficient scope: this request needs %s", need);
    http_reply_error(req, id, kind == CH_SCOPE ? 403 : 401, MCP_ERR_BAD_REQUEST, msg, NULL);
}

static void unavailable(struct evhttp_request *req, const json_t *id, const char *why,
                        const char *retry)
{
    STAT_INC(auth_unavailable_total);
    char msg[300];
    snprintf(msg, sizeof msg, "Service Unavailable: %s; retry", why);
    http_reply_error(req, id, 503, MCP_ERR_BAD_REQUEST, msg, retry);
}

/* ---- what a request needs ---- */

static void add_tool_need(const json_t *msg, char *need, size_t n)
{
    if (!json_is_object(msg) || !jsonrpc_str_is(json_object_get(msg, "method"), "tools/call"))
        return;
    const char *tool = json_string_value(json_object_get(json_object_get(msg, "params"), "name"));
    authz_scope_union(need, n, authz_tool_scopes(tool));
}

static void needed_scopes(const json_t *body, char *need, size_t n)
{
    need[0] = '\0';
    authz_scope_union(need, n, g_authz.required);
    if (json_is_array(body)) {
        size_t i;
        const json_t *m;
        json_array_foreach(body, i, m)
            add_tool_need(m, need, n);
    } else {
        add_tool_need(body, need, n);
    }
}

/* ---- the token ---- */

/* The token of "Bearer <token>" (scheme in any case), trailing spaces cut; NULL when the
 * header is absent or names another scheme. */
static const char *bearer(const char *h, size_t *len)
{
    if (!h)
        return NULL;
    while (*h == ' ')
        h++;
    if (strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n && h[n - 1] == ' ')
        n--;
    *len = n;
    return n ? h : NULL;
}

static void who_of(const char *sub, char who[OAUTH_WHO_LEN + 1])
{
    unsigned char d[32];
    unsigned int dl = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, g_authz.issuer, strlen(g_authz.issuer));
    EVP_DigestUpdate(ctx, "\n", 1);
    EVP_DigestUpdate(ctx, sub, strlen(sub));
    EVP_DigestFinal_ex(ctx, d, &dl);
    EVP_MD_CTX_free(ctx);
    static const char hex[] = "0123456789abcdef";
    who[0] = 'o';
    who[1] = ':';
    for (int i = 0; i < 16; i++) {
        who[2 + 2 * i] = hex[d[i] >> 4];
        who[3 + 2 * i] = hex[d[i] & 15];
    }
    who[OAUTH_WHO_LEN] = '\0';
}

/* Verifies a JWT (cache first). True with *scope and who set; false after answering. */
static bool check_jwt(http_thread_t *t, struct evhttp_request *req, const json_t *id,
                      const char *tok, size_t len, const char *need, const char **scope,
                      char who[64])
{
    int64_t now = (int64_t)time(NULL);
    unsigned char key[32];
    EVP_Digest(tok, len, key, NULL, EVP_sha256(), NULL);
    oc_t *c = cache_of(t);
    oc_entry_t *e = c ? cache_find(c, key, now) : NULL;
    if (e) {
        STAT_INC(auth_cache_hits_total);
        memcpy(who, e->who, OAUTH_WHO_LEN + 1);
        *scope = e->scope;
        return true;
    }
    jwks_t *keys = issuer_keys();
    if (!keys) {
        issuer_refresh();
        unavailable(req, id, "the authorization server's signing keys are not available yet",
                    "2");
        return false;
    }
    if (now_mono_ms() / 1000 > jwks_fetched(keys) + jwks_max_age(keys))
        issuer_refresh(); /* in the background: this request uses the set it has */
    jwt_expect_t ex = {g_authz.issuer, g_authz.resource, now, g_authz.leeway};
    jwt_claims_t cl;
    const char *why = NULL;
    jwt_result_t r = jwt_verify(tok, len, keys, &ex, &cl, &why);
    jwks_unref(keys);
    if (r == JWT_UNKNOWN_KID && issuer_refresh()) {
        /* key rotation: the fetch under way may bring it */
        unavailable(req, id, "the token's signing key is being fetched from the authorization "
                    "server", "1");
        return false;
    }
    if (r != JWT_OK) {
        challenge(req, id, CH_INVALID, need, why);
        return false;
    }
    STAT_INC(auth_jwt_verified_total);
    who_of(cl.sub, who);
    log_debug("auth: a token of %s for subject %s is principal %s", g_authz.issuer, cl.sub, who);
    if (c) {
        cache_put(c, key, &cl, who);
        *scope = cache_find(c, key, now)->scope;
    } else {
        *scope = "";
    }
    return true;
}

bool http_authorize(http_thread_t *t, struct evhttp_request *req, const char *authorization,
                    const json_t *body, const json_t *id, char who[64])
{
    who[0] = '\0';
    if (!http_auth_on())
        return true;
    char need[1024] = "";
    if (g_authz.on)
        needed_scopes(body, need, sizeof need);
    size_t len = 0;
    const char *tok = bearer(authorization, &len);
    if (!tok) {
        if (authorization)
            challenge(req, id, CH_INVALID, need,
                      g_authz.on ? "send Authorization: Bearer <token>" : NULL);
        else
            challenge(req, id, CH_NONE, need, NULL);
        return false;
    }
    if (g_auth.n) {
        /* static tokens first: constant-time, and never subject to scopes (the operator's) */
        const char *name = auth_check(&g_auth, authorization);
        if (name) {
            str_copy(who, 64, name);
            return true;
        }
    }
    if (!g_authz.on) {
        challenge(req, id, CH_INVALID, need, NULL);
        return false;
    }
    if (len > JWT_MAX_LEN) {
        challenge(req, id, CH_INVALID, need, "the token is too long");
        return false;
    }
    if (!jwt_looks_like(tok, len)) {
        challenge(req, id, CH_INVALID, need, "the token is not a JWT this server can verify");
        return false;
    }
    const char *scope = "";
    if (!check_jwt(t, req, id, tok, len, need, &scope, who))
        return false;
    if (!scopes_cover(scope, need)) {
        challenge(req, id, CH_SCOPE, need, NULL);
        return false;
    }
    return true;
}

/* ---- Protected Resource Metadata ---- */

bool http_serve_prm(struct evhttp_request *req)
{
    if (!g_authz.on)
        return false;
    const char *uri = evhttp_request_get_uri(req);
    size_t plen = strcspn(uri, "?");
    static const char root[] = "/.well-known/oauth-protected-resource";
    bool match = (plen == strlen(g_authz.prm_path) && strncmp(uri, g_authz.prm_path, plen) == 0) ||
                 (plen == sizeof root - 1 && strncmp(uri, root, plen) == 0) ||
                 (plen == sizeof root + 3 && strncmp(uri, root, sizeof root - 1) == 0 &&
                  strncmp(uri + sizeof root - 1, "/mcp", 4) == 0);
    if (!match)
        return false;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        http_reply_error(req, NULL, 405, MCP_ERR_BAD_REQUEST, "Method Not Allowed: use GET", NULL);
        return true;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "max-age=300");
    http_send_reply(req, 200, "application/json", g_authz.metadata, g_authz.metadata_len, NULL,
                    NULL);
    return true;
}
