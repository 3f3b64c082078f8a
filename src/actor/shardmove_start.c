/* Threads: main thread at start (shardmove_init, before any thread serves). */
/* Shard moves: the start-up rule (shard_decide, shardmove.h) and the start that applies it to
 * every shard (shardmove_init): the records read and settled against the cluster file, the
 * first start's claim or its wait for the bootstrap, the local delete a crash cut short, the
 * refusals logged, and the shards served from then on. */
#include "actor/shardmove_internal.h"

#include "core/cluster.h"
#include "core/log.h"
#include "core/shard.h"
#include "core/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

shard_verdict_t shard_decide(bool file_mine, uint32_t file_epoch, const shardrec_t *rec,
                             shardrec_boot_t boot, bool *claim, char *why, size_t whylen)
{
    *claim = false;
    why[0] = '\0';
    switch (rec->state) {
    case SHARDREC_OWNED:
        if (file_epoch > rec->epoch) {
            snprintf(why, whylen,
                     "this node holds it at epoch %u, but the cluster file names "
                     "epoch %u (%s): this copy may be stale",
                     rec->epoch, file_epoch, file_mine ? "for this node" : "for another node");
            return SHARD_REFUSE;
        }
        if (file_epoch == rec->epoch && !file_mine) {
            snprintf(why, whylen,
                     "this node holds it at epoch %u, but the cluster file gives "
                     "epoch %u to another node",
                     rec->epoch, file_epoch);
            return SHARD_REFUSE;
        }
        if (!file_mine)
            snprintf(why, whylen,
                     "held here at epoch %u; the cluster file (epoch %u, another "
                     "node) is older",
                     rec->epoch, file_epoch);
        return SHARD_SERVE;
    case SHARDREC_RELEASED:
        if (!file_mine)
            return SHARD_NOT_MINE;
        if (strcmp(rec->peer, shard_node_name()) == 0) /* set aside: no export in transit */
            sm_aside_why(why, whylen, rec->epoch);
        else
            snprintf(why, whylen,
                     "released at epoch %u to %s (this node holds no data for "
                     "it); the cluster file, which still gives it here, is older",
                     rec->epoch, rec->peer);
        return SHARD_REFUSE;
    case SHARDREC_NONE:
    default:
        if (!file_mine)
            return SHARD_NOT_MINE;
        if (file_epoch > 1) {
            snprintf(why, whylen,
                     "the cluster file gives it to this node at epoch %u, but this "
                     "node never adopted it (no record): it holds no data for it",
                     file_epoch);
            return SHARD_REFUSE;
        }
        if (boot == SHARDREC_BOOT_PENDING) {
            /* whole: the bootstrap step claims the shards refused with exactly this */
            _Static_assert(sizeof SM_NOT_BOOTSTRAPPED <= 300, "shardmove_init's why[300]");
            snprintf(why, whylen, "%s", SM_NOT_BOOTSTRAPPED);
            return SHARD_REFUSE;
        }
        if (boot == SHARDREC_BOOT_DONE) {
            snprintf(why, whylen,
                     "the cluster file gives it to this node, but this node never "
                     "held it (no record since its first start): it holds no data for it");
            return SHARD_REFUSE;
        }
        *claim = true;
        return SHARD_SERVE;
    }
}

/* Logs the refusals of the start, one line per run of shards with the same reason. */
static void log_ranges(const char *const why[SHARD_COUNT], bool refused)
{
    for (int s = 0; s < SHARD_COUNT;) {
        if (!why[s]) {
            s++;
            continue;
        }
        int e = s;
        while (e + 1 < SHARD_COUNT && why[e + 1] && strcmp(why[e + 1], why[s]) == 0)
            e++;
        char a[SHARD_HEX + 1], b[SHARD_HEX + 1];
        sm_shard_hex(s, a);
        sm_shard_hex(e, b);
        if (refused)
            log_warn("cluster: shard%s %s%s%s refused (503 -32010): %s", e > s ? "s" : "", a,
                     e > s ? "-" : "", e > s ? b : "", why[s]);
        else
            log_info("cluster: shard%s %s%s%s: %s", e > s ? "s" : "", a, e > s ? "-" : "",
                     e > s ? b : "", why[s]);
        s = e + 1;
    }
}

/* Whether any id-keyed family holds a key of the shard (a seek each; alarms go with the
 * metadata in one batch, so they never outlive it); one that a read error hides counts (the
 * delete that follows reads nothing). */
static bool local_copy_left(store_t *store, const char *prefix)
{
    for (int cf = 0; cf < CF__COUNT; cf++)
        if (cf != CF_ALARMS && store_prefix_any(store, (store_cf_t)cf, prefix, SHARD_HEX) != 0)
            return true;
    return false;
}

/* --move-dir exists, and its entry is on disk (an export there may be a shard's only copy). */
static int make_move_dir(void)
{
    if (mkdir(SM_MOVE_DIR, 0700) == 0) {
        char parent[sizeof SM_MOVE_DIR];
        snprintf(parent, sizeof parent, "%s", SM_MOVE_DIR);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent)
            *slash = '\0';
        else
            snprintf(parent, sizeof parent, "%s", slash ? "/" : ".");
        sm_fsync_dir(parent);
    } else if (errno != EEXIST) {
        log_error("cluster: cannot create the move directory %s: %s", SM_MOVE_DIR, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(SM_MOVE_DIR, &st) != 0 || !S_ISDIR(st.st_mode)) {
        log_error("cluster: the move directory %s is not a directory", SM_MOVE_DIR);
        return -1;
    }
    return 0;
}

