/* Unit tests: the intrusive MPSC queue with eventfd wake-up (src/core/mq.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <event2/thread.h>

#include "core/mq.h"

typedef struct item {
    mq_node_t node; /* first member: a node pointer is an item pointer */
    int producer;
    int n;
} item_t;

static item_t *as_item(mq_node_t *n)
{
    return (item_t *)(void *)n;
}

static bool efd_readable(const mq_t *q, int timeout_ms)
{
    struct pollfd p = {.fd = q->efd, .events = POLLIN};
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* The eventfd writes since the last look (the queue never reads its counter; this clears it). */
static uint64_t efd_writes(const mq_t *q)
{
    uint64_t v = 0;
    return read(q->efd, &v, sizeof v) == (ssize_t)sizeof v ? v : 0;
}

static void an_empty_queue_yields_nothing_and_is_not_readable(void **state)
{
    mq_t q;
    assert_int_equal(mq_init(&q), 0);
    assert_true(q.efd >= 0);
    assert_false(efd_readable(&q, 0));
    assert_null(mq_take_all(&q));
    assert_int_equal(atomic_load(&q.depth), 0);
    mq_destroy(&q);
    assert_int_equal(q.efd, -1);
}

static void pushed_nodes_are_taken_oldest_first(void **state)
{
    mq_t q;
    assert_int_equal(mq_init(&q), 0);
    item_t it[5];
    for (int i = 0; i < 5; i++) {
        it[i].n = i;
        mq_push(&q, &it[i].node);
    }
    assert_int_equal(atomic_load(&q.depth), 5);
    mq_node_t *all = mq_take_all(&q);
    int expect = 0;
    for (mq_node_t *p = all; p; p = p->next)
        assert_int_equal(as_item(p)->n, expect++);
    assert_int_equal(expect, 5);
    assert_int_equal(atomic_load(&q.depth), 0);
    assert_null(mq_take_all(&q));
    mq_destroy(&q);
}

static void
only_the_push_onto_an_empty_queue_writes_the_eventfd_and_take_reads_nothing(void **state)
{
    mq_t q;
    assert_int_equal(mq_init(&q), 0);
    item_t a = {.n = 1}, b = {.n = 2};
    mq_push(&q, &a.node);
    assert_true(efd_readable(&q, 0));
    mq_push(&q, &b.node);
    mq_node_t *all = mq_take_all(&q);
    assert_ptr_equal(all, &a.node);
    assert_true(efd_readable(&q, 0)); /* the counter is the consumer's event's, not the take's */
    assert_int_equal(efd_writes(&q), 1);
    mq_destroy(&q);
}

static void the_queue_is_reusable_after_take(void **state)
{
    mq_t q;
    assert_int_equal(mq_init(&q), 0);
    item_t a = {.n = 1}, b = {.n = 2};
    mq_push(&q, &a.node);
    assert_ptr_equal(mq_take_all(&q), &a.node);
    mq_push(&q, &b.node);
    assert_int_equal(efd_writes(&q), 2); /* empty again after the take: woken again */
    mq_node_t *all = mq_take_all(&q);
    assert_ptr_equal(all, &b.node);
    assert_null(all->next);
    mq_destroy(&q);
}

/* mq_drain's callback: notes the item's number and clears its link, as a consumer that frees or
 * reuses the node does. */
static void note_and_unlink(mq_node_t *n, void *arg)
{
    int *seen = arg;
    seen[seen[0]++ + 1] = ((item_t *)n)->n;
    n->next = NULL;
}

static void a_drain_calls_back_on_every_node_oldest_first_and_empties_the_queue(void **state)
{
    mq_t q;
    assert_int_equal(mq_init(&q), 0);
    item_t it[3] = {{.n = 7}, {.n = 8}, {.n = 9}};
    for (int i = 0; i < 3; i++)
        mq_push(&q, &it[i].node);
    int seen[4] = {0};
    mq_drain(&q, note_and_unlink, seen);
    assert_int_equal(seen[0], 3);
    assert_int_equal(seen[1], 7);
    assert_int_equal(seen[2], 8);
    assert_int_equal(seen[3], 9);
    assert_int_equal(atomic_load(&q.depth), 0);
    assert_int_equal(efd_writes(&q), 1); /* one wake-up for the three */
    mq_drain(&q, note_and_unlink, seen); /* empty: no call */
    assert_int_equal(seen[0], 3);
    mq_destroy(&q);
}

static void a_chain_is_appended_in_one_splice_after_earlier_nodes(void **state)
{
    mq_t q;
    assert_int_equal(mq_init(&q), 0);
    item_t first = {.n = 0}, c[3];
    mq_push(&q, &first.node);
    for (int i = 0; i < 3; i++) {
        c[i].n = i + 1;
        c[i].node.next = i < 2 ? &c[i + 1].node : &first.node; /* stale link: must be reset */
    }
    mq_push_chain(&q, &c[0].node, &c[2].node, 3);
    assert_int_equal(atomic_load(&q.depth), 4);
    item_t after = {.n = 4};
    mq_push(&q, &after.node);
    int expect = 0;
    for (mq_node_t *p = mq_take_all(&q); p; p = p->next)
        assert_int_equal(as_item(p)->n, expect++);
    assert_int_equal(expect, 5);
    assert_int_equal(atomic_load(&q.depth), 0);
    mq_destroy(&q);
}

/* ---- multiple producers ---- */

#define PRODUCERS 4
#define PER_PRODUCER 10000

typedef struct producer_arg {
    mq_t *q;
    item_t *items;
    int id;
} producer_arg_t;

static void *producer(void *arg)
{
    producer_arg_t *a = arg;
    for (int i = 0; i < PER_PRODUCER; i++) {
        a->items[i].producer = a->id;
        a->items[i].n = i;
        mq_push(a->q, &a->items[i].node);
    }
    return NULL;
}

static void four_producers_deliver_every_node_exactly_once_in_order(void **state)
{
    mq_t q;
    assert_int_equal(mq_init(&q), 0);
    item_t *items = calloc(PRODUCERS * PER_PRODUCER, sizeof *items);
    unsigned char *seen = calloc(PRODUCERS * PER_PRODUCER, 1);
    assert_non_null(items);
    assert_non_null(seen);
    pthread_t th[PRODUCERS];
    producer_arg_t args[PRODUCERS];
    for (int p = 0; p < PRODUCERS; p++) {
        args[p] = (producer_arg_t){&q, items + p * PER_PRODUCER, p};
        assert_int_equal(pthread_create(&th[p], NULL, producer, &args[p]), 0);
    }
    int next[PRODUCERS] = {0};
    int received = 0, wakeups = 0, idle_polls = 0;
    /* the consumer waits as a loop does: edge-triggered, the counter never read */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    assert_true(ep >= 0);
    struct epoll_event want = {.events = EPOLLIN | EPOLLET};
    assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, q.efd, &want), 0);
    while (received < PRODUCERS * PER_PRODUCER) {
        struct epoll_event got;
        int r = epoll_wait(ep, &got, 1, 1000);
        assert_true(r >= 0);
        if (r == 0) {
            /* a second without a wake-up while nodes are missing: a lost wake-up */
            if (++idle_polls >= 5)
                fail_msg("no wake-up after %d of %d nodes", received, PRODUCERS * PER_PRODUCER);
            continue;
        }
        wakeups++;
        for (mq_node_t *n = mq_take_all(&q); n; n = n->next) {
            item_t *it = as_item(n);
            assert_true(it->producer >= 0 && it->producer < PRODUCERS);
            size_t idx = (size_t)it->producer * PER_PRODUCER + (size_t)it->n;
            assert_int_equal(seen[idx], 0);
            seen[idx] = 1;
            /* one producer's nodes arrive in the order it pushed them */
            assert_int_equal(it->n, next[it->producer]);
            next[it->producer]++;
            received++;
        }
    }
    for (int p = 0; p < PRODUCERS; p++)
        assert_int_equal(pthread_join(th[p], NULL), 0);
    close(ep);
    for (size_t i = 0; i < PRODUCERS * PER_PRODUCER; i++)
        assert_int_equal(seen[i], 1);
    assert_true(wakeups >= 1);
    assert_null(mq_take_all(&q));
    assert_int_equal(atomic_load(&q.depth), 0);
    free(items);
    free(seen);
    mq_destroy(&q);
}

