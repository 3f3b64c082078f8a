/* Threads: any thread (commits, reads); its own watcher thread (store-probe). */
/* The store's write health: RocksDB's background errors, the free-space guard, and the watcher
 * that probes a refusing store until it heals (not a partition whose error RocksDB does not
 * resume from: only a restart ends that, and the watcher sleeps); and the log of failed reads.
 * Any thread (commits and reads run on the workers and tool threads); the watcher is a thread
 * of its own ("store-probe"), started at the first refusal.
 *
 * A full disk (or any write error). RocksDB's answer to a failed write-ahead-log append is a
 * background error: every later write is refused at once, without touching the log, until its
 * error recovery succeeds (for ENOSPC its SstFileManager polls the free space every 5 s and
 * resumes once a memtable's worth is free: it flushes the memtables and starts a new log). It
 * recovers from nothing else while open (rocksdb_resumes below): the log and /healthz say so. Two
 * things would abort the process instead, because Debian's librocksdb keeps its assertions and
 * a WritableFileWriter that saw an error asserts at its next append or flush:
 *   - RocksDB's own info LOG, written on the same disk: a failed append there is followed by
 *     the next message (the SstFileManager logs every 5 s). The info log is therefore kept at
 *     FATAL (open-time header lines only); our own log says what happened.
 *   - a flush we start (store_flush, store_flush_async) or rocksdb_close: both flush the
 *     current WAL writer. So neither runs while writes are refused (store_writable), and a
 *     shutdown in that state leaves the database unclosed: what was acknowledged is in the WAL.
 * And a third that no option avoids: RocksDB 7.8's recovery switches to a new WAL only by
 * flushing a memtable; if every memtable was empty when the append failed, the failed writer
 * stays current and the first write after the recovery asserts. Two guards keep the process
 * away from it:
 *   - a free-space floor (--min-free-space): before a commit, the store compares the free
 *     space of the data directory's filesystem (statvfs, looked at again after a second or
 *     once the bytes written since use up the margin) with the floor and refuses the commit
 *     itself, exactly as RocksDB would, but without a failed append. RocksDB fails only when
 *     something else fills the disk faster than that;
 *   - a key written at open (a memtable is never empty when the first write fails), and the
 *     probe writes only once the free space is back above the floor.
 */
#include "store/internal.h"

#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

/* How often the watcher probes a refusing store, and the free-space guard looks again. */
#define PROBE_INTERVAL_MS 1000
#define SPACE_RECHECK_MS 1000
/* A run of failed reads with no gap this long is one episode: logged once. */
#define READ_EPISODE_QUIET_MS (60 * 1000)
/* RocksDB resumes after ENOSPC only with a memtable's worth free (its SstFileManager): a
 * store's, or more than a partition's. */
#define ROCKSDB_RESUME_FREE_BYTES ((int64_t)CF_WRITE_BUFFER_BYTES)

static int64_t (*free_bytes_source)(const char *dir);

static int64_t open_files_budget; /* 0: none (STORE_MAX_OPEN_FILES each) */

void store_set_open_files_budget(int64_t files)
{
    open_files_budget = files;
}

int store_open_files_per_part(int nparts)
{
    int64_t each = open_files_budget > 0 ? open_files_budget / (nparts > 0 ? nparts : 1)
                                         : STORE_MAX_OPEN_FILES;
    return each < STORE_MIN_OPEN_FILES   ? STORE_MIN_OPEN_FILES
           : each > STORE_MAX_OPEN_FILES ? STORE_MAX_OPEN_FILES
                                         : (int)each;
}

void store_set_free_bytes_source(int64_t (*fn)(const char *dir))
{
    free_bytes_source = fn;
}

/* Free bytes on the filesystem of s->dir, or -1. */
int64_t store_free_bytes(const store_t *s)
{
    if (free_bytes_source)
        return free_bytes_source(s->dir);
    struct statvfs v;
    if (statvfs(s->dir, &v) != 0)
        return -1;
    return (int64_t)v.f_bavail * (int64_t)v.f_frsize;
}

void store_space_why(const store_t *s, int64_t free_now, const char *when, char *why, size_t whylen)
{
    snprintf(why, whylen,
             "No space left on device: only %lld bytes free on the data directory's filesystem%s, "
             "below --min-free-space %lld",
             (long long)free_now, when, (long long)s->min_free);
}

/* The guard: true when `size` more bytes leave at least min_free free. Cheap on the hot path:
 * statvfs only after a second, or once the margin it gave is used up. */
