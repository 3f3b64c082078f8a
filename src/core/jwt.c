/* Threads: any thread (pure functions). */
/* JWT access tokens and JSON Web Key Sets with OpenSSL 3 (see jwt.h). Pure; any thread.
 *
 * The order of the checks is the point of this file: the size first, then the shape, then the
 * header (the algorithm is refused before any key is looked at), then the key (by kid, and
 * only one that fits the algorithm), then the signature, and only then the claims: the claims
 * of a token whose signature does not verify are never parsed (jwt_check_claims, in
 * jwt_claims.c). */
#include "core/jwt.h"
#include "core/jwt_internal.h"

#include "core/b64.h"
#include "core/jsonparse.h"
#include "core/util.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { KTY_RSA = 1, KTY_EC, KTY_OKP };
enum { CRV_NONE = 0, CRV_P256, CRV_P384, CRV_ED25519 };
enum { PAD_NONE = 0, PAD_PKCS1, PAD_PSS };

typedef struct alg {
    const char *name;
    int kty, crv;
    const char *md; /* NULL: EdDSA signs the message itself */
    int pad;
    size_t sig_len; /* ECDSA: r || s, each half of it; 0: any (RSA: the modulus decides) */
} alg_t;

/* The algorithms a token may use; `none` and HS* are absent on purpose. */
static const alg_t ALGS[] = {
    {"RS256", KTY_RSA, CRV_NONE, "SHA256", PAD_PKCS1, 0},
    {"RS384", KTY_RSA, CRV_NONE, "SHA384", PAD_PKCS1, 0},
    {"RS512", KTY_RSA, CRV_NONE, "SHA512", PAD_PKCS1, 0},
    {"PS256", KTY_RSA, CRV_NONE, "SHA256", PAD_PSS, 0},
    {"PS384", KTY_RSA, CRV_NONE, "SHA384", PAD_PSS, 0},
    {"PS512", KTY_RSA, CRV_NONE, "SHA512", PAD_PSS, 0},
    {"ES256", KTY_EC, CRV_P256, "SHA256", PAD_NONE, 64},
    {"ES384", KTY_EC, CRV_P384, "SHA384", PAD_NONE, 96},
    {"EdDSA", KTY_OKP, CRV_ED25519, NULL, PAD_NONE, 64},
};

typedef struct jwk {
    char kid[128];
    bool has_kid;
    int kty, crv;
    char alg[16]; /* "" when the JWK names none */
    EVP_PKEY *pkey;
} jwk_t;

struct jwks {
    atomic_int refs;
    int64_t fetched, max_age;
    size_t n;
    jwk_t keys[];
};

/* ---- base64url ---- */

/* Decodes a base64url member into a new buffer (NULL when absent, malformed, or longer than
 * max bytes once decoded). */
static unsigned char *b64u_member(const json_t *o, const char *name, size_t max, size_t *outlen)
{
    const json_t *v = json_object_get(o, name);
    if (!json_is_string(v))
        return NULL;
    size_t len = json_string_length(v);
    if (len == 0 || len / 4 * 3 + 3 > max + 3)
        return NULL;
    unsigned char *out = xmalloc(len / 4 * 3 + 3);
    long n = b64_decode(json_string_value(v), len, out, true);
    if (n <= 0 || (size_t)n > max) {
        free(out);
        return NULL;
    }
    *outlen = (size_t)n;
    return out;
}

/* ---- JWK -> EVP_PKEY ---- */

static EVP_PKEY *pkey_fromdata(const char *type, OSSL_PARAM_BLD *bld)
{
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) <= 0 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    if (pkey) {
        /* a point off the curve (invalid-curve attacks) or a degenerate RSA key */
        EVP_PKEY_CTX *chk = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
        if (!chk || EVP_PKEY_public_check(chk) != 1) {
            EVP_PKEY_free(pkey);
            pkey = NULL;
        }
        EVP_PKEY_CTX_free(chk);
    }
    return pkey;
}

static EVP_PKEY *rsa_key(const json_t *k)
{
    size_t nl = 0, el = 0;
    unsigned char *n = b64u_member(k, "n", 2048, &nl); /* up to 16384 bits */
    unsigned char *e = b64u_member(k, "e", 8, &el);
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn = n ? BN_bin2bn(n, (int)nl, NULL) : NULL;
    BIGNUM *be = e ? BN_bin2bn(e, (int)el, NULL) : NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bn && be && bld && BN_num_bits(bn) >= 2048 && BN_is_odd(be) && !BN_is_one(be) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
        pkey = pkey_fromdata("RSA", bld);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    free(n);
    free(e);
    return pkey;
}

