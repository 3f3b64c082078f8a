/* Threads: any thread (workers, tool pool threads, the shard-move and admin threads). */
/* The store's reads and writes: write batches and their commit (through the free-space guard
 * and the write health of health.c), point reads, iterators, flushes and the memory figures.
 * Any thread (see store.h). */
#include "store/internal.h"

#include "core/log.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A write batch keeps its largest size as capacity: one bigger than this is replaced after its
 * commit, so a burst does not pin megabytes per worker for the rest of the process. */
#define BATCH_KEEP_BYTES (1u << 20)

store_batch_t *store_batch_new(store_t *s)
{
    store_batch_t *b = xcalloc(1, sizeof *b);
    b->s = s;
    return b;
}

void store_batch_free(store_batch_t *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->s->nparts; i++)
        if (b->wb[i])
            rocksdb_writebatch_destroy(b->wb[i]);
    free(b);
}

/* The write batch of key's partition (made on first use), and the family's handle there. */
static rocksdb_writebatch_t *wb_for(store_batch_t *b, store_cf_t cf, const void *k, size_t kl,
                                    rocksdb_column_family_handle_t **h)
{
    int p = store_part_of_key(b->s, cf, k, kl);
    if (!b->wb[p])
        b->wb[p] = rocksdb_writebatch_create();
    *h = part_cfh(b->s, p, cf);
    return b->wb[p];
}

void store_batch_put(store_batch_t *b, store_cf_t cf, const void *k, size_t kl, const void *v,
                     size_t vl)
{
    rocksdb_column_family_handle_t *h;
    rocksdb_writebatch_t *wb = wb_for(b, cf, k, kl, &h);
    rocksdb_writebatch_put_cf(wb, h, k, kl, v, vl);
}

void store_batch_delete(store_batch_t *b, store_cf_t cf, const void *k, size_t kl)
{
    rocksdb_column_family_handle_t *h;
    rocksdb_writebatch_t *wb = wb_for(b, cf, k, kl, &h);
    rocksdb_writebatch_delete_cf(wb, h, k, kl);
}

void store_batch_single_delete(store_batch_t *b, store_cf_t cf, const void *k, size_t kl)
{
    rocksdb_column_family_handle_t *h;
    rocksdb_writebatch_t *wb = wb_for(b, cf, k, kl, &h);
    rocksdb_writebatch_singledelete_cf(wb, h, k, kl);
}

/* Whether [lo, hi) lies within the shard that starts lo (lo's partition holds all of it):
 * hi is at most lo's first SHARD_HEX bytes with the last one incremented. */
static bool within_shard(const void *lo, size_t lol, const void *hi, size_t hil)
{
    if (!lo || lol < SHARD_HEX || !hi)
        return false;
    unsigned char up[SHARD_HEX];
    memcpy(up, lo, SHARD_HEX);
    if (up[SHARD_HEX - 1] == 0xff)
        return false;
    up[SHARD_HEX - 1]++;
    int c = memcmp(hi, up, hil < SHARD_HEX ? hil : SHARD_HEX);
    return c < 0 || (c == 0 && hil <= SHARD_HEX);
}

/* Within one id's keys or one shard's: that partition's batch; a wider range: every one's. */
void store_batch_delete_range(store_batch_t *b, store_cf_t cf, const void *lo, size_t lol,
                              const void *hi, size_t hil)
{
    store_t *s = b->s;
    bool one = s->nparts == 1 || cf == CF_NODE ||
               (cf != CF_ALARMS && within_shard(lo, lol, hi, hil));
    int from = one ? store_part_of_key(s, cf, lo, lol) : 0;
    for (int p = from; p < (one ? from + 1 : s->nparts); p++) {
        if (!b->wb[p])
            b->wb[p] = rocksdb_writebatch_create();
        rocksdb_writebatch_delete_range_cf(b->wb[p], part_cfh(s, p, cf), lo, lol, hi, hil);
    }
}

size_t store_batch_bytes(const store_batch_t *b)
{
    size_t total = 0;
    for (int i = 0; i < b->s->nparts; i++) {
        size_t size = 0;
        if (b->wb[i])
            rocksdb_writebatch_data(b->wb[i], &size);
        total += size;
    }
    return total;
}

size_t store_batch_count(const store_batch_t *b)
{
    size_t n = 0;
    for (int i = 0; i < b->s->nparts; i++)
        if (b->wb[i])
            n += (size_t)rocksdb_writebatch_count(b->wb[i]);
    return n;
}

void store_batch_clear(store_batch_t *b)
{
    for (int i = 0; i < b->s->nparts; i++)
        if (b->wb[i])
            rocksdb_writebatch_clear(b->wb[i]);
}

