/* Threads: the shard-move thread (one step at a time, under sm_move_mu). */
/* Shard moves: adopt (fetch, check, ingest, count, record, serve), reclaim, decline and finish,
 * in the order shardmove.c's comment gives. The admin listener's move thread, one step at a
 * time under sm_move_mu. */
#include "actor/shardmove_internal.h"

#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/worker.h"
#include "core/auth.h"
#include "core/cluster.h"
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- adopt ---- */

/* Fetches every file of the manifest from the peer into dir, checked as it comes. */
static int fetch_files(const peer_t *p, const manifest_t *m, const char *dir, char *why,
                       size_t whylen)
{
    char sh[SHARD_HEX + 1];
    sm_shard_hex(m->shard, sh);
    for (int cf = 0; cf < CF__COUNT; cf++) {
        if (!m->fam[cf].file)
            continue;
        const char *name = store_cf_name((store_cf_t)cf);
        char path[2048], url[256];
        snprintf(path, sizeof path, "%s/%s.sst", dir, name);
        snprintf(url, sizeof url, "/shards/export?shard=%s&file=%s.sst", sh, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            snprintf(why, whylen, "cannot create %s: %s", path, strerror(errno));
            return -EIO;
        }
        int status = 0;
        uint64_t bytes = 0;
        unsigned char sha[SHA256_LEN];
        int rc = peer_fetch(p, url, fd, m->fam[cf].bytes, &status, &bytes, sha, why, whylen);
        if (rc == 0 && fsync(fd) != 0) {
            snprintf(why, whylen, "fsync %s: %s", path, strerror(errno));
            rc = -EIO;
        }
        close(fd);
        if (rc == -EMSGSIZE) {
            snprintf(why, whylen,
                     "the export is damaged: %s.sst is longer than its manifest "
                     "says",
                     name);
            return -EBADMSG;
        }
        if (rc != 0)
            return rc == -EIO ? -EIO : -EAGAIN;
        if (status != 200) {
            snprintf(why, whylen, "the export is incomplete: %s:%d answered %d for %s.sst", p->host,
                     p->port, status, name);
            return -EBADMSG;
        }
        if (bytes != m->fam[cf].bytes || memcmp(sha, m->fam[cf].sha256, SHA256_LEN) != 0) {
            snprintf(why, whylen,
                     "the export is damaged: %s.sst came with %llu bytes and "
                     "another SHA-256 than its manifest says (%llu bytes)",
                     name, (unsigned long long)bytes, (unsigned long long)m->fam[cf].bytes);
            return -EBADMSG;
        }
    }
    return sm_fsync_dir(dir) == 0 ? 0 : -EIO;
}

/* Deletes what was ingested of a shard that is not recorded here (not served: the next adopt
 * deletes a leftover first), saying so when that fails. */
static void drop_ingested(const char *prefix)
{
    if (store_delete_prefix(SM_STORE, prefix, SHARD_HEX) != 0)
        log_warn("shard %s: what was ingested of it could not be deleted (the store's error, "
                 "logged); it is not served, and the next adopt deletes it first",
                 prefix);
}

/* Ingests the checked files of dir and counts every family's keys against the manifest; on
 * failure nothing of the shard stays (or, where its delete fails, a leftover never served). */
