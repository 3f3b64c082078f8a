/* Threads: worker threads (their own loops, or the HTTP threads' with --workers 0); any
 * thread delivers; main thread starts, drains and stops them. */
/* Actor workers. Each worker thread runs its own event_base; see worker.h for the turn.
 *
 * Mailbox bound: an HTTP thread admits a request only while the session's count of queued,
 * unhandled requests is below --mailbox; the count is the session's own, kept by its full id in
 * the worker's table of counts (mbox.c: a bucket with a lock of its own, no lookup of the
 * actor), so another session's requests never count against it. Internal messages (tool
 * output, closed connections) are never refused: they must not be lost.
 */
#include "actor/worker_internal.h"

#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/refuse.h"
#include "core/config.h"
#include "core/jshare.h"
#include "core/log.h"
#include "core/principal.h"
#include "core/shard.h"
#include "core/ptrmap.h"
#include "core/stats.h"
#include "actor/job.h"

#include <errno.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static worker_t *W;
static int NW;
/* The store's partitions: more than one, a session's worker is its partition's (below). */
static int NP = 1;
static _Thread_local worker_t *t_current; /* worker_current() */
static store_t *STORE;
static const actor_ops_t *OPS;
static frame_sink_fn SINK;

worker_t *worker_for_session(const char *sid)
{
    /* a partitioned store: the worker of the id's partition (its shard modulo the count), so
     * that with one partition per worker each commits to its own partition alone; with fewer
     * partitions than workers, partition p's workers are p, p + NP, ..., one of them by the
     * routing prefix's hash */
    if (NP > 1) {
        int p = store_part_of_id(sid, SESSION_ROUTE_LEN, NP);
        if (NP >= NW)
            return &W[p % NW];
        uint64_t k = (uint64_t)((NW - 1 - p) / NP + 1);
        return &W[p + NP * (int)(hash_id(sid, SESSION_ROUTE_LEN) % k)];
    }
    /* the routing prefix only: a 2026-07-28 request that carries a requestState gets an id
     * near its record's (session_id_new_near), so both meet on one worker */
    return &W[hash_id(sid, SESSION_ROUTE_LEN) % (uint64_t)NW];
}

/* SplitMix64's finalizer: a well-spread 64-bit value from a counter. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Whether shard sh's partition is one of HTTP thread t's worker's (see worker_for_session). */
static bool shard_for_thread(int sh, int t)
{
    return NP >= NW ? (sh % NP) % NW == t : sh % NP == t % NP;
}

/* The first step of worker_place_on_thread with a partitioned store: an owned shard whose
 * partition is one of the thread's worker's, drawn uniformly among those (owned shards drawn
 * from sid's random characters until one is; a node that owns few such shards gets the next
 * one after sid's own). false when there is none. */
static bool place_by_shard(char *sid, uint32_t http_thread)
{
    int from = shard_of(sid);
    int t = (int)http_thread;
    if (from < 0)
        return false;
    uint64_t seed = hash_id(sid, SESSION_ID_LEN);
    for (int i = 0; i < 64 * NW; i++) {
        int sh = shard_pick(mix64(seed + (uint64_t)i));
        if (sh >= 0 && shard_for_thread(sh, t)) {
            shard_put(sid, sh);
            return true;
        }
    }
    for (int i = 0; i < SHARD_COUNT; i++) {
        int sh = (from + i) % SHARD_COUNT;
        if (shard_for_thread(sh, t) && shard_owned(sh)) {
            shard_put(sid, sh);
            return true;
        }
    }
    return false;
}

bool worker_is_on_thread(const worker_t *w, uint32_t http_thread)
{
    return w->colocated && http_thread < (uint32_t)NW && w == &W[http_thread];
}

