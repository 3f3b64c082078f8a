/* The RocksDB store: one database, a few column families by record kind (see keys.h), or one
 * such database per partition (store_open_parts: a shard's records in one of them).
 *
 * Threads: store_open/store_close on the main thread; everything else from any thread
 * (RocksDB is thread-safe). By convention only the actor owning a session writes its keys, so
 * there is no cross-session locking; writes are grouped in one batch per worker turn.
 */
#ifndef MCPD_STORE_STORE_H
#define MCPD_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    /* RocksDB's default family: the node's own records (the keeper key, shard ownership:
     * store/shardrec.h). Never exported with a shard. */
    CF_NODE = -1,
    CF_SESSIONS = 0,
    CF_STREAMS,
    CF_EVENTS,
    CF_REQMAP,
    CF_STATE,
    CF_ALARMS,
    CF_EXPIRY,
    CF__COUNT
} store_cf_t;

typedef struct store store_t;
typedef struct store_batch store_batch_t;
typedef struct store_iter store_iter_t;

/* Opens (creating if needed) the database in dir. min_free_bytes > 0 keeps that much free on
 * dir's filesystem: a commit that finds less is refused by the store itself, before RocksDB
 * would fail on a full disk (see store.c). On failure returns NULL and a message. */
store_t *store_open(const char *dir, bool sync, int64_t min_free_bytes, char *err, size_t errlen);
/* store_open, partitioned: nparts databases (1..STORE_PARTITIONS_MAX), each written by its own
 * write path (no write group shared between them). The count is recorded at the directory's
 * creation and that record wins at every later open (a directory made before partitions holds
 * one): *nparts says what was opened. nparts 0 on entry: the recorded count, else 1. */
store_t *store_open_parts(const char *dir, bool sync, int64_t min_free_bytes, int *nparts,
                          char *err, size_t errlen);
#define STORE_PARTITIONS_MAX 64
/* The table files each partition's database keeps open at most (RocksDB's max_open_files): the
 * descriptors the store may hold besides its logs. A budget for all partitions together (set
 * before store_open; the main thread) splits evenly, each partition given at least
 * STORE_MIN_OPEN_FILES and at most STORE_MAX_OPEN_FILES (the default, with no budget): RocksDB
 * closes and reopens table files past it, slower reads but no failure. */
#define STORE_MAX_OPEN_FILES 512
#define STORE_MIN_OPEN_FILES 32
void store_set_open_files_budget(int64_t files);
int store_open_files_per_part(int nparts);
/* The store's partition count. */
int store_partitions(const store_t *s);
/* With nparts partitions: a column family's memtable write buffer, and its arena block (0:
 * RocksDB's default, an eighth of the write buffer, at most 1 MiB). Pure; for make_options and
 * the unit test of their bounds. */
size_t store_write_buffer_bytes(int nparts);
size_t store_arena_block_bytes(int nparts);
/* Each partition's MANIFEST past which RocksDB starts a new one (64 MiB split between the
 * partitions, at least 1 MiB). Pure. */
size_t store_manifest_max_bytes(int nparts);
/* The partition of an id (its first len bytes; the shard in them) among nparts: the shard
 * modulo nparts, or 0 for an id that carries no shard. Pure, any thread. */
int store_part_of_id(const char *id, size_t len, int nparts);
void store_close(store_t *s);

store_batch_t *store_batch_new(store_t *s);
void store_batch_free(store_batch_t *b);
void store_batch_put(store_batch_t *b, store_cf_t cf, const void *k, size_t kl, const void *v,
                     size_t vl);
void store_batch_delete(store_batch_t *b, store_cf_t cf, const void *k, size_t kl);
/* A delete for a key that was put exactly once and never overwritten (an event): RocksDB drops
 * the put and this delete together when they meet in a flush or compaction, where a plain
 * delete must be kept down to the last level. */
