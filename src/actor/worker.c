/* Threads: worker threads (their own loops, or the HTTP threads' with --workers 0); any
 * thread delivers; main thread starts, drains and stops them. */
/* Actor workers. Each worker thread runs its own event_base; see worker.h for the turn.
 *
 * Mailbox bound: an HTTP thread admits a request only while the session's count of queued,
 * unprocessed requests is below --mailbox; the count lives in a per-worker array of atomic
 * counters indexed by a hash of the session id (4096 shards), so admission needs no lock and
 * no lookup of the actor. Two sessions share a shard with probability 1/4096; they then share
 * the bound, which errs on the side of refusing. Internal messages (tool output, closed
 * connections) are never refused: they must not be lost.
 */
#include "actor/worker.h"

#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/refuse.h"
#include "core/config.h"
#include "core/blockcache.h"
#include "core/jshare.h"
#include "core/log.h"
#include "core/principal.h"
#include "core/ptrmap.h"
#include "core/stats.h"
#include "actor/job.h"

#include <errno.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MBOX_SHARDS 4096
#define TRIM_AFTER_HIBERNATIONS 256
/* Once the worker has handled this many messages, or committed this many bytes, since the
 * last trim, it was a burst: when it has been quiet for TRIM_QUIET_MS, free heap pages go back
 * to the kernel. Counted across turns: backpressure keeps a burst's turns small (a handler has
 * at most JOB_OUT_MAX messages in flight), and actors on the HTTP threads take many more,
 * smaller turns. */
#define BURST_MESSAGES 4096
#define BURST_BYTES (4u << 20)
#define TRIM_QUIET_MS 1000

typedef struct outq {
    mq_node_t *first, *last;
    size_t n;
    mq_node_t *safe; /* the last frame queued before the turn's last good commit, or NULL */
} outq_t;

typedef struct deferred {
    job_t *job;
    uint32_t wait_seq;
    json_t *value;
} deferred_t;

struct worker {
    int idx;
    pthread_t thread;
    struct event_base *base;
    mq_t inbox;
    struct event *inbox_ev;
    store_batch_t *batch;
    outq_t *out; /* one per HTTP thread */
    int n_http;
    atomic_int mbox[MBOX_SHARDS];
    /* actor table: chained hash on the session id, chains through actor->hnext */
    struct actor **buckets;
    size_t nbuckets, nactors;
    atomic_llong live;
    bool stop;
    /* hibernation: idle actors, oldest first, and one timer for the oldest */
    struct actor *lru_head, *lru_tail;
    struct event *idle_timer;
    int64_t idle_armed_ms; /* monotonic deadline the timer is armed for, 0 = none */
    int64_t alarm_hint;    /* lowest alarm set this turn, 0 = none */
    long hibernated_since_trim;
    struct event *trim_timer; /* one-shot, armed only after a burst */
    long turn_messages;
    long burst_messages;    /* since the last trim */
    size_t burst_bytes;
    bool colocated;        /* runs on an HTTP thread's event_base, no thread of its own */
    /* a failed turn (see worker_commit): what it must undo */
    bool turn_failed;
    uint64_t epoch;        /* advances at every good commit: actors' touch marks expire */
    char (*touched)[SESSION_ID_LEN + 1]; /* actors touched since the last good commit */
    size_t ntouched, cap_touched;
    deferred_t *deferred;  /* state answers waiting for the commit */
    size_t ndeferred, cap_deferred;
    long long dstats[DS__COUNT]; /* store-backed counters of the uncommitted writes */
    struct give { principal_t *p; int r; give_mode_t mode; } *gives; /* at the commit */
    size_t ngives, cap_gives;
    ptrmap_t recover;      /* hash(sid) of sessions reset by a failed turn */
    jshare_t shared;       /* clientInfo and capabilities its sessions share */
};

static worker_t *W;
static int NW;
static _Thread_local worker_t *t_current; /* worker_current() */
static store_t *STORE;
static const actor_ops_t *OPS;
static frame_sink_fn SINK;

static unsigned mbox_shard(const char *sid)
{
    return (unsigned)(hash_bytes(sid, SESSION_ID_LEN) >> 40) % MBOX_SHARDS;
}

worker_t *worker_for_session(const char *sid)
{
    /* the routing prefix only: a 2026-07-28 request that carries a requestState gets an id
     * near its record's (session_id_new_near), so both meet on one worker */
    return &W[hash_bytes(sid, SESSION_ROUTE_LEN) % (uint64_t)NW];
}