void worker_place_on_thread(char *sid, uint32_t http_thread)
{
    if (NW <= 1 || !W[0].colocated || http_thread >= (uint32_t)NW)
        return;
    /* a partitioned store: the shard first (its partition); with fewer partitions than
     * workers, then the routing characters below among the partition's workers */
    if (NP > 1 && (!place_by_shard(sid, http_thread) || NP >= NW))
        return;
    /* the 20 bits after the shard, stepped from their random start: each step lands on a
     * worker by the hash, so about NW steps find this one (and 4096 cannot all miss) */
    enum { FROM = SHARD_HEX, N = SESSION_ROUTE_LEN - SHARD_HEX };
    static const char hex[] = "0123456789abcdef";
    unsigned v = 0;
    for (int i = 0; i < N; i++)
        v = v << 4 |
            (unsigned)(sid[FROM + i] <= '9' ? sid[FROM + i] - '0' : sid[FROM + i] - 'a' + 10);
    for (int tries = 0; tries < 4096; tries++) {
        if (worker_for_session(sid) == &W[http_thread])
            return;
        v = (v + 1) & ((1u << (4 * N)) - 1);
        for (int i = 0; i < N; i++)
            sid[FROM + i] = hex[(v >> (4 * (N - 1 - i))) & 15];
    }
}

worker_t *worker_current(void)
{
    return t_current;
}

worker_t *worker_enter(worker_t *w)
{
    worker_t *prev = t_current;
    t_current = w;
    return prev;
}

void worker_leave(worker_t *prev)
{
    t_current = prev;
}

const actor_ops_t *worker_ops(const worker_t *w)
{
    (void)w;
    return OPS;
}

store_t *worker_store(worker_t *w)
{
    (void)w;
    return STORE;
}

store_batch_t *worker_batch(worker_t *w)
{
    ASSERT_OWNER(w);
    return w->batch;
}

struct event_base *worker_base(worker_t *w)
{
    return w->base;
}

void worker_push(worker_t *w, wmsg_t *m)
{
    mq_push(&w->inbox, &m->link);
}

void workers_broadcast(json_t *note, int what)
{
    for (int i = 0; i < NW; i++) {
        wmsg_t *m = wmsg_new(WM_BROADCAST);
        m->u.bcast.note = json_deep_copy(note); /* each worker owns its copy */
        m->u.bcast.what = what;
        worker_push(&W[i], m);
    }
    json_decref(note);
}

admit_t worker_admit(worker_t *w, wmsg_t *m)
{
    /* what a backed-up worker holds in all, a relaxed load of the line the push writes next:
     * the inbox's waiting messages (with the batch the worker has taken, twice that at most) */
    if (atomic_load_explicit(&w->inbox.depth, memory_order_relaxed) >=
        (size_t)g_cfg.mailbox * WORKER_QUEUE_MAX) {
        STAT_INC(mailbox_full_total);
        return ADMIT_WORKER_FULL;
    }
    unsigned b = mbox_bucket(w->mbox, m->sid);
    int depth = mbox_add(w->mbox, b, m->sid, (int)g_cfg.mailbox);
    if (depth == 0) {
        STAT_INC(mailbox_full_total);
        return ADMIT_SESSION_FULL;
    }
    stats_note_mailbox_depth(depth);
    m->mbox = (uint16_t)(b + 1);
    return ADMIT_OK;
}

void worker_touch(worker_t *w, struct actor *a)
{
    if (a->touch_epoch == w->epoch)
        return;
    a->touch_epoch = w->epoch;
    if (w->ntouched == w->cap_touched) {
        w->cap_touched = w->cap_touched ? w->cap_touched * 2 : 16;
        w->touched = xrealloc(w->touched, w->cap_touched * sizeof *w->touched);
    }
    memcpy(w->touched[w->ntouched++], a->sid, SESSION_ID_LEN + 1);
}

void worker_fail_turn(worker_t *w, struct actor *a)
{
    worker_touch(w, a);
    if (!w->turn_failed) /* the read is its cause, not an earlier refused write (a second read
                          * error of the same message leaves the first one's verdict) */
        w->fail_read = true;
    w->turn_failed = true;  /* worker_commit keeps nothing more of it */
    w->fail_message = true; /* fail_turn once the message is handled (on_message), else at the
                               turn's end */
}

void worker_defer_reply(worker_t *w, job_t *j, uint32_t wait_seq, json_t *value)
{
    if (w->ndeferred == w->cap_deferred) {
        w->cap_deferred = w->cap_deferred ? w->cap_deferred * 2 : 16;
        w->deferred = xrealloc(w->deferred, w->cap_deferred * sizeof *w->deferred);
    }
    w->deferred[w->ndeferred++] = (deferred_t){j, wait_seq, value};
}

