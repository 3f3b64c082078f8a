/* Threads: producers on any thread; the consumer on the queue's owner thread. */
/* Intrusive MPSC queue with eventfd wake-up. Producers: any thread; consumer: the owner. */
#include "core/mq.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int mq_init(mq_t *q)
{
    q->head = NULL;
    q->tailp = &q->head;
    atomic_init(&q->depth, 0);
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0)
        return -errno;
    pthread_mutex_init(&q->lock, NULL);
    return 0;
}

void mq_destroy(mq_t *q)
{
    if (q->efd >= 0)
        close(q->efd);
    q->efd = -1;
    pthread_mutex_destroy(&q->lock);
}

static void mq_wake(mq_t *q)
{
    uint64_t one = 1;
    ssize_t n = write(q->efd, &one, sizeof one);
    (void)n; /* EAGAIN means the counter is already non-zero: the consumer is woken anyway */
}

void mq_push_chain(mq_t *q, mq_node_t *first, mq_node_t *last, size_t n)
{
    last->next = NULL;
    pthread_mutex_lock(&q->lock);
    int was_empty = q->head == NULL;
    *q->tailp = first;
    q->tailp = &last->next;
    pthread_mutex_unlock(&q->lock);
    atomic_fetch_add_explicit(&q->depth, n, memory_order_relaxed);
    if (was_empty)
        mq_wake(q);
}

void mq_push(mq_t *q, mq_node_t *node)
{
    mq_push_chain(q, node, node, 1);
}

mq_node_t *mq_take_all(mq_t *q)
{
    uint64_t v;
    ssize_t n = read(q->efd, &v, sizeof v);
    (void)n;
    pthread_mutex_lock(&q->lock);
    mq_node_t *all = q->head;
    q->head = NULL;
    q->tailp = &q->head;
    pthread_mutex_unlock(&q->lock);
    size_t cnt = 0;
    for (mq_node_t *p = all; p; p = p->next)
        cnt++;
    atomic_fetch_sub_explicit(&q->depth, cnt, memory_order_relaxed);
    return all;
}

void mq_drain(mq_t *q, void (*fn)(mq_node_t *node, void *arg), void *arg)
{
    mq_node_t *n = mq_take_all(q);
    while (n) {
        mq_node_t *next = n->next;
        fn(n, arg);
        n = next;
    }
}
