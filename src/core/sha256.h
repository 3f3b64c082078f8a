/* SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104): the integrity of the tokens the server
 * mints (2026-07-28 requestState). Pure functions, any thread. */
#ifndef MCPD_CORE_SHA256_H
#define MCPD_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

typedef struct sha256 {
    uint32_t h[8];
    uint64_t len;       /* bytes hashed so far */
    unsigned char buf[64];
    size_t nbuf;
} sha256_t;

void sha256_init(sha256_t *c);
void sha256_update(sha256_t *c, const void *data, size_t n);
void sha256_final(sha256_t *c, unsigned char out[SHA256_LEN]);
void sha256(const void *data, size_t n, unsigned char out[SHA256_LEN]);
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
                 unsigned char out[SHA256_LEN]);
/* Compares n bytes in time independent of where they differ: 0 when equal. */
int ct_memcmp(const void *a, const void *b, size_t n);

#endif
