/* Who owns a shard, and moving one between nodes (issues 13 and 21). Each node keeps a durable
 * record per shard it has held (store/shardrec.h): owned at an epoch, or released at an epoch
 * to a named node with its export kept in --move-dir. A move is a release on the old owner (it
 * stops serving the shard, lets its actors finish their turns and hibernate, writes the keys as
 * SST files with a manifest of sizes and SHA-256s, records the release, deletes its copy) and
 * an adopt on the new one (it fetches the export from the old owner's admin listener, checks
 * every file, ingests them, records the new epoch, serves). Every record is written, fsynced,
 * before the change it records takes effect, so a node that dies at any step comes back
 * knowing what it holds. See ARCHITECTURE.md, "Who owns a shard".
 *
 * Threads: shardmove_init on the main thread at start; the steps on the admin listener's move
 * thread, one at a time; the read-only queries (summary, record, export path) on the admin
 * thread. */
#ifndef MCPD_ACTOR_SHARDMOVE_H
#define MCPD_ACTOR_SHARDMOVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "store/shardrec.h"
#include "store/store.h"

typedef struct shard_req {
    int shard;
    char peer[SHARDREC_PEER_MAX + 1]; /* release: the node it goes to; adopt: the node it
                                         comes from; decline: the node asking; finish:
                                         the node that holds it past a copy set aside */
    uint32_t epoch;                   /* decline: the export's epoch */
    bool force;                       /* reclaim: without the other node's word; adopt: over
                                         this node's own (refused) copy */
} shard_req_t;

/* Start, before any thread serves: reads the records, settles them against the cluster file
 * (shard_decide), at the first start on a store that holds ids (one older than the records)
 * claims the file's never-moved shards at epoch 1, and at the first start on one that holds
 * none (a new data directory) marks it not bootstrapped; finishes the local delete of released
 * shards, clears move directories no record keeps, and sets which shards are served. Without
 * --cluster it does nothing. 0, or -1 after logging why. */
int shardmove_init(store_t *store, const char *move_dir);

typedef enum { SHARD_NOT_MINE = 0, SHARD_SERVE, SHARD_REFUSE } shard_verdict_t;
/* The start-up rule for one shard: the cluster file gives it to this node or not, at
 * file_epoch; rec is the node's record. The later epoch wins; an equal epoch must agree:
 *   - owned at e: served unless the file names a later epoch, or e itself for another node
 *     (then refused: this node's copy may be stale);
 *   - released: not served (refused, and said, when the file still gives it here);
 *   - no record: refused when the file says it moved here (file epoch > 1: never adopted).
 *     Else, by boot: SHARDREC_BOOT_NONE (the first start of a store older than the records)
 *     claims it at epoch 1; SHARDREC_BOOT_PENDING (a new data directory) refuses it until the
 *     bootstrap step claims it; SHARDREC_BOOT_DONE refuses it (the file gives it a shard after
 *     its first start: this node never held it, it has no data for it).
 * *claim: write an owned record at epoch 1. why: the reason of a refusal or a disagreement. */
shard_verdict_t shard_decide(bool file_mine, uint32_t file_epoch, const shardrec_t *rec,
                             shardrec_boot_t boot, bool *claim, char *why, size_t whylen);

/* The steps. 0 with *report (new), or -errno with why:
 *   -EINVAL  a bad request (no such node, no cluster)
 *   -EALREADY the shard's state forbids it (not served here, released elsewhere, ...)
 *   -EBUSY   its actors did not settle within wait_ms (served here again)
 *   -EAGAIN  the other node could not be reached, or is busy: retry
 *   -EBADMSG the export (the other node's for an adopt, its own for a reclaim) is incomplete
 *            or damaged: a file missing, or differing from its manifest (nothing adopted)
 *   -ENOSPC  its files would leave less than --min-free-space free (nothing changed)
 *   -EIO     this node's own store or disk failed a read or a write (nothing changed; why
 *            names this node) */
int shard_release(const shard_req_t *rq, long wait_ms, json_t **report, char *why, size_t whylen);
int shard_adopt(const shard_req_t *rq, json_t **report, char *why, size_t whylen);
/* The releasing node takes its export back (the adopt failed): the node it was for must first
 * promise never to adopt it (decline), unless force. */
int shard_reclaim(const shard_req_t *rq, json_t **report, char *why, size_t whylen);
/* This node promises never to adopt the shard's export of rq->epoch (refused when it has). */
int shard_decline(const shard_req_t *rq, json_t **report, char *why, size_t whylen);
/* The releasing node deletes its export once the node it went to holds the shard; a copy a
 * forced adopt set aside here (released to this node itself) once rq->peer holds a later epoch. */
int shard_finish(const shard_req_t *rq, json_t **report, char *why, size_t whylen);
/* A new data directory (not bootstrapped) claims the cluster file's never-moved shards at epoch
 * 1, unless a node it can reach serves, refuses or keeps in transit one of them (then nothing:
 * -EALREADY); -EALREADY too when it was bootstrapped already. rq is not read. */
int shard_bootstrap(const shard_req_t *rq, json_t **report, char *why, size_t whylen);

/* GET /shards: what this node serves, refuses and has in transit (new reference). */
json_t *shardmove_summary(void);
/* GET /shards/record?shard=abc: one shard's record and whether it is served. */
json_t *shardmove_record(int shard);
/* The path of a file of the shard's kept export (file NULL: its manifest): 0, or -ENOENT. */
int shardmove_export_path(int shard, const char *file, char *path, size_t len);

#endif
