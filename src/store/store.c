/* Threads: any thread; open and close on the main thread; its own watcher thread (store-probe). */
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
 *
 * A full disk (or any write error). RocksDB's answer to a failed write-ahead-log append is a
 * background error: every later write is refused at once, without touching the log, until its
 * error recovery succeeds (for ENOSPC its SstFileManager polls the free space every 5 s and
 * resumes once a memtable's worth is free: it flushes the memtables and starts a new log). Two
 * things would abort the process instead, because Debian's librocksdb keeps its assertions and
 * a WritableFileWriter that saw an error asserts at its next append or flush:
 *   - RocksDB's own info LOG, written on the same disk: a failed append there is followed by
 *     the next message (the SstFileManager logs every 5 s). The info log is therefore kept at
 *     FATAL (open-time header lines only); our own log says what happened.
 *   - a flush we start (store_flush, store_flush_async) or rocksdb_close: both flush the
 *     current WAL writer. So neither runs while writes are refused (store_writable), and a
 *     shutdown in that state leaves the database unclosed: what was acknowledged is in the WAL.
 * And a third that no option avoids: RocksDB 7.8's recovery switches to a new WAL only by
 * flushing a memtable; if every memtable was empty when the append failed, the failed writer
 * stays current and the first write after the recovery asserts. Two guards keep the process
 * away from it:
 *   - a free-space floor (--min-free-space): before a commit, the store compares the free
 *     space of the data directory's filesystem (statvfs, looked at again after a second or
 *     once the bytes written since use up the margin) with the floor and refuses the commit
 *     itself, exactly as RocksDB would, but without a failed append. RocksDB fails only when
 *     something else fills the disk faster than that;
 *   - a key written at open (a memtable is never empty when the first write fails), and the
 *     probe writes only once the free space is back above the floor.
 */
#include "store/store.h"

#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define BLOCK_CACHE_BYTES (32ULL << 20)
#define MEMTABLE_BUDGET_BYTES (64ULL << 20)
#define CF_WRITE_BUFFER_BYTES (16ULL << 20)
/* RocksDB's InfoLogLevel: header lines at open only (see the file comment). */
#define ROCKSDB_INFO_LOG_FATAL 4
/* How often the watcher probes a refusing store, and the free-space guard looks again. */
#define PROBE_INTERVAL_MS 1000
#define SPACE_RECHECK_MS 1000
/* RocksDB resumes after ENOSPC only with a memtable's worth free (its SstFileManager). */
#define ROCKSDB_RESUME_FREE_BYTES ((int64_t)CF_WRITE_BUFFER_BYTES)
/* A write batch keeps its largest size as capacity: one bigger than this is replaced after its
 * commit, so a burst does not pin megabytes per worker for the rest of the process. */
#define BATCH_KEEP_BYTES (1u << 20)

static const char *const cf_names[CF__COUNT + 1] = {
    "default", "sessions", "streams", "events", "reqmap", "state", "alarms", "expiry",
};