void worker_stat_add(worker_t *w, dstat_t which, long long n)
{
    w->dstats[which] += n;
}

void worker_give_at_commit(worker_t *w, principal_t *p, int r, give_mode_t mode)
{
    if (w->ngives == w->cap_gives) {
        w->cap_gives = w->cap_gives ? w->cap_gives * 2 : 16;
        w->gives = xrealloc(w->gives, w->cap_gives * sizeof *w->gives);
    }
    w->gives[w->ngives++] = (struct give){principal_ref(p), r, mode};
}

/* The commit stored the deletes: their units go back. ok false: it did not, they stay held. */
static void settle_gives(worker_t *w, bool ok)
{
    for (size_t i = 0; i < w->ngives; i++) {
        struct give *g = &w->gives[i];
        if (ok && g->mode == GIVE_BOTH)
            principal_give(g->p, (pres_t)g->r);
        else if (ok)
            principal_give_global((pres_t)g->r);
        principal_unref(g->p);
    }
    w->ngives = 0;
}

static void *recover_key(const char *sid)
{
    return (void *)(uintptr_t)(hash_id(sid, SESSION_ID_LEN) | 1);
}

void worker_mark_recover(worker_t *w, const char *sid, const char *why)
{
    ptrmap_put(&w->recover, recover_key(sid), (void *)(uintptr_t)why);
}

const char *worker_take_recover_mark(worker_t *w, const char *sid)
{
    /* a hash collision only costs a needless scan of an empty range */
    return w->recover.n ? ptrmap_del(&w->recover, recover_key(sid)) : NULL;
}

void worker_after_commit(worker_t *w, after_commit_fn fn, void *arg)
{
    if (w->nafters == w->cap_afters) {
        w->cap_afters = w->cap_afters ? w->cap_afters * 2 : 8;
        w->afters = xrealloc(w->afters, w->cap_afters * sizeof *w->afters);
    }
    w->afters[w->nafters++] = (struct after){fn, arg};
}

/* The turn's worker_after_commit calls, in order (by index: one that registers another, which
 * none does today, runs in the same pass). */
static void run_afters(worker_t *w, bool committed)
{
    for (size_t i = 0; i < w->nafters; i++)
        w->afters[i].fn(w, w->afters[i].arg, committed);
    w->nafters = 0;
}

/* Everything so far is stored: frames queued until now may go, counters count it, waiting
 * state operations get their answers, what waited for the commit runs. */
static void commit_succeeded(worker_t *w)
{
    for (int i = 0; i < w->n_http; i++)
        w->out[i].safe = w->out[i].last;
    w->epoch++;
    w->ntouched = 0;
    static const size_t target[DS__COUNT] = {
        [DS_EVENTS_STORED] = offsetof(stats_t, events_stored_total),
        [DS_EVENTS_EVICTED] = offsetof(stats_t, events_evicted_total),
        [DS_SESSIONS_STORED] = offsetof(stats_t, sessions_stored),
        [DS_SESSIONS_DELETED] = offsetof(stats_t, sessions_deleted_total),
        [DS_ALARMS_PENDING] = offsetof(stats_t, alarms_pending),
        [DS_STREAMS_EXPIRED] = offsetof(stats_t, streams_expired_total),
        [DS_LOG_TRIMS] = offsetof(stats_t, log_trims_total),
        [DS_INPUT_RECORDS_STORED] = offsetof(stats_t, input_records_stored),
        [DS_HANDLES_STORED] = offsetof(stats_t, handles_stored),
        [DS_TASKS_STORED] = offsetof(stats_t, tasks_stored),
    };
    for (int i = 0; i < DS__COUNT; i++) {
        if (w->dstats[i])
            STAT_ADD_AT(target[i], w->dstats[i]);
        w->dstats[i] = 0;
    }
    for (size_t i = 0; i < w->ndeferred; i++)
        job_reply(w->deferred[i].job, w->deferred[i].wait_seq, w->deferred[i].value, NULL);
    w->ndeferred = 0;
    settle_gives(w, true);
    if (w->nafters)
        run_afters(w, true);
}

