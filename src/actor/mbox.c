/* Threads: any thread (HTTP threads count requests in, the session's worker counts them out);
 * main thread makes and frees a table. */
/* Mailbox counts per session (see mbox.h).
 *
 * Each bucket is a cache line: its lock, the count of the session it keeps in place, that
 * session's id, and the list of the bucket's other sessions with requests queued (made when
 * a second session of the bucket has a request queued at the same time, freed when its count
 * is back to 0). The lock is a word taken with one exchange: what is done under it is a compare
 * of the id and an add (and a walk of the list, where the bucket has one; its entries are made
 * and freed outside the lock), so a thread that finds it taken spins a little, then yields (its
 * holder may have lost its CPU). */
#include "actor/mbox.h"

#include "core/util.h"

#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

typedef struct more {
    struct more *next;
    int n;
    char sid[SESSION_ID_LEN];
} more_t;

typedef struct bucket {
    alignas(64) atomic_int lock;
    int n; /* requests queued of the session in sid; 0: the place is free */
    char sid[SESSION_ID_LEN];
    more_t *more; /* the bucket's other sessions with requests queued */
} bucket_t;

struct mbox {
    bucket_t b[MBOX_BUCKETS];
    uint64_t seed; /* mbox_bucket's */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A taken lock: spins a little, then yields (its holder may have lost its CPU). */
static __attribute__((noinline)) void bucket_wait(bucket_t *b)
{
    do {
        for (int i = 0; atomic_load_explicit(&b->lock, memory_order_relaxed); i++) {
            if (i < 64)
                cpu_relax();
            else
                sched_yield();
        }
    } while (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire));
}

static inline void bucket_lock(bucket_t *b)
{
    if (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
        bucket_wait(b);
}

static inline void bucket_unlock(bucket_t *b)
{
    atomic_store_explicit(&b->lock, 0, memory_order_release);
}

mbox_t *mbox_new(void)
{
    mbox_t *mb = aligned_alloc(alignof(mbox_t), sizeof *mb);
    if (!mb)
        abort();
    memset(mb, 0, sizeof *mb);
    for (int i = 0; i < MBOX_BUCKETS; i++)
        atomic_init(&mb->b[i].lock, 0);
    const char *fixed = getenv("MCPD_MBOX_SEED"); /* tests: ids they place in one bucket */
    if (fixed && *fixed)
        mb->seed = strtoull(fixed, NULL, 16);
    else if (getrandom(&mb->seed, sizeof mb->seed, 0) != (ssize_t)sizeof mb->seed)
        mb->seed = (uint64_t)now_mono_us() * 0x9e3779b97f4a7c15ULL ^ (uintptr_t)mb;
    return mb;
}

unsigned mbox_bucket(const mbox_t *mb, const char *sid)
{
    return (unsigned)(hash_id_seeded(sid, SESSION_ID_LEN, mb->seed) >> 40) % MBOX_BUCKETS;
}

void mbox_free(mbox_t *mb)
{
    if (!mb)
        return;
    for (int i = 0; i < MBOX_BUCKETS; i++) {
        for (more_t *e = mb->b[i].more, *next; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    free(mb);
}

static inline bool same(const char *a, const char *b)
{
    return memcmp(a, b, SESSION_ID_LEN) == 0;
}

/* Under the lock: the count of sid in b, or NULL when it has none. */
static int *find(bucket_t *b, const char *sid)
{
    if (b->n > 0 && same(b->sid, sid))
        return &b->n;
    for (more_t *e = b->more; e; e = e->next)
        if (same(e->sid, sid))
            return &e->n;
    return NULL;
}

/* mbox_add's every case, b locked (and unlocked here); called for those of a list (sid listed,
 * or the place taken by another session) and for a bucket found locked. */
static __attribute__((noinline)) int add_more(bucket_t *b, const char *sid, int limit)
{
    more_t *spare = NULL;
    int n;
    for (;;) {
        int *c = find(b, sid);
        if (c) {
            n = *c < limit ? ++*c : 0;
            break;
        }
        if (b->n == 0) { /* the place came free meanwhile */
            memcpy(b->sid, sid, SESSION_ID_LEN);
            n = b->n = 1;
            break;
        }
        if (spare) {
            memcpy(spare->sid, sid, SESSION_ID_LEN);
            n = spare->n = 1;
            spare->next = b->more;
            b->more = spare;
            spare = NULL;
            break;
        }
        /* its entry is made outside the lock, then the bucket is looked at again (another
         * thread may have counted sid meanwhile) */
        bucket_unlock(b);
        spare = xmalloc(sizeof *spare);
        bucket_lock(b);
    }
    bucket_unlock(b);
    free(spare);
    return n;
}

/* Waits for b's lock, then counts as add_more. */
static __attribute__((noinline)) int add_waited(bucket_t *b, const char *sid, int limit)
{
    bucket_wait(b);
    return add_more(b, sid, limit);
}

/* The fast cases calls nothing but in tail position: no registers saved, no frame. */
int mbox_add(mbox_t *mb, unsigned bi, const char *sid, int limit)
{
    bucket_t *b = &mb->b[bi];
    if (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
        return add_waited(b, sid, limit);
    if (b->n == 0 && !b->more) { /* the common case: a bucket with nothing queued */
        memcpy(b->sid, sid, SESSION_ID_LEN);
        b->n = 1;
        bucket_unlock(b);
        return 1;
    }
    if (b->n > 0 && same(b->sid, sid)) { /* the session in place */
        int n = b->n < limit ? ++b->n : 0;
        bucket_unlock(b);
        return n;
    }
    return add_more(b, sid, limit);
}

/* mbox_done's every case, b locked (and unlocked here); called for a listed sid and for a
 * bucket found locked. */
static __attribute__((noinline)) void done_more(bucket_t *b, const char *sid)
{
    if (b->n > 0 && same(b->sid, sid)) {
        b->n--;
        bucket_unlock(b);
        return;
    }
    more_t *gone = NULL;
    for (more_t **p = &b->more; *p; p = &(*p)->next) {
        if (!same((*p)->sid, sid))
            continue;
        if (--(*p)->n == 0) {
            gone = *p;
            *p = gone->next;
        }
        break;
    }
    bucket_unlock(b);
    free(gone);
}

static __attribute__((noinline)) void done_waited(bucket_t *b, const char *sid)
{
    bucket_wait(b);
    done_more(b, sid);
}

void mbox_done(mbox_t *mb, unsigned bi, const char *sid)
{
    bucket_t *b = &mb->b[bi];
    if (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire)) {
        done_waited(b, sid);
        return;
    }
    if (b->n > 0 && same(b->sid, sid)) {
        b->n--;
        bucket_unlock(b);
        return;
    }
    done_more(b, sid);
}

int mbox_count(mbox_t *mb, const char *sid)
{
    bucket_t *b = &mb->b[mbox_bucket(mb, sid)];
    bucket_lock(b);
    int *c = find(b, sid);
    int n = c ? *c : 0;
    bucket_unlock(b);
    return n;
}

long mbox_sessions(mbox_t *mb)
{
    long n = 0;
    for (int i = 0; i < MBOX_BUCKETS; i++) {
        bucket_t *b = &mb->b[i];
        bucket_lock(b);
        n += b->n > 0;
        for (more_t *e = b->more; e; e = e->next)
            n++;
        bucket_unlock(b);
    }
    return n;
}
