/* Threads: HTTP threads; http_oauth_free on the main thread after they have ended. */
/* Authentication and scopes of /mcp requests, and the Protected Resource Metadata route (see
 * oauth.h). HTTP threads only; each thread has its own verified-token cache, so no lock is
 * taken on a cache hit. */
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
#include <openssl/evp.h>
#include <pthread.h>
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
    int64_t until;         /* Unix seconds it is good until (JWT: exp + leeway; introspected:
                              never past exp, --auth-introspection-cache at most); 0: empty */
    bool active;           /* false: an introspection said no (kept as long, so a flood of one
                              bad token does not become a flood of introspections) */
    char who[OAUTH_WHO_LEN + 1];
    char *scope;               /* owned */
    char jkt[JWT_JKT_MAX + 1]; /* cnf.jkt: a DPoP-bound token ("" for a bearer token) */
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
        if (s[w].until && memcmp(s[w].key, key, 32) == 0)
            return now <= s[w].until ? &s[w] : NULL;
    return NULL;
}

static oc_entry_t *cache_put(oc_t *c, const unsigned char key[32], int64_t until, bool active,
                             const char *scope, const char *who, const char *jkt)
{
    uint32_t set;
    memcpy(&set, key, sizeof set);
    oc_entry_t *s = c->e[set % OC_SETS], *victim = &s[0];
    for (int w = 0; w < OC_WAYS; w++) {
        if (!s[w].until || memcmp(s[w].key, key, 32) == 0) {
            victim = &s[w];
            break;
        }
        if (s[w].until < victim->until) /* the one that expires first goes */
            victim = &s[w];
    }
    free(victim->scope);
    memcpy(victim->key, key, 32);
    victim->until = until;
    victim->active = active;
    memcpy(victim->who, who, OAUTH_WHO_LEN + 1);
    victim->scope = xstrdup(scope);
    str_copy(victim->jkt, sizeof victim->jkt, jkt);
    return victim;
}

/* ---- parked requests ---- */

/* A request waiting for the auth thread (core/issuer.h). */
typedef struct hwait {
    issuer_wait_t w; /* first: the auth thread hands back this pointer */
    http_thread_t *t;
    struct evhttp_request *req;
    unsigned char key[32];
    principal_t *pr; /* the client's: holds one PR_AUTH_WAITS unit while the wait lives */
} hwait_t;

/* Per HTTP thread: the waits the auth thread handed back, and the event that wakes the thread
 * for them (made on the thread at its first park; freed by http_oauth_thread_end). */
typedef struct tpark {
    pthread_mutex_t mu;
    hwait_t *done; /* handed back, under mu */
    struct event *ev;
    int parked; /* this thread's requests out with the auth thread */
} tpark_t;

#define PARKED_MAX OAUTH_PARKED_MAX /* per HTTP thread */

static tpark_t g_park[64];
static _Thread_local hwait_t *tl_resumed; /* the wait whose request is being run again */

/* Auth thread: back to the request's HTTP thread. */
static void wait_done(issuer_wait_t *iw)
{
    hwait_t *w = (hwait_t *)iw;
    tpark_t *p = &g_park[w->t->idx];
    pthread_mutex_lock(&p->mu);
    w->w.next = (issuer_wait_t *)p->done;
    p->done = w;
    event_active(p->ev, 0, 0);
    pthread_mutex_unlock(&p->mu);
}

/* HTTP thread: each handed-back request runs again from its checks; this time the key set or
 * the introspection answer is there (or it is answered 401/503, never parked twice). */
static void on_park_done(evutil_socket_t fd, short what, void *arg)
{
    tpark_t *p = arg;
    pthread_mutex_lock(&p->mu);
    hwait_t *w = p->done;
    p->done = NULL;
    pthread_mutex_unlock(&p->mu);
    while (w) {
        hwait_t *next = (hwait_t *)w->w.next;
        p->parked--;
        tl_resumed = w;
        http_mcp_resume(w->t, w->req);
        tl_resumed = NULL;
        issuer_wait_free(&w->w);
        w = next;
    }
}

