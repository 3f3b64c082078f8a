/* Unit tests: JWT access tokens and JWK Sets (src/core/jwt.c). The keys are made here with
 * OpenSSL and every token is signed here, so each case changes one thing of a good token. */
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
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "core/b64.h"
#include "jws_sign.h"
#include "core/jwt.h"
#include "core/crypto.h"

#define ISS "http://127.0.0.1:9000"
#define AUD "http://127.0.0.1:8080/mcp"

typedef struct keys {
    EVP_PKEY *ec, *rsa, *ed, *ec384, *rsa_small;
    jwks_t *set;
    char *jwks_json;
    int64_t now;
} keys_t;

static json_t *jwk_rsa(const EVP_PKEY *k, const char *kid, const char *alg)
{
    char *n = bn_b64u(k, OSSL_PKEY_PARAM_RSA_N), *e = bn_b64u(k, OSSL_PKEY_PARAM_RSA_E);
    json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "kty", "RSA", "kid", kid, "n", n, "e", e);
    if (alg)
        json_object_set_new(j, "alg", json_string(alg));
    free(n);
    free(e);
    return j;
}

static json_t *jwk_ec(const EVP_PKEY *k, const char *kid, const char *crv, size_t coord)
{
    unsigned char pub[200];
    size_t len = 0;
    assert_int_equal(EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof pub,
                                                     &len),
                     1);
    assert_int_equal(len, 1 + 2 * coord);
    char *x = b64u(pub + 1, coord), *y = b64u(pub + 1 + coord, coord);
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "kty", "EC", "crv", crv, "kid", kid, "x", x,
                          "y", y, "use", "sig");
    free(x);
    free(y);
    return j;
}

static json_t *jwk_ed(const EVP_PKEY *k, const char *kid)
{
    unsigned char pub[32];
    size_t len = sizeof pub;
    assert_int_equal(EVP_PKEY_get_raw_public_key(k, pub, &len), 1);
    char *x = b64u(pub, len);
    json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "kty", "OKP", "crv", "Ed25519", "kid", kid, "x", x);
    free(x);
    return j;
}

static int setup(void **state)
{
    keys_t *k = calloc(1, sizeof *k);
    k->ec = EVP_EC_gen("P-256");
    k->ec384 = EVP_EC_gen("P-384");
    k->rsa = EVP_RSA_gen(2048);
    k->rsa_small = EVP_RSA_gen(1024);
    k->ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    assert_non_null(k->ec);
    assert_non_null(k->rsa);
    assert_non_null(k->ed);
    json_t *arr = json_array();
    json_array_append_new(arr, jwk_ec(k->ec, "ec1", "P-256", 32));
    json_array_append_new(arr, jwk_rsa(k->rsa, "rsa1", NULL));
    json_array_append_new(arr, jwk_rsa(k->rsa, "rsa-rs256-only", "RS256"));
    json_array_append_new(arr, jwk_ed(k->ed, "ed1"));
    json_array_append_new(arr, jwk_ec(k->ec384, "ec384", "P-384", 48));
    json_array_append_new(arr, jwk_rsa(k->rsa_small, "small", NULL)); /* skipped: 1024 bits */
    json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "kty", "oct", "kid", "hmac", "k",
                                         "c2VjcmV0")); /* skipped */
    json_t *enc = jwk_ec(k->ec, "enc1", "P-256", 32);
    json_object_set_new(enc, "use", json_string("enc")); /* skipped: not for signatures */
    json_array_append_new(arr, enc);
    json_t *doc = json_pack("{s:o}", "keys", arr);
    k->jwks_json = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    char why[200];
    k->set = jwks_parse(k->jwks_json, strlen(k->jwks_json), why, sizeof why);
    assert_non_null(k->set);
    k->now = (int64_t)time(NULL);
    *state = k;
    return 0;
}

static int teardown(void **state)
{
    keys_t *k = *state;
    jwks_unref(k->set);
    EVP_PKEY_free(k->ec);
    EVP_PKEY_free(k->ec384);
    EVP_PKEY_free(k->rsa);
    EVP_PKEY_free(k->rsa_small);
    EVP_PKEY_free(k->ed);
    free(k->jwks_json);
    free(k);
    return 0;
}

static char *join3(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + (c ? strlen(c) : 0) + 3;
    char *s = malloc(n);
    snprintf(s, n, "%s.%s%s%s", a, b, c ? "." : "", c ? c : "");
    return s;
}