/* RocksDB counts into a thread-local perf context by default (kEnableCount): every key
 * comparison of a memtable insert or a read adds to it, through the dynamic TLS of a shared
 * library (the context's TLS init function and __tls_get_addr each time; with counting off only
 * the level is read). Nothing reads those counts, so a thread turns them off before its first
 * commit, point read or iterator here. The cold paths that call RocksDB directly (health.c's
 * keeper and probe, export.c's shard export and ingest) leave their threads counting. */
static _Thread_local bool t_perf_off;

static inline void perf_off(void)
{
    if (!t_perf_off) {
        rocksdb_set_perf_level(rocksdb_disable);
        t_perf_off = true;
    }
}

/* Writes one partition's part of a batch, and clears it (checked: the guard was asked for the
 * whole batch). */
static int commit_part(store_t *s, store_batch_t *b, int p, const rocksdb_writeoptions_t *wo,
                       bool checked)
{
    rocksdb_writebatch_t *wb = b->wb[p];
    int64_t free_now;
    size_t size = 0;
    rocksdb_writebatch_data(wb, &size);
    if (!checked && !store_space_ok(s, size, &free_now)) {
        char why[200];
        store_space_why(s, free_now, "", why, sizeof why);
        rocksdb_writebatch_clear(wb);
        store_mark_refusing(s, p, why, true);
        return -ENOSPC;
    }
    char *err = NULL;
    rocksdb_write(s->part[p].db, wo, wb, &err);
    if (size > BATCH_KEEP_BYTES) {
        rocksdb_writebatch_destroy(wb);
        b->wb[p] = rocksdb_writebatch_create();
    } else {
        rocksdb_writebatch_clear(wb);
    }
    if (err) {
        store_mark_refusing(s, p, err, false);
        rocksdb_free(err);
        return -EIO;
    }
    STAT_INC(store_write_batches_total);
    if (atomic_load_explicit(&s->refusing, memory_order_relaxed) & 1ULL << p)
        store_mark_writable(s, p, "a write");
    return 0;
}

/* Refuses a whole batch that writes to several partitions before any is written: a batch is
 * committed partition by partition, and one refused after another was written would leave
 * part of it stored. So the free-space guard is asked once for all of it, and a batch that
 * writes to a partition refusing writes is not begun (the probe heals that partition). */
static int precheck_parts(store_t *s, store_batch_t *b)
{
    int64_t free_now;
    if (!store_space_ok(s, store_batch_bytes(b), &free_now)) {
        char why[200];
        store_space_why(s, free_now, "", why, sizeof why);
        for (int p = 0; p < s->nparts; p++)
            if (b->wb[p] && rocksdb_writebatch_count(b->wb[p]))
                store_mark_refusing(s, p, why, true);
        return -ENOSPC;
    }
    unsigned long long refusing = atomic_load_explicit(&s->refusing, memory_order_acquire);
    for (int p = 0; p < s->nparts && refusing; p++) {
        if (refusing & 1ULL << p && b->wb[p] && rocksdb_writebatch_count(b->wb[p])) {
            store_count_refused(s);
            return -EIO;
        }
    }
    return 0;
}

/* Each partition's part in turn. After one fails the rest are not written (and are cleared),
 * and the caller fails the whole batch: only a write error of RocksDB's own, after a partition
 * before it was written, leaves part of a batch stored (docs/design/durability.md). */
static int commit_with(store_t *s, store_batch_t *b, const rocksdb_writeoptions_t *wo)
{
    perf_off();
    int nonempty = 0;
    for (int p = 0; p < s->nparts; p++)
        nonempty += b->wb[p] && rocksdb_writebatch_count(b->wb[p]) > 0;
    int rc = nonempty > 1 ? precheck_parts(s, b) : 0;
    bool checked = nonempty > 1;
    for (int p = 0; p < s->nparts; p++) {
        if (!b->wb[p] || rocksdb_writebatch_count(b->wb[p]) == 0)
            continue;
        if (rc != 0)
            rocksdb_writebatch_clear(b->wb[p]);
        else
            rc = commit_part(s, b, p, wo, checked);
    }
    return rc;
}

int store_commit(store_t *s, store_batch_t *b)
{
    return commit_with(s, b, s->wopts);
}

int store_commit_sync(store_t *s, store_batch_t *b)
{
    return commit_with(s, b, s->wopts_sync);
}

int store_get(store_t *s, store_cf_t cf, const void *k, size_t kl, char **val, size_t *vl)
{
    perf_off();
    char *err = NULL;
    size_t len = 0;
    int p = store_part_of_key(s, cf, k, kl);
    char *v = rocksdb_get_cf(s->part[p].db, s->ropts, part_cfh(s, p, cf), k, kl, &len, &err);
    if (err) {
        store_read_failed(s, "read failed", err);
        rocksdb_free(err);
        return -EIO;
    }
    if (!v)
        return 1;
    if (val) {
        /* copy into our allocator so callers free() it */
        char *copy = xmalloc(len + 1);
        memcpy(copy, v, len);
        copy[len] = '\0';
        *val = copy;
    }
    if (vl)
        *vl = len;
    rocksdb_free(v);
    return 0;
}

