/* Threads: worker threads; main thread at start (actors_recover_all). */
/* Alarms, expiry, the sweep and crash recovery of a session: worker thread only (except
 * actors_recover_all, main thread at startup).
 *
 * Every session holds exactly one durable alarm while it exists: the earliest of
 *   - its oldest finished POST stream's expiry (last response + --finished-stream-ttl), found
 *     as the first key of the session's range in the `expiry` index;
 *   - its standalone stream's expiry (last write + --event-ttl), while it has events;
 *   - its own expiry (last touch + --session-ttl).
 * When the alarm fires, the sweep deletes what has expired, reading the expiry index (one key
 * per finished stream) and never the events, so a run costs O(expired streams): at most
 * SWEEP_BATCH streams per write batch and SWEEP_BATCHES batches per run; if more are due it
 * re-arms SWEEP_SOON_MS later, else at exactly the next expiry.
 *
 * POST streams that are still running are in memory whenever the actor is (a session with a
 * running call does not hibernate), so they need no index; a running call is never expired.
 * Events of a deleted stream go with one DeleteRange; the standalone stream keeps its record
 * (its seq) when its events expire, so an event id is never issued twice.
 */
#include "actor/actor.h"

#include "actor/alarm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/jsonparse.h"
#include "wire/jsonrpc.h"
#include "store/eventlog.h"
#include "store/sessionrec.h"
#include "wire/eventid.h"

#include <stdlib.h>
#include <string.h>

#define SWEEP_BATCH 256
#define SWEEP_BATCHES 10
#define SWEEP_SOON_MS 100
/* Range tombstones slow later seeks until flushed (DESIGN.md): flush after this many. */
#define TOMBSTONES_BEFORE_FLUSH 4096

static _Atomic long g_tombstones;

int64_t actor_unused_expiry(const actor_t *a)
{
    return a->created_ms + g_cfg.unused_session_ttl_s * 1000;
}

void actor_alarm_set(actor_t *a, int64_t due)
{
    if (due == a->alarm_due || actor_one_request(a))
        return;
    store_batch_t *b = actor_batch(a);
    if (a->alarm_due)
        sessionrec_delete_alarm(b, a->alarm_due, a->sid);
    if (due) {
        sessionrec_put_alarm(b, due, a->sid);
        worker_note_alarm(a->w, due);
    }
    if (!a->alarm_due && due)
        worker_stat_add(a->w, DS_ALARMS_PENDING, 1);
    else if (a->alarm_due && !due)
        worker_stat_add(a->w, DS_ALARMS_PENDING, -1);
    a->alarm_due = due;
    actor_persist_meta(a); /* the metadata names the key, so a wake can move it */
}

void actor_alarm_ensure(actor_t *a, int64_t due)
{
    if (!a->alarm_due || due < a->alarm_due)
        actor_alarm_set(a, due);
}

void actor_stream_finished(actor_t *a, stream_t *s)
{
    int64_t expiry = s->last_write_ms + g_cfg.finished_stream_ttl_s * 1000;
    eventlog_index_expiry(actor_batch(a), a->sid, expiry, s->num);
    a->stored_more = true;
    actor_alarm_ensure(a, expiry);
}

/* Deletes one finished POST stream: events, record, index key. */
static void delete_stream(actor_t *a, store_batch_t *b, int64_t expiry, uint64_t num)
{
    uint64_t bytes = eventlog_delete_stream(worker_store(a->w), b, a->sid, num, expiry);
    a->log_bytes -= bytes < a->log_bytes ? bytes : a->log_bytes;
    /* the metadata goes in the same commit: a wake takes the next stream number from the
     * stored "ns" and the newest stream record, and this may be the newest record, so after a
     * crash its number (and its events' ids, still held by a client) would be issued again */
    actor_persist_meta(a);
    g_tombstones++;
    worker_stat_add(a->w, DS_STREAMS_EXPIRED, 1);
}

/* Deletes finished streams expired by `now`; true when more are due than one run takes. */
struct sweep_run {
    actor_t *a;
    long n, in_batch;
    bool more, failed;
};