/* A token of header hdr and claims cl (both stolen), signed with alg by key. */
static char *make(const char *alg, EVP_PKEY *key, json_t *hdr, json_t *cl)
{
    char *h = json_dumps(hdr, JSON_COMPACT), *p = json_dumps(cl, JSON_COMPACT);
    char *hb = b64u(h, strlen(h)), *pb = b64u(p, strlen(p));
    char *msg = join3(hb, pb, NULL);
    char *sig = sign(alg, key, msg);
    char *tok = join3(hb, pb, sig);
    free(h), free(p), free(hb), free(pb), free(msg), free(sig);
    json_decref(hdr);
    json_decref(cl);
    return tok;
}

static json_t *hdr(const char *alg, const char *kid)
{
    return json_pack("{s:s,s:s,s:s}", "alg", alg, "typ", "at+jwt", "kid", kid);
}

static json_t *claims(const keys_t *k)
{
    return json_pack("{s:s,s:s,s:I,s:I,s:s,s:s,s:s}", "iss", ISS, "aud", AUD, "exp",
                     (json_int_t)(k->now + 300), "iat", (json_int_t)k->now, "sub", "alice", "scope",
                     "mcp:tools  mcp:read", "client_id", "c1");
}

static jwt_result_t verify(const keys_t *k, const char *tok, jwt_claims_t *cl, const char **why)
{
    jwt_expect_t ex = {ISS, AUD, k->now, 30};
    static jwt_claims_t scratch;
    static const char *w;
    return jwt_verify(tok, strlen(tok), k->set, &ex, cl ? cl : &scratch, why ? why : &w);
}

static void a_key_set_keeps_only_usable_signing_keys(void **state)
{
    keys_t *k = *state;
    /* ec1, rsa1, rsa-rs256-only, ed1, ec384; not the 1024-bit RSA, the oct or the enc key */
    assert_int_equal(jwks_count(k->set), 5);
    char why[200];
    const char *only_oct = "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}";
    assert_null(jwks_parse(only_oct, strlen(only_oct), why, sizeof why));
    assert_null(jwks_parse("[]", 2, why, sizeof why));
    assert_null(jwks_parse("{\"keys\":", 8, why, sizeof why));
    /* a point that is not on the curve */
    const char *off = "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"x\","
                      "\"x\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\","
                      "\"y\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\"}]}";
    assert_null(jwks_parse(off, strlen(off), why, sizeof why));
}

static void a_good_token_of_each_algorithm_verifies(void **state)
{
    keys_t *k = *state;
    struct {
        const char *alg, *kid;
        EVP_PKEY *key;
    } cases[] = {
        {"ES256", "ec1", k->ec}, {"RS256", "rsa1", k->rsa},           {"PS256", "rsa1", k->rsa},
        {"EdDSA", "ed1", k->ed}, {"RS256", "rsa-rs256-only", k->rsa}, {"ES384", "ec384", k->ec384}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *tok = make(cases[i].alg, cases[i].key, hdr(cases[i].alg, cases[i].kid), claims(k));
        jwt_claims_t cl;
        const char *why = NULL;
        assert_int_equal(verify(k, tok, &cl, &why), JWT_OK);
        assert_string_equal(cl.sub, "alice");
        assert_string_equal(cl.scope, "mcp:tools mcp:read"); /* one space between scopes */
        assert_int_equal(cl.exp, k->now + 300);
        free(tok);
    }
}

static void alg_none_and_hmac_with_the_public_key_are_refused(void **state)
{
    keys_t *k = *state;
    /* none, with an empty signature (not even the shape) and with a non-empty one */
    const char *none = "{\"alg\":\"none\",\"typ\":\"at+jwt\"}";
    char *h = b64u(none, strlen(none));
    json_t *c = claims(k);
    char *p = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    char *pb = b64u(p, strlen(p));
    char *empty = join3(h, pb, "");
    char *some = join3(h, pb, "AAAA");
    assert_int_not_equal(verify(k, empty, NULL, NULL), JWT_OK);
    assert_int_equal(verify(k, some, NULL, NULL), JWT_INVALID);
    /* HS256 whose secret is the RSA public key (PEM): the classic confusion */
    BIO *bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, k->rsa);
    char *pem = NULL;
    long pemlen = BIO_get_mem_data(bio, &pem);
    const char *hs256 = "{\"alg\":\"HS256\",\"typ\":\"at+jwt\",\"kid\":\"rsa1\"}";
    char *hh = b64u(hs256, strlen(hs256));
    char *msg = join3(hh, pb, NULL);
    unsigned char mac[32];
    hmac_sha256(pem, (size_t)pemlen, msg, strlen(msg), mac);
    char *macb = b64u(mac, 32);
    char *hs = join3(hh, pb, macb);
    const char *why = NULL;
    assert_int_equal(verify(k, hs, NULL, &why), JWT_INVALID);
    assert_non_null(strstr(why, "algorithm"));
    BIO_free(bio);
    free(h), free(p), free(pb), free(empty), free(some), free(hh), free(msg), free(macb), free(hs);
}