static EVP_PKEY *ec_key(const json_t *k, int crv)
{
    size_t coord = crv == CRV_P256 ? 32 : 48, xl = 0, yl = 0;
    unsigned char *x = b64u_member(k, "x", coord, &xl);
    unsigned char *y = b64u_member(k, "y", coord, &yl);
    EVP_PKEY *pkey = NULL;
    if (x && y && xl == coord && yl == coord) {
        unsigned char pub[1 + 2 * 48];
        pub[0] = 0x04; /* uncompressed point */
        memcpy(pub + 1, x, coord);
        memcpy(pub + 1 + coord, y, coord);
        OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
        if (bld &&
            OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                            crv == CRV_P256 ? "prime256v1" : "secp384r1", 0) &&
            OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, 1 + 2 * coord))
            pkey = pkey_fromdata("EC", bld);
        OSSL_PARAM_BLD_free(bld);
    }
    free(x);
    free(y);
    return pkey;
}

static EVP_PKEY *okp_key(const json_t *k)
{
    size_t xl = 0;
    unsigned char *x = b64u_member(k, "x", 32, &xl);
    EVP_PKEY *pkey = x && xl == 32 ? EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, 32)
                                   : NULL;
    free(x);
    return pkey;
}

/* One JWK into k; false when it cannot be used (it is skipped). */
static bool jwk_load(const json_t *o, jwk_t *k)
{
    memset(k, 0, sizeof *k);
    if (!json_is_object(o))
        return false;
    const json_t *use = json_object_get(o, "use"), *kid = json_object_get(o, "kid");
    const json_t *alg = json_object_get(o, "alg"), *kty = json_object_get(o, "kty");
    const json_t *crv = json_object_get(o, "crv");
    if (use && !jwt_str_is(use, "sig"))
        return false;
    if (kid) {
        if (!json_is_string(kid) || json_string_length(kid) >= sizeof k->kid)
            return false;
        strcpy(k->kid, json_string_value(kid));
        k->has_kid = true;
    }
    if (alg) {
        if (!json_is_string(alg) || json_string_length(alg) >= sizeof k->alg)
            return false;
        strcpy(k->alg, json_string_value(alg));
    }
    if (jwt_str_is(kty, "RSA")) {
        k->kty = KTY_RSA;
        k->pkey = rsa_key(o);
    } else if (jwt_str_is(kty, "EC") && (jwt_str_is(crv, "P-256") || jwt_str_is(crv, "P-384"))) {
        k->kty = KTY_EC;
        k->crv = jwt_str_is(crv, "P-256") ? CRV_P256 : CRV_P384;
        k->pkey = ec_key(o, k->crv);
    } else if (jwt_str_is(kty, "OKP") && jwt_str_is(crv, "Ed25519")) {
        k->kty = KTY_OKP;
        k->crv = CRV_ED25519;
        k->pkey = okp_key(o);
    }
    /* kty "oct" (a shared secret) and anything else: never a verification key here */
    return k->pkey != NULL;
}

jwks_t *jwks_parse(const char *json, size_t len, char *why, size_t whylen)
{
    if (len > JWKS_MAX_LEN) {
        snprintf(why, whylen, "the key set is longer than %d bytes", JWKS_MAX_LEN);
        return NULL;
    }
    char err[160];
    json_t *doc = json_parse_buf_bounded(json, len, 16 * 1024, NULL, err, sizeof err, NULL);
    const json_t *keys = json_object_get(doc, "keys");
    if (!json_is_array(keys)) {
        snprintf(why, whylen, "not a JWK Set (%s)", doc ? "no keys array" : err);
        json_decref(doc);
        return NULL;
    }
    size_t n = json_array_size(keys) < JWKS_MAX_KEYS ? json_array_size(keys) : JWKS_MAX_KEYS;
    jwks_t *set = xcalloc(1, sizeof *set + n * sizeof(jwk_t));
    atomic_init(&set->refs, 1);
    for (size_t i = 0; i < n; i++)
        if (jwk_load(json_array_get(keys, i), &set->keys[set->n]))
            set->n++;
    json_decref(doc);
    if (set->n == 0) {
        snprintf(why, whylen,
                 "the key set holds no usable signing key (RSA >= 2048 bits, EC P-256 "
                 "or P-384, OKP Ed25519)");
        jwks_unref(set);
        return NULL;
    }
    return set;
}

jwks_t *jwks_ref(jwks_t *k)
{
    if (k)
        atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed);
    return k;
}

