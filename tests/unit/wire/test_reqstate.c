/* Unit tests: the requestState token of 2026-07-28 input requests (src/wire/reqstate.c): a
 * minted token opens to its payload; any change to it (a bit, a cut, an addition, another key,
 * a swapped payload under the old mac) is refused as -EBADMSG; a token past its expiry is
 * -ETIME; the mac is compared with ct_memcmp (this test is linked with
 * -Wl,--wrap=ct_memcmp and counts the calls); the length bound holds. Whether the payload's
 * method, digest and principal match the retry is the protocol layer's check (mcp/modern.c):
 * here, that a client cannot change them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>

#include "core/b64.h"
#include "core/crypto.h"
#include "wire/reqstate.h"

/* ---- the constant-time compare, seen through the linker's --wrap ---- */

int __real_ct_memcmp(const void *a, const void *b, size_t n);
int __wrap_ct_memcmp(const void *a, const void *b, size_t n);

static int ct_calls;
static size_t ct_last_len;

int __wrap_ct_memcmp(const void *a, const void *b, size_t n)
{
    ct_calls++;
    ct_last_len = n;
    return __real_ct_memcmp(a, b, n);
}

/* ---- helpers ---- */

static const unsigned char KEY[REQSTATE_KEY_LEN] = "0123456789abcdef0123456789abcdef";
static const char RID[] = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
#define NOW 1800000000000LL

static json_t *payload(const char *principal, json_int_t expiry)
{
    return json_pack("{s:s,s:i,s:I,s:i,s:s,s:s,s:s}", "r", RID, "n", 2, "e", expiry, "m", 7, "t",
                     "deploy", "d", "00112233445566778899aabbccddeeff", "p", principal);
}

static char *mint_for(const char *principal, json_int_t expiry)
{
    json_t *p = payload(principal, expiry);
    char *tok = reqstate_mint(KEY, p);
    json_decref(p);
    return tok;
}

/* ---- tests ---- */

static void a_minted_token_opens_to_the_payload_it_was_minted_from(void **state)
{
    (void)state;
    json_t *want = payload("alice", NOW + 60000);
    char *tok = reqstate_mint(KEY, want);
    assert_non_null(strchr(tok, '.'));
    /* base64url without padding, one dot between payload and mac */
    assert_int_equal(strspn(tok,
                            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."),
                     strlen(tok));
    assert_int_equal(strlen(strchr(tok, '.') + 1), 43); /* a 32-byte mac */
    json_t *got = NULL;
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), 0);
    assert_non_null(got);
    assert_true(json_equal(got, want));
    assert_string_equal(json_string_value(json_object_get(got, "p")), "alice");
    json_decref(got);
    json_decref(want);
    free(tok);
}

static void a_token_with_any_one_bit_flipped_is_refused(void **state)
{
    (void)state;
    char *tok = mint_for("alice", NOW + 60000);
    size_t len = strlen(tok);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 7; bit++) { /* the low seven: the text stays ASCII */
            char saved = tok[i];
            tok[i] = (char)(tok[i] ^ (1 << bit));
            json_t *got = (json_t *)1;
            int rc = reqstate_open(KEY, tok, NOW, &got);
            if (rc != -EBADMSG)
                fail_msg("flipping bit %d of byte %zu gave %d, expected -EBADMSG", bit, i, rc);
            assert_null(got); /* a refusal hands back no payload */
            tok[i] = saved;
        }
    }
    free(tok);
}