struct store {
    rocksdb_t *db;
    rocksdb_env_t *env;
    rocksdb_options_t *opts;
    rocksdb_options_t *cf_opts;
    rocksdb_options_t *ev_opts; /* the events column family: no filter (see table_options) */
    rocksdb_block_based_table_options_t *ev_table;
    rocksdb_cache_t *cache;
    rocksdb_block_based_table_options_t *table;
    rocksdb_writeoptions_t *wopts;
    rocksdb_writeoptions_t *wopts_sync; /* store_commit_sync */
    rocksdb_readoptions_t *ropts;
    rocksdb_column_family_handle_t *cf[CF__COUNT + 1]; /* [0] is "default" */
    /* write health: `refusing` is read lock-free on every commit; the rest under mu */
    atomic_bool refusing;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char why[256];
    int64_t since_ms;
    long long refused;          /* under mu: commits refused since the refusals started */
    bool watcher_running, closing;
    pthread_t watcher;
    void (*on_writable)(void);
    /* free-space guard (min_free == 0: off) */
    char *dir;
    int64_t min_free;
    atomic_llong space_budget;  /* bytes that may be written before statvfs is asked again */
    atomic_llong space_checked; /* monotonic ms of the last statvfs */
    bool refused_by_guard;      /* under mu: the last refusal was the guard's, not RocksDB's */
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

static void mark_refusing(store_t *s, const char *err, bool by_guard);

/* Free bytes on the filesystem of s->dir, or -1. */
static int64_t free_bytes(const store_t *s)
{
    struct statvfs v;
    if (statvfs(s->dir, &v) != 0)
        return -1;
    return (int64_t)v.f_bavail * (int64_t)v.f_frsize;
}

/* The guard: true when `size` more bytes leave at least min_free free. Cheap on the hot path:
 * statvfs only after a second, or once the margin it gave is used up. */
static bool space_ok(store_t *s, size_t size, int64_t *free_now)
{
    *free_now = -1;
    if (!s->min_free)
        return true;
    int64_t now = now_mono_ms();
    long long left = atomic_fetch_sub(&s->space_budget, (long long)size) - (long long)size;
    if (left > 0 && now - atomic_load(&s->space_checked) < SPACE_RECHECK_MS)
        return true;
    int64_t f = free_bytes(s);
    if (f < 0)
        return true; /* cannot tell: let RocksDB decide */
    *free_now = f;
    atomic_store(&s->space_checked, now);
    atomic_store(&s->space_budget, (long long)(f - s->min_free));
    return f - (int64_t)size >= s->min_free;
}

/* A key in the default column family: its memtable is never empty when a write fails. */
static int write_keeper(store_t *s, char **rerr)
{
    static const char key[] = "mcpd-keeper";
    char v[24];
    int n = snprintf(v, sizeof v, "%lld", (long long)now_wall_ms());
    rocksdb_put_cf(s->db, s->wopts, s->cf[0], key, sizeof key - 1, v, (size_t)n, rerr);
    return *rerr ? -EIO : 0;
}

/* The block cache. RocksDB's default splits 32 MiB into 64 shards of 512 KiB, and a block larger
 * than its shard is dropped as soon as it is released: the index block of a table of a million
 * sessions (~0.7 MiB, compressed) was read from the file and decompressed again on every Get.
 * That was the first wake after a restart with 1M stored sessions (p50 1.75 ms with one
 * connection, 12 ms with 8; sessions woken before a restart were in the memtable or small
 * tables). Shards of 8 MiB hold such blocks (in tables written before the partitioned index
 * below, too); one worker and the background threads hardly contend on 4 locks. */
#define BLOCK_CACHE_SHARD_BITS 2

static rocksdb_cache_t *cache_create(void)
{
    rocksdb_lru_cache_options_t *o = rocksdb_lru_cache_options_create();
    rocksdb_lru_cache_options_set_capacity(o, BLOCK_CACHE_BYTES);
    rocksdb_lru_cache_options_set_num_shard_bits(o, BLOCK_CACHE_SHARD_BITS);
    rocksdb_cache_t *c = rocksdb_cache_create_lru_opts(o);
    rocksdb_lru_cache_options_destroy(o);
    return c;
}

/* Table format, for tables written from now on (older ones keep theirs until compacted):
 *   - a partitioned index: 4 KiB index partitions cached like data blocks, and a small top
 *     level pinned in the cache, so a point read after a restart reads one partition, not a
 *     whole index block;
 *   - whole-key bloom filters, partitioned the same way (10 bits a key, ~1 % false positives):
 *     a Get skips the tables that do not hold its key, so a wake reads one data block instead
 *     of one per level (and reads and caches fewer blocks: less RSS);
 *   - index and filter blocks in the cache's high-priority part, and those of level 0 (the
 *     newest, overlapping tables that every Get consults) pinned while their table lives. */
static void table_options(rocksdb_block_based_table_options_t *t, rocksdb_cache_t *cache,
                          bool filter)
{
    rocksdb_block_based_options_set_block_cache(t, cache);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(t, 1);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(t, 1);
    rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(t, 1);
    rocksdb_block_based_options_set_index_type(t, rocksdb_block_based_table_index_type_two_level_index_search);
    rocksdb_block_based_options_set_metadata_block_size(t, 4096);
    rocksdb_block_based_options_set_pin_top_level_index_and_filter(t, 1);
    if (!filter)
        return;
    rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_block_based_options_set_partition_filters(t, 1);
}

store_t *store_open(const char *dir, bool sync, int64_t min_free_bytes, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create data directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    store_t *s = xcalloc(1, sizeof *s);
    s->cache = cache_create();
    s->table = rocksdb_block_based_options_create();
    table_options(s->table, s->cache, true);

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
    /* a failed write stops all writes (background error) instead of being retried on a log
     * writer that already failed; this is RocksDB's default, relied on here */
    rocksdb_options_set_paranoid_checks(s->opts, 1);
    rocksdb_options_set_info_log_level(s->opts, ROCKSDB_INFO_LOG_FATAL);

    s->cf_opts = rocksdb_options_create_copy(s->opts);
    rocksdb_options_set_write_buffer_size(s->cf_opts, CF_WRITE_BUFFER_BYTES);

    s->ev_table = rocksdb_block_based_options_create();
    table_options(s->ev_table, s->cache, false);
    s->ev_opts = rocksdb_options_create_copy(s->cf_opts);
    rocksdb_options_set_block_based_table_factory(s->ev_opts, s->ev_table);
    const rocksdb_options_t *cfo[CF__COUNT + 1];
    for (int i = 0; i <= CF__COUNT; i++)
        cfo[i] = i == CF_EVENTS + 1 ? s->ev_opts : s->cf_opts;
    char *rerr = NULL;
    s->db = rocksdb_open_column_families(s->opts, dir, CF__COUNT + 1, cf_names, cfo, s->cf,
                                         &rerr);
    if (rerr) {
        snprintf(err, errlen, "cannot open RocksDB in %s: %s", dir, rerr);
        rocksdb_free(rerr);
        rocksdb_options_destroy(s->cf_opts);
        rocksdb_options_destroy(s->ev_opts);
        rocksdb_block_based_options_destroy(s->ev_table);
        rocksdb_options_destroy(s->opts);
        rocksdb_block_based_options_destroy(s->table);
        rocksdb_cache_destroy(s->cache);
        rocksdb_env_destroy(s->env);
        free(s);
        return NULL;
    }
    s->wopts = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(s->wopts, sync ? 1 : 0);
    s->wopts_sync = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(s->wopts_sync, 1);
    s->ropts = rocksdb_readoptions_create();
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->dir = xstrdup(dir);
    s->min_free = min_free_bytes;
    int64_t f = free_bytes(s);
    if (s->min_free && f >= 0 && f < s->min_free) {
        /* reads and resumes work; writes wait for the space (the watcher looks every second,
         * and its first write is the key below) */
        char why[200];
        snprintf(why, sizeof why,
                 "No space left on device: only %lld bytes free on the data directory's "
                 "filesystem at start, below --min-free-space %lld",
                 (long long)f, (long long)s->min_free);
        mark_refusing(s, why, true);
        return s;
    }
    if (write_keeper(s, &rerr) != 0) {
        snprintf(err, errlen, "cannot write to RocksDB in %s: %s", dir, rerr);
        rocksdb_free(rerr);
        /* a failed first write must not be followed by any flush or close (store.c) */
        atomic_store(&s->refusing, true);
        store_close(s);
        return NULL;
    }
    return s;
}

void store_close(store_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    pthread_cond_broadcast(&s->cv);
    while (s->watcher_running) /* detached: it says when it is done with s */
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (!store_writable(s)) {
        /* rocksdb_close would flush the failed log writer (an assertion abort in Debian's
         * build). Everything acknowledged is in the write-ahead log; the next start replays
         * it. The handles are left to the process exit. */
        log_warn("store: writes are still refused; the database is left unclosed (its "
                 "write-ahead log holds every acknowledged write)");
        return;
    }
    for (int i = 0; i <= CF__COUNT; i++)
        rocksdb_column_family_handle_destroy(s->cf[i]);
    rocksdb_close(s->db);
    rocksdb_writeoptions_destroy(s->wopts);
    rocksdb_writeoptions_destroy(s->wopts_sync);
    rocksdb_readoptions_destroy(s->ropts);
    rocksdb_options_destroy(s->cf_opts);
    rocksdb_options_destroy(s->ev_opts);
    rocksdb_block_based_options_destroy(s->ev_table);
    rocksdb_options_destroy(s->opts);
    rocksdb_block_based_options_destroy(s->table);
    rocksdb_cache_destroy(s->cache);
    rocksdb_env_destroy(s->env);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->dir);
    free(s);
}

