/* Threads: any thread (one mutex; references are atomic). */
/* Principals and their shares of the global caps (principal.h). Any thread.
 *
 * One mutex guards the table and every count: a take is a check of two numbers and an
 * increment, so a cap holds exactly under any concurrency, and no count is on the path of an
 * ordinary call (sessions, handles and tasks are created once; connections once per accept).
 * References are: every request's message holds one on its connection's principal, so every
 * loop would meet at the mutex twice a request. A reference is an atomic count instead, taken
 * and dropped without the lock while others remain; the last one is dropped under the lock,
 * where the entry may go, so it cannot race with principal_get finding the entry in the table
 * (a count of 1 is the caller's own: no one else can take one without the lock then). The
 * table is chained, 1024 buckets; an entry goes when nothing references it and it holds
 * nothing. */
#include "core/principal.h"

#include "core/stats.h"
#include "core/util.h"

#include <errno.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS 1024

struct principal {
    struct principal *next; /* bucket chain */
    uint64_t hash;
    _Atomic long refs; /* see the top: changed without the lock but at the last one */
    long long held[PR__COUNT];
    principal_sched_t sched; /* the tool pool's (its mutex) */
    char name[PRINCIPAL_NAME_MAX];
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static principal_t *g_buckets[NBUCKETS];
static long long g_total[PR__COUNT];
static long long g_live;
static int64_t g_caps[PR__COUNT];
static int g_share_pct = 100;

void principals_configure(const int64_t caps[PR__COUNT], int share_pct)
{
    pthread_mutex_lock(&g_mu);
    for (int r = 0; r < PR__COUNT; r++)
        g_caps[r] = caps[r];
    g_share_pct = share_pct < 1 ? 1 : share_pct > 100 ? 100 : share_pct;
    pthread_mutex_unlock(&g_mu);
}

static int64_t share_locked(int64_t n)
{
    if (n <= 0)
        return 0;
    int64_t l = n / 100 * g_share_pct + n % 100 * g_share_pct / 100;
    return l < 1 ? 1 : l;
}

static int64_t limit_locked(pres_t r)
{
    return share_locked(g_caps[r]);
}

int64_t principal_share_of(int64_t n)
{
    pthread_mutex_lock(&g_mu);
    int64_t l = share_locked(n);
    pthread_mutex_unlock(&g_mu);
    return l;
}

int64_t principal_limit(pres_t r)
{
    pthread_mutex_lock(&g_mu);
    int64_t l = limit_locked(r);
    pthread_mutex_unlock(&g_mu);
    return l;
}

static bool empty(principal_t *p)
{
    if (atomic_load_explicit(&p->refs, memory_order_acquire))
        return false;
    for (int r = 0; r < PR__COUNT; r++)
        if (p->held[r])
            return false;
    return true;
}

/* Unlinks and frees p when nothing references it and it holds nothing (the lock held). */
static void maybe_free(principal_t *p)
{
    if (!empty(p))
        return;
    for (principal_t **pp = &g_buckets[p->hash % NBUCKETS]; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    g_live--;
    STAT_DEC(principals_live);
    free(p);
}

/* The entry for name, made when absent (the lock held); no reference taken. */
static principal_t *find_locked(const char *name)
{
    size_t n = strnlen(name, PRINCIPAL_NAME_MAX - 1);
    uint64_t h = hash_bytes(name, n);
    for (principal_t *p = g_buckets[h % NBUCKETS]; p; p = p->next)
        if (p->hash == h && strncmp(p->name, name, n) == 0 && p->name[n] == '\0')
            return p;
    principal_t *p = xcalloc(1, sizeof *p);
    memcpy(p->name, name, n);
    p->hash = h;
    p->next = g_buckets[h % NBUCKETS];
    g_buckets[h % NBUCKETS] = p;
    g_live++;
    STAT_INC(principals_live);
    return p;
}

principal_t *principal_get(const char *name)
{
    pthread_mutex_lock(&g_mu);
    principal_t *p = find_locked(name);
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&g_mu);
    return p;
}

principal_t *principal_of(char kind, const char *value)
{
    char name[PRINCIPAL_NAME_MAX];
    snprintf(name, sizeof name, "%c:%s", kind, value ? value : "");
    return principal_get(name);
}

int principal_address(const char *addr, char *out, size_t n)
{
    struct in_addr v4;
    struct in6_addr v6;
    if (!addr)
        return -1;
    if (inet_pton(AF_INET, addr, &v4) == 1)
        return inet_ntop(AF_INET, &v4, out, (socklen_t)n) ? 0 : -1;
    if (inet_pton(AF_INET6, addr, &v6) != 1)
        return -1;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
        memcpy(&v4, v6.s6_addr + 12, 4);
        return inet_ntop(AF_INET, &v4, out, (socklen_t)n) ? 0 : -1;
    }
    memset(v6.s6_addr + 8, 0, 8); /* one client may hold a whole /64 */
    if (!inet_ntop(AF_INET6, &v6, out, (socklen_t)n))
        return -1;
    size_t len = strlen(out);
    if (len + 4 > n)
        return -1;
    memcpy(out + len, "/64", 4);
    return 0;
}

