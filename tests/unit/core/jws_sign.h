/* What the JWT and DPoP unit tests share: base64url of bytes and of a key's big number, and a
 * JWS signature made with OpenSSL (each test signs its own tokens and proofs, so a case changes
 * one thing of a good one). Include after cmocka.h: the helpers assert. */
#ifndef MCPD_TESTS_UNIT_CORE_JWS_SIGN_H
#define MCPD_TESTS_UNIT_CORE_JWS_SIGN_H

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

#include "core/b64.h"

/* base64url (no padding) of n bytes, allocated. */
static char *b64u(const void *p, size_t n)
{
    char *out = malloc(B64_ENCODED_SIZE(n));
    b64_encode(p, n, out, true);
    return out;
}

/* base64url of one of k's big-number parameters (n, e, d...), allocated. */
static char *bn_b64u(const EVP_PKEY *k, const char *name)
{
    BIGNUM *bn = NULL;
    assert_int_equal(EVP_PKEY_get_bn_param(k, name, &bn), 1);
    unsigned char buf[1024];
    int n = BN_bn2bin(bn, buf);
    BN_free(bn);
    return b64u(buf, (size_t)n);
}

/* The signature of msg with alg, in JWS form (ECDSA: r || s). */
static char *sign(const char *alg, EVP_PKEY *key, const char *msg)
{
    const EVP_MD *md = strcmp(alg, "EdDSA") == 0 ? NULL
                       : strstr(alg, "384")      ? EVP_sha384()
                                                 : EVP_sha256();
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    assert_int_equal(EVP_DigestSignInit(ctx, &pctx, md, NULL, key), 1);
    if (alg[0] == 'P') {
        EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
        EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
    }
    unsigned char sig[1024];
    size_t siglen = sizeof sig;
    assert_int_equal(EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)msg, strlen(msg)), 1);
    EVP_MD_CTX_free(ctx);
    if (alg[0] == 'E' && alg[1] == 'S') {
        size_t half = strstr(alg, "384") ? 48 : 32;
        const unsigned char *p = sig;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)siglen);
        unsigned char rs[96];
        BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, (int)half);
        BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + half, (int)half);
        ECDSA_SIG_free(es);
        return b64u(rs, 2 * half);
    }
    return b64u(sig, siglen);
}

#endif