static void an_unknown_kid_is_told_apart_from_a_bad_token(void **state)
{
    keys_t *k = *state;
    char *tok = make("ES256", k->ec, hdr("ES256", "rotated-in"), claims(k));
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_UNKNOWN_KID);
    free(tok);
    /* a kid that names a key of another type: invalid, not unknown */
    tok = make("ES256", k->ec, hdr("ES256", "rsa1"), claims(k));
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    /* a key that names its alg is used for that alg only */
    tok = make("PS256", k->rsa, hdr("PS256", "rsa-rs256-only"), claims(k));
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    /* no kid: each fitting key is tried */
    tok = make("EdDSA", k->ed, json_pack("{s:s,s:s}", "alg", "EdDSA", "typ", "JWT"), claims(k));
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_OK);
    free(tok);
    /* no kid and no key verifies it: maybe a rotation, told apart like an unknown kid */
    EVP_PKEY *other = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    tok = make("EdDSA", other, json_pack("{s:s,s:s}", "alg", "EdDSA", "typ", "JWT"), claims(k));
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_UNKNOWN_KID);
    free(tok);
    EVP_PKEY_free(other);
    /* no kid, a key verifies it, a claim fails: invalid */
    json_t *c = claims(k);
    json_object_set_new(c, "aud", json_string("http://other.example/mcp"));
    tok = make("EdDSA", k->ed, json_pack("{s:s,s:s}", "alg", "EdDSA", "typ", "JWT"), c);
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
}

static void a_changed_claim_or_signature_does_not_verify(void **state)
{
    keys_t *k = *state;
    char *tok = make("ES256", k->ec, hdr("ES256", "ec1"), claims(k));
    /* the claims of another token with this token's signature */
    json_t *c = claims(k);
    json_object_set_new(c, "sub", json_string("mallory"));
    char *p = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    char *pb = b64u(p, strlen(p));
    char *d1 = strchr(tok, '.'), *d2 = strchr(d1 + 1, '.');
    char *h = strndup(tok, (size_t)(d1 - tok));
    char *forged = join3(h, pb, d2 + 1);
    assert_int_equal(verify(k, forged, NULL, NULL), JWT_BAD_SIGNATURE);
    /* one character of the signature changed */
    size_t last = strlen(tok) - 5;
    tok[last] = tok[last] == 'A' ? 'B' : 'A';
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_BAD_SIGNATURE);
    /* an ES256 signature of the wrong length */
    char *shortsig = join3(h, pb, "AAAA");
    assert_int_equal(verify(k, shortsig, NULL, NULL), JWT_BAD_SIGNATURE);
    free(tok), free(p), free(pb), free(h), free(forged), free(shortsig);
}

static void the_audience_must_name_this_resource(void **state)
{
    keys_t *k = *state;
    json_t *c = claims(k);
    json_object_set_new(c, "aud", json_string("http://other.example/mcp"));
    char *tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    const char *why = NULL;
    assert_int_equal(verify(k, tok, NULL, &why), JWT_INVALID);
    assert_non_null(strstr(why, "aud"));
    free(tok);
    c = claims(k);
    json_object_set_new(c, "aud", json_pack("[s,s]", "http://other.example/mcp", AUD));
    tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_OK);
    free(tok);
    c = claims(k);
    json_object_set_new(c, "aud", json_pack("[s]", "http://other.example/mcp"));
    tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    c = claims(k);
    json_object_del(c, "aud");
    tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    /* a \u0000 in a claim does not cut the comparison short */
    static const char aud_nul[] = AUD "\0evil";
    c = claims(k);
    json_object_set_new(c, "aud", json_stringn(aud_nul, sizeof aud_nul - 1));
    tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    c = claims(k);
    json_object_set_new(c, "aud", json_pack("[o]", json_stringn(aud_nul, sizeof aud_nul - 1)));
    tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    static const char iss_nul[] = ISS "\0evil";
    c = claims(k);
    json_object_set_new(c, "iss", json_stringn(iss_nul, sizeof iss_nul - 1));
    tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    c = claims(k);
    json_object_set_new(c, "iss", json_string("http://127.0.0.1:9001"));
    tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    assert_int_equal(verify(k, tok, NULL, &why), JWT_INVALID);
    assert_non_null(strstr(why, "iss"));
    free(tok);
}

