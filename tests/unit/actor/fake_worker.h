/* A fake worker for unit tests of the actor (see fake_worker.c). One thread. */
#ifndef MCPD_TEST_FAKE_WORKER_H
#define MCPD_TEST_FAKE_WORKER_H

#include "actor/actor.h"

struct event_base;

/* The one worker, on a store the test opened; base may be NULL when nothing arms a timer. */
worker_t *fake_worker_new(store_t *store, struct event_base *base);
void fake_worker_free(worker_t *w);
/* What worker_ops returns (the protocol layer's table: the actor stores and frees its state
 * through it); unset, worker_ops fails the test. */
void fake_worker_set_ops(worker_t *w, const actor_ops_t *ops);
/* The frames the actor queued for the HTTP threads, in order (owned by the fake). */
int fake_worker_nsent(const worker_t *w);
hmsg_t *fake_worker_sent(worker_t *w, int i);
void fake_worker_clear_sent(worker_t *w);

#endif
