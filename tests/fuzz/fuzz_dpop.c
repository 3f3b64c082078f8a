/* libFuzzer harness: DPoP proofs and htu comparison (src/core/dpop.c). One thread: libFuzzer's.
 *
 * Input: a mode byte, then two NUL-separated parts.
 *   mode & 1 == 0: the first part is a DPoP header value as it comes (every refusal path before
 *                  and at the signature); the second part a URL compared with the first as htu;
 *   mode & 1 == 1: a JWS header and a claims set (JSON text as given) that the harness encodes
 *                  and signs with its fixed Ed25519 key; with mode & 2, the harness's public
 *                  jwk is put into the header first (when it is a JSON object), so the fuzzer
 *                  reaches the claims checks behind a good signature.
 * Invariants: a refusal always says why; an accepted proof has the harness key's thumbprint
 * (the one it was asked for), a jti of 1..DPOP_JTI_MAX bytes and an iat within the window;
 * htu equality is symmetric, and holds for a URL and itself. */
#include "fuzz.h"

#include "core/b64.h"
#include "core/crypto.h"
#include "core/dpop.h"

#include <jansson.h>
#include <openssl/evp.h>

#define HTU "http://127.0.0.1:8080/mcp"
#define TOKEN "tok"
#define NOW 1800000000
#define LEEWAY 30

static EVP_PKEY *g_key;
static json_t *g_jwk;
static char g_jkt[DPOP_JKT_LEN + 1];

static void init(void)
{
    if (g_key)
        return;
    unsigned char seed[32];
    for (int i = 0; i < 32; i++)
        seed[i] = (unsigned char)(i * 5 + 3);
    g_key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    unsigned char pub[32];
    size_t len = sizeof pub;
    FUZZ_CHECK(g_key && EVP_PKEY_get_raw_public_key(g_key, pub, &len) == 1);
    char x[B64_ENCODED_SIZE(32)];
    b64_encode(pub, 32, x, true);
    g_jwk = json_pack("{s:s,s:s,s:s}", "kty", "OKP", "crv", "Ed25519", "x", x);
    FUZZ_CHECK(dpop_jwk_thumbprint(g_jwk, g_jkt) == 0);
}

static char *sign(const char *h, size_t hl, const uint8_t *c, size_t cl)
{
    size_t cap = B64_ENCODED_SIZE(hl) + B64_ENCODED_SIZE(cl) + B64_ENCODED_SIZE(64) + 3;
    char *tok = malloc(cap);
    size_t n = b64_encode(h, hl, tok, true);
    tok[n++] = '.';
    n += b64_encode(c, cl, tok + n, true);
    unsigned char sig[64];
    size_t siglen = sizeof sig;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    FUZZ_CHECK(EVP_DigestSignInit(ctx, NULL, NULL, NULL, g_key) == 1);
    FUZZ_CHECK(EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)tok, n) == 1);
    EVP_MD_CTX_free(ctx);
    tok[n++] = '.';
    n += b64_encode(sig, siglen, tok + n, true);
    tok[n] = '\0';
    return tok;
}

static void check(const char *proof, size_t len)
{
    static dpop_keycache_t kc; /* the cache's path too (a key stays in it across inputs) */
    dpop_expect_t ex = {"POST", HTU, TOKEN, strlen(TOKEN), g_jkt, NOW, LEEWAY, DPOP_MAX_AGE_S, &kc};
    dpop_proof_t p;
    const char *why = NULL;
    if (dpop_check(proof, len, &ex, &p, &why) != 0) {
        FUZZ_CHECK(why && *why);
        return;
    }
    FUZZ_CHECK(strcmp(p.jkt, g_jkt) == 0);
    FUZZ_CHECK(p.jti_len >= 1 && p.jti_len <= DPOP_JTI_MAX);
    FUZZ_CHECK(p.iat >= NOW - DPOP_MAX_AGE_S - LEEWAY && p.iat <= NOW + LEEWAY);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init();
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    const uint8_t *nul = memchr(data, 0, size);
    size_t al = nul ? (size_t)(nul - data) : size;
    const uint8_t *b = nul ? nul + 1 : data + size;
    size_t bl = nul ? size - al - 1 : 0;
    if (mode & 1) {
        char *h = NULL;
        if (mode & 2) {
            json_t *o = json_loadb((const char *)data, al, 0, NULL);
            if (json_is_object(o)) {
                json_object_set(o, "jwk", g_jwk);
                h = json_dumps(o, JSON_COMPACT);
            }
            json_decref(o);
        }
        char *tok = h ? sign(h, strlen(h), b, bl) : sign((const char *)data, al, b, bl);
        check(tok, strlen(tok));
        free(tok);
        free(h);
        return 0;
    }
    char *a = strndup((const char *)data, al), *u = strndup((const char *)b, bl);
    check(a, strlen(a));
    FUZZ_CHECK(dpop_htu_equal(a, u) == dpop_htu_equal(u, a));
    if (dpop_htu_equal(a, u)) /* equal to something: a URL, so equal to itself */
        FUZZ_CHECK(dpop_htu_equal(a, a) && dpop_htu_equal(u, u));
    free(a);
    free(u);
    return 0;
}