static jwt_result_t with_times(keys_t *k, const char *member, int64_t delta, bool drop_exp)
{
    json_t *c = claims(k);
    json_object_set_new(c, member, json_integer((json_int_t)(k->now + delta)));
    if (drop_exp)
        json_object_del(c, "exp");
    char *tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    jwt_result_t r = verify(k, tok, NULL, NULL);
    free(tok);
    return r;
}

static void exp_nbf_and_iat_are_checked_with_the_leeway(void **state)
{
    keys_t *k = *state; /* leeway 30 s */
    assert_int_equal(with_times(k, "exp", -100, false), JWT_INVALID);
    assert_int_equal(with_times(k, "exp", -10, false), JWT_OK);
    assert_int_equal(with_times(k, "nbf", 100, false), JWT_INVALID);
    assert_int_equal(with_times(k, "nbf", 10, false), JWT_OK);
    assert_int_equal(with_times(k, "iat", 100, false), JWT_INVALID);
    assert_int_equal(with_times(k, "nbf", -10, true), JWT_INVALID); /* no exp at all */
}

static void the_header_typ_and_crit_are_checked(void **state)
{
    keys_t *k = *state;
    const char *typs[] = {"at+jwt", "application/at+jwt", "JWT", "jwt"};
    for (size_t i = 0; i < 4; i++) {
        json_t *h = hdr("ES256", "ec1");
        json_object_set_new(h, "typ", json_string(typs[i]));
        char *tok = make("ES256", k->ec, h, claims(k));
        assert_int_equal(verify(k, tok, NULL, NULL), JWT_OK);
        free(tok);
    }
    json_t *h = hdr("ES256", "ec1");
    json_object_set_new(h, "typ", json_string("id+jwt"));
    char *tok = make("ES256", k->ec, h, claims(k));
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    h = hdr("ES256", "ec1");
    json_object_del(h, "typ");
    tok = make("ES256", k->ec, h, claims(k));
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
    h = hdr("ES256", "ec1");
    json_object_set_new(h, "crit", json_pack("[s]", "exp"));
    tok = make("ES256", k->ec, h, claims(k));
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
}

static void the_subject_falls_back_to_client_id_and_scp_is_read(void **state)
{
    keys_t *k = *state;
    json_t *c = claims(k);
    json_object_del(c, "sub");
    json_object_del(c, "scope");
    json_object_set_new(c, "scp", json_pack("[s,s]", "a:b", "c"));
    char *tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    jwt_claims_t cl;
    assert_int_equal(verify(k, tok, &cl, NULL), JWT_OK);
    assert_string_equal(cl.sub, "c1");
    assert_true(cl.sub_is_client_id); /* the principal tags which claim it was */
    assert_string_equal(cl.scope, "a:b c");
    free(tok);
    c = claims(k);
    json_object_del(c, "sub");
    json_object_del(c, "client_id");
    tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    assert_int_equal(verify(k, tok, NULL, NULL), JWT_INVALID);
    free(tok);
}

static void huge_garbage_and_bad_base64_are_refused(void **state)
{
    keys_t *k = *state;
    char *huge = malloc(JWT_MAX_LEN + 100);
    memset(huge, 'A', JWT_MAX_LEN + 99);
    memcpy(huge, "eyJ", 3);
    huge[100] = '.';
    huge[200] = '.';
    huge[JWT_MAX_LEN + 99] = '\0';
    const char *why = NULL;
    assert_int_equal(verify(k, huge, NULL, &why), JWT_INVALID);
    assert_non_null(strstr(why, "too long"));
    free(huge);
    const char *not_jwt[] = {"",
                             "hello",
                             "abc.def.ghi",
                             "eyJhbGci",
                             "eyJhbGci..sig",
                             "eyJhbGci.e30.",
                             "eyJhbGci.e30.s.x",
                             "eyJ!bGci.e30.sig",
                             "eyJhbGci.e3 0.sig",
                             "eyJhbGci.e30=.sig"};
    for (size_t i = 0; i < sizeof not_jwt / sizeof not_jwt[0]; i++)
        assert_int_equal(verify(k, not_jwt[i], NULL, NULL), JWT_NOT_JWT);
    /* the shape of a JWT, but its header is not JSON, or not base64url of any length */
    assert_int_equal(verify(k, "eyJhbGciOi.e30.AAAA", NULL, NULL), JWT_INVALID);
    assert_int_equal(verify(k, "eyJhb.e30.AAAA", NULL, NULL), JWT_INVALID);
    assert_int_equal(verify(k, "eyJ9.e30.AAAA", NULL, NULL), JWT_INVALID);
}

