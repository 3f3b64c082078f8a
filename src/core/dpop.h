/* DPoP proofs (RFC 9449): the checks of section 4.3 on one `DPoP` header value, and the JWK
 * thumbprint (RFC 7638) that binds a token to a key. Pure functions, any thread: no clock, no
 * store. Whether a proof's jti was seen before is the replay cache's (actor/jti.h), asked by
 * the HTTP layer (http/oauth.c) only after every check here passed.
 *
 * A proof is accepted when, in this order (cheap and key-free checks first, the claims only
 * after the signature verified):
 *  - it is at most DPOP_MAX_LEN bytes and a JWS compact serialization (three base64url parts);
 *  - its header's typ is dpop+jwt, its alg one of DPOP_ALGS (never none, never HMAC), it names
 *    no crit extension, and its jwk is a public key (no private member: d, p, q, dp, dq, qi,
 *    oth; never a symmetric oct key) of the algorithm's kind;
 *  - the thumbprint of jwk equals the token's cnf.jkt (when the caller gives one): a proof of
 *    another key is refused before its key is built;
 *  - the signature verifies under that jwk (core/jwt.c's verifier, with its key rules);
 *  - jti is a string of 1..DPOP_JTI_MAX bytes; htm equals the request's method; htu equals
 *    the request's URL without query and fragment (dpop_htu_equal); iat is a number no older
 *    than max_age + leeway and no further in the future than leeway; ath (required with an
 *    access token) is base64url(SHA-256(token)). */
#ifndef MCPD_CORE_DPOP_H
#define MCPD_CORE_DPOP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DPOP_ALGS "ES256 RS256 PS256 EdDSA" /* the algs= of the challenge, the metadata's list */
#define DPOP_MAX_LEN 4096  /* a proof with a 4096-bit RSA key is about 1,900 bytes */
#define DPOP_JTI_MAX 128   /* a UUID is 36 */
#define DPOP_MAX_AGE_S 300 /* a proof older than this (plus the leeway) is refused */
#define DPOP_JKT_LEN 43    /* base64url of a SHA-256, no padding */

/* Keys of recent proofs by thumbprint and algorithm, so a client's proofs after its first cost a
 * verification, not a key check (direct-mapped; a collision replaces). Owned by one thread:
 * the HTTP layer keeps one per thread. */
#define DPOP_KEYCACHE 64
typedef struct dpop_keyent {
    char id[DPOP_JKT_LEN + 1 + 8 + 8]; /* "jkt alg own-alg"; "": empty */
    struct jws_key *key;               /* owned */
} dpop_keyent_t;
typedef struct dpop_keycache {
    dpop_keyent_t e[DPOP_KEYCACHE];
} dpop_keycache_t;
/* Frees the keys (the cache itself is the owner's). */
void dpop_keycache_clear(dpop_keycache_t *kc);

typedef struct dpop_expect {
    const char *htm;   /* the request's method ("POST") */
    const char *htu;   /* the request's URL as clients address it (its public form) */
    const char *token; /* the access token the proof goes with (ath), or NULL: no ath needed */
    size_t token_len;
    const char *jkt;       /* the token's cnf.jkt, or NULL: not compared */
    int64_t now;           /* Unix seconds */
    int64_t leeway;        /* seconds of clock skew for iat */
    int64_t max_age;       /* seconds a proof stays good after its iat (DPOP_MAX_AGE_S) */
    dpop_keycache_t *keys; /* the calling thread's key cache, or NULL */
} dpop_expect_t;

typedef struct dpop_proof {
    char jkt[DPOP_JKT_LEN + 1]; /* the thumbprint of the proof's key */
    char jti[DPOP_JTI_MAX + 1];
    size_t jti_len;
    int64_t iat;
} dpop_proof_t;

/* Checks one DPoP header value against ex. 0 fills out; -1 with why (a fixed text, never a
 * part of the proof, so it may be logged and sent back). */
int dpop_check(const char *proof, size_t len, const dpop_expect_t *ex, dpop_proof_t *out,
               const char **why);
/* The SHA-256 JWK thumbprint (RFC 7638) of a public JWK: the required members of its kty (EC:
 * crv kty x y; RSA: e kty n; OKP: crv kty x) as compact JSON in lexicographic order, hashed,
 * base64url. 0, or -1 for a kty this server does not know or a missing member. */
int dpop_jwk_thumbprint(const json_t *jwk, char out[DPOP_JKT_LEN + 1]);
/* Whether two http(s) URLs are the same for htu (RFC 9449 4.3, RFC 3986 6.2.2-6.2.3): scheme
 * and host compared without case, the scheme's default port the same as none, an empty path
 * the same as "/", and a's query and fragment ignored. The path is compared byte for byte. */
bool dpop_htu_equal(const char *a, const char *b);

#endif
