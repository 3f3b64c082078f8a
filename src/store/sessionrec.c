/* Threads: any thread. */
/* A session's own records. Any thread (see sessionrec.h). */
#include "store/sessionrec.h"

#include "core/util.h"
#include "store/keys.h"

#include <errno.h>
#include <string.h>

void sessionrec_put_meta(store_batch_t *b, const char *sid, const char *text, size_t len)
{
    store_batch_put(b, CF_SESSIONS, sid, SESSION_ID_LEN, text, len);
}

int sessionrec_get_meta(store_t *s, const char *sid, char **text, size_t *len)
{
    return store_get(s, CF_SESSIONS, sid, SESSION_ID_LEN, text, len);
}

/* Counts the metadata records it walks, by kind; frees it. *err: 0, or -EIO when a read error
 * stopped the walk. */
static uint64_t count_kinds(store_iter_t *it, sessionrec_kind_fn kind, uint64_t *by_kind,
                            int nkinds, int *err)
{
    uint64_t n = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t vl;
        const char *v = store_iter_value(it, &vl);
        int k = kind(v, vl);
        if (k >= 0 && k < nkinds)
            by_kind[k]++;
        n++;
    }
    *err = store_iter_error(it);
    store_iter_free(it);
    return n;
}

uint64_t sessionrec_count(store_t *s, sessionrec_kind_fn kind, uint64_t *by_kind, int nkinds)
{
    if (!kind)
        return store_count_keys(s, CF_SESSIONS);
    int err;
    return count_kinds(store_iter_new_scan(s, CF_SESSIONS), kind, by_kind, nkinds, &err);
}

int sessionrec_count_prefix(store_t *s, const char *prefix, size_t plen, sessionrec_kind_fn kind,
                            uint64_t *by_kind, int nkinds)
{
    char upper[SESSION_ID_LEN];
    if (plen == 0 || plen > sizeof upper)
        return 0;
    memcpy(upper, prefix, plen);
    upper[plen - 1]++;
    int err;
    count_kinds(store_iter_new(s, CF_SESSIONS, prefix, plen, upper, plen), kind, by_kind, nkinds,
                &err);
    return err;
}

int sessionrec_scan_meta(store_t *s, const char *prefix, size_t plen, sessionrec_meta_fn fn,
                         void *arg)
{
    char upper[SESSION_ID_LEN];
    if (plen > sizeof upper)
        return 0;
    store_iter_t *it;
    if (plen == 0) {
        it = store_iter_new_scan(s, CF_SESSIONS);
    } else {
        memcpy(upper, prefix, plen);
        upper[plen - 1]++;
        it = store_iter_new(s, CF_SESSIONS, prefix, plen, upper, plen);
    }
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl, vl;
        const unsigned char *k = store_iter_key(it, &kl);
        const char *v = store_iter_value(it, &vl);
        if (kl != SESSION_ID_LEN)
            continue;
        char sid[SESSION_ID_LEN + 1];
        memcpy(sid, k, SESSION_ID_LEN);
        sid[SESSION_ID_LEN] = '\0';
        fn(arg, sid, v, vl);
    }
    int rc = store_iter_error(it);
    store_iter_free(it);
    return rc;
}

int sessionrec_alarms_of_prefix(store_t *s, const char *prefix, size_t plen, uint64_t *count,
                                int64_t *earliest)
{
    *earliest = 0;
    uint64_t n = 0;
    store_iter_t *it = store_iter_new(s, CF_ALARMS, NULL, 0, NULL, 0);
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl;
        const unsigned char *k = store_iter_key(it, &kl);
        int64_t due;
        char sid[SESSION_ID_LEN + 1];
        if (key_alarm_decode(k, kl, &due, sid) != 0 || strncmp(sid, prefix, plen) != 0)
            continue;
        if (!n || due < *earliest)
            *earliest = due;
        n++;
    }
    int rc = store_iter_error(it);
    store_iter_free(it);
    *count = n;
    return rc;
}