int worker_commit(worker_t *w)
{
    if (w->turn_failed) {
        /* later writes of a failed turn may build on what was lost: none of them is kept */
        actor_flush_dirty(w);
        store_batch_clear(w->batch);
        return -EIO;
    }
    /* The frames queued so far become sendable at this commit, and they rely on the metadata
     * of their streams and sessions (numbering, alarm, request ids): it goes in now, not only
     * at the end of the turn. */
    actor_flush_dirty(w);
    if (store_batch_count(w->batch) && store_commit(STORE, w->batch) != 0) {
        w->turn_failed = true;
        return -EIO;
    }
    commit_succeeded(w);
    return 0;
}

/* The end of a turn whose writes the store refused: nothing it queued after its last good
 * commit goes out as it was (refuse.h), every actor it touched is reset, and whatever waited
 * for the commit learns that it failed. */
static void fail_turn(worker_t *w)
{
    STAT_INC(turns_refused_total);
    const char *why = w->fail_read ? READ_FAILED_TURN : REFUSE_MESSAGE;
    for (int i = 0; i < w->n_http; i++) {
        outq_t *q = &w->out[i];
        mq_node_t *n = q->safe ? q->safe->next : q->first;
        if (q->safe)
            q->safe->next = NULL;
        else
            q->first = NULL;
        q->last = q->safe;
        while (n) {
            mq_node_t *next = n->next;
            q->n--;
            hmsg_t *r = refuse_frame((hmsg_t *)n, why);
            if (r)
                worker_send_http(w, r);
            n = next;
        }
    }
    /* the list is taken first: a reset queues frames, which touches nothing new */
    size_t n = w->ntouched;
    char(*touched)[SESSION_ID_LEN + 1] = w->touched;
    w->touched = NULL;
    w->ntouched = w->cap_touched = 0;
    for (size_t i = 0; i < n; i++) {
        /* marked even when it is gone from memory (a refused DELETE freed it): its requests
         * still in flight in the store are answered at its next load */
        worker_mark_recover(w, touched[i], why);
        struct actor *a = worker_find_actor(w, touched[i]);
        if (a)
            actor_reset(a, why);
    }
    free(touched);
    for (size_t i = 0; i < w->ndeferred; i++) {
        json_decref(w->deferred[i].value);
        job_reply_fail(w->deferred[i].job, w->deferred[i].wait_seq, MCPD_ERR_INTERNAL, JERR_STORAGE,
                       why);
    }
    w->ndeferred = 0;
    memset(w->dstats, 0, sizeof w->dstats);
    settle_gives(w, false);
    if (w->nafters)
        run_afters(w, false);
    w->alarm_hint = 0;
    w->turn_failed = w->fail_message = w->fail_read = false;
    w->epoch++;
}

/* A message that worker_fail_turn failed ends its failure before the worker's next message, not
 * at the turn's end: what others queued before it was committed (the read that failed came
 * after a commit), and what the next ones queue is theirs. The refusals go out with the turn;
 * the alarm hints stay (of keys committed before; one more costs a re-arm). */
static void end_failed_message(worker_t *w)
{
    int64_t hint = w->alarm_hint;
    fail_turn(w);
    w->alarm_hint = hint;
    for (int i = 0; i < w->n_http; i++)
        w->out[i].safe = w->out[i].last;
}

void worker_send_http(worker_t *w, hmsg_t *m)
{
    outq_t *q = &w->out[m->after.gen ? m->after.thread : m->conn.thread];
    m->link.next = NULL;
    if (q->last)
        q->last->next = &m->link;
    else
        q->first = &m->link;
    q->last = &m->link;
    q->n++;
}

void worker_note_alarm(worker_t *w, int64_t due)
{
    if (!w->alarm_hint || due < w->alarm_hint)
        w->alarm_hint = due;
}