/* ---- a loop's own queues (mq_set_event): two queues on one loop, as an HTTP thread and its
 * co-located worker ---- */

typedef struct loop2 {
    struct event_base *base;
    mq_t a, b;
    struct event *eva, *evb, *kick;
    item_t first, reply, again, other;
    int a_turns, b_got, a_got;
    bool push_to_self; /* on_a pushes `again` onto a while draining it */
    bool other_first;  /* on_kick: another thread pushes `other` onto a just before */
} loop2_t;

static void a_node(mq_node_t *n, void *arg)
{
    loop2_t *l = arg;
    l->a_got++;
    if (l->push_to_self && as_item(n) == &l->first)
        mq_push(&l->a, &l->again.node);
    else if (as_item(n) == &l->first)
        mq_push(&l->b, &l->reply.node); /* the worker's frames back to its HTTP thread */
}

static void on_a(evutil_socket_t fd, short what, void *arg)
{
    loop2_t *l = arg;
    l->a_turns++;
    mq_drain(&l->a, a_node, l);
}

static void on_b(evutil_socket_t fd, short what, void *arg)
{
    loop2_t *l = arg;
    for (mq_node_t *n = mq_take_all(&l->b); n; n = n->next)
        l->b_got++;
}

static void *push_other(void *arg)
{
    loop2_t *l = arg;
    mq_push(&l->a, &l->other.node);
    return NULL;
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    loop2_t *l = arg;
    if (l->other_first) { /* after this turn's poll: its eventfd is seen at the next one */
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, push_other, l), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
    }
    mq_push(&l->a, &l->first.node); /* the HTTP thread hands a request to its worker */
}

