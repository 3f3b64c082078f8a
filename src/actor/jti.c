/* Threads: HTTP threads (jti_check); the alarm thread (jti_sweep); main thread (open, close). */
/* The DPoP proof replay cache (see jti.h). */
#include "actor/jti.h"

#include "actor/alarm.h"
#include "core/dpop.h"
#include "core/log.h"
#include "core/util.h"
#include "store/keys.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "dpop/"
#define PREFIX_LEN (sizeof PREFIX - 1)
#define KEY_MAX (PREFIX_LEN + 8 + DPOP_JKT_LEN + DPOP_JTI_MAX)
#define STRIPES 64
#define HW_KEY "dpop-cutoff" /* outside "dpop/".."dpop0": '-' sorts before '/' */
#define NO_IAT INT64_MAX

/* Records per principal (the `who` of the token a proof came with, stored as the record's
 * value), one open-addressing table per share stripe: a principal's counts all take the stripe
 * its name picks, whose lock guards its table entry. A client makes its own proof keys (RFC
 * 9449), so a count per key would let one client with a few keys fill the cache. Owned by this
 * file; an entry whose count falls to 0 stays until the table is rebuilt (at growth). */
typedef struct {
    char who[JTI_WHO_MAX + 1];
    int64_t n; /* 0: free or emptied */
    bool used;
} who_slot_t;

typedef struct {
    who_slot_t *slot;
    size_t cap, used; /* used: slots ever taken since the last rebuild */
} who_map_t;

static struct {
    store_t *store;
    int64_t window_s;
    int64_t max;
    int64_t share; /* records one principal may hold */
    atomic_llong count;
    atomic_llong due_ms; /* the sweep armed (or hinted) at, 0: none */
    atomic_llong first;  /* the earliest iat held (NO_IAT: none), for Retry-After */
    atomic_llong cutoff; /* the highest sweep cutoff: a proof issued before it is refused */
    /* replay stripes, by jkt: a proof's Get and Put under one lock, so two copies of it on two
     * connections cannot both pass. Share stripes, by principal: its count. Lock order: a
     * replay stripe, then a share stripe (the sweep takes share stripes alone). */
    pthread_mutex_t stripe[STRIPES];
    pthread_mutex_t share_mu[STRIPES];
    who_map_t map[STRIPES];
} J;

static unsigned stripe_of(const char *jkt)
{
    return (unsigned)(hash_bytes(jkt, DPOP_JKT_LEN) % STRIPES);
}

/* The count slot of who (wl bytes) in m (taken when add), or NULL. Under its share stripe. */
static int64_t *map_slot(who_map_t *m, const char *who, size_t wl, bool add)
{
    if (add && (m->used + 1) * 10 > m->cap * 7) {
        size_t live = 0;
        for (size_t i = 0; i < m->cap; i++)
            live += m->slot[i].used && m->slot[i].n > 0;
        size_t cap = m->cap ? m->cap : 16;
        while ((live + 1) * 10 > cap * 4)
            cap *= 2;
        who_map_t g = {xcalloc(cap, sizeof(who_slot_t)), cap, 0};
        for (size_t i = 0; i < m->cap; i++)
            if (m->slot[i].used && m->slot[i].n > 0)
                *map_slot(&g, m->slot[i].who, strlen(m->slot[i].who), true) = m->slot[i].n;
        free(m->slot);
        *m = g;
    }
    if (!m->cap)
        return NULL;
    for (size_t i = (size_t)(hash_bytes(who, wl) / STRIPES % m->cap);; i = (i + 1) % m->cap) {
        who_slot_t *e = &m->slot[i];
        if (e->used && strlen(e->who) == wl && memcmp(e->who, who, wl) == 0)
            return &e->n;
        if (!e->used) {
            if (!add)
                return NULL;
            e->used = true;
            memcpy(e->who, who, wl);
            e->who[wl] = '\0';
            m->used++;
            return &e->n;
        }
    }
}