void worker_turn_end(worker_t *w)
{
    worker_commit(w);
    if (w->turn_failed)
        fail_turn(w);
    if (w->alarm_hint) {
        alarms_hint(w->alarm_hint); /* the key is committed: the scheduler can read it */
        w->alarm_hint = 0;
    }
    for (int i = 0; i < w->n_http; i++) {
        outq_t *q = &w->out[i];
        q->safe = NULL;
        if (!q->first)
            continue;
        SINK((uint32_t)i, q->first, q->last, q->n);
        q->first = q->last = NULL;
        q->n = 0;
    }
}

static void handle(worker_t *w, wmsg_t *m)
{
    unsigned b = m->mbox;
    char sid[SESSION_ID_LEN];
    if (b)
        memcpy(sid, m->sid, SESSION_ID_LEN);
    actor_dispatch(w, m); /* takes m */
    if (b)
        mbox_done(w->mbox, b - 1, sid);
}

void worker_deliver(worker_t *w, wmsg_t *m, bool now)
{
    if (now)
        handle(w, m);
    else
        worker_push(w, m);
}

/* One message of the inbox, in its turn. */
static void on_message(mq_node_t *n, void *arg)
{
    worker_t *w = arg;
    wmsg_t *m = (wmsg_t *)n;
    /* a body of many values is a burst of its own (freed here, in the HTTP thread's arena, or
     * parsed here when it came as text): 16 values weigh about one message */
    wmsg_parse_raw(m);
    w->turn_messages += 1 + (m->type == WM_POST ? m->u.post.nodes / 16 : 0);
    handle(w, m);
    if (w->fail_message)
        end_failed_message(w);
}

static void on_inbox(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    worker_t *prev = worker_enter(w);
    w->turn_messages = 0;
    mq_drain(&w->inbox, on_message, w);
    worker_note_burst(w, store_batch_bytes(w->batch));
    worker_turn_end(w);
    worker_leave(prev);
    if (w->stop && atomic_load(&w->inbox.depth) == 0)
        event_base_loopbreak(w->base);
}

/* ---- lifecycle ---- */

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    char name[16];
    snprintf(name, sizeof name, "worker%d", w->idx);
    log_set_thread_name(name);
    event_base_dispatch(w->base);
    /* final drain: anything pushed after the loop stopped (late tool results) */
    worker_t *prev = worker_enter(w);
    on_inbox(-1, 0, w);
    actor_destroy_all(w);
    worker_turn_end(w);
    worker_leave(prev);
    return NULL;
}

int workers_start(int n, store_t *store, const actor_ops_t *ops, frame_sink_fn sink,
                  int n_http_threads, struct event_base **host_bases)
{
    STORE = store;
    NP = store ? store_partitions(store) : 1;
    /* the actor layer calls every entry without a check: a protocol fills them all */
    REQUIRE(ops && ops->on_initialize && ops->on_post && ops->on_modern && ops->on_job_done &&
            ops->on_tool_request && ops->state_free && ops->meta_put && ops->meta_load &&
            ops->log_enabled && ops->on_broadcast && ops->end_listen && ops->on_call_dropped);
    OPS = ops;
    SINK = sink;
    NW = n;
    W = xcalloc((size_t)n, sizeof *W);
    for (int i = 0; i < n; i++) {
        worker_t *w = &W[i];
        w->idx = i;
        slab_init(&w->actors, sizeof(actor_t));
        w->colocated = host_bases != NULL;
        w->base = w->colocated ? host_bases[i] : loop_base_new(g_cfg.n_upstreams == 0);
        if (!w->base || mq_init(&w->inbox) != 0)
            return -1;
        w->inbox_ev = event_new(w->base, w->inbox.efd, EV_READ | EV_PERSIST | EV_ET, on_inbox, w);
        mq_set_event(&w->inbox, w->inbox_ev);
        event_add(w->inbox_ev, NULL);
        w->batch = store_batch_new(store);
        w->n_http = n_http_threads;
        w->out = xcalloc((size_t)n_http_threads, sizeof *w->out);
        w->idle_timer = evtimer_new(w->base, worker_on_idle_timer, w);
        worker_trim_init(w);
        worker_table_init(w);
        w->epoch = 1; /* a new actor's mark (0) is never current */
        w->mbox = mbox_new();
    }
    for (int i = 0; i < n && !host_bases; i++) {
        if (pthread_create(&W[i].thread, NULL, worker_main, &W[i]) != 0)
            return -1;
    }
    return 0;
}