void jwks_unref(jwks_t *k)
{
    if (!k || atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < k->n; i++)
        EVP_PKEY_free(k->keys[i].pkey);
    free(k);
}

size_t jwks_count(const jwks_t *k)
{
    return k ? k->n : 0;
}

void jwks_set_time(jwks_t *k, int64_t fetched_s, int64_t max_age_s)
{
    k->fetched = fetched_s;
    k->max_age = max_age_s;
}

int64_t jwks_fetched(const jwks_t *k)
{
    return k->fetched;
}

int64_t jwks_max_age(const jwks_t *k)
{
    return k->max_age;
}

/* ---- the token ---- */

bool jwt_looks_like(const char *token, size_t len)
{
    if (len < 10 || strncmp(token, "eyJ", 3) != 0)
        return false;
    int dots = 0;
    size_t part = 0;
    for (size_t i = 0; i < len; i++) {
        if (token[i] == '.') {
            if (part == 0 || ++dots > 2)
                return false;
            part = 0;
        } else if (!jwt_b64u_char(token[i])) {
            return false;
        } else {
            part++;
        }
    }
    return dots == 2 && part > 0;
}

/* A part of the token decoded into a new buffer (NULL: not base64url). */
static unsigned char *b64u_part(const char *s, size_t len, size_t *outlen)
{
    unsigned char *out = xmalloc(len / 4 * 3 + 3);
    long n = b64_decode(s, len, out, true);
    if (n < 0) {
        free(out);
        return NULL;
    }
    *outlen = (size_t)n;
    return out;
}

static json_t *json_part(const char *s, size_t len)
{
    size_t n = 0;
    unsigned char *raw = b64u_part(s, len, &n);
    if (!raw)
        return NULL;
    json_t *v = json_parse_buf_bounded((const char *)raw, n, JWT_MAX_NODES, NULL, NULL, 0, NULL);
    free(raw);
    if (v && !json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static bool key_fits(const jwk_t *k, const alg_t *a)
{
    return k->kty == a->kty && k->crv == a->crv && (!k->alg[0] || strcmp(k->alg, a->name) == 0);
}

/* r || s (each half of sig_len, big-endian) as the DER ECDSA-Sig-Value OpenSSL verifies. */
static unsigned char *ecdsa_der(const unsigned char *sig, size_t sig_len, int *der_len)
{
    size_t half = sig_len / 2;
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, (int)half, NULL), *s = BN_bin2bn(sig + half, (int)half, NULL);
    unsigned char *der = NULL;
    if (es && r && s && ECDSA_SIG_set0(es, r, s)) {
        r = s = NULL; /* es owns them */
        *der_len = i2d_ECDSA_SIG(es, &der);
        if (*der_len <= 0)
            der = NULL;
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return der;
}

static bool sig_ok(const jwk_t *k, const alg_t *a, const char *msg, size_t msglen,
                   const unsigned char *sig, size_t siglen)
{
    unsigned char *der = NULL;
    int der_len = 0;
    if (a->kty == KTY_EC) {
        if (siglen != a->sig_len || !(der = ecdsa_der(sig, siglen, &der_len)))
            return false;
        sig = der;
        siglen = (size_t)der_len;
    } else if (a->kty == KTY_OKP && siglen != a->sig_len) {
        return false;
    }
    bool ok = false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    const EVP_MD *md = a->md ? EVP_get_digestbyname(a->md) : NULL;
    if (ctx && (md || !a->md) && EVP_DigestVerifyInit(ctx, &pctx, md, NULL, k->pkey) == 1) {
        bool params = true;
        if (a->pad == PAD_PSS)
            /* RFC 7518 3.5: MGF1 with the same hash, salt as long as the hash */
            params = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) > 0 &&
                     EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) > 0 &&
                     EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, md) > 0;
        else if (a->pad == PAD_PKCS1)
            params = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) > 0;
        ok = params && EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)msg, msglen) == 1;
    }
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    return ok;
}

static const alg_t *alg_find(const json_t *v)
{
    if (!json_is_string(v))
        return NULL;
    for (size_t i = 0; i < sizeof ALGS / sizeof ALGS[0]; i++)
        if (jwt_str_is(v, ALGS[i].name))
            return &ALGS[i];
    return NULL;
}

static bool typ_ok(const json_t *typ)
{
    if (!json_is_string(typ))
        return false;
    const char *t = json_string_value(typ);
    return strcasecmp(t, "at+jwt") == 0 || strcasecmp(t, "application/at+jwt") == 0 ||
           strcasecmp(t, "JWT") == 0;
}

