/* Threads: any thread reads ownership (atomics); main thread at start and the shard-move thread
 * change it. */
#include "core/shard.h"

#include "core/util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Until a cluster file is loaded, every shard is owned (a single node). */
static atomic_bool CLUSTER;
static atomic_uchar OWNED[SHARD_COUNT];
static atomic_int N_OWNED;
/* The owned shards in order, for shard_pick; rebuilt (rarely: start, a move) under a sequence
 * count that readers check, so a pick never returns a shard given up before it began. */
static atomic_int LIST[SHARD_COUNT];
static atomic_int N_LIST;
static atomic_uint SEQ;

static void rebuild_list(void)
{
    atomic_fetch_add(&SEQ, 1); /* odd: being rebuilt */
    int n = 0;
    for (int s = 0; s < SHARD_COUNT; s++)
        if (atomic_load(&OWNED[s]))
            atomic_store_explicit(&LIST[n++], s, memory_order_relaxed);
    atomic_store(&N_LIST, n);
    atomic_fetch_add(&SEQ, 1);
}
static char NODE[128];

int shard_of(const char *id)
{
    if (!id)
        return -1;
    int s = 0;
    for (int i = 0; i < SHARD_HEX; i++) {
        int v = hex_digit(id[i]);
        if (v < 0)
            return -1;
        s = s * 16 + v;
    }
    return s;
}

void shard_put(char *out, int s)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = SHARD_HEX - 1; i >= 0; i--, s >>= 4)
        out[i] = hex[s & 15];
}

bool shard_owned(int s)
{
    if (s < 0 || s >= SHARD_COUNT)
        return false;
    return !atomic_load_explicit(&CLUSTER, memory_order_acquire) ||
           atomic_load_explicit(&OWNED[s], memory_order_acquire);
}

void shard_begin_cluster(const bool owned[SHARD_COUNT])
{
    int n = 0;
    for (int s = 0; s < SHARD_COUNT; s++) {
        atomic_store(&OWNED[s], owned[s] ? 1 : 0);
        n += owned[s];
    }
    atomic_store(&N_OWNED, n);
    rebuild_list();
    atomic_store(&CLUSTER, true);
}

bool shard_in_cluster(void)
{
    return atomic_load_explicit(&CLUSTER, memory_order_relaxed);
}

bool shard_owns_id(const char *id)
{
    int s = shard_of(id);
    return s < 0 || shard_owned(s);
}

void shard_set_owned(int s, bool owned)
{
    if (s < 0 || s >= SHARD_COUNT)
        return;
    unsigned char was = atomic_exchange(&OWNED[s], owned ? 1 : 0);
    if (was != (owned ? 1 : 0)) {
        atomic_fetch_add(&N_OWNED, owned ? 1 : -1);
        rebuild_list();
    }
}

int shard_owned_count(void)
{
    return shard_in_cluster() ? atomic_load(&N_OWNED) : SHARD_COUNT;
}

int shard_pick(uint64_t r)
{
    if (!shard_in_cluster())
        return (int)(r % SHARD_COUNT);
    for (;;) {
        unsigned seq = atomic_load(&SEQ);
        if (seq & 1)
            continue; /* a move is rewriting the list: a few microseconds */
        int n = atomic_load(&N_LIST);
        int s = n > 0 ? atomic_load_explicit(&LIST[r % (uint64_t)n], memory_order_relaxed) : -1;
        atomic_thread_fence(memory_order_acquire); /* the read above before SEQ's second look */
        if (atomic_load(&SEQ) == seq)
            return s;
    }
}
void shard_ranges(char *out, unsigned long len)
{
    size_t n = 0;
    if (len)
        out[0] = '\0';
    for (int s = 0; s < SHARD_COUNT;) {
        if (!shard_owned(s)) {
            s++;
            continue;
        }
        int e = s;
        while (e + 1 < SHARD_COUNT && shard_owned(e + 1))
            e++;
        char a[SHARD_HEX + 1] = {0}, b[SHARD_HEX + 1] = {0};
        shard_put(a, s);
        shard_put(b, e);
        int w = e > s ? snprintf(out + n, len - n, "%s%s-%s", n ? "," : "", a, b)
                      : snprintf(out + n, len - n, "%s%s", n ? "," : "", a);
        if (w < 0 || (size_t)w >= len - n)
            return;
        n += (size_t)w;
        s = e + 1;
    }
}

const char *shard_node_name(void)
{
    return NODE;
}

void shard_set_node_name(const char *name)
{
    snprintf(NODE, sizeof NODE, "%s", name ? name : "");
}

int shard_parse_range(const char *s, int *from, int *to)
{
    size_t n = strlen(s);
    if (n == SHARD_HEX) {
        *from = *to = shard_of(s);
        return *from < 0 ? -1 : 0;
    }
    if (n != 2 * SHARD_HEX + 1 || s[SHARD_HEX] != '-')
        return -1;
    *from = shard_of(s);
    *to = shard_of(s + SHARD_HEX + 1);
    return *from < 0 || *to < 0 || *from > *to ? -1 : 0;
}
