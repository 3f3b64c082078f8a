/* Threads: HTTP threads. */
/* Answers written to the socket in the loop iteration that made them.
 *
 * evhttp writes an answer the way every bufferevent writes: appending it enables the
 * connection's write event, the next epoll_wait reports the socket writable, the bytes go, and
 * evhttp's write callback disables the event again and starts reading the next request. That is
 * two epoll_ctl calls and a trip through epoll for every answer, on a socket that was writable
 * all along.
 *
 * So a connection given an answer (http_send_reply), or whose SSE response ended
 * (http_end_stream), is noted, and later in the same loop iteration, before epoll_wait,
 * http_on_flush writes its output straight to the socket. When all of it went, it runs the
 * bufferevent's write callbacks as the bufferevent would have after writing
 * (bufferevent_trigger): evhttp finishes the request and reads the next one. The write event
 * enabled and disabled within one iteration never reaches the kernel (the loops merge a turn's
 * epoll_ctl calls): an answer whose request came in this iteration costs one epoll_ctl, a
 * no-op EPOLL_CTL_MOD the change list leaves for evhttp turning reading off and on. Anything
 * else (a socket that takes only part, EAGAIN, an error) is left to the bufferevent, whose
 * write event is already enabled: it writes the rest, or reports the error, exactly as before.
 *
 * The write happens in a callback of its own, never inside http_send_reply: evhttp may free the
 * request and the connection when the answer is done, and callers of http_send_reply may still
 * hold them. A connection that closes before its turn is taken off the list (http_flush_forget).
 *
 * The other epoll_ctl pair is evhttp's: it turns reading off when it hands a request over
 * (evhttp_handle_request) and on again once the answer is written. Within one iteration the
 * change list cancels the two; a request served on another thread (its session's loop, or a
 * worker thread of its own) is answered in a later iteration, so its connection left epoll
 * (EPOLL_CTL_DEL) and came back (EPOLL_CTL_ADD). http_hold_reading keeps reading on for such
 * a request, with callbacks of its own (evhttp's read callback would abort on input in the
 * middle of a request): the turn's off and on become the one no-op EPOLL_CTL_MOD of a local
 * request, and nothing changes in epoll later unless the client sends something meanwhile,
 * and then reading goes off as evhttp had it, the bytes kept for evhttp (at most one read,
 * 16 KiB). Every answer resets the callbacks: evhttp_send_reply and evhttp_send_reply_start
 * set evhttp's own and turn reading on (evhttp_write_buffer), so nothing has to be undone.
 * Only with the change list (not with --upstream, not under TSan): without it every change is
 * its own epoll_ctl, and turning reading back on would add one where it saves two.
 */
#include "http/internal.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

void http_flush_soon(struct evhttp_connection *evcon)
{
    http_thread_t *t = g_http_self;
    if (!t || !t->flush_ev)
        return;
    hlink_t *l = ptrmap_get(&t->links, evcon);
    if (!l || l->flush_pprev)
        return; /* not one of ours, or noted already */
    if (!t->flush_head)
        event_active(t->flush_ev, EV_TIMEOUT, 1);
    l->flush_next = t->flush_head;
    if (l->flush_next)
        l->flush_next->flush_pprev = &l->flush_next;
    l->flush_pprev = &t->flush_head;
    t->flush_head = l;
}

void http_flush_forget(hlink_t *l)
{
    if (!l->flush_pprev)
        return;
    *l->flush_pprev = l->flush_next;
    if (l->flush_next)
        l->flush_next->flush_pprev = l->flush_pprev;
    l->flush_next = NULL;
    l->flush_pprev = NULL;
}

static void flush_one(hlink_t *l)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(l->evcon);
    if (!bev || !(bufferevent_get_enabled(bev) & EV_WRITE))
        return; /* not writing (a request still being read, or being closed) */
    struct evbuffer *out = bufferevent_get_output(bev);
    if (!evbuffer_get_length(out))
        return;
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd < 0)
        return;
    /* a socket bufferevent keeps its output's front frozen but while it writes (a new one's
     * setfd leaves it thawed): the same around this write */
    evbuffer_unfreeze(out, 1);
    int n = evbuffer_write(out, fd);
    evbuffer_freeze(out, 1);
    if (n <= 0 || evbuffer_get_length(out))
        return; /* the bufferevent's write event, enabled already, does the rest */
    /* all written: evhttp's write callback (the answer done; the next request read) runs as
     * after the bufferevent's own write. It may free l and the connection. */
    bufferevent_trigger(bev, EV_WRITE, 0);
}

/* ---- reading held on while another thread serves the request ---- */

/* The held connection's callbacks: whatever arrives (the client's next request, its close, the
 * read timeout) turns reading off, as evhttp had it; evhttp sees it again when it reads next.
 * The bufferevent has turned reading off already when it reports an event. */
static void hold_read(struct bufferevent *bev, void *evcon)
{
    (void)evcon;
    bufferevent_disable(bev, EV_READ);
}

static void hold_event(struct bufferevent *bev, short what, void *evcon)
{
    (void)what;
    (void)evcon;
    bufferevent_disable(bev, EV_READ);
}

void http_hold_reading(struct evhttp_request *req)
{
    if (!g_http_self || !g_http_self->change_list)
        return; /* each change its own epoll_ctl: turning reading back on would add one */
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    if (!bev || (bufferevent_get_enabled(bev) & (EV_READ | EV_WRITE)))
        return; /* not as evhttp leaves a request it hands over (an answer already started) */
    void *arg = NULL;
    bufferevent_getcb(bev, NULL, NULL, NULL, &arg);
    if (arg != evcon)
        return;
    /* the same argument: http_on_fresh finds the connection by it */
    bufferevent_setcb(bev, hold_read, NULL, hold_event, evcon);
    bufferevent_enable(bev, EV_READ);
}

void http_on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_thread_t *t = arg;
    hlink_t *l;
    while ((l = t->flush_head) != NULL) {
        http_flush_forget(l);
        flush_one(l);
    }
}
