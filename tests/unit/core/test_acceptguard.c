/* Unit tests: a listener's pause when accept() fails, and its hold by its owner
 * (src/core/acceptguard.c), on a real listening socket on 127.0.0.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>

#include "core/acceptguard.h"
#include "core/util.h"

typedef struct fixture {
    struct event_base *base;
    struct evconnlistener *lev;
    accept_guard_t guard;
    struct sockaddr_in addr;
    int accepted;
    bool hold_at_first; /* the callback holds the listener at its first accept (the gate's way) */
    int clients[8];
    int nclients;
} fixture_t;

static void on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
                      int socklen, void *arg)
{
    fixture_t *f = arg;
    close(fd);
    if (++f->accepted == 1 && f->hold_at_first)
        accept_guard_hold(&f->guard);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->base = event_base_new();
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    f->addr = (struct sockaddr_in){.sin_family = AF_INET,
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof f->addr;
    if (bind(fd, (struct sockaddr *)&f->addr, len) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&f->addr, &len) != 0)
        return -1;
    f->lev = evconnlistener_new(f->base, on_accept, f, LEV_OPT_CLOSE_ON_FREE, 0, fd);
    if (!f->lev || accept_guard_init(&f->guard, f->lev, "test") != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < f->nclients; i++)
        close(f->clients[i]);
    accept_guard_free(&f->guard);
    evconnlistener_free(f->lev);
    event_base_free(f->base);
    free(f);
    return 0;
}

/* A connection the kernel completes into the listener's backlog. */
static void connect_one(fixture_t *f)
{
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c, (struct sockaddr *)&f->addr, sizeof f->addr), 0);
    f->clients[f->nclients++] = c;
}

/* Runs the loop for ms milliseconds (what is due runs; the listener accepts if enabled). */
static void run_for(fixture_t *f, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(f->base, &tv);
    event_base_dispatch(f->base);
}

/* The process runs out of descriptors while the listener's loop runs for ms: accept() fails with
 * EMFILE and the guard pauses the listener. */
static void run_out_of_descriptors(fixture_t *f, int ms)
{
    struct rlimit was;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    int lowest_free = dup(0);
    assert_true(lowest_free >= 0);
    close(lowest_free);
    struct rlimit low = {(rlim_t)lowest_free, was.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    run_for(f, ms);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
}

static void a_held_listener_accepts_nothing_until_released(void **state)
{
    fixture_t *f = *state;
    accept_guard_hold(&f->guard);
    connect_one(f);
    run_for(f, 20);
    assert_int_equal(f->accepted, 0);
    accept_guard_release(&f->guard);
    run_for(f, 20);
    assert_int_equal(f->accepted, 1);
}

static void a_hold_in_the_accept_callback_stops_libevents_accept_loop_there(void **state)
{
    fixture_t *f = *state;
    f->hold_at_first = true;
    for (int i = 0; i < 3; i++)
        connect_one(f);
    run_for(f, 20);
    assert_int_equal(f->accepted, 1); /* the other two wait in the backlog */
    accept_guard_release(&f->guard);
    run_for(f, 20);
    assert_int_equal(f->accepted, 3);
}

static void a_release_during_a_pause_leaves_the_enable_to_the_pause_s_end(void **state)
{
    fixture_t *f = *state;
    connect_one(f);
    int64_t paused_at = now_mono_ms(); /* at the latest */
    run_out_of_descriptors(f, 20);
    assert_int_equal(f->accepted, 0);
    accept_guard_hold(&f->guard);
    accept_guard_release(&f->guard);
    run_for(f, ACCEPT_PAUSE_MS / 2);
    /* still paused: unless the process was descheduled past the pause's end (a loaded machine) */
    if (now_mono_ms() - paused_at < ACCEPT_PAUSE_MS - 10)
        assert_int_equal(f->accepted, 0);
    run_for(f, ACCEPT_PAUSE_MS);
    assert_int_equal(f->accepted, 1);
}

static void a_pause_that_ends_while_held_does_not_enable_the_listener(void **state)
{
    fixture_t *f = *state;
    connect_one(f);
    run_out_of_descriptors(f, 20);
    accept_guard_hold(&f->guard);
    run_for(f, ACCEPT_PAUSE_MS * 2);
    assert_int_equal(f->accepted, 0); /* the pause ended, the hold did not */
    accept_guard_release(&f->guard);
    run_for(f, 20);
    assert_int_equal(f->accepted, 1);
}

int main(void)
{
    evthread_use_pthreads();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_held_listener_accepts_nothing_until_released, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_hold_in_the_accept_callback_stops_libevents_accept_loop_there, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_release_during_a_pause_leaves_the_enable_to_the_pause_s_end, setup, teardown),
        cmocka_unit_test_setup_teardown(a_pause_that_ends_while_held_does_not_enable_the_listener,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