static void a_truncated_or_extended_token_is_refused(void **state)
{
    (void)state;
    char *tok = mint_for("alice", NOW + 60000);
    size_t len = strlen(tok);
    json_t *got;
    for (size_t cut = 0; cut < len; cut++) {
        char *t = strndup(tok, cut);
        if (reqstate_open(KEY, t, NOW, &got) != -EBADMSG)
            fail_msg("the token cut to %zu bytes was not refused", cut);
        free(t);
    }
    static const char *tails[] = {"A", "=", ".", "AAAA", ".AAAA"};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char *t = malloc(len + strlen(tails[i]) + 1);
        strcpy(t, tok);
        strcat(t, tails[i]);
        if (reqstate_open(KEY, t, NOW, &got) != -EBADMSG)
            fail_msg("the token with '%s' appended was not refused", tails[i]);
        free(t);
    }
    /* a character in front of the payload changes what the mac covers */
    char *t = malloc(len + 2);
    t[0] = 'A';
    strcpy(t + 1, tok);
    assert_int_equal(reqstate_open(KEY, t, NOW, &got), -EBADMSG);
    free(t);
    free(tok);
}

static void a_token_minted_with_another_key_is_refused(void **state)
{
    (void)state;
    unsigned char other[REQSTATE_KEY_LEN];
    memcpy(other, KEY, sizeof other);
    other[REQSTATE_KEY_LEN - 1] ^= 1; /* the last byte counts too */
    json_t *p = payload("alice", NOW + 60000);
    char *tok = reqstate_mint(other, p);
    json_t *got = NULL;
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), -EBADMSG);
    assert_null(got);
    assert_int_equal(reqstate_open(other, tok, NOW, &got), 0);
    json_decref(got);
    json_decref(p);
    free(tok);
}

static void a_token_is_good_until_its_expiry_and_expired_from_then_on(void **state)
{
    (void)state;
    char *tok = mint_for("alice", NOW);
    json_t *got = NULL;
    assert_int_equal(reqstate_open(KEY, tok, NOW - 1, &got), 0);
    json_decref(got);
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), -ETIME); /* "e" is the first ms it fails */
    assert_null(got);
    assert_int_equal(reqstate_open(KEY, tok, NOW + 3600000, &got), -ETIME);
    assert_null(got);
    free(tok);
}

/* A client that holds bob's token and alice's cannot make a token for alice's exchange that
 * names bob: the mac covers the payload's text, so swapping payloads between macs fails. */
static void another_principals_payload_under_this_mac_is_refused(void **state)
{
    (void)state;
    char *alice = mint_for("alice", NOW + 60000);
    char *bob = mint_for("bob", NOW + 60000);
    const char *adot = strchr(alice, '.'), *bdot = strchr(bob, '.');
    size_t blen = (size_t)(bdot - bob);
    char *forged = malloc(blen + strlen(adot) + 1);
    memcpy(forged, bob, blen);
    strcpy(forged + blen, adot); /* bob's payload, alice's mac */
    json_t *got = NULL;
    assert_int_equal(reqstate_open(KEY, forged, NOW, &got), -EBADMSG);
    assert_null(got);
    /* and the payload rewritten by hand (base64 of new JSON) under the old mac */
    json_t *p = payload("mallory", NOW + 60000);
    char *text = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
    char *b64 = malloc(B64_ENCODED_SIZE(strlen(text)) + strlen(adot) + 1);
    size_t n = b64_encode(text, strlen(text), b64, true);
    strcpy(b64 + n, adot);
    assert_int_equal(reqstate_open(KEY, b64, NOW, &got), -EBADMSG);
    assert_null(got);
    free(b64);
    free(text);
    json_decref(p);
    free(forged);
    free(alice);
    free(bob);
}

static void the_mac_is_compared_in_constant_time(void **state)
{
    (void)state;
    char *tok = mint_for("alice", NOW + 60000);
    json_t *got = NULL;
    ct_calls = 0;
    ct_last_len = 0;
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), 0);
    json_decref(got);
    assert_int_equal(ct_calls, 1);
    assert_int_equal(ct_last_len, SHA256_LEN); /* the whole mac, not a prefix */
    tok[strlen(tok) - 2] ^= 1;                 /* a wrong mac goes through the same compare */
    ct_calls = 0;
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), -EBADMSG);
    assert_int_equal(ct_calls, 1);
    free(tok);
}