int principal_forwarded(const char *xff, char *out, size_t n)
{
    if (!xff)
        return -1;
    const char *comma = strrchr(xff, ',');
    const char *a = comma ? comma + 1 : xff;
    while (*a == ' ' || *a == '\t')
        a++;
    char addr[INET6_ADDRSTRLEN];
    size_t len = strcspn(a, " \t");
    if (len == 0 || len >= sizeof addr)
        return -1;
    for (const char *p = a + len; *p; p++)
        if (*p != ' ' && *p != '\t')
            return -1; /* something after the address: not one address */
    memcpy(addr, a, len);
    addr[len] = '\0';
    return principal_address(addr, out, n);
}

principal_t *principal_of_address(const char *addr)
{
    char norm[INET6_ADDRSTRLEN + 4];
    return principal_of('a', principal_address(addr, norm, sizeof norm) == 0 ? norm : addr);
}

principal_t *principal_ref(principal_t *p)
{
    if (p) /* the caller holds one: the entry stays */
        atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void principal_unref(principal_t *p)
{
    if (!p)
        return;
    long n = atomic_load_explicit(&p->refs, memory_order_relaxed);
    while (n > 1) /* not the last: the entry stays whatever else happens meanwhile */
        if (atomic_compare_exchange_weak_explicit(&p->refs, &n, n - 1, memory_order_release,
                                                  memory_order_relaxed))
            return;
    pthread_mutex_lock(&g_mu);
    atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel);
    maybe_free(p);
    pthread_mutex_unlock(&g_mu);
}

const char *principal_name(const principal_t *p)
{
    return p->name; /* fixed at creation */
}

principal_sched_t *principal_sched(principal_t *p)
{
    return &p->sched;
}

int principal_take(principal_t *p, pres_t r)
{
    return principal_take_upto(p, r, 0);
}

int principal_take_counted(principal_t *p, pres_t r)
{
    int rc = principal_take(p, r);
    if (rc != 0) {
        STAT_INC(limit_refusals_total);
        if (rc == -EDQUOT)
            STAT_INC(share_refusals_total);
    }
    return rc;
}

int principal_take_upto(principal_t *p, pres_t r, long long most)
{
    pthread_mutex_lock(&g_mu);
    int rc = 0;
    int64_t limit = limit_locked(r);
    if (g_caps[r] > 0 && g_total[r] >= g_caps[r])
        rc = -ENOSPC;
    else if (most > 0 && p->held[r] >= most)
        rc = -EDQUOT;
    else if (limit > 0 && p->held[r] >= limit && p->name[0] != 'p')
        rc = -EDQUOT; /* "p:": a trusted proxy's connections carry many clients */
    else {
        p->held[r]++;
        g_total[r]++;
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

void principal_give(principal_t *p, pres_t r)
{
    pthread_mutex_lock(&g_mu);
    if (p->held[r] > 0) {
        p->held[r]--;
        g_total[r]--;
    }
    maybe_free(p);
    pthread_mutex_unlock(&g_mu);
}

void principal_give_share(principal_t *p, pres_t r)
{
    pthread_mutex_lock(&g_mu);
    if (p->held[r] > 0)
        p->held[r]--;
    maybe_free(p);
    pthread_mutex_unlock(&g_mu);
}

void principal_give_global(pres_t r)
{
    principal_add_global(r, -1);
}

void principal_add_global(pres_t r, long long n)
{
    pthread_mutex_lock(&g_mu);
    if (n < 0 && -n > g_total[r])
        n = -g_total[r];
    g_total[r] += n;
    pthread_mutex_unlock(&g_mu);
}

void principal_add(const char *name, pres_t r, long long n)
{
    pthread_mutex_lock(&g_mu);
    principal_t *p = find_locked(name);
    if (n < 0 && -n > p->held[r])
        n = -p->held[r]; /* never below nothing: a count that drifted stays sane */
    p->held[r] += n;
    g_total[r] += n;
    maybe_free(p);
    pthread_mutex_unlock(&g_mu);
}

long long principal_held(const principal_t *p, pres_t r)
{
    pthread_mutex_lock(&g_mu);
    long long n = p->held[r];
    pthread_mutex_unlock(&g_mu);
    return n;
}

long long principal_total(pres_t r)
{
    pthread_mutex_lock(&g_mu);
    long long n = g_total[r];
    pthread_mutex_unlock(&g_mu);
    return n;
}

long long principals_live(void)
{
    pthread_mutex_lock(&g_mu);
    long long n = g_live;
    pthread_mutex_unlock(&g_mu);
    return n;
}
