/* Unit tests: SHA-256 (FIPS 180-4 examples) and HMAC-SHA-256 (RFC 4231) (src/core/crypto.c: OpenSSL behind the project's names). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/crypto.h"

static void hex(const unsigned char *d, char *out)
{
    for (int i = 0; i < SHA256_LEN; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void the_fips_examples_hash(void **state)
{
    (void)state;
    unsigned char d[SHA256_LEN];
    char h[65];
    sha256("abc", 3, d);
    hex(d, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha256("", 0, d);
    hex(d, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256(two, strlen(two), d);
    hex(d, h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void hashing_in_pieces_gives_the_same_digest(void **state)
{
    (void)state;
    unsigned char msg[1000], one[SHA256_LEN], parts[SHA256_LEN];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (unsigned char)(i * 7);
    sha256(msg, sizeof msg, one);
    sha256_t c;
    sha256_init(&c);
    for (size_t off = 0, step = 1; off < sizeof msg; off += step, step = step * 3 % 97 + 1)
        sha256_update(&c, msg + off, off + step > sizeof msg ? sizeof msg - off : step);
    sha256_final(&c, parts);
    assert_memory_equal(one, parts, SHA256_LEN);
}

static void the_rfc4231_hmac_cases(void **state)
{
    (void)state;
    unsigned char d[SHA256_LEN];
    char h[65];
    unsigned char key1[20];
    memset(key1, 0x0b, sizeof key1);
    hmac_sha256(key1, sizeof key1, "Hi There", 8, d);
    hex(d, h);
    assert_string_equal(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    hex(d, h);
    assert_string_equal(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    unsigned char key6[131];
    memset(key6, 0xaa, sizeof key6); /* longer than a block: hashed first */
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    hmac_sha256(key6, sizeof key6, m6, strlen(m6), d);
    hex(d, h);
    assert_string_equal(h, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void ct_memcmp_finds_any_difference(void **state)
{
    (void)state;
    assert_int_equal(ct_memcmp("abcd", "abcd", 4), 0);
    assert_int_not_equal(ct_memcmp("abcd", "abce", 4), 0);
    assert_int_not_equal(ct_memcmp("xbcd", "abcd", 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_fips_examples_hash),
        cmocka_unit_test(hashing_in_pieces_gives_the_same_digest),
        cmocka_unit_test(the_rfc4231_hmac_cases),
        cmocka_unit_test(ct_memcmp_finds_any_difference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