static void a_token_past_the_length_bound_is_refused_before_any_work(void **state)
{
    (void)state;
    /* a payload whose token is just over REQSTATE_MAX, minted with the right key */
    size_t pad = REQSTATE_MAX * 3 / 4;
    char *big = malloc(pad + 1);
    memset(big, 'x', pad);
    big[pad] = '\0';
    json_t *p = payload("alice", NOW + 60000);
    json_object_set_new(p, "x", json_string(big));
    char *tok = reqstate_mint(KEY, p);
    assert_true(strlen(tok) > REQSTATE_MAX);
    json_t *got = NULL;
    ct_calls = 0;
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), -EBADMSG);
    assert_int_equal(ct_calls, 0); /* refused by its length, no mac computed */
    char rid[SESSION_ID_LEN + 1];
    assert_int_equal(reqstate_peek_record(tok, rid), -1);
    /* one that fits the bound opens */
    json_object_set_new(p, "x", json_string("short"));
    free(tok);
    tok = reqstate_mint(KEY, p);
    assert_true(strlen(tok) <= REQSTATE_MAX);
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), 0);
    json_decref(got);
    free(tok);
    json_decref(p);
    free(big);
}

static void a_verified_payload_without_an_integer_expiry_is_refused(void **state)
{
    (void)state;
    json_t *got = NULL;
    json_t *p = json_pack("{s:s,s:s}", "r", RID, "e", "never");
    char *tok = reqstate_mint(KEY, p);
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), -EBADMSG);
    assert_null(got);
    free(tok);
    json_decref(p);
    p = json_pack("[s]", RID); /* not an object */
    tok = reqstate_mint(KEY, p);
    assert_int_equal(reqstate_open(KEY, tok, NOW, &got), -EBADMSG);
    free(tok);
    json_decref(p);
}

static void peek_names_the_record_without_verifying_and_only_a_valid_id(void **state)
{
    (void)state;
    char rid[SESSION_ID_LEN + 1];
    unsigned char other[REQSTATE_KEY_LEN] = {0};
    json_t *p = payload("alice", NOW - 1); /* expired and of another key: routing only */
    char *tok = reqstate_mint(other, p);
    assert_int_equal(reqstate_peek_record(tok, rid), 0);
    assert_string_equal(rid, RID);
    free(tok);
    json_object_set_new(p, "r", json_string("not-an-id"));
    tok = reqstate_mint(KEY, p);
    assert_int_equal(reqstate_peek_record(tok, rid), -1);
    free(tok);
    assert_int_equal(reqstate_peek_record(NULL, rid), -1);
    assert_int_equal(reqstate_peek_record("no-dot-here", rid), -1);
    json_decref(p);
}

static void the_digest_is_of_canonical_json_so_key_order_does_not_matter(void **state)
{
    (void)state;
    char a[33], b[33], c[33], none[33];
    json_t *x = json_loads("{\"b\":1,\"a\":[1,2]}", 0, NULL);
    json_t *y = json_loads("{\"a\":[1,2],\"b\":1}", 0, NULL);
    json_t *z = json_loads("{\"a\":[2,1],\"b\":1}", 0, NULL);
    reqstate_digest(x, a);
    reqstate_digest(y, b);
    reqstate_digest(z, c);
    reqstate_digest(NULL, none);
    assert_int_equal(strlen(a), 32);
    assert_int_equal(strspn(a, "0123456789abcdef"), 32);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    /* no arguments hash as the empty text: SHA-256("") starts e3b0c442... */
    assert_string_equal(none, "e3b0c44298fc1c149afbf4c8996fb924");
    json_decref(x);
    json_decref(y);
    json_decref(z);
}

/* Validation hands a handler 1 for a 1.0 sent where its schema says integer, and a first round
 * is digested after it while its retry is digested as sent: a whole real reads as the integer
 * it equals, at any depth and under a key holding U+0000; other numbers stay apart. */
static json_t *nul_key(char last, json_t *v)
{
    json_t *o = json_object();
    char key[3] = {'k', '\0', last};
    json_object_setn_new_nocheck(o, key, sizeof key, v);
    return o;
}

