/* Unit tests: DPoP proofs (src/core/dpop.c). The keys are made here with OpenSSL and each proof
 * is signed here, so each case changes one thing of a good proof; the thumbprints are checked
 * against the vectors of RFC 7638 3.1 and RFC 9449 6.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include "core/b64.h"
#include "jws_sign.h"
#include "core/crypto.h"
#include "core/dpop.h"

#define HTU "http://127.0.0.1:8080/mcp"
#define TOKEN "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"

typedef struct keys {
    EVP_PKEY *ec, *rsa, *ed, *ec384;
    int64_t now;
} keys_t;

/* The public JWK of k (private: with its d member too). */
static json_t *jwk_of(EVP_PKEY *k, bool private)
{
    json_t *j;
    if (EVP_PKEY_is_a(k, "RSA")) {
        char *n = bn_b64u(k, OSSL_PKEY_PARAM_RSA_N), *e = bn_b64u(k, OSSL_PKEY_PARAM_RSA_E);
        j = json_pack("{s:s,s:s,s:s}", "kty", "RSA", "n", n, "e", e);
        free(n), free(e);
        if (private) {
            char *d = bn_b64u(k, OSSL_PKEY_PARAM_RSA_D);
            json_object_set_new(j, "d", json_string(d));
            free(d);
        }
    } else if (EVP_PKEY_is_a(k, "EC")) {
        unsigned char pub[200];
        size_t len = 0;
        assert_int_equal(EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pub,
                                                         sizeof pub, &len),
                         1);
        size_t coord = (len - 1) / 2;
        char *x = b64u(pub + 1, coord), *y = b64u(pub + 1 + coord, coord);
        j = json_pack("{s:s,s:s,s:s,s:s}", "kty", "EC", "crv", coord == 32 ? "P-256" : "P-384", "x",
                      x, "y", y);
        free(x), free(y);
        if (private) {
            char *d = bn_b64u(k, OSSL_PKEY_PARAM_PRIV_KEY);
            json_object_set_new(j, "d", json_string(d));
            free(d);
        }
    } else {
        unsigned char pub[32];
        size_t len = sizeof pub;
        assert_int_equal(EVP_PKEY_get_raw_public_key(k, pub, &len), 1);
        char *x = b64u(pub, len);
        j = json_pack("{s:s,s:s,s:s}", "kty", "OKP", "crv", "Ed25519", "x", x);
        free(x);
    }
    return j;
}

/* A proof of header h and claims c (both stolen), signed with alg by key (NULL: no signature). */
static char *make(const char *alg, EVP_PKEY *key, json_t *h, json_t *c)
{
    char *hs = json_dumps(h, JSON_COMPACT), *cs = json_dumps(c, JSON_COMPACT);
    char *hb = b64u(hs, strlen(hs)), *cb = b64u(cs, strlen(cs));
    size_t n = strlen(hb) + strlen(cb) + 2;
    char *msg = malloc(n);
    snprintf(msg, n, "%s.%s", hb, cb);
    char *sig = key ? sign(alg, key, msg) : strdup("");
    size_t m = n + strlen(sig) + 1;
    char *proof = malloc(m);
    snprintf(proof, m, "%s.%s", msg, sig);
    free(hs), free(cs), free(hb), free(cb), free(msg), free(sig);
    json_decref(h);
    json_decref(c);
    return proof;
}

static json_t *header(const char *alg, EVP_PKEY *k)
{
    return json_pack("{s:s,s:s,s:o}", "typ", "dpop+jwt", "alg", alg, "jwk", jwk_of(k, false));
}

static char *ath_of(const char *tok)
{
    unsigned char d[SHA256_LEN];
    sha256(tok, strlen(tok), d);
    return b64u(d, SHA256_LEN);
}

static json_t *claims(const keys_t *k, const char *jti)
{
    char *ath = ath_of(TOKEN);
    json_t *c = json_pack("{s:s,s:s,s:s,s:I,s:s}", "jti", jti, "htm", "POST", "htu", HTU, "iat",
                          (json_int_t)k->now, "ath", ath);
    free(ath);
    return c;
}

static void thumb(EVP_PKEY *k, char out[DPOP_JKT_LEN + 1])
{
    json_t *j = jwk_of(k, false);
    assert_int_equal(dpop_jwk_thumbprint(j, out), 0);
    json_decref(j);
}