static void first_min(int64_t iat)
{
    long long cur = atomic_load(&J.first);
    while (iat < cur && !atomic_compare_exchange_weak(&J.first, &cur, iat))
        ;
}

static void cutoff_max(int64_t c)
{
    long long cur = atomic_load(&J.cutoff);
    while (c > cur && !atomic_compare_exchange_weak(&J.cutoff, &cur, c))
        ;
}

/* Adds d to who's count (wl bytes; a record whose value is empty, as an older server wrote it,
 * names no principal and counts in the global bound alone). With most > 0: only while the
 * count is below it (true when added). */
static bool share_add(const char *who, size_t wl, int64_t d, int64_t most)
{
    if (wl == 0 || wl > JTI_WHO_MAX)
        return most == 0;
    unsigned st = (unsigned)(hash_bytes(who, wl) % STRIPES);
    pthread_mutex_lock(&J.share_mu[st]);
    int64_t *n = map_slot(&J.map[st], who, wl, d > 0);
    bool ok = !most || (n && *n < most);
    if (n && ok)
        *n = *n + d < 0 ? 0 : *n + d;
    pthread_mutex_unlock(&J.share_mu[st]);
    return ok;
}

static size_t key_of(unsigned char *out, int64_t iat, const char *jkt, const char *jti,
                     size_t jti_len)
{
    memcpy(out, PREFIX, PREFIX_LEN);
    key_put_u64(out + PREFIX_LEN, (uint64_t)(iat < 0 ? 0 : iat));
    memcpy(out + PREFIX_LEN + 8, jkt, DPOP_JKT_LEN);
    memcpy(out + PREFIX_LEN + 8 + DPOP_JKT_LEN, jti, jti_len);
    return PREFIX_LEN + 8 + DPOP_JKT_LEN + jti_len;
}

/* When the key of a proof issued at iat may go (ms). */
static int64_t expiry_ms(int64_t iat)
{
    return (iat + J.window_s + JTI_SWEEP_MARGIN_S) * 1000;
}

/* Makes sure a sweep is armed at or before due. */
static void arm(int64_t due)
{
    long long cur = atomic_load(&J.due_ms);
    while (!cur || due < cur) {
        if (atomic_compare_exchange_weak(&J.due_ms, &cur, due)) {
            alarms_node_hint(due);
            return;
        }
    }
}

/* The first key's iat, or -1 when there is none. */
static int64_t first_iat(void)
{
    static const char lo[] = PREFIX, hi[] = "dpop0"; /* '0' follows '/' */
    store_iter_t *it = store_iter_new(J.store, CF_NODE, lo, PREFIX_LEN, hi, PREFIX_LEN);
    int64_t iat = -1;
    size_t kl = 0;
    store_iter_seek_first(it);
    if (store_iter_valid(it)) {
        const unsigned char *k = store_iter_key(it, &kl);
        if (kl >= PREFIX_LEN + 8)
            iat = (int64_t)key_get_u64(k + PREFIX_LEN);
    }
    store_iter_free(it);
    return iat;
}

/* Deletes the keys of proofs issued before cutoff_iat, at most JTI_SWEEP_MAX; returns how
 * many were deleted (more: there are more to delete; *failed: the store refused the write). */
