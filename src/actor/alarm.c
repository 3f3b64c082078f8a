/* The alarm scheduler: its own thread. See alarm.h. */
#include "actor/alarm.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"
#include "store/keys.h"

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
    int64_t floor_ms;   /* keys below were dispatched (scheduler thread) */
    int64_t hint_ms;    /* lowest hinted due since the last re-arm (under mu) */
    int64_t armed_ms;   /* 0 = no timer (scheduler thread) */
    atomic_bool running; /* read by workers (hints), written by the main thread */
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Arms the timer for the first key at or after the floor, or disarms it. */
static void arm_next(void)
{
    unsigned char lo[KEY_ALARM_LEN];
    memset(lo, 0, sizeof lo);
    key_put_u64(lo, (uint64_t)S.floor_ms);
    store_iter_t *it = store_iter_new(S.store, CF_ALARMS, NULL, 0, NULL, 0);
    store_iter_seek(it, lo, sizeof lo);
    int64_t due = 0;
    if (store_iter_valid(it)) {
        size_t kl;
        char sid[SESSION_ID_LEN + 1];
        const unsigned char *key = store_iter_key(it, &kl); /* sets kl first */
        if (key_alarm_decode(key, kl, &due, sid) != 0)
            due = 0;
    }
    store_iter_free(it);
    evtimer_del(S.timer);
    S.armed_ms = due;
    if (!due)
        return;
    int64_t wait = due - now_wall_ms();
    if (wait < 0)
        wait = 0;
    struct timeval tv = {wait / 1000, (wait % 1000) * 1000};
    evtimer_add(S.timer, &tv);
}

static void on_due(evutil_socket_t fd, short what, void *arg)
{
    STAT_INC(timer_wakeups_total);
    int64_t now = now_wall_ms();
    unsigned char lo[KEY_ALARM_LEN], hi[KEY_ALARM_LEN];
    memset(lo, 0, sizeof lo);
    memset(hi, 0, sizeof hi);
    key_put_u64(lo, (uint64_t)S.floor_ms);
    key_put_u64(hi, (uint64_t)now + 1);
    store_iter_t *it = store_iter_new(S.store, CF_ALARMS, lo, sizeof lo, hi, sizeof hi);
    long n = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl;
        int64_t due;
        wmsg_t *m = wmsg_new(WM_ALARM);
        const unsigned char *key = store_iter_key(it, &kl); /* sets kl first */
        if (key_alarm_decode(key, kl, &due, m->sid) != 0) {
            wmsg_free(m);
            continue;
        }
        m->alarm_due = due;
        worker_push(worker_for_session(m->sid), m);
        n++;
    }
    store_iter_free(it);
    if (n)
        log_debug("alarms: %ld due at %lld, dispatched", n, (long long)now);
    S.floor_ms = now + 1;
    arm_next();
}

static void on_rearm(evutil_socket_t fd, short what, void *arg)
{
    pthread_mutex_lock(&S.mu);
    int64_t hint = S.hint_ms;
    S.hint_ms = 0;
    pthread_mutex_unlock(&S.mu);
    if (hint && hint < S.floor_ms)
        S.floor_ms = hint;
    if (hint && (!S.armed_ms || hint < S.armed_ms))
        arm_next();
}

void alarms_hint(int64_t due_ms)
{
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
    /* the count of stored alarms is the number of sessions holding one */
    long long count = 0;
    store_iter_t *it = store_iter_new(store, CF_ALARMS, NULL, 0, NULL, 0);
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
        count++;
    store_iter_free(it);
    atomic_store(&g_stats.alarms_pending, count);
    S.floor_ms = 0;
    arm_next();
    if (S.armed_ms)
        log_info("alarms: %lld stored, the earliest due in %lld s", count,
                 (long long)((S.armed_ms - now_wall_ms()) / 1000));
    atomic_store(&S.running, true);
    pthread_mutex_lock(&S.mu);
    bool hinted = S.hint_ms != 0; /* a hint that came while it was not running yet */
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
