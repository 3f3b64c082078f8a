/* Threads: any thread (RocksDB is thread-safe; writes go into the caller's batch). */
/* The event log. Any thread (see eventlog.h). */
#include "store/eventlog.h"

#include "core/jsondump.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "core/util.h"
#include "store/keys.h"

#include <errno.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

/* ---- events ---- */

void eventlog_append(store_t *s, store_batch_t *b, const char *sid, uint64_t stream, uint64_t seq,
                     const char *data, size_t len, uint64_t cap, uint64_t *evicted_bytes)
{
    unsigned char k[KEY_EVENT_LEN];
    key_event(k, sid, stream, seq);
    store_batch_put(b, CF_EVENTS, k, sizeof k, data, len);
    *evicted_bytes = 0;
    if (cap && seq > cap)
        *evicted_bytes = eventlog_evict(s, b, sid, stream, seq - cap, NULL);
}

uint64_t eventlog_evict(store_t *s, store_batch_t *b, const char *sid, uint64_t stream,
                        uint64_t seq, const uint64_t *known)
{
    unsigned char k[KEY_EVENT_LEN];
    key_event(k, sid, stream, seq);
    size_t old = 0; /* the evicted event's size, for the caller's byte budget */
    if (known)
        old = (size_t)*known;
    else if (store_get(s, CF_EVENTS, k, sizeof k, NULL, &old) != 0)
        old = 0;
    store_batch_single_delete(b, CF_EVENTS, k, sizeof k);
    return old;
}

long eventlog_replay_after(store_t *s, const char *sid, uint64_t stream, uint64_t after,
                           eventlog_event_fn fn, void *arg, uint64_t *first_seq)
{
    *first_seq = 0;
    if (after == UINT64_MAX)
        return 0; /* nothing follows it (and after + 1 would wrap to the stream's start) */
    unsigned char lo[KEY_EVENT_LEN], hi[KEY_EVENT_LEN];
    key_event(lo, sid, stream, after + 1);
    key_event(hi, sid, stream + 1, 0);
    store_iter_t *it = store_iter_new(s, CF_EVENTS, lo, sizeof lo, hi, sizeof hi);
    long n = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl, vl;
        uint64_t st, seq;
        const unsigned char *k = store_iter_key(it, &kl);
        if (key_event_decode(k, kl, &st, &seq) != 0 || st != stream)
            break;
        if (!n)
            *first_seq = seq;
        const char *v = store_iter_value(it, &vl);
        fn(arg, seq, v, vl);
        n++;
    }
    if (store_iter_error(it) != 0)
        n = -EIO;
    store_iter_free(it);
    return n;
}

int eventlog_newest(store_t *s, const char *sid, uint64_t stream, uint64_t *seq)
{
    unsigned char lo[KEY_EVENT_LEN], hi[KEY_EVENT_LEN];
    key_event(lo, sid, stream, 0);
    key_event(hi, sid, stream, UINT64_MAX);
    store_iter_t *it = store_iter_new(s, CF_EVENTS, lo, sizeof lo, hi, sizeof hi);
    store_iter_seek_last(it);
    uint64_t st;
    *seq = 0;
    if (store_iter_valid(it)) {
        size_t kl;
        const unsigned char *k = store_iter_key(it, &kl);
        if (key_event_decode(k, kl, &st, seq) != 0)
            *seq = 0;
    }
    int rc = store_iter_error(it);
    store_iter_free(it);
    return rc;
}

uint64_t eventlog_newest_seq(store_t *s, const char *sid, uint64_t stream)
{
    uint64_t seq;
    return eventlog_newest(s, sid, stream, &seq) == 0 ? seq : 0;
}

void eventlog_delete_events(store_batch_t *b, const char *sid, uint64_t stream)
{
    unsigned char lo[KEY_EVENT_LEN], hi[KEY_EVENT_LEN];
    key_event(lo, sid, stream, 0);
    key_event(hi, sid, stream + 1, 0);
    store_batch_delete_range(b, CF_EVENTS, lo, sizeof lo, hi, sizeof hi);
}

/* ---- stream records ---- */

void eventlog_put_stream(store_batch_t *b, const char *sid, uint64_t stream, const streamrec_t *r)
{
    size_t vl;
    char *v = streamrec_encode(r, &vl);
    unsigned char k[KEY_STREAM_LEN];
    key_stream(k, sid, stream);
    store_batch_put(b, CF_STREAMS, k, sizeof k, v, vl);
    free(v);
}

int eventlog_get_stream(store_t *s, const char *sid, uint64_t stream, streamrec_t *r)
{
    unsigned char k[KEY_STREAM_LEN];
    key_stream(k, sid, stream);
    char *v;
    size_t vl;
    int rc = store_get(s, CF_STREAMS, k, sizeof k, &v, &vl);
    if (rc != 0)
        return rc;
    rc = streamrec_decode(v, vl, r) == 0 ? 0 : 1;
    free(v);
    if (rc)
        log_warn("session %.8s: stream %llu has a malformed record; treated as absent", sid,
                 (unsigned long long)stream);
    return rc;
}