static long sweep_below(int64_t cutoff_iat, bool *more, bool *failed)
{
    unsigned char lo[PREFIX_LEN], hi[PREFIX_LEN + 8];
    memcpy(lo, PREFIX, PREFIX_LEN);
    memcpy(hi, PREFIX, PREFIX_LEN);
    key_put_u64(hi + PREFIX_LEN, (uint64_t)(cutoff_iat < 0 ? 0 : cutoff_iat));
    store_iter_t *it = store_iter_new(J.store, CF_NODE, lo, sizeof lo, hi, sizeof hi);
    store_batch_t *b = store_batch_new(J.store);
    long n = 0, done = 0;
    *more = *failed = false;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        if (n >= JTI_SWEEP_MAX) {
            *more = true;
            break;
        }
        size_t kl = 0;
        const unsigned char *k = store_iter_key(it, &kl);
        size_t vl = 0;
        const char *who = store_iter_value(it, &vl);
        store_batch_single_delete(b, CF_NODE, k, kl); /* each key was put once */
        share_add(who, vl, -1, 0); /* (a refused write leaves the share low until a restart) */
        n++;
        if (store_batch_count(b) >= 1024) {
            if (store_commit(J.store, b) != 0) {
                *failed = *more = true;
                break;
            }
            done = n;
        }
    }
    if (!*failed) {
        unsigned char v[8];
        key_put_u64(v, (uint64_t)atomic_load(&J.cutoff));
        store_batch_put(b, CF_NODE, HW_KEY, sizeof HW_KEY - 1, v, sizeof v);
        if (store_commit(J.store, b) == 0)
            done = n;
        else
            *failed = *more = true;
    }
    store_batch_free(b);
    store_iter_free(it);
    return done;
}

int64_t jti_sweep(int64_t now_ms)
{
    if (!J.store)
        return 0;
    /* cleared first: a proof recorded while this runs either is seen below or re-arms */
    atomic_store(&J.due_ms, 0);
    int64_t cutoff = now_ms / 1000 - J.window_s - JTI_SWEEP_MARGIN_S;
    /* raised before the keys go: a proof below it is refused from now on, so a clock stepped
     * back cannot let a swept proof in again */
    cutoff_max(cutoff);
    bool more = false, failed = false;
    long n = sweep_below(cutoff, &more, &failed);
    if (n) {
        atomic_fetch_sub(&J.count, n);
        log_debug("dpop: %ld expired proof records swept, %lld kept", n,
                  (long long)atomic_load(&J.count));
    }
    int64_t next = 0;
    if (more)
        next = now_ms + (failed ? 1000 : 100); /* a refusing store: again in a second */
    /* the earliest iat held, for Retry-After: what the store now starts with, unless a proof
     * recorded meanwhile is earlier (one below the cutoff is swept, so no longer held) */
    int64_t iat = first_iat();
    int64_t first = iat < 0 ? NO_IAT : iat;
    long long cur = atomic_load(&J.first);
    while (cur != first && (cur < cutoff || cur > first) &&
           !atomic_compare_exchange_weak(&J.first, &cur, first))
        ;
    if (!more && iat >= 0)
        next = expiry_ms(iat) + JTI_SWEEP_GRANULE_S * 1000;
    if (next)
        arm(next);
    return next;
}

int jti_open(store_t *s, int64_t window_s, int64_t max, int share_pct)
{
    J.store = s;
    J.window_s = window_s;
    J.max = max > 0 ? max : JTI_DEFAULT_MAX;
    share_pct = share_pct < 1 ? 1 : share_pct > 100 ? 100 : share_pct;
    J.share = J.max / 100 * share_pct + J.max % 100 * share_pct / 100; /* as principal.c */
    if (J.share < 1)
        J.share = 1;
    atomic_store(&J.due_ms, 0);
    atomic_store(&J.first, NO_IAT);
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_init(&J.stripe[i], NULL);
        pthread_mutex_init(&J.share_mu[i], NULL);
        J.map[i] = (who_map_t){0};
    }
    /* the last cutoff swept before the stop, so a clock now behind it does not lower it */
    char *v = NULL;
    size_t vl = 0;
    int64_t cutoff = now_wall_ms() / 1000 - window_s - JTI_SWEEP_MARGIN_S;
    atomic_store(&J.cutoff, cutoff);
    int rc = store_get(s, CF_NODE, HW_KEY, sizeof HW_KEY - 1, &v, &vl);
    if (rc < 0) /* unread, not absent: a clock stepped back could readmit swept proofs */
        return -EIO;
    if (rc == 0 && vl == 8)
        cutoff_max((int64_t)key_get_u64((const unsigned char *)v));
    free(v);
    /* what expired while the server was down goes now; the rest is counted */
    bool more = true, failed = false;
    for (int i = 0; more && !failed && i < 64; i++)          /* what is left: the alarm's */
        sweep_below(atomic_load(&J.cutoff), &more, &failed); /* (below it: refused anyway) */
    static const char lo[] = PREFIX, hi[] = "dpop0";
    store_iter_t *it = store_iter_new(s, CF_NODE, lo, PREFIX_LEN, hi, PREFIX_LEN);
    long long n = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t wl = 0;
        const char *who = store_iter_value(it, &wl);
        share_add(who, wl, 1, 0);
        n++;
    }
    bool unread = store_iter_error(it) != 0; /* the count and the shares would be short */
    store_iter_free(it);
    if (unread)
        return -EIO;
    atomic_store(&J.count, n);
    int64_t iat = first_iat();
    if (iat >= 0) {
        atomic_store(&J.first, iat);
        arm(expiry_ms(iat) + JTI_SWEEP_GRANULE_S * 1000);
    }
    if (n)
        log_info("dpop: %lld proof records kept from before the start (their replays are refused)",
                 n);
    return 0;
}