void store_batch_single_delete(store_batch_t *b, store_cf_t cf, const void *k, size_t kl);
void store_batch_delete_range(store_batch_t *b, store_cf_t cf, const void *lo, size_t lol,
                              const void *hi, size_t hil);
size_t store_batch_count(const store_batch_t *b);
/* Bytes the batch holds. */
size_t store_batch_bytes(const store_batch_t *b);
/* Writes and clears the batch. 0, or -EIO (counted; logged once per change of health, see
 * store_write_health). The batch is cleared either way: what it held was not stored. */
int store_commit(store_t *s, store_batch_t *b);
/* store_commit with the write-ahead log fsynced whatever --sync says: for the records a node
 * must not forget after a machine crash (shard ownership). */
int store_commit_sync(store_t *s, store_batch_t *b);
/* Clears the batch without writing it (a turn that must not reach the store). */
void store_batch_clear(store_batch_t *b);

/* Write health. After a failed write RocksDB refuses every write (a background error) until it
 * recovers by itself (for a full disk: once enough space is free again, checked by its
 * SstFileManager). While refusing, a watcher thread probes with a tiny write once a second and
 * marks the store healthy again at the first success, so /healthz turns back without traffic;
 * no flush is ever started while refusing (a flush would touch the failed write-ahead log
 * writer, which RocksDB's assertions turn into an abort). Any thread. */
bool store_writable(const store_t *s);
/* fn runs (on whichever thread noticed) each time the store accepts writes again. */
void store_on_writable(store_t *s, void (*fn)(void));
/* Tests only: where the free-space guard and the probe learn the data directory's free bytes
 * (NULL: statvfs). Set before store_open. */
void store_set_free_bytes_source(int64_t (*fn)(const char *dir));
/* Room for `bytes` more on the data directory's filesystem, written outside the store's
 * commits (a shard move's files): true when the free space, asked now, less bytes leaves
 * --min-free-space (with no floor: when bytes fit). The guard's cached budget is charged with
 * them until it next asks statvfs (within a second), so the commits of that second do not take
 * their room; later commits may (statvfs sees only what is written). *free_now: what statvfs said (-1: cannot tell, then
 * true); *min_free: the floor. Any thread. */
bool store_space_for(store_t *s, uint64_t bytes, int64_t *free_now, int64_t *min_free);
/* The free space changed outside the store's commits (a move's files written or deleted): the
 * guard asks statvfs again at the next commit. */
void store_space_recheck(store_t *s);
/* Whether path is on the data directory's filesystem (true when it cannot tell). */
bool store_on_fs_of(const store_t *s, const char *path);
/* The reason writes are refused and since when (wall ms); false when writable. */
bool store_write_error(store_t *s, char *why, size_t whylen, int64_t *since_ms);

/* 0 found (*val malloc'd, caller frees), 1 not found, -EIO on error. */
int store_get(store_t *s, store_cf_t cf, const void *k, size_t kl, char **val, size_t *vl);
/* 1 when the key exists, 0 when not, -EIO on error. */
int store_exists(store_t *s, store_cf_t cf, const void *k, size_t kl);

/* Iterator over [lo, hi) in one column family. */
store_iter_t *store_iter_new(store_t *s, store_cf_t cf, const void *lo, size_t lol, const void *hi,
                             size_t hil);
/* An iterator over a whole column family read once (start-up counts and scans): its blocks do
 * not go through the block cache (they would only push out what requests read), and it reads
 * ahead. */
store_iter_t *store_iter_new_scan(store_t *s, store_cf_t cf);
void store_iter_seek(store_iter_t *it, const void *k, size_t kl);
void store_iter_seek_first(store_iter_t *it);
void store_iter_seek_last(store_iter_t *it);
bool store_iter_valid(store_iter_t *it);
void store_iter_next(store_iter_t *it);
const unsigned char *store_iter_key(store_iter_t *it, size_t *len);
const char *store_iter_value(store_iter_t *it, size_t *len);
/* 0, or -EIO when a read error (I/O, a corrupt block) made the iterator invalid before the end
 * of its range: a loop that stopped at !store_iter_valid did not see everything. The error is
 * counted (store_errors_total) and logged (once per episode) once per iterator, here or, for a
 * caller that does not ask, when it is freed. A caller that cannot use a partial walk asks,
 * and answers -EIO itself. */
