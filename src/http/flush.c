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
 * epoll_ctl calls), nor, with the shadow below, does evhttp turning reading off and on: an
 * answer costs no epoll_ctl. Anything else (a socket that takes only part, EAGAIN, an error)
 * is left to the bufferevent, whose write event is already enabled: it writes the rest, or
 * reports the error, exactly as before.
 *
 * The write happens in a callback of its own, never inside http_send_reply: evhttp may free the
 * request and the connection when the answer is done, and callers of http_send_reply may still
 * hold them. A connection that closes before its turn is taken off the list (http_flush_forget).
 *
 * The other epoll_ctl calls are evhttp's: it turns reading off when it hands a request over
 * (evhttp_handle_request) and on again once the answer is written. Within one iteration the
 * change list makes the two one no-op EPOLL_CTL_MOD; a request served on another thread (its
 * session's loop, or a worker thread of its own) is answered in a later iteration, so its
 * connection left epoll (EPOLL_CTL_DEL) and came back (EPOLL_CTL_ADD). Neither happens while a
 * second read event on the descriptor (the shadow, added when the connection is tracked at
 * accept, else after its first answer) is in: libevent changes epoll only when the first event
 * on a descriptor comes or the last one goes, so evhttp's read event comes and goes without a
 * system call, with the change list or without. The shadow does nothing while evhttp reads;
 * when input waits while evhttp does not read, epoll reports it at every poll, and the shadow
 * goes at the second report (on_shadow), so the loop does not spin; an answer brings it back.
 * It is freed in the connection's close callback, before evhttp closes the descriptor.
 *
 * An answer the socket does not take whole has no read timeout while the bufferevent writes the
 * rest. evhttp reads during an answer only to see a close: from the answer's start
 * (evhttp_write_buffer) to its end it enables reading with the connection's read timeout, and
 * that timer is not started again by the bytes written (libevent's read and write events time
 * out apart; the client, taking an answer, sends nothing). So an answer that took longer than
 * --read-timeout to go, to a client reading it steadily on a slow link, was cut there, its
 * client left with a part of it, and nothing counted (a 1 MB answer read at ~200 KB/s, an SSE
 * response ending with a big event alike). So when flush_one leaves output for the bufferevent,
 * the read timeout is lifted (the write timeout, --read-timeout of no progress, stays: a client
 * that stops reading is still dropped), and it comes back when the answer is done, in the
 * request's completion callback, before evhttp reads the next request (an idle keep-alive
 * connection is dropped by it). A request under way behind the answer is still held to its
 * deadline (input.c), which does not rest on evhttp's timeout. An answer written whole at once,
 * the usual case, costs only the callback's pointer.
 *
 * Nor does evhttp bound what it reads meanwhile: it keeps reading only to see a close, and
 * keeps the bytes for the requests after the answer. A client that did not read a big answer
 * and pipelined requests behind it had every byte it sent read into memory (167 MiB in 20 s on
 * loopback, the RSS up as much), for as long as it read a little of the answer now and then (the
 * write timeout counts no progress only). So the same partly written answer sets the read
 * high-water mark at HTTP_ANSWER_INPUT_MAX: past it the bufferevent stops reading, what the
 * client sends waits in the kernel's socket buffers (TCP holds the client's sends), and the
 * completion callback takes the mark off with the read timeout, before evhttp parses what waits.
 * (A mark for every request would not do: evhttp holds a chunk of a chunked body whole in the
 * input, up to --max-body.) A request under way behind the answer then waits for the server,
 * not for the client: its deadline starts again (input.c: evhttp's read event is not pending).
 */
#include "http/internal.h"

#include "core/config.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
/* ev_read: whether evhttp reads now (on_shadow); the struct of the libevent built against */
#include <event2/bufferevent_struct.h>
#include <event2/event.h>
#include <event2/http.h>

/* req's answer is written whole (evhttp_send_done, before it reads the next request on the
 * connection or frees it): the read timeout flush_one lifted comes back, and reading with no
 * bound on the input, as evhttp reads a request. */
static void on_answered(struct evhttp_request *req, void *arg)
{
    (void)req;
    hlink_t *l = arg;
    if (!l->read_lifted)
        return;
    l->read_lifted = false;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(l->evcon);
    struct timeval rt = {g_cfg.read_timeout_s, 0};
    if (!bev)
        return;
    bufferevent_set_timeouts(bev, &rt, &rt); /* as evhttp_set_timeout set them: both ways */
    bufferevent_setwatermark(bev, EV_READ, 0, 0);
}

void http_flush_soon(struct evhttp_request *req)
{
    http_thread_t *t = g_http_self;
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    if (!t || !t->flush_ev || !evcon)
        return;
    hlink_t *l = ptrmap_get(&t->links, evcon);
    if (!l)
        return; /* not one of ours */
    /* the connection outlives the call: evhttp calls it only while the connection is there */
    evhttp_request_set_on_complete_cb(req, on_answered, l);
    if (l->flush_pprev)
        return; /* noted already */
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

/* ---- a second read event that keeps the socket in epoll ---- */

/* Its own callback: input came. While evhttp reads, so does it (it runs after this, or did
 * before): nothing to do. While evhttp does not (a request being served, a stream's input
 * full), the input waits for evhttp, but epoll reports it at every poll: at the second report
 * without an answer between, the shadow goes (one report may be the very input evhttp has just
 * read, when evhttp's event ran first). */
static void on_shadow(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    hlink_t *l = arg;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(l->evcon);
    if (bev && event_pending(&bev->ev_read, EV_READ, NULL)) {
        l->shadow_strikes = 0;
        return;
    }
    if (++l->shadow_strikes < 2)
        return;
    event_del(l->shadow); /* the next answer's refresh brings it back */
    l->shadow_strikes = 0;
}

/* After an answer, with evhttp reading again: the shadow is (re)added, first on the
 * descriptor's list, so that it runs before evhttp's read event when input comes. Both events
 * read the descriptor, so neither the del nor the add changes epoll. */
static void shadow_refresh(hlink_t *l, struct bufferevent *bev)
{
    if (!event_pending(&bev->ev_read, EV_READ, NULL))
        return; /* evhttp is not reading (the connection ends, or its input is full) */
    if (!l->shadow) {
        l->shadow = event_new(l->t->base, bufferevent_getfd(bev), EV_READ | EV_PERSIST, on_shadow,
                              l);
        if (!l->shadow)
            return; /* only the saving is lost */
    } else {
        event_del(l->shadow);
    }
    event_add(l->shadow, NULL);
    l->shadow_strikes = 0;
}

void http_shadow_start(hlink_t *l)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(l->evcon);
    if (bev)
        shadow_refresh(l, bev);
}

void http_shadow_free(hlink_t *l)
{
    if (l->shadow)
        event_free(l->shadow); /* before evhttp closes the descriptor (its close callback) */
    l->shadow = NULL;
}

/* ---- the flush ---- */

int http_write_now(struct bufferevent *bev)
{
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd < 0)
        return -1;
    /* a socket bufferevent keeps its output's front frozen but while it writes (a new one's
     * setfd leaves it thawed): the same around this write */
    struct evbuffer *out = bufferevent_get_output(bev);
    evbuffer_unfreeze(out, 1);
    int n = evbuffer_write(out, fd);
    evbuffer_freeze(out, 1);
    return n;
}

