/* The project's cryptography, all of it from OpenSSL 3 (libcrypto): SHA-256 (manifest and
 * fetched-file checksums, requestState record keys), HMAC-SHA-256 (the requestState tokens the
 * server mints) and a constant-time compare. Thin wrappers with the project's error style; no
 * algorithm is written here. Any thread. */
#ifndef MCPD_CORE_CRYPTO_H
#define MCPD_CORE_CRYPTO_H

#include <stddef.h>

#define SHA256_LEN 32

/* A running SHA-256: sha256_init, sha256_update..., then sha256_final, or sha256_discard on a
 * path that gives up (both free what init allocated). */
typedef struct sha256 {
    void *_md; /* EVP_MD_CTX */
} sha256_t;

void sha256_init(sha256_t *c);
void sha256_update(sha256_t *c, const void *data, size_t n);
void sha256_final(sha256_t *c, unsigned char out[SHA256_LEN]);
void sha256_discard(sha256_t *c);
void sha256(const void *data, size_t n, unsigned char out[SHA256_LEN]);
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
                 unsigned char out[SHA256_LEN]);
/* Compares n bytes in time independent of where they differ (CRYPTO_memcmp): 0 when equal. */
int ct_memcmp(const void *a, const void *b, size_t n);
/* Overwrites n bytes with zeros in a way the compiler does not drop (OPENSSL_cleanse): secrets
 * do not linger in freed memory. */
void secure_zero(void *p, size_t n);

#endif