/* ---- write health ---- */

bool store_writable(const store_t *s)
{
    return !atomic_load_explicit(&((store_t *)s)->refusing, memory_order_acquire);
}

bool store_write_error(store_t *s, char *why, size_t whylen, int64_t *since_ms)
{
    if (store_writable(s))
        return false;
    pthread_mutex_lock(&s->mu);
    snprintf(why, whylen, "%s", s->why);
    if (since_ms)
        *since_ms = s->since_ms;
    pthread_mutex_unlock(&s->mu);
    return true;
}

void store_on_writable(store_t *s, void (*fn)(void))
{
    s->on_writable = fn;
}

static void mark_writable(store_t *s, const char *how)
{
    pthread_mutex_lock(&s->mu);
    bool changed = atomic_load(&s->refusing);
    if (changed) {
        atomic_store_explicit(&s->refusing, false, memory_order_release);
        log_info("store: writes succeed again (%s) after %lld s of refusals (%lld writes "
                 "refused); serving normally",
                 how, (long long)((now_wall_ms() - s->since_ms) / 1000), s->refused);
    }
    pthread_mutex_unlock(&s->mu);
    if (changed && s->on_writable)
        s->on_writable();
}

/* One tiny write: succeeds once RocksDB has recovered from its background error. */
static bool probe_write(store_t *s)
{
    static const char key[] = "mcpd-write-probe";
    char v[24];
    int n = snprintf(v, sizeof v, "%lld", (long long)now_wall_ms());
    char *err = NULL;
    rocksdb_put_cf(s->db, s->wopts, s->cf[0], key, sizeof key - 1, v, (size_t)n, &err);
    if (err) {
        rocksdb_free(err);
        return false;
    }
    return true;
}