int store_iter_error(store_iter_t *it);
void store_iter_free(store_iter_t *it);

/* Counts the keys of a column family (startup only: O(keys)). */
uint64_t store_count_keys(store_t *s, store_cf_t cf);
/* Whether a column family holds any key (one seek per partition): 1, 0, or -EIO when a read
 * error hid the answer. */
int store_cf_any(store_t *s, store_cf_t cf);
/* Sum of an integer property over all column families ("rocksdb.cur-size-all-mem-tables"). */
uint64_t store_property_sum(store_t *s, const char *prop);
/* The store's background work now, over all partitions: memtables waiting to be flushed, and
 * flushes and compactions running (0: none). Any thread. */
uint64_t store_background_work(store_t *s);
/* Flushes memtables (shutdown, or after bulk deletions leave range tombstones). */
int store_flush(store_t *s);
/* Starts a flush of one column family without waiting (range tombstones after a sweep). */
void store_flush_async(store_t *s, store_cf_t cf);
/* Bytes of the shared block cache and the memtable budget, for documentation and /stats. */
uint64_t store_cache_budget(const store_t *s);
/* Bytes held in the block cache now. */
uint64_t store_cache_usage(const store_t *s);
uint64_t store_memtable_budget(const store_t *s);

/* Shard moves (see ARCHITECTURE.md, Shards). The keys of every family that belong to ids
 * starting with prefix (plen bytes; an alarm's id follows its due time) are written, from one
 * snapshot, to dir/<family>.sst (no file for a family without such keys), each file fsynced;
 * keys[cf] counts them. 0, or -errno with why. */
int store_export_prefix(store_t *s, const char *prefix, size_t plen, const char *dir,
                        uint64_t keys[CF__COUNT], char *why, size_t whylen);
/* Counts the keys of every family that belong to ids starting with prefix (as exported): 0, or
 * -EIO when a read error stopped the count (keys short: not a count to compare). */
int store_count_prefix(store_t *s, const char *prefix, size_t plen, uint64_t keys[CF__COUNT]);
/* What an export of those keys takes on disk, at most, in *bytes: their keys' and values' bytes
 * (the files hold them once, compressed where they compress) and a margin for each file's own
 * blocks. An O(keys) scan, as the export. 0, or -EIO when a read error stopped the scan (logged;
 * *bytes is 0: no estimate, and the export would meet the same error). */
int store_export_estimate(store_t *s, const char *prefix, size_t plen, uint64_t *bytes);
/* Whether family cf holds any key of an id starting with prefix (one seek; not the alarms): 1,
 * 0, or -EIO when a read error hid the answer. */
int store_prefix_any(store_t *s, store_cf_t cf, const char *prefix, size_t plen);
/* Deletes those keys (a range delete per id-keyed family, point deletes of the alarms found by a
 * scan of every alarm key), in one commit: 0; -EIO when a read error stopped that scan (nothing
 * is deleted: its alarm keys cannot all be named); or the commit's error. */
int store_delete_prefix(store_t *s, const char *prefix, size_t plen);
/* Ingests dir/<family>.sst for each family with present[cf], the keys of ids starting with
 * prefix (into that prefix's partition). move: the files are moved into the database (hard
 * links; dir loses them), else copied. 0, or -EIO with why. */
int store_ingest_dir(store_t *s, const char *prefix, size_t plen, const char *dir,
                     const bool present[CF__COUNT], bool move, char *why, size_t whylen);
/* The name of a column family ("sessions", ...): its export file is <name>.sst. */
const char *store_cf_name(store_cf_t cf);

#endif
