/* Threads: the admin thread (its loop); the main thread before the loop starts and after it
 * ends (admin_conns_init, admin_conns_free). */
/* The admin listener's connection cap: at most ADMIN_MAX_CONNECTIONS connections are open on
 * it; at the cap its listener stops accepting (accept_guard_hold), and new connections wait in
 * the kernel's backlog until one closes.
 *
 * Why. The admin listener is loopback by default, but a node whose Prometheus scrapes it from
 * another host listens on a reachable address, where anyone may open connections (the
 * --admin-token check comes with a request, and evhttp keeps a silent connection for
 * admin_conns_timeout_s: --read-timeout, at most 30 s). Unbounded, they took the descriptors the store and the MCP endpoint need
 * (main.c fits --max-connections with FD_RESERVE_MORE for the admin listener and the rest). A
 * flood now waits for the cap's places, and the MCP endpoint and the store keep theirs.
 * One address holds at most ADMIN_ADDRESS_SHARE of the places (its next connections are
 * closed as they come, on_fresh): a client that opens silent connections from one host cannot
 * fill the cap and keep a load balancer's /healthz or a scrape from another one waiting (up to
 * admin_conns_timeout_s a cycle) in the backlog.
 *
 * How (as http/gate.c for the MCP listeners, on one thread): a connection counts from its
 * accept (on_new_bev, inside libevent's accept loop: evhttp lets us make its bufferevent, and
 * the listener disabled there stops that loop at once) until its close callback, which
 * evhttp calls as it frees the connection. The connection is taken from its bufferevent later
 * in the same loop iteration (on_fresh; libevent 2.1 calls nothing with a new connection). A
 * connection freed before that counts out there. A close releases the listener just before
 * the closed descriptor goes, so for a moment cap + 1 descriptors may be open.
 *
 * An answer is written with no read timeout (admin_conns_answer_unhurried), as on the MCP
 * listener (http/flush.c): evhttp reads during an answer only to see a close, enabling reading
 * with the connection's read timeout (admin_conns_timeout_s) at the answer's start
 * (evhttp_write_buffer), and the bytes written do not start that timer again (libevent's read
 * and write events time out apart; the client, taking the answer, sends nothing). So an export
 * file that took longer than that to go to a peer reading it steadily on a slow link
 * (a few hundred MB at 10 MB/s) was cut there, and the peer's adopt failed, each retry alike.
 * The write timeout (as long, without progress) stays, so a client that stops reading is
 * still dropped; the read timeout comes back in the request's completion callback, before evhttp
 * reads the next request, so an idle keep-alive connection is dropped as before. */
#include "admin/conns.h"

#include "core/config.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

/* A connection's place: the address it came from (IPv4 as itself, v4-mapped too; IPv6 by its
 * /64, which one host may hold whole). */
typedef struct {
    bool used;
    unsigned char addr[16];
    size_t len;
} place_t;

static struct {
    struct event_base *base;
    accept_guard_t *guard;
    struct event *fresh_ev;
    struct bufferevent *fresh[ADMIN_MAX_CONNECTIONS + 1]; /* accepted this loop iteration */
    int nfresh;
    int open;          /* from accept to the close callback */
    bool held;         /* the listener is held at the cap */
    int64_t last_hold; /* now_mono_ms of the last hold, for the log's episodes */
    place_t places[ADMIN_MAX_CONNECTIONS + 1]; /* of the connections past on_fresh */
    int64_t last_share;                        /* now_mono_ms of the last share refusal */
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
    place_t *pl = arg;
    if (pl)
        pl->used = false;
    closed();
}

/* The address fd's peer connects from (len 0: unknown, counted in no share). */
static void peer_of(evutil_socket_t fd, place_t *out)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    out->len = 0;
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        memcpy(out->addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
        out->len = 4;
    } else if (ss.ss_family == AF_INET6) {
        const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        bool mapped = IN6_IS_ADDR_V4MAPPED(a);
        out->len = mapped ? 4 : 8; /* an IPv6 client's /64: one host may have all of it */
        memcpy(out->addr, mapped ? a->s6_addr + 12 : a->s6_addr, out->len);
    }
}

