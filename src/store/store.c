/* The RocksDB store. Any thread (see store.h).
 *
 * Why a few column families and not one per session: measured on RocksDB 7.8 here, each column
 * family costs ~50 KB of RAM for as long as the database is open, creating one rewrites the
 * OPTIONS file (hundreds of ms at 1,000 families) and dropping one took seconds at 10,000. That
 * defeats hibernation. So records are split by kind, and keys are prefixed by the session id.
 *
 * Memory is capped by a shared block cache and db_write_buffer_size (the 7.8 C API has no
 * WriteBufferManager). Durability: WAL always on; fsync per commit only with --sync, where
 * RocksDB's write groups turn concurrent worker commits into one fsync (group commit).
 */
#include "store/store.h"

#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <errno.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BLOCK_CACHE_BYTES (32ULL << 20)
#define MEMTABLE_BUDGET_BYTES (64ULL << 20)
#define CF_WRITE_BUFFER_BYTES (16ULL << 20)

static const char *const cf_names[CF__COUNT + 1] = {
    "default", "sessions", "streams", "events", "reqmap", "state", "alarms", "expiry",
};

struct store {
    rocksdb_t *db;
    rocksdb_env_t *env;
    rocksdb_options_t *opts;
    rocksdb_options_t *cf_opts;
    rocksdb_cache_t *cache;
    rocksdb_block_based_table_options_t *table;
    rocksdb_writeoptions_t *wopts;
    rocksdb_readoptions_t *ropts;
    rocksdb_column_family_handle_t *cf[CF__COUNT + 1]; /* [0] is "default" */
};

struct store_batch {
    rocksdb_writebatch_t *wb;
    store_t *s; /* for column family handles */
};

struct store_iter {
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ro;
    char *lo, *hi;
};

static rocksdb_column_family_handle_t *cfh(store_t *s, store_cf_t cf)
{
    return s->cf[cf + 1];
}

store_t *store_open(const char *dir, bool sync, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create data directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    store_t *s = xcalloc(1, sizeof *s);
    s->cache = rocksdb_cache_create_lru(BLOCK_CACHE_BYTES);
    s->table = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(s->table, s->cache);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(s->table, 1);

    /* Compactions yield to request handling: on a machine with few cores they otherwise take
     * the core from the HTTP/actor threads for milliseconds at a time (the p99 of resumes).
     * Flushes keep their priority: starving them would stall writes. */
    s->env = rocksdb_create_default_env();
    rocksdb_env_lower_thread_pool_cpu_priority(s->env);
    rocksdb_env_lower_thread_pool_io_priority(s->env);
    s->opts = rocksdb_options_create();
    rocksdb_options_set_env(s->opts, s->env);
    rocksdb_options_set_create_if_missing(s->opts, 1);
    rocksdb_options_set_create_missing_column_families(s->opts, 1);
    rocksdb_options_increase_parallelism(s->opts, 2);
    rocksdb_options_set_db_write_buffer_size(s->opts, MEMTABLE_BUDGET_BYTES);
    rocksdb_options_set_max_open_files(s->opts, 512);
    rocksdb_options_set_keep_log_file_num(s->opts, 4);
    rocksdb_options_set_block_based_table_factory(s->opts, s->table);
    /* quiescent means quiescent: no periodic statistics work */
    rocksdb_options_set_stats_dump_period_sec(s->opts, 0);
    rocksdb_options_set_stats_persist_period_sec(s->opts, 0);

    s->cf_opts = rocksdb_options_create_copy(s->opts);
    rocksdb_options_set_write_buffer_size(s->cf_opts, CF_WRITE_BUFFER_BYTES);

    const rocksdb_options_t *cfo[CF__COUNT + 1];
    for (int i = 0; i <= CF__COUNT; i++)
        cfo[i] = s->cf_opts;
    char *rerr = NULL;
    s->db = rocksdb_open_column_families(s->opts, dir, CF__COUNT + 1, cf_names, cfo, s->cf,
                                         &rerr);
    if (rerr) {
        snprintf(err, errlen, "cannot open RocksDB in %s: %s", dir, rerr);
        rocksdb_free(rerr);
        rocksdb_options_destroy(s->cf_opts);
        rocksdb_options_destroy(s->opts);
        rocksdb_block_based_options_destroy(s->table);
        rocksdb_cache_destroy(s->cache);
        rocksdb_env_destroy(s->env);
        free(s);
        return NULL;
    }
    s->wopts = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(s->wopts, sync ? 1 : 0);
    s->ropts = rocksdb_readoptions_create();
    return s;
}

void store_close(store_t *s)
{
    if (!s)
        return;
    for (int i = 0; i <= CF__COUNT; i++)
        rocksdb_column_family_handle_destroy(s->cf[i]);
    rocksdb_close(s->db);
    rocksdb_writeoptions_destroy(s->wopts);
    rocksdb_readoptions_destroy(s->ropts);
    rocksdb_options_destroy(s->cf_opts);
    rocksdb_options_destroy(s->opts);
    rocksdb_block_based_options_destroy(s->table);
    rocksdb_cache_destroy(s->cache);
    rocksdb_env_destroy(s->env);
    free(s);
}

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

void store_batch_delete_range(store_batch_t *b, store_cf_t cf, const void *lo, size_t lol,
                              const void *hi, size_t hil)
{
    rocksdb_writebatch_delete_range_cf(b->wb, cfh(b->s, cf), lo, lol, hi, hil);
}

size_t store_batch_count(const store_batch_t *b)
{
    return (size_t)rocksdb_writebatch_count(b->wb);
}

int store_commit(store_t *s, store_batch_t *b)
{
    if (rocksdb_writebatch_count(b->wb) == 0)
        return 0;
    char *err = NULL;
    rocksdb_write(s->db, s->wopts, b->wb, &err);
    rocksdb_writebatch_clear(b->wb);
    STAT_INC(store_write_batches_total);
    if (err) {
        log_error("store: write failed: %s", err);
        rocksdb_free(err);
        STAT_INC(store_errors_total);
        return -EIO;
    }
    return 0;
}

int store_get(store_t *s, store_cf_t cf, const void *k, size_t kl, char **val, size_t *vl)
{
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

store_iter_t *store_iter_new(store_t *s, store_cf_t cf, const void *lo, size_t lol,
                             const void *hi, size_t hil)
{
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

void store_iter_prev(store_iter_t *it)
{
    rocksdb_iter_prev(it->it);
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
    store_iter_t *it = store_iter_new(s, cf, NULL, 0, NULL, 0);
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