static void *watcher_main(void *arg)
{
    store_t *s = arg;
    log_set_thread_name("store-probe");
    pthread_mutex_lock(&s->mu);
    while (!s->closing && atomic_load(&s->refusing)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += PROBE_INTERVAL_MS / 1000;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (s->closing || !atomic_load(&s->refusing))
            break;
        bool by_guard = s->refused_by_guard;
        pthread_mutex_unlock(&s->mu);
        /* no write until the space is back: a probe that failed on a fresh log writer is
         * what RocksDB cannot recover from (the file comment) */
        int64_t f = free_bytes(s);
        int64_t need = by_guard ? s->min_free : (s->min_free > ROCKSDB_RESUME_FREE_BYTES
                                                     ? s->min_free : ROCKSDB_RESUME_FREE_BYTES);
        if ((f < 0 || f >= need) && probe_write(s))
            mark_writable(s, by_guard ? "free space is back above --min-free-space" : "a probe write");
        pthread_mutex_lock(&s->mu);
    }
    s->watcher_running = false;
    pthread_cond_broadcast(&s->cv); /* store_close may wait for this */
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* A write failed (or the guard refused it): counted every time, logged once per transition
 * (the end's line has the count), watched until it heals. */
static void mark_refusing(store_t *s, const char *err, bool by_guard)
{
    STAT_INC(store_errors_total);
    pthread_mutex_lock(&s->mu);
    if (!atomic_load(&s->refusing) || (s->refused_by_guard && !by_guard))
        s->refused_by_guard = by_guard; /* a RocksDB error outranks the guard's refusal */
    if (!atomic_load(&s->refusing)) {
        snprintf(s->why, sizeof s->why, "%s", err);
        s->since_ms = now_wall_ms();
        s->refused = 0;
        atomic_store_explicit(&s->refusing, true, memory_order_release);
        log_error("store: a write failed (%s); writes are refused until the store recovers "
                  "(requests that need a write get 503 or a -32603 error, /healthz says 503)",
                  err);
        if (!s->watcher_running && !s->closing &&
            pthread_create(&s->watcher, NULL, watcher_main, s) == 0) {
            pthread_detach(s->watcher);
            s->watcher_running = true;
        }
    } else {
        log_debug("store: write refused: %s", err);
    }
    s->refused++;
    pthread_mutex_unlock(&s->mu);
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

static int commit_with(store_t *s, store_batch_t *b, const rocksdb_writeoptions_t *wo)
{
    if (rocksdb_writebatch_count(b->wb) == 0)
        return 0;
    int64_t free_now;
    if (!space_ok(s, store_batch_bytes(b), &free_now)) {
        char why[200];
        snprintf(why, sizeof why,
                 "No space left on device: only %lld bytes free on the data directory's "
                 "filesystem, below --min-free-space %lld",
                 (long long)free_now, (long long)s->min_free);
        rocksdb_writebatch_clear(b->wb);
        mark_refusing(s, why, true);
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
        mark_refusing(s, err, false);
        rocksdb_free(err);
        return -EIO;
    }
    STAT_INC(store_write_batches_total);
    if (!store_writable(s))
        mark_writable(s, "a write");
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

store_iter_t *store_iter_new_scan(store_t *s, store_cf_t cf)
{
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


/* ---- shard moves: a prefix of ids out as SST files, and in ---- */

/* Whether key k of family cf belongs to an id starting with prefix: the id starts every key
 * except an alarm's, where it follows the 8-byte due time. */
static bool key_has_prefix(store_cf_t cf, const unsigned char *k, size_t kl, const char *prefix,
                           size_t plen)
{
    size_t off = cf == CF_ALARMS ? 8 : 0;
    return kl >= off + plen && memcmp(k + off, prefix, plen) == 0;
}

/* The exclusive upper bound of keys starting with prefix (its last byte plus one). */
static void prefix_upper(char *out, const char *prefix, size_t plen)
{
    memcpy(out, prefix, plen);
    out[plen - 1]++;
}

const char *store_cf_name(store_cf_t cf)
{
    return cf_names[cf + 1];
}

/* fsync(2) of a file by path: 0, or -errno. */
static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

int store_export_prefix(store_t *s, const char *prefix, size_t plen, const char *dir,
                        uint64_t keys[CF__COUNT], char *why, size_t whylen)
{
    memset(keys, 0, sizeof(uint64_t) * CF__COUNT);
    if (plen == 0 || plen > 32)
        return -EINVAL;
    char upper[32];
    prefix_upper(upper, prefix, plen);
    rocksdb_envoptions_t *env = rocksdb_envoptions_create();
    const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(s->db);
    int rc = 0;
    for (int cf = 0; cf < CF__COUNT && rc == 0; cf++) {
        rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
        rocksdb_readoptions_set_snapshot(ro, snap);
        rocksdb_readoptions_set_fill_cache(ro, 0);
        if (cf != CF_ALARMS) { /* the alarms are read whole: due time first */
            rocksdb_readoptions_set_iterate_lower_bound(ro, prefix, plen);
            rocksdb_readoptions_set_iterate_upper_bound(ro, upper, plen);
        }
        rocksdb_iterator_t *it = rocksdb_create_iterator_cf(s->db, ro, cfh(s, (store_cf_t)cf));
        rocksdb_sstfilewriter_t *w = NULL;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.sst", dir, cf_names[cf + 1]);
        unlink(path); /* an older export's file would be ingested with this one */
        char *err = NULL;
        for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && !err; rocksdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = rocksdb_iter_key(it, &kl);
            if (!key_has_prefix((store_cf_t)cf, (const unsigned char *)k, kl, prefix, plen))
                continue;
            const char *v = rocksdb_iter_value(it, &vl);
            if (!w) { /* a family with no key gets no file (a writer cannot finish empty) */
                w = rocksdb_sstfilewriter_create(env, s->cf_opts);
                rocksdb_sstfilewriter_open(w, path, &err);
                if (err)
                    break;
            }
            rocksdb_sstfilewriter_put(w, k, kl, v, vl, &err);
            keys[cf]++;
        }
        if (!err)
            rocksdb_iter_get_error(it, &err);
        if (w && !err)
            rocksdb_sstfilewriter_finish(w, &err);
        if (err) {
            snprintf(why, whylen, "exporting %s: %s", cf_names[cf + 1], err);
            rocksdb_free(err);
            rc = -EIO;
        } else if (w) {
            /* the export may be the shard's only copy once the release is recorded */
            int e = fsync_path(path, O_RDONLY);
            if (e != 0) {
                snprintf(why, whylen, "fsync %s: %s", path, strerror(-e));
                rc = -EIO;
            }
        }
        if (w)
            rocksdb_sstfilewriter_destroy(w);
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
    }
    rocksdb_release_snapshot(s->db, snap);
    rocksdb_envoptions_destroy(env);
    return rc;
}

void store_count_prefix(store_t *s, const char *prefix, size_t plen, uint64_t keys[CF__COUNT])
{
    memset(keys, 0, sizeof(uint64_t) * CF__COUNT);
    if (plen == 0 || plen > 32)
        return;
    char upper[32];
    prefix_upper(upper, prefix, plen);
    for (int cf = 0; cf < CF__COUNT; cf++) {
        bool all = cf == CF_ALARMS;
        store_iter_t *it = store_iter_new(s, (store_cf_t)cf, all ? NULL : prefix, plen,
                                          all ? NULL : upper, plen);
        for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
            size_t kl;
            const unsigned char *k = store_iter_key(it, &kl);
            if (key_has_prefix((store_cf_t)cf, k, kl, prefix, plen))
                keys[cf]++;
        }
        store_iter_free(it);
    }
}

bool store_prefix_any(store_t *s, store_cf_t cf, const char *prefix, size_t plen)
{
    if (plen == 0 || plen > 32 || cf == CF_ALARMS)
        return false;
    char upper[32];
    prefix_upper(upper, prefix, plen);
    store_iter_t *it = store_iter_new(s, cf, prefix, plen, upper, plen);
    store_iter_seek_first(it);
    bool any = store_iter_valid(it);
    store_iter_free(it);
    return any;
}

int store_delete_prefix(store_t *s, const char *prefix, size_t plen)
{
    if (plen == 0 || plen > 32)
        return -EINVAL;
    char upper[32];
    prefix_upper(upper, prefix, plen);
    store_batch_t *b = store_batch_new(s);
    for (int cf = 0; cf < CF__COUNT; cf++) {
        if (cf != CF_ALARMS) {
            store_batch_delete_range(b, (store_cf_t)cf, prefix, plen, upper, plen);
            continue;
        }
        store_iter_t *it = store_iter_new(s, CF_ALARMS, NULL, 0, NULL, 0);
        for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
            size_t kl;
            const unsigned char *k = store_iter_key(it, &kl);
            if (key_has_prefix(CF_ALARMS, k, kl, prefix, plen))
                store_batch_delete(b, CF_ALARMS, k, kl);
        }
        store_iter_free(it);
    }
    int rc = store_commit(s, b);
    store_batch_free(b);
    return rc;
}

int store_ingest_dir(store_t *s, const char *dir, const bool present[CF__COUNT], bool move,
                     char *why, size_t whylen)
{
    rocksdb_ingestexternalfileoptions_t *io = rocksdb_ingestexternalfileoptions_create();
    rocksdb_ingestexternalfileoptions_set_move_files(io, move ? 1 : 0);
    int rc = 0;
    for (int cf = 0; cf < CF__COUNT && rc == 0; cf++) {
        if (!present[cf])
            continue; /* the family had no key of the shard */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.sst", dir, cf_names[cf + 1]);
        const char *list[1] = {path};
        char *err = NULL;
        rocksdb_ingest_external_file_cf(s->db, cfh(s, (store_cf_t)cf), list, 1, io, &err);
        if (err) {
            snprintf(why, whylen, "ingesting %s: %s", path, err);
            rocksdb_free(err);
            rc = -EIO;
        }
    }
    rocksdb_ingestexternalfileoptions_destroy(io);
    return rc;
}