uint64_t eventlog_next_stream(store_t *s, const char *sid)
{
    unsigned char lo[KEY_STREAM_LEN], hi[KEY_STREAM_LEN];
    key_stream(lo, sid, 0);
    key_stream(hi, sid, UINT64_MAX);
    store_iter_t *it = store_iter_new(s, CF_STREAMS, lo, sizeof lo, hi, sizeof hi);
    store_iter_seek_last(it);
    uint64_t next = 1;
    if (store_iter_valid(it)) {
        size_t kl;
        uint64_t num;
        const unsigned char *key = store_iter_key(it, &kl); /* sets kl first */
        if (key_stream_decode(key, kl, &num) == 0 && num + 1 > next)
            next = num + 1;
    }
    if (store_iter_error(it) != 0)
        next = 0;
    store_iter_free(it);
    return next;
}

uint64_t eventlog_stream_totals(store_t *s, const char *sid, uint64_t *bytes, bool *all_known)
{
    unsigned char lo[KEY_STREAM_LEN], hi[KEY_STREAM_LEN];
    key_stream(lo, sid, 0);
    key_stream(hi, sid, UINT64_MAX);
    store_iter_t *it = store_iter_new(s, CF_STREAMS, lo, sizeof lo, hi, sizeof hi);
    uint64_t next = 1;
    *bytes = 0;
    *all_known = true;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl, vl;
        uint64_t num, b;
        bool known;
        const unsigned char *key = store_iter_key(it, &kl);
        const char *v = store_iter_value(it, &vl);
        if (key_stream_decode(key, kl, &num) == 0 && num + 1 > next)
            next = num + 1;
        if (streamrec_bytes(v, vl, &b, &known) == 0)
            *bytes += b;
        *all_known = *all_known && known;
    }
    if (store_iter_error(it) != 0)
        next = 0;
    store_iter_free(it);
    return next;
}

/* ---- finished streams by expiry ---- */

void eventlog_index_expiry(store_batch_t *b, const char *sid, int64_t expiry_ms, uint64_t stream)
{
    unsigned char k[KEY_EXPIRY_LEN];
    key_expiry(k, sid, expiry_ms, stream);
    store_batch_put(b, CF_EXPIRY, k, sizeof k, "", 0);
}

int64_t eventlog_first_expiry(store_t *s, const char *sid)
{
    unsigned char lo[KEY_EXPIRY_LEN], hi[SESSION_ID_LEN];
    key_expiry(lo, sid, 0, 0);
    key_session_upper(hi, sid);
    store_iter_t *it = store_iter_new(s, CF_EXPIRY, lo, sizeof lo, hi, sizeof hi);
    store_iter_seek_first(it);
    int64_t expiry = 0;
    uint64_t num;
    if (store_iter_valid(it)) {
        size_t kl;
        const unsigned char *key = store_iter_key(it, &kl); /* sets kl first */
        if (key_expiry_decode(key, kl, &expiry, &num) != 0)
            expiry = 0;
    }
    store_iter_free(it);
    return expiry;
}

void eventlog_scan_expiry(store_t *s, const char *sid, int64_t until, eventlog_expiry_fn fn,
                          void *arg)
{
    unsigned char lo[KEY_EXPIRY_LEN], hi[KEY_EXPIRY_LEN];
    key_expiry(lo, sid, 0, 0);
    size_t hl;
    if (until == INT64_MAX) {
        key_session_upper(hi, sid);
        hl = SESSION_ID_LEN;
    } else {
        hl = key_expiry(hi, sid, until + 1, 0);
    }
    store_iter_t *it = store_iter_new(s, CF_EXPIRY, lo, sizeof lo, hi, hl);
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl;
        const unsigned char *k = store_iter_key(it, &kl);
        int64_t expiry;
        uint64_t num;
        if (key_expiry_decode(k, kl, &expiry, &num) != 0)
            continue;
        if (!fn(arg, expiry, num))
            break;
    }
    store_iter_free(it);
}

uint64_t eventlog_delete_stream(store_t *s, store_batch_t *b, const char *sid, uint64_t stream,
                                int64_t expiry_ms)
{
    streamrec_t r;
    uint64_t bytes = 0;
    if (eventlog_get_stream(s, sid, stream, &r) == 0) {
        bytes = r.bytes;
        json_decref(r.req_ids);
    }
    eventlog_delete_events(b, sid, stream);
    unsigned char k[KEY_EXPIRY_LEN];
    key_stream(k, sid, stream);
    store_batch_delete(b, CF_STREAMS, k, KEY_STREAM_LEN);
    key_expiry(k, sid, expiry_ms, stream);
    store_batch_delete(b, CF_EXPIRY, k, KEY_EXPIRY_LEN);
    return bytes;
}

