/* Threads: any thread (pure functions; the HTTP threads check proofs). */
/* DPoP proofs (see dpop.h). Pure; any thread.
 *
 * The proof carries its own key, so the order matters more than for an access token: nothing
 * of the claims is believed before the signature verified under the header's jwk, and the jwk
 * is refused before any use when it holds a private member (a client that leaks its private key
 * in every request has no key to prove). The signature itself is core/jwt.c's, so a proof's key
 * obeys the same rules as the issuer's keys. */
#include "core/dpop.h"

#include "core/b64.h"
#include "core/crypto.h"
#include "core/jsonparse.h"
#include "core/jwt.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DPOP_MAX_NODES 64

/* ---- the thumbprint (RFC 7638) ---- */

int dpop_jwk_thumbprint(const json_t *jwk, char out[DPOP_JKT_LEN + 1])
{
    static const char *const EC[] = {"crv", "kty", "x", "y", NULL};
    static const char *const RSA[] = {"e", "kty", "n", NULL};
    static const char *const OKP[] = {"crv", "kty", "x", NULL};
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    const char *const *members = !kty                   ? NULL
                                 : !strcmp(kty, "EC")  ? EC
                                 : !strcmp(kty, "RSA") ? RSA
                                 : !strcmp(kty, "OKP") ? OKP
                                                       : NULL;
    if (!members)
        return -1;
    json_t *req = json_object();
    for (int i = 0; members[i]; i++) {
        json_t *v = json_object_get(jwk, members[i]);
        if (!json_is_string(v)) {
            json_decref(req);
            return -1;
        }
        json_object_set(req, members[i], v);
    }
    /* compact, keys sorted, UTF-8 as is: RFC 7638 3.3's serialization for these members */
    char *text = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(req);
    if (!text)
        return -1;
    unsigned char d[SHA256_LEN];
    sha256(text, strlen(text), d);
    free(text);
    char enc[B64_ENCODED_SIZE(SHA256_LEN)];
    b64_encode(d, SHA256_LEN, enc, true);
    memcpy(out, enc, DPOP_JKT_LEN);
    out[DPOP_JKT_LEN] = '\0';
    return 0;
}

/* ---- htu ---- */

typedef struct url {
    const char *scheme, *host, *path;
    size_t scheme_len, host_len, path_len;
    unsigned port; /* 0: the scheme's default */
} url_t;

/* Splits an http(s) URL; the path ends at '?' or '#'. false when it is not one. */
static bool url_split(const char *s, url_t *u)
{
    memset(u, 0, sizeof *u);
    const char *colon = strstr(s, "://");
    if (!colon)
        return false;
    u->scheme = s;
    u->scheme_len = (size_t)(colon - s);
    bool https = u->scheme_len == 5 && strncasecmp(s, "https", 5) == 0;
    if (!https && !(u->scheme_len == 4 && strncasecmp(s, "http", 4) == 0))
        return false;
    const char *a = colon + 3;
    size_t alen = strcspn(a, "/?#");
    if (alen == 0 || memchr(a, '@', alen))
        return false; /* no host, or user info (never in an htu) */
    const char *port = NULL;
    if (a[0] == '[') { /* an IPv6 literal */
        const char *close = memchr(a, ']', alen);
        if (!close)
            return false;
        u->host = a;
        u->host_len = (size_t)(close - a) + 1;
        if (u->host_len < alen) {
            if (a[u->host_len] != ':')
                return false;
            port = a + u->host_len + 1;
        }
    } else {
        const char *c = memchr(a, ':', alen);
        u->host = a;
        u->host_len = c ? (size_t)(c - a) : alen;
        port = c ? c + 1 : NULL;
    }
    if (u->host_len == 0)
        return false;
    if (port) {
        unsigned long p = 0;
        const char *q = port;
        for (; q < a + alen; q++) {
            if (*q < '0' || *q > '9' || p > 65535)
                return false;
            p = p * 10 + (unsigned long)(*q - '0');
        }
        if (q == port) /* "host:" is the default port (RFC 3986 6.2.3) */
            p = 0;
        if (p > 65535)
            return false;
        u->port = (unsigned)p == (https ? 443u : 80u) ? 0 : (unsigned)p;
    }
    u->path = a + alen;
    u->path_len = strcspn(u->path, "?#");
    return true;
}

bool dpop_htu_equal(const char *a, const char *b)
{
    url_t x, y;
    if (!a || !b || !url_split(a, &x) || !url_split(b, &y))
        return false;
    bool path_same = x.path_len == y.path_len ? memcmp(x.path, y.path, x.path_len) == 0
                     : (x.path_len == 0 && y.path_len == 1 && y.path[0] == '/') ||
                           (y.path_len == 0 && x.path_len == 1 && x.path[0] == '/');
    return x.scheme_len == y.scheme_len && strncasecmp(x.scheme, y.scheme, x.scheme_len) == 0 &&
           x.host_len == y.host_len && strncasecmp(x.host, y.host, x.host_len) == 0 &&
           x.port == y.port && path_same;
}