int store_exists(store_t *s, store_cf_t cf, const void *k, size_t kl)
{
    int r = store_get(s, cf, k, kl, NULL, NULL);
    return r < 0 ? r : r == 0;
}

/* The partitions an iterator over [lo, hi) of cf reads: one where the range lies within the
 * shard that starts lo (a session's or a shard's records; the node's records), all of them for
 * the alarms (ordered by due time) and for any other range. */
static void iter_open(store_t *s, store_iter_t *it, store_cf_t cf, const void *lo, size_t lol,
                      const void *hi, size_t hil)
{
    bool all = s->nparts > 1 && cf != CF_NODE &&
               (cf == CF_ALARMS || !within_shard(lo, lol, hi, hil));
    int from = all ? 0 : store_part_of_key(s, cf, lo, lol);
    it->n = all ? s->nparts : 1;
    it->cur = -1;
    it->s = s;
    for (int i = 0; i < it->n; i++)
        it->it[i] = rocksdb_create_iterator_cf(s->part[from + i].db, it->ro,
                                               part_cfh(s, from + i, cf));
}

store_iter_t *store_iter_new(store_t *s, store_cf_t cf, const void *lo, size_t lol, const void *hi,
                             size_t hil)
{
    perf_off();
    store_iter_t *it = xcalloc(1, sizeof *it);
    it->ro = rocksdb_readoptions_create();
    if (lo) {
        it->lo = xmalloc(lol);
        memcpy(it->lo, lo, lol);
        rocksdb_readoptions_set_iterate_lower_bound(it->ro, it->lo, lol);
    }
    if (hi) {
        it->hi = xmalloc(hil);
        memcpy(it->hi, hi, hil);
        rocksdb_readoptions_set_iterate_upper_bound(it->ro, it->hi, hil);
    }
    iter_open(s, it, cf, lo, lo ? lol : 0, hi, hi ? hil : 0);
    return it;
}

store_iter_t *store_iter_new_scan(store_t *s, store_cf_t cf)
{
    perf_off();
    store_iter_t *it = xcalloc(1, sizeof *it);
    it->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_fill_cache(it->ro, 0);
    rocksdb_readoptions_set_readahead_size(it->ro, 2u << 20);
    iter_open(s, it, cf, NULL, 0, NULL, 0);
    return it;
}

/* Bytewise order, RocksDB's default comparator. */
static int key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

/* Whether a partition's iterator that is not valid stopped on a read error (the error is
 * read again, and logged, by store_iter_error). */
static bool part_failed(rocksdb_iterator_t *pit)
{
    char *err = NULL;
    rocksdb_iter_get_error(pit, &err);
    if (!err)
        return false;
    rocksdb_free(err);
    return true;
}

/* The partition positioned at the smallest key (largest: last), or -1 when none is valid or one
 * stopped on a read error: the merge ends there, as one partition's iteration would, so every
 * key it returned sorts before what the failed partition left unread (a caller that resumes
 * after its last key, the alarm scheduler's retry, misses nothing). */
static void iter_pick(store_iter_t *it, bool last)
{
    it->cur = -1;
    const char *best = NULL;
    size_t bestl = 0;
    for (int i = 0; i < it->n; i++) {
        if (!rocksdb_iter_valid(it->it[i])) {
            if (it->n > 1 && part_failed(it->it[i])) {
                it->cur = -1;
                return;
            }
            continue;
        }
        size_t kl;
        const char *k = rocksdb_iter_key(it->it[i], &kl);
        int c = best ? key_cmp(k, kl, best, bestl) : 0;
        if (!best || (last ? c > 0 : c < 0)) {
            best = k;
            bestl = kl;
            it->cur = i;
        }
    }
}

void store_iter_seek(store_iter_t *it, const void *k, size_t kl)
{
    for (int i = 0; i < it->n; i++)
        rocksdb_iter_seek(it->it[i], k, kl);
    it->after_last = false;
    iter_pick(it, false);
}

void store_iter_seek_first(store_iter_t *it)
{
    for (int i = 0; i < it->n; i++)
        rocksdb_iter_seek_to_first(it->it[i]);
    it->after_last = false;
    iter_pick(it, false);
}

/* Merged, the last key of all; a next() from there ends the iteration, as it would in one. */
void store_iter_seek_last(store_iter_t *it)
{
    for (int i = 0; i < it->n; i++)
        rocksdb_iter_seek_to_last(it->it[i]);
    it->after_last = it->n > 1;
    iter_pick(it, true);
}