void workers_drain_now(void)
{
    for (int i = 0; i < NW; i++)
        if (W[i].colocated)
            on_inbox(-1, 0, &W[i]);
}

/* Main thread: runs fn in one turn on every worker (on its own loop) and waits until all
 * have run it; the turn's frames go to the HTTP threads before this returns. */
static pthread_mutex_t each_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t each_cv = PTHREAD_COND_INITIALIZER;
static int each_done;
static void (*each_fn)(worker_t *w);

static void on_each(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    worker_t *prev = worker_enter(w);
    each_fn(w);
    worker_turn_end(w);
    worker_leave(prev);
    pthread_mutex_lock(&each_mu);
    each_done++;
    pthread_cond_broadcast(&each_cv);
    pthread_mutex_unlock(&each_mu);
}

/* one caller at a time: shutdown (main thread) and a shard move (admin thread) */
static pthread_mutex_t each_run_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_every_worker(void (*fn)(worker_t *w))
{
    pthread_mutex_lock(&each_run_mu);
    each_fn = fn;
    for (int i = 0; i < NW; i++)
        event_base_once(W[i].base, -1, EV_TIMEOUT, on_each, &W[i], NULL);
    pthread_mutex_lock(&each_mu);
    while (each_done < NW)
        pthread_cond_wait(&each_cv, &each_mu);
    each_done = 0;
    pthread_mutex_unlock(&each_mu);
    pthread_mutex_unlock(&each_run_mu);
}

void workers_run_each(void (*fn)(worker_t *w))
{
    on_every_worker(fn);
}

void workers_end_listens(void)
{
    on_every_worker(actor_end_listens); /* the closing results reach the HTTP threads */
}

static atomic_bool g_stopping;

bool workers_stopping(void)
{
    return atomic_load(&g_stopping);
}

void workers_cancel_all(void)
{
    /* jobs started from here on (requests still in a mailbox) start cancelled */
    atomic_store(&g_stopping, true);
    /* and wait: the pool stops next, and jobs an actor kept waiting for a place must be on it
     * by then */
    on_every_worker(actor_cancel_all_jobs);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    w->stop = true;
    event_base_loopbreak(w->base);
}

static void (*g_on_stopped)(void);

void workers_on_stopped(void (*fn)(void))
{
    g_on_stopped = fn;
}

void workers_stop(void)
{
    for (int i = 0; i < NW; i++)
        if (!W[i].colocated)
            event_base_once(W[i].base, -1, EV_TIMEOUT, on_stop, &W[i], NULL);
    for (int i = 0; i < NW; i++) {
        if (W[i].colocated) {
            /* the HTTP threads that ran it have exited: the final drain happens here, on the
             * only thread left, like worker_main's after its loop */
            worker_t *prev = worker_enter(&W[i]);
            on_inbox(-1, 0, &W[i]);
            actor_destroy_all(&W[i]);
            worker_turn_end(&W[i]);
            worker_leave(prev);
        } else {
            pthread_join(W[i].thread, NULL);
        }
    }
    if (g_on_stopped)
        g_on_stopped(); /* every loop has stopped; none is freed yet */
    for (int i = 0; i < NW; i++) {
        event_free(W[i].inbox_ev);
        event_free(W[i].idle_timer);
        worker_trim_free(&W[i]);
        if (!W[i].colocated)
            event_base_free(W[i].base);
        mq_destroy(&W[i].inbox);
        store_batch_free(W[i].batch);
        free(W[i].out);
        mbox_free(W[i].mbox);
        free(W[i].buckets);
        jshare_clear(&W[i].shared);
        slab_destroy(&W[i].actors);
        free(W[i].touched);
        free(W[i].deferred);
        free(W[i].afters);
        settle_gives(&W[i], false);
        free(W[i].gives);
        ptrmap_free(&W[i].recover);
    }
    free(W);
    W = NULL;
    NW = 0;
}