static void a_whole_real_digests_as_its_integer(void **state)
{
    (void)state;
    enum { SAME = 2, PAIRS = 4 + SAME };
    json_t *pairs[PAIRS][2] = {
        {json_loads("[\"t\",{\"ms\":1.0}]", 0, NULL), json_loads("[\"t\",{\"ms\":1}]", 0, NULL)},
        {json_loads("{\"a\":[{\"n\":-3.0}],\"z\":2e3}", 0, NULL),
         json_loads("{\"a\":[{\"n\":-3}],\"z\":2000}", 0, NULL)},
        /* apart: */
        {json_loads("{\"ms\":1.5}", 0, NULL), json_loads("{\"ms\":1}", 0, NULL)},
        {json_loads("{\"ms\":\"1\"}", 0, NULL), json_loads("{\"ms\":1}", 0, NULL)},
        {json_loads("{\"big\":1e300}", 0, NULL), json_loads("{\"big\":1e299}", 0, NULL)},
        {nul_key('x', json_integer(5)), nul_key('y', json_integer(5))},
    };
    for (int i = 0; i < PAIRS; i++) {
        assert_non_null(pairs[i][0]);
        assert_non_null(pairs[i][1]);
        char a[33], b[33];
        reqstate_digest(pairs[i][0], a);
        reqstate_digest(pairs[i][1], b);
        if (i < SAME)
            assert_string_equal(a, b);
        else
            assert_string_not_equal(a, b);
        json_decref(pairs[i][0]);
        json_decref(pairs[i][1]);
    }
    /* under a key holding U+0000 too */
    json_t *x = nul_key('x', json_real(5.0)), *y = nul_key('x', json_integer(5));
    char a[33], b[33];
    reqstate_digest(x, a);
    reqstate_digest(y, b);
    assert_string_equal(a, b);
    json_decref(x);
    json_decref(y);
}

static void *no_memory(size_t n)
{
    (void)n;
    return NULL;
}

static void a_payload_without_json_text_makes_no_token(void **state)
{
    (void)state;
    /* json_dumps' NULL was read by strlen: the process died instead of refusing */
    assert_null(reqstate_mint(KEY, NULL));
    json_t *p = payload("alice", NOW + 60000);
    json_object_set_new(p, "p", json_stringn_nocheck("\xff", 1)); /* not UTF-8 */
    assert_null(reqstate_mint(KEY, p));
    json_decref(p);
    p = payload("alice", NOW + 60000);
    json_set_alloc_funcs(no_memory, free); /* json_dumps' buffer cannot be had */
    char *tok = reqstate_mint(KEY, p);
    json_set_alloc_funcs(malloc, free);
    assert_null(tok);
    tok = reqstate_mint(KEY, p); /* with memory again, the same payload is a token */
    assert_non_null(tok);
    free(tok);
    json_decref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_minted_token_opens_to_the_payload_it_was_minted_from),
        cmocka_unit_test(a_token_with_any_one_bit_flipped_is_refused),
        cmocka_unit_test(a_truncated_or_extended_token_is_refused),
        cmocka_unit_test(a_token_minted_with_another_key_is_refused),
        cmocka_unit_test(a_token_is_good_until_its_expiry_and_expired_from_then_on),
        cmocka_unit_test(another_principals_payload_under_this_mac_is_refused),
        cmocka_unit_test(the_mac_is_compared_in_constant_time),
        cmocka_unit_test(a_token_past_the_length_bound_is_refused_before_any_work),
        cmocka_unit_test(a_verified_payload_without_an_integer_expiry_is_refused),
        cmocka_unit_test(peek_names_the_record_without_verifying_and_only_a_valid_id),
        cmocka_unit_test(the_digest_is_of_canonical_json_so_key_order_does_not_matter),
        cmocka_unit_test(a_whole_real_digests_as_its_integer),
        cmocka_unit_test(a_payload_without_json_text_makes_no_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
