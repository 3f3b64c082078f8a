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
 *            -> serve. A crash before the record leaves unowned keys that the next adopt
 *            deletes first.
 *   reclaim: the other node records that it will never adopt epoch E (decline) -> this node
 *            ingests its own export -> records "owned at E+1" -> serves.
 *   finish:  the other node says it holds epoch E -> the export is deleted.
 * Fencing: a node serves and mints only in shards it holds a record for at the newest epoch it
 * knows of (shard_decide); an export is adopted only by the node it names, only at an epoch
 * newer than anything that node holds or declined. */
#include "actor/shardmove.h"

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

#define PEER_TIMEOUT_S 30
/* a move directory's path: --move-dir (< 1024) and a name */
#define DIR_MAX 1200
/* how long a step asked of another node (decline, a record) may run there */
#define PEER_STEP_WAIT_MS 60000

static store_t *STORE;
static char MOVE_DIR[1024];
static pthread_mutex_t move_mu = PTHREAD_MUTEX_INITIALIZER;
/* The records as stored (written through: the store first, then here) and why a shard is
 * refused (NULL: it is not). Written by the move thread under both locks, read under rec_mu. */
static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static shardrec_t REC[SHARD_COUNT];
static char *REFUSED[SHARD_COUNT];
/* the shard being evicted, and the actors of it still busy after a round (workers add) */
static int g_evict = -1;
static atomic_long g_busy;

/* A test hook: MCPD_CRASH_AT=<point> kills the process there, as a power cut or kill -9 would
 * (tests/cluster/test_moves.py stops a move at every step). */
static void crash_point(const char *point)
{
    const char *at = getenv("MCPD_CRASH_AT");
    if (at && strcmp(at, point) == 0) {
        log_warn("MCPD_CRASH_AT=%s: killing the process here", point);
        raise(SIGKILL);
    }
}

static void shard_hex(int shard, char out[SHARD_HEX + 1])
{
    shard_put(out, shard);
    out[SHARD_HEX] = '\0';
}

static void set_refused(int shard, const char *why)
{
    pthread_mutex_lock(&rec_mu);
    free(REFUSED[shard]);
    REFUSED[shard] = why ? xstrdup(why) : NULL;
    pthread_mutex_unlock(&rec_mu);
}

/* Writes the record, then keeps it here: 0, or the store's error (nothing changed). */
static int put_record(int shard, const shardrec_t *r)
{
    int rc = shardrec_put(STORE, shard, r);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&rec_mu);
    REC[shard] = *r;
    pthread_mutex_unlock(&rec_mu);
    return 0;
}

/* ---- the start-up rule ---- */