static void wait_release(issuer_wait_t *iw)
{
    hwait_t *w = (hwait_t *)iw;
    principal_give(w->pr, PR_AUTH_WAITS);
    principal_unref(w->pr);
    w->pr = NULL;
}

/* Parks req for the auth thread. True when parked (the request is answered later); false when
 * it cannot be (then the caller answers): the thread's PARKED_MAX, the auth thread's
 * ISSUER_WAITS_MAX, or the client address's share of PR_AUTH_WAITS (so one address flooding
 * random opaque tokens cannot take every place). */
static bool park(http_thread_t *t, struct evhttp_request *req, issuer_wait_kind_t kind,
                 const unsigned char key[32], const char *tok, size_t len)
{
    if (tl_resumed || !t || t->idx >= 64)
        return false; /* a request runs again once at most */
    tpark_t *p = &g_park[t->idx];
    if (!p->ev) {
        pthread_mutex_init(&p->mu, NULL);
        p->ev = event_new(t->base, -1, 0, on_park_done, p);
        if (!p->ev)
            return false;
    }
    if (p->parked >= PARKED_MAX)
        return false;
    hlink_t *link = http_link_of(t, req);
    principal_t *pr = link ? http_request_principal(req, NULL, link) : NULL;
    if (!pr || principal_take(pr, PR_AUTH_WAITS) != 0) {
        principal_unref(pr);
        return false;
    }
    hwait_t *w = xcalloc(1, sizeof *w);
    w->pr = pr;
    w->w.release = wait_release;
    w->w.kind = kind;
    w->w.done = wait_done;
    w->t = t;
    w->req = req;
    memcpy(w->key, key, 32);
    if (tok) {
        w->w.token = xmalloc(len + 1);
        memcpy(w->w.token, tok, len);
        w->w.token[len] = '\0';
        w->w.token_len = len;
    }
    if (!issuer_park(&w->w)) {
        issuer_wait_free(&w->w);
        return false;
    }
    p->parked++;
    return true;
}

void http_oauth_thread_end(http_thread_t *t)
{
    if (!t || t->idx >= 64 || !g_park[t->idx].ev)
        return;
    tpark_t *p = &g_park[t->idx];
    hwait_t *w = p->done; /* their requests went with evhttp_free */
    while (w) {
        hwait_t *next = (hwait_t *)w->w.next;
        issuer_wait_free(&w->w);
        w = next;
    }
    p->done = NULL;
    p->parked = 0;
    event_free(p->ev);
    p->ev = NULL;
    pthread_mutex_destroy(&p->mu);
}

