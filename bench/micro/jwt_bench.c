/* Micro-benchmark: what a JWT access token costs the server (core/jwt.c). A token's first use is
 * a whole jwt_verify (split, base64url, JSON, signature, claims); every later use of the same
 * token is its cache key, a SHA-256 of the token, and a lookup (http/oauth.c). Prints both, per
 * algorithm, in microseconds. The keys are made here and each token signed here, with OpenSSL.
 *
 * Run: meson test -C build --benchmark --suite micro -v (or build/bench/micro-jwt [N]). */
#include "core/b64.h"
#include "core/crypto.h"
#include "core/jwt.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ISS "http://127.0.0.1:9000"
#define AUD "http://127.0.0.1:8080/mcp"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char *b64u(const void *p, size_t n)
{
    char *out = malloc(B64_ENCODED_SIZE(n));
    b64_encode(p, n, out, true);
    return out;
}

static json_t *public_jwk(EVP_PKEY *k, const char *kid)
{
    unsigned char buf[600];
    size_t len = 0;
    if (EVP_PKEY_is_a(k, "ED25519")) {
        len = sizeof buf;
        EVP_PKEY_get_raw_public_key(k, buf, &len);
        char *x = b64u(buf, len);
        json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "kty", "OKP", "crv", "Ed25519", "kid", kid,
                              "x", x);
        free(x);
        return j;
    }
    if (EVP_PKEY_is_a(k, "EC")) {
        EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, buf, sizeof buf, &len);
        char *x = b64u(buf + 1, 32), *y = b64u(buf + 33, 32);
        json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "kty", "EC", "crv", "P-256", "kid", kid,
                              "x", x, "y", y);
        free(x);
        free(y);
        return j;
    }
    BIGNUM *n = NULL, *e = NULL;
    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n);
    EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &e);
    unsigned char eb[8];
    int nl = BN_bn2bin(n, buf), el = BN_bn2bin(e, eb);
    char *ns = b64u(buf, (size_t)nl), *es = b64u(eb, (size_t)el);
    json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "kty", "RSA", "kid", kid, "n", ns, "e", es);
    free(ns);
    free(es);
    BN_free(n);
    BN_free(e);
    return j;
}

/* header.claims.signature, signed with alg by key (ECDSA as r || s). */
static char *sign_token(const char *alg, EVP_PKEY *key, const char *kid)
{
    char head[128], body[400];
    snprintf(head, sizeof head, "{\"alg\":\"%s\",\"typ\":\"at+jwt\",\"kid\":\"%s\"}", alg, kid);
    long long t = (long long)time(NULL);
    snprintf(body, sizeof body,
             "{\"iss\":\"" ISS "\",\"aud\":\"" AUD "\",\"sub\":\"bench-client\",\"client_id\":"
             "\"bench-client\",\"scope\":\"mcp:tools mcp:read\",\"iat\":%lld,\"exp\":%lld,"
             "\"jti\":\"0123456789abcdef\"}", t, t + 3600);
    char *hb = b64u(head, strlen(head)), *bb = b64u(body, strlen(body));
    size_t mlen = strlen(hb) + strlen(bb) + 1;
    char *msg = malloc(mlen + 1);
    snprintf(msg, mlen + 1, "%s.%s", hb, bb);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    EVP_DigestSignInit(ctx, &pctx, strcmp(alg, "EdDSA") == 0 ? NULL : EVP_sha256(), NULL, key);
    if (alg[0] == 'P') {
        EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
        EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
    }
    unsigned char sig[512];
    size_t slen = sizeof sig;
    EVP_DigestSign(ctx, sig, &slen, (unsigned char *)msg, mlen);
    EVP_MD_CTX_free(ctx);
    if (strcmp(alg, "ES256") == 0) {
        const unsigned char *p = sig;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)slen);
        BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, 32);
        BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + 32, 32);
        ECDSA_SIG_free(es);
        slen = 64;
    }
    char *sb = b64u(sig, slen);
    size_t tlen = mlen + 1 + strlen(sb) + 1;
    char *tok = malloc(tlen);
    snprintf(tok, tlen, "%s.%s", msg, sb);
    free(hb), free(bb), free(msg), free(sb);
    return tok;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    if (n < 1)
        n = 1;
    struct {
        const char *alg, *kid;
        EVP_PKEY *key;
    } algs[] = {
        {"ES256", "ec", EVP_EC_gen("P-256")},
        {"RS256", "rsa", EVP_RSA_gen(2048)},
        {"PS256", "rsa", NULL},
        {"EdDSA", "ed", EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")},
    };
    algs[2].key = algs[1].key;
    json_t *keys = json_array();
    json_array_append_new(keys, public_jwk(algs[0].key, "ec"));
    json_array_append_new(keys, public_jwk(algs[1].key, "rsa"));
    json_array_append_new(keys, public_jwk(algs[3].key, "ed"));
    json_t *doc = json_pack("{s:o}", "keys", keys);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    char why[200];
    jwks_t *set = jwks_parse(text, strlen(text), why, sizeof why);
    free(text);
    if (!set) {
        fprintf(stderr, "micro-jwt: the key set does not parse: %s\n", why);
        return 1;
    }
    printf("JWT access tokens, %d verifications each (2048-bit RSA, P-256, Ed25519)\n", n);
    printf("%-6s %6s %16s %22s\n", "alg", "bytes", "first use (us)", "cached: SHA-256 (us)");
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        char *tok = sign_token(algs[i].alg, algs[i].key, algs[i].kid);
        size_t len = strlen(tok);
        jwt_expect_t ex = {ISS, AUD, (int64_t)time(NULL), 30};
        jwt_claims_t cl;
        const char *w = "";
        double t0 = now_s();
        for (int k = 0; k < n; k++) {
            if (jwt_verify(tok, len, set, &ex, &cl, &w) != JWT_OK) {
                fprintf(stderr, "micro-jwt: %s does not verify: %s\n", algs[i].alg, w);
                return 1;
            }
        }
        double verify_us = (now_s() - t0) * 1e6 / n;
        unsigned char d[SHA256_LEN];
        int m = n * 50;
        t0 = now_s();
        for (int k = 0; k < m; k++)
            sha256(tok, len, d);
        double hash_us = (now_s() - t0) * 1e6 / m;
        printf("%-6s %6zu %16.1f %22.2f\n", algs[i].alg, len, verify_us, hash_us);
        free(tok);
    }
    jwks_unref(set);
    EVP_PKEY_free(algs[0].key);
    EVP_PKEY_free(algs[1].key);
    EVP_PKEY_free(algs[3].key);
    return 0;
}