shard_verdict_t shard_decide(bool file_mine, uint32_t file_epoch, const shardrec_t *rec,
                             bool bootstrapped, bool *claim, char *why, size_t whylen)
{
    *claim = false;
    why[0] = '\0';
    switch (rec->state) {
    case SHARDREC_OWNED:
        if (file_epoch > rec->epoch) {
            snprintf(why, whylen, "this node holds it at epoch %u, but the cluster file names "
                     "epoch %u (%s): this copy may be stale", rec->epoch, file_epoch,
                     file_mine ? "for this node" : "for another node");
            return SHARD_REFUSE;
        }
        if (file_epoch == rec->epoch && !file_mine) {
            snprintf(why, whylen, "this node holds it at epoch %u, but the cluster file gives "
                     "epoch %u to another node", rec->epoch, file_epoch);
            return SHARD_REFUSE;
        }
        if (!file_mine)
            snprintf(why, whylen, "held here at epoch %u; the cluster file (epoch %u, another "
                     "node) is older", rec->epoch, file_epoch);
        return SHARD_SERVE;
    case SHARDREC_RELEASED:
        if (file_mine) {
            snprintf(why, whylen, "released at epoch %u to %s (this node holds no data for "
                     "it); the cluster file, which still gives it here, is older", rec->epoch,
                     rec->peer);
            return SHARD_REFUSE;
        }
        return SHARD_NOT_MINE;
    case SHARDREC_NONE:
    default:
        if (!file_mine)
            return SHARD_NOT_MINE;
        if (file_epoch > 1) {
            snprintf(why, whylen, "the cluster file gives it to this node at epoch %u, but this "
                     "node never adopted it (no record): it holds no data for it", file_epoch);
            return SHARD_REFUSE;
        }
        if (bootstrapped) {
            snprintf(why, whylen, "the cluster file gives it to this node, but this node never "
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
        shard_hex(s, a);
        shard_hex(e, b);
        if (refused)
            log_warn("cluster: shard%s %s%s%s refused (503 -32010): %s", e > s ? "s" : "", a,
                     e > s ? "-" : "", e > s ? b : "", why[s]);
        else
            log_info("cluster: shard%s %s%s%s: %s", e > s ? "s" : "", a, e > s ? "-" : "",
                     e > s ? b : "", why[s]);
        s = e + 1;
    }
}

static void sweep_move_dir(void);
static int fsync_dir(const char *dir);

/* Whether any id-keyed family holds a key of the shard (a seek each; alarms go with the
 * metadata in one batch, so they never outlive it). */
static bool local_copy_left(store_t *store, const char *prefix)
{
    for (int cf = 0; cf < CF__COUNT; cf++)
        if (cf != CF_ALARMS && store_prefix_any(store, (store_cf_t)cf, prefix, SHARD_HEX))
            return true;
    return false;
}

/* --move-dir exists, and its entry is on disk (an export there may be a shard's only copy). */
static int make_move_dir(void)
{
    if (mkdir(MOVE_DIR, 0700) == 0) {
        char parent[sizeof MOVE_DIR];
        snprintf(parent, sizeof parent, "%s", MOVE_DIR);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent)
            *slash = '\0';
        else
            snprintf(parent, sizeof parent, "%s", slash ? "/" : ".");
        fsync_dir(parent);
    } else if (errno != EEXIST) {
        log_error("cluster: cannot create the move directory %s: %s", MOVE_DIR, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(MOVE_DIR, &st) != 0 || !S_ISDIR(st.st_mode)) {
        log_error("cluster: the move directory %s is not a directory", MOVE_DIR);
        return -1;
    }
    return 0;
}

int shardmove_init(store_t *store, const char *move_dir)
{
    STORE = store;
    snprintf(MOVE_DIR, sizeof MOVE_DIR, "%s", move_dir);
    if (!shard_in_cluster())
        return 0;
    if (make_move_dir() != 0)
        return -1;
    static bool bad[SHARD_COUNT];
    if (shardrec_load_all(store, REC, bad) != 0)
        log_error("cluster: some shard ownership records do not decode; those shards are refused");
    int boot = shardrec_bootstrapped(store);
    if (boot < 0) {
        log_error("cluster: cannot read the shard ownership records");
        return -1;
    }
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
            v = shard_decide(cluster_file_mine(s), cluster_file_epoch(s), &REC[s], boot == 1, &c,
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
            claimed[nclaim] = (shardrec_t){.state = SHARDREC_OWNED, .epoch = 1,
                                           .declined = REC[s].declined};
            nclaim++;
        }
        char prefix[SHARD_HEX + 1];
        shard_hex(s, prefix);
        if (REC[s].state == SHARDREC_RELEASED && local_copy_left(store, prefix)) {
            /* the release was recorded and the process died before its local delete */
            if (store_delete_prefix(store, prefix, SHARD_HEX) == 0)
                ncleaned++;
        }
    }
    /* the first start records the file's shards (and that it did: from then on a shard without
     * a record is one this node never held) */
    if (boot == 0 && shardrec_bootstrap(store, claim, claimed, nclaim) != 0) {
        log_error("cluster: cannot record this node's %d shards (the store refuses writes)",
                  nclaim);
        for (int s = 0; s < SHARD_COUNT; s++) {
            free(refused[s]);
            free(notes[s]);
        }
        return -1;
    }
    for (int i = 0; i < nclaim; i++)
        REC[claim[i]] = claimed[i];
    log_ranges((const char *const *)notes, false);
    log_ranges((const char *const *)refused, true);
    for (int s = 0; s < SHARD_COUNT; s++) {
        REFUSED[s] = refused[s];
        free(notes[s]);
    }
    shard_begin_cluster(mine);
    sweep_move_dir();
    if (nclaim)
        log_info("cluster: first start: %d shards of the cluster file recorded as held here at "
                 "epoch 1", nclaim);
    if (ncleaned)
        log_info("cluster: finished deleting the local copy of %d released shards", ncleaned);
    if (nrefused)
        log_warn("cluster: %d shards refused: their cluster file entry disagrees with this "
                 "node's records (GET /shards on the admin listener lists them)", nrefused);
    return 0;
}

/* ---- the move directory: only files this code writes, in directories it names ---- */

static void dir_of(char *out, size_t len, bool out_dir, int shard, uint32_t epoch)
{
    char sh[SHARD_HEX + 1];
    shard_hex(shard, sh);
    snprintf(out, len, "%s/%s-%s.%u", MOVE_DIR, out_dir ? "out" : "in", sh, epoch);
}

/* Removes what this code writes into a move directory, then the directory: 0, -ENOTEMPTY when
 * something else is in it (left alone), or -errno. */
static int remove_dir(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTEMPTY; /* a link or a file in its place: not this code's, left alone */
    char path[2048];
    for (int cf = 0; cf < CF__COUNT; cf++) {
        snprintf(path, sizeof path, "%s/%s.sst", dir, store_cf_name((store_cf_t)cf));
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/" MANIFEST_NAME, dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/" MANIFEST_NAME ".tmp", dir);
    unlink(path);
    if (rmdir(dir) != 0 && errno != ENOENT)
        return -errno;
    return 0;
}

/* A fresh, empty directory for an export or a fetch: a leftover of this code's is cleared; a
 * directory holding anything else is refused. */
static int fresh_dir(const char *dir, char *why, size_t whylen)
{
    int rc = remove_dir(dir);
    if (rc == 0 && mkdir(dir, 0700) != 0)
        rc = -errno;
    if (rc == 0 && fsync_dir(MOVE_DIR) != 0)
        rc = -EIO; /* the directory's entry is on disk before anything is written into it */
    if (rc == -ENOTEMPTY || rc == -EEXIST) {
        snprintf(why, whylen, "%s holds files this node did not write: remove them first", dir);
        return -EALREADY;
    }
    if (rc != 0) {
        snprintf(why, whylen, "cannot create %s: %s", dir, strerror(-rc));
        return -EIO;
    }
    return 0;
}

/* At start: fetches that a crash interrupted, and exports no record keeps (a crash between a
 * record and the delete of a directory), are deleted; anything else is left alone. */
static void sweep_move_dir(void)
{
    DIR *d = opendir(MOVE_DIR);
    if (!d)
        return;
    struct dirent *e;
    int removed = 0;
    while ((e = readdir(d)) != NULL) {
        char kind[4] = "", sh[SHARD_HEX + 1] = "";
        unsigned epoch = 0;
        int n = 0;
        if (sscanf(e->d_name, "%3[a-z]-%3[0-9a-f].%u%n", kind, sh, &epoch, &n) != 3 ||
            e->d_name[n] != '\0' || (strcmp(kind, "in") != 0 && strcmp(kind, "out") != 0))
            continue;
        int s = shard_of(sh);
        if (s < 0)
            continue;
        bool kept = strcmp(kind, "out") == 0 && REC[s].state == SHARDREC_RELEASED &&
                    REC[s].export_kept && REC[s].epoch == epoch;
        if (kept)
            continue;
        char dir[DIR_MAX];
        dir_of(dir, sizeof dir, strcmp(kind, "out") == 0, s, epoch);
        if (remove_dir(dir) == 0)
            removed++;
    }
    closedir(d);
    if (removed)
        log_info("cluster: deleted %d move directories no record keeps (interrupted moves)",
                 removed);
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* dir/manifest.json, written whole (temporary file, fsync, rename, fsync of the directory). */
static int write_manifest(const char *dir, const manifest_t *m, char *why, size_t whylen)
{
    char path[2048], tmp[2100];
    snprintf(path, sizeof path, "%s/" MANIFEST_NAME, dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    json_t *j = manifest_build(m);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t n = strlen(text);
    bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    free(text);
    if (!ok || rename(tmp, path) != 0 || fsync_dir(dir) != 0) {
        snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
        return -EIO;
    }
    return 0;
}

static int read_manifest(const char *dir, manifest_t *m, char *why, size_t whylen)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/" MANIFEST_NAME, dir);
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(why, whylen, "cannot read %s: %s", path, strerror(errno));
        manifest_clear(m);
        return -EIO;
    }
    char *text = xmalloc(1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    int rc = manifest_parse(text, n, m, why, whylen);
    free(text);
    return rc;
}

/* Every file of the manifest in dir has its size and SHA-256: 0, or -EBADMSG with why. */
static int check_files(const char *dir, const manifest_t *m, char *why, size_t whylen)
{
    for (int cf = 0; cf < CF__COUNT; cf++) {
        if (!m->fam[cf].file)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s.sst", dir, store_cf_name((store_cf_t)cf));
        uint64_t bytes;
        unsigned char sha[SHA256_LEN];
        int rc = manifest_file_digest(path, &bytes, sha);
        if (rc != 0) {
            snprintf(why, whylen, "the export is incomplete: %s: %s", path, strerror(-rc));
            return -EBADMSG;
        }
        if (bytes != m->fam[cf].bytes || memcmp(sha, m->fam[cf].sha256, SHA256_LEN) != 0) {
            snprintf(why, whylen, "the export is damaged: %s has %llu bytes and another "
                     "SHA-256 than its manifest says (%llu bytes)", path,
                     (unsigned long long)bytes, (unsigned long long)m->fam[cf].bytes);
            return -EBADMSG;
        }
    }
    return 0;
}

/* ---- settling a shard's actors (release) ---- */

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
    actor_cancel_jobs(a, true);
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

/* Until every actor of the shard is idle and hibernated: 0, or -EBUSY after wait_ms. */
static int settle(int shard, long wait_ms, int64_t t0, long *rounds)
{
    g_evict = shard;
    int rc = 0;
    for (*rounds = 0;;) {
        atomic_store(&g_busy, 0);
        workers_run_each(evict_round);
        (*rounds)++;
        /* a round runs after the turn in progress on each worker, and from the flag on every
         * client message of the shard is refused by the worker too (actor_dispatch): a round
         * that finds nothing busy has seen the last actor */
        if (atomic_load(&g_busy) == 0)
            break;
        if (now_mono_ms() - t0 > wait_ms) {
            rc = -EBUSY;
            break;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    g_evict = -1;
    return rc;
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

/* Served here again after an abandoned release: alarms refused meanwhile run now. */
static void serve_again(int shard, const char *prefix)
{
    shard_set_owned(shard, true);
    int64_t due = 0;
    sessionrec_alarms_of_prefix(STORE, prefix, SHARD_HEX, &due);
    if (due)
        alarms_hint(due);
}

/* The start of a step: the shard's prefix, the lock (held on return, whatever rc), the start
 * time; -EINVAL without a cluster. */
static int move_begin(int shard, char prefix[SHARD_HEX + 1], int64_t *t0, char *why,
                      size_t whylen)
{
    shard_hex(shard, prefix);
    pthread_mutex_lock(&move_mu);
    *t0 = now_mono_ms();
    if (!shard_in_cluster()) {
        snprintf(why, whylen, "this node runs without --cluster: it serves every shard");
        return -EINVAL;
    }
    return 0;
}

/* ---- another node's admin listener ---- */

static int peer_of(const char *node, peer_t *p, char *why, size_t whylen)
{
    memset(p, 0, sizeof *p);
    if (!node[0] || strcmp(node, shard_node_name()) == 0 ||
        cluster_node_admin(node, p->host, sizeof p->host, &p->port) != 0) {
        snprintf(why, whylen, "'%s' is not another node with an admin address in the cluster "
                 "file", node);
        return -EINVAL;
    }
    p->token = g_admin_auth.n ? (const char *)g_admin_auth.entries[0].token : NULL;
    p->timeout_s = PEER_TIMEOUT_S;
    return 0;
}

/* GET path on a peer, a JSON answer: 0 with *status and *out (new), or -EAGAIN with why. */
static int peer_json(const peer_t *p, const char *method, const char *path, int *status,
                     json_t **out, char *why, size_t whylen)
{
    char *body = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = peer_call(p, method, path, 1 << 20, status, &body, &len, why, whylen);
    if (rc != 0) {
        free(body);
        return -EAGAIN;
    }
    *out = json_loadb(body, len, 0, NULL);
    free(body);
    if (!*out)
        *out = json_object();
    return 0;
}

/* A step on a peer (POST answers 202, then GET /shards/move until it is done): 0 with the
 * step's HTTP status and answer, or -EAGAIN (unreachable, busy, or it did not finish). */
static int peer_step(const peer_t *p, const char *path, int *status, json_t **out, char *why,
                     size_t whylen)
{
    json_t *o = NULL;
    int rc = peer_json(p, "POST", path, status, &o, why, whylen);
    if (rc != 0)
        return rc;
    if (*status != 202) {
        if (json_is_true(json_object_get(o, "busy"))) {
            snprintf(why, whylen, "%s:%d is running another move step", p->host, p->port);
            json_decref(o);
            return -EAGAIN;
        }
        *out = o;
        return 0;
    }
    json_int_t seq = json_integer_value(json_object_get(o, "seq"));
    char run[40];
    const char *r0 = json_string_value(json_object_get(o, "run"));
    snprintf(run, sizeof run, "%s", r0 ? r0 : "");
    json_decref(o);
    int64_t deadline = now_mono_ms() + PEER_STEP_WAIT_MS;
    while (now_mono_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        rc = peer_json(p, "GET", "/shards/move", status, &o, why, whylen);
        if (rc != 0)
            return rc;
        const char *st = json_string_value(json_object_get(o, "state"));
        const char *r = json_string_value(json_object_get(o, "run"));
        if (*status == 200 && r && strcmp(r, run) != 0) {
            /* another process answers: the peer restarted, and this step's answer is lost */
            snprintf(why, whylen, "%s:%d restarted while the step ran", p->host, p->port);
            json_decref(o);
            return -EAGAIN;
        }
        if (*status == 200 && st && strcmp(st, "done") == 0 &&
            json_integer_value(json_object_get(o, "seq")) == seq) {
            *status = (int)json_integer_value(json_object_get(o, "status"));
            *out = o;
            return 0;
        }
        json_decref(o);
    }
    snprintf(why, whylen, "the step on %s:%d did not finish in time", p->host, p->port);
    return -EAGAIN;
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

/* Writes the export (files fsynced, manifest last) of a settled shard into dir. */
static int export_shard(int shard, const char *prefix, const char *dir, uint32_t epoch,
                        const char *to, json_t *what, manifest_t *m, char *why, size_t whylen)
{
    memset(m, 0, sizeof *m);
    m->shard = shard;
    m->epoch = epoch;
    snprintf(m->from, sizeof m->from, "%s", shard_node_name());
    snprintf(m->to, sizeof m->to, "%s", to);
    uint64_t keys[CF__COUNT];
    int rc = store_export_prefix(STORE, prefix, SHARD_HEX, dir, keys, why, whylen);
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
        rc = fsync_dir(dir) == 0 ? write_manifest(dir, m, why, whylen) : -EIO;
    return rc;
}

int shard_release(const shard_req_t *rq, long wait_ms, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = move_begin(shard, prefix, &t0, why, whylen);
    peer_t to;
    char dir[DIR_MAX];
    if (rc != 0 || (rc = peer_of(rq->peer, &to, why, whylen)) != 0)
        goto out;
    shardrec_t rec = REC[shard];
    if (rec.state == SHARDREC_RELEASED) {
        /* asked again (an answer was lost, or a move is re-run): the same export, or why not */
        dir_of(dir, sizeof dir, true, shard, rec.epoch);
        manifest_t m;
        if (strcmp(rec.peer, rq->peer) != 0 || !rec.export_kept) {
            snprintf(why, whylen, "shard %s was released at epoch %u to %s%s", prefix,
                     rec.epoch, rec.peer, rec.export_kept ? ": finish that move, or take it "
                     "back (POST /shards/reclaim)" : ", and that move is finished");
            rc = -EALREADY;
        } else if ((rc = read_manifest(dir, &m, why, whylen)) == 0) {
            *report = release_report(&m, dir, true);
            manifest_clear(&m);
        }
        goto out;
    }
    if (!shard_owned(shard)) {
        pthread_mutex_lock(&rec_mu);
        snprintf(why, whylen, "shard %s is not served by this node%s%s", prefix,
                 REFUSED[shard] ? ": " : "", REFUSED[shard] ? REFUSED[shard] : "");
        pthread_mutex_unlock(&rec_mu);
        rc = -EALREADY;
        goto out;
    }
    uint32_t epoch = (rec.epoch > rec.declined ? rec.epoch : rec.declined) + 1;
    if (epoch > SHARDREC_EPOCH_MAX) {
        snprintf(why, whylen, "shard %s has used up its epochs", prefix);
        rc = -EINVAL;
        goto out;
    }
    dir_of(dir, sizeof dir, true, shard, epoch);
    if ((rc = fresh_dir(dir, why, whylen)) != 0)
        goto out;
    /* 1. no new request for it: the HTTP threads and the workers answer 503 + Retry-After */
    shard_set_owned(shard, false);
    /* 2. its actors finish what they do and hibernate (all written to the store) */
    long rounds = 0;
    if (settle(shard, wait_ms, t0, &rounds) != 0) {
        snprintf(why, whylen, "%ld actors of shard %s were still busy after %ld ms; it is "
                 "served here again", atomic_load(&g_busy), prefix, wait_ms);
        serve_again(shard, prefix);
        remove_dir(dir);
        rc = -EBUSY;
        goto out;
    }
    int64_t settled = now_mono_ms();
    /* 3. its keys out, from one snapshot, with the manifest (a draft until the record) */
    int64_t earliest;
    json_t *what = counts(prefix, &earliest);
    manifest_t m;
    rc = export_shard(shard, prefix, dir, epoch, rq->peer, what, &m, why, whylen);
    crash_point("release-exported");
    /* 4. the record: from here the export is the shard's data */
    shardrec_t rel = {.state = SHARDREC_RELEASED, .epoch = epoch, .declined = rec.declined,
                      .export_kept = true};
    snprintf(rel.peer, sizeof rel.peer, "%s", rq->peer);
    if (rc == 0 && (rc = put_record(shard, &rel)) != 0) {
        snprintf(why, whylen, "cannot record the release (the store refuses writes)");
        rc = -EIO;
    }
    if (rc != 0) {
        json_decref(what);
        manifest_clear(&m);
        serve_again(shard, prefix);
        remove_dir(dir);
        goto out;
    }
    crash_point("release-recorded");
    /* 5. its copy here goes */
    adjust_gauges(prefix, -1);
    STAT_ADD(alarms_pending, -json_integer_value(json_object_get(what, "alarms")));
    if (store_delete_prefix(STORE, prefix, SHARD_HEX) != 0) {
        /* the export holds the shard; the keys left here are never served (the record says
         * released) and the next start deletes them */
        log_warn("shard %s: released, but deleting the local copy failed", prefix);
    }
    int64_t t1 = now_mono_ms();
    *report = release_report(&m, dir, false);
    json_object_set_new(*report, "settle_ms", json_integer(settled - t0));
    json_object_set_new(*report, "export_ms", json_integer(t1 - settled));
    json_object_set_new(*report, "rounds", json_integer(rounds));
    log_info("shard %s released at epoch %u to %s: %llu keys in %s, %lld ms", prefix, epoch,
             rq->peer, (unsigned long long)m.keys, dir, (long long)(t1 - t0));
    manifest_clear(&m);
    json_decref(what);
out:
    pthread_mutex_unlock(&move_mu);
    return rc;
}

/* ---- adopt ---- */

/* Fetches every file of the manifest from the peer into dir, checked as it comes. */
static int fetch_files(const peer_t *p, const manifest_t *m, const char *dir, char *why,
                       size_t whylen)
{
    char sh[SHARD_HEX + 1];
    shard_hex(m->shard, sh);
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
            snprintf(why, whylen, "the export is damaged: %s.sst is longer than its manifest "
                     "says", name);
            return -EBADMSG;
        }
        if (rc != 0)
            return rc == -EIO ? -EIO : -EAGAIN;
        if (status != 200) {
            snprintf(why, whylen, "the export is incomplete: %s:%d answered %d for %s.sst",
                     p->host, p->port, status, name);
            return -EBADMSG;
        }
        if (bytes != m->fam[cf].bytes || memcmp(sha, m->fam[cf].sha256, SHA256_LEN) != 0) {
            snprintf(why, whylen, "the export is damaged: %s.sst came with %llu bytes and "
                     "another SHA-256 than its manifest says (%llu bytes)", name,
                     (unsigned long long)bytes, (unsigned long long)m->fam[cf].bytes);
            return -EBADMSG;
        }
    }
    return fsync_dir(dir) == 0 ? 0 : -EIO;
}

/* Ingests the checked files of dir and counts every family's keys against the manifest; on
 * failure nothing of the shard stays. */
static int ingest_checked(const char *prefix, const char *dir, const manifest_t *m, bool move,
                          json_t **what, int64_t *earliest, char *why, size_t whylen)
{
    bool present[CF__COUNT];
    for (int cf = 0; cf < CF__COUNT; cf++)
        present[cf] = m->fam[cf].file;
    /* whatever an earlier stay or a crashed adopt left under the prefix goes first (not
     * owned: nobody reads it) */
    store_delete_prefix(STORE, prefix, SHARD_HEX);
    int rc = store_ingest_dir(STORE, dir, present, move, why, whylen);
    uint64_t got[CF__COUNT];
    if (rc == 0) {
        store_count_prefix(STORE, prefix, SHARD_HEX, got);
        for (int cf = 0; cf < CF__COUNT && rc == 0; cf++) {
            if (got[cf] != m->fam[cf].keys) {
                snprintf(why, whylen, "after ingesting, the %s family holds %llu keys of the "
                         "shard; the manifest says %llu", store_cf_name((store_cf_t)cf),
                         (unsigned long long)got[cf], (unsigned long long)m->fam[cf].keys);
                rc = -EBADMSG;
            }
        }
    }
    *what = rc == 0 ? counts(prefix, earliest) : NULL;
    if (rc == 0 && !json_equal(*what, m->moved)) {
        snprintf(why, whylen, "the ingested keys do not hold what the release counted");
        rc = -EBADMSG;
    }
    if (rc != 0) {
        json_decref(*what);
        *what = NULL;
        store_delete_prefix(STORE, prefix, SHARD_HEX); /* nothing half-ingested stays */
    }
    return rc;
}

/* The shard is held here from now on at epoch, its data ingested: record, count, serve. */
static int take(int shard, const char *prefix, uint32_t epoch, const char *from, json_t *what,
                int64_t earliest, char *why, size_t whylen)
{
    shardrec_t was = REC[shard];
    shardrec_t own = {.state = SHARDREC_OWNED, .epoch = epoch, .declined = was.declined};
    snprintf(own.peer, sizeof own.peer, "%s", from);
    if (put_record(shard, &own) != 0) {
        snprintf(why, whylen, "cannot record the adoption (the store refuses writes)");
        store_delete_prefix(STORE, prefix, SHARD_HEX);
        return -EIO;
    }
    if (was.state == SHARDREC_RELEASED && was.export_kept) {
        /* an export of ours from an earlier stay: the shard went on from there (a newer epoch
         * came back), so nobody adopts it any more */
        char old[DIR_MAX];
        dir_of(old, sizeof old, true, shard, was.epoch);
        remove_dir(old);
    }
    adjust_gauges(prefix, 1);
    STAT_ADD(alarms_pending, json_integer_value(json_object_get(what, "alarms")));
    set_refused(shard, NULL);
    shard_set_owned(shard, true);
    if (earliest)
        alarms_hint(earliest); /* owned first: an alarm due already is not refused */
    return 0;
}

int shard_adopt(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = move_begin(shard, prefix, &t0, why, whylen);
    peer_t from;
    manifest_t m = {.shard = -1};
    char dir[DIR_MAX] = "";
    json_t *what = NULL;
    if (rc != 0 || (rc = peer_of(rq->peer, &from, why, whylen)) != 0)
        goto out;
    shardrec_t rec = REC[shard];
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
        *report = json_pack("{s:s,s:s,s:s,s:I,s:b,s:b}", "shard", prefix, "node",
                            shard_node_name(), "from", rq->peer, "epoch", (json_int_t)rec.epoch,
                            "already", 1, "serving", shard_owned(shard));
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
        snprintf(why, whylen, "this node holds its own copy of shard %s at epoch %u (refused "
                 "here: its cluster file disagrees); adopting would delete it: force=1 to "
                 "replace it", prefix, rec.epoch);
        free(text);
        rc = -EALREADY;
        goto out;
    }
    if (status != 200) {
        snprintf(why, whylen, "%s has no export of shard %s for this node (%d): release it "
                 "there first", rq->peer, prefix, status);
        free(text);
        rc = status == 404 ? -EALREADY : -EAGAIN;
        goto out;
    }
    rc = manifest_parse(text, len, &m, why, whylen);
    free(text);
    if (rc != 0)
        goto out;
    if (m.shard != shard || strcmp(m.from, rq->peer) != 0 ||
        strcmp(m.to, shard_node_name()) != 0) {
        snprintf(why, whylen, "the export %s serves is shard %03x from %s to %s, not shard %s "
                 "to this node", rq->peer, m.shard, m.from, m.to, prefix);
        rc = -EALREADY;
        goto out;
    }
    /* 2. fencing: never an epoch this node declined, holds or passed */
    if (m.epoch <= rec.declined || (rec.state != SHARDREC_NONE && m.epoch <= rec.epoch)) {
        snprintf(why, whylen, "the export is epoch %u, but this node %s epoch %u", m.epoch,
                 m.epoch <= rec.declined ? "declined (it was taken back at)" : "has been at",
                 m.epoch <= rec.declined ? rec.declined : rec.epoch);
        rc = -EALREADY;
        goto out;
    }
    /* 3. its files, checked as they come */
    dir_of(dir, sizeof dir, false, shard, m.epoch);
    if ((rc = fresh_dir(dir, why, whylen)) != 0)
        goto out;
    int64_t t_fetch = now_mono_ms();
    if ((rc = fetch_files(&from, &m, dir, why, whylen)) != 0)
        goto out;
    int64_t fetched = now_mono_ms();
    /* 4. in, counted */
    int64_t earliest = 0;
    if ((rc = ingest_checked(prefix, dir, &m, true, &what, &earliest, why, whylen)) != 0)
        goto out;
    crash_point("adopt-ingested");
    /* 5. recorded, served */
    if ((rc = take(shard, prefix, m.epoch, rq->peer, what, earliest, why, whylen)) != 0)
        goto out;
    int64_t t1 = now_mono_ms();
    *report = json_pack("{s:s,s:s,s:s,s:I,s:I,s:O,s:I,s:I,s:b}", "shard", prefix, "node",
                        shard_node_name(), "from", rq->peer, "epoch", (json_int_t)m.epoch,
                        "keys", (json_int_t)m.keys, "moved", what, "fetch_ms",
                        (json_int_t)(fetched - t_fetch), "ingest_ms", (json_int_t)(t1 - fetched),
                        "already", 0);
    log_info("shard %s adopted at epoch %u from %s: %llu keys in %lld ms", prefix, m.epoch,
             rq->peer, (unsigned long long)m.keys, (long long)(t1 - t0));
out:
    if (dir[0])
        remove_dir(dir);
    json_decref(what);
    manifest_clear(&m);
    pthread_mutex_unlock(&move_mu);
    return rc;
}

/* ---- reclaim, decline, finish ---- */

int shard_reclaim(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = move_begin(shard, prefix, &t0, why, whylen);
    manifest_t m = {.shard = -1};
    json_t *what = NULL;
    if (rc != 0)
        goto out;
    shardrec_t rec = REC[shard];
    if (rec.state != SHARDREC_RELEASED || !rec.export_kept) {
        snprintf(why, whylen, "shard %s has no export here to take back (%s at epoch %u)",
                 prefix, shardrec_state_name(rec.state), rec.epoch);
        rc = -EALREADY;
        goto out;
    }
    if (rec.epoch + 1 > SHARDREC_EPOCH_MAX) {
        snprintf(why, whylen, "shard %s has used up its epochs", prefix);
        rc = -EINVAL;
        goto out;
    }
    char dir[DIR_MAX];
    dir_of(dir, sizeof dir, true, shard, rec.epoch);
    if ((rc = read_manifest(dir, &m, why, whylen)) != 0 ||
        (rc = check_files(dir, &m, why, whylen)) != 0) {
        rc = rc == -EIO ? -EBADMSG : rc;
        goto out;
    }
    /* 1. fencing: the node it was for promises never to adopt it */
    peer_t to;
    char url[160];
    snprintf(url, sizeof url, "/shards/decline?shard=%s&epoch=%u&from=%s", prefix, rec.epoch,
             shard_node_name());
    int status = 0;
    json_t *ans = NULL;
    if (peer_of(rec.peer, &to, why, whylen) == 0 &&
        peer_step(&to, url, &status, &ans, why, whylen) == 0) {
        if (status != 200) {
            const char *err = json_string_value(json_object_get(ans, "error"));
            snprintf(why, whylen, "%s did not decline epoch %u of shard %s (%d: %s): it holds "
                     "it; finish the move instead", rec.peer, rec.epoch, prefix, status,
                     err ? err : "");
            json_decref(ans);
            rc = -EALREADY;
            goto out;
        }
        json_decref(ans);
        /* and its record says so (whatever answered that step): declined E, not holding it */
        snprintf(url, sizeof url, "/shards/record?shard=%s", prefix);
        json_t *r = NULL;
        bool fenced = false;
        if (peer_json(&to, "GET", url, &status, &r, why, whylen) == 0 && status == 200) {
            const char *st = json_string_value(json_object_get(r, "state"));
            json_int_t ep = json_integer_value(json_object_get(r, "epoch"));
            fenced = json_integer_value(json_object_get(r, "declined")) >= rec.epoch &&
                     !(st && strcmp(st, "owned") == 0 && ep >= rec.epoch);
        }
        json_decref(r);
        if (!fenced) {
            snprintf(why, whylen, "%s's record of shard %s does not show epoch %u declined: "
                     "the export stays", rec.peer, prefix, rec.epoch);
            rc = -EAGAIN;
            goto out;
        }
    } else if (!rq->force) {
        char cause[300];
        snprintf(cause, sizeof cause, "%s", why);
        snprintf(why, whylen, "cannot ask %s to decline epoch %u of shard %s (%s); retry when "
                 "it answers, or force=1 if it is gone for good and will never start on its "
                 "data again", rec.peer, rec.epoch, prefix, cause);
        rc = -EAGAIN;
        goto out;
    } else {
        log_warn("shard %s: taking back epoch %u without %s's word (force)", prefix, rec.epoch,
                 rec.peer);
    }
    /* 2. in again, counted; recorded at a new epoch; served */
    int64_t earliest = 0;
    if ((rc = ingest_checked(prefix, dir, &m, false, &what, &earliest, why, whylen)) != 0)
        goto out;
    if ((rc = take(shard, prefix, rec.epoch + 1, "", what, earliest, why, whylen)) != 0)
        goto out;
    remove_dir(dir);
    *report = json_pack("{s:s,s:s,s:I,s:O,s:b}", "shard", prefix, "node", shard_node_name(),
                        "epoch", (json_int_t)(rec.epoch + 1), "moved", what, "forced", rq->force);
    log_info("shard %s taken back at epoch %u (its export to %s was declined%s)", prefix,
             rec.epoch + 1, rec.peer, rq->force ? " or forced" : "");
out:
    json_decref(what);
    manifest_clear(&m);
    pthread_mutex_unlock(&move_mu);
    return rc;
}

int shard_decline(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = move_begin(shard, prefix, &t0, why, whylen);
    if (rc != 0)
        goto out;
    shardrec_t rec = REC[shard];
    if (rq->epoch < 1) {
        snprintf(why, whylen, "epoch must be 1 or more");
        rc = -EINVAL;
        goto out;
    }
    if (shard_owned(shard) || (rec.state != SHARDREC_NONE && rec.epoch >= rq->epoch)) {
        snprintf(why, whylen, "this node %s shard %s at epoch %u", shard_owned(shard) ? "serves"
                 : rec.state == SHARDREC_OWNED ? "holds" : "released", prefix, rec.epoch);
        rc = -EALREADY;
        goto out;
    }
    if (rec.declined < rq->epoch) {
        rec.declined = rq->epoch;
        if (put_record(shard, &rec) != 0) {
            snprintf(why, whylen, "cannot record the promise (the store refuses writes)");
            rc = -EIO;
            goto out;
        }
    }
    *report = json_pack("{s:s,s:s,s:I}", "shard", prefix, "node", shard_node_name(), "declined",
                        (json_int_t)rec.declined);
    log_info("shard %s: this node will never adopt its epoch %u (asked by %s)", prefix,
             rq->epoch, rq->peer[0] ? rq->peer : "an operator");
out:
    pthread_mutex_unlock(&move_mu);
    return rc;
}

int shard_finish(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    char prefix[SHARD_HEX + 1];
    int64_t t0;
    int shard = rq->shard;
    int rc = move_begin(shard, prefix, &t0, why, whylen);
    if (rc != 0)
        goto out;
    shardrec_t rec = REC[shard];
    if (rec.state != SHARDREC_RELEASED) {
        snprintf(why, whylen, "shard %s was not released by this node (%s)", prefix,
                 shardrec_state_name(rec.state));
        rc = -EALREADY;
        goto out;
    }
    if (rec.export_kept) {
        /* only once the node it went to holds it: the export may be the only copy */
        peer_t to;
        char url[64];
        snprintf(url, sizeof url, "/shards/record?shard=%s", prefix);
        int status = 0;
        json_t *r = NULL;
        if ((rc = peer_of(rec.peer, &to, why, whylen)) != 0 ||
            (rc = peer_json(&to, "GET", url, &status, &r, why, whylen)) != 0)
            goto out;
        const char *st = json_string_value(json_object_get(r, "state"));
        json_int_t ep = json_integer_value(json_object_get(r, "epoch"));
        bool holds = status == 200 && st &&
                     ((strcmp(st, "owned") == 0 && ep >= rec.epoch) ||
                      (strcmp(st, "released") == 0 && ep > rec.epoch));
        json_decref(r);
        if (!holds) {
            snprintf(why, whylen, "%s does not hold epoch %u of shard %s (yet): the export "
                     "stays", rec.peer, rec.epoch, prefix);
            rc = -EALREADY;
            goto out;
        }
        char dir[DIR_MAX];
        dir_of(dir, sizeof dir, true, shard, rec.epoch);
        rec.export_kept = false;
        if (put_record(shard, &rec) != 0) {
            snprintf(why, whylen, "cannot record the finish (the store refuses writes)");
            rc = -EIO;
            goto out;
        }
        remove_dir(dir);
        log_info("shard %s: %s holds epoch %u; its export here is deleted", prefix, rec.peer,
                 rec.epoch);
    }
    *report = json_pack("{s:s,s:s,s:s,s:I}", "shard", prefix, "node", shard_node_name(), "to",
                        rec.peer, "epoch", (json_int_t)rec.epoch);
out:
    pthread_mutex_unlock(&move_mu);
    return rc;
}

/* ---- queries (the admin thread) ---- */

json_t *shardmove_record(int shard)
{
    char sh[SHARD_HEX + 1];
    shard_hex(shard, sh);
    pthread_mutex_lock(&rec_mu);
    shardrec_t r = REC[shard];
    json_t *refused = REFUSED[shard] ? json_string(REFUSED[shard]) : json_null();
    pthread_mutex_unlock(&rec_mu);
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
    pthread_mutex_lock(&rec_mu);
    for (int s = 0; s < SHARD_COUNT;) {
        if (!REFUSED[s]) {
            s++;
            continue;
        }
        int e = s;
        while (e + 1 < SHARD_COUNT && REFUSED[e + 1] && strcmp(REFUSED[e + 1], REFUSED[s]) == 0)
            e++;
        char a[SHARD_HEX + 1], b[SHARD_HEX + 1], range[8];
        shard_hex(s, a);
        shard_hex(e, b);
        snprintf(range, sizeof range, e > s ? "%s-%s" : "%s", a, b);
        json_array_append_new(refused, json_pack("{s:s,s:s}", "shards", range, "why", REFUSED[s]));
        s = e + 1;
    }
    for (int s = 0; s < SHARD_COUNT; s++) {
        if (REC[s].state == SHARDREC_RELEASED && REC[s].export_kept) {
            char a[SHARD_HEX + 1];
            shard_hex(s, a);
            json_array_append_new(transit, json_pack("{s:s,s:I,s:s}", "shard", a, "epoch",
                                                     (json_int_t)REC[s].epoch, "to", REC[s].peer));
        }
    }
    pthread_mutex_unlock(&rec_mu);
    return json_pack("{s:o,s:o}", "refused", refused, "in_transit", transit);
}

int shardmove_export_path(int shard, const char *file, char *path, size_t len)
{
    pthread_mutex_lock(&rec_mu);
    shardrec_t r = REC[shard];
    pthread_mutex_unlock(&rec_mu);
    if (r.state != SHARDREC_RELEASED || !r.export_kept)
        return -ENOENT; /* a draft (not recorded yet) or a finished move is never served */
    bool known = file == NULL;
    for (int cf = 0; cf < CF__COUNT && !known; cf++) {
        char want[64];
        snprintf(want, sizeof want, "%s.sst", store_cf_name((store_cf_t)cf));
        known = strcmp(file, want) == 0;
    }
    if (!known)
        return -ENOENT;
    char dir[DIR_MAX];
    dir_of(dir, sizeof dir, true, shard, r.epoch);
    int n = snprintf(path, len, "%s/%s", dir, file ? file : MANIFEST_NAME);
    return n < 0 || (size_t)n >= len ? -ENOENT : 0;
}