static int ingest_checked(const char *prefix, const char *dir, const manifest_t *m, bool move,
                          json_t **what, int64_t *earliest, char *why, size_t whylen)
{
    bool present[CF__COUNT];
    for (int cf = 0; cf < CF__COUNT; cf++)
        present[cf] = m->fam[cf].file;
    /* whatever an earlier stay or a crashed adopt left under the prefix goes first (not
     * owned: nobody reads it) */
    int rc = store_delete_prefix(SM_STORE, prefix, SHARD_HEX);
    if (rc != 0) { /* its alarm keys would stay beside the ingested ones: nothing is ingested */
        snprintf(why, whylen,
                 "%s could not delete what it held of the shard before the ingest (its own "
                 "store's error, logged: a read error of its alarm keys, or a refused write); "
                 "nothing of the shard changed here: retry the move once it reads and writes",
                 shard_node_name());
        return -EIO;
    }
    rc = store_ingest_dir(SM_STORE, prefix, SHARD_HEX, dir, present, move, why, whylen);
    uint64_t got[CF__COUNT];
    if (rc == 0 && store_count_prefix(SM_STORE, prefix, SHARD_HEX, got) != 0)
        rc = sm_unreadable(why, whylen, "counting the keys it ingested");
    if (rc == 0) {
        for (int cf = 0; cf < CF__COUNT && rc == 0; cf++) {
            if (got[cf] != m->fam[cf].keys) {
                snprintf(why, whylen,
                         "after ingesting, the %s family holds %llu keys of the "
                         "shard; the manifest says %llu",
                         store_cf_name((store_cf_t)cf), (unsigned long long)got[cf],
                         (unsigned long long)m->fam[cf].keys);
                rc = -EBADMSG;
            }
        }
    }
    *what = rc == 0 ? sm_counts(prefix, earliest) : NULL;
    if (rc == 0 && !*what)
        rc = sm_unreadable(why, whylen, "counting the sessions and alarms it ingested");
    if (rc == 0 && !json_equal(*what, m->moved)) {
        snprintf(why, whylen, "the ingested keys do not hold what the release counted");
        rc = -EBADMSG;
    }
    if (rc != 0) {
        json_decref(*what);
        *what = NULL;
        drop_ingested(prefix); /* nothing half-ingested stays */
    }
    return rc;
}

/* The shard is held here from now on at epoch, its data ingested: record, count, serve. */
static int take(int shard, const char *prefix, uint32_t epoch, const char *from, json_t *what,
                int64_t earliest, char *why, size_t whylen)
{
    shardrec_t was = SM_REC[shard];
    shardrec_t own = {.state = SHARDREC_OWNED, .epoch = epoch, .declined = was.declined};
    snprintf(own.peer, sizeof own.peer, "%s", from);
    /* requests its last holder left in flight: their answers were never stored there (a
     * refused turn resets its actors and remembers them in that process only). Read before
     * the shard is recorded and served, so no request of this node's is among them; answered
     * once served (the workers run only owned shards' recoveries). A scan a read error
     * stopped would leave the rest unanswered for good: the move fails instead, and nothing
     * of it stays */
    json_t *inflight = actors_inflight_of_prefix(SM_STORE, prefix, SHARD_HEX);
    if (!inflight) {
        snprintf(why, whylen,
                 "cannot read the shard's in-flight requests after ingesting it (a read error, "
                 "logged); nothing of it is kept here: retry the move");
        drop_ingested(prefix);
        return -EIO;
    }
    /* its gauges and shares, read whole before the record: a walk a read error stopped would
     * leave them short until a restart; the move fails instead, as for the in-flight scan */
    sm_gauges_t g;
    if (sm_read_gauges(prefix, &g) != 0) {
        json_decref(inflight);
        drop_ingested(prefix);
        return sm_unreadable(why, whylen, "counting the gauges and shares of what it ingested");
    }
    if (sm_put_record(shard, &own) != 0) {
        json_decref(inflight);
        sm_gauges_free(&g);
        snprintf(why, whylen, "cannot record the adoption (the store refuses writes)");
        drop_ingested(prefix);
        return -EIO;
    }
    if (was.state == SHARDREC_RELEASED && was.export_kept) {
        /* an export of ours from an earlier stay: the shard went on from there (a newer epoch
         * came back), so nobody adopts it any more */
        char old[DIR_MAX];
        sm_dir_of(old, sizeof old, true, shard, was.epoch);
        sm_remove_dir(old);
    }
    sm_apply_gauges(&g, 1);
    STAT_ADD(alarms_pending, json_integer_value(json_object_get(what, "alarms")));
    sm_set_refused(shard, NULL);
    shard_set_owned(shard, true);
    long n = actors_recover_moved(inflight);
    if (n)
        log_info("shard %s: %ld requests it held in flight are answered with an error", prefix, n);
    if (earliest)
        alarms_hint(earliest); /* owned first: an alarm due already is not refused */
    return 0;
}

