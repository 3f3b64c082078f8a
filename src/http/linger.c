/* Threads: HTTP threads (each its own lingering connections); the main thread at the stop
 * (http_linger_free, once the loops have ended). */
/* A lingering close, for the refusals that close a connection while its client may still be
 * sending: a body over --max-body (413), a head over --max-headers (431), a framing evhttp
 * cannot be trusted with (400) (endpoint.c's refuse_framing). The refusal is written whole, then
 * evhttp closes the connection; but a socket closed with input unread, or with input still to
 * come, makes the kernel answer with a reset, and a reset that reaches the client before it has
 * read the refusal discards it: the client saw EPIPE or "connection reset" instead of the 413
 * (Node's fetch: one time in three for a 5 MB body).
 *
 * So such a connection's socket outlives evhttp's connection: its close callback (conn.c's
 * on_conn_close, after the refusal was written) takes the descriptor over from the connection's
 * bufferevent (bufferevent_setfd -1: freed after the callback, it closes nothing, and evhttp
 * only shuts the descriptor for writing, since the bufferevent is ours, made with
 * BEV_OPT_CLOSE_ON_FREE), sends the FIN (shutdown for writing), and reads and drops what still
 * comes until the client closes, it sends nothing for LINGER_IDLE_MS, or LINGER_MAX_MS have
 * passed; then it closes. A duplicate (dup) would not do: the loops batch their epoll changes
 * (libevent's change list, which its documentation says is unsafe with duplicated
 * descriptors), so the original number would be closed before its removal from epoll is made,
 * and the kernel keeps that registration while the duplicate holds the socket open, reporting
 * the lingering socket's events under a closed number, or under the next connection's that
 * takes it.
 *
 * Until it closes, the socket stays in the accept gate's count (gate.c) and in its address's
 * open connections (PR_OPEN, which conn.c bounds at twice an address's share of
 * --max-connections): else one address, refused again and again and trickling into each
 * lingering socket, could hold the gate's twice --max-connections alone, and the listeners
 * would stop for every other client. A thread lingers on at most LINGER_PER_THREAD connections at once;
 * past that a refused connection closes at once, as does one whose bufferevent evhttp made
 * (not seen at accept: evhttp closes its descriptor itself). Nothing lingers at the stop. */
#include "http/internal.h"

#include "core/log.h"
#include "core/util.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct hlinger {
    http_thread_t *t;
    int fd;
    principal_t *principal; /* a reference: its address's PR_OPEN unit is held until the end */
    struct event *ev;
    int64_t until; /* now_mono_ms past which it closes whatever comes */
    struct hlinger *next, **pprev;
} hlinger_t;

static void end(hlinger_t *g)
{
    http_thread_t *t = g->t;
    event_free(g->ev);
    close(g->fd);
    if (g->next)
        g->next->pprev = g->pprev;
    *g->pprev = g->next;
    t->nlinger--;
    principal_give(g->principal, PR_OPEN);
    principal_unref(g->principal);
    free(g);
    http_gate_closed(t); /* counted from its accept until now */
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    hlinger_t *g = arg;
    if (what & EV_TIMEOUT) {
        end(g); /* LINGER_IDLE_MS without a byte */
        return;
    }
    char buf[16384];
    for (int i = 0; i < 16; i++) { /* 256 KiB a turn at most: the loop serves others too */
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            end(g); /* the client closed (or reset): it has had the refusal */
            return;
        }
        if (n < 0)
            break;
    }
    if (now_mono_ms() >= g->until)
        end(g);
}

void http_linger_mark(http_thread_t *t, struct evhttp_request *req)
{
    hlink_t *l = ptrmap_get(&t->links, evhttp_request_get_connection(req));
    if (l)
        l->linger = true;
}

bool http_linger_start(hlink_t *l)
{
    http_thread_t *t = l->t;
    if (!l->linger || !l->own_bev || g_http_self != t || t->nlinger >= LINGER_PER_THREAD)
        return false;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(l->evcon);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0)
        return false;
    hlinger_t *g = xcalloc(1, sizeof *g);
    g->ev = event_new(t->base, fd, EV_READ | EV_PERSIST, on_read, g);
    struct timeval idle = {LINGER_IDLE_MS / 1000, (LINGER_IDLE_MS % 1000) * 1000};
    if (!g->ev || event_add(g->ev, &idle) != 0 || bufferevent_setfd(bev, -1) != 0) {
        if (g->ev)
            event_free(g->ev);
        free(g);
        return false;
    }
    shutdown(fd, SHUT_WR); /* the refusal is written: the FIN follows it */
    g->t = t;
    g->fd = (int)fd;
    g->principal = principal_ref(l->principal);
    g->until = now_mono_ms() + LINGER_MAX_MS;
    g->next = t->lingering;
    if (g->next)
        g->next->pprev = &g->next;
    g->pprev = &t->lingering;
    t->lingering = g;
    t->nlinger++;
    return true;
}

void http_linger_free(http_thread_t *t)
{
    while (t->lingering)
        end(t->lingering);
}
