/* Micro-benchmark of the mailbox hand-off (core/mq). Threads: main (the consumer) and one producer.
 *
 * The producer pushes N nodes one at a time (mq_push: lock, splice, unlock, eventfd write when
 * the queue was empty), then N more in chains of 64 (mq_push_chain, as a worker splices a turn's
 * messages to an HTTP thread). The consumer polls the eventfd and drains everything each time,
 * as the workers and HTTP threads do. Prints ns per message, messages/s and the mean batch the
 * consumer took per wake-up. Figures only: nothing here asserts on time.
 *
 * usage: micro-mq [N]   (default 2,000,000)
 */
#include "core/mq.h"

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct node {
    mq_node_t link; /* first: a node is its link */
    long seq;
} node_t;

typedef struct run {
    mq_t q;
    node_t *nodes;
    long n;
    int chain;
} run_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *producer(void *arg)
{
    run_t *r = arg;
    if (r->chain <= 1) {
        for (long i = 0; i < r->n; i++)
            mq_push(&r->q, &r->nodes[i].link);
        return NULL;
    }
    for (long i = 0; i < r->n; i += r->chain) {
        long k = r->n - i < r->chain ? r->n - i : r->chain;
        for (long j = 0; j < k - 1; j++)
            r->nodes[i + j].link.next = &r->nodes[i + j + 1].link;
        mq_push_chain(&r->q, &r->nodes[i].link, &r->nodes[i + k - 1].link, (size_t)k);
    }
    return NULL;
}

static int run_once(const char *name, long n, int chain)
{
    run_t r = {.n = n, .chain = chain};
    r.nodes = calloc((size_t)n, sizeof *r.nodes);
    if (!r.nodes || mq_init(&r.q) != 0) {
        fprintf(stderr, "micro-mq: setup failed\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        r.nodes[i].seq = i;
    pthread_t th;
    double t0 = now_s();
    pthread_create(&th, NULL, producer, &r);
    long got = 0, wakeups = 0, expect = 0, order_errors = 0;
    struct pollfd pfd = {.fd = r.q.efd, .events = POLLIN};
    while (got < n) {
        poll(&pfd, 1, 1000);
        uint64_t count;
        ssize_t rd = read(r.q.efd, &count, sizeof count); /* no event: it clears the counter */
        (void)rd;
        mq_node_t *all = mq_take_all(&r.q);
        if (!all)
            continue;
        wakeups++;
        for (mq_node_t *p = all; p; p = p->next) {
            node_t *nd = (node_t *)p;
            order_errors += nd->seq != expect;
            expect = nd->seq + 1;
            got++;
        }
    }
    double dt = now_s() - t0;
    pthread_join(th, NULL);
    printf("mq %-22s %9ld msgs  %7.1f ns/msg  %12.0f msgs/s  %8.1f msgs per wake-up  "
           "(%ld wake-ups, %ld out of order)\n",
           name, n, dt * 1e9 / (double)n, (double)n / dt, (double)got / (double)wakeups, wakeups,
           order_errors);
    mq_destroy(&r.q);
    free(r.nodes);
    return order_errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000000;
    if (n < 1)
        n = 1;
    int rc = run_once("push (one by one)", n, 1);
    rc |= run_once("push_chain (64 a time)", n, 64);
    return rc;
}