jwt_result_t jwt_verify(const char *token, size_t len, const jwks_t *keys, const jwt_expect_t *ex,
                        jwt_claims_t *out, const char **why)
{
    if (len > JWT_MAX_LEN) {
        *why = "the token is too long";
        return JWT_INVALID;
    }
    if (!jwt_looks_like(token, len)) {
        *why = "the token is not a JWT";
        return JWT_NOT_JWT;
    }
    const char *d1 = memchr(token, '.', len);
    const char *d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token));
    json_t *hdr = json_part(token, (size_t)(d1 - token));
    if (!hdr) {
        *why = "the token's header is not base64url JSON";
        return JWT_INVALID;
    }
    jwt_result_t rc = JWT_INVALID;
    json_t *claims = NULL;
    unsigned char *sig = NULL;
    const alg_t *a = alg_find(json_object_get(hdr, "alg"));
    const json_t *kid = json_object_get(hdr, "kid");
    if (!a) {
        *why = "the token's algorithm is not accepted (asymmetric signatures only)";
        goto out;
    }
    if (!typ_ok(json_object_get(hdr, "typ"))) {
        *why = "the token's typ is not at+jwt or JWT";
        goto out;
    }
    if (json_object_get(hdr, "crit")) {
        *why = "the token names a critical header extension (crit)";
        goto out;
    }
    if (kid && !json_is_string(kid)) {
        *why = "the token's kid is not a string";
        goto out;
    }
    if (!keys) {
        rc = JWT_UNKNOWN_KID;
        *why = "no signing keys are known yet";
        goto out;
    }
    size_t siglen = 0;
    sig = b64u_part(d2 + 1, len - (size_t)(d2 + 1 - token), &siglen);
    if (!sig) {
        *why = "the token's signature is not base64url";
        goto out;
    }
    bool named = false, fitted = false, verified = false;
    for (size_t i = 0; i < keys->n && !verified; i++) {
        const jwk_t *k = &keys->keys[i];
        if (kid && (!k->has_kid || !jwt_str_is(kid, k->kid)))
            continue;
        named = true;
        if (key_fits(k, a)) {
            fitted = true;
            verified = sig_ok(k, a, token, (size_t)(d2 - token), sig, siglen);
        }
    }
    if (kid && !named) {
        rc = JWT_UNKNOWN_KID;
        *why = "the token's signing key (kid) is unknown";
        goto out;
    }
    if (!verified) {
        /* without a kid, no key of the set verifying it is what a rotation looks like too:
         * the caller refetches (under the cooldown) as for an unknown kid; with one, so is a
         * key replaced under the same kid, and the caller may refetch once too (a kid whose
         * keys do not fit the algorithm is a bad token, not a rotation) */
        rc = !kid ? JWT_UNKNOWN_KID : fitted ? JWT_BAD_SIGNATURE : JWT_INVALID;
        *why = "the token's signature does not verify";
        goto out;
    }
    claims = json_part(d1 + 1, (size_t)(d2 - d1 - 1));
    if (!claims) {
        *why = "the token's claims are not base64url JSON";
        goto out;
    }
    rc = jwt_check_claims(claims, ex, false, out, why);
out:
    json_decref(hdr);
    json_decref(claims);
    free(sig);
    return rc;
}

struct jws_key {
    jwk_t k;
    const alg_t *a;
};

jws_key_t *jws_key_new(const json_t *jwk, const char *alg)
{
    /* a client's own key (a DPoP proof's): RSA at most 4096 bits, since OpenSSL's public-key
     * check of a larger modulus costs a thread tenths of a second (683 base64url characters
     * are 512 bytes) */
    const json_t *modulus = json_object_get(jwk, "n");
    if (modulus && json_is_string(modulus) && json_string_length(modulus) > 683)
        return NULL;
    json_t *name = json_string(alg ? alg : "");
    const alg_t *a = alg_find(name);
    json_decref(name);
    jwk_t k;
    if (!a || !jwk_load(jwk, &k))
        return NULL;
    if (!key_fits(&k, a)) {
        EVP_PKEY_free(k.pkey);
        return NULL;
    }
    jws_key_t *out = xmalloc(sizeof *out);
    out->k = k;
    out->a = a;
    return out;
}

bool jws_key_verify(const jws_key_t *k, const char *msg, size_t msglen, const unsigned char *sig,
                    size_t siglen)
{
    return k && sig_ok(&k->k, k->a, msg, msglen, sig, siglen);
}

void jws_key_free(jws_key_t *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->k.pkey);
    free(k);
}