static bool sweep_one(void *arg, int64_t expiry, uint64_t num)
{
    struct sweep_run *r = arg;
    if (r->n == SWEEP_BATCH * SWEEP_BATCHES) {
        r->more = true;
        return false;
    }
    if (actor_find_stream(r->a, num))
        return true; /* resumed right now: it goes at the next sweep */
    delete_stream(r->a, actor_batch(r->a), expiry, num);
    r->n++;
    if (++r->in_batch == SWEEP_BATCH) {
        if (worker_commit(r->a->w) != 0) { /* bounded write batches */
            r->failed = true;              /* the turn failed: it is all undone */
            return false;
        }
        worker_touch(r->a->w, r->a);
        r->in_batch = 0;
    }
    return true;
}

static bool sweep_finished(actor_t *a, int64_t now, long *deleted)
{
    struct sweep_run r = {.a = a};
    eventlog_scan_expiry(worker_store(a->w), a->sid, now, sweep_one, &r);
    *deleted = r.n;
    return r.more;
}

/* The standalone stream's events, when it has had no write for --event-ttl (one whose record
 * cannot be read is left: its last write is not known). */
static void sweep_standalone(actor_t *a, int64_t now)
{
    stream_t *g = actor_get_stream(a, false, NULL);
    if (!g || g->conn.gen || !actor_newest_seq(a, STREAM_GET))
        return;
    if (g->last_write_ms + g_cfg.event_ttl_s * 1000 > now)
        return;
    actor_log_changing(a);
    eventlog_delete_events(actor_batch(a), a->sid, STREAM_GET);
    g_tombstones++;
    worker_stat_add(a->w, DS_STREAMS_EXPIRED, 1);
    a->log_bytes -= g->bytes < a->log_bytes ? g->bytes : a->log_bytes;
    g->bytes = 0;
    actor_stream_dirty(g);
    /* the record stays: its seq keeps ids unique when the stream is used again */
    log_debug("session %.8s: standalone stream events expired", a->sid);
}

int64_t sweep_next_due(int64_t now, bool more, int64_t session_expiry,
                       int64_t first_finished_expiry, int64_t standalone_expiry)
{
    int64_t due = session_expiry;
    if (more) /* a run's limit was hit: the rest soon, not at the next expiry */
        return now + SWEEP_SOON_MS < due ? now + SWEEP_SOON_MS : due;
    if (first_finished_expiry && first_finished_expiry < due)
        due = first_finished_expiry;
    if (standalone_expiry && standalone_expiry < due)
        due = standalone_expiry;
    /* something due now was skipped (a stream being resumed): look again soon */
    return due > now ? due : now + SWEEP_SOON_MS;
}

/* The next due time: the earliest of what is left. */
static int64_t next_due(actor_t *a, int64_t now, bool more)
{
    stream_t *g = actor_get_stream(a, false, NULL); /* unreadable: the session's expiry decides */
    int64_t ge = 0;
    if (g && actor_newest_seq(a, STREAM_GET)) {
        ge = g->last_write_ms + g_cfg.event_ttl_s * 1000;
        if (g->conn.gen && ge <= now) /* attached: not swept now (sweep_standalone); a TTL on */
            ge = now + g_cfg.event_ttl_s * 1000;
    }
    int64_t expiry = a->touched_ms + g_cfg.session_ttl_s * 1000;
    if (!a->used && actor_unused_expiry(a) < expiry)
        expiry = actor_unused_expiry(a);
    return sweep_next_due(now, more, expiry,
                          more ? 0 : eventlog_first_expiry(worker_store(a->w), a->sid), ge);
}

