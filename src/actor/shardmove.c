#include "actor/shardmove.h"

#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/worker.h"
#include "core/log.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"
#include "store/sessionrec.h"
#include "wire/jsonrpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static store_t *STORE;
static pthread_mutex_t move_mu = PTHREAD_MUTEX_INITIALIZER;
/* the shard being evicted, and the actors of it still busy after a round (workers add) */
static int g_evict = -1;
static atomic_long g_busy;

void shardmove_init(store_t *store)
{
    STORE = store;
}

/* One round on a worker: every actor of the shard is told to stop (jobs cancelled, client
 * connections ended: a stream's client resumes with Last-Event-ID where the shard goes) and
 * hibernates once idle; what is still busy is counted. */
static void evict_each(actor_t *a, void *arg)
{
    (void)arg;
    if (shard_of(a->sid) != g_evict)
        return;
    if (a->modern) {
        /* a one-request actor is never stored and its stream cannot be resumed: it finishes
         * its call on its live connection (what it creates, a record or a task, is written in
         * that turn, before a later round exports the shard) */
        if (!actor_is_idle(a))
            atomic_fetch_add(&g_busy, 1);
        else
            worker_note_activity(a->w, a); /* answered: discarded */
        return;
    }
    actor_cancel_jobs(a);
    for (stream_t *s = a->streams; s; s = s->next) {
        if (s->conn.gen && s->sse) {
            actor_send_sse_end(a, s->conn, s->num);
            s->conn.gen = 0;
        }
    }
    if (!actor_is_idle(a)) {
        atomic_fetch_add(&g_busy, 1);
        return;
    }
    actor_hibernate(a);
}

static void evict_round(worker_t *w)
{
    worker_foreach_actor(w, evict_each, NULL);
}

static void adjust_gauges(const char *prefix, int sign)
{
    uint64_t by[STORED__KINDS] = {0};
    sessionrec_count_prefix(STORE, prefix, SHARD_HEX, actor_meta_kind, by, STORED__KINDS);
    STAT_ADD(sessions_stored, sign * (long long)by[STORED_SESSION]);
    STAT_ADD(input_records_stored, sign * (long long)by[STORED_RECORD]);
    STAT_ADD(handles_stored, sign * (long long)by[STORED_HANDLE]);
    STAT_ADD(tasks_stored, sign * (long long)by[STORED_TASK]);
    actors_account_stored(STORE, prefix, SHARD_HEX, sign, NULL); /* the owners' shares */
}

static json_t *counts(const char *prefix, int64_t *earliest)
{
    uint64_t by[STORED__KINDS] = {0};
    sessionrec_count_prefix(STORE, prefix, SHARD_HEX, actor_meta_kind, by, STORED__KINDS);
    uint64_t alarms = sessionrec_alarms_of_prefix(STORE, prefix, SHARD_HEX, earliest);
    return json_pack("{s:I,s:I,s:I,s:I,s:I}", "sessions", (json_int_t)by[STORED_SESSION],
                     "handles", (json_int_t)by[STORED_HANDLE], "tasks", (json_int_t)by[STORED_TASK],
                     "input_records", (json_int_t)by[STORED_RECORD], "alarms", (json_int_t)alarms);
}

/* dir/manifest.json: what the release exported, for the adopt to check against */
static int write_manifest(const char *dir, const char *prefix, uint64_t keys, const json_t *what,
                          char *why, size_t whylen)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    json_t *m = json_pack("{s:s,s:s,s:I,s:O}", "shard", prefix, "node", shard_node_name(),
                          "keys", (json_int_t)keys, "moved", what);
    int rc = json_dump_file(m, tmp, JSON_COMPACT);
    json_decref(m);
    if (rc != 0 || rename(tmp, path) != 0) {
        snprintf(why, whylen, "cannot write %s", path);
        return -EIO;
    }
    return 0;
}

static json_t *read_manifest(const char *dir, const char *prefix, char *why, size_t whylen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t e;
    json_t *m = json_load_file(path, 0, &e);
    if (!m) {
        snprintf(why, whylen, "no export to adopt in %s (%s): release the shard there first",
                 dir, e.text);
        return NULL;
    }
    if (!jsonrpc_str_is(json_object_get(m, "shard"), prefix) ||
        !json_is_object(json_object_get(m, "moved"))) {
        snprintf(why, whylen, "%s is the export of another shard", path);
        json_decref(m);
        return NULL;
    }
    return m;
}

/* The start of a move step: the shard's id prefix, the lock (held on return, whatever rc),
 * the start time; -EINVAL without a cluster. */
static int move_begin(int shard, char prefix[SHARD_HEX + 1], int64_t *t0, char *why,
                      size_t whylen)
{
    shard_put(prefix, shard);
    pthread_mutex_lock(&move_mu);
    *t0 = now_mono_ms();
    if (!shard_in_cluster()) {
        snprintf(why, whylen, "this node runs without --cluster: it serves every shard");
        return -EINVAL;
    }
    return 0;
}

