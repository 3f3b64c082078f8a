/* Threads: any thread (pure functions). */
/* Base64 (RFC 4648) with OpenSSL's codec (EVP_EncodeBlock, EVP_DecodeBlock), which knows the
 * standard alphabet with padding only: the URL-safe form is mapped onto it (two characters
 * swapped, padding added or dropped). What OpenSSL's decoder allows and this API does not is
 * refused before it: characters outside the alphabet, surrounding blanks, padding where it
 * may not be, and a last character whose unused bits are not zero (one encoding per value).
 * Pure functions, any thread. */
#include "core/b64.h"

#include "core/util.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

size_t b64_encode(const void *in, size_t n, char *out, bool url)
{
    size_t o = (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    if (url) {
        while (o && out[o - 1] == '=')
            o--;
        out[o] = '\0';
        for (size_t i = 0; i < o; i++) {
            if (out[i] == '+')
                out[i] = '-';
            else if (out[i] == '/')
                out[i] = '_';
        }
    }
    return o;
}

/* A character's 6 bits, or -1 when it is not in the alphabet. */
static int value_of(char c, bool url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

long b64_decode(const char *in, size_t len, unsigned char *out, bool url)
{
    size_t pad = 0;
    if (!url) {
        if (len % 4)
            return -1;
        while (pad < 2 && len > pad && in[len - 1 - pad] == '=')
            pad++;
    } else if (len % 4 == 1) {
        return -1;
    }
    size_t n = len - pad; /* characters that carry bits */
    for (size_t i = 0; i < n; i++)
        if (value_of(in[i], url) < 0)
            return -1;
    /* the bits the last character carries past the last whole byte must be zero */
    int spare = (int)(n * 6 % 8);
    if (spare && (value_of(in[n - 1], url) & ((1 << spare) - 1)))
        return -1;
    if (n == 0)
        return 0;
    size_t whole = (n + 3) / 4 * 4; /* with padding, in the standard alphabet */
    char small[512];
    char *std = whole <= sizeof small ? small : xmalloc(whole);
    memcpy(std, in, n);
    for (size_t i = n; i < whole; i++)
        std[i] = '=';
    if (url) {
        for (size_t i = 0; i < n; i++) {
            if (std[i] == '-')
                std[i] = '+';
            else if (std[i] == '_')
                std[i] = '/';
        }
    }
    /* EVP_DecodeBlock writes whole / 4 * 3 bytes, the padding's as zeros */
    int got = EVP_DecodeBlock(out, (const unsigned char *)std, (int)whole);
    if (std != small)
        free(std);
    if (got < 0)
        return -1;
    return (long)(n * 6 / 8);
}
