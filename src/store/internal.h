/* What the store's files share (store.c: open and close; health.c: write health and the
 * free-space guard; access.c: batches, reads, iterators, flushes; export.c: shard export and
 * ingest). Nothing outside src/store/ includes it. Any thread, as store.h says. */
#ifndef MCPD_STORE_INTERNAL_H
#define MCPD_STORE_INTERNAL_H

#include "store/store.h"

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The block cache, the memtables' budget over all column families (the 7.8 C API has no
 * WriteBufferManager), and a column family's memtable; RocksDB resumes after ENOSPC only with
 * this much free (its SstFileManager). */
#define BLOCK_CACHE_BYTES (32ULL << 20)
#define MEMTABLE_BUDGET_BYTES (64ULL << 20)
#define CF_WRITE_BUFFER_BYTES (16ULL << 20)
/* the MANIFESTs together before each is rewritten with the live files only (store.c) */
#define MANIFEST_MAX_BYTES (64ULL << 20)
/* a file writer's buffer at most (store.c: make_options) */
#define FILE_BUFFER_BYTES (64ULL << 10)

/* RocksDB's names of the column families: [0] "default", then store_cf_t's order. */
extern const char *const store_cf_names[CF__COUNT + 1];

/* One RocksDB database: the store has one, or, partitioned (store_open_parts), one per
 * partition, each in a directory of its own (part 0 in the data directory itself, part i in
 * <dir>/part-<i>). A key's partition is that of the id that starts it (an alarm's: the id after
 * its due time): the id's shard modulo the count, so a shard's records are all in one
 * partition; the node's own records (CF_NODE) are in partition 0. */
typedef struct store_part {
    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf[CF__COUNT + 1]; /* [0] is "default" */
} store_part_t;

struct store {
    int lock_fd; /* the data directory, flock'ed for the store's life */
    int nparts;
    store_part_t part[STORE_PARTITIONS_MAX];
    rocksdb_env_t *env;
    rocksdb_options_t *opts;
    rocksdb_options_t *cf_opts;
    rocksdb_options_t *ev_opts; /* the events column family: no filter (see table_options) */
    rocksdb_block_based_table_options_t *ev_table;
    rocksdb_cache_t *cache; /* shared by the partitions */
    rocksdb_block_based_table_options_t *table;
    rocksdb_writeoptions_t *wopts;
    rocksdb_writeoptions_t *wopts_sync; /* store_commit_sync */
    rocksdb_readoptions_t *ropts;
    /* write health: `refusing` (the partitions that refuse writes, one bit each) is read
     * lock-free on every commit; the rest under mu */
    atomic_ullong refusing;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char why[256];
    int64_t since_ms;
    long long refused; /* under mu: commits refused since the refusals started */
    bool watcher_running, closing;
    pthread_t watcher;
    void (*on_writable)(void);
    /* free-space guard (min_free == 0: off); the partitions share the data directory's
     * filesystem */
    char *dir;
    int64_t min_free;
    atomic_llong space_budget;  /* bytes that may be written before statvfs is asked again */
    atomic_llong space_checked; /* monotonic ms of the last statvfs */
    bool refused_by_guard;      /* under mu: the last refusal was the guard's, not RocksDB's */
    bool needs_restart;         /* under mu: RocksDB's error is one it does not resume from */
    bool stuck_corrupt;         /* under mu: and it is a "Corruption" (note_stuck) */
    /* under mu: the partitions refusing for such an error; the watcher does not probe them
     * (nothing but a restart ends it) */
    unsigned long long stuck_parts;
    /* under mu: the failed reads of the current episode (store_read_failed) and the monotonic
     * ms of the last one (0: none yet) */
    long long read_failures;
    int64_t read_failed_ms;
};

/* A batch keeps one RocksDB write batch per partition it writes to (created on first use). */
struct store_batch {
    rocksdb_writebatch_t *wb[STORE_PARTITIONS_MAX];
    store_t *s;
};

/* An iterator reads one partition, or, where its range may span several (the alarms, by due
 * time; a whole family), all of them, merged in key order (forward only, see store_iter_new). */
struct store_iter {
    int n;   /* partitions read */
    int cur; /* the one whose key is the current one; -1: none */
    bool after_last;
    bool failed; /* its read error is logged and counted (once) */
    store_t *s;
    rocksdb_iterator_t *it[STORE_PARTITIONS_MAX];
    rocksdb_readoptions_t *ro;
    char *lo, *hi;
};

static inline rocksdb_column_family_handle_t *part_cfh(store_t *s, int part, store_cf_t cf)
{
    return s->part[part].cf[cf + 1];
}

/* The partition of a key of family cf: its id's (store_part_of_id; an alarm's id follows its
 * 8-byte due time); the node's records are partition 0's. */
static inline int store_part_of_key(const store_t *s, store_cf_t cf, const void *key, size_t klen)
{
    if (s->nparts <= 1 || cf == CF_NODE)
        return 0;
    size_t off = cf == CF_ALARMS ? 8 : 0;
    return klen < off ? 0 : store_part_of_id((const char *)key + off, klen - off, s->nparts);
}

/* ---- store.c ---- */
/* fsync(2) of a path opened with flags (O_RDONLY, or with O_DIRECTORY a directory): 0, or
 * -errno. */
int store_fsync_path(const char *path, int flags);

/* ---- health.c ---- */
/* Free bytes on the filesystem of s->dir, or -1. */
int64_t store_free_bytes(const store_t *s);
/* The reason the guard gives (when: "" or " at start"): what /healthz and the log say. */
void store_space_why(const store_t *s, int64_t free_now, const char *when, char *why,
                     size_t whylen);
/* The guard: true when `size` more bytes leave at least min_free free (*free_now: what statvfs
 * said, or -1 when it was not asked). Cheap: statvfs only after a second or once the margin
 * it gave is used up. */
bool store_space_ok(store_t *s, size_t size, int64_t *free_now);
/* The key written at open into each partition, so a memtable is never empty when a write
 * fails. */
int store_write_keeper(store_t *s, int part, char **rerr);
/* A commit refused without a write because a partition it writes to already refuses: counted
 * as a refusal, and nothing else (the partition's refusal, its reason and its watch stay). */
void store_count_refused(store_t *s);
/* A write to partition `part` failed (or the guard refused it): counted every time, logged
 * once per transition of the whole store, watched until it heals. */
void store_mark_refusing(store_t *s, int part, const char *err, bool by_guard);
/* Writes to partition `part` succeed again: once none refuses, logged once and
 * store_on_writable's callback run. */
void store_mark_writable(store_t *s, int part, const char *how);
/* A read failed (what: "read failed", "a scan stopped on a read error"; err: RocksDB's
 * reason): counted in store_errors_total every time, logged once per episode. */
void store_read_failed(store_t *s, const char *what, const char *err);

#endif
