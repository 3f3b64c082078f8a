/* Threads: worker threads (each worker's own table and idle list). */
/* A worker's actors: the table (a chained hash on the session id, chains through
 * actor->hnext) and the idle list, oldest first, whose one timer hibernates the actors idle
 * past --idle-timeout and then hands the freed memory back. Worker thread only (the owner of
 * the worker; see worker.c for the turn). */
#include "actor/worker_internal.h"

#include "actor/actor.h"
#include "core/config.h"
#include "core/log.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

#define TRIM_AFTER_HIBERNATIONS 256

void worker_table_init(worker_t *w)
{
    w->nbuckets = 1024;
    w->buckets = xcalloc(w->nbuckets, sizeof *w->buckets);
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
    if (actor_one_request(a)) { /* its one request is answered: nothing to keep */
        actor_discard(a);
        return;
    }
    a->idle_since_ms = now_mono_ms();
    lru_append(w, a);
    idle_rearm(w);
}

void worker_on_idle_timer(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    worker_t *prev = worker_enter(w);
    STAT_INC(timer_wakeups_total);
    w->idle_armed_ms = 0;
    /* actors due within the slack go now too: one wakeup per slack window, not per actor */
    int64_t slack = g_cfg.idle_timeout_s * 1000 / 10 < 1000 ? g_cfg.idle_timeout_s * 1000 / 10
                                                            : 1000;
    int64_t now = now_mono_ms() + slack;
    while (w->lru_head && w->lru_head->idle_since_ms + g_cfg.idle_timeout_s * 1000 <= now) {
        struct actor *a = w->lru_head;
        lru_remove(w, a);
        actor_hibernate(a);
        w->hibernated_since_trim++;
    }
    idle_rearm(w);
    worker_turn_end(w);
    /* What freed actors held stays in malloc's arenas and on the actor pages (core/slab.h).
     * After many hibernations, once nothing else is waiting to hibernate, hand the free pages
     * back so hibernated sessions cost no resident memory (malloc_trim walks every arena: not
     * something to do per actor). */
    if (w->hibernated_since_trim >= TRIM_AFTER_HIBERNATIONS &&
        (!w->lru_head || w->hibernated_since_trim >= 32 * TRIM_AFTER_HIBERNATIONS)) {
        worker_give_back(w);
        w->hibernated_since_trim = 0;
    }
    worker_leave(prev);
}

/* ---- actor table ---- */

static size_t bucket_of(worker_t *w, const char *sid)
{
    return (size_t)(hash_id(sid, SESSION_ID_LEN) >> 7) & (w->nbuckets - 1);
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
    if (actor_one_request(a))
        STAT_INC(modern_requests_live);
    if (a->kind != ACTOR_SESSION)
        return;
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
    if (actor_one_request(a))
        STAT_DEC(modern_requests_live);
    if (a->kind != ACTOR_SESSION)
        return;
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

slab_t *worker_actor_slab(worker_t *w)
{
    return &w->actors;
}