static void loop2_open(loop2_t *l)
{
    memset(l, 0, sizeof *l);
    assert_non_null(l->base = loop_base_new(true));
    assert_int_equal(mq_init(&l->a), 0);
    assert_int_equal(mq_init(&l->b), 0);
    l->eva = event_new(l->base, l->a.efd, EV_READ | EV_PERSIST | EV_ET, on_a, l);
    l->evb = event_new(l->base, l->b.efd, EV_READ | EV_PERSIST | EV_ET, on_b, l);
    l->kick = event_new(l->base, -1, 0, on_kick, l);
    mq_set_event(&l->a, l->eva);
    mq_set_event(&l->b, l->evb);
    event_add(l->eva, NULL);
    event_add(l->evb, NULL);
    /* the consumer's thread is the one that takes: this one, as a loop's first drain would */
    assert_null(mq_take_all(&l->a));
    assert_null(mq_take_all(&l->b));
}

static void loop2_close(loop2_t *l)
{
    event_free(l->eva);
    event_free(l->evb);
    event_free(l->kick);
    mq_destroy(&l->a);
    mq_destroy(&l->b);
    event_base_free(l->base);
}

static void
a_push_on_the_consumers_thread_is_served_in_the_same_turn_without_the_eventfd(void **state)
{
    loop2_t l;
    loop2_open(&l);
    event_active(l.kick, EV_TIMEOUT, 0);
    /* one turn: the kick pushes onto a, a's consumer runs and pushes onto b, b's runs */
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    assert_int_equal(l.a_turns, 1);
    assert_int_equal(l.a_got, 1);
    assert_int_equal(l.b_got, 1);
    assert_int_equal(efd_writes(&l.a), 0); /* no eventfd was written */
    assert_int_equal(efd_writes(&l.b), 0);
    loop2_close(&l);
}

static void *push_first(void *arg)
{
    loop2_t *l = arg;
    mq_push(&l->a, &l->first.node);
    return NULL;
}

static void a_push_from_another_thread_wakes_the_loop_through_the_eventfd(void **state)
{
    loop2_t l;
    loop2_open(&l);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, push_first, &l), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(efd_readable(&l.a, 0));
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE), 0); /* woken by the eventfd */
    assert_int_equal(l.a_got, 1);
    assert_int_equal(l.b_got, 1);       /* the reply, from the loop's own thread: the same turn */
    assert_true(efd_readable(&l.a, 0)); /* never read */
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    assert_int_equal(l.a_turns, 1); /* edge-triggered: the write wakes the loop once */
    loop2_close(&l);
}

static void
a_push_on_the_consumers_thread_behind_another_threads_is_served_in_the_same_turn(void **state)
{
    loop2_t l;
    loop2_open(&l);
    l.other_first = true;
    event_active(l.kick, EV_TIMEOUT, 0);
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    /* both nodes, and the reply, in the turn of the local push: not a turn later with the
     * other thread's eventfd */
    assert_int_equal(l.a_got, 2);
    assert_int_equal(l.b_got, 1);
    assert_int_equal(l.a_turns, 1);
    /* the other thread's write, after this turn's poll, wakes the next turn once: it finds
     * nothing; the one after does not run */
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    assert_int_equal(l.a_turns, 2);
    assert_int_equal(l.a_got, 2);
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    assert_int_equal(l.a_turns, 2);
    loop2_close(&l);
}

static void a_consumer_pushing_to_its_own_queue_is_served_in_the_next_turn(void **state)
{
    loop2_t l;
    loop2_open(&l);
    l.push_to_self = true;
    event_active(l.kick, EV_TIMEOUT, 0);
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    assert_int_equal(l.a_got, 1); /* `again` waits: the loop polls first */
    assert_true(efd_readable(&l.a, 0));
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE), 0);
    assert_int_equal(l.a_got, 2);
    assert_int_equal(l.a_turns, 2);
    assert_int_equal(event_base_loop(l.base, EVLOOP_ONCE | EVLOOP_NONBLOCK), 0);
    assert_int_equal(l.a_turns, 2); /* woken once */
    loop2_close(&l);
}

int main(void)
{
    evthread_use_pthreads(); /* as main.c: another thread activates a loop's events */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_queue_yields_nothing_and_is_not_readable),
        cmocka_unit_test(pushed_nodes_are_taken_oldest_first),
        cmocka_unit_test(
            only_the_push_onto_an_empty_queue_writes_the_eventfd_and_take_reads_nothing),
        cmocka_unit_test(the_queue_is_reusable_after_take),
        cmocka_unit_test(a_chain_is_appended_in_one_splice_after_earlier_nodes),
        cmocka_unit_test(a_drain_calls_back_on_every_node_oldest_first_and_empties_the_queue),
        cmocka_unit_test(four_producers_deliver_every_node_exactly_once_in_order),
        cmocka_unit_test(
            a_push_on_the_consumers_thread_is_served_in_the_same_turn_without_the_eventfd),
        cmocka_unit_test(a_push_from_another_thread_wakes_the_loop_through_the_eventfd),
        cmocka_unit_test(
            a_push_on_the_consumers_thread_behind_another_threads_is_served_in_the_same_turn),
        cmocka_unit_test(a_consumer_pushing_to_its_own_queue_is_served_in_the_next_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