/* The export offered is of this shard, from `from`, for this node, and (fencing) at an epoch
 * this node never declined, held or passed: 0, or -EALREADY with why. */
static int check_offer(int shard, const char *prefix, const char *from, const shardrec_t *rec,
                       const manifest_t *m, char *why, size_t whylen)
{
    if (m->shard != shard || strcmp(m->from, from) != 0 || strcmp(m->to, shard_node_name()) != 0) {
        snprintf(why, whylen,
                 "the export %s serves is shard %03x from %s to %s, not shard %s "
                 "to this node",
                 from, m->shard, m->from, m->to, prefix);
        return -EALREADY;
    }
    if (m->epoch <= rec->declined || (rec->state != SHARDREC_NONE && m->epoch <= rec->epoch)) {
        snprintf(why, whylen, "the export is epoch %u, but this node %s epoch %u", m->epoch,
                 m->epoch <= rec->declined ? "declined (it was taken back at)" : "has been at",
                 m->epoch <= rec->declined ? rec->declined : rec->epoch);
        return -EALREADY;
    }
    return 0;
}

/* A forced adopt over this node's own copy of the shard (held, refused at start) sets that copy
 * aside before the ingest deletes it: an export to this node itself in out-<shard>.<epoch>, and
 * the record "released at its epoch to this node, export kept", fsynced first. A failed adopt
 * puts the copy and the record back (put_back); a crash in between leaves a released record,
 * never served, whose export holds the copy (a later adopt replaces it). So a forced adopt never
 * leaves the shard recorded as held without its data, and the copy goes only when the adopted
 * data is in its place. 0 with dir and *km, or an error with why (nothing changed). */
static int set_aside(int shard, const char *prefix, const shardrec_t *was, char dir[DIR_MAX],
                     manifest_t *km, char *why, size_t whylen)
{
    char what_for[80];
    snprintf(what_for, sizeof what_for, "setting aside this node's own copy of shard %s", prefix);
    uint64_t estimate;
    dir[0] = '\0';
    if (store_export_estimate(SM_STORE, prefix, SHARD_HEX, &estimate) != 0)
        return sm_unreadable(why, whylen, "sizing its own copy of the shard to set it aside");
    int rc = sm_room_for(what_for, estimate, true, false, why, whylen);
    sm_dir_of(dir, DIR_MAX, true, shard, was->epoch);
    if (rc != 0 || (rc = sm_fresh_dir(dir, why, whylen)) != 0) {
        dir[0] = '\0';
        return rc;
    }
    int64_t earliest;
    json_t *what = sm_counts(prefix, &earliest);
    if (!what) /* a manifest without counts would not check when it is put back */
        rc = sm_unreadable(why, whylen, "counting its own copy of the shard to set it aside");
    else
        rc = sm_export_shard(shard, prefix, dir, was->epoch, shard_node_name(), what, km, why,
                             whylen);
    json_decref(what);
    shardrec_t aside = {.state = SHARDREC_RELEASED,
                        .epoch = was->epoch,
                        .declined = was->declined,
                        .export_kept = true};
    snprintf(aside.peer, sizeof aside.peer, "%s", shard_node_name());
    if (rc == 0 && sm_put_record(shard, &aside) != 0) {
        snprintf(why, whylen,
                 "cannot record that this node's own copy is set aside (the store "
                 "refuses writes)");
        rc = -EIO;
    }
    if (rc != 0) {
        manifest_clear(km);
        sm_remove_dir(dir);
        dir[0] = '\0';
    }
    return rc;
}

/* The adopt failed after set_aside: the copy in dir goes back into the store, checked as an
 * adopt's, and the record as it was (not served: refused as before). Failing that, the record
 * stays released to this node with the export kept. why gets what became of the copy. */
