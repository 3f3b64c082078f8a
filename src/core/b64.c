/* Base64 (RFC 4648). Pure functions, any thread. */
#include "core/b64.h"

#include <stdint.h>

static const char STD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t b64_encode(const void *in, size_t n, char *out, bool url)
{
    const unsigned char *p = in;
    const char *abc = url ? URL : STD;
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        out[o++] = abc[v >> 6 & 63];
        out[o++] = abc[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        if (!url) {
            out[o++] = '=';
            out[o++] = '=';
        }
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        out[o++] = abc[v >> 6 & 63];
        if (!url)
            out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

static int val(char c, bool url)
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
    size_t n = len - pad, o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = val(in[i], url);
        if (v < 0)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits & 0xff);
        }
    }
    /* the bits left over must be zero (one encoding per value) */
    if (bits && (acc & ((1u << bits) - 1)))
        return -1;
    return (long)o;
}