/* ---- the in-flight index ---- */

static atomic_long g_inflight_writes;

long eventlog_inflight_writes(void)
{
    return atomic_load(&g_inflight_writes);
}

static void inflight_key(store_batch_t *b, const char *sid, const json_t *id, uint64_t stream,
                         bool put)
{
    size_t tl;
    char *t = json_dump_compact(id, &tl);
    unsigned char *k = xmalloc(SESSION_ID_LEN + tl + 9);
    size_t kl = key_reqmap(k, sid, t, tl, stream);
    atomic_fetch_add_explicit(&g_inflight_writes, 1, memory_order_relaxed);
    if (put)
        store_batch_put(b, CF_REQMAP, k, kl, "", 0);
    else
        store_batch_delete(b, CF_REQMAP, k, kl);
    free(k);
    free(t);
}

void eventlog_inflight_put(store_batch_t *b, const char *sid, const json_t *id, uint64_t stream)
{
    inflight_key(b, sid, id, stream, true);
}

void eventlog_inflight_delete(store_batch_t *b, const char *sid, const json_t *id, uint64_t stream)
{
    inflight_key(b, sid, id, stream, false);
}

/* [stream, id] of one index key, or NULL when it does not have that shape. */
static json_t *inflight_entry(const unsigned char *k, size_t kl)
{
    if (kl < SESSION_ID_LEN + 10 || k[kl - 9] != 0)
        return NULL;
    json_t *id = json_parse_buf((const char *)k + SESSION_ID_LEN, kl - SESSION_ID_LEN - 9, NULL, 0,
                                NULL);
    return id ? json_pack("[I,o]", (json_int_t)key_get_u64(k + kl - 8), id) : NULL;
}

json_t *eventlog_inflight_list(store_t *s, const char *sid, int *err)
{
    unsigned char hi[SESSION_ID_LEN];
    key_session_upper(hi, sid);
    store_iter_t *it = store_iter_new(s, CF_REQMAP, sid, SESSION_ID_LEN, hi, sizeof hi);
    json_t *list = json_array();
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl;
        const unsigned char *k = store_iter_key(it, &kl);
        json_t *e = inflight_entry(k, kl);
        if (e)
            json_array_append_new(list, e);
    }
    *err = store_iter_error(it);
    store_iter_free(it);
    if (*err != 0) { /* a read error stopped it: the rest is unread, not absent */
        json_decref(list);
        list = NULL;
    }
    return list;
}

/* fn gets each session of the iterator's range with its entries, once (it takes the list);
 * the iterator is freed. */
static long inflight_scan(store_iter_t *it, eventlog_inflight_fn fn, void *arg)
{
    long n = 0;
    char sid[SESSION_ID_LEN + 1] = "";
    json_t *list = NULL;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl;
        const unsigned char *k = store_iter_key(it, &kl);
        json_t *e = inflight_entry(k, kl);
        if (!e)
            continue;
        if (list && memcmp(sid, k, SESSION_ID_LEN) != 0) {
            fn(arg, sid, list); /* it takes the list */
            list = NULL;
        }
        if (!list) {
            memcpy(sid, k, SESSION_ID_LEN);
            sid[SESSION_ID_LEN] = '\0';
            list = json_array();
        }
        json_array_append_new(list, e);
        n++;
    }
    if (list)
        fn(arg, sid, list);
    if (store_iter_error(it) != 0)
        n = -EIO;
    store_iter_free(it);
    return n;
}

long eventlog_inflight_scan_all(store_t *s, eventlog_inflight_fn fn, void *arg)
{
    return inflight_scan(store_iter_new_scan(s, CF_REQMAP), fn, arg);
}

long eventlog_inflight_scan_prefix(store_t *s, const char *prefix, size_t plen,
                                   eventlog_inflight_fn fn, void *arg)
{
    if (plen == 0 || plen > SESSION_ID_LEN)
        return 0;
    char hi[SESSION_ID_LEN];
    memcpy(hi, prefix, plen);
    hi[plen - 1]++; /* ids are hex: no carry */
    return inflight_scan(store_iter_new(s, CF_REQMAP, prefix, plen, hi, plen), fn, arg);
}

/* ---- a whole session ---- */

void eventlog_delete_session(store_batch_t *b, const char *sid, bool only_meta)
{
    if (only_meta) {
        store_batch_delete(b, CF_SESSIONS, sid, SESSION_ID_LEN);
        return;
    }
    unsigned char hi[SESSION_ID_LEN];
    key_session_upper(hi, sid);
    const store_cf_t cfs[] = {CF_SESSIONS, CF_STREAMS, CF_EVENTS, CF_REQMAP, CF_STATE, CF_EXPIRY};
    for (size_t i = 0; i < sizeof cfs / sizeof cfs[0]; i++)
        store_batch_delete_range(b, cfs[i], sid, SESSION_ID_LEN, hi, sizeof hi);
}
