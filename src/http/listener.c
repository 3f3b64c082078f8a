/* Threads: main thread (http_init/run/quiesce/stop/free) and the HTTP threads. */
/* The HTTP threads: listening sockets (SO_REUSEPORT, one per thread), their loops, start and
 * the stop order. Main thread (http_init/run/quiesce/stop/free) and the HTTP threads. */
#include "http/internal.h"
#include "http/oauth.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/auth.h"
#include "core/config.h"
#include "core/cors.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "core/stats.h"
#include "wire/checks.h"
#include "wire/eventid.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"
#include "wire/sse.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

http_thread_t *g_http;
int g_http_n;
hostcheck_t g_hostcheck;
_Thread_local http_thread_t *g_http_self;

/* ---- threads ---- */

/* SO_REUSEPORT would let a second server silently share the port with us (same user): a
 * plain bind tells whether anyone already holds it. */
static bool port_taken(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bool taken = bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno == EADDRINUSE;
    close(fd);
    return taken;
}

static evutil_socket_t bind_reuseport(const char *host, int port, bool first)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0) {
        log_error("cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    evutil_socket_t fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (first && port != 0 && port_taken(ai)) {
            log_error("cannot listen on %s:%d: address already in use", host, port);
            break;
        }
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        /* accepted sockets inherit it: SSE events are small writes that must not wait for
         * the peer's delayed ACK (Nagle), or a multi-event stream stalls ~40 ms per event */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0)
            break;
        log_error("cannot listen on %s:%d: %s", host, port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int bound_port_of(evutil_socket_t fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void *http_main(void *arg)
{
    http_thread_t *t = arg;
    char name[16];
    snprintf(name, sizeof name, "http%u", t->idx);
    log_set_thread_name(name);
    g_http_self = t;
    event_base_dispatch(t->base);
    return NULL;
}

int http_init(int n, const char *host, int port, int *bound_port)
{
    g_http_n = n;
    g_http = xcalloc((size_t)n, sizeof *g_http);
    for (int i = 0; i < n; i++)
        g_http[i].fd = -1;
    for (int i = 0; i < n; i++) {
        http_thread_t *t = &g_http[i];
        t->idx = (uint32_t)i;
        t->fd = bind_reuseport(host, port, i == 0);
        if (t->fd < 0)
            return -1;
        if (port == 0)
            port = bound_port_of(t->fd);                 /* the other threads join the same port */
        t->base = loop_base_new(g_cfg.n_upstreams == 0); /* mq.h: fork and the change list */
        t->http = evhttp_new(t->base);
        if (!t->base || !t->http || mq_init(&t->inbox) != 0)
            return -1;
        /* every method reaches the callbacks, so that every answer is the server's, counted:
         * CONNECT is refused at once (http_refuse_connect), TRACE gets 405 like PUT, and the
         * methods evhttp does not know (its private bit 1 << 15) get 501 (http_refuse_method) */
        evhttp_set_allowed_methods(t->http, 0xffff);
        /* bodiless replies (202, a DELETE's 200) carry no Content-Type rather than libevent's
         * default text/html; every reply with a body names its own */
        evhttp_set_default_content_type(t->http, NULL);
        /* the input scanner refuses past these first (input.c); evhttp's own head limit leaves
         * room for what its cut puts in */
        evhttp_set_max_body_size(t->http, g_cfg.max_body);
        evhttp_set_max_headers_size(t->http, g_cfg.max_headers + HTTPSCAN_END_MAX);
        evhttp_set_timeout(t->http, (int)g_cfg.read_timeout_s); /* inactivity (input.c) */
        struct timeval rt = {g_cfg.read_timeout_s, 0};
        t->read_deadline = event_base_init_common_timeout(t->base, &rt);
        evhttp_set_cb(t->http, "/mcp", http_on_mcp, t);
        evhttp_set_gencb(t->http, http_on_other, t);
        evhttp_set_bevcb(t->http, http_on_new_bev, t);
        t->fresh_ev = event_new(t->base, -1, 0, http_on_fresh, t);
        t->flush_ev = event_new(t->base, -1, 0, http_on_flush, t);
        if (!t->fresh_ev || !t->flush_ev || http_gate_init(t) != 0)
            return -1;
        t->bound = evhttp_accept_socket_with_handle(t->http, t->fd);
        if (!t->bound ||
            accept_guard_init(&t->guard, evhttp_bound_socket_get_listener(t->bound), "MCP") != 0)
            return -1;
        t->inbox_ev = event_new(t->base, t->inbox.efd, EV_READ | EV_PERSIST | EV_ET, http_on_inbox,
                                t);
        mq_set_event(&t->inbox, t->inbox_ev);
        event_add(t->inbox_ev, NULL);
    }
    *bound_port = port;
    /* a --cors-origin passes the Origin check too; '*' lets every Origin through (the Host
     * check stays: it is what stops DNS rebinding) */
    char *origins[2 * CFG_MAX_LIST];
    /* the loopback names and --allowed-host under http and https, then these: all must fit,
     * or a --cors-origin would get CORS headers and still fail the Origin check */
    _Static_assert(2 * (3 + CFG_MAX_LIST) + 2 * CFG_MAX_LIST <= HOSTCHECK_MAX,
                   "hostcheck lists too short for the flags");
    int n_origins = 0;
    for (int i = 0; i < g_cfg.n_allowed_origins; i++)
        origins[n_origins++] = g_cfg.allowed_origins[i];
    for (int i = 0; i < g_cfg.n_cors_origins; i++)
        if (strcmp(g_cfg.cors_origins[i], "*") != 0)
            origins[n_origins++] = g_cfg.cors_origins[i];
    hostcheck_init(&g_hostcheck, host, port, g_cfg.allowed_hosts, g_cfg.n_allowed_hosts, origins,
                   n_origins);
    if (cors_any_origin(g_cfg.cors_origins, g_cfg.n_cors_origins))
        g_hostcheck.check_origin = false; /* only with authentication on (core/config.c) */
    if (!g_hostcheck.check_host)
        log_warn(
            "listening on a wildcard address without --allowed-host: Host and Origin are not checked");
    return 0;
}

struct event_base *http_base(int i)
{
    return g_http[i].base;
}

int http_run(void)
{
    for (int i = 0; i < g_http_n; i++) {
        if (pthread_create(&g_http[i].thread, NULL, http_main, &g_http[i]) != 0)
            return -1;
        g_http[i].started = true;
    }
    return 0;
}

/* The thread's listening socket closes (its loop's thread, or main before the loop runs). */
static void unlisten(http_thread_t *t)
{
    if (!t->bound)
        return;
    accept_guard_free(&t->guard);
    evhttp_del_accept_socket(t->http, t->bound);
    t->bound = NULL;
}

void http_unlisten(void)
{
    for (int i = 0; i < g_http_n; i++)
        if (!g_http[i].started)
            unlisten(&g_http[i]);
}

static pthread_mutex_t quiesce_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t quiesce_cv = PTHREAD_COND_INITIALIZER;
static int quiesced;

static void quiesce_step_done(void)
{
    pthread_mutex_lock(&quiesce_mu);
    quiesced++;
    pthread_cond_broadcast(&quiesce_cv);
    pthread_mutex_unlock(&quiesce_mu);
}

/* The quiesce's first step, on every HTTP thread before any takes the second: the streams end,
 * and the JSON answers their connections held (fence.c) go to their own threads, whose second
 * step sends them instead of a "shutting down" for a call that ran. */
static void on_quiesce_streams(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    /* frames the workers queued before the stop (the listen streams' closing results) go out
     * before the streams end */
    http_on_inbox(-1, 0, t);
    t->stopping = true;
    unlisten(t);
    for (uint32_t i = 0; i < t->nslots; i++)
        if (t->slots[i] && t->slots[i]->state == H_SSE)
            http_end_stream_at_stop(t->slots[i]);
    for (size_t i = 0; i < t->links.cap; i++)
        if (t->links.keys[i])
            http_fence_end(t->links.vals[i]);
    quiesce_step_done();
}

static void on_quiesce(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    http_on_inbox(-1, 0, t); /* the answers the first step passed on, and any late frames */
    for (uint32_t i = 0; i < t->nslots; i++) {
        hconn_t *c = t->slots[i];
        if (!c)
            continue;
        if (c->state == H_SSE) {
            http_end_stream_at_stop(c);
        } else {
            http_reply_retry(c->req, c->id, MCP_ERR_BAD_REQUEST, "the server is shutting down",
                             "5");
            http_hconn_free(c);
        }
    }
    quiesce_step_done();
}

static void quiesce_step(event_callback_fn step)
{
    int n = 0;
    for (int i = 0; i < g_http_n; i++) {
        if (g_http[i].started) {
            event_base_once(g_http[i].base, -1, EV_TIMEOUT, step, &g_http[i], NULL);
            n++;
        }
    }
    pthread_mutex_lock(&quiesce_mu);
    while (quiesced < n)
        pthread_cond_wait(&quiesce_cv, &quiesce_mu);
    quiesced = 0;
    pthread_mutex_unlock(&quiesce_mu);
}

void http_quiesce(void)
{
    quiesce_step(on_quiesce_streams);
    quiesce_step(on_quiesce);
}

/* HTTP_DRAIN_MS: how long the loop runs on at its stop for bytes still in connections' output
 * buffers (a listen stream's closing result, the end of a stream), written by quiesce just
 * before. A socket write happens on a later loop iteration than the one that queued it: on a
 * busy machine the stop could come first, and evhttp_free drop the bytes. A reader that does
 * not read cannot hold the stop longer than this. */
#define HTTP_DRAIN_MS 2000
#define HTTP_DRAIN_POLL_MS 5

static bool output_pending(const http_thread_t *t)
{
    for (size_t i = 0; i < t->links.cap; i++) {
        struct evhttp_connection *evcon = t->links.keys[i];
        struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
        if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > 0)
            return true;
    }
    return false;
}

static void on_exit_loop(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    int64_t now = now_mono_us();
    if (!t->drain_until_us)
        t->drain_until_us = now + HTTP_DRAIN_MS * 1000;
    if (output_pending(t) && now < t->drain_until_us) {
        struct timeval again = {0, HTTP_DRAIN_POLL_MS * 1000};
        event_base_once(t->base, -1, EV_TIMEOUT, on_exit_loop, t, &again);
        return;
    }
    event_base_loopexit(t->base, NULL);
}

void http_stop(void)
{
    for (int i = 0; i < g_http_n; i++)
        if (g_http[i].started)
            event_base_once(g_http[i].base, -1, EV_TIMEOUT, on_exit_loop, &g_http[i], NULL);
    for (int i = 0; i < g_http_n; i++) {
        if (g_http[i].started)
            pthread_join(g_http[i].thread, NULL);
        g_http[i].started = false;
    }
}

static void free_hmsg(mq_node_t *n, void *arg)
{
    (void)arg;
    hmsg_free((hmsg_t *)n);
}

void http_free(void)
{
    /* every connection first: a stream's close callback passes the frames it held on to
     * another thread's inbox (fence.c), so no inbox goes before every connection has */
    for (int i = 0; i < g_http_n; i++) {
        http_thread_t *t = &g_http[i];
        accept_guard_free(&t->guard); /* before its listener goes */
        if (t->http)
            evhttp_free(t->http);
        else if (t->fd >= 0)
            close(t->fd);
    }
    for (int i = 0; i < g_http_n; i++) {
        http_thread_t *t = &g_http[i];
        if (t->inbox_ev) {
            mq_drain(&t->inbox, free_hmsg, NULL);
            event_free(t->inbox_ev);
            mq_destroy(&t->inbox);
        }
        ptrmap_free(&t->links); /* evhttp_free ran every connection's close callback */
        http_fresh_free(t);     /* accepted as the loop ended: freed by evhttp_free */
        if (t->fresh_ev)
            event_free(t->fresh_ev);
        if (t->flush_ev)
            event_free(t->flush_ev);
        http_linger_free(t); /* before the gate: each leaves its count */
        http_gate_free(t);
        if (t->trim_ev)
            event_free(t->trim_ev);
        http_oauth_thread_end(t);
        if (t->base)
            event_base_free(t->base);
        free(t->slots);
        free(t->gens);
        free(t->free_slots);
    }
    free(g_http);
    g_http = NULL;
    g_http_n = 0;
    hostcheck_free(&g_hostcheck);
}