int shardmove_init(store_t *store, const char *move_dir)
{
    SM_STORE = store;
    snprintf(SM_MOVE_DIR, sizeof SM_MOVE_DIR, "%s", move_dir);
    if (!shard_in_cluster())
        return 0;
    if (make_move_dir() != 0)
        return -1;
    static bool bad[SHARD_COUNT];
    int rc = shardrec_load_all(store, SM_REC, bad);
    if (rc == -EINVAL)
        log_error("cluster: some shard ownership records do not decode; those shards are refused");
    int boot = rc == -EIO ? rc : shardrec_bootstrapped(store);
    /* a first start on a store without ids is a new data directory: it claims nothing until
     * bootstrapped (a wiped directory, or a file that gives it a shard another node holds, look
     * the same from here); one on a store with ids is older than the records: the file's
     * shards are the data it holds. A read error is neither: nothing is recorded from it. */
    int any = boot == SHARDREC_BOOT_NONE ? store_cf_any(store, CF_SESSIONS) : 1;
    if (boot < 0 || any < 0) {
        log_error("cluster: cannot read the shard ownership records or the ids held here (a read "
                  "error, above): not starting. Check the disk of --data-dir; restore it from a "
                  "backup or move it aside");
        return -1;
    }
    bool fresh = any == 0;
    SM_BOOT = fresh ? SHARDREC_BOOT_PENDING : (shardrec_boot_t)boot;
    static bool mine[SHARD_COUNT];
    static char *refused[SHARD_COUNT], *notes[SHARD_COUNT];
    static int claim[SHARD_COUNT];
    static shardrec_t claimed[SHARD_COUNT];
    int nclaim = 0, nrefused = 0, ncleaned = 0;
    for (int s = 0; s < SHARD_COUNT; s++) {
        char why[300];
        bool c = false;
        shard_verdict_t v = SHARD_REFUSE;
        if (bad[s])
            snprintf(why, sizeof why, "its ownership record in the store does not decode");
        else
            v = shard_decide(cluster_file_mine(s), cluster_file_epoch(s), &SM_REC[s], SM_BOOT, &c,
                             why, sizeof why);
        mine[s] = v == SHARD_SERVE;
        refused[s] = notes[s] = NULL;
        if (v == SHARD_REFUSE) {
            refused[s] = xstrdup(why);
            nrefused++;
        } else if (why[0]) {
            notes[s] = xstrdup(why);
        }
        if (c) {
            claim[nclaim] = s;
            claimed[nclaim] = (shardrec_t){.state = SHARDREC_OWNED,
                                           .epoch = 1,
                                           .declined = SM_REC[s].declined};
            nclaim++;
        }
        char prefix[SHARD_HEX + 1];
        sm_shard_hex(s, prefix);
        if (SM_REC[s].state == SHARDREC_RELEASED && local_copy_left(store, prefix)) {
            /* the release was recorded and the process died before its local delete */
            if (store_delete_prefix(store, prefix, SHARD_HEX) == 0)
                ncleaned++;
            else /* kept whole (never served), as at the release: the next start tries again */
                log_warn("shard %s: released, but deleting its local copy failed again (the "
                         "store's error, logged); the next start tries again",
                         prefix);
        }
    }
    /* the first start records the file's shards (and that it did: from then on a shard without
     * a record is one this node never held), or that it waits for its bootstrap */
    if (boot == SHARDREC_BOOT_NONE &&
        (fresh ? shardrec_mark_pending(store)
               : shardrec_bootstrap(store, claim, claimed, nclaim)) != 0) {
        log_error("cluster: cannot record this node's %d shards (the store refuses writes)",
                  nclaim);
        for (int s = 0; s < SHARD_COUNT; s++) {
            free(refused[s]);
            free(notes[s]);
        }
        return -1;
    }
    for (int i = 0; i < nclaim; i++)
        SM_REC[claim[i]] = claimed[i];
    log_ranges((const char *const *)notes, false);
    log_ranges((const char *const *)refused, true);
    for (int s = 0; s < SHARD_COUNT; s++) {
        SM_REFUSED[s] = refused[s];
        free(notes[s]);
    }
    shard_begin_cluster(mine);
    sm_sweep_move_dir();
    if (SM_BOOT == SHARDREC_BOOT_NONE)
        SM_BOOT = SHARDREC_BOOT_DONE;
    if (nclaim)
        log_info("cluster: first start on a store older than the records: %d shards of the "
                 "cluster file recorded as held here at epoch 1",
                 nclaim);
    if (SM_BOOT == SHARDREC_BOOT_PENDING)
        log_warn("cluster: a new data directory, not bootstrapped: it serves no shard of the "
                 "cluster file until POST /shards/bootstrap (tools/mcpd-cluster bootstrap) "
                 "claims them");
    if (ncleaned)
        log_info("cluster: finished deleting the local copy of %d released shards", ncleaned);
    if (nrefused)
        log_warn("cluster: %d shards refused: their cluster file entry disagrees with this "
                 "node's records (GET /shards on the admin listener lists them)",
                 nrefused);
    return 0;
}
