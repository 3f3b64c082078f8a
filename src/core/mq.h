/* Intrusive multi-producer, single-consumer message queue with an eventfd wake-up.
 *
 * Producers: any thread. Consumer: the one thread that owns the queue.
 * A message carries its own link (no allocation to enqueue). The mutex is held only to splice
 * one node onto the tail or to take the whole list. The producer writes the eventfd only when
 * the queue goes empty -> non-empty; the consumer takes everything at once and drains it, so a
 * busy consumer is woken once per batch, not once per message.
 *
 * Ownership: a pushed node belongs to the consumer from then on.
 */
#ifndef MCPD_CORE_MQ_H
#define MCPD_CORE_MQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct mq_node {
    struct mq_node *next;
} mq_node_t;

typedef struct mq {
    pthread_mutex_t lock;
    mq_node_t *head;
    mq_node_t **tailp;
    atomic_size_t depth; /* nodes pushed and not yet taken */
    int efd;             /* eventfd; the consumer polls it */
} mq_t;

int mq_init(mq_t *q);
void mq_destroy(mq_t *q);
/* Appends node; wakes the consumer if the queue was empty. */
void mq_push(mq_t *q, mq_node_t *node);
/* Appends a chain first..last of n nodes in one splice. */
void mq_push_chain(mq_t *q, mq_node_t *first, mq_node_t *last, size_t n);
/* Consumer: clears the wake-up and takes every queued node (NULL when empty), oldest first. */
mq_node_t *mq_take_all(mq_t *q);
/* Consumer: takes every queued node (mq_take_all) and calls fn(node, arg) on each, oldest first;
 * fn may free the node (its link is read before the call). The one drain loop of the worker and
 * HTTP inboxes. */
void mq_drain(mq_t *q, void (*fn)(mq_node_t *node, void *arg), void *arg);

#endif