static void put_back(int shard, const char *prefix, const shardrec_t *was, const char *dir,
                     const manifest_t *km, char *why, size_t whylen)
{
    char cause[512], err[300] = "";
    snprintf(cause, sizeof cause, "%s", why);
    json_t *what = NULL;
    int64_t earliest = 0;
    /* room for it first (the floor): without, it stays set aside, never served, and kept */
    char what_for[80];
    snprintf(what_for, sizeof what_for, "putting back this node's own copy of shard %s", prefix);
    int rc = sm_room_for(what_for, manifest_bytes(km), false, true, err, sizeof err);
    if (rc == 0)
        rc = ingest_checked(prefix, dir, km, false, &what, &earliest, err, sizeof err);
    json_decref(what);
    if (rc == 0 && sm_put_record(shard, was) != 0) {
        snprintf(err, sizeof err, "the store refuses writes");
        rc = -EIO;
    }
    if (rc == 0) {
        sm_remove_dir(dir);
        snprintf(why, whylen,
                 "%s; this node's own copy of shard %s is back as it was (epoch %u, not served)",
                 cause, prefix, was->epoch);
        return;
    }
    log_warn("shard %s: the forced adopt failed and this node's own copy could not be put back "
             "(%s): it is kept in %s",
             prefix, err, dir);
    char aside[300];
    sm_aside_why(aside, sizeof aside, was->epoch);
    sm_set_refused(shard, aside); /* /shards says what it is now, as a start would */
    snprintf(why, whylen,
             "%s; this node's own copy of shard %s could not be put back (%s): it is kept in %s, "
             "recorded as released to this node (not served); run the adopt again",
             cause, prefix, err, dir);
}

int shard_adopt(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = sm_move_begin(shard, prefix, &t0, why, whylen);
    peer_t from;
    manifest_t m = {.shard = -1};
    manifest_t km = {.shard = -1}; /* its own copy, set aside in `aside` (force=1) */
    char dir[DIR_MAX] = "", aside[DIR_MAX] = "";
    json_t *what = NULL;
    shardrec_t rec = SM_REC[shard];
    if (rc != 0 || (rc = sm_peer_of(rq->peer, &from, why, whylen)) != 0)
        goto out;
    /* 1. the manifest, from the node that released it */
    char url[128];
    snprintf(url, sizeof url, "/shards/export?shard=%s", prefix);
    int status = 0;
    char *text = NULL;
    size_t len = 0;
    if (peer_call(&from, "GET", url, 1 << 20, &status, &text, &len, why, whylen) != 0) {
        free(text);
        rc = -EAGAIN;
        goto out;
    }
    uint32_t offered = 0;
    if (status == 200 && manifest_parse(text, len, &m, why, whylen) == 0)
        offered = m.epoch;
    if (rec.state == SHARDREC_OWNED && strcmp(rec.peer, rq->peer) == 0 && offered <= rec.epoch) {
        /* asked again, and the peer offers nothing newer: adopted already (an answer was lost,
         * or a move is re-run) */
        free(text);
        *report = json_pack("{s:s,s:s,s:s,s:I,s:b,s:b}", "shard", prefix, "node", shard_node_name(),
                            "from", rq->peer, "epoch", (json_int_t)rec.epoch, "already", 1,
                            "serving", shard_owned(shard));
        goto out;
    }
    manifest_clear(&m);
    if (shard_owned(shard)) {
        snprintf(why, whylen, "shard %s is served by this node already (epoch %u)", prefix,
                 rec.epoch);
        free(text);
        rc = -EALREADY;
        goto out;
    }
    if (rec.state == SHARDREC_OWNED && !rq->force) {
        /* its own copy, refused at start (the file disagreed): an adopt would delete it */
        snprintf(why, whylen,
                 "this node holds its own copy of shard %s at epoch %u (refused "
                 "here: its cluster file disagrees); adopting would delete it: force=1 to "
                 "replace it",
                 prefix, rec.epoch);
        free(text);
        rc = -EALREADY;
        goto out;
    }
    if (status != 200) {
        snprintf(why, whylen,
                 "%s has no export of shard %s for this node (%d): release it "
                 "there first",
                 rq->peer, prefix, status);
        free(text);
        rc = status == 404 ? -EALREADY : -EAGAIN;
        goto out;
    }
    rc = manifest_parse(text, len, &m, why, whylen);
    free(text);
    if (rc != 0)
        goto out;
    /* fencing: never an epoch this node declined, holds or passed */
    if ((rc = check_offer(shard, prefix, rq->peer, &rec, &m, why, whylen)) != 0)
        goto out;
    /* 2. room for them (the free-space floor), then its files, checked as they come */
    char what_for[64];
    snprintf(what_for, sizeof what_for, "adopting shard %s (its export)", prefix);
    if ((rc = sm_room_for(what_for, manifest_bytes(&m), true, true, why, whylen)) != 0)
        goto out;
    sm_dir_of(dir, sizeof dir, false, shard, m.epoch);
    if ((rc = sm_fresh_dir(dir, why, whylen)) != 0)
        goto out;
    int64_t t_fetch = now_mono_ms();
    if ((rc = fetch_files(&from, &m, dir, why, whylen)) != 0)
        goto out;
    int64_t fetched = now_mono_ms();
    /* 3. its own copy (force=1) set aside; in, counted */
    if (rec.state == SHARDREC_OWNED &&
        (rc = set_aside(shard, prefix, &rec, aside, &km, why, whylen)) != 0)
        goto out;
    int64_t earliest = 0;
    if ((rc = ingest_checked(prefix, dir, &m, true, &what, &earliest, why, whylen)) != 0)
        goto out;
    sm_crash_point("adopt-ingested");
    /* 4. recorded, served */
    if ((rc = take(shard, prefix, m.epoch, rq->peer, what, earliest, why, whylen)) != 0)
        goto out;
    aside[0] = '\0'; /* replaced: take deleted it with the record */
    int64_t t1 = now_mono_ms();
    *report = json_pack("{s:s,s:s,s:s,s:I,s:I,s:O,s:I,s:I,s:b}", "shard", prefix, "node",
                        shard_node_name(), "from", rq->peer, "epoch", (json_int_t)m.epoch, "keys",
                        (json_int_t)m.keys, "moved", what, "fetch_ms",
                        (json_int_t)(fetched - t_fetch), "ingest_ms", (json_int_t)(t1 - fetched),
                        "already", 0);
    log_info("shard %s adopted at epoch %u from %s: %llu keys in %lld ms", prefix, m.epoch,
             rq->peer, (unsigned long long)m.keys, (long long)(t1 - t0));
out:
    if (aside[0])
        put_back(shard, prefix, &rec, aside, &km, why, whylen);
    manifest_clear(&km);
    if (dir[0])
        sm_remove_dir(dir);
    store_space_recheck(SM_STORE); /* the fetched files came, and went or were ingested */
    json_decref(what);
    manifest_clear(&m);
    pthread_mutex_unlock(&sm_move_mu);
    return rc;
}