int shard_release(int shard, const char *dir, long wait_ms, json_t **report, char *why,
                  size_t whylen)
{
    char prefix[SHARD_HEX + 1] = {0};
    int64_t t0;
    int rc = move_begin(shard, prefix, &t0, why, whylen);
    if (rc != 0)
        goto out;
    if (!shard_owned(shard)) {
        snprintf(why, whylen, "shard %s is not served by this node", prefix);
        rc = -EALREADY;
        goto out;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
        rc = -EIO;
        goto out;
    }
    /* 1. no new request for it: the HTTP threads and the workers answer 503 + Retry-After */
    shard_set_owned(shard, false);
    /* 2. its actors finish what they do and hibernate (all written to the store) */
    g_evict = shard;
    long rounds = 0;
    for (;;) {
        atomic_store(&g_busy, 0);
        workers_run_each(evict_round);
        rounds++;
        /* a round runs after the turn in progress on each worker, and from the flag on every
         * client message of the shard is refused by the worker too (actor_dispatch): a round
         * that finds nothing busy has seen the last actor */
        if (atomic_load(&g_busy) == 0)
            break;
        if (now_mono_ms() - t0 > wait_ms) {
            snprintf(why, whylen, "%ld actors of shard %s were still busy after %ld ms; it is "
                     "served here again", atomic_load(&g_busy), prefix, wait_ms);
            shard_set_owned(shard, true);
            int64_t due;
            sessionrec_alarms_of_prefix(STORE, prefix, SHARD_HEX, &due);
            if (due)
                alarms_hint(due); /* alarms refused meanwhile run now */
            rc = -EBUSY;
            goto out;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int64_t settled = now_mono_ms();
    /* 3. its keys out, from one snapshot */
    int64_t earliest;
    json_t *what = counts(prefix, &earliest);
    uint64_t keys = 0;
    rc = store_export_prefix(STORE, prefix, SHARD_HEX, dir, &keys, why, whylen);
    if (rc == 0)
        rc = write_manifest(dir, prefix, keys, what, why, whylen);
    if (rc != 0) {
        json_decref(what);
        shard_set_owned(shard, true);
        if (earliest)
            alarms_hint(earliest); /* served here again: alarms refused meanwhile run now */
        goto out;
    }
    /* 4. its copy here goes (the files hold it now) */
    adjust_gauges(prefix, -1);
    STAT_ADD(alarms_pending, -json_integer_value(json_object_get(what, "alarms")));
    rc = store_delete_prefix(STORE, prefix, SHARD_HEX);
    if (rc != 0) {
        /* the export is complete: the new owner can take it; the keys left here are never
         * served (the shard is not owned) and go with the next move back or a manual cleanup */
        log_warn("shard %s: exported, but deleting the local copy failed (%d)", prefix, rc);
        rc = 0;
    }
    int64_t t1 = now_mono_ms();
    *report = json_pack("{s:s,s:s,s:s,s:I,s:o,s:I,s:I,s:I}", "shard", prefix, "node",
                        shard_node_name(), "dir", dir, "keys", (json_int_t)keys, "moved", what,
                        "settle_ms", (json_int_t)(settled - t0), "export_ms",
                        (json_int_t)(t1 - settled), "rounds", (json_int_t)rounds);
    log_info("shard %s released: %llu keys written to %s in %lld ms", prefix,
             (unsigned long long)keys, dir, (long long)(t1 - t0));
out:
    g_evict = -1;
    pthread_mutex_unlock(&move_mu);
    return rc;
}

int shard_adopt(int shard, const char *dir, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1] = {0};
    int64_t t0;
    int rc = move_begin(shard, prefix, &t0, why, whylen);
    if (rc != 0)
        goto out;
    if (shard_owned(shard)) {
        snprintf(why, whylen, "shard %s is served by this node already", prefix);
        rc = -EALREADY;
        goto out;
    }
    json_t *manifest = read_manifest(dir, prefix, why, whylen);
    if (!manifest) {
        rc = -EIO;
        goto out;
    }
    /* whatever an earlier stay left under the prefix goes first (not owned: nobody reads it) */
    store_delete_prefix(STORE, prefix, SHARD_HEX);
    uint64_t files = 0;
    rc = store_ingest_dir(STORE, dir, &files, why, whylen);
    int64_t earliest;
    json_t *what = rc == 0 ? counts(prefix, &earliest) : NULL;
    if (rc == 0 && !json_equal(what, json_object_get(manifest, "moved"))) {
        char *got = json_dumps(what, JSON_COMPACT), *want = json_dumps(json_object_get(manifest, "moved"), JSON_COMPACT);
        snprintf(why, whylen, "the files in %s hold %s, the release wrote %s", dir, got, want);
        free(got);
        free(want);
        rc = -EIO;
    }
    json_decref(manifest);
    if (rc != 0) {
        json_decref(what);
        store_delete_prefix(STORE, prefix, SHARD_HEX); /* nothing half-ingested stays */
        goto out;
    }
    adjust_gauges(prefix, 1);
    STAT_ADD(alarms_pending, json_integer_value(json_object_get(what, "alarms")));
    shard_set_owned(shard, true);
    if (earliest)
        alarms_hint(earliest); /* owned first: an alarm due already is not refused */
    int64_t t1 = now_mono_ms();
    *report = json_pack("{s:s,s:s,s:I,s:o,s:I}", "shard", prefix, "node", shard_node_name(),
                        "files", (json_int_t)files, "moved", what, "ingest_ms",
                        (json_int_t)(t1 - t0));
    log_info("shard %s adopted from %s in %lld ms", prefix, dir, (long long)(t1 - t0));
out:
    pthread_mutex_unlock(&move_mu);
    return rc;
}