/* ---- the proof ---- */

static json_t *json_part(const char *s, size_t len)
{
    unsigned char *raw = xmalloc(len / 4 * 3 + 3);
    long n = b64_decode(s, len, raw, true);
    json_t *v = n < 0 ? NULL
                      : json_parse_buf_bounded((const char *)raw, (size_t)n, DPOP_MAX_NODES, NULL,
                                               NULL, 0, NULL);
    free(raw);
    if (v && !json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static bool alg_accepted(const char *alg)
{
    static const char *const ALGS[] = {"ES256", "RS256", "PS256", "EdDSA"};
    for (size_t i = 0; alg && i < sizeof ALGS / sizeof ALGS[0]; i++)
        if (strcmp(alg, ALGS[i]) == 0)
            return true;
    return false;
}

/* A JWK that is safe to use as the proof's key: an object without private or symmetric
 * members. (Whether it is a key of the algorithm's kind is the verifier's to say.) */
static bool jwk_public(const json_t *jwk)
{
    static const char *const PRIVATE[] = {"d", "p", "q", "dp", "dq", "qi", "oth", "k"};
    if (!json_is_object(jwk))
        return false;
    for (size_t i = 0; i < sizeof PRIVATE / sizeof PRIVATE[0]; i++)
        if (json_object_get(jwk, PRIVATE[i]))
            return false;
    return true;
}

static bool is_b64u(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}

/* The claims of a proof whose signature verified. */
static int check_claims(const json_t *c, const dpop_expect_t *ex, dpop_proof_t *out,
                        const char **why)
{
    const json_t *jti = json_object_get(c, "jti"), *htm = json_object_get(c, "htm");
    const json_t *htu = json_object_get(c, "htu"), *iat = json_object_get(c, "iat");
    const json_t *ath = json_object_get(c, "ath");
    if (!json_is_string(jti) || json_string_length(jti) == 0 ||
        json_string_length(jti) > DPOP_JTI_MAX) {
        *why = "the DPoP proof has no jti, or one longer than 128 bytes";
        return -1;
    }
    if (!json_is_string(htm) || !ex->htm || strcmp(json_string_value(htm), ex->htm) != 0) {
        *why = "the DPoP proof's htm is not this request's method";
        return -1;
    }
    if (!json_is_string(htu) || strlen(json_string_value(htu)) != json_string_length(htu) ||
        !dpop_htu_equal(json_string_value(htu), ex->htu)) {
        *why = "the DPoP proof's htu is not this request's URL";
        return -1;
    }
    double t = json_is_number(iat) ? json_number_value(iat) : 0;
    if (!json_is_number(iat) || !(t > -1e15 && t < 1e15)) {
        *why = "the DPoP proof has no iat";
        return -1;
    }
    int64_t at = (int64_t)t;
    if (at > ex->now + ex->leeway) {
        *why = "the DPoP proof's iat is in the future";
        return -1;
    }
    if (at < ex->now - ex->max_age - ex->leeway) {
        *why = "the DPoP proof is too old (iat)";
        return -1;
    }
    if (ex->token) {
        unsigned char d[SHA256_LEN];
        sha256(ex->token, ex->token_len, d);
        char want[B64_ENCODED_SIZE(SHA256_LEN)];
        size_t wl = b64_encode(d, SHA256_LEN, want, true);
        if (!json_is_string(ath) || json_string_length(ath) != wl ||
            memcmp(json_string_value(ath), want, wl) != 0) {
            *why = "the DPoP proof's ath is not the hash of this access token";
            return -1;
        }
    }
    memcpy(out->jti, json_string_value(jti), json_string_length(jti));
    out->jti[json_string_length(jti)] = '\0';
    out->jti_len = json_string_length(jti);
    out->iat = at;
    return 0;
}

/* ---- the key cache ---- */

void dpop_keycache_clear(dpop_keycache_t *kc)
{
    for (int i = 0; kc && i < DPOP_KEYCACHE; i++) {
        jws_key_free(kc->e[i].key);
        kc->e[i].key = NULL;
        kc->e[i].id[0] = '\0';
    }
}

/* The key of jwk for alg: from kc when there (by thumbprint, alg and the jwk's own alg, which
 * together decide what jws_key_new builds), else built and kept there. *fresh: built and not
 * kept (no cache), for the caller to free. NULL when jwk is not a key for alg. */
static jws_key_t *key_of(dpop_keycache_t *kc, const json_t *jwk, const char *alg,
                         const char *jkt, bool *fresh)
{
    /* what jws_key_new refuses beyond the id's parts, refused here too, so a cache hit never
     * accepts a jwk that a miss would not */
    const json_t *use = json_object_get(jwk, "use"), *kid = json_object_get(jwk, "kid");
    const json_t *own_alg = json_object_get(jwk, "alg");
    if ((use && !(json_is_string(use) && strcmp(json_string_value(use), "sig") == 0)) ||
        (kid && !(json_is_string(kid) && json_string_length(kid) < 128)) ||
        (own_alg && !(json_is_string(own_alg) && json_string_length(own_alg) < 16)))
        return NULL;
    const char *own = json_string_value(json_object_get(jwk, "alg"));
    char id[sizeof ((dpop_keyent_t *)0)->id];
    int n = snprintf(id, sizeof id, "%s %s %s", jkt, alg, own ? own : "");
    *fresh = false;
    if (!kc || n < 0 || (size_t)n >= sizeof id) {
        *fresh = true;
        return jws_key_new(jwk, alg);
    }
    unsigned h = 0;
    for (const char *p = jkt; *p; p++)
        h = h * 31 + (unsigned char)*p;
    dpop_keyent_t *e = &kc->e[h % DPOP_KEYCACHE];
    if (e->key && strcmp(e->id, id) == 0)
        return e->key;
    jws_key_t *k = jws_key_new(jwk, alg);
    if (!k)
        return NULL; /* a refused key is not kept: it evicts nothing */
    jws_key_free(e->key);
    e->key = k;
    memcpy(e->id, id, (size_t)n + 1);
    return k;
}

int dpop_check(const char *proof, size_t len, const dpop_expect_t *ex, dpop_proof_t *out,
               const char **why)
{
    memset(out, 0, sizeof *out);
    if (!proof || len == 0 || len > DPOP_MAX_LEN) {
        *why = len ? "the DPoP proof is too long" : "the DPoP proof is empty";
        return -1;
    }
    const char *d1 = memchr(proof, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - proof)) : NULL;
    if (!d1 || !d2 || d1 == proof || d2 == d1 + 1 || d2 + 1 == proof + len ||
        memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - proof)) || !is_b64u(proof, (size_t)(d1 - proof)) ||
        !is_b64u(d1 + 1, (size_t)(d2 - d1 - 1)) || !is_b64u(d2 + 1, len - (size_t)(d2 + 1 - proof))) {
        *why = "the DPoP proof is not a JWS (three base64url parts)";
        return -1;
    }
    json_t *hdr = json_part(proof, (size_t)(d1 - proof)), *claims = NULL;
    unsigned char *sig = NULL;
    int rc = -1;
    if (!hdr) {
        *why = "the DPoP proof's header is not base64url JSON";
        goto out;
    }
    const char *typ = json_string_value(json_object_get(hdr, "typ"));
    const char *alg = json_string_value(json_object_get(hdr, "alg"));
    const json_t *jwk = json_object_get(hdr, "jwk");
    if (!typ || strcasecmp(typ, "dpop+jwt") != 0) {
        *why = "the DPoP proof's typ is not dpop+jwt";
        goto out;
    }
    if (!alg_accepted(alg)) {
        *why = "the DPoP proof's alg is not one of " DPOP_ALGS;
        goto out;
    }
    if (json_object_get(hdr, "crit")) {
        *why = "the DPoP proof names a critical header extension (crit)";
        goto out;
    }
    if (!jwk_public(jwk)) {
        *why = "the DPoP proof's jwk is missing or holds a private key";
        goto out;
    }
    if (dpop_jwk_thumbprint(jwk, out->jkt) != 0) {
        *why = "the DPoP proof's jwk is not a key of a known type";
        goto out;
    }
    if (ex->jkt && strcmp(ex->jkt, out->jkt) != 0) { /* before the key costs anything */
        *why = "the DPoP proof's key is not the key the token is bound to (cnf.jkt)";
        goto out;
    }
    size_t slen = len - (size_t)(d2 + 1 - proof);
    sig = xmalloc(slen / 4 * 3 + 3);
    long sl = b64_decode(d2 + 1, slen, sig, true);
    bool fresh = false;
    jws_key_t *key = sl > 0 ? key_of(ex->keys, jwk, alg, out->jkt, &fresh) : NULL;
    bool ok = key && jws_key_verify(key, proof, (size_t)(d2 - proof), sig, (size_t)sl);
    if (fresh)
        jws_key_free(key); /* not kept: no cache */
    if (!ok) {
        *why = "the DPoP proof's signature does not verify with its jwk";
        goto out;
    }
    claims = json_part(d1 + 1, (size_t)(d2 - d1 - 1));
    if (!claims) {
        *why = "the DPoP proof's claims are not base64url JSON";
        goto out;
    }
    if (check_claims(claims, ex, out, why) != 0)
        goto out;
    rc = 0;
out:
    json_decref(hdr);
    json_decref(claims);
    free(sig);
    return rc;
}
