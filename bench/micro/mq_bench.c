/* Micro-benchmark of the mailbox hand-off (core/mq). Threads: main (the consumer) and P
 * producers.
 *
 * Each producer pushes its share of N nodes one at a time (mq_push: one compare-and-swap, an
 * eventfd write when the queue was empty), then the same again in chains of 64 (mq_push_chain,
 * as a worker splices a turn's messages to an HTTP thread). The consumer polls the eventfd and
 * drains everything each time, as the workers and HTTP threads do. Prints ns per message,
 * messages/s, the mean batch the consumer took per wake-up, and any node out of its producer's
 * order. Figures only: nothing here asserts on time.
 *
 * usage: micro-mq [N] [P]   (default 2,000,000 nodes, 1 producer; at most 64)
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
    long seq;       /* its place in its producer's order */
    int from;       /* its producer */
} node_t;

typedef struct run {
    mq_t q;
    node_t *nodes;
    long n; /* nodes in all */
    int chain;
    int producers;
} run_t;

typedef struct prod {
    run_t *r;
    node_t *nodes; /* this producer's slice */
    long n;
} prod_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *producer(void *arg)
{
    prod_t *pr = arg;
    run_t *r = pr->r;
    node_t *nodes = pr->nodes;
    if (r->chain <= 1) {
        for (long i = 0; i < pr->n; i++)
            mq_push(&r->q, &nodes[i].link);
        return NULL;
    }
    for (long i = 0; i < pr->n; i += r->chain) {
        long k = pr->n - i < r->chain ? pr->n - i : r->chain;
        for (long j = 0; j < k - 1; j++)
            nodes[i + j].link.next = &nodes[i + j + 1].link;
        mq_push_chain(&r->q, &nodes[i].link, &nodes[i + k - 1].link, (size_t)k);
    }
    return NULL;
}

static int run_once(const char *name, long n, int chain, int producers)
{
    run_t r = {.n = n, .chain = chain, .producers = producers};
    r.nodes = calloc((size_t)n, sizeof *r.nodes);
    if (!r.nodes || mq_init(&r.q) != 0) {
        fprintf(stderr, "micro-mq: setup failed\n");
        return 1;
    }
    prod_t prods[64];
    long at = 0;
    for (int p = 0; p < producers; p++) {
        long k = n / producers + (p < n % producers);
        prods[p] = (prod_t){&r, r.nodes + at, k};
        for (long i = 0; i < k; i++)
            r.nodes[at + i] = (node_t){.seq = i, .from = p};
        at += k;
    }
    pthread_t th[64];
    double t0 = now_s();
    for (int p = 0; p < producers; p++)
        pthread_create(&th[p], NULL, producer, &prods[p]);
    long got = 0, wakeups = 0, expect[64] = {0}, order_errors = 0;
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
            order_errors += nd->seq != expect[nd->from];
            expect[nd->from] = nd->seq + 1;
            got++;
        }
    }
    double dt = now_s() - t0;
    for (int p = 0; p < producers; p++)
        pthread_join(th[p], NULL);
    printf("mq %-22s %2d producer%s %9ld msgs  %7.1f ns/msg  %12.0f msgs/s  %8.1f msgs per "
           "wake-up  (%ld wake-ups, %ld out of order)\n",
           name, producers, producers == 1 ? " " : "s", n, dt * 1e9 / (double)n, (double)n / dt,
           (double)got / (double)wakeups, wakeups, order_errors);
    mq_destroy(&r.q);
    free(r.nodes);
    return order_errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000000;
    int producers = argc > 2 ? atoi(argv[2]) : 1;
    if (n < 1)
        n = 1;
    if (producers < 1 || producers > 64) {
        fprintf(stderr, "usage: micro-mq [N] [P]: P producers, 1 to 64\n");
        return 2;
    }
    int rc = run_once("push (one by one)", n, 1, producers);
    rc |= run_once("push_chain (64 a time)", n, 64, producers);
    return rc;
}
