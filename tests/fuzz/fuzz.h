/* Helpers shared by the libFuzzer harnesses. One thread: libFuzzer's. */
#ifndef MCPD_FUZZ_H
#define MCPD_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entry point libFuzzer calls with each input (declared for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant of the code under test. A broken one aborts, which libFuzzer reports as a crash
 * and saves the input (crash-<sha1>) for the regression corpus. */
#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz invariant broken: %s at %s:%d\n", #cond, __FILE__,       \
                    __LINE__);                                                             \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* A cursor over the input, consumed front to back. */
typedef struct fuzz_in {
    const uint8_t *p;
    size_t left;
} fuzz_in_t;

/* The next byte, or 0 when the input is used up. */
static inline uint8_t fuzz_u8(fuzz_in_t *in)
{
    if (in->left == 0)
        return 0;
    in->left--;
    return *in->p++;
}

/* The next 4 bytes big-endian (missing bytes are 0). */
static inline uint32_t fuzz_u32(fuzz_in_t *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 8) | fuzz_u8(in);
    return v;
}

/* The next 8 bytes big-endian (missing bytes are 0). */
static inline uint64_t fuzz_u64(fuzz_in_t *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | fuzz_u8(in);
    return v;
}

/* The bytes up to the next sep (not included, and consumed) or to the end, as a malloc'd
 * NUL-terminated copy of exactly that length (ASan sees any read past it); *len gets the
 * length when len is not NULL. NULL when the input is used up. */
static inline char *fuzz_field(fuzz_in_t *in, uint8_t sep, size_t *len)
{
    if (in->left == 0)
        return NULL;
    const uint8_t *end = memchr(in->p, sep, in->left);
    size_t n = end ? (size_t)(end - in->p) : in->left;
    char *s = malloc(n + 1);
    if (!s)
        abort();
    memcpy(s, in->p, n);
    s[n] = '\0';
    in->p += n;
    in->left -= n;
    if (end) {
        in->p++;
        in->left--;
    }
    if (len)
        *len = n;
    return s;
}

/* Everything left, as a malloc'd copy of exactly that length (plus a NUL after it). */
static inline char *fuzz_rest(fuzz_in_t *in, size_t *len)
{
    char *s = malloc(in->left + 1);
    if (!s)
        abort();
    if (in->left)
        memcpy(s, in->p, in->left);
    s[in->left] = '\0';
    *len = in->left;
    in->p += in->left;
    in->left = 0;
    return s;
}

#endif