/* A place for the connection from `from`, or NULL when its address holds its share already. */
static place_t *take_place(const place_t *from)
{
    int held = 0;
    place_t *free_one = NULL;
    for (int i = 0; i < ADMIN_MAX_CONNECTIONS + 1; i++) {
        place_t *pl = &C.places[i];
        if (!pl->used)
            free_one = free_one ? free_one : pl;
        else if (from->len && pl->len == from->len && !memcmp(pl->addr, from->addr, pl->len))
            held++;
    }
    if (from->len && held >= ADMIN_ADDRESS_SHARE)
        return NULL;
    if (free_one) { /* always: there are no more counted connections than places */
        *free_one = *from;
        free_one->used = true;
    }
    return free_one;
}

static void refuse_past_share(struct evhttp_connection *evcon)
{
    int64_t now = now_mono_ms();
    if (!C.last_share || now - C.last_share >= ACCEPT_QUIET_MS)
        log_warn("an address holds %d of the admin listener's %d connections, its share: its "
                 "next ones are closed at once (logged once until %d s pass without one; "
                 "admin_share_closes_total counts them)",
                 ADMIN_ADDRESS_SHARE, ADMIN_MAX_CONNECTIONS, ACCEPT_QUIET_MS / 1000);
    C.last_share = now;
    STAT_INC(admin_share_closes_total);
    evhttp_connection_set_closecb(evcon, on_close, NULL);
    evhttp_connection_free(evcon); /* no request read yet: the accept was this iteration */
}

static void on_fresh(evutil_socket_t fd, short what, void *arg)
{
    for (int i = 0; i < C.nfresh; i++) {
        struct bufferevent *bev = C.fresh[i];
        void *evcon = NULL;
        bufferevent_getcb(bev, NULL, NULL, NULL, &evcon); /* NULL: evhttp freed it already */
        if (evcon) {
            place_t from;
            peer_of(bufferevent_getfd(bev), &from);
            place_t *pl = take_place(&from);
            if (pl) {
                evhttp_connection_set_closecb(evcon, on_close, pl);
                /* what the connection's client sends is read up to a mark, for good: evhttp
                 * keeps reading during an answer (to see a close), its own error answers
                 * too, and a client that pipelined requests without reading the answers had
                 * every byte held (512 MiB in 8 s of /healthz requests, unauthenticated). An
                 * admin request needs at most its head (8 KiB) and body (1 KiB); past the mark
                 * the kernel holds the rest, read again as evhttp takes what it holds */
                bufferevent_setwatermark(bev, EV_READ, 0, ADMIN_INPUT_MAX);
            } else {
                refuse_past_share(evcon);
            }
        } else {
            closed();
        }
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

/* req's answer is written whole (evhttp_send_done, before it reads the next request on the
 * connection or frees it): the read timeout comes back. */
static void on_answered(struct evhttp_request *req, void *arg)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    struct timeval t = {admin_conns_timeout_s(), 0};
    if (!bev)
        return;
    bufferevent_set_timeouts(bev, &t, &t); /* as evhttp_set_timeout set them: both ways */
}

int admin_conns_timeout_s(void)
{
    return g_cfg.read_timeout_s < 30 ? (int)g_cfg.read_timeout_s : 30;
}

void admin_conns_answer_unhurried(struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    if (!bev)
        return; /* its connection is gone: evhttp_send_reply frees the request */
    /* before evhttp_send_reply, whose bufferevent_enable(EV_READ|EV_WRITE) takes these, from
     * the time now (libevent's is the loop's wake-up: a slow answer's write timed out at once) */
    event_base_update_cache_time(bufferevent_get_base(bev));
    struct timeval t = {admin_conns_timeout_s(), 0};
    bufferevent_set_timeouts(bev, NULL, &t);
    evhttp_request_set_on_complete_cb(req, on_answered, NULL);
}
