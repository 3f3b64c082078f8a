/* JWT access tokens (RFC 9068, RFC 7519) verified against a JSON Web Key Set (RFC 7517), with
 * OpenSSL 3. Pure functions, any thread; a key set is immutable once parsed and shared by
 * reference count, so HTTP threads verify against a snapshot while the auth thread
 * (core/issuer.c) fetches the next one.
 *
 * What is accepted, and why so little:
 *  - asymmetric signatures only: RS256/384/512, PS256/384/512, ES256 (P-256), ES384 (P-384),
 *    EdDSA (Ed25519). `none` and every HS* are refused before any key is looked at, so a public
 *    key can never serve as an HMAC secret (the "algorithm confusion" attack);
 *  - a key is used only for the algorithm it fits: its kty (and crv) must be the algorithm's,
 *    its `alg` (when present) must equal the token's, its `use` (when present) must be "sig";
 *    RSA keys under 2048 bits and symmetric (`oct`) keys are dropped when the set is parsed;
 *  - header: `typ` must be at+jwt, application/at+jwt or JWT (any case); a `crit` header is
 *    refused (no extension is understood); `kid` selects the key (a token without kid is tried
 *    with each fitting key);
 *  - claims: `iss` equals the issuer, `aud` (a string or an array) holds the resource, `exp` is
 *    required and in the future, `nbf` and `iat` are not in the future (each with the leeway),
 *    `sub` or `client_id` names who it is for. The scope is `scope` (a space-separated string)
 *    or `scp` (an array of strings, or a string).
 *  - sizes are bounded: the token at JWT_MAX_LEN bytes, its JSON at JWT_MAX_NODES values. */
#ifndef MCPD_CORE_JWT_H
#define MCPD_CORE_JWT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JWT_MAX_LEN 8192
#define JWT_MAX_NODES 512
#define JWKS_MAX_LEN (256 * 1024)
#define JWKS_MAX_KEYS 64
#define JWT_SCOPE_MAX 1024 /* a longer scope claim is refused */
#define JWT_SUB_MAX 255
#define JWT_JKT_MAX 43 /* base64url of a SHA-256: a longer cnf.jkt is refused */

typedef struct jwks jwks_t;

/* Parses a JWK Set document ({"keys":[...]}). Keys that cannot be used (unknown kty or crv,
 * a small RSA modulus, use other than sig, symmetric keys, malformed members) are skipped; a
 * document with no usable key, or that is not a key set, is NULL with why. The set comes with
 * one reference. */
jwks_t *jwks_parse(const char *json, size_t len, char *why, size_t whylen);
jwks_t *jwks_ref(jwks_t *k);
void jwks_unref(jwks_t *k); /* NULL: nothing */
size_t jwks_count(const jwks_t *k);
/* Seconds (monotonic, jwks_set_time) when the set was fetched: the auth thread stamps it. */
void jwks_set_time(jwks_t *k, int64_t fetched_s, int64_t max_age_s);
int64_t jwks_fetched(const jwks_t *k);
int64_t jwks_max_age(const jwks_t *k);

typedef struct jwt_expect {
    const char *issuer;   /* iss must equal it */
    const char *audience; /* aud must hold it */
    int64_t now;          /* Unix seconds */
    int64_t leeway;       /* seconds of clock skew allowed for exp, nbf and iat */
} jwt_expect_t;

typedef enum {
    JWT_OK = 0,
    JWT_NOT_JWT, /* not three base64url parts: not for this verifier (a static or opaque token) */
    JWT_INVALID, /* malformed, refused algorithm, bad signature, or a claim that fails */
    JWT_UNKNOWN_KID,   /* well formed, but no key of the set has its kid (or, without a kid, none
                        verifies its signature): the set may be stale */
    JWT_BAD_SIGNATURE, /* keys of the set have its kid and fit its alg, and none of them
                          verifies it: forged, or the issuer changed the key and kept the kid
                          (the set may be stale) */
} jwt_result_t;

typedef struct jwt_claims {
    char sub[JWT_SUB_MAX + 1];     /* sub, or client_id when there is no sub */
    bool sub_is_client_id;         /* sub holds the client_id (a principal tags which it is) */
    char scope[JWT_SCOPE_MAX + 1]; /* space-separated, one space between scopes */
    int64_t exp;
    char jkt[JWT_JKT_MAX + 1]; /* cnf.jkt (RFC 9449 6): the token is DPoP-bound to the key of
                                  this SHA-256 JWK thumbprint; "" for a bearer token */
} jwt_claims_t;

/* Whether token has the shape of a JWS compact serialization (three non-empty base64url
 * parts, the first starting as a JSON object would: "eyJ"). Cheap; no decoding. */
bool jwt_looks_like(const char *token, size_t len);
/* Verifies token against keys and ex. JWT_OK fills out; otherwise why says what failed (a
 * fixed text, never a part of the token, so it may be logged and sent back). keys NULL: only
 * the shape and the header are looked at (JWT_UNKNOWN_KID when they pass). */
jwt_result_t jwt_verify(const char *token, size_t len, const jwks_t *keys, const jwt_expect_t *ex,
                        jwt_claims_t *out, const char **why);
/* The claims checks of jwt_verify alone, on a parsed claims set (an introspection answer:
 * introspected leaves iss and exp optional; out->exp is 0 without exp). */
jwt_result_t jwt_check_claims(const json_t *claims, const jwt_expect_t *ex, bool introspected,
                              jwt_claims_t *out, const char **why);
/* For DPoP proofs (core/dpop.c), whose key travels in their own header: the public JWK jwk as
 * a key for the algorithm named alg, with the same rules as a key set's keys (alg among the
 * accepted ones, the key's kty and crv the algorithm's, its own alg member the same when
 * present, RSA >= 2048 bits, a point on the curve, `use` sig when present); NULL when it cannot
 * be one. Building it costs more than a verification (OpenSSL's public-key check: about 4 ms
 * for RSA 2048), so a caller keeps it (core/dpop.h's key cache). Immutable: any thread. */
typedef struct jws_key jws_key_t;
jws_key_t *jws_key_new(const json_t *jwk, const char *alg);
/* Whether sig (the JWS form: r || s for ECDSA) over msg verifies under k. */
bool jws_key_verify(const jws_key_t *k, const char *msg, size_t msglen, const unsigned char *sig,
                    size_t siglen);
void jws_key_free(jws_key_t *k); /* NULL: nothing */
/* Whether the space-separated list have holds every scope of the space-separated need. */
bool scopes_cover(const char *have, const char *need);

#endif
