/* Threads: main thread at start; the shard-move thread (steps); the admin thread (queries). */
/* Who owns a shard, and moving one (see shardmove.h). Main thread at start; then the admin
 * listener's move thread (one step at a time, under move_mu) and its loop (queries, under
 * rec_mu only, so /healthz never waits for a step).
 *
 * The order of every step is the point of this file: a record is written (fsynced) before the
 * change it records takes effect, and nothing is deleted that no record or file still holds.
 *   release: stop serving -> settle -> export + manifest (fsynced) -> record "released at E to
 *            X" -> delete the local copy. A crash before the record leaves the shard owned here
 *            with its data (the export is only a draft: nobody may fetch it, since the export
 *            is served only for a released record); after it, the export is the data, and the
 *            restart finishes the delete.
 *   adopt:   fetch the manifest and files from X (checked: sizes, SHA-256, every family) ->
 *            ingest -> count every family's keys against the manifest -> record "owned at E"
 *            -> serve, and answer the requests X left in flight (answers its store refused).
 *            A crash before the record leaves unowned keys that the next adopt deletes first.
 *            Over its own copy (force=1) the copy is first set aside as an export to itself,
 *            recorded "released at its epoch to itself", and put back if the adopt fails.
 *   reclaim: the other node records that it will never adopt epoch E (decline) -> this node
 *            ingests its own export -> records "owned at E+1" -> serves.
 *   finish:  the other node says it holds epoch E -> the export is deleted.
 * Fencing: a node serves and mints only in shards it holds a record for at the newest epoch it
 * knows of (shard_decide); an export is adopted only by the node it names, only at an epoch
 * newer than anything that node holds or declined.
 *
 * Here: the records, settling, release and the queries; the start-up rule and the start
 * (shardmove_init) in shardmove_start.c; adopt, reclaim, decline and finish in
 * shardmove_adopt.c; a new data directory's bootstrap (it claims nothing at start) in
 * shardmove_boot.c; a shard's key counts and gauges in shardmove_count.c; the move
 * directory in shardmove_dir.c; requests to other nodes in shardmove_peer.c. */
#include "actor/shardmove_internal.h"

#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/worker.h"
#include "core/auth.h"
#include "core/log.h"
#include "core/peer.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"
#include "store/manifest.h"
#include "store/sessionrec.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

store_t *SM_STORE;
char SM_MOVE_DIR[1024];
pthread_mutex_t sm_move_mu = PTHREAD_MUTEX_INITIALIZER;
/* The records as stored (written through: the store first, then here) and why a shard is
 * refused (NULL: it is not). Written by the move thread under both locks, read under sm_rec_mu. */
pthread_mutex_t sm_rec_mu = PTHREAD_MUTEX_INITIALIZER;
shardrec_t SM_REC[SHARD_COUNT];
char *SM_REFUSED[SHARD_COUNT];
shardrec_boot_t SM_BOOT;
/* the shard being evicted, and the actors of it still busy after a round (workers add) */
static int sm_evict = -1;
static atomic_long sm_busy;

/* A test hook: MCPD_CRASH_AT=<point> kills the process there, as a power cut or kill -9 would
 * (tests/cluster/test_moves.py stops a move at every step). */
void sm_crash_point(const char *point)
{
    const char *at = getenv("MCPD_CRASH_AT");
    if (at && strcmp(at, point) == 0) {
        log_warn("MCPD_CRASH_AT=%s: killing the process here", point);
        raise(SIGKILL);
    }
}

void sm_shard_hex(int shard, char out[SHARD_HEX + 1])
{
    shard_put(out, shard);
    out[SHARD_HEX] = '\0';
}

void sm_aside_why(char *why, size_t whylen, uint32_t epoch)
{
    snprintf(why, whylen,
             "this node's own copy at epoch %u, set aside by a forced adopt that failed: kept in "
             "its move directory, not served; run the adopt again, or reclaim it (POST "
             "/shards/reclaim) to put it back unserved",
             epoch);
}