static jwt_result_t with_cnf(keys_t *k, json_t *cnf, jwt_claims_t *cl)
{
    json_t *c = claims(k);
    json_object_set_new(c, "cnf", cnf);
    char *tok = make("ES256", k->ec, hdr("ES256", "ec1"), c);
    jwt_result_t r = verify(k, tok, cl, NULL);
    free(tok);
    return r;
}

static void cnf_jkt_must_be_a_sha256_thumbprint_and_other_bindings_are_refused(void **state)
{
    keys_t *k = *state;
    static const char good[] = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";
    jwt_claims_t cl;
    assert_int_equal(with_cnf(k, json_pack("{s:s}", "jkt", good), &cl), JWT_OK);
    assert_string_equal(cl.jkt, good);
    /* another method beside jkt: the token is DPoP-bound all the same */
    assert_int_equal(with_cnf(k, json_pack("{s:s,s:s}", "jkt", good, "x5t#S256", "abc"), &cl),
                     JWT_OK);
    assert_string_equal(cl.jkt, good);
    /* not 43 base64url characters: invalid */
    assert_int_equal(with_cnf(k, json_pack("{s:s}", "jkt", "abc"), NULL), JWT_INVALID);
    assert_int_equal(
        with_cnf(k, json_pack("{s:s}", "jkt", "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9X"), NULL),
        JWT_INVALID); /* 42 */
    assert_int_equal(
        with_cnf(k, json_pack("{s:s}", "jkt", "NzbLsXh8uDCcd+6MNwXF4W/7noWXFZAfHkxZsRGC9Xs"), NULL),
        JWT_INVALID); /* standard base64 */
    assert_int_equal(
        with_cnf(k, json_pack("{s:s}", "jkt", "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9X="), NULL),
        JWT_INVALID); /* padded */
    static const char nul[] = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9\0s";
    assert_int_equal(with_cnf(k, json_pack("{s:s%}", "jkt", nul, (size_t)(sizeof nul - 1)), NULL),
                     JWT_INVALID);
    assert_int_equal(with_cnf(k, json_pack("{s:i}", "jkt", 1), NULL), JWT_INVALID);
    /* a cnf that names only methods this server does not support: not a bearer token */
    assert_int_equal(with_cnf(k, json_pack("{s:s}", "x5t#S256", good), &cl), JWT_INVALID);
    assert_int_equal(with_cnf(k, json_object(), NULL), JWT_INVALID);
    assert_int_equal(with_cnf(k, json_string(good), NULL), JWT_INVALID);
}

static void scopes_cover_whole_words_only(void **state)
{
    (void)state;
    assert_true(scopes_cover("a b c", "c a"));
    assert_true(scopes_cover("a b", ""));
    assert_true(scopes_cover("", NULL));
    assert_false(scopes_cover("files:read", "files"));
    assert_false(scopes_cover("a b", "a b c"));
    assert_false(scopes_cover(NULL, "a"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_key_set_keeps_only_usable_signing_keys),
        cmocka_unit_test(a_good_token_of_each_algorithm_verifies),
        cmocka_unit_test(alg_none_and_hmac_with_the_public_key_are_refused),
        cmocka_unit_test(an_unknown_kid_is_told_apart_from_a_bad_token),
        cmocka_unit_test(a_changed_claim_or_signature_does_not_verify),
        cmocka_unit_test(the_audience_must_name_this_resource),
        cmocka_unit_test(exp_nbf_and_iat_are_checked_with_the_leeway),
        cmocka_unit_test(the_header_typ_and_crit_are_checked),
        cmocka_unit_test(the_subject_falls_back_to_client_id_and_scp_is_read),
        cmocka_unit_test(huge_garbage_and_bad_base64_are_refused),
        cmocka_unit_test(cnf_jkt_must_be_a_sha256_thumbprint_and_other_bindings_are_refused),
        cmocka_unit_test(scopes_cover_whole_words_only),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
