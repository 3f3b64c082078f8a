/* Threads: any thread. */
/* OpenSSL 3 behind the project's names (crypto.h). libcrypto failing to hash is a broken
 * installation, not a condition a caller can handle: it aborts with a message, as an allocation
 * failure does (xmalloc). */
#include "core/crypto.h"

#include "core/log.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdlib.h>

static void fail(const char *what)
{
    log_error("libcrypto: %s failed", what);
    abort();
}

/* SHA-256 fetched once: EVP_sha256() makes OpenSSL 3 look the algorithm up again (under its
 * lock) at every digest. Never freed: it lives as long as the process. */
static EVP_MD *g_sha256;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void fetch_once(void)
{
    g_sha256 = EVP_MD_fetch(NULL, "SHA2-256", NULL);
}

static const EVP_MD *sha256_md(void)
{
    pthread_once(&g_once, fetch_once);
    if (!g_sha256)
        fail("fetching SHA-256");
    return g_sha256;
}

void sha256_init(sha256_t *c)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, sha256_md(), NULL) != 1)
        fail("SHA-256 init");
    c->_md = md;
}

void sha256_update(sha256_t *c, const void *data, size_t n)
{
    if (EVP_DigestUpdate(c->_md, data, n) != 1)
        fail("SHA-256 update");
}

void sha256_final(sha256_t *c, unsigned char out[SHA256_LEN])
{
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(c->_md, out, &len) != 1 || len != SHA256_LEN)
        fail("SHA-256 final");
    sha256_discard(c);
}

void sha256_discard(sha256_t *c)
{
    EVP_MD_CTX_free(c->_md);
    c->_md = NULL;
}

void sha256(const void *data, size_t n, unsigned char out[SHA256_LEN])
{
    unsigned int len = 0;
    if (EVP_Digest(data, n, out, &len, sha256_md(), NULL) != 1 || len != SHA256_LEN)
        fail("SHA-256");
}

void hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
                 unsigned char out[SHA256_LEN])
{
    unsigned int len = 0;
    /* a zero-length key is a valid HMAC key; OpenSSL wants a non-NULL pointer for it */
    static const unsigned char none[1];
    if (!HMAC(sha256_md(), keylen ? key : none, (int)keylen, data, n, out, &len) ||
        len != SHA256_LEN)
        fail("HMAC-SHA-256");
}

int ct_memcmp(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n);
}

void secure_zero(void *p, size_t n)
{
    OPENSSL_cleanse(p, n);
}