void sessionrec_put_alarm(store_batch_t *b, int64_t due_ms, const char *sid)
{
    unsigned char k[KEY_ALARM_LEN];
    key_alarm(k, due_ms, sid);
    store_batch_put(b, CF_ALARMS, k, sizeof k, "", 0);
}

void sessionrec_delete_alarm(store_batch_t *b, int64_t due_ms, const char *sid)
{
    unsigned char k[KEY_ALARM_LEN];
    key_alarm(k, due_ms, sid);
    store_batch_delete(b, CF_ALARMS, k, sizeof k);
}

int64_t sessionrec_first_alarm(store_t *s, int64_t floor_ms)
{
    unsigned char lo[KEY_ALARM_LEN];
    memset(lo, 0, sizeof lo);
    key_put_u64(lo, (uint64_t)floor_ms);
    store_iter_t *it = store_iter_new(s, CF_ALARMS, NULL, 0, NULL, 0);
    store_iter_seek(it, lo, sizeof lo);
    int64_t due = 0;
    if (store_iter_valid(it)) {
        size_t kl;
        char sid[SESSION_ID_LEN + 1];
        const unsigned char *key = store_iter_key(it, &kl); /* sets kl first */
        if (key_alarm_decode(key, kl, &due, sid) != 0)
            due = 0;
    }
    if (store_iter_error(it) != 0)
        due = -EIO;
    store_iter_free(it);
    return due;
}

long sessionrec_scan_alarms(store_t *s, int64_t from_ms, int64_t until_ms, sessionrec_alarm_fn fn,
                            void *arg)
{
    unsigned char lo[KEY_ALARM_LEN], hi[KEY_ALARM_LEN];
    memset(lo, 0, sizeof lo);
    memset(hi, 0, sizeof hi);
    key_put_u64(lo, (uint64_t)from_ms);
    key_put_u64(hi, (uint64_t)until_ms + 1);
    store_iter_t *it = store_iter_new(s, CF_ALARMS, lo, sizeof lo, hi, sizeof hi);
    long n = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl;
        int64_t due;
        char sid[SESSION_ID_LEN + 1];
        const unsigned char *key = store_iter_key(it, &kl); /* sets kl first */
        if (key_alarm_decode(key, kl, &due, sid) != 0)
            continue;
        fn(arg, due, sid);
        n++;
    }
    if (store_iter_error(it) != 0)
        n = -EIO;
    store_iter_free(it);
    return n;
}

int64_t sessionrec_count_alarms(store_t *s, bool (*keep)(const char *sid))
{
    store_iter_t *it = store_iter_new_scan(s, CF_ALARMS);
    int64_t n = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl;
        int64_t due;
        char sid[SESSION_ID_LEN + 1];
        const unsigned char *key = store_iter_key(it, &kl); /* sets kl first */
        if (!keep || (key_alarm_decode(key, kl, &due, sid) == 0 && keep(sid)))
            n++;
    }
    if (store_iter_error(it) != 0)
        n = -EIO;
    store_iter_free(it);
    return n;
}

int sessionrec_get_state(store_t *s, const char *sid, const char *name, char **text, size_t *len)
{
    unsigned char k[KEY_STATE_MAX];
    long kl = key_state(k, sid, name);
    if (kl < 0)
        return -EINVAL;
    return store_get(s, CF_STATE, k, (size_t)kl, text, len);
}

int sessionrec_put_state(store_batch_t *b, const char *sid, const char *name, const char *text,
                         size_t len)
{
    unsigned char k[KEY_STATE_MAX];
    long kl = key_state(k, sid, name);
    if (kl < 0)
        return -EINVAL;
    store_batch_put(b, CF_STATE, k, (size_t)kl, text, len);
    return 0;
}

int sessionrec_delete_state(store_batch_t *b, const char *sid, const char *name)
{
    unsigned char k[KEY_STATE_MAX];
    long kl = key_state(k, sid, name);
    if (kl < 0)
        return -EINVAL;
    store_batch_delete(b, CF_STATE, k, (size_t)kl);
    return 0;
}