/* ---- reclaim, decline, finish ---- */

/* A forced adopt's copy set aside, taken back. No node can decline it (force would take this
 * node for one gone for good), and the shard went on past it (an export for this node
 * elsewhere): it is never served at a new epoch. It goes back into the store, checked, recorded
 * as held at its own epoch and not served (refused, as before the forced adopt). */
static int reclaim_aside(int shard, const char *prefix, const shardrec_t *rec, json_t **report,
                         char *why, size_t whylen)
{
    char dir[DIR_MAX], what_for[64];
    sm_dir_of(dir, sizeof dir, true, shard, rec->epoch);
    snprintf(what_for, sizeof what_for, "putting back shard %s (a copy of its export)", prefix);
    manifest_t m = {.shard = -1};
    json_t *what = NULL;
    int64_t earliest = 0;
    /* a file missing or differing is the copy's damage (502); a read error, this node's (500) */
    int rc = sm_read_manifest(dir, &m, why, whylen);
    if (rc == 0)
        rc = sm_check_files(dir, &m, why, whylen);
    if (rc == 0)
        rc = sm_room_for(what_for, manifest_bytes(&m), false, true, why, whylen);
    if (rc == 0)
        rc = ingest_checked(prefix, dir, &m, false, &what, &earliest, why, whylen);
    shardrec_t own = {.state = SHARDREC_OWNED, .epoch = rec->epoch, .declined = rec->declined};
    if (rc == 0 && sm_put_record(shard, &own) != 0) {
        snprintf(why, whylen, "cannot record the copy put back (the store refuses writes)");
        drop_ingested(prefix);
        rc = -EIO;
    }
    if (rc == 0) {
        sm_remove_dir(dir);
        snprintf(why, whylen,
                 "its own copy set aside by a forced adopt, put back at epoch %u: not served "
                 "until a start whose cluster file gives it this epoch",
                 rec->epoch);
        sm_set_refused(shard, why);
        *report = json_pack("{s:s,s:s,s:I,s:O,s:b,s:b}", "shard", prefix, "node", shard_node_name(),
                            "epoch", (json_int_t)rec->epoch, "moved", what, "put_back", 1,
                            "serving", 0);
    }
    json_decref(what);
    manifest_clear(&m);
    return rc;
}