bool store_space_ok(store_t *s, size_t size, int64_t *free_now)
{
    *free_now = -1;
    if (!s->min_free)
        return true;
    int64_t now = now_mono_ms();
    long long left = atomic_fetch_sub(&s->space_budget, (long long)size) - (long long)size;
    if (left > 0 && now - atomic_load(&s->space_checked) < SPACE_RECHECK_MS)
        return true;
    int64_t f = store_free_bytes(s);
    if (f < 0)
        return true; /* cannot tell: let RocksDB decide */
    *free_now = f;
    atomic_store(&s->space_checked, now);
    atomic_store(&s->space_budget, (long long)(f - s->min_free));
    return f - (int64_t)size >= s->min_free;
}

bool store_space_for(store_t *s, uint64_t bytes, int64_t *free_now, int64_t *min_free)
{
    *min_free = s->min_free;
    int64_t f = store_free_bytes(s);
    *free_now = f;
    if (f < 0)
        return true; /* cannot tell: as the guard, let the writes decide */
    bool ok = f - (int64_t)bytes >= s->min_free;
    /* the guard's budget charged with the files to come (before they are written: a commit
     * meanwhile does not take their room) */
    atomic_store(&s->space_budget, (long long)(f - s->min_free - (ok ? (int64_t)bytes : 0)));
    atomic_store(&s->space_checked, now_mono_ms());
    return ok;
}

void store_space_recheck(store_t *s)
{
    atomic_store(&s->space_budget, 0); /* the next commit asks statvfs */
}

bool store_on_fs_of(const store_t *s, const char *path)
{
    struct stat a, b;
    return stat(s->dir, &a) != 0 || stat(path, &b) != 0 || a.st_dev == b.st_dev;
}

/* A key in the default column family: its memtable is never empty when a write fails. */
int store_write_keeper(store_t *s, int part, char **rerr)
{
    static const char key[] = "mcpd-keeper";
    char v[24];
    int n = snprintf(v, sizeof v, "%lld", (long long)now_wall_ms());
    rocksdb_put_cf(s->part[part].db, s->wopts, s->part[part].cf[0], key, sizeof key - 1, v,
                   (size_t)n, rerr);
    return *rerr ? -EIO : 0;
}

/* ---- write health ---- */

bool store_writable(const store_t *s)
{
    return atomic_load_explicit(&((store_t *)s)->refusing, memory_order_acquire) == 0;
}

bool store_write_error(store_t *s, char *why, size_t whylen, int64_t *since_ms)
{
    if (store_writable(s))
        return false;
    pthread_mutex_lock(&s->mu);
    snprintf(why, whylen, "%s", s->why);
    if (since_ms)
        *since_ms = s->since_ms;
    pthread_mutex_unlock(&s->mu);
    return true;
}

void store_on_writable(store_t *s, void (*fn)(void))
{
    s->on_writable = fn;
}

void store_mark_writable(store_t *s, int part, const char *how)
{
    pthread_mutex_lock(&s->mu);
    unsigned long long was = atomic_load(&s->refusing);
    bool changed = was == 1ULL << part; /* the last partition that refused */
    if (was & 1ULL << part)
        atomic_store_explicit(&s->refusing, was & ~(1ULL << part), memory_order_release);
    if (s->stuck_parts & 1ULL << part)
        pthread_cond_broadcast(&s->cv); /* a watcher in its untimed wait looks again */
    s->stuck_parts &= ~(1ULL << part);
    if (changed) {
        log_info("store: writes succeed again (%s) after %lld s of refusals (%lld writes "
                 "refused); serving normally",
                 how, (long long)((now_wall_ms() - s->since_ms) / 1000), s->refused);
    }
    pthread_mutex_unlock(&s->mu);
    if (changed && s->on_writable)
        s->on_writable();
}

static void note_stuck(store_t *s, int part, const char *err);
static bool stuck_news(const store_t *s, const char *err);
static bool rocksdb_resumes(const char *err);

/* Under mu: partition `part` refuses for an error RocksDB does not resume from, after another
 * (stuck_news is news once): logged once, and not probed. */
static void note_stuck_too(store_t *s, int part, const char *err)
{
    if (!(s->stuck_parts & 1ULL << part))
        log_error("store: partition %d fails too (%s): the same restart ends it", part, err);
    else
        log_debug("store: write refused: %s", err);
    s->stuck_parts |= 1ULL << part;
}

/* One tiny write: succeeds once RocksDB has recovered from its background error. One that
 * fails with an error RocksDB does not resume from is noted (the refusal may have begun as the
 * guard's, or as a full disk's whose recovery then failed otherwise). */
