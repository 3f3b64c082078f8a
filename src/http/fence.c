/* Threads: HTTP threads. */
/* Frames held until another connection's earlier output is written (hmsg_t.after).
 *
 * In JSON response mode a POST is answered with plain JSON, so what its calls send meanwhile
 * (progress, log messages) goes on the session's standalone GET stream: another connection,
 * which may belong to another HTTP thread. Both threads write in parallel, so the answer could
 * reach the client before the call's last progress, and a client drops progress for a request
 * it has its answer to. The worker therefore queues such an answer to the GET stream's thread,
 * after the stream's frames (worker_send_http). That thread holds it here until the
 * connection's output, up to where it stood when the answer came, has been written to the
 * socket, then passes it to the thread of the answer's own connection (http_deliver; the same
 * thread included). So the progress is in the kernel's send queue before the answer is even
 * queued (best effort past that: two TCP connections are not ordered with each other).
 *
 * The hold is the connection's (its hlink), not the stream's: a stream that ends (replaced by a
 * new GET, idle, the server stopping) still has its last bytes to write. A reader that stops
 * reading holds the answers behind it until its bytes go, its stream is cut (--sse-buffer or
 * --sse-backlog, or too much input on it: cut_stream passes them on at once), or its connection
 * closes (the 60 s write timeout; closed by the client; the server stopping). Only answers whose own calls sent
 * something on the stream wait (stream_t.diverted), and only for bytes the kernel's socket
 * buffers could not take: a client that reads its GET stream only after its POST returns waits
 * only when its calls sent more than those buffers hold.
 */
#include "http/internal.h"

#include "actor/msg.h"
#include "core/util.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdlib.h>

struct hfence {
    struct evbuffer *out;         /* the connection's output */
    struct evbuffer_cb_entry *cb; /* on_output, on out from the first held answer on */
    uint64_t written;             /* bytes taken from out since cb was added */
    hmsg_t *first, *last;         /* held, in arrival order (each until is >= the one before) */
};

static void pass_on(hmsg_t *m)
{
    m->after.gen = 0;
    m->link.next = NULL;
    http_deliver(m->conn.thread, &m->link, &m->link, 1);
}

static void release(hfence_t *f, bool all)
{
    while (f->first && (all || f->first->until <= f->written)) {
        hmsg_t *m = f->first;
        f->first = (hmsg_t *)m->link.next;
        pass_on(m);
    }
    if (!f->first)
        f->last = NULL;
}

/* Runs whenever out changes: bytes appended (n_deleted 0) or written to the socket. */
static void on_output(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
    (void)out;
    hfence_t *f = arg;
    if (!info->n_deleted)
        return;
    f->written += info->n_deleted;
    release(f, false);
}

void http_fence_hold(http_thread_t *t, hmsg_t *m)
{
    hconn_t *c = http_hconn_get(t, m->after);
    hlink_t *l = c ? c->link : NULL;
    struct bufferevent *bev = l ? evhttp_connection_get_bufferevent(l->evcon) : NULL;
    struct evbuffer *out = bev ? bufferevent_get_output(bev) : NULL;
    size_t pending = out ? evbuffer_get_length(out) : 0;
    /* written already, or the stream is gone: nothing to wait for; stopping: the quiesce's
     * answers to what is still open come next, and this one goes before them */
    if (!pending || t->stopping) {
        pass_on(m);
        return;
    }
    hfence_t *f = l->fence;
    if (!f) {
        f = xcalloc(1, sizeof *f);
        f->out = out;
        f->cb = evbuffer_add_cb(out, on_output, f);
        if (!f->cb) {
            free(f);
            pass_on(m);
            return;
        }
        l->fence = f;
    }
    m->until = f->written + pending;
    m->link.next = NULL;
    if (f->last)
        f->last->link.next = &m->link;
    else
        f->first = m;
    f->last = m;
}

void http_fence_end(hlink_t *l)
{
    hfence_t *f = l->fence;
    if (!f)
        return;
    l->fence = NULL;
    evbuffer_remove_cb_entry(f->out, f->cb);
    release(f, true);
    free(f);
}
