/* The DPoP proof replay cache (see jti.h). */
#include "actor/jti.h"

#include "actor/alarm.h"
#include "core/dpop.h"
#include "core/log.h"
#include "core/util.h"
#include "store/keys.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define PREFIX "dpop/"
#define PREFIX_LEN (sizeof PREFIX - 1)
#define KEY_MAX (PREFIX_LEN + 8 + DPOP_JKT_LEN + DPOP_JTI_MAX)
#define STRIPES 64

static struct {
    store_t *store;
    int64_t window_s;
    int64_t max;
    atomic_llong count;
    atomic_llong due_ms; /* the sweep armed (or hinted) at, 0: none */
    pthread_mutex_t stripe[STRIPES];
} J;

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
        store_batch_single_delete(b, CF_NODE, k, kl); /* each key was put once */
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
    bool more = false, failed = false;
    long n = sweep_below(cutoff, &more, &failed);
    if (n) {
        atomic_fetch_sub(&J.count, n);
        log_debug("dpop: %ld expired proof records swept, %lld kept", n,
                  (long long)atomic_load(&J.count));
    }
    int64_t next = 0;
    if (more) {
        next = now_ms + (failed ? 1000 : 100); /* a refusing store: again in a second */
    } else {
        int64_t iat = first_iat();
        if (iat >= 0)
            next = expiry_ms(iat) + JTI_SWEEP_GRANULE_S * 1000;
    }
    if (next)
        arm(next);
    return next;
}

int jti_open(store_t *s, int64_t window_s, int64_t max)
{
    J.store = s;
    J.window_s = window_s;
    J.max = max > 0 ? max : JTI_DEFAULT_MAX;
    atomic_store(&J.due_ms, 0);
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&J.stripe[i], NULL);
    /* what expired while the server was down goes now; the rest is counted */
    bool more = true, failed = false;
    int64_t cutoff = now_wall_ms() / 1000 - window_s - JTI_SWEEP_MARGIN_S;
    for (int i = 0; more && !failed && i < 64; i++) /* what is left: the alarm's */
        sweep_below(cutoff, &more, &failed);
    static const char lo[] = PREFIX, hi[] = "dpop0";
    store_iter_t *it = store_iter_new(s, CF_NODE, lo, PREFIX_LEN, hi, PREFIX_LEN);
    long long n = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
        n++;
    store_iter_free(it);
    atomic_store(&J.count, n);
    int64_t iat = first_iat();
    if (iat >= 0)
        arm(expiry_ms(iat) + JTI_SWEEP_GRANULE_S * 1000);
    if (n)
        log_info("dpop: %lld proof records kept from before the start (their replays are refused)", n);
    return 0;
}

void jti_close(void)
{
    if (!J.store)
        return;
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_destroy(&J.stripe[i]);
    J.store = NULL;
}

jti_result_t jti_check(const char *jkt, const char *jti, size_t jti_len, int64_t iat)
{
    if (!J.store || jti_len == 0 || jti_len > DPOP_JTI_MAX)
        return JTI_ERROR;
    unsigned char k[KEY_MAX];
    size_t kl = key_of(k, iat, jkt, jti, jti_len);
    uint32_t h = 2166136261u; /* FNV-1a picks the stripe */
    for (size_t i = 0; i < kl; i++)
        h = (h ^ k[i]) * 16777619u;
    pthread_mutex_t *mu = &J.stripe[h % STRIPES];
    pthread_mutex_lock(mu);
    jti_result_t r;
    int e = store_exists(J.store, CF_NODE, k, kl);
    if (e < 0) {
        r = JTI_ERROR;
    } else if (e) {
        r = JTI_REPLAY;
    } else if (atomic_load(&J.count) >= J.max) {
        r = JTI_FULL;
    } else {
        store_batch_t *b = store_batch_new(J.store);
        store_batch_put(b, CF_NODE, k, kl, "", 0);
        r = store_commit(J.store, b) == 0 ? JTI_FRESH : JTI_ERROR;
        store_batch_free(b);
        if (r == JTI_FRESH)
            atomic_fetch_add(&J.count, 1);
    }
    pthread_mutex_unlock(mu);
    if (r == JTI_FRESH)
        arm(expiry_ms(iat) + JTI_SWEEP_GRANULE_S * 1000);
    return r;
}

int64_t jti_count(void)
{
    return atomic_load(&J.count);
}

int64_t jti_retry_after(void)
{
    int64_t iat = J.store ? first_iat() : -1;
    int64_t s = iat < 0 ? 1 : iat + J.window_s + JTI_SWEEP_MARGIN_S - now_wall_ms() / 1000;
    return s < 1 ? 1 : s;
}
