/* libFuzzer harness: JWK Sets and JWT access tokens (src/core/jwt.c). One thread: libFuzzer's.
 *
 * Input: a mode byte, then two NUL-separated parts.
 *   mode even: a JWK Set document, then a token verified against it (or against the harness's
 *              own set when the document is refused): the parser and every refusal path;
 *   mode odd:  a JWS header and a claims set (JSON text as given), which the harness encodes and
 *              signs with its fixed Ed25519 key, so the fuzzer reaches the header and claims
 *              checks that follow a good signature.
 * Invariants: a parsed set holds 1..JWKS_MAX_KEYS keys; a token that does not look like a JWT
 * is JWT_NOT_JWT (or JWT_INVALID past JWT_MAX_LEN); JWT_OK only for a signed token (mode odd,
 * or a token whose shape is right), with a subject, a scope of single-space-separated words and
 * an exp within the leeway; a refusal always says why. */
#include "fuzz.h"

#include "core/b64.h"
#include "core/jwt.h"

#include <openssl/evp.h>

#define ISS "http://as.example"
#define AUD "http://rs.example/mcp"
#define NOW 1800000000
#define LEEWAY 30

static EVP_PKEY *g_key;
static jwks_t *g_set;

static void init(void)
{
    if (g_key)
        return;
    unsigned char seed[32];
    for (int i = 0; i < 32; i++)
        seed[i] = (unsigned char)(i * 7 + 1);
    g_key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    unsigned char pub[32];
    size_t len = sizeof pub;
    FUZZ_CHECK(g_key && EVP_PKEY_get_raw_public_key(g_key, pub, &len) == 1);
    char x[B64_ENCODED_SIZE(32)];
    b64_encode(pub, 32, x, true);
    char doc[256];
    snprintf(doc, sizeof doc, "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"k1\",\"x\":\"%s\"}]}", x);
    char why[200];
    g_set = jwks_parse(doc, strlen(doc), why, sizeof why);
    FUZZ_CHECK(g_set && jwks_count(g_set) == 1);
}

/* header.claims.signature of the two parts, signed with the harness's key. */
static char *sign(const uint8_t *h, size_t hl, const uint8_t *c, size_t cl)
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

static void check_result(jwt_result_t r, const jwt_claims_t *cl, const char *why)
{
    if (r != JWT_OK) {
        FUZZ_CHECK(why && *why);
        return;
    }
    FUZZ_CHECK(cl->sub[0] != '\0');
    FUZZ_CHECK(cl->exp + LEEWAY >= NOW);
    size_t sl = strlen(cl->scope);
    FUZZ_CHECK(sl <= JWT_SCOPE_MAX);
    FUZZ_CHECK(sl == 0 || (cl->scope[0] != ' ' && cl->scope[sl - 1] != ' '));
    FUZZ_CHECK(strstr(cl->scope, "  ") == NULL);
    FUZZ_CHECK(scopes_cover(cl->scope, cl->scope));
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
    jwt_expect_t ex = {ISS, AUD, NOW, LEEWAY};
    jwt_claims_t cl;
    const char *why = NULL;
    if (mode & 1) {
        char *tok = sign(data, al, b, bl);
        jwt_result_t r = jwt_verify(tok, strlen(tok), g_set, &ex, &cl, &why);
        check_result(r, &cl, why);
        free(tok);
        return 0;
    }
    char err[200];
    jwks_t *set = jwks_parse((const char *)data, al, err, sizeof err);
    if (set)
        FUZZ_CHECK(jwks_count(set) >= 1 && jwks_count(set) <= JWKS_MAX_KEYS);
    else
        FUZZ_CHECK(err[0] != '\0');
    char *tok = malloc(bl + 1);
    memcpy(tok, b, bl);
    tok[bl] = '\0';
    size_t tl = strlen(tok); /* a NUL in the token ends it, as a header value would */
    jwt_result_t r = jwt_verify(tok, tl, set ? set : g_set, &ex, &cl, &why);
    if (!jwt_looks_like(tok, tl))
        FUZZ_CHECK(r == (tl > JWT_MAX_LEN ? JWT_INVALID : JWT_NOT_JWT));
    check_result(r, &cl, why);
    free(tok);
    jwks_unref(set);
    return 0;
}