int shard_reclaim(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = sm_move_begin(shard, prefix, &t0, why, whylen);
    manifest_t m = {.shard = -1};
    json_t *what = NULL;
    if (rc != 0)
        goto out;
    shardrec_t rec = SM_REC[shard];
    if (rec.state != SHARDREC_RELEASED || !rec.export_kept) {
        snprintf(why, whylen, "shard %s has no export here to take back (%s at epoch %u)", prefix,
                 shardrec_state_name(rec.state), rec.epoch);
        rc = -EALREADY;
        goto out;
    }
    if (strcmp(rec.peer, shard_node_name()) == 0) {
        rc = reclaim_aside(shard, prefix, &rec, report, why, whylen);
        goto out;
    }
    if (rec.epoch + 1 > SHARDREC_EPOCH_MAX) {
        snprintf(why, whylen, "shard %s has used up its epochs", prefix);
        rc = -EINVAL;
        goto out;
    }
    char dir[DIR_MAX];
    sm_dir_of(dir, sizeof dir, true, shard, rec.epoch);
    /* its own files, as it wrote them: a file missing or differing is the export's damage
     * (502); a read error is this node's disk (500), and nobody is asked anything yet */
    if ((rc = sm_read_manifest(dir, &m, why, whylen)) != 0 ||
        (rc = sm_check_files(dir, &m, why, whylen)) != 0)
        goto out;
    /* room for it (the ingest copies: the export stays the shard's data until the record),
     * before the other node is asked anything */
    char what_for[64];
    snprintf(what_for, sizeof what_for, "taking back shard %s (a copy of its export)", prefix);
    if ((rc = sm_room_for(what_for, manifest_bytes(&m), false, true, why, whylen)) != 0)
        goto out;
    /* 1. fencing: the node it was for promises never to adopt it (shardmove_peer.c) */
    if ((rc = sm_fence_peer(&rec, prefix, rq->force, why, whylen)) != 0)
        goto out;
    /* 2. in again, counted; recorded at a new epoch; served */
    int64_t earliest = 0;
    if ((rc = ingest_checked(prefix, dir, &m, false, &what, &earliest, why, whylen)) != 0)
        goto out;
    if ((rc = take(shard, prefix, rec.epoch + 1, "", what, earliest, why, whylen)) != 0)
        goto out;
    sm_remove_dir(dir);
    *report = json_pack("{s:s,s:s,s:I,s:O,s:b}", "shard", prefix, "node", shard_node_name(),
                        "epoch", (json_int_t)(rec.epoch + 1), "moved", what, "forced", rq->force);
    log_info("shard %s taken back at epoch %u (its export to %s was declined%s)", prefix,
             rec.epoch + 1, rec.peer, rq->force ? " or forced" : "");
out:
    store_space_recheck(SM_STORE);
    json_decref(what);
    manifest_clear(&m);
    pthread_mutex_unlock(&sm_move_mu);
    return rc;
}

