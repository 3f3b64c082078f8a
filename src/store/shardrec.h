/* Shard ownership records: what this node durably knows about each shard it has held (issue
 * 21). One record per shard in the node's own column family (CF_NODE, key "shard/<3 hex>"),
 * written with an fsynced commit before the change it records takes effect, so a node that
 * dies at any step of a move comes back knowing whether it holds a shard, at which epoch, and
 * where its export went. The cluster file is the operator's map; these records are the node's
 * truth about its data (see ARCHITECTURE.md, "Who owns a shard").
 *
 * Threads: the main thread at start, then the shard-move thread only. */
#ifndef MCPD_STORE_SHARDREC_H
#define MCPD_STORE_SHARDREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/shard.h"
#include "store/store.h"

#define SHARDREC_PEER_MAX 64
#define SHARDREC_EPOCH_MAX 2000000000u

typedef enum {
    SHARDREC_NONE = 0, /* no record: never held here (or a store older than the records) */
    SHARDREC_OWNED,    /* held here since `epoch` (adopted from `peer`, or the file's at 1) */
    SHARDREC_RELEASED, /* given up at `epoch` to `peer`; the export holds the data */
} shardrec_state_t;

typedef struct shardrec {
    shardrec_state_t state;
    uint32_t epoch;    /* of the state; every move gives the shard a new, higher epoch */
    uint32_t declined; /* the highest epoch this node promised never to adopt (0: none) */
    bool export_kept;  /* released: the export is still in --move-dir (until finish) */
    char peer[SHARDREC_PEER_MAX + 1];
} shardrec_t;

/* The record's text (compact JSON) into out; its length, or 0 when cap is too small. */
size_t shardrec_encode(const shardrec_t *r, char *out, size_t cap);
/* 0, or -EINVAL for a value that is not a record this code writes. */
int shardrec_decode(const char *v, size_t vl, shardrec_t *r);
const char *shardrec_state_name(shardrec_state_t st);

/* 0 found, 1 absent (r zeroed), -EIO. */
int shardrec_get(store_t *s, int shard, shardrec_t *r);
/* Writes the record with an fsynced commit: 0, or -EIO / -ENOSPC (nothing changed). */
int shardrec_put(store_t *s, int shard, const shardrec_t *r);
/* Writes several records in one fsynced commit (recs[i] for shards[i]). */
int shardrec_put_many(store_t *s, const int *shards, const shardrec_t *recs, int n);
/* Where a store is in taking the cluster file's shards as its own (a marker in CF_NODE). */
typedef enum {
    SHARDREC_BOOT_NONE = 0,    /* no marker: the store's first start in a cluster */
    SHARDREC_BOOT_DONE = 1,    /* the file's never-moved shards were claimed (shardrec_bootstrap) */
    SHARDREC_BOOT_PENDING = 2, /* a new data directory: it claims nothing until bootstrapped */
} shardrec_boot_t;
/* The claims of the cluster file's shards, written in one fsynced commit with the marker
 * SHARDREC_BOOT_DONE. */
int shardrec_bootstrap(store_t *s, const int *shards, const shardrec_t *recs, int n);
/* Marks a new data directory SHARDREC_BOOT_PENDING (fsynced): 0, or -EIO / -ENOSPC. */
int shardrec_mark_pending(store_t *s);
/* The store's marker: a shardrec_boot_t, or -EIO. */
int shardrec_bootstrapped(store_t *s);
/* Every record (absent ones zeroed): 0; -EINVAL when some record does not decode (bad[shard]
 * set for each, the others read); -EIO when a read error stopped the walk (the records after
 * it are not known). */
int shardrec_load_all(store_t *s, shardrec_t recs[SHARD_COUNT], bool bad[SHARD_COUNT]);

#endif
