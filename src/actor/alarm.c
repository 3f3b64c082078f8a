/* Threads: the alarm thread; hints from any thread (workers, the shard-move thread); start and
 * stop on the main thread. */
/* The alarm scheduler: its own thread. See alarm.h. */
#include "actor/alarm.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/log.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"
#include "store/sessionrec.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static struct {
    store_t *store;
    struct event_base *base;
    struct event *timer;
    struct event *rearm;
    pthread_t thread;
    pthread_mutex_t mu;
    int64_t floor_ms;    /* keys below were dispatched (scheduler thread) */
    int64_t hint_ms;     /* lowest hinted due since the last re-arm (under mu) */
    int64_t armed_ms;    /* 0 = no timer (scheduler thread) */
    atomic_bool running; /* read by workers (hints), written by the main thread */
    int64_t (*node_fn)(int64_t now_ms);
    int64_t node_due;    /* the node alarm's due time, 0: none (scheduler thread) */
    int64_t node_hint;   /* lowest node hint since the last re-arm (under mu) */
    int64_t retry_hint;  /* lowest due an actor could not be read for since the last re-arm (mu) */
    int64_t retry_ms;    /* when the keys from retry_floor on go again, 0 = none (scheduler) */
    int64_t retry_floor; /* the lowest due a read error left unread or unrun (scheduler thread) */
    /* armed_ms while the timer is armed and the store is not being read for it, else 0: a hint
     * due at or after it needs no wake-up (alarms_hint) */
    _Atomic int64_t armed_pub;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Scheduler thread, before it reads the store for due or next keys: from here on every hint
 * takes the slow path, and every key whose hinter skipped it is visible to the reads that
 * follow (the exchange pairs with alarms_hint's read-modify-write; see there). */
static void unpublish(void)
{
    atomic_exchange_explicit(&S.armed_pub, 0, memory_order_acq_rel);
}

/* How long keys that a read error left wait to be read and dispatched again: a damaged block
 * fails each read of it, a client's retry is asked to wait as long (Retry-After). */
#define READ_RETRY_MS 5000

/* Scheduler thread: a read failed (a scan, the next key, an actor's wake): the keys due from
 * due_ms on are read and dispatched again at the retry (on_due lowers the floor to them). */
static void retry_from(int64_t due_ms)
{
    if (!S.retry_ms || due_ms < S.retry_floor)
        S.retry_floor = due_ms;
    if (!S.retry_ms)
        S.retry_ms = now_wall_ms() + READ_RETRY_MS;
}

/* Arms the timer for the first key at or after the floor, or disarms it. */
static void arm_next(void)
{
    unpublish();
    int64_t due = sessionrec_first_alarm(S.store, S.floor_ms);
    if (due < 0) { /* a read error hid it: not "none" */
        retry_from(S.floor_ms);
        due = 0;
    }
    if (S.node_due && (!due || S.node_due < due))
        due = S.node_due;
    if (S.retry_ms && (!due || S.retry_ms < due))
        due = S.retry_ms;
    evtimer_del(S.timer);
    S.armed_ms = due;
    if (!due)
        return;
    int64_t wait = due - now_wall_ms();
    if (wait < 0)
        wait = 0;
    struct timeval tv = {wait / 1000, (wait % 1000) * 1000};
    evtimer_add(S.timer, &tv);
    /* only at or above the floor: the scan at the fire starts there (the node alarm may lie
     * below it) */
    if (due >= S.floor_ms)
        atomic_store_explicit(&S.armed_pub, due, memory_order_release);
}

/* arg: the due time of the last key dispatched (int64_t) */
static void dispatch_one(void *arg, int64_t due, const char *sid)
{
    *(int64_t *)arg = due;
    wmsg_t *m = wmsg_new(WM_ALARM);
    memcpy(m->sid, sid, SESSION_ID_LEN + 1);
    m->u.alarm.due = due;
    worker_push(worker_for_session(m->sid), m);
}

static void on_due(evutil_socket_t fd, short what, void *arg)
{
    STAT_INC(timer_wakeups_total);
    unpublish(); /* before the scan: a key skipped by its hinter is due by now or found next */
    int64_t now = now_wall_ms();
    if (S.retry_ms && S.retry_ms <= now) { /* what read errors left goes again */
        if (S.retry_floor < S.floor_ms)
            S.floor_ms = S.retry_floor;
        S.retry_ms = 0;
    }
    int64_t last = S.floor_ms; /* from the last key dispatched: more may have its due time */
    long n = sessionrec_scan_alarms(S.store, S.floor_ms, now, dispatch_one, &last);
    if (n > 0)
        log_debug("alarms: %ld due at %lld, dispatched", n, (long long)now);
    if (n < 0) /* a read error stopped the scan: not the last key due */
        retry_from(last);
    S.floor_ms = now + 1;
    if (S.node_due && S.node_due <= now)
        S.node_due = S.node_fn ? S.node_fn(now) : 0;
    arm_next();
}

static void on_rearm(evutil_socket_t fd, short what, void *arg)
{
    STAT_INC(alarm_rearms_total);
    pthread_mutex_lock(&S.mu);
    int64_t hint = S.hint_ms, node = S.node_hint, retry = S.retry_hint;
    S.hint_ms = 0;
    S.node_hint = 0;
    S.retry_hint = 0;
    pthread_mutex_unlock(&S.mu);
    if (retry)
        retry_from(retry);
    if (hint && hint < S.floor_ms)
        S.floor_ms = hint;
    if (node && (!S.node_due || node < S.node_due))
        S.node_due = node;
    else
        node = 0;
    if ((hint && (!S.armed_ms || hint < S.armed_ms)) ||
        (node && (!S.armed_ms || node < S.armed_ms)) ||
        (S.retry_ms && (!S.armed_ms || S.retry_ms < S.armed_ms)))
        arm_next();
}

void alarms_hint(int64_t due_ms)
{
    /* The timer is armed at or before due_ms: when it fires, the scan dispatches every key due
     * by then and the re-arm finds the earliest after, this one included, so a wake-up would
     * change nothing. This is the common case (a new session's alarm lies after the earliest
     * one), and it keeps the hinters off the mutex and the scheduler asleep. The key was
     * committed before this read-modify-write (a release; it leaves the value as it is). If it
     * reads a published time, it comes before the scheduler's next unpublish() in the atomic's
     * order, with nothing but other hinters' read-modify-writes between, so that exchange (an
     * acquire) synchronises with it and the reads after it see the key. (Not a fence and a
     * load: ThreadSanitizer does not take fences.) */
    int64_t armed = atomic_fetch_or_explicit(&S.armed_pub, 0, memory_order_acq_rel);
    if (armed && due_ms >= armed)
        return;
    /* Before the scheduler runs (recovery, during alarms_start's scan) the hint is kept, and
     * alarms_start looks at it once it runs: an alarm committed then is not missed. */
    pthread_mutex_lock(&S.mu);
    bool wake = !S.hint_ms || due_ms < S.hint_ms;
    if (wake)
        S.hint_ms = due_ms;
    /* under mu: alarms_stop clears `running` under it too, so no hint is half-way through
     * event_active when alarms_free runs (the store's probe thread hints at any time) */
    if (wake && atomic_load(&S.running))
        event_active(S.rearm, EV_READ, 0);
    pthread_mutex_unlock(&S.mu);
}

void alarms_node_fn(int64_t (*fn)(int64_t now_ms))
{
    S.node_fn = fn;
}

void alarms_node_hint(int64_t due_ms)
{
    if (due_ms <= 0)
        return;
    pthread_mutex_lock(&S.mu);
    bool wake = !S.node_hint || due_ms < S.node_hint;
    if (wake)
        S.node_hint = due_ms;
    if (wake && atomic_load(&S.running))
        event_active(S.rearm, EV_READ, 0);
    pthread_mutex_unlock(&S.mu);
}

void alarms_retry(int64_t due_ms)
{
    pthread_mutex_lock(&S.mu);
    bool wake = !S.retry_hint || due_ms < S.retry_hint;
    if (wake)
        S.retry_hint = due_ms;
    if (wake && atomic_load(&S.running))
        event_active(S.rearm, EV_READ, 0);
    pthread_mutex_unlock(&S.mu);
}

static void *alarm_main(void *arg)
{
    log_set_thread_name("alarms");
    /* with no alarm armed there is no pending event: keep waiting for hints anyway */
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

int alarms_start(store_t *store)
{
    S.store = store;
    S.base = event_base_new();
    S.timer = evtimer_new(S.base, on_due, NULL);
    S.rearm = event_new(S.base, -1, 0, on_rearm, NULL);
    /* the count of stored alarms is the number of sessions holding one, in the shards served
     * here, as sessions_stored counts them: a shard not served (refused at start, a crashed
     * adopt's leftover, deleted before an adopt) counts once it is served (take() adds what
     * it holds then, a release takes away what went) */
    long long count = (long long)sessionrec_count_alarms(store, shard_owns_id);
    if (count < 0)
        return (int)count;
    STAT_SET(alarms_pending, count);
    S.floor_ms = 0;
    arm_next();
    if (S.armed_ms)
        log_info("alarms: %lld stored, the earliest due in %lld s", count,
                 (long long)((S.armed_ms - now_wall_ms()) / 1000));
    atomic_store(&S.running, true);
    pthread_mutex_lock(&S.mu);
    bool hinted = S.hint_ms != 0 || S.node_hint != 0; /* came while it was not running yet */
    pthread_mutex_unlock(&S.mu);
    if (hinted)
        event_active(S.rearm, EV_READ, 0);
    return pthread_create(&S.thread, NULL, alarm_main, NULL) == 0 ? 0 : -1;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopexit(S.base, NULL);
}

void alarms_stop(void)
{
    if (!atomic_load(&S.running))
        return;
    pthread_mutex_lock(&S.mu);
    atomic_store(&S.running, false);
    pthread_mutex_unlock(&S.mu);
    event_base_once(S.base, -1, EV_TIMEOUT, on_stop, NULL, NULL);
    pthread_join(S.thread, NULL);
}

void alarms_free(void)
{
    if (!S.base)
        return;
    event_free(S.timer);
    event_free(S.rearm);
    event_base_free(S.base);
    S.base = NULL;
}