void jti_close(void)
{
    if (!J.store)
        return;
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_destroy(&J.stripe[i]);
        pthread_mutex_destroy(&J.share_mu[i]);
        free(J.map[i].slot);
        J.map[i] = (who_map_t){0};
    }
    J.store = NULL;
}

jti_result_t jti_check(const char *who, const char *jkt, const char *jti, size_t jti_len,
                       int64_t iat)
{
    size_t wl = who ? strlen(who) : 0;
    if (!J.store || jti_len == 0 || jti_len > DPOP_JTI_MAX || wl == 0 || wl > JTI_WHO_MAX)
        return JTI_ERROR;
    if (iat < atomic_load(&J.cutoff))
        return JTI_STALE; /* its record may have been swept: it cannot be told from a replay */
    unsigned char k[KEY_MAX];
    size_t kl = key_of(k, iat, jkt, jti, jti_len);
    unsigned st = stripe_of(jkt); /* two copies of a proof take the same stripe */
    pthread_mutex_lock(&J.stripe[st]);
    jti_result_t r;
    int e = store_exists(J.store, CF_NODE, k, kl);
    if (e < 0) {
        r = JTI_UNREAD;
    } else if (e) {
        r = JTI_REPLAY;
    } else if (!share_add(who, wl, 1, J.share)) {
        /* this principal holds its share, whatever its keys: others get in (unless the whole
         * cache is full, as with --principal-share 100) */
        r = atomic_load(&J.count) >= J.max ? JTI_FULL : JTI_SHARE;
    } else if (atomic_fetch_add(&J.count, 1) >= J.max) {
        atomic_fetch_sub(&J.count, 1); /* the last resort: every principal's share together */
        share_add(who, wl, -1, 0);
        r = JTI_FULL;
    } else {
        store_batch_t *b = store_batch_new(J.store);
        store_batch_put(b, CF_NODE, k, kl, who, wl); /* the value: whose share it counts in */
        r = store_commit(J.store, b) == 0 ? JTI_FRESH : JTI_ERROR;
        store_batch_free(b);
        if (r != JTI_FRESH) {
            atomic_fetch_sub(&J.count, 1);
            share_add(who, wl, -1, 0);
        }
    }
    pthread_mutex_unlock(&J.stripe[st]);
    if (r == JTI_FRESH) {
        first_min(iat);
        arm(expiry_ms(iat) + JTI_SWEEP_GRANULE_S * 1000);
    }
    return r;
}

int64_t jti_count(void)
{
    return atomic_load(&J.count);
}

int64_t jti_retry_after(void)
{
    int64_t iat = atomic_load(&J.first); /* no store read on the HTTP thread */
    int64_t s = iat == NO_IAT ? 1 : iat + J.window_s + JTI_SWEEP_MARGIN_S - now_wall_ms() / 1000;
    return s < 1 ? 1 : s;
}