static dpop_expect_t expect(const keys_t *k, const char *jkt)
{
    return (dpop_expect_t){"POST", HTU, TOKEN,          strlen(TOKEN), jkt,
                           k->now, 30,  DPOP_MAX_AGE_S, NULL};
}

static int check(const keys_t *k, const char *proof, const char *jkt, const char **why)
{
    dpop_expect_t ex = expect(k, jkt);
    dpop_proof_t p;
    *why = NULL;
    return dpop_check(proof, strlen(proof), &ex, &p, why);
}

static int setup(void **state)
{
    keys_t *k = calloc(1, sizeof *k);
    k->ec = EVP_EC_gen("P-256");
    k->ec384 = EVP_EC_gen("P-384");
    k->rsa = EVP_RSA_gen(2048);
    k->ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    assert_non_null(k->ec);
    assert_non_null(k->rsa);
    assert_non_null(k->ed);
    k->now = (int64_t)time(NULL);
    *state = k;
    return 0;
}

static int teardown(void **state)
{
    keys_t *k = *state;
    EVP_PKEY_free(k->ec);
    EVP_PKEY_free(k->ec384);
    EVP_PKEY_free(k->rsa);
    EVP_PKEY_free(k->ed);
    free(k);
    return 0;
}

/* ---- the thumbprint ---- */