void sm_set_refused(int shard, const char *why)
{
    pthread_mutex_lock(&sm_rec_mu);
    free(SM_REFUSED[shard]);
    SM_REFUSED[shard] = why ? xstrdup(why) : NULL;
    pthread_mutex_unlock(&sm_rec_mu);
}

/* Writes the record, then keeps it here: 0, or the store's error (nothing changed). */
int sm_put_record(int shard, const shardrec_t *r)
{
    int rc = shardrec_put(SM_STORE, shard, r);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&sm_rec_mu);
    SM_REC[shard] = *r;
    pthread_mutex_unlock(&sm_rec_mu);
    return 0;
}

/* ---- settling a shard's actors (release) ---- */

/* One round on a worker: every actor of the shard is told to stop (jobs cancelled, client
 * connections ended: a stream's client resumes with Last-Event-ID where the shard goes) and
 * hibernates once idle; what is still busy is counted. */
static void evict_each(actor_t *a, void *arg)
{
    (void)arg;
    if (shard_of(a->sid) != sm_evict)
        return;
    if (actor_one_request(a)) {
        /* a one-request actor is never stored and its stream cannot be resumed: it finishes
         * its call on its live connection (what it creates, a record or a task, is written in
         * that turn, before a later round exports the shard) */
        if (!actor_is_idle(a))
            atomic_fetch_add(&sm_busy, 1);
        else
            worker_note_activity(a->w, a); /* answered: discarded */
        return;
    }
    actor_cancel_jobs(a, true);
    for (stream_t *s = a->streams; s; s = s->next) {
        if (s->conn.gen && s->sse) {
            actor_send_sse_end(a, s->conn, s->num);
            s->conn.gen = 0;
        }
    }
    if (!actor_is_idle(a)) {
        atomic_fetch_add(&sm_busy, 1);
        return;
    }
    actor_hibernate(a);
}

static void evict_round(worker_t *w)
{
    worker_foreach_actor(w, evict_each, NULL);
}

