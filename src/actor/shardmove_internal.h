/* What the files of the shard moves share (shardmove.c: the records, settling and release;
 * shardmove_start.c: the start-up rule and the start; shardmove_adopt.c: adopt, reclaim,
 * decline, finish; shardmove_dir.c: the move directory; shardmove_peer.c: another node's admin
 * listener). The threads are
 * shardmove.c's: main at start, then the admin listener's move thread (one step at a time,
 * under sm_move_mu) and its loop (queries, under sm_rec_mu only). Nothing outside these files
 * includes it. */
#ifndef MCPD_ACTOR_SHARDMOVE_INTERNAL_H
#define MCPD_ACTOR_SHARDMOVE_INTERNAL_H

#include "actor/actor.h"
#include "actor/shardmove.h"

#include "core/peer.h"
#include "core/shard.h"
#include "store/manifest.h"
#include "store/shardrec.h"
#include "store/store.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEER_TIMEOUT_S 30
/* a move directory's path: --move-dir (< 1024) and a name */
#define DIR_MAX 1200
/* how long a step asked of another node (decline, a record) may run there */
#define PEER_STEP_WAIT_MS 60000

extern store_t *SM_STORE;
extern char SM_MOVE_DIR[1024];
extern pthread_mutex_t sm_move_mu;
/* The records as stored (written through: the store first, then here) and why a shard is
 * refused (NULL: it is not). Written by the move thread under both locks, read under
 * sm_rec_mu. */
extern pthread_mutex_t sm_rec_mu;
extern shardrec_t SM_REC[SHARD_COUNT];
extern char *SM_REFUSED[SHARD_COUNT];
/* Where this node is in taking its cluster file's shards (SHARDREC_BOOT_DONE or _PENDING after
 * shardmove_init); the move thread changes it (bootstrap), under sm_rec_mu too. */
extern shardrec_boot_t SM_BOOT;
/* Why a shard the file gives a new, not bootstrapped data directory is refused (exactly: the
 * bootstrap claims the shards refused for this reason). */
#define SM_NOT_BOOTSTRAPPED                                                                 \
    "this node's data directory is new and not bootstrapped: it serves its cluster file's " \
    "shards once POST /shards/bootstrap (tools/mcpd-cluster bootstrap, when a cluster is "  \
    "created) claims them; a wiped data directory looks the same"
/* What a record "released to this node itself, export kept" is, after "released at epoch E to
 * NODE": its own copy a forced adopt set aside (set_aside), neither a move to finish nor an
 * export to take back into service. */
#define SM_ASIDE_WHY                                                                            \
    " itself: its own copy, set aside by a forced adopt that did not finish; adopt the export " \
    "that replaces it (POST /shards/adopt), or put the copy back, held and not served (POST "   \
    "/shards/reclaim)"

/* A test hook: MCPD_CRASH_AT=<point> kills the process there, as a power cut or kill -9 would
 * (tests/cluster/test_moves.py stops a move at every step). */
void sm_crash_point(const char *point);

/* The shard's hex prefix, terminated. */
void sm_shard_hex(int shard, char out[SHARD_HEX + 1]);

/* Why the shard is refused (NULL: it is not), under sm_rec_mu. */
void sm_set_refused(int shard, const char *why);

/* Why a copy set aside by a failed forced adopt (its record released to this node itself) is
 * refused: at a start (shard_decide) and when put_back cannot take it back. */
void sm_aside_why(char *why, size_t whylen, uint32_t epoch);

/* Writes the record, then keeps it here: 0, or the store's error (nothing changed). */
int sm_put_record(int shard, const shardrec_t *r);

/* At start: fetches that a crash interrupted, and exports no record keeps (a crash between a
 * record and the delete of a directory), are deleted; anything else is left alone. */
void sm_sweep_move_dir(void);

/* Room for a move's files (the free-space floor): `bytes` written into the move directory
 * (to_dir: a release's export, an adopt's fetch) and into the store (to_store: an ingest). On
 * the data directory's filesystem they are the same bytes (an adopt's ingest links what it
 * fetched), and --min-free-space stays free after them; a move directory on another filesystem
 * needs them free there, and an ingest copies them into the store. The guard is charged with
 * what goes to the store's filesystem. 0, or -ENOSPC with why (naming what, the bytes, the
 * free space and the floor). */
int sm_room_for(const char *what, uint64_t bytes, bool to_dir, bool to_store, char *why,
                size_t whylen);

/* fsync of a directory (its entries on disk): 0 or -errno. */
int sm_fsync_dir(const char *dir);