static void the_thumbprint_matches_the_rfc_vectors(void **state)
{
    (void)state;
    /* RFC 7638 3.1: the RSA key of RFC 7517 A.1, its alg and kid not part of the thumbprint */
    json_t *rsa = json_pack(
        "{s:s,s:s,s:s,s:s,s:s}", "kty", "RSA", "n",
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_"
        "BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_"
        "FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-"
        "bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        "e", "AQAB", "alg", "RS256", "kid", "2011-04-29");
    char t[DPOP_JKT_LEN + 1];
    assert_int_equal(dpop_jwk_thumbprint(rsa, t), 0);
    assert_string_equal(t, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
    json_decref(rsa);
    /* RFC 9449 6.1's example key: the members in another order give the same thumbprint */
    json_t *ec = json_pack("{s:s,s:s,s:s,s:s}", "y", "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA",
                           "x", "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs", "crv", "P-256",
                           "kty", "EC");
    assert_int_equal(dpop_jwk_thumbprint(ec, t), 0);
    assert_string_equal(t, "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I");
    json_decref(ec);
    json_t *oct = json_pack("{s:s,s:s}", "kty", "oct", "k", "c2VjcmV0");
    assert_int_equal(dpop_jwk_thumbprint(oct, t), -1); /* no thumbprint of a shared secret */
    json_decref(oct);
    json_t *no_y = json_pack("{s:s,s:s,s:s}", "kty", "EC", "crv", "P-256", "x", "AAAA");
    assert_int_equal(dpop_jwk_thumbprint(no_y, t), -1);
    json_decref(no_y);
}

/* ---- good proofs ---- */

static void a_good_proof_of_each_algorithm_is_accepted(void **state)
{
    keys_t *k = *state;
    struct {
        const char *alg;
        EVP_PKEY *key;
    } cases[] = {{"ES256", k->ec}, {"RS256", k->rsa}, {"PS256", k->rsa}, {"EdDSA", k->ed}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char jkt[DPOP_JKT_LEN + 1];
        thumb(cases[i].key, jkt);
        char *p = make(cases[i].alg, cases[i].key, header(cases[i].alg, cases[i].key),
                       claims(k, "jti-1"));
        dpop_expect_t ex = expect(k, jkt);
        dpop_proof_t out;
        const char *why = NULL;
        assert_int_equal(dpop_check(p, strlen(p), &ex, &out, &why), 0);
        assert_null(why);
        assert_string_equal(out.jkt, jkt);
        assert_string_equal(out.jti, "jti-1");
        assert_int_equal(out.jti_len, 5);
        assert_int_equal(out.iat, k->now);
        free(p);
    }
}

/* ---- one thing changed ---- */

static void a_proof_for_another_method_url_or_token_is_refused(void **state)
{
    keys_t *k = *state;
    char jkt[DPOP_JKT_LEN + 1];
    thumb(k->ec, jkt);
    struct {
        const char *member, *value;
    } cases[] = {
        {"htm", "GET"},
        {"htm", "post"},
        {"htu", "http://127.0.0.1:8080/other"},
        {"htu", "http://127.0.0.1:8081/mcp"},
        {"htu", "https://127.0.0.1:8080/mcp"},
        {"htu", "http://localhost:8080/mcp"},
        {"htu", "http://127.0.0.1:8080/mcp/"},
        {"htu", "/mcp"},
        {"ath", "AAAA"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *c = claims(k, "j");
        json_object_set_new(c, cases[i].member, json_string(cases[i].value));
        char *p = make("ES256", k->ec, header("ES256", k->ec), c);
        const char *why;
        assert_int_equal(check(k, p, jkt, &why), -1);
        assert_non_null(strstr(why, cases[i].member));
        free(p);
    }
    json_t *c = claims(k, "j");
    json_object_del(c, "ath"); /* an access token goes with the request: ath is required */
    char *p = make("ES256", k->ec, header("ES256", k->ec), c);
    const char *why;
    assert_int_equal(check(k, p, jkt, &why), -1);
    assert_non_null(strstr(why, "ath"));
    free(p);
}

static void htu_is_compared_after_normalization(void **state)
{
    keys_t *k = *state;
    char jkt[DPOP_JKT_LEN + 1];
    thumb(k->ec, jkt);
    const char *same[] = {"HTTP://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp?x=1",
                          "http://127.0.0.1:8080/mcp#frag"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        json_t *c = claims(k, "j");
        json_object_set_new(c, "htu", json_string(same[i]));
        char *p = make("ES256", k->ec, header("ES256", k->ec), c);
        const char *why;
        assert_int_equal(check(k, p, jkt, &why), 0);
        free(p);
    }
    assert_true(dpop_htu_equal("https://Example.COM:443/mcp", "https://example.com/mcp"));
    assert_true(dpop_htu_equal("http://example.com", "http://example.com:80/"));
    assert_false(dpop_htu_equal("http://example.com/MCP", "http://example.com/mcp"));
    assert_false(dpop_htu_equal("http://user@example.com/mcp", "http://example.com/mcp"));
    assert_false(dpop_htu_equal("ftp://example.com/mcp", "ftp://example.com/mcp"));
    assert_true(dpop_htu_equal("http://[::1]:8080/mcp", "http://[::1]:8080/mcp"));
    assert_false(dpop_htu_equal("not a url", "not a url"));
    assert_false(dpop_htu_equal("http://:80/mcp", "http://:80/mcp")); /* no host */
    assert_false(dpop_htu_equal("http://h:99999/mcp", "http://h:99999/mcp"));
}

static void a_proof_too_old_or_from_the_future_is_refused(void **state)
{
    keys_t *k = *state;
    char jkt[DPOP_JKT_LEN + 1];
    thumb(k->ec, jkt);
    struct {
        int64_t iat;
        int rc;
    } cases[] = {
        {k->now - DPOP_MAX_AGE_S - 30, 0}, /* the oldest accepted (the leeway included) */
        {k->now - DPOP_MAX_AGE_S - 31, -1},
        {k->now - 600, -1},
        {k->now + 30, 0},
        {k->now + 31, -1},
        {k->now + 600, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *c = claims(k, "j");
        json_object_set_new(c, "iat", json_integer(cases[i].iat));
        char *p = make("ES256", k->ec, header("ES256", k->ec), c);
        const char *why;
        assert_int_equal(check(k, p, jkt, &why), cases[i].rc);
        if (cases[i].rc)
            assert_non_null(strstr(why, "iat"));
        free(p);
    }
    json_t *c = claims(k, "j");
    json_object_set_new(c, "iat", json_string("now"));
    char *p = make("ES256", k->ec, header("ES256", k->ec), c);
    const char *why;
    assert_int_equal(check(k, p, jkt, &why), -1);
    free(p);
}

static void the_jti_is_required_and_bounded(void **state)
{
    keys_t *k = *state;
    char jkt[DPOP_JKT_LEN + 1];
    thumb(k->ec, jkt);
    char longest[DPOP_JTI_MAX + 2];
    memset(longest, 'a', sizeof longest);
    longest[DPOP_JTI_MAX] = '\0';
    char *p = make("ES256", k->ec, header("ES256", k->ec), claims(k, longest));
    const char *why;
    assert_int_equal(check(k, p, jkt, &why), 0);
    free(p);
    longest[DPOP_JTI_MAX] = 'a';
    longest[DPOP_JTI_MAX + 1] = '\0';
    p = make("ES256", k->ec, header("ES256", k->ec), claims(k, longest));
    assert_int_equal(check(k, p, jkt, &why), -1);
    assert_non_null(strstr(why, "jti"));
    free(p);
    json_t *c = claims(k, "j");
    json_object_del(c, "jti");
    p = make("ES256", k->ec, header("ES256", k->ec), c);
    assert_int_equal(check(k, p, jkt, &why), -1);
    assert_non_null(strstr(why, "jti"));
    free(p);
}

static void the_header_typ_alg_and_jwk_are_checked(void **state)
{
    keys_t *k = *state;
    char jkt[DPOP_JKT_LEN + 1];
    thumb(k->ec, jkt);
    const char *why;
    /* typ */
    json_t *h = header("ES256", k->ec);
    json_object_set_new(h, "typ", json_string("JWT"));
    char *p = make("ES256", k->ec, h, claims(k, "j"));
    assert_int_equal(check(k, p, jkt, &why), -1);
    assert_non_null(strstr(why, "typ"));
    free(p);
    /* alg none, HMAC, and an asymmetric alg this server does not list */
    const char *algs[] = {"none", "HS256", "ES384"};
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        EVP_PKEY *key = i == 2 ? k->ec384 : k->ec;
        h = header("ES256", key);
        json_object_set_new(h, "alg", json_string(algs[i]));
        p = make(i == 2 ? "ES384" : "ES256", key, h, claims(k, "j"));
        assert_int_equal(check(k, p, NULL, &why), -1);
        assert_non_null(strstr(why, "alg"));
        free(p);
    }
    h = header("ES256", k->ec); /* alg none as it comes: an empty signature */
    json_object_set_new(h, "alg", json_string("none"));
    p = make("none", NULL, h, claims(k, "j"));
    assert_int_equal(check(k, p, NULL, &why), -1);
    free(p);
    /* a private key in the header */
    h = json_pack("{s:s,s:s,s:o}", "typ", "dpop+jwt", "alg", "ES256", "jwk", jwk_of(k->ec, true));
    p = make("ES256", k->ec, h, claims(k, "j"));
    assert_int_equal(check(k, p, jkt, &why), -1);
    assert_non_null(strstr(why, "private"));
    free(p);
    h = json_pack("{s:s,s:s,s:o}", "typ", "dpop+jwt", "alg", "RS256", "jwk", jwk_of(k->rsa, true));
    p = make("RS256", k->rsa, h, claims(k, "j"));
    assert_int_equal(check(k, p, NULL, &why), -1);
    assert_non_null(strstr(why, "private"));
    free(p);
    /* no jwk; a symmetric one */
    h = json_pack("{s:s,s:s}", "typ", "dpop+jwt", "alg", "ES256");
    p = make("ES256", k->ec, h, claims(k, "j"));
    assert_int_equal(check(k, p, jkt, &why), -1);
    free(p);
    h = json_pack("{s:s,s:s,s:{s:s,s:s}}", "typ", "dpop+jwt", "alg", "ES256", "jwk", "kty", "oct",
                  "k", "c2VjcmV0");
    p = make("ES256", k->ec, h, claims(k, "j"));
    assert_int_equal(check(k, p, NULL, &why), -1);
    free(p);
    /* the jwk of another kind than the alg (an RSA key with ES256) */
    h = header("ES256", k->rsa);
    p = make("ES256", k->ec, h, claims(k, "j"));
    assert_int_equal(check(k, p, NULL, &why), -1);
    assert_non_null(strstr(why, "signature"));
    free(p);
    /* crit */
    h = header("ES256", k->ec);
    json_object_set_new(h, "crit", json_pack("[s]", "exp"));
    p = make("ES256", k->ec, h, claims(k, "j"));
    assert_int_equal(check(k, p, jkt, &why), -1);
    assert_non_null(strstr(why, "crit"));
    free(p);
}

static void a_proof_of_another_key_is_refused(void **state)
{
    keys_t *k = *state;
    char jkt[DPOP_JKT_LEN + 1];
    thumb(k->ec, jkt);
    const char *why;
    /* signed by the ed25519 key, its own jwk in the header: a good proof, but not of the key
     * the token is bound to */
    char *p = make("EdDSA", k->ed, header("EdDSA", k->ed), claims(k, "j"));
    assert_int_equal(check(k, p, jkt, &why), -1);
    assert_non_null(strstr(why, "cnf.jkt"));
    assert_int_equal(check(k, p, NULL, &why), 0); /* no binding asked: the proof itself is good */
    free(p);
    /* the bound key's jwk in the header, signed by another key */
    EVP_PKEY *other = EVP_EC_gen("P-256");
    p = make("ES256", other, header("ES256", k->ec), claims(k, "j"));
    assert_int_equal(check(k, p, jkt, &why), -1);
    assert_non_null(strstr(why, "signature"));
    free(p);
    EVP_PKEY_free(other);
    /* a changed claim after signing */
    p = make("ES256", k->ec, header("ES256", k->ec), claims(k, "j"));
    char *dot = strchr(p, '.');
    dot[3] = dot[3] == 'A' ? 'B' : 'A';
    assert_int_equal(check(k, p, jkt, &why), -1);
    free(p);
}

static void a_cached_key_still_verifies_each_signature(void **state)
{
    keys_t *k = *state;
    dpop_keycache_t *kc = calloc(1, sizeof *kc);
    struct {
        const char *alg;
        EVP_PKEY *key;
    } cases[] = {{"RS256", k->rsa}, {"PS256", k->rsa}, {"ES256", k->ec}, {"EdDSA", k->ed}};
    for (int round = 0; round < 2; round++) { /* the second round finds every key cached */
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char jkt[DPOP_JKT_LEN + 1];
            thumb(cases[i].key, jkt);
            dpop_expect_t ex = expect(k, jkt);
            ex.keys = kc;
            dpop_proof_t out;
            const char *why;
            char *p = make(cases[i].alg, cases[i].key, header(cases[i].alg, cases[i].key),
                           claims(k, "j"));
            assert_int_equal(dpop_check(p, strlen(p), &ex, &out, &why), 0);
            p[strlen(p) - 2] = p[strlen(p) - 2] == 'A' ? 'B' : 'A'; /* a changed signature */
            assert_int_equal(dpop_check(p, strlen(p), &ex, &out, &why), -1);
            assert_non_null(strstr(why, "signature"));
            free(p);
        }
    }
    /* the same RSA key announced for RS256 only, used with PS256: refused, cached or not */
    char jkt[DPOP_JKT_LEN + 1];
    thumb(k->rsa, jkt);
    json_t *h = header("PS256", k->rsa);
    json_object_set_new(json_object_get(h, "jwk"), "alg", json_string("RS256"));
    char *p = make("PS256", k->rsa, h, claims(k, "j"));
    dpop_expect_t ex = expect(k, jkt);
    ex.keys = kc;
    dpop_proof_t out;
    const char *why;
    assert_int_equal(dpop_check(p, strlen(p), &ex, &out, &why), -1);
    free(p);
    /* the cached EC key's jwk marked for encryption: refused as it would be uncached */
    thumb(k->ec, jkt);
    h = header("ES256", k->ec);
    json_object_set_new(json_object_get(h, "jwk"), "use", json_string("enc"));
    p = make("ES256", k->ec, h, claims(k, "j"));
    ex = expect(k, jkt);
    ex.keys = kc;
    assert_int_equal(dpop_check(p, strlen(p), &ex, &out, &why), -1);
    free(p);
    dpop_keycache_clear(kc);
    free(kc);
}

static void garbage_is_refused(void **state)
{
    keys_t *k = *state;
    const char *bad[] = {"garbage",     "",         "a.b",          "a.b.c.d",
                         "..",          "eyJ.eyJ.", "e$J.eyJ.c2ln", "bm90IGpzb24.bm90IGpzb24.c2ln",
                         "W10.e30.c2ln"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why;
        assert_int_equal(check(k, bad[i], NULL, &why), -1);
        assert_non_null(why);
    }
    char *huge = malloc(DPOP_MAX_LEN + 2);
    memset(huge, 'a', DPOP_MAX_LEN + 1);
    huge[DPOP_MAX_LEN + 1] = '\0';
    const char *why;
    assert_int_equal(check(k, huge, NULL, &why), -1);
    assert_non_null(strstr(why, "long"));
    free(huge);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_thumbprint_matches_the_rfc_vectors),
        cmocka_unit_test(a_good_proof_of_each_algorithm_is_accepted),
        cmocka_unit_test(a_proof_for_another_method_url_or_token_is_refused),
        cmocka_unit_test(htu_is_compared_after_normalization),
        cmocka_unit_test(a_proof_too_old_or_from_the_future_is_refused),
        cmocka_unit_test(the_jti_is_required_and_bounded),
        cmocka_unit_test(the_header_typ_alg_and_jwk_are_checked),
        cmocka_unit_test(a_proof_of_another_key_is_refused),
        cmocka_unit_test(a_cached_key_still_verifies_each_signature),
        cmocka_unit_test(garbage_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
