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
 * The write health (a full disk, RocksDB's background errors, the free-space guard) is in
 * health.c; batches, reads and iterators in access.c; shard export and ingest in export.c.
 */
#include "store/internal.h"

#include "core/log.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* RocksDB's InfoLogLevel: header lines at open only (see health.c). */
#define ROCKSDB_INFO_LOG_FATAL 4

const char *const store_cf_names[CF__COUNT + 1] = {
    "default", "sessions", "streams", "events", "reqmap", "state", "alarms", "expiry",
};

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
    rocksdb_block_based_options_set_index_type(
        t, rocksdb_block_based_table_index_type_two_level_index_search);
    rocksdb_block_based_options_set_metadata_block_size(t, 4096);
    rocksdb_block_based_options_set_pin_top_level_index_and_filter(t, 1);
    if (!filter)
        return;
    rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_block_based_options_set_partition_filters(t, 1);
}

/* What store_open creates before the database opens: freed by a failed open and by close. */
static void free_options(store_t *s)
{
    rocksdb_options_destroy(s->cf_opts);
    rocksdb_options_destroy(s->ev_opts);
    rocksdb_block_based_options_destroy(s->ev_table);
    rocksdb_options_destroy(s->opts);
    rocksdb_block_based_options_destroy(s->table);
    rocksdb_cache_destroy(s->cache);
    rocksdb_env_destroy(s->env);
}

/* The partition count's record, <dir>/PARTITIONS: "N creating" while a new directory's
 * partitions are made (written, with the directory, before the first of them), then "N" once
 * all of them are. Every later open uses N and finds every partition there: a missing one is
 * refused, never made again empty. A directory that holds a database but no record was made
 * before partitions: one. */
#define PARTS_FILE "PARTITIONS"
/* Partition 0 of a partitioned store has this extra column family, which a binary from before
 * partitions does not name: it refuses to open the directory instead of serving partition 0's
 * shards alone. */
#define PARTS_MARKER_CF "partitioned"

static bool path_exists(const char *dir, const char *name)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