int worker_count(void)
{
    return NW;
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

long long workers_live_actors(void)
{
    long long n = 0;
    for (int i = 0; i < NW; i++)
        n += atomic_load_explicit(&W[i].live, memory_order_relaxed);
    return n;
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

bool worker_admit(worker_t *w, wmsg_t *m)
{
    unsigned s = mbox_shard(m->sid);
    int depth = atomic_fetch_add_explicit(&w->mbox[s], 1, memory_order_relaxed) + 1;
    if (depth > g_cfg.mailbox) {
        atomic_fetch_sub_explicit(&w->mbox[s], 1, memory_order_relaxed);
        STAT_INC(mailbox_full_total);
        return false;
    }
    stats_note_mailbox_depth(depth);
    m->counted = true;
    return true;
}

bool worker_turn_failed(const worker_t *w)
{
    return w->turn_failed;
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
        else if (ok && g->mode == GIVE_SHARE)
            principal_give_share(g->p, (pres_t)g->r);
        else if (ok)
            principal_give_global((pres_t)g->r);
        principal_unref(g->p);
    }
    w->ngives = 0;
}

static void *recover_key(const char *sid)
{
    return (void *)(uintptr_t)(hash_bytes(sid, SESSION_ID_LEN) | 1);
}

bool worker_take_recover_mark(worker_t *w, const char *sid)
{
    /* a hash collision only costs a needless scan of an empty range */
    return w->recover.n && ptrmap_del(&w->recover, recover_key(sid)) != NULL;
}

/* Everything so far is stored: frames queued until now may go, counters count it, waiting
 * state operations get their answers. */
static void commit_succeeded(worker_t *w)
{
    for (int i = 0; i < w->n_http; i++)
        w->out[i].safe = w->out[i].last;
    w->epoch++;
    w->ntouched = 0;
    static atomic_llong *const target[DS__COUNT] = {
        [DS_EVENTS_STORED] = &g_stats.events_stored_total,
        [DS_EVENTS_EVICTED] = &g_stats.events_evicted_total,
        [DS_SESSIONS_STORED] = &g_stats.sessions_stored,
        [DS_SESSIONS_DELETED] = &g_stats.sessions_deleted_total,
        [DS_ALARMS_PENDING] = &g_stats.alarms_pending,
        [DS_STREAMS_EXPIRED] = &g_stats.streams_expired_total,
        [DS_LOG_TRIMS] = &g_stats.log_trims_total,
    };
    for (int i = 0; i < DS__COUNT; i++) {
        if (w->dstats[i])
            atomic_fetch_add_explicit(target[i], w->dstats[i], memory_order_relaxed);
        w->dstats[i] = 0;
    }
    for (size_t i = 0; i < w->ndeferred; i++)
        job_reply(w->deferred[i].job, w->deferred[i].wait_seq, w->deferred[i].value, NULL);
    w->ndeferred = 0;
    settle_gives(w, true);
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
            hmsg_t *r = refuse_frame((hmsg_t *)n);
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
        ptrmap_put(&w->recover, recover_key(touched[i]), (void *)1);
        struct actor *a = worker_find_actor(w, touched[i]);
        if (a)
            actor_reset(a);
    }
    free(touched);
    for (size_t i = 0; i < w->ndeferred; i++) {
        json_decref(w->deferred[i].value);
        job_reply_fail(w->deferred[i].job, w->deferred[i].wait_seq, MCPD_ERR_INTERNAL,
                       JERR_STORAGE, REFUSE_MESSAGE);
    }
    w->ndeferred = 0;
    memset(w->dstats, 0, sizeof w->dstats);
    settle_gives(w, false);
    w->alarm_hint = 0;
    w->turn_failed = false;
    w->epoch++;
}

void worker_send_http(worker_t *w, hmsg_t *m)
{
    outq_t *q = &w->out[m->conn.thread];
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
    bool counted = m->counted;
    unsigned shard = counted ? mbox_shard(m->sid) : 0;
    actor_dispatch(w, m); /* takes m */
    if (counted)
        atomic_fetch_sub_explicit(&w->mbox[shard], 1, memory_order_relaxed);
}

void worker_deliver(worker_t *w, wmsg_t *m, bool now)
{
    if (now)
        handle(w, m);
    else
        worker_push(w, m);
}

/* Memory a burst took (messages, frames, the batch, socket buffers on the HTTP threads) is
 * freed into malloc's arenas, one per thread that allocated it, and glibc keeps most of it
 * resident. After the burst, malloc_trim hands the free pages back. Debounced: every burst
 * turn pushes the timer back, so a long burst trims once, at its end, and a quiet process
 * has no timer armed. */
static void on_trim_timer(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    STAT_INC(timer_wakeups_total);
    w->burst_messages = 0;
    w->burst_bytes = 0;
    blockcache_give_back(); /* this thread's kept jansson and libevent blocks too */
}

