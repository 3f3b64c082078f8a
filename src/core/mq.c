/* Threads: producers on any thread; the consumer on the queue's owner thread. */
/* Intrusive MPSC queue with eventfd wake-up. Producers: any thread; consumer: the owner. */
#include "core/mq.h"

#include "core/util.h"

#include <errno.h>
#include <event2/event.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int mq_init(mq_t *q)
{
    atomic_init(&q->top, NULL);
    atomic_init(&q->depth, 0);
    q->ev = NULL;
    atomic_init(&q->owner, 0);
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0)
        return -errno;
    return 0;
}

void mq_destroy(mq_t *q)
{
    if (q->efd >= 0)
        close(q->efd);
    q->efd = -1;
}

/* A small number naming the calling thread (never 0). */
static unsigned mq_self(void)
{
    static atomic_uint next = 1;
    static _Thread_local unsigned self;
    if (!self)
        self = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
    return self;
}

/* ThreadSanitizer watches descriptors: a change list's deferred EPOLL_CTL_DEL of a connection
 * one loop closed, made after another loop's accept got the same number, is a use of that
 * descriptor by two threads to it. The call is harmless (the other loop's socket is not in this
 * epoll set: ENOENT, which libevent ignores), but under TSan the loops do without the list. */
#if defined(__SANITIZE_THREAD__)
#define TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN_BUILD 1
#endif
#endif
#ifndef TSAN_BUILD
#define TSAN_BUILD 0
#endif

struct event_base *loop_base_new(bool change_list)
{
    struct event_config *cfg = event_config_new();
    if (!cfg)
        return NULL;
    if (change_list && !TSAN_BUILD)
        event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    /* epoll, whatever EVENT_NOEPOLL says: the queues' events are edge-triggered (mq.h), and
     * poll and select would report their unread eventfds at every turn */
    event_config_set_flag(cfg, EVENT_BASE_FLAG_IGNORE_ENV);
    event_config_require_features(cfg, EV_FEATURE_ET);
    struct event_base *b = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return b;
}

void mq_set_event(mq_t *q, struct event *ev)
{
    /* level-triggered, the unread counter would wake the loop at every poll */
    REQUIRE(ev && (event_get_events(ev) & EV_ET) &&
            (event_base_get_features(event_get_base(ev)) & EV_FEATURE_ET));
    q->ev = ev;
}

static _Thread_local mq_t *t_draining; /* the queue mq_drain is draining on this thread */

/* Whether the caller may wake q through its event: it is q's consumer, and not draining q now
 * (a consumer that pushes to its own queue while draining it waits for the next turn: see
 * mq.h). */
static bool wake_locally(mq_t *q)
{
    return q->ev && q != t_draining &&
           atomic_load_explicit(&q->owner, memory_order_relaxed) == mq_self();
}

/* was_empty: the push made q non-empty. Another thread wakes the consumer only then (the
 * counter it wrote for the first node is still unread). The consumer's own thread wakes it
 * either way: what is queued ahead may be another thread's, whose eventfd the loop sees only
 * at its next epoll_wait, and the caller's node would wait that long with it; activating an
 * event that is active already costs nothing. */
static void mq_wake(mq_t *q, bool was_empty)
{
    if (wake_locally(q)) {
        /* runs later in this turn of its loop */
        event_active(q->ev, EV_READ, 0);
        return;
    }
    if (!was_empty)
        return;
    uint64_t one = 1;
    ssize_t n = write(q->efd, &one, sizeof one);
    (void)n; /* EAGAIN only at 2^64 - 2 writes, never reached (mq.h) */
}

/* Relinks the nodes from p up to (not including) stop the other way round; returns the last of
 * them, now the first (NULL when p is stop), and counts them into *n. */
static mq_node_t *turn_around(mq_node_t *p, const mq_node_t *stop, size_t *n)
{
    mq_node_t *back = NULL;
    for (*n = 0; p != stop; ++*n) {
        mq_node_t *next = p->next;
        p->next = back;
        back = p;
        p = next;
    }
    return back;
}

void mq_push_chain(mq_t *q, mq_node_t *first, mq_node_t *last, size_t n)
{
    /* the stack links newest to oldest: the chain (still the producer's) is turned around,
     * last -> ... -> first, and first is linked to what the stack holds */
    size_t before_last;
    last->next = turn_around(first, last, &before_last);
    /* counted before it can be taken: depth is never below what the stack holds */
    atomic_fetch_add_explicit(&q->depth, n, memory_order_relaxed);
    mq_node_t *old = atomic_load_explicit(&q->top, memory_order_relaxed);
    do
        first->next = old;
    while (!atomic_compare_exchange_weak_explicit(&q->top, &old, last, memory_order_release,
                                                  memory_order_relaxed));
    mq_wake(q, old == NULL);
}

void mq_push(mq_t *q, mq_node_t *node)
{
    mq_push_chain(q, node, node, 1);
}

mq_node_t *mq_take_all(mq_t *q)
{
    unsigned self = mq_self();
    /* stored only when it changes (one consumer thread: seldom, if ever, after the first take) */
    if (atomic_load_explicit(&q->owner, memory_order_relaxed) != self)
        atomic_store_explicit(&q->owner, self, memory_order_relaxed);
    /* the counter is never read: the consumer's event is edge-triggered (mq.h) */
    if (!atomic_load_explicit(&q->top, memory_order_relaxed))
        return NULL;
    /* newest first: turned around, oldest first */
    size_t cnt;
    mq_node_t *all = turn_around(atomic_exchange_explicit(&q->top, NULL, memory_order_acquire),
                                 NULL, &cnt);
    atomic_fetch_sub_explicit(&q->depth, cnt, memory_order_relaxed);
    return all;
}

void mq_drain(mq_t *q, void (*fn)(mq_node_t *node, void *arg), void *arg)
{
    mq_node_t *n = mq_take_all(q);
    mq_t *outer = t_draining;
    t_draining = q;
    while (n) {
        mq_node_t *next = n->next;
        fn(n, arg);
        n = next;
    }
    t_draining = outer;
}