/* The path of the export (out_dir) or fetch directory of a shard at an epoch. */
void sm_dir_of(char *out, size_t len, bool out_dir, int shard, uint32_t epoch);

/* Removes what this code writes into a move directory, then the directory: 0, -ENOTEMPTY when
 * something else is in it (left alone), or -errno. */
int sm_remove_dir(const char *dir);

/* A fresh, empty directory for an export or a fetch: a leftover of this code's is cleared; a
 * directory holding anything else is refused. */
int sm_fresh_dir(const char *dir, char *why, size_t whylen);

/* dir/manifest.json, written whole (temporary file, fsync, rename, fsync of the directory). */
int sm_write_manifest(const char *dir, const manifest_t *m, char *why, size_t whylen);

/* An export of this node's own (its release's, or its copy set aside), read back from its move
 * directory. A file that is missing, or that differs from its manifest, is the export's fault:
 * -EBADMSG ("incomplete", "damaged"). A file there that this node's disk fails to read (EIO) is
 * this node's: -EIO, why naming the node and the read error (logged), as sm_unreadable says a
 * read error of its store; nothing is changed by either. */

/* dir/manifest.json, parsed: 0; -EBADMSG with why when it is missing or does not parse; -EIO
 * with why when it cannot be read. */
int sm_read_manifest(const char *dir, manifest_t *m, char *why, size_t whylen);

/* Every file of the manifest in dir has its size and SHA-256: 0; -EBADMSG with why when one is
 * missing or differs; -EIO with why when one cannot be read. */
int sm_check_files(const char *dir, const manifest_t *m, char *why, size_t whylen);

/* The stored gauges of a shard's actors (by kind) and their owners' shares, read whole before
 * anything is added (shardmove_count.c). A zeroed one holds nothing. */
typedef struct {
    uint64_t by[STORED__KINDS];
    actors_tally_t *shares;
} sm_gauges_t;
/* 0, or -EIO when a read error stopped the walk (logged; *g holds nothing). */
int sm_read_gauges(const char *prefix, sm_gauges_t *g);
/* Adds them (sign 1) or takes them away (-1), once, and frees them; sm_gauges_free frees them
 * unused. */
void sm_apply_gauges(sm_gauges_t *g, int sign);
void sm_gauges_free(sm_gauges_t *g);

/* Writes the export (files fsynced, manifest last, `what` its counts) of a shard that no request
 * changes (settled, or not served) into dir, for node `to`: 0, or an error with why. */
int sm_export_shard(int shard, const char *prefix, const char *dir, uint32_t epoch, const char *to,
                    json_t *what, manifest_t *m, char *why, size_t whylen);

/* The shard's keys per family (new), and the earliest alarm; NULL when a read error stopped a
 * count (shardmove_count.c, as the two below). */
json_t *sm_counts(const char *prefix, int64_t *earliest);

/* A read error of this node's own store stopped `doing` (the store logged it): -EIO, with why
 * naming this node, so that a move's answer never blames the other node's export for it. */
int sm_unreadable(char *why, size_t whylen, const char *doing);

/* The start of a step: the shard's prefix, the lock (held on return, whatever rc), the start
 * time; -EINVAL without a cluster. */
int sm_move_begin(int shard, char prefix[SHARD_HEX + 1], int64_t *t0, char *why, size_t whylen);

/* The admin address and token of a node of the cluster file: 0, or an error with why. */
int sm_peer_of(const char *node, peer_t *p, char *why, size_t whylen);

/* GET path on a peer, a JSON answer: 0 with *status and *out (new), or -EAGAIN with why. */
int sm_peer_json(const peer_t *p, const char *method, const char *path, int *status, json_t **out,
                 char *why, size_t whylen);

/* A step on a peer (POST answers 202, then GET /shards/move until it is done): 0 with the
 * step's HTTP status and answer; -EAGAIN when the POST got no answer (unreachable); -EBUSY
 * when it answered but the step's answer is not known (busy with another step, restarted or
 * silent while the step ran, or the step did not finish in time): the peer is alive. */
int sm_peer_step(const peer_t *p, const char *path, int *status, json_t **out, char *why,
                 size_t whylen);

/* Reclaim's fencing: the node rec->peer records that it will never adopt rec->epoch (decline),
 * and its record says so; force: without its word, only when it does not answer. 0, or an
 * error with why. */
int sm_fence_peer(const shardrec_t *rec, const char *prefix, bool force, char *why, size_t whylen);

#endif