int store_fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* 0 with the record's count and state, 1 when there is none, -1 with err. */
static int record_read(const char *dir, int *n, bool *creating, char *err, size_t errlen)
{
    char path[4096], text[64];
    snprintf(path, sizeof path, "%s/" PARTS_FILE, dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 1;
    ssize_t len = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
    if (fd >= 0)
        close(fd);
    if (len < 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    text[len] = '\0';
    char *end;
    long v = strtol(text, &end, 10);
    *creating = strcmp(end, " creating\n") == 0;
    if (end == text || v < 1 || v > STORE_PARTITIONS_MAX || (!*creating && strcmp(end, "\n"))) {
        snprintf(err, errlen, "%s does not hold a partition count (1 to %d)", path,
                 STORE_PARTITIONS_MAX);
        return -1;
    }
    *n = (int)v;
    return 0;
}

/* Writes the record (a temporary file renamed over it, both fsynced, and the directory). */
static int record_write(const char *dir, int n, bool creating, char *err, size_t errlen)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/" PARTS_FILE, dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "we");
    bool ok = f && fprintf(f, "%d%s\n", n, creating ? " creating" : "") > 0 && fflush(f) == 0 &&
              fsync(fileno(f)) == 0;
    int e = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        e = errno;
    }
    if (ok && (e = -store_fsync_path(dir, O_RDONLY | O_DIRECTORY)) != 0)
        ok = false;
    if (!ok) {
        unlink(tmp);
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

/* The count to open dir with, and whether its partitions are still being made (*creating:
 * they may be created). 0, or -1 with err. */
static int parts_record(const char *dir, int *nparts, bool *creating, char *err, size_t errlen)
{
    int rc = record_read(dir, nparts, creating, err, errlen);
    if (rc <= 0)
        return rc;
    if (path_exists(dir, "CURRENT")) { /* a database made before partitions */
        if (path_exists(dir, "part-1")) {
            snprintf(err, errlen,
                     "%s has partitions (part-1) but no %s: it cannot tell which records are "
                     "where",
                     dir, PARTS_FILE);
            return -1;
        }
        *nparts = 1;
        *creating = false;
    } else {
        if (*nparts < 1)
            *nparts = 1;
        *creating = true;
    }
    return record_write(dir, *nparts, *creating, err, errlen);
}

/* Opens partition i; creating: its directory and database are made if missing, else a missing
 * one is an error. 0, or -1 with err. */
static int open_part(store_t *s, const char *dir, int i, bool creating, char *err, size_t errlen)
{
    char path[4000];
    if (i == 0)
        snprintf(path, sizeof path, "%s", dir);
    else
        snprintf(path, sizeof path, "%s/part-%d", dir, i);
    if (!creating && !path_exists(path, "CURRENT")) {
        snprintf(err, errlen,
                 "partition %d of %d (%s) is missing: %s/" PARTS_FILE
                 " says the records are spread over %d, so the store cannot start without it",
                 i, s->nparts, path, dir, s->nparts);
        return -1;
    }
    if (i > 0 && creating && mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    const char *names[CF__COUNT + 2];
    const rocksdb_options_t *cfo[CF__COUNT + 2];
    rocksdb_column_family_handle_t *h[CF__COUNT + 2];
    int n = CF__COUNT + 1;
    for (int c = 0; c <= CF__COUNT; c++) {
        names[c] = store_cf_names[c];
        cfo[c] = c == CF_EVENTS + 1 ? s->ev_opts : s->cf_opts;
    }
    if (i == 0 && s->nparts > 1) {
        names[n] = PARTS_MARKER_CF;
        cfo[n++] = s->cf_opts;
    }
    rocksdb_options_set_create_if_missing(s->opts, creating ? 1 : 0);
    char *rerr = NULL;
    s->part[i].db = rocksdb_open_column_families(s->opts, path, n, names, cfo, h, &rerr);
    if (rerr) {
        snprintf(err, errlen, "cannot open RocksDB in %s: %s", path, rerr);
        rocksdb_free(rerr);
        s->part[i].db = NULL;
        return -1;
    }
    memcpy(s->part[i].cf, h, sizeof s->part[i].cf);
    if (n > CF__COUNT + 1)
        rocksdb_column_family_handle_destroy(h[CF__COUNT + 1]); /* named, never used */
    /* a new partition's directory entry, before the record says it exists */
    if (i > 0 && creating && store_fsync_path(dir, O_RDONLY | O_DIRECTORY) != 0) {
        snprintf(err, errlen, "cannot fsync %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static void close_parts(store_t *s)
{
    for (int i = 0; i < s->nparts; i++) {
        if (!s->part[i].db)
            continue;
        for (int c = 0; c <= CF__COUNT; c++)
            rocksdb_column_family_handle_destroy(s->part[i].cf[c]);
        rocksdb_close(s->part[i].db);
        s->part[i].db = NULL;
    }
}

/* A family's memtable: a quarter of the budget (16 MiB), split between the partitions, so that
 * what the memtables hold before a flush, and the write-ahead logs RocksDB preallocates (a
 * memtable's size and a tenth), stay one store's in all. */
size_t store_write_buffer_bytes(int nparts)
{
    size_t b = MEMTABLE_BUDGET_BYTES / 4 / (size_t)(nparts > 0 ? nparts : 1);
    return b < CF_WRITE_BUFFER_BYTES ? b : CF_WRITE_BUFFER_BYTES;
}

/* Its arena blocks. RocksDB's default is an eighth of the write buffer, at most 1 MiB: from 5
 * partitions on that is below the mmap threshold, and glibc serves such blocks from its arenas
 * and keeps them there as free space after their memtable's flush. Where a block the size of
 * the threshold is still at most a quarter of the write buffer (5 to 8 partitions) it is that
 * size, mapped, and given back at the flush. Not larger: a partition's memtable budget is four
 * write buffers, RocksDB flushes its oldest memtable once the blocks allocated reach seven
 * eighths of it, and every family's first block counts (1 MiB blocks at 8 partitions made it
 * flush one memtable after another); and a memtable whose empty arena is already near its
 * write buffer is due at once (RocksDB asserts it is not). Elsewhere RocksDB's default. */
size_t store_arena_block_bytes(int nparts)
{
    size_t wb = store_write_buffer_bytes(nparts);
    size_t deflt = wb / 8 < (1u << 20) ? wb / 8 : (1u << 20);
    return deflt < MALLOC_MMAP_THRESHOLD && wb / 4 >= MALLOC_MMAP_THRESHOLD ? MALLOC_MMAP_THRESHOLD
                                                                            : 0;
}

size_t store_manifest_max_bytes(int nparts)
{
    size_t b = MANIFEST_MAX_BYTES / (size_t)(nparts > 0 ? nparts : 1);
    return b < (1u << 20) ? (1u << 20) : b;
}

/* The options every partition opens with (s->nparts set): the tables, the environment, the
 * database's and the column families'. */
static void make_options(store_t *s)
{
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
    rocksdb_options_set_create_missing_column_families(s->opts, 1);
    rocksdb_options_increase_parallelism(s->opts, 2);
    /* the budget is the store's: the partitions share it */
    rocksdb_options_set_db_write_buffer_size(s->opts, MEMTABLE_BUDGET_BYTES / (size_t)s->nparts);
    rocksdb_options_set_max_open_files(s->opts, store_open_files_per_part(s->nparts));
    /* RocksDB preallocates each MANIFEST (4 MiB by default): the partitions share that too,
     * or a restart on a nearly full disk could not open them all */
    rocksdb_options_set_manifest_preallocation_size(s->opts, (4u << 20) / (size_t)s->nparts);
    /* A MANIFEST takes an edit per flush and compaction and is rewritten whole (the live files
     * only) at an open or past this size: RocksDB's 1 GiB a partition let it grow for weeks
     * between restarts (~2 KB/s at 8 partitions under a steady stream of events) to up to a
     * gigabyte per partition beside a store of a few megabytes */
    rocksdb_options_set_max_manifest_file_size(s->opts, store_manifest_max_bytes(s->nparts));
    rocksdb_options_set_keep_log_file_num(s->opts, 4);
    rocksdb_options_set_block_based_table_factory(s->opts, s->table);
    /* quiescent means quiescent: no periodic statistics work */
    rocksdb_options_set_stats_dump_period_sec(s->opts, 0);
    rocksdb_options_set_stats_persist_period_sec(s->opts, 0);
    /* a failed write stops all writes (background error) instead of being retried on a log
     * writer that already failed; this is RocksDB's default, relied on here */
    rocksdb_options_set_paranoid_checks(s->opts, 1);
    rocksdb_options_set_info_log_level(s->opts, ROCKSDB_INFO_LOG_FATAL);
    /* MCPD_STORE_PIPELINED_WRITE=1 in the environment: RocksDB's pipelined write (a write group's
     * WAL write overlaps the previous group's memtable insert; a write still returns only when
     * both are done), for A/B runs on many cores (docs/PERFORMANCE.md) */
    const char *pipelined = getenv("MCPD_STORE_PIPELINED_WRITE");
    if (pipelined && strcmp(pipelined, "1") == 0)
        rocksdb_options_set_enable_pipelined_write(s->opts, 1);
    /* MCPD_STORE_WRITE_YIELD=0: a writer waiting for its group's leader blocks after a short
     * spin instead of spinning with sched_yield for up to 100 us first (RocksDB's adaptive
     * yield, on by default), for the same A/B: the yields show as CPU use on a busy machine */
    const char *yield = getenv("MCPD_STORE_WRITE_YIELD");
    if (yield && strcmp(yield, "0") == 0)
        rocksdb_options_set_enable_write_thread_adaptive_yield(s->opts, 0);

    /* A file writer's buffer (a write-ahead log's, the MANIFEST's, a flush's table) grows, when
     * one write needs more, up to this size and keeps it for the file's life: RocksDB's 1 MiB
     * stayed with each partition's log after a burst of large commits (a turn that hibernates
     * hundreds of sessions). A write larger than the buffer goes out as it is. */
    rocksdb_options_set_writable_file_max_buffer_size(s->opts, FILE_BUFFER_BYTES);
    s->cf_opts = rocksdb_options_create_copy(s->opts);
    rocksdb_options_set_write_buffer_size(s->cf_opts, store_write_buffer_bytes(s->nparts));
    size_t arena = store_arena_block_bytes(s->nparts);
    if (arena)
        rocksdb_options_set_arena_block_size(s->cf_opts, arena);
}

store_t *store_open(const char *dir, bool sync, int64_t min_free_bytes, char *err, size_t errlen)
{
    int nparts = 0;
    return store_open_parts(dir, sync, min_free_bytes, &nparts, err, errlen);
}

store_t *store_open_parts(const char *dir, bool sync, int64_t min_free_bytes, int *nparts,
                          char *err, size_t errlen)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create data directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    if (*nparts > STORE_PARTITIONS_MAX) {
        snprintf(err, errlen, "at most %d partitions", STORE_PARTITIONS_MAX);
        return NULL;
    }
    /* held for the store's life: the record is read and written by one process at a time
     * (RocksDB's own LOCK comes only with the first partition's open) */
    int lock_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, errlen, "cannot lock the data directory %s: %s", dir,
                 errno == EWOULDBLOCK ? "another process uses it" : strerror(errno));
        if (lock_fd >= 0)
            close(lock_fd);
        return NULL;
    }
    bool creating = false;
    if (parts_record(dir, nparts, &creating, err, errlen) != 0) {
        close(lock_fd);
        return NULL;
    }
    store_t *s = xcalloc(1, sizeof *s);
    s->lock_fd = lock_fd;
    s->nparts = *nparts;
    make_options(s);
    bool failed = false;
    s->ev_table = rocksdb_block_based_options_create();
    table_options(s->ev_table, s->cache, false);
    s->ev_opts = rocksdb_options_create_copy(s->cf_opts);
    rocksdb_options_set_block_based_table_factory(s->ev_opts, s->ev_table);
    for (int i = 0; i < s->nparts && !failed; i++)
        failed = open_part(s, dir, i, creating, err, errlen) != 0;
    if (failed || (creating && record_write(dir, s->nparts, false, err, errlen) != 0)) {
        close_parts(s);
        free_options(s);
        close(s->lock_fd);
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
    int64_t f = store_free_bytes(s);
    if (s->min_free && f >= 0 && f < s->min_free) {
        /* reads and resumes work; writes wait for the space (the watcher looks every second,
         * and its first write is the key below) */
        char why[200];
        store_space_why(s, f, " at start", why, sizeof why);
        for (int i = 0; i < s->nparts; i++)
            store_mark_refusing(s, i, why, true);
        return s;
    }
    for (int i = 0; i < s->nparts; i++) {
        char *rerr = NULL;
        if (store_write_keeper(s, i, &rerr) != 0) {
            snprintf(err, errlen, "cannot write to RocksDB in %s (partition %d): %s", dir, i, rerr);
            rocksdb_free(rerr);
            /* a failed first write must not be followed by any flush or close (store.c) */
            atomic_store(&s->refusing, 1ULL << i);
            store_close(s);
            return NULL;
        }
    }
    return s;
}

int store_partitions(const store_t *s)
{
    return s->nparts;
}

int store_part_of_id(const char *id, size_t len, int nparts)
{
    if (nparts <= 1 || len < SHARD_HEX)
        return 0;
    int sh = shard_of(id); /* reads at most SHARD_HEX characters */
    return sh < 0 ? 0 : sh % nparts;
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
    close_parts(s);
    rocksdb_writeoptions_destroy(s->wopts);
    rocksdb_writeoptions_destroy(s->wopts_sync);
    rocksdb_readoptions_destroy(s->ropts);
    free_options(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    close(s->lock_fd);
    free(s->dir);
    free(s);
}