static void note_burst(worker_t *w, size_t batch_bytes)
{
    w->burst_messages += w->turn_messages;
    w->burst_bytes += batch_bytes;
    if (w->burst_messages < BURST_MESSAGES && w->burst_bytes < BURST_BYTES)
        return;
    struct timeval tv = {TRIM_QUIET_MS / 1000, (TRIM_QUIET_MS % 1000) * 1000};
    evtimer_add(w->trim_timer, &tv); /* pushed back by every further turn of the burst */
}

static void on_inbox(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    worker_t *prev = worker_enter(w);
    mq_node_t *n = mq_take_all(&w->inbox);
    w->turn_messages = 0;
    while (n) {
        mq_node_t *next = n->next;
        wmsg_t *m = (wmsg_t *)n;
        /* a body of many values is a burst of its own (freed here, in the HTTP thread's
         * arena): 16 values weigh about one message */
        w->turn_messages += 1 + (m->type == WM_POST ? m->u.post.nodes / 16 : 0);
        handle(w, m);
        n = next;
    }
    note_burst(w, store_batch_bytes(w->batch));
    worker_turn_end(w);
    worker_leave(prev);
    if (w->stop && atomic_load(&w->inbox.depth) == 0)
        event_base_loopbreak(w->base);
}

/* ---- hibernation: the idle list ---- */

static void lru_remove(worker_t *w, struct actor *a)
{
    if (!a->in_lru)
        return;
    if (a->lru_prev)
        a->lru_prev->lru_next = a->lru_next;
    else
        w->lru_head = a->lru_next;
    if (a->lru_next)
        a->lru_next->lru_prev = a->lru_prev;
    else
        w->lru_tail = a->lru_prev;
    a->lru_prev = a->lru_next = NULL;
    a->in_lru = false;
}

static void lru_append(worker_t *w, struct actor *a)
{
    a->lru_prev = w->lru_tail;
    a->lru_next = NULL;
    if (w->lru_tail)
        w->lru_tail->lru_next = a;
    else
        w->lru_head = a;
    w->lru_tail = a;
    a->in_lru = true;
}

/* Arms the one idle timer for the oldest idle actor, or disarms it. */
static void idle_rearm(worker_t *w)
{
    if (!w->lru_head) {
        if (w->idle_armed_ms) {
            evtimer_del(w->idle_timer);
            w->idle_armed_ms = 0;
        }
        return;
    }
    int64_t deadline = w->lru_head->idle_since_ms + g_cfg.idle_timeout_s * 1000;
    if (w->idle_armed_ms && w->idle_armed_ms <= deadline)
        return; /* fires no later than needed; it re-arms itself then */
    int64_t wait = deadline - now_mono_ms();
    if (wait < 0)
        wait = 0;
    struct timeval tv = {wait / 1000, (wait % 1000) * 1000};
    evtimer_add(w->idle_timer, &tv);
    w->idle_armed_ms = deadline;
}

void worker_note_activity(worker_t *w, struct actor *a)
{
    lru_remove(w, a);
    if (!actor_is_idle(a))
        return;
    if (a->modern) { /* its one request is answered: nothing to keep */
        actor_discard(a);
        return;
    }
    a->idle_since_ms = now_mono_ms();
    lru_append(w, a);
    idle_rearm(w);
}

static void on_idle_timer(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    worker_t *prev = worker_enter(w);
    STAT_INC(timer_wakeups_total);
    w->idle_armed_ms = 0;
    /* actors due within the slack go now too: one wakeup per slack window, not per actor */
    int64_t slack = g_cfg.idle_timeout_s * 1000 / 10 < 1000 ? g_cfg.idle_timeout_s * 1000 / 10 : 1000;
    int64_t now = now_mono_ms() + slack;
    while (w->lru_head && w->lru_head->idle_since_ms + g_cfg.idle_timeout_s * 1000 <= now) {
        struct actor *a = w->lru_head;
        lru_remove(w, a);
        actor_hibernate(a);
        w->hibernated_since_trim++;
    }
    idle_rearm(w);
    worker_turn_end(w);
    /* Freed actors stay in malloc's arenas. After many hibernations, once nothing else is
     * waiting to hibernate, hand the free pages back so hibernated sessions cost no resident
     * memory (malloc_trim walks every arena: not something to do per actor). */
    if (w->hibernated_since_trim >= TRIM_AFTER_HIBERNATIONS &&
        (!w->lru_head || w->hibernated_since_trim >= 32 * TRIM_AFTER_HIBERNATIONS)) {
        blockcache_give_back();
        w->hibernated_since_trim = 0;
    }
    worker_leave(prev);
}

