/* Threads: any thread (workers, tool pool threads, the shard-move and admin threads). */
/* The store's reads and writes: write batches and their commit (through the free-space guard
 * and the write health of health.c), point reads, iterators, flushes and the memory figures.
 * Any thread (see store.h). */
#include "store/internal.h"

#include "core/log.h"
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
    store_batch_t *b = xmalloc(sizeof *b);
    b->wb = rocksdb_writebatch_create();
    b->s = s;
    return b;
}

void store_batch_free(store_batch_t *b)
{
    if (!b)
        return;
    rocksdb_writebatch_destroy(b->wb);
    free(b);
}

void store_batch_put(store_batch_t *b, store_cf_t cf, const void *k, size_t kl, const void *v,
                     size_t vl)
{
    rocksdb_writebatch_put_cf(b->wb, cfh(b->s, cf), k, kl, v, vl);
}

void store_batch_delete(store_batch_t *b, store_cf_t cf, const void *k, size_t kl)
{
    rocksdb_writebatch_delete_cf(b->wb, cfh(b->s, cf), k, kl);
}

void store_batch_single_delete(store_batch_t *b, store_cf_t cf, const void *k, size_t kl)
{
    rocksdb_writebatch_singledelete_cf(b->wb, cfh(b->s, cf), k, kl);
}

void store_batch_delete_range(store_batch_t *b, store_cf_t cf, const void *lo, size_t lol,
                              const void *hi, size_t hil)
{
    rocksdb_writebatch_delete_range_cf(b->wb, cfh(b->s, cf), lo, lol, hi, hil);
}

size_t store_batch_bytes(const store_batch_t *b)
{
    size_t size = 0;
    rocksdb_writebatch_data(b->wb, &size);
    return size;
}

size_t store_batch_count(const store_batch_t *b)
{
    return (size_t)rocksdb_writebatch_count(b->wb);
}

void store_batch_clear(store_batch_t *b)
{
    rocksdb_writebatch_clear(b->wb);
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

static int commit_with(store_t *s, store_batch_t *b, const rocksdb_writeoptions_t *wo)
{
    perf_off();
    if (rocksdb_writebatch_count(b->wb) == 0)
        return 0;
    int64_t free_now;
    if (!store_space_ok(s, store_batch_bytes(b), &free_now)) {
        char why[200];
        snprintf(why, sizeof why,
                 "No space left on device: only %lld bytes free on the data directory's "
                 "filesystem, below --min-free-space %lld",
                 (long long)free_now, (long long)s->min_free);
        rocksdb_writebatch_clear(b->wb);
        store_mark_refusing(s, why, true);
        return -ENOSPC;
    }
    char *err = NULL;
    rocksdb_write(s->db, wo, b->wb, &err);
    size_t size = 0;
    rocksdb_writebatch_data(b->wb, &size);
    if (size > BATCH_KEEP_BYTES) {
        rocksdb_writebatch_destroy(b->wb);
        b->wb = rocksdb_writebatch_create();
    } else {
        rocksdb_writebatch_clear(b->wb);
    }
    if (err) {
        store_mark_refusing(s, err, false);
        rocksdb_free(err);
        return -EIO;
    }
    STAT_INC(store_write_batches_total);
    if (!store_writable(s))
        store_mark_writable(s, "a write");
    return 0;
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
    char *v = rocksdb_get_cf(s->db, s->ropts, cfh(s, cf), k, kl, &len, &err);
    if (err) {
        log_error("store: read failed: %s", err);
        rocksdb_free(err);
        STAT_INC(store_errors_total);
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
    it->it = rocksdb_create_iterator_cf(s->db, it->ro, cfh(s, cf));
    return it;
}

store_iter_t *store_iter_new_scan(store_t *s, store_cf_t cf)
{
    perf_off();
    store_iter_t *it = xcalloc(1, sizeof *it);
    it->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_fill_cache(it->ro, 0);
    rocksdb_readoptions_set_readahead_size(it->ro, 2u << 20);
    it->it = rocksdb_create_iterator_cf(s->db, it->ro, cfh(s, cf));
    return it;
}

void store_iter_seek(store_iter_t *it, const void *k, size_t kl)
{
    rocksdb_iter_seek(it->it, k, kl);
}

void store_iter_seek_first(store_iter_t *it)
{
    rocksdb_iter_seek_to_first(it->it);
}

void store_iter_seek_last(store_iter_t *it)
{
    rocksdb_iter_seek_to_last(it->it);
}

bool store_iter_valid(store_iter_t *it)
{
    return rocksdb_iter_valid(it->it) != 0;
}

void store_iter_next(store_iter_t *it)
{
    rocksdb_iter_next(it->it);
}

const unsigned char *store_iter_key(store_iter_t *it, size_t *len)
{
    return (const unsigned char *)rocksdb_iter_key(it->it, len);
}

const char *store_iter_value(store_iter_t *it, size_t *len)
{
    return rocksdb_iter_value(it->it, len);
}

void store_iter_free(store_iter_t *it)
{
    if (!it)
        return;
    rocksdb_iter_destroy(it->it);
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

uint64_t store_property_sum(store_t *s, const char *prop)
{
    uint64_t total = 0;
    for (int i = 0; i <= CF__COUNT; i++) {
        uint64_t v = 0;
        if (rocksdb_property_int_cf(s->db, s->cf[i], prop, &v) == 0)
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
    for (int i = 0; i <= CF__COUNT; i++) {
        char *err = NULL;
        rocksdb_flush_cf(s->db, fo, s->cf[i], &err);
        if (err) {
            log_error("store: flush failed: %s", err);
            rocksdb_free(err);
            rc = -EIO;
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
    char *err = NULL;
    rocksdb_flush_cf(s->db, fo, cfh(s, cf), &err);
    if (err) {
        log_warn("store: flush failed: %s", err);
        rocksdb_free(err);
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