/* Until every actor of the shard is idle and hibernated: 0, or -EBUSY after wait_ms. */
static int settle(int shard, long wait_ms, int64_t t0, long *rounds)
{
    sm_evict = shard;
    int rc = 0;
    for (*rounds = 0;;) {
        atomic_store(&sm_busy, 0);
        workers_run_each(evict_round);
        (*rounds)++;
        /* a round runs after the turn in progress on each worker, and from the flag on every
         * client message of the shard is refused by the worker too (actor_dispatch): a round
         * that finds nothing busy has seen the last actor */
        if (atomic_load(&sm_busy) == 0)
            break;
        if (now_mono_ms() - t0 > wait_ms) {
            rc = -EBUSY;
            break;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    sm_evict = -1;
    return rc;
}

/* Served here again after an abandoned release: alarms refused meanwhile run now. */
static void serve_again(int shard, const char *prefix)
{
    shard_set_owned(shard, true);
    int64_t due = 0;
    uint64_t n;
    if (sessionrec_alarms_of_prefix(SM_STORE, prefix, SHARD_HEX, &n, &due) != 0)
        alarms_retry(1); /* a read error hid them: every key is read again, as the scheduler's */
    else if (due)
        alarms_hint(due);
}

/* The start of a step: the shard's prefix, the lock (held on return, whatever rc), the start
 * time; -EINVAL without a cluster. */
int sm_move_begin(int shard, char prefix[SHARD_HEX + 1], int64_t *t0, char *why, size_t whylen)
{
    sm_shard_hex(shard, prefix);
    pthread_mutex_lock(&sm_move_mu);
    *t0 = now_mono_ms();
    if (!shard_in_cluster()) {
        snprintf(why, whylen, "this node runs without --cluster: it serves every shard");
        return -EINVAL;
    }
    return 0;
}

/* ---- release ---- */

/* The manifest of a finished release, as its answer (the same when it is asked again). */
static json_t *release_report(const manifest_t *m, const char *dir, bool again)
{
    json_t *r = manifest_build(m);
    json_object_set_new(r, "node", json_string(shard_node_name()));
    json_object_set_new(r, "dir", json_string(dir));
    json_object_set_new(r, "already", json_boolean(again));
    return r;
}

int sm_export_shard(int shard, const char *prefix, const char *dir, uint32_t epoch, const char *to,
                    json_t *what, manifest_t *m, char *why, size_t whylen)
{
    memset(m, 0, sizeof *m);
    m->shard = shard;
    m->epoch = epoch;
    snprintf(m->from, sizeof m->from, "%s", shard_node_name());
    snprintf(m->to, sizeof m->to, "%s", to);
    uint64_t keys[CF__COUNT];
    int rc = store_export_prefix(SM_STORE, prefix, SHARD_HEX, dir, keys, why, whylen);
    for (int cf = 0; cf < CF__COUNT && rc == 0; cf++) {
        m->fam[cf].keys = keys[cf];
        m->keys += keys[cf];
        if (!keys[cf])
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s.sst", dir, store_cf_name((store_cf_t)cf));
        m->fam[cf].file = true;
        rc = manifest_file_digest(path, &m->fam[cf].bytes, m->fam[cf].sha256);
        if (rc != 0) {
            snprintf(why, whylen, "reading back %s: %s", path, strerror(-rc));
            rc = -EIO;
        }
    }
    m->moved = json_incref(what);
    if (rc == 0)
        rc = sm_fsync_dir(dir) == 0 ? sm_write_manifest(dir, m, why, whylen) : -EIO;
    return rc;
}

/* The export as written still leaves --min-free-space free on the data directory's filesystem
 * (its estimate may fall short): 0, or -ENOSPC with why. */
static int export_leaves_room(const char *prefix, const manifest_t *m, char *why, size_t whylen)
{
    int64_t f, floor;
    if (!store_on_fs_of(SM_STORE, SM_MOVE_DIR) || store_space_for(SM_STORE, 0, &f, &floor))
        return 0;
    uint64_t bytes = manifest_bytes(m);
    snprintf(why, whylen,
             "not enough space: the export of shard %s took %llu bytes, and the data "
             "directory's filesystem has %lld free, less than --min-free-space (%lld bytes); "
             "it is served here again: free space there first",
             prefix, (unsigned long long)bytes, (long long)f, (long long)floor);
    return -ENOSPC;
}

/* A release asked again (an answer lost, a move re-run): the same export, or why not. */
static int release_again(int shard, const char *prefix, const shardrec_t *rec, const char *to,
                         json_t **report, char *why, size_t whylen)
{
    char dir[DIR_MAX];
    sm_dir_of(dir, sizeof dir, true, shard, rec->epoch);
    manifest_t m;
    if (strcmp(rec->peer, to) != 0 || !rec->export_kept) {
        snprintf(why, whylen, "shard %s was released at epoch %u to %s%s", prefix, rec->epoch,
                 rec->peer,
                 !rec->export_kept ? ", and that move is finished"
                 : strcmp(rec->peer, shard_node_name()) == 0
                     ? SM_ASIDE_WHY
                     : ": finish that move, or take it back (POST /shards/reclaim)");
        return -EALREADY;
    }
    int rc = sm_read_manifest(dir, &m, why, whylen);
    if (rc == 0) {
        *report = release_report(&m, dir, true);
        manifest_clear(&m);
    }
    return rc;
}

int shard_release(const shard_req_t *rq, long wait_ms, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = sm_move_begin(shard, prefix, &t0, why, whylen);
    peer_t to;
    char dir[DIR_MAX];
    if (rc != 0 || (rc = sm_peer_of(rq->peer, &to, why, whylen)) != 0)
        goto out;
    shardrec_t rec = SM_REC[shard];
    if (rec.state == SHARDREC_RELEASED) {
        rc = release_again(shard, prefix, &rec, rq->peer, report, why, whylen);
        goto out;
    }
    if (!shard_owned(shard)) {
        pthread_mutex_lock(&sm_rec_mu);
        snprintf(why, whylen, "shard %s is not served by this node%s%s", prefix,
                 SM_REFUSED[shard] ? ": " : "", SM_REFUSED[shard] ? SM_REFUSED[shard] : "");
        pthread_mutex_unlock(&sm_rec_mu);
        rc = -EALREADY;
        goto out;
    }
    uint32_t epoch = (rec.epoch > rec.declined ? rec.epoch : rec.declined) + 1;
    if (epoch > SHARDREC_EPOCH_MAX) {
        snprintf(why, whylen, "shard %s has used up its epochs", prefix);
        rc = -EINVAL;
        goto out;
    }
    /* room for its export, before anything changes (what settling adds, the hibernations'
     * metadata, is small; the export's size as written is checked again before the record).
     * A read error of the shard's keys here is this node's: the release stops before it
     * settles anything (the export would meet the same error) */
    char what[64];
    snprintf(what, sizeof what, "the export of shard %s", prefix);
    uint64_t estimate;
    if (store_export_estimate(SM_STORE, prefix, SHARD_HEX, &estimate) != 0) {
        char doing[80];
        snprintf(doing, sizeof doing, "sizing %s", what);
        rc = sm_unreadable(why, whylen, doing);
        goto out;
    }
    if ((rc = sm_room_for(what, estimate, true, false, why, whylen)) != 0)
        goto out;
    sm_dir_of(dir, sizeof dir, true, shard, epoch);
    if ((rc = sm_fresh_dir(dir, why, whylen)) != 0)
        goto out;
    /* 1. no new request for it: the HTTP threads and the workers answer 503 + Retry-After */
    shard_set_owned(shard, false);
    /* 2. its actors finish what they do and hibernate (all written to the store) */
    long rounds = 0;
    if (settle(shard, wait_ms, t0, &rounds) != 0) {
        snprintf(why, whylen,
                 "%ld actors of shard %s were still busy after %ld ms; it is "
                 "served here again",
                 atomic_load(&sm_busy), prefix, wait_ms);
        serve_again(shard, prefix);
        sm_remove_dir(dir);
        rc = -EBUSY;
        goto out;
    }
    int64_t settled = now_mono_ms();
    /* 3. its keys out, from one snapshot, with the manifest (a draft until the record) */
    int64_t earliest;
    json_t *moved = sm_counts(prefix, &earliest);
    manifest_t m = {.shard = -1};
    sm_gauges_t g = {0}; /* read whole now: taken away once released */
    if (!moved || sm_read_gauges(prefix, &g) != 0)
        rc = sm_unreadable(why, whylen, "counting the shard's keys for its export");
    else
        rc = sm_export_shard(shard, prefix, dir, epoch, rq->peer, moved, &m, why, whylen);
    if (rc == 0)
        rc = export_leaves_room(prefix, &m, why, whylen);
    sm_crash_point("release-exported");
    /* 4. the record: from here the export is the shard's data */
    shardrec_t rel = {.state = SHARDREC_RELEASED,
                      .epoch = epoch,
                      .declined = rec.declined,
                      .export_kept = true};
    snprintf(rel.peer, sizeof rel.peer, "%s", rq->peer);
    if (rc == 0 && (rc = sm_put_record(shard, &rel)) != 0) {
        snprintf(why, whylen, "cannot record the release (the store refuses writes)");
        rc = -EIO;
    }
    if (rc != 0) {
        json_decref(moved);
        manifest_clear(&m);
        sm_gauges_free(&g);
        serve_again(shard, prefix);
        sm_remove_dir(dir);
        goto out;
    }
    sm_crash_point("release-recorded");
    /* 5. its copy here goes */
    sm_apply_gauges(&g, -1);
    STAT_ADD(alarms_pending, -json_integer_value(json_object_get(moved, "alarms")));
    if (store_delete_prefix(SM_STORE, prefix, SHARD_HEX) != 0) {
        /* the export holds the shard; the keys left here (all: a failed delete deletes
         * nothing) are never served (released) and the next start deletes them */
        log_warn("shard %s: released, but deleting the local copy failed", prefix);
    }
    int64_t t1 = now_mono_ms();
    *report = release_report(&m, dir, false);
    json_object_set_new(*report, "settle_ms", json_integer(settled - t0));
    json_object_set_new(*report, "export_ms", json_integer(t1 - settled));
    json_object_set_new(*report, "rounds", json_integer(rounds));
    log_info("shard %s released at epoch %u to %s: %llu keys in %s (%llu bytes, %llu "
             "estimated), %lld ms",
             prefix, epoch, rq->peer, (unsigned long long)m.keys, dir,
             (unsigned long long)manifest_bytes(&m), (unsigned long long)estimate,
             (long long)(t1 - t0));
    manifest_clear(&m);
    json_decref(moved);
out:
    store_space_recheck(SM_STORE); /* the export's files came or went */
    pthread_mutex_unlock(&sm_move_mu);
    return rc;
}

/* ---- queries (the admin thread) ---- */

json_t *shardmove_record(int shard)
{
    char sh[SHARD_HEX + 1];
    sm_shard_hex(shard, sh);
    pthread_mutex_lock(&sm_rec_mu);
    shardrec_t r = SM_REC[shard];
    json_t *refused = SM_REFUSED[shard] ? json_string(SM_REFUSED[shard]) : json_null();
    pthread_mutex_unlock(&sm_rec_mu);
    json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:I,s:I,s:s,s:b,s:o}", "shard", sh, "node",
                          shard_node_name(), "serving", shard_owned(shard), "state",
                          shardrec_state_name(r.state), "epoch", (json_int_t)r.epoch, "declined",
                          (json_int_t)r.declined, "peer", r.peer, "export_kept", r.export_kept,
                          "refused", refused);
    if (!shard_in_cluster()) /* a single node: every shard served, no records */
        json_object_set_new(o, "state", json_string("owned"));
    return o;
}

