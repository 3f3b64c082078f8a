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

/* RocksDB's names of the column families: [0] "default", then store_cf_t's order. */
extern const char *const store_cf_names[CF__COUNT + 1];

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
    long long refused; /* under mu: commits refused since the refusals started */
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

static inline rocksdb_column_family_handle_t *cfh(store_t *s, store_cf_t cf)
{
    return s->cf[cf + 1];
}

/* ---- health.c ---- */
/* Free bytes on the filesystem of s->dir, or -1. */
int64_t store_free_bytes(const store_t *s);
/* The guard: true when `size` more bytes leave at least min_free free (*free_now: what statvfs
 * said, or -1 when it was not asked). Cheap: statvfs only after a second or once the margin
 * it gave is used up. */
bool store_space_ok(store_t *s, size_t size, int64_t *free_now);
/* The key written at open, so a memtable is never empty when a write fails. */
int store_write_keeper(store_t *s, char **rerr);
/* A write failed (or the guard refused it): counted every time, logged once per transition,
 * watched until it heals. */
void store_mark_refusing(store_t *s, const char *err, bool by_guard);
/* Writes succeed again: logged once, store_on_writable's callback run. */
void store_mark_writable(store_t *s, const char *how);

#endif