void http_oauth_free(void)
{
    http_dpop_free();
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

/* 401 or 403 with the challenge (http/internal.h). */
void http_challenge(struct evhttp_request *req, const json_t *id, challenge_t kind,
                    const char *need, const char *why)
{
    STAT_INC(auth_rejected_total);
    /* sized from its parts, so a long scope list or metadata URL is never cut mid-value */
    size_t cap = 128 + (why ? strlen(why) : 0) + strlen(need) + strlen(g_authz.prm_url);
    char *h = xmalloc(cap);
    if (!g_authz.on) { /* static tokens alone: no metadata to point at */
        snprintf(h, cap,
                 kind == CH_NONE ? "Bearer realm=\"mcpactord\""
                                 : "Bearer realm=\"mcpactord\", error=\"invalid_token\"");
    } else {
        int n = snprintf(h, cap, "Bearer ");
        if (kind == CH_INVALID)
            n += snprintf(h + n, cap - (size_t)n,
                          "error=\"invalid_token\", error_description=\"%s\", ", why);
        else if (kind == CH_SCOPE)
            n += snprintf(h + n, cap - (size_t)n, "error=\"insufficient_scope\", ");
        if (*need && n > 0 && (size_t)n < cap)
            n += snprintf(h + n, cap - (size_t)n, "scope=\"%s\", ", need);
        if (n > 0 && (size_t)n < cap)
            snprintf(h + n, cap - (size_t)n, "resource_metadata=\"%s\"", g_authz.prm_url);
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", h);
    free(h);
    char msg[1400];
    if (kind == CH_NONE)
        snprintf(msg, sizeof msg, "Unauthorized: send Authorization: Bearer <token>");
    else if (kind == CH_INVALID)
        snprintf(msg, sizeof msg, "Unauthorized: the bearer token is not valid%s%s",
                 why ? ": " : "", why ? why : "");
    else
        snprintf(msg, sizeof msg, "Forbidden: insufficient scope: this request needs %s", need);
    http_reply_error(req, id, kind == CH_SCOPE ? 403 : 401, MCP_ERR_BAD_REQUEST, msg, NULL);
}

void http_auth_unavailable(struct evhttp_request *req, const json_t *id, const char *why,
                           const char *retry)
{
    STAT_INC(auth_unavailable_total);
    char msg[300];
    snprintf(msg, sizeof msg, "Service Unavailable: %s; retry", why);
    http_reply_retry(req, id, MCP_ERR_BAD_REQUEST, msg, retry);
}

/* ---- what a request needs ---- */

static const char *tool_need(const json_t *msg)
{
    if (!json_is_object(msg) || !jsonrpc_str_is(json_object_get(msg, "method"), "tools/call"))
        return "";
    return authz_tool_scopes(
        json_string_value(json_object_get(json_object_get(msg, "params"), "name")));
}

/* The union of what body needs into need; false when it does not fit (then need holds part of
 * it, for the challenge, and the caller checks each message on its own: covered_each). */
static bool needed_scopes(const json_t *body, char *need, size_t n)
{
    need[0] = '\0';
    bool fits = authz_scope_union(need, n, g_authz.required);
    if (json_is_array(body)) {
        size_t i;
        const json_t *m;
        json_array_foreach(body, i, m)
            fits = authz_scope_union(need, n, tool_need(m)) && fits;
    } else {
        fits = authz_scope_union(need, n, tool_need(body)) && fits;
    }
    return fits;
}

/* Whether scope covers the required scope and each message's tool scopes, one at a time (a
 * batch whose union does not fit in one list). False with need set to what the first message
 * not covered needs. */
static bool covered_each(const json_t *body, const char *scope, char *need, size_t n)
{
    if (!scopes_cover(scope, g_authz.required)) {
        str_copy(need, n, g_authz.required);
        return false;
    }
    size_t count = json_is_array(body) ? json_array_size(body) : 1;
    for (size_t i = 0; i < count; i++) {
        const char *t = tool_need(json_is_array(body) ? json_array_get(body, i) : body);
        if (!scopes_cover(scope, t)) {
            need[0] = '\0';
            authz_scope_union(need, n, g_authz.required);
            if (!authz_scope_union(need, n, t))
                str_copy(need, n, t);
            return false;
        }
    }
    return true;
}

/* ---- the token ---- */

/* One request's authorization, as its refusals need it. */
typedef struct authreq {
    http_thread_t *t;
    struct evhttp_request *req;
    const json_t *id;
    const char *need; /* the scopes it needs (for the challenge) */
    bool dpop;        /* it came with the DPoP scheme */
} authreq_t;

/* 401 invalid_token or 403 insufficient_scope: with the DPoP scheme, the DPoP challenge (RFC
 * 9449 7.1: its algs, the error there) beside the Bearer one; else the Bearer challenge. */
static void refuse(const authreq_t *a, challenge_t kind, const char *why)
{
    if (a->dpop && g_authz.on)
        http_dpop_challenge(a->req, a->id, kind, a->need, why);
    else
        http_challenge(a->req, a->id, kind, a->need, why);
}

/* The principal of a token: issuer, which claim names the subject, and its value, so a
 * client whose client_id equals a user's sub is not that user. */
static void who_of(const jwt_claims_t *cl, char who[OAUTH_WHO_LEN + 1])
{
    unsigned char d[32];
    unsigned int dl = 0;
    const char *field = cl->sub_is_client_id ? "\nclient_id\n" : "\nsub\n";
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, g_authz.issuer, strlen(g_authz.issuer));
    EVP_DigestUpdate(ctx, field, strlen(field));
    EVP_DigestUpdate(ctx, cl->sub, strlen(cl->sub));
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

/* s for a log line: bytes outside printable ASCII, quotes and backslashes as \xNN (a sub is
 * the issuer's text, and may hold a newline that forges a log line). */
static const char *loggable(const char *s, char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (; *s && o + 5 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
    return out;
}

/* Verifies a JWT (cache first). True with *scope and who set; false after answering. */
static bool check_jwt(const authreq_t *a, const char *tok, size_t len, const char **scope,
                      char who[64], char jkt[JWT_JKT_MAX + 1])
{
    http_thread_t *t = a->t;
    struct evhttp_request *req = a->req;
    const json_t *id = a->id;
    int64_t now = (int64_t)time(NULL);
    unsigned char key[32];
    sha256(tok, len, key); /* core/crypto.c: the digest fetched once */
    oc_t *c = cache_of(t);
    oc_entry_t *e = c ? cache_find(c, key, now) : NULL;
    if (e) {
        STAT_INC(auth_cache_hits_total);
        memcpy(who, e->who, OAUTH_WHO_LEN + 1);
        memcpy(jkt, e->jkt, JWT_JKT_MAX + 1);
        *scope = e->scope;
        return true;
    }
    jwks_t *keys = issuer_keys();
    if (!keys) {
        if (!(issuer_refresh() && park(t, req, ISSUER_WAIT_KEYS, key, NULL, 0)))
            http_auth_unavailable(req, id,
                                  "the authorization server's signing keys are not available yet",
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
    if ((r == JWT_UNKNOWN_KID || r == JWT_BAD_SIGNATURE) && issuer_refresh()) {
        /* key rotation (a new kid, or a new key under a kid the set has): the fetch under way
         * may bring it; the request waits for it. Within the cooldown a bad signature is 401
         * below (most likely forged), an unknown kid 503 */
        if (!park(t, req, ISSUER_WAIT_KEYS, key, NULL, 0))
            http_auth_unavailable(req, id,
                                  "the token's signing key is being fetched from the "
                                  "authorization server",
                                  "1");
        return false;
    }
    if (r == JWT_UNKNOWN_KID && !(tl_resumed && tl_resumed->w.kind == ISSUER_WAIT_KEYS)) {
        /* within the cooldown: the next fetch may bring the key (a 401 would make the client
         * throw a good token away); one that waited for a fetch and still has no key gets 401 */
        char retry[16];
        snprintf(retry, sizeof retry, "%d", issuer_cooldown_left_s());
        http_auth_unavailable(req, id,
                              "the token's signing key is not in the authorization server's key "
                              "set fetched moments ago; it is fetched again after a cooldown",
                              retry);
        return false;
    }
    if (r != JWT_OK) {
        refuse(a, CH_INVALID, why);
        return false;
    }
    STAT_INC(auth_jwt_verified_total);
    who_of(&cl, who);
    char esc[4 * JWT_SUB_MAX + 8];
    log_debug("auth: a token of %s for subject %s is principal %s", g_authz.issuer,
              loggable(cl.sub, esc, sizeof esc), who);
    memcpy(jkt, cl.jkt, JWT_JKT_MAX + 1);
    *scope = c ? cache_put(c, key, cl.exp + g_authz.leeway, true, cl.scope, who, cl.jkt)->scope
               : "";
    return true;
}

/* An opaque token, by introspection (cache first; else the request waits for the answer).
 * True with *scope and who set; false after answering or parking. */
static bool check_opaque(const authreq_t *a, const char *tok, size_t len, const char **scope,
                         char who[64], char jkt[JWT_JKT_MAX + 1])
{
    http_thread_t *t = a->t;
    struct evhttp_request *req = a->req;
    const json_t *id = a->id;
    int64_t now = (int64_t)time(NULL);
    unsigned char key[32];
    sha256(tok, len, key); /* core/crypto.c: the digest fetched once */
    oc_t *c = cache_of(t);
    oc_entry_t *e = c ? cache_find(c, key, now) : NULL;
    hwait_t *w = tl_resumed;
    if (!e && w && w->w.kind == ISSUER_WAIT_INTROSPECT && memcmp(w->key, key, 32) == 0) {
        if (w->w.outcome < 0) {
            http_auth_unavailable(req, id, w->w.why, "2");
            return false;
        }
        int64_t until = now + g_authz.introspection_cache;
        if (w->w.outcome > 0 && w->w.claims.exp && w->w.claims.exp < until)
            until = w->w.claims.exp;
        char owho[OAUTH_WHO_LEN + 1] = "";
        if (w->w.outcome > 0) {
            who_of(&w->w.claims, owho);
            char esc[4 * JWT_SUB_MAX + 8];
            log_debug("auth: an introspected token of %s for subject %s is principal %s",
                      g_authz.issuer, loggable(w->w.claims.sub, esc, sizeof esc), owho);
        }
        if (c && g_authz.introspection_cache > 0)
            e = cache_put(c, key, until, w->w.outcome > 0, w->w.claims.scope, owho,
                          w->w.claims.jkt);
        if (w->w.outcome == 0) {
            refuse(a, CH_INVALID, w->w.why);
            return false;
        }
        memcpy(who, owho, OAUTH_WHO_LEN + 1);
        memcpy(jkt, w->w.claims.jkt, JWT_JKT_MAX + 1);
        *scope = e ? e->scope : "";
        if (!e) { /* no cache: the scope check below reads the wait's claims */
            static _Thread_local char sc[JWT_SCOPE_MAX + 1];
            memcpy(sc, w->w.claims.scope, sizeof sc);
            *scope = sc;
        }
        return true;
    }
    if (e) {
        STAT_INC(auth_cache_hits_total);
        if (!e->active) {
            refuse(a, CH_INVALID, "the token is not active");
            return false;
        }
        memcpy(who, e->who, OAUTH_WHO_LEN + 1);
        memcpy(jkt, e->jkt, JWT_JKT_MAX + 1);
        *scope = e->scope;
        return true;
    }
    if (!park(t, req, ISSUER_WAIT_INTROSPECT, key, tok, len))
        http_auth_unavailable(req, id, "the token cannot be introspected now", "1");
    return false;
}

bool http_authorize(http_thread_t *t, struct evhttp_request *req, const char *authorization,
                    const json_t *body, const json_t *id, char who[64])
{
    who[0] = '\0';
    if (!http_auth_on())
        return true;
    char need[1024] = "";
    bool fits = !g_authz.on || needed_scopes(body, need, sizeof need);
    size_t len = 0;
    bool dpop = false;
    const char *tok = auth_scheme_token(authorization, &len, &dpop);
    if (!tok) {
        if (authorization)
            http_challenge(req, id, CH_INVALID, need,
                           g_authz.on ? "send Authorization: Bearer <token>" : NULL);
        else
            http_challenge(req, id, CH_NONE, need, NULL);
        return false;
    }
    if (g_auth.n) {
        /* static tokens first, whatever the scheme: constant-time, never subject to scopes (the
         * operator's), and never sent anywhere (introspection would hand the operator's secret
         * to the authorization server) */
        const char *name = auth_check_token(&g_auth, tok, len);
        if (name && dpop && g_authz.on) {
            http_dpop_refuse(req, id, need, "invalid_token", false,
                             "a static token (--auth-tokens) is not bound to a key: send it as "
                             "Bearer");
            return false;
        }
        if (name && !dpop) {
            str_copy(who, 64, name);
            return true;
        }
    }
    if (!g_authz.on) {
        http_challenge(req, id, CH_INVALID, need, NULL);
        return false;
    }
    authreq_t a = {t, req, id, need, dpop};
    if (len > JWT_MAX_LEN) {
        refuse(&a, CH_INVALID, "the token is too long");
        return false;
    }
    const char *scope = "";
    char jkt[JWT_JKT_MAX + 1] = "";
    if (!jwt_looks_like(tok, len)) {
        if (!issuer_introspects()) {
            refuse(&a, CH_INVALID, "the token is not a JWT this server can verify");
            return false;
        }
        if (!check_opaque(&a, tok, len, &scope, who, jkt))
            return false;
    } else if (!check_jwt(&a, tok, len, &scope, who, jkt)) {
        return false;
    }
    if ((jkt[0] || dpop) && !http_dpop_gate(t, req, id, need, dpop, tok, len, jkt, who))
        return false;
    if (fits ? !scopes_cover(scope, need) : !covered_each(body, scope, need, sizeof need)) {
        refuse(&a, CH_SCOPE, NULL); /* need: what the first uncovered message needs */
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