bool store_iter_valid(store_iter_t *it)
{
    return it->cur >= 0 && rocksdb_iter_valid(it->it[it->cur]) != 0;
}

void store_iter_next(store_iter_t *it)
{
    if (it->cur < 0)
        return;
    if (it->after_last) {
        it->cur = -1;
        return;
    }
    rocksdb_iter_next(it->it[it->cur]);
    if (it->n > 1)
        iter_pick(it, false);
}

const unsigned char *store_iter_key(store_iter_t *it, size_t *len)
{
    return (const unsigned char *)rocksdb_iter_key(it->it[it->cur], len);
}

const char *store_iter_value(store_iter_t *it, size_t *len)
{
    return rocksdb_iter_value(it->it[it->cur], len);
}

/* Every iterator is checked, by its caller (store_iter_error) or at the latest when it is freed:
 * a loop that stopped at !store_iter_valid may have stopped on a read error (an I/O error, a
 * corrupt block), and a partition's error ends the merge (iter_pick). */
int store_iter_error(store_iter_t *it)
{
    for (int i = 0; i < it->n && !it->failed; i++) {
        char *err = NULL;
        rocksdb_iter_get_error(it->it[i], &err);
        if (!err)
            continue;
        store_read_failed(it->s, "a scan stopped on a read error", err);
        rocksdb_free(err);
        it->failed = true;
    }
    return it->failed ? -EIO : 0;
}

void store_iter_free(store_iter_t *it)
{
    if (!it)
        return;
    store_iter_error(it);
    for (int i = 0; i < it->n; i++)
        rocksdb_iter_destroy(it->it[i]);
    rocksdb_readoptions_destroy(it->ro);
    free(it->lo);
    free(it->hi);
    free(it);
}

uint64_t store_count_keys(store_t *s, store_cf_t cf)
{
    store_iter_t *it = store_iter_new_scan(s, cf);
    uint64_t n = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
        n++;
    store_iter_free(it);
    return n;
}

int store_cf_any(store_t *s, store_cf_t cf)
{
    store_iter_t *it = store_iter_new_scan(s, cf);
    store_iter_seek_first(it);
    int any = store_iter_valid(it) ? 1 : store_iter_error(it);
    store_iter_free(it);
    return any;
}

uint64_t store_property_sum(store_t *s, const char *prop)
{
    uint64_t total = 0;
    for (int p = 0; p < s->nparts; p++) {
        for (int i = 0; i <= CF__COUNT; i++) {
            uint64_t v = 0;
            if (rocksdb_property_int_cf(s->part[p].db, s->part[p].cf[i], prop, &v) == 0)
                total += v;
        }
    }
    return total;
}

uint64_t store_background_work(store_t *s)
{
    uint64_t total = store_property_sum(s, "rocksdb.num-immutable-mem-table");
    for (int p = 0; p < s->nparts; p++) {
        uint64_t v = 0;
        if (rocksdb_property_int(s->part[p].db, "rocksdb.num-running-flushes", &v) == 0)
            total += v;
        if (rocksdb_property_int(s->part[p].db, "rocksdb.num-running-compactions", &v) == 0)
            total += v;
    }
    return total;
}

int store_flush(store_t *s)
{
    if (!store_writable(s))
        return -EIO; /* see the file comment: a flush now would touch the failed log writer */
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    int rc = 0;
    for (int p = 0; p < s->nparts; p++) {
        for (int i = 0; i <= CF__COUNT; i++) {
            char *err = NULL;
            rocksdb_flush_cf(s->part[p].db, fo, s->part[p].cf[i], &err);
            if (err) {
                log_error("store: flush failed: %s", err);
                rocksdb_free(err);
                rc = -EIO;
            }
        }
    }
    rocksdb_flushoptions_destroy(fo);
    return rc;
}

void store_flush_async(store_t *s, store_cf_t cf)
{
    if (!store_writable(s))
        return;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 0);
    for (int p = 0; p < s->nparts; p++) {
        char *err = NULL;
        rocksdb_flush_cf(s->part[p].db, fo, part_cfh(s, p, cf), &err);
        if (err) {
            log_warn("store: flush failed: %s", err);
            rocksdb_free(err);
        }
    }
    rocksdb_flushoptions_destroy(fo);
}

uint64_t store_cache_budget(const store_t *s)
{
    (void)s;
    return BLOCK_CACHE_BYTES;
}

uint64_t store_cache_usage(const store_t *s)
{
    return (uint64_t)rocksdb_cache_get_usage(s->cache);
}

uint64_t store_memtable_budget(const store_t *s)
{
    (void)s;
    return MEMTABLE_BUDGET_BYTES;
}
