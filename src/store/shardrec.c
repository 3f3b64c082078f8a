/* Threads: main thread at start, then the shard-move thread. */
/* Shard ownership records (see shardrec.h). Main thread at start, then the shard-move thread. */
#include "store/shardrec.h"

#include "core/util.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_PREFIX "shard/"
#define KEY_LEN (sizeof KEY_PREFIX - 1 + SHARD_HEX)

static const char *const STATE_NAMES[] = {"none", "owned", "released"};

const char *shardrec_state_name(shardrec_state_t st)
{
    return (unsigned)st < sizeof STATE_NAMES / sizeof *STATE_NAMES ? STATE_NAMES[st] : "?";
}

static void key_of(int shard, char out[KEY_LEN])
{
    memcpy(out, KEY_PREFIX, sizeof KEY_PREFIX - 1);
    shard_put(out + sizeof KEY_PREFIX - 1, shard);
}

size_t shardrec_encode(const shardrec_t *r, char *out, size_t cap)
{
    /* peer names are checked where they come in (cluster file, admin requests): letters,
     * digits, '_', '.', '-' only, so they need no escaping */
    int n = snprintf(out, cap, "{\"s\":\"%s\",\"e\":%u,\"d\":%u,\"x\":%s,\"p\":\"%s\"}",
                     shardrec_state_name(r->state), r->epoch, r->declined,
                     r->export_kept ? "true" : "false", r->peer);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

static bool peer_name_ok(const char *p)
{
    for (; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

static bool epoch_ok(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 &&
           json_integer_value(v) <= SHARDREC_EPOCH_MAX;
}

int shardrec_decode(const char *v, size_t vl, shardrec_t *r)
{
    memset(r, 0, sizeof *r);
    json_t *o = json_loadb(v, vl, JSON_REJECT_DUPLICATES, NULL);
    int rc = -EINVAL;
    if (!json_is_object(o))
        goto out;
    const char *st = json_string_value(json_object_get(o, "s"));
    json_t *e = json_object_get(o, "e"), *d = json_object_get(o, "d"), *x = json_object_get(o, "x"),
           *p = json_object_get(o, "p");
    if (!st || !epoch_ok(e) || !epoch_ok(d) || !json_is_boolean(x) || !json_is_string(p))
        goto out;
    if (strcmp(st, "owned") == 0)
        r->state = SHARDREC_OWNED;
    else if (strcmp(st, "released") == 0)
        r->state = SHARDREC_RELEASED;
    else if (strcmp(st, "none") == 0)
        r->state = SHARDREC_NONE;
    else
        goto out;
    const char *peer = json_string_value(p);
    if (json_string_length(p) > SHARDREC_PEER_MAX || strlen(peer) != json_string_length(p) ||
        !peer_name_ok(peer))
        goto out;
    r->epoch = (uint32_t)json_integer_value(e);
    r->declined = (uint32_t)json_integer_value(d);
    r->export_kept = json_is_true(x);
    strcpy(r->peer, peer);
    if (r->state != SHARDREC_NONE && r->epoch == 0)
        goto out; /* a held or released shard always has an epoch */
    rc = 0;
out:
    json_decref(o);
    if (rc != 0)
        memset(r, 0, sizeof *r);
    return rc;
}

int shardrec_get(store_t *s, int shard, shardrec_t *r)
{
    char k[KEY_LEN];
    key_of(shard, k);
    char *v = NULL;
    size_t vl = 0;
    memset(r, 0, sizeof *r);
    int rc = store_get(s, CF_NODE, k, sizeof k, &v, &vl);
    if (rc != 0)
        return rc;
    rc = shardrec_decode(v, vl, r) == 0 ? 0 : -EIO;
    free(v);
    return rc;
}

#define BOOT_KEY "shards-bootstrapped"

#define BOOT_PENDING "pending"

int shardrec_bootstrapped(store_t *s)
{
    char *v = NULL;
    size_t vl = 0;
    int rc = store_get(s, CF_NODE, BOOT_KEY, sizeof BOOT_KEY - 1, &v, &vl);
    if (rc != 0)
        return rc < 0 ? rc : SHARDREC_BOOT_NONE;
    bool pending = vl == sizeof BOOT_PENDING - 1 && memcmp(v, BOOT_PENDING, vl) == 0;
    free(v);
    return pending ? SHARDREC_BOOT_PENDING : SHARDREC_BOOT_DONE;
}

int shardrec_mark_pending(store_t *s)
{
    store_batch_t *b = store_batch_new(s);
    store_batch_put(b, CF_NODE, BOOT_KEY, sizeof BOOT_KEY - 1, BOOT_PENDING,
                    sizeof BOOT_PENDING - 1);
    int rc = store_commit_sync(s, b);
    store_batch_free(b);
    return rc;
}

static int put_batch(store_t *s, const int *shards, const shardrec_t *recs, int n, bool boot)
{
    store_batch_t *b = store_batch_new(s);
    if (boot)
        store_batch_put(b, CF_NODE, BOOT_KEY, sizeof BOOT_KEY - 1, "1", 1);
    for (int i = 0; i < n; i++) {
        char k[KEY_LEN], v[256];
        key_of(shards[i], k);
        size_t vl = shardrec_encode(&recs[i], v, sizeof v);
        REQUIRE(vl > 0);
        store_batch_put(b, CF_NODE, k, sizeof k, v, vl);
    }
    int rc = store_commit_sync(s, b);
    store_batch_free(b);
    return rc;
}

int shardrec_put_many(store_t *s, const int *shards, const shardrec_t *recs, int n)
{
    return put_batch(s, shards, recs, n, false);
}

int shardrec_bootstrap(store_t *s, const int *shards, const shardrec_t *recs, int n)
{
    return put_batch(s, shards, recs, n, true);
}

int shardrec_put(store_t *s, int shard, const shardrec_t *r)
{
    return shardrec_put_many(s, &shard, r, 1);
}

int shardrec_load_all(store_t *s, shardrec_t recs[SHARD_COUNT], bool bad[SHARD_COUNT])
{
    memset(recs, 0, sizeof(shardrec_t) * SHARD_COUNT);
    memset(bad, 0, sizeof(bool) * SHARD_COUNT);
    char lo[] = KEY_PREFIX, hi[] = KEY_PREFIX;
    hi[sizeof hi - 2]++; /* "shard0": just past every "shard/..." key */
    store_iter_t *it = store_iter_new(s, CF_NODE, lo, sizeof lo - 1, hi, sizeof hi - 1);
    int rc = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl, vl;
        const unsigned char *k = store_iter_key(it, &kl);
        const char *v = store_iter_value(it, &vl);
        int shard = kl == KEY_LEN ? shard_of((const char *)k + sizeof KEY_PREFIX - 1) : -1;
        if (shard < 0)
            continue; /* not a record of this layout */
        if (shardrec_decode(v, vl, &recs[shard]) != 0) {
            bad[shard] = true;
            rc = -EINVAL;
        }
    }
    if (store_iter_error(it) != 0)
        rc = -EIO;
    store_iter_free(it);
    return rc;
}
