/* Unit tests: base64, standard with padding and URL-safe without (src/core/b64.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/b64.h"

/* RFC 4648 section 10 test vectors */
static const char *const PLAIN[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
static const char *const STD[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
static const char *const URL[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};

static void the_rfc_vectors_encode(void **state)
{
    (void)state;
    char out[32];
    for (size_t i = 0; i < 7; i++) {
        assert_int_equal(b64_encode(PLAIN[i], strlen(PLAIN[i]), out, false), strlen(STD[i]));
        assert_string_equal(out, STD[i]);
        assert_int_equal(b64_encode(PLAIN[i], strlen(PLAIN[i]), out, true), strlen(URL[i]));
        assert_string_equal(out, URL[i]);
    }
}

static void the_rfc_vectors_decode(void **state)
{
    (void)state;
    unsigned char out[32];
    for (size_t i = 0; i < 7; i++) {
        long n = b64_decode(STD[i], strlen(STD[i]), out, false);
        assert_int_equal(n, strlen(PLAIN[i]));
        assert_memory_equal(out, PLAIN[i], (size_t)n);
        n = b64_decode(URL[i], strlen(URL[i]), out, true);
        assert_int_equal(n, strlen(PLAIN[i]));
        assert_memory_equal(out, PLAIN[i], (size_t)n);
    }
}

static void the_alphabets_differ_in_two_characters(void **state)
{
    (void)state;
    const unsigned char bytes[] = {0xfb, 0xff, 0xbf};
    char out[8];
    b64_encode(bytes, 3, out, false);
    assert_string_equal(out, "+/+/");
    b64_encode(bytes, 3, out, true);
    assert_string_equal(out, "-_-_");
    unsigned char back[8];
    assert_int_equal(b64_decode("-_-_", 4, back, false), -1);
    assert_int_equal(b64_decode("+/+/", 4, back, true), -1);
}

static void malformed_input_is_refused(void **state)
{
    (void)state;
    unsigned char out[32];
    assert_int_equal(b64_decode("Zg=", 3, out, false), -1);   /* length not a multiple of 4 */
    assert_int_equal(b64_decode("Zg", 2, out, false), -1);    /* standard needs its padding */
    assert_int_equal(b64_decode("Z===", 4, out, false), -1);  /* too much padding */
    assert_int_equal(b64_decode("Zm 9", 4, out, false), -1);  /* a space */
    assert_int_equal(b64_decode("Zh==", 4, out, false), -1);  /* non-zero leftover bits */
    assert_int_equal(b64_decode("Z", 1, out, true), -1);      /* one character is no byte */
    assert_int_equal(b64_decode(" Zm9", 4, out, true), -1);   /* OpenSSL skips blanks; not here */
    assert_int_equal(b64_decode("Zm9\n", 4, out, false), -1); /* nor a trailing newline */
    assert_int_equal(b64_decode("Zm9=", 4, out, true), -1);   /* no padding in the URL form */
    assert_int_equal(b64_decode("Zg=a", 4, out, false), -1);  /* padding inside */
}

/* Every length from 0 to 2,000 bytes (past the decoder's stack buffer) goes and comes back in
 * both alphabets. */
static void long_inputs_go_and_come_back(void **state)
{
    (void)state;
    enum { MAX = 2000 };
    static unsigned char in[MAX], back[MAX + 4];
    static char text[B64_ENCODED_SIZE(MAX)];
    for (size_t i = 0; i < MAX; i++)
        in[i] = (unsigned char)(i * 131 + 7);
    for (size_t n = 0; n <= MAX; n += n < 20 ? 1 : 97) {
        for (int url = 0; url < 2; url++) {
            size_t len = b64_encode(in, n, text, url);
            assert_int_equal(len, strlen(text));
            assert_int_equal(len, url ? (n * 4 + 2) / 3 : (n + 2) / 3 * 4);
            assert_int_equal(b64_decode(text, len, back, url), (long)n);
            assert_memory_equal(in, back, n);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_rfc_vectors_encode),
        cmocka_unit_test(the_rfc_vectors_decode),
        cmocka_unit_test(the_alphabets_differ_in_two_characters),
        cmocka_unit_test(malformed_input_is_refused),
        cmocka_unit_test(long_inputs_go_and_come_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
