/* Threads: any thread (pure functions; the process key is written once, at start). */
/* The requestState token. Pure functions, any thread. */
#include "wire/reqstate.h"

#include "core/b64.h"
#include "core/jsonparse.h"
#include "core/crypto.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned char g_process_key[REQSTATE_KEY_LEN];

unsigned char *reqstate_process_key(void)
{
    return g_process_key;
}

char *reqstate_mint(const unsigned char key[REQSTATE_KEY_LEN], const json_t *payload)
{
    char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!text)
        return NULL;
    size_t tl = strlen(text);
    char *out = xmalloc(B64_ENCODED_SIZE(tl) + 1 + B64_ENCODED_SIZE(SHA256_LEN));
    size_t n = b64_encode(text, tl, out, true);
    free(text);
    unsigned char mac[SHA256_LEN];
    hmac_sha256(key, REQSTATE_KEY_LEN, out, n, mac);
    out[n] = '.';
    b64_encode(mac, sizeof mac, out + n + 1, true);
    return out;
}

/* Splits token into its payload text (decoded, malloc'd, NUL-terminated) and its mac. */
static int split(const char *token, char **text, const char **b64, size_t *b64len,
                 unsigned char mac[SHA256_LEN])
{
    size_t len = strnlen(token, REQSTATE_MAX + 1);
    const char *dot = memchr(token, '.', len);
    if (len > REQSTATE_MAX || !dot)
        return -EBADMSG;
    *b64 = token;
    *b64len = (size_t)(dot - token);
    const char *m = dot + 1;
    size_t ml = len - *b64len - 1;
    unsigned char macbuf[SHA256_LEN + 3];
    if (ml != 43 || b64_decode(m, ml, macbuf, true) != SHA256_LEN)
        return -EBADMSG;
    memcpy(mac, macbuf, SHA256_LEN);
    *text = xmalloc(*b64len / 4 * 3 + 4);
    long n = b64_decode(token, *b64len, (unsigned char *)*text, true);
    if (n < 0) {
        free(*text);
        return -EBADMSG;
    }
    (*text)[n] = '\0';
    return 0;
}

int reqstate_open(const unsigned char key[REQSTATE_KEY_LEN], const char *token, int64_t now_ms,
                  json_t **payload)
{
    *payload = NULL;
    char *text;
    const char *b64;
    size_t b64len;
    unsigned char mac[SHA256_LEN], want[SHA256_LEN];
    if (split(token, &text, &b64, &b64len, mac) != 0)
        return -EBADMSG;
    hmac_sha256(key, REQSTATE_KEY_LEN, b64, b64len, want);
    if (ct_memcmp(mac, want, SHA256_LEN) != 0) {
        free(text);
        return -EBADMSG;
    }
    json_t *p = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    free(text);
    if (!json_is_object(p) || !json_is_integer(json_object_get(p, "e"))) {
        json_decref(p);
        return -EBADMSG;
    }
    if (json_integer_value(json_object_get(p, "e")) <= now_ms) {
        json_decref(p);
        return -ETIME;
    }
    *payload = p;
    return 0;
}

int reqstate_peek_record(const char *token, char rid[SESSION_ID_LEN + 1])
{
    char *text;
    const char *b64;
    size_t b64len;
    unsigned char mac[SHA256_LEN];
    if (!token || split(token, &text, &b64, &b64len, mac) != 0)
        return -1;
    json_t *p = json_loads(text, 0, NULL);
    free(text);
    const char *r = json_string_value(json_object_get(p, "r"));
    int rc = r && session_id_valid(r) ? 0 : -1;
    if (rc == 0)
        memcpy(rid, r, SESSION_ID_LEN + 1);
    json_decref(p);
    return rc;
}

/* v with every real of a whole value in the 64-bit range as that integer (a new reference).
 * A first round's arguments are digested after validation, which hands a handler 2 for a 2.0
 * sent where its schema says integer, and its retry's as sent: read this way, both are the
 * same text (and 2.0 and 2 are one JSON number). */
static json_t *canonical(json_t *v)
{
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (isfinite(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
            d == (double)(long long)d) /* the range first: a cast out of it is undefined */
            return json_integer((json_int_t)d);
        return json_incref(v);
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(a, canonical(json_array_get(v, i)));
        return a;
    }
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *key;
        size_t kl;
        json_t *item;
        json_object_keylen_foreach(v, key, kl, item)
            json_object_setn_new_nocheck(o, key, kl, canonical(item));
        return o;
    }
    return json_incref(v);
}

void reqstate_digest(const json_t *args, char out[33])
{
    json_t *c = args ? canonical((json_t *)args) : NULL;
    char *text = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    json_decref(c);
    unsigned char d[SHA256_LEN];
    sha256(text ? text : "", text ? strlen(text) : 0, d);
    free(text);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[32] = '\0';
}