bool actor_on_alarm(actor_t *a, int64_t due)
{
    if (due != a->alarm_due)
        return true; /* moved since it was dispatched */
    int64_t now = now_wall_ms();
    STAT_INC(sweeps_total);
    if (a->kind == ACTOR_RECORD) {
        /* a record's one alarm is its expiry */
        log_debug("record %.8s expired", a->sid);
        actor_delete(a);
        return false;
    }
    if (a->kind == ACTOR_TASK) {
        /* a task's one alarm is its TTL (createdAt + ttlMs): a running job is cancelled and
         * the task is gone, so tasks/get answers it is not found */
        log_info("task %.8s expired (--task-ttl)", a->sid);
        actor_delete(a);
        return false;
    }
    if (a->kind == ACTOR_HANDLE) {
        /* a handle's one alarm is its expiry, --handle-ttl after its last use */
        int64_t expiry = a->touched_ms + g_cfg.handle_ttl_s * 1000;
        if (expiry <= now) {
            log_info("handle %.8s expired: unused for %lld s (--handle-ttl)", a->sid,
                     (long long)((now - a->touched_ms) / 1000));
            actor_delete(a);
            return false;
        }
        actor_alarm_set(a, expiry);
        return true;
    }
    if (!a->used && actor_unused_expiry(a) <= now) {
        if (actor_is_idle(a)) {
            /* nothing came after initialize: clients that open a session and never come back
             * (a probe, a CLI call that never sends DELETE) do not keep it for --session-ttl */
            log_info("session %.8s expired: no request after initialize in %lld s "
                     "(--unused-session-ttl)",
                     a->sid, (long long)((now - a->created_ms) / 1000));
            STAT_INC(sessions_unused_expired_total);
            actor_delete(a);
            return false;
        }
        actor_mark_used(a); /* in use after all (a stream attached): its own expiry applies */
    }
    if (a->touched_ms + g_cfg.session_ttl_s * 1000 <= now && actor_is_idle(a)) {
        log_info("session %.8s expired: untouched for %lld s (--session-ttl)", a->sid,
                 (long long)((now - a->touched_ms) / 1000));
        actor_delete(a);
        return false;
    }
    if (a->touched_ms + g_cfg.session_ttl_s * 1000 <= now) {
        /* past its TTL yet in use (a stream attached, a job running): in use is a touch, so
         * it is not deleted under its client, and its alarm moves a whole TTL on */
        log_debug("session %.8s: past --session-ttl but in use: touched", a->sid);
        a->touched_ms = now;
        actor_persist_meta(a);
    }
    worker_commit(a->w); /* the iterators below must see this turn's writes */
    long deleted = 0;
    bool more = sweep_finished(a, now, &deleted);
    sweep_standalone(a, now);
    worker_commit(a->w);
    int64_t next = next_due(a, now, more);
    actor_alarm_set(a, next);
    if (deleted)
        log_debug("session %.8s: sweep deleted %ld streams; next alarm in %lld ms", a->sid, deleted,
                  (long long)(next - now));
    if (g_tombstones > TOMBSTONES_BEFORE_FLUSH) {
        g_tombstones = 0;
        store_flush_async(worker_store(a->w), CF_EVENTS);
    }
    return true;
}

/* At most this many streams go in one trim, so one write is never stuck behind a huge one. */
#define TRIM_MAX_STREAMS 1024

struct trim_run {
    actor_t *a;
    uint64_t target;
    long n;
};

static bool trim_one(void *arg, int64_t expiry, uint64_t num)
{
    struct trim_run *r = arg;
    if (r->a->log_bytes <= r->target || r->n >= TRIM_MAX_STREAMS)
        return false;
    if (actor_find_stream(r->a, num))
        return true;
    delete_stream(r->a, actor_batch(r->a), expiry,
                  num); /* oldest first: the index is in expiry order */
    r->n++;
    worker_stat_add(r->a->w, DS_LOG_TRIMS, 1);
    return true;
}

void actor_trim_log(actor_t *a)
{
    worker_commit(a->w); /* the index and the records must see this turn's writes */
    uint64_t before = a->log_bytes;
    struct trim_run r = {a, (uint64_t)g_cfg.session_log_bytes / 4 * 3, 0};
    eventlog_scan_expiry(worker_store(a->w), a->sid, INT64_MAX, trim_one, &r);
    long n = r.n;
    if (n)
        log_info("session %.8s: over --session-log-bytes (%llu bytes), deleted its %ld oldest "
                 "finished streams (%llu bytes kept)",
                 a->sid, (unsigned long long)before, n, (unsigned long long)a->log_bytes);
    else
        log_debug("session %.8s: over --session-log-bytes with no finished stream to delete",
                  a->sid);
}