/* ---- actor table ---- */

static size_t bucket_of(worker_t *w, const char *sid)
{
    return (size_t)(hash_bytes(sid, SESSION_ID_LEN) >> 7) & (w->nbuckets - 1);
}

struct actor *worker_find_actor(worker_t *w, const char *sid)
{
    for (struct actor *a = w->buckets[bucket_of(w, sid)]; a; a = a->hnext) {
        if (memcmp(a->sid, sid, SESSION_ID_LEN) == 0)
            return a;
    }
    return NULL;
}

static void table_grow(worker_t *w)
{
    size_t old_n = w->nbuckets;
    struct actor **old = w->buckets;
    w->nbuckets = old_n * 2;
    w->buckets = xcalloc(w->nbuckets, sizeof *w->buckets);
    for (size_t i = 0; i < old_n; i++) {
        struct actor *a = old[i];
        while (a) {
            struct actor *next = a->hnext;
            size_t b = bucket_of(w, a->sid);
            a->hnext = w->buckets[b];
            w->buckets[b] = a;
            a = next;
        }
    }
    free(old);
}

void worker_add_actor(worker_t *w, struct actor *a)
{
    if (w->nactors + 1 > w->nbuckets)
        table_grow(w);
    size_t b = bucket_of(w, a->sid);
    a->hnext = w->buckets[b];
    w->buckets[b] = a;
    w->nactors++;
    if (a->modern)
        STAT_INC(modern_requests_live);
    if (a->kind != ACTOR_SESSION)
        return;
    atomic_fetch_add_explicit(&w->live, 1, memory_order_relaxed);
    STAT_INC(sessions_live);
}

void worker_remove_actor(worker_t *w, struct actor *a)
{
    lru_remove(w, a);
    if (!w->lru_head)
        idle_rearm(w); /* nothing left to hibernate: no timer */
    struct actor **pp = &w->buckets[bucket_of(w, a->sid)];
    while (*pp && *pp != a)
        pp = &(*pp)->hnext;
    REQUIRE(*pp == a);
    *pp = a->hnext;
    a->hnext = NULL;
    w->nactors--;
    if (a->modern)
        STAT_DEC(modern_requests_live);
    if (a->kind != ACTOR_SESSION)
        return;
    atomic_fetch_sub_explicit(&w->live, 1, memory_order_relaxed);
    STAT_DEC(sessions_live);
}

void worker_foreach_actor(worker_t *w, void (*fn)(struct actor *, void *), void *arg)
{
    for (size_t i = 0; i < w->nbuckets; i++) {
        struct actor *a = w->buckets[i];
        while (a) {
            struct actor *next = a->hnext;
            fn(a, arg);
            a = next;
        }
    }
}

json_t *worker_share_json(worker_t *w, json_t *v)
{
    return jshare_get(&w->shared, v);
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
    OPS = ops;
    SINK = sink;
    NW = n;
    W = xcalloc((size_t)n, sizeof *W);
    for (int i = 0; i < n; i++) {
        worker_t *w = &W[i];
        w->idx = i;
        w->colocated = host_bases != NULL;
        w->base = w->colocated ? host_bases[i] : event_base_new();
        if (!w->base || mq_init(&w->inbox) != 0)
            return -1;
        w->inbox_ev = event_new(w->base, w->inbox.efd, EV_READ | EV_PERSIST, on_inbox, w);
        event_add(w->inbox_ev, NULL);
        w->batch = store_batch_new(store);
        w->n_http = n_http_threads;
        w->out = xcalloc((size_t)n_http_threads, sizeof *w->out);
        w->idle_timer = evtimer_new(w->base, on_idle_timer, w);
        w->trim_timer = evtimer_new(w->base, on_trim_timer, w);
        w->nbuckets = 1024;
        w->buckets = xcalloc(w->nbuckets, sizeof *w->buckets);
        w->epoch = 1; /* a new actor's mark (0) is never current */
        for (int s = 0; s < MBOX_SHARDS; s++)
            atomic_init(&w->mbox[s], 0);
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
        event_free(W[i].inbox_ev);
        event_free(W[i].idle_timer);
        event_free(W[i].trim_timer);
        if (!W[i].colocated)
            event_base_free(W[i].base);
        mq_destroy(&W[i].inbox);
        store_batch_free(W[i].batch);
        free(W[i].out);
        free(W[i].buckets);
        jshare_clear(&W[i].shared);
        free(W[i].touched);
        free(W[i].deferred);
        settle_gives(&W[i], false);
        free(W[i].gives);
        ptrmap_free(&W[i].recover);
    }
    free(W);
    W = NULL;
    NW = 0;
}