static bool probe_write(store_t *s, int part)
{
    static const char key[] = "mcpd-write-probe";
    char v[24];
    int n = snprintf(v, sizeof v, "%lld", (long long)now_wall_ms());
    char *err = NULL;
    STAT_INC(store_probes_total);
    rocksdb_put_cf(s->part[part].db, s->wopts, s->part[part].cf[0], key, sizeof key - 1, v,
                   (size_t)n, &err);
    if (err) {
        pthread_mutex_lock(&s->mu);
        if (stuck_news(s, err))
            note_stuck(s, part, err);
        else if (!rocksdb_resumes(err))
            note_stuck_too(s, part, err);
        pthread_mutex_unlock(&s->mu);
        rocksdb_free(err);
        return false;
    }
    return true;
}

static void *watcher_main(void *arg)
{
    store_t *s = arg;
    log_set_thread_name("store-probe");
    pthread_mutex_lock(&s->mu);
    while (!s->closing && atomic_load(&s->refusing)) {
        if (!(atomic_load(&s->refusing) & ~s->stuck_parts)) {
            /* every refusing partition waits for a restart: no probe would succeed, so none
             * is made (woken by another partition's refusal, or the close) */
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += PROBE_INTERVAL_MS / 1000;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (s->closing || !atomic_load(&s->refusing))
            break;
        bool by_guard = s->refused_by_guard;
        unsigned long long stuck = s->stuck_parts;
        pthread_mutex_unlock(&s->mu);
        /* no write until the space is back: a probe that failed on a fresh log writer is
         * what RocksDB cannot recover from (the file comment) */
        int64_t f = store_free_bytes(s);
        int64_t need = by_guard
                           ? s->min_free
                           : (s->min_free > ROCKSDB_RESUME_FREE_BYTES ? s->min_free
                                                                      : ROCKSDB_RESUME_FREE_BYTES);
        if (f < 0 || f >= need) {
            unsigned long long parts = atomic_load(&s->refusing) & ~stuck;
            for (int i = 0; i < s->nparts; i++)
                if (parts & 1ULL << i && probe_write(s, i))
                    store_mark_writable(s, i,
                                        by_guard ? "free space is back above --min-free-space"
                                                 : "a probe write");
        }
        pthread_mutex_lock(&s->mu);
    }
    s->watcher_running = false;
    pthread_cond_broadcast(&s->cv); /* store_close may wait for this */
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void store_count_refused(store_t *s)
{
    STAT_INC(store_errors_total);
    pthread_mutex_lock(&s->mu);
    s->refused++;
    pthread_mutex_unlock(&s->mu);
}

/* Whether RocksDB resumes writes by itself after the background error `err`, while open.
 * RocksDB 7.8 recovers on its own from a full disk only (its SstFileManager polls the free
 * space); any other background error (an I/O error, a failed read of a table file in a flush
 * or a compaction, a corrupt block) stops its writes until the database is reopened, and its
 * C API has no Resume(). "No space left on device" is RocksDB's own subcode text. */
static bool rocksdb_resumes(const char *err)
{
    return strstr(err, "No space left on device") != NULL;
}

/* Whether err is RocksDB's "Corruption": a block that failed its checksum, or a file it
 * could not make sense of. */
static bool is_corruption(const char *err)
{
    return strncmp(err, "Corruption", 10) == 0;
}

/* Under mu: partition `part` refuses with an error RocksDB does not resume from (err, its
 * message): /healthz's reason and one log line say what ends it. A restart first, in either
 * case: what was acknowledged is in the write-ahead log. A "Corruption" may be a damaged table
 * file, which a restart meets again (its next compaction, or the start itself is refused);
 * or bytes that came back wrong once, or a flush's or compaction's own new file, which it
 * does not (that file was never installed): so the restore comes only when it comes back. */
static void note_stuck(store_t *s, int part, const char *err)
{
    s->needs_restart = true;
    s->stuck_corrupt = is_corruption(err);
    s->stuck_parts |= 1ULL << part;
    char where[32] = "";
    if (s->nparts > 1)
        snprintf(where, sizeof where, "partition %d: ", part);
    if (s->stuck_corrupt) {
        snprintf(s->why, sizeof s->why,
                 "%s%.120s; restart mcpactord; if it comes back, a table file is damaged: restore "
                 "--data-dir from a backup, or move it aside",
                 where, err);
        log_error("store: a write failed (%s%s): RocksDB met data that failed its checks and does "
                  "not resume writes while the store is open, so every write is refused "
                  "(requests that need a write get 503 or a -32603 error, /healthz says 503). "
                  "Restart mcpactord (what was acknowledged is in the write-ahead log); if the "
                  "error comes back (the next compaction, or a refused start), a table file is "
                  "damaged: check the disk (dmesg), then restore --data-dir from a backup, or "
                  "move it aside and start on a new one",
                  where, err);
        return;
    }
    snprintf(s->why, sizeof s->why, "%s%.180s; restart mcpactord to resume writes", where, err);
    log_error("store: a write failed (%s%s); RocksDB does not resume writes after this error "
              "while the store is open, so every write is refused until mcpactord restarts "
              "(requests that need a write get 503 or a -32603 error, /healthz says 503). What "
              "was acknowledged is in the write-ahead log and is replayed at the start: check "
              "the disk (dmesg), then restart",
              where, err);
}

/* Under mu: whether err is news for note_stuck: the first error RocksDB does not resume from,
 * or a corruption after an I/O error (its advice goes further). */
static bool stuck_news(const store_t *s, const char *err)
{
    if (rocksdb_resumes(err))
        return false;
    return !s->needs_restart || (is_corruption(err) && !s->stuck_corrupt);
}

/* A write failed (or the guard refused it): counted every time, logged once per transition
 * (the end's line has the count), watched until it heals. An error RocksDB does not resume
 * from is logged as such, and the reason /healthz gives says what ends it (note_stuck). */
void store_mark_refusing(store_t *s, int part, const char *err, bool by_guard)
{
    STAT_INC(store_errors_total);
    pthread_mutex_lock(&s->mu);
    unsigned long long was = atomic_load(&s->refusing);
    if (!was || (s->refused_by_guard && !by_guard))
        s->refused_by_guard = by_guard; /* a RocksDB error outranks the guard's refusal */
    atomic_store_explicit(&s->refusing, was | 1ULL << part, memory_order_release);
    if (!was) {
        s->since_ms = now_wall_ms();
        s->refused = 0;
        s->needs_restart = false;
        s->stuck_corrupt = false;
        s->stuck_parts = 0;
        if (s->watcher_running)
            pthread_cond_broadcast(&s->cv); /* one still in its untimed wait */
    } else if (!(was & 1ULL << part)) {
        pthread_cond_broadcast(&s->cv); /* a watcher waiting on stuck partitions probes it */
    }
    if (!by_guard && stuck_news(s, err)) {
        note_stuck(s, part, err); /* first, or after a refusal that would have ended */
    } else if (!by_guard && !rocksdb_resumes(err)) {
        note_stuck_too(s, part, err);
    } else if (!was) {
        snprintf(s->why, sizeof s->why, "%s", err);
        log_error("store: a write failed (%s); writes are refused until the store recovers "
                  "(requests that need a write get 503 or a -32603 error, /healthz says 503)",
                  err);
    } else {
        log_debug("store: write refused: %s", err);
    }
    if (!was && !s->watcher_running && !s->closing &&
        pthread_create(&s->watcher, NULL, watcher_main, s) == 0) {
        pthread_detach(s->watcher);
        s->watcher_running = true;
    }
    s->refused++;
    pthread_mutex_unlock(&s->mu);
}

/* ---- read errors ---- */

/* A failed read is counted every time and logged once per episode, as refused writes are: a
 * client that gets 503 + Retry-After for it retries, and each retry reads again. The episode
 * ends once none has failed for READ_EPISODE_QUIET_MS (the next one is logged again). */
void store_read_failed(store_t *s, const char *what, const char *err)
{
    STAT_INC(store_errors_total);
    int64_t now = now_mono_ms();
    pthread_mutex_lock(&s->mu);
    bool first = !s->read_failed_ms || now - s->read_failed_ms >= READ_EPISODE_QUIET_MS;
    long long before = s->read_failures;
    s->read_failures = first ? 1 : s->read_failures + 1;
    s->read_failed_ms = now;
    pthread_mutex_unlock(&s->mu);
    if (!first) {
        log_debug("store: %s: %s", what, err);
        return;
    }
    char earlier[64] = "";
    if (before)
        snprintf(earlier, sizeof earlier, "; %lld in the episode before", before);
    log_error("store: %s: %s (each failed read counts in store_errors_total; more are logged at "
              "debug level until none fails for %d s%s)",
              what, err, READ_EPISODE_QUIET_MS / 1000, earlier);
}