json_t *shardmove_summary(void)
{
    json_t *refused = json_array(), *transit = json_array();
    pthread_mutex_lock(&sm_rec_mu);
    for (int s = 0; s < SHARD_COUNT;) {
        if (!SM_REFUSED[s]) {
            s++;
            continue;
        }
        int e = s;
        while (e + 1 < SHARD_COUNT && SM_REFUSED[e + 1] &&
               strcmp(SM_REFUSED[e + 1], SM_REFUSED[s]) == 0)
            e++;
        char a[SHARD_HEX + 1], b[SHARD_HEX + 1], range[8];
        sm_shard_hex(s, a);
        sm_shard_hex(e, b);
        snprintf(range, sizeof range, e > s ? "%s-%s" : "%s", a, b);
        json_array_append_new(refused,
                              json_pack("{s:s,s:s}", "shards", range, "why", SM_REFUSED[s]));
        s = e + 1;
    }
    for (int s = 0; s < SHARD_COUNT; s++) {
        if (SM_REC[s].state == SHARDREC_RELEASED && SM_REC[s].export_kept) {
            char a[SHARD_HEX + 1];
            sm_shard_hex(s, a);
            json_array_append_new(transit,
                                  json_pack("{s:s,s:I,s:s}", "shard", a, "epoch",
                                            (json_int_t)SM_REC[s].epoch, "to", SM_REC[s].peer));
        }
    }
    bool booted = SM_BOOT != SHARDREC_BOOT_PENDING;
    pthread_mutex_unlock(&sm_rec_mu);
    return json_pack("{s:o,s:o,s:b}", "refused", refused, "in_transit", transit, "bootstrapped",
                     booted);
}