/* ---- crash recovery ---- */

json_t *actor_inflight(actor_t *a, const char *why)
{
    worker_commit(a->w);
    int err;
    json_t *list = eventlog_inflight_list(worker_store(a->w), a->sid, &err);
    if (err < 0) /* unread, not absent: the keys stay, and the session's next message reads
                  * them again */
        worker_mark_recover(a->w, a->sid, why);
    return list;
}

void actor_recover_after_reset(actor_t *a)
{
    const char *why;
    if (!store_writable(worker_store(a->w)) || !(why = worker_take_recover_mark(a->w, a->sid)))
        return;
    json_t *list = actor_inflight(a, why);
    if (json_array_size(list))
        actor_recover(a, list, why);
    json_decref(list);
}

void actor_recover(actor_t *a, json_t *list, const char *why)
{
    size_t i, n = 0;
    json_t *item;
    json_array_foreach(list, i, item) {
        uint64_t num = (uint64_t)json_integer_value(json_array_get(item, 0));
        json_t *id = json_array_get(item, 1);
        int err = 0;
        stream_t *s = num == STREAM_GET ? NULL : actor_load_stream(a, num, &err);
        if (err < 0) { /* its stream cannot be read: the key stays for the next load's recovery */
            worker_mark_recover(a->w, a->sid, why);
            continue;
        }
        /* live: a request that came after a recovery's read error, which left the mark for the
         * session's next message (never at startup, nor after a reset): it runs, and its key
         * stays until its answer */
        if (s && s->outstanding)
            continue;
        /* the key goes whether or not its stream is still there */
        eventlog_inflight_delete(actor_batch(a), a->sid, id, num);
        n++;
        if (!s)
            continue; /* the standalone stream, or gone */
        actor_stream_send(a, s, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, why, NULL));
    }
    /* every POST stream loaded above is over: finish it so the sweep can expire it */
    stream_t *s = a->streams;
    while (s) {
        stream_t *next = s->next;
        if (s->num != STREAM_GET && !s->outstanding) {
            if (!s->finished) {
                s->finished = true;
                actor_stream_finished(a, s);
            }
            actor_free_stream(a, s, true);
        }
        s = next;
    }
    if (n)
        log_info("session %.8s: %zu interrupted requests answered with an error (%.60s...)", a->sid,
                 n, why);
}

/* arg: the error's message (static) */
static void recover_session(void *arg, const char *sid, json_t *list)
{
    wmsg_t *m = wmsg_new(WM_RECOVER);
    memcpy(m->sid, sid, SESSION_ID_LEN + 1);
    m->u.recover.list = list; /* handed over whole: the sender keeps no part of it */
    m->u.recover.why = arg;
    worker_push(worker_for_session(m->sid), m);
}

long actors_recover_all(store_t *store)
{
    return eventlog_inflight_scan_all(store, recover_session,
                                      "The server restarted while this request was in flight; "
                                      "its result is lost. Send the request again.");
}

static void collect_inflight(void *arg, const char *sid, json_t *list)
{
    json_object_set_new(arg, sid, list);
}

json_t *actors_inflight_of_prefix(store_t *store, const char *prefix, size_t plen)
{
    json_t *by_sid = json_object();
    if (eventlog_inflight_scan_prefix(store, prefix, plen, collect_inflight, by_sid) < 0) {
        json_decref(by_sid); /* a read error stopped it: the rest is unread, not absent */
        return NULL;
    }
    return by_sid;
}

long actors_recover_moved(json_t *by_sid)
{
    long n = 0;
    const char *key;
    json_t *list;
    void *next;
    json_object_foreach_safe(by_sid, next, key, list) {
        /* taken out before it is sent: a worker's reference must be the only one (jansson's
         * counts are not for sharing across threads) */
        char sid[SESSION_ID_LEN + 1];
        snprintf(sid, sizeof sid, "%s", key);
        json_incref(list);
        json_object_del(by_sid, sid);
        n += (long)json_array_size(list);
        recover_session("This request's result was not stored before its session's shard "
                        "moved; the result is lost. Send the request again.",
                        sid, list);
    }
    json_decref(by_sid);
    return n;
}
