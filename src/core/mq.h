/* Intrusive multi-producer, single-consumer message queue with an eventfd wake-up.
 *
 * Producers: any thread. Consumer: the one thread that owns the queue.
 * A message carries its own link (no allocation to enqueue). No lock: the queue is a stack that
 * a producer pushes onto with a compare-and-swap of its top (retried when another push came
 * first; a chain of nodes in one), and the consumer takes whole with one exchange and turns
 * around, oldest first. The pushes are ordered by their swaps, as they were by a mutex before,
 * but no producer blocks, on another or on the consumer (with a mutex, loops of many cores
 * could queue, and sleep, on each other's mailboxes). Taking everything at once is also what
 * makes the stack safe: no node is ever popped alone, so a reused node on top (ABA) is a top
 * like any other. Another thread writes the eventfd only when its push makes the queue
 * non-empty; the consumer takes everything at once and drains it, so a busy consumer is woken
 * once per batch, not once per message. A queue given its consumer's
 * event (mq_set_event) is woken without the eventfd when the producer is the consumer's own
 * thread: the event is made active, at every push (what is queued ahead may be another
 * thread's, whose eventfd the loop sees only at its next poll), so the consumer runs in the same
 * turn of its loop, with no system call (a co-located worker and its HTTP thread hand each
 * request and reply over so).
 * Such a turn goes on until no event is active: a chain of pushes between two queues of one
 * thread runs to its end before the loop polls again (the HTTP side sends a worker requests and
 * closed connections only, so every chain ends); a consumer pushing to its own queue while it
 * drains it wakes it through the eventfd, for the next turn.
 *
 * The eventfd is never read by the queue: its consumer's event is edge-triggered, so a wake-up
 * costs the producer's write and nothing on the consumer's side.
 *
 * Ownership: a pushed node belongs to the consumer from then on.
 */
#ifndef MCPD_CORE_MQ_H
#define MCPD_CORE_MQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct mq_node {
    struct mq_node *next;
} mq_node_t;

struct event;
struct event_base;

/* A new event_base for a thread's loop (HTTP threads, workers); NULL on failure. With change_list,
 * epoll with libevent's change list: the epoll_ctl calls of one turn of the loop are merged and
 * made once, just before it waits (a request's "stop reading" and its reply's "start writing"
 * become one call). libevent's caveat: no descriptor of the loop may have a copy elsewhere when
 * it is closed, or its deferred EPOLL_CTL_DEL fails and epoll keeps reporting it. fork() makes
 * such copies until the child's exec, so main asks for the change list only when no upstream
 * is configured (the gateway forks its processes). */
struct event_base *loop_base_new(bool change_list);

typedef struct mq {
    _Atomic(mq_node_t *) top; /* the newest node, linked to older ones; NULL when empty */
    atomic_size_t depth;      /* nodes pushed and not yet taken (counted before the push) */
    int efd;                  /* eventfd; the consumer polls it */
    struct event *ev;         /* the consumer's event on efd (mq_set_event), or NULL */
    atomic_uint
        owner; /* the consumer's thread (mq_self), stored at a take that changes it; 0: none yet */
} mq_t;

int mq_init(mq_t *q);
void mq_destroy(mq_t *q);
/* Setup, before any push: ev is the consumer's event on q->efd, EV_READ | EV_PERSIST | EV_ET:
 * the counter is never read, and every write after the loop's last poll wakes it once (epoll
 * reports an edge-triggered eventfd at each write; at a write a second, the counter would take
 * some 10^11 years to fill). A consumer without an event reads the counter itself. */
void mq_set_event(mq_t *q, struct event *ev);
/* Queues node after everything queued; wakes the consumer if the queue was empty, or at once
 * from its own thread. */
void mq_push(mq_t *q, mq_node_t *node);
/* Queues a chain of n nodes in one swap: first linked through next to last (each of them is
 * relinked; last is reached from first, n only counts them for depth). */
void mq_push_chain(mq_t *q, mq_node_t *first, mq_node_t *last, size_t n);
/* Consumer: takes every queued node (NULL when empty), oldest first. */
mq_node_t *mq_take_all(mq_t *q);
/* Consumer: takes every queued node (mq_take_all) and calls fn(node, arg) on each, oldest first;
 * fn may free the node (its link is read before the call). The one drain loop of the worker and
 * HTTP inboxes. */
void mq_drain(mq_t *q, void (*fn)(mq_node_t *node, void *arg), void *arg);

#endif