static void flush_one(hlink_t *l)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(l->evcon);
    if (!bev || !(bufferevent_get_enabled(bev) & EV_WRITE))
        return; /* not writing (a request still being read, or being closed) */
    struct evbuffer *out = bufferevent_get_output(bev);
    if (!evbuffer_get_length(out))
        return;
    int n = http_write_now(bev);
    if (n <= 0 || evbuffer_get_length(out)) {
        /* the bufferevent's write event, enabled already, does the rest: with no read timeout
         * meanwhile (see the file comment); the write timeout stays --read-timeout, counted
         * from now (http_on_flush) */
        struct timeval wt = {g_cfg.read_timeout_s, 0};
        bufferevent_set_timeouts(bev, NULL, &wt);
        bufferevent_setwatermark(bev, EV_READ, 0, HTTP_ANSWER_INPUT_MAX);
        l->read_lifted = true;
        return;
    }
    /* all written: evhttp's write callback (the answer done; the next request read) runs as
     * after the bufferevent's own write. It may free l and the connection: l is looked up again
     * by the connection (no connection is made meanwhile, so the address names no other). */
    http_thread_t *t = l->t;
    struct evhttp_connection *evcon = l->evcon;
    bufferevent_trigger(bev, EV_WRITE, 0);
    hlink_t *still = ptrmap_get(&t->links, evcon);
    if (still)
        shadow_refresh(still, evhttp_connection_get_bufferevent(evcon));
}

void http_on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_thread_t *t = arg;
    /* libevent times an event added in a callback from the time it read when the loop woke: a
     * turn that worked for longer than --read-timeout to make its answers had the write event
     * evhttp_send_reply enabled (and, for an answer written whole, the read event of the next
     * request, and a linger's timer) already past due, so the next turn timed it out: the
     * answer cut after the socket's first fill, the keep-alive connection closed under its
     * client's next request. Read the clock again, once a pass. */
    event_base_update_cache_time(t->base);
    hlink_t *l;
    while ((l = t->flush_head) != NULL) {
        http_flush_forget(l);
        flush_one(l);
    }
}