int shard_decline(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = sm_move_begin(shard, prefix, &t0, why, whylen);
    if (rc != 0)
        goto out;
    shardrec_t rec = SM_REC[shard];
    if (rq->epoch < 1) {
        snprintf(why, whylen, "epoch must be 1 or more");
        rc = -EINVAL;
        goto out;
    }
    if (shard_owned(shard) || (rec.state != SHARDREC_NONE && rec.epoch >= rq->epoch)) {
        snprintf(why, whylen, "this node %s shard %s at epoch %u",
                 shard_owned(shard)            ? "serves"
                 : rec.state == SHARDREC_OWNED ? "holds"
                                               : "released",
                 prefix, rec.epoch);
        rc = -EALREADY;
        goto out;
    }
    if (rec.declined < rq->epoch) {
        rec.declined = rq->epoch;
        if (sm_put_record(shard, &rec) != 0) {
            snprintf(why, whylen, "cannot record the promise (the store refuses writes)");
            rc = -EIO;
            goto out;
        }
    }
    *report = json_pack("{s:s,s:s,s:I}", "shard", prefix, "node", shard_node_name(), "declined",
                        (json_int_t)rec.declined);
    log_info("shard %s: this node will never adopt its epoch %u (asked by %s)", prefix, rq->epoch,
             rq->peer[0] ? rq->peer : "an operator");
out:
    pthread_mutex_unlock(&sm_move_mu);
    return rc;
}

int shard_finish(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = sm_move_begin(shard, prefix, &t0, why, whylen);
    if (rc != 0)
        goto out;
    shardrec_t rec = SM_REC[shard];
    if (rec.state != SHARDREC_RELEASED) {
        snprintf(why, whylen, "shard %s was not released by this node (%s)", prefix,
                 shardrec_state_name(rec.state));
        rc = -EALREADY;
        goto out;
    }
    /* a copy set aside (released to this node itself) goes once the holder named holds the
     * shard past it: it went on without it (as take deletes an earlier stay's export) */
    bool aside = strcmp(rec.peer, shard_node_name()) == 0;
    const char *who = aside ? rq->peer : rec.peer;
    if (rec.export_kept) {
        /* only once the node it went to holds it: the export may be the only copy */
        peer_t to;
        char url[64];
        snprintf(url, sizeof url, "/shards/record?shard=%s", prefix);
        int status = 0;
        json_t *r = NULL;
        if (aside && !who[0]) {
            snprintf(why, whylen,
                     "shard %s: this node's own copy, set aside by a forced adopt, "
                     "goes only once the node that holds it now says so: &holder=<node>",
                     prefix);
            rc = -EINVAL;
            goto out;
        }
        if ((rc = sm_peer_of(who, &to, why, whylen)) != 0 ||
            (rc = sm_peer_json(&to, "GET", url, &status, &r, why, whylen)) != 0)
            goto out;
        const char *st = json_string_value(json_object_get(r, "state"));
        json_int_t ep = json_integer_value(json_object_get(r, "epoch"));
        bool holds = status == 200 && st &&
                     ((strcmp(st, "owned") == 0 && ep >= (json_int_t)rec.epoch + aside) ||
                      (strcmp(st, "released") == 0 && ep > rec.epoch));
        json_decref(r);
        if (!holds) {
            snprintf(why, whylen, "%s does not hold %sepoch %u of shard %s (yet): %s stays", who,
                     aside ? "an epoch past " : "", rec.epoch, prefix,
                     aside ? "this node's own copy, set aside by a forced adopt," : "the export");
            rc = -EALREADY;
            goto out;
        }
        char dir[DIR_MAX];
        sm_dir_of(dir, sizeof dir, true, shard, rec.epoch);
        rec.export_kept = false;
        if (sm_put_record(shard, &rec) != 0) {
            snprintf(why, whylen, "cannot record the finish (the store refuses writes)");
            rc = -EIO;
            goto out;
        }
        sm_remove_dir(dir);
        log_info("shard %s: %s holds epoch %u; its export here is deleted", prefix, rec.peer,
                 rec.epoch);
    }
    *report = json_pack("{s:s,s:s,s:s,s:I}", "shard", prefix, "node", shard_node_name(), "to",
                        rec.peer, "epoch", (json_int_t)rec.epoch);
out:
    pthread_mutex_unlock(&sm_move_mu);
    return rc;
}
