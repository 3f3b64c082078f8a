/* Threads: the admin thread (its loop); the main thread before the loop starts and after it
 * ends (admin_conns_init, admin_conns_free). */
/* The admin listener's connection cap: at most ADMIN_MAX_CONNECTIONS connections are open on
 * it; at the cap its listener stops accepting (accept_guard_hold), and new connections wait in
 * the kernel's backlog until one closes.
 *
 * Why. The admin listener is loopback by default, but a node whose Prometheus scrapes it from
 * another host listens on a reachable address, where anyone may open connections (the
 * --admin-token check comes with a request, and evhttp keeps a silent connection for its 30 s
 * timeout). Unbounded, they took the descriptors the store and the MCP endpoint need (main.c
 * fits --max-connections with FD_RESERVE_MORE for the admin listener and the rest). A flood now
 * waits for the cap's places, and the MCP endpoint and the store keep theirs.
 *
 * How (as http/gate.c for the MCP listeners, on one thread): a connection counts from its
 * accept (on_new_bev, inside libevent's accept loop: evhttp lets us make its bufferevent, and
 * the listener disabled there stops that loop at once) until its close callback, which
 * evhttp calls as it frees the connection. The connection is taken from its bufferevent later
 * in the same loop iteration (on_fresh; libevent 2.1 calls nothing with a new connection). A
 * connection freed before that counts out there. A close releases the listener just before
 * the closed descriptor goes, so for a moment cap + 1 descriptors may be open. */
#include "admin/conns.h"

#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

static struct {
    struct event_base *base;
    accept_guard_t *guard;
    struct event *fresh_ev;
    struct bufferevent *fresh[ADMIN_MAX_CONNECTIONS + 1]; /* accepted this loop iteration */
    int nfresh;
    int open;          /* from accept to the close callback */
    bool held;         /* the listener is held at the cap */
    int64_t last_hold; /* now_mono_ms of the last hold, for the log's episodes */
} C;

static void closed(void)
{
    C.open--;
    if (C.held && C.open < ADMIN_MAX_CONNECTIONS) {
        C.held = false;
        accept_guard_release(C.guard);
    }
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
    closed();
}

static void on_fresh(evutil_socket_t fd, short what, void *arg)
{
    for (int i = 0; i < C.nfresh; i++) {
        struct bufferevent *bev = C.fresh[i];
        void *evcon = NULL;
        bufferevent_getcb(bev, NULL, NULL, NULL, &evcon); /* NULL: evhttp freed it already */
        if (evcon)
            evhttp_connection_set_closecb(evcon, on_close, NULL);
        else
            closed();
        bufferevent_decref(bev);
    }
    C.nfresh = 0;
}

static void hold(void)
{
    int64_t now = now_mono_ms();
    if (!C.last_hold || now - C.last_hold >= ACCEPT_QUIET_MS)
        log_warn("the admin listener stops accepting while %d connections are open on it: new "
                 "ones wait in the kernel's backlog until one closes (logged once until %d s "
                 "pass without a stop; admin_accept_holds_total counts them)",
                 ADMIN_MAX_CONNECTIONS, ACCEPT_QUIET_MS / 1000);
    C.last_hold = now;
    STAT_INC(admin_accept_holds_total);
    C.held = true;
    accept_guard_hold(C.guard);
}

static struct bufferevent *on_new_bev(struct event_base *base, void *arg)
{
    if (C.nfresh > ADMIN_MAX_CONNECTIONS)
        return NULL; /* cannot happen: the listener stops at the cap */
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev)
        return NULL; /* evhttp makes one itself, uncounted */
    bufferevent_incref(bev);
    C.fresh[C.nfresh++] = bev;
    event_active(C.fresh_ev, EV_TIMEOUT, 1);
    if (++C.open >= ADMIN_MAX_CONNECTIONS && !C.held)
        hold();
    return bev;
}

int admin_conns_init(struct evhttp *http, struct event_base *base, accept_guard_t *guard)
{
    C.base = base;
    C.guard = guard;
    C.fresh_ev = event_new(base, -1, 0, on_fresh, NULL);
    if (!C.fresh_ev)
        return -1;
    evhttp_set_bevcb(http, on_new_bev, NULL);
    return 0;
}

void admin_conns_free(void)
{
    on_fresh(-1, 0, NULL); /* the references of connections accepted in the last iteration */
    if (C.fresh_ev)
        event_free(C.fresh_ev);
    C.fresh_ev = NULL;
}
