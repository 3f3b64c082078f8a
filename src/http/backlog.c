/* Threads: HTTP threads. */
/* --sse-backlog: what slow SSE readers hold together.
 *
 * evhttp_send_reply_chunk gives no backpressure, so the SSE writer (conn.c, sse_write) looks at
 * its connection's unsent output at each write, and --sse-buffer bounds one connection:
 * past it the stream is cut (closed at once, the bytes dropped; the client resumes with
 * Last-Event-ID). That bounds a connection, not the process: one client holding its share of
 * --max-connections (5,000 by default) in streams it never reads would hold up to 8 MiB on
 * each, tens of GB in all.
 *
 * So a connection far behind its reader holds a place. It is judged once a frame went in, so a
 * stream's last frame counts too, and after the socket took what it will (sse_write writes to
 * it there, past the mark only: the loop writes at most 16 KiB a turn, libevent's max single
 * write, so a burst of frames handed over in one turn waits without its reader being behind).
 * A reader that keeps up then has about nothing unsent (the kernel's socket buffers take what
 * it has not read yet); one with more than HTTP_BACKLOG_MARK (64 KiB) is *backlogged*, and takes one
 * place of PR_SSE_BACKLOG for its request's principal (principal_take: --sse-backlog /
 * --sse-buffer places, at least 1, of which a principal holds at most its --principal-share, a
 * check and a take under one lock). When none is free, for the server or for that client, the
 * stream is cut as a slow reader (conn.c's cut_stream), logged and counted as a refusal by a
 * limit. Unsent SSE bytes are thus bounded by about connections x 64 KiB + --sse-backlog, and
 * one client holds at most its share of the latter; others' streams that fall behind still
 * find places.
 *
 * The place is the connection's (hlink_t.backlog), not the stream's: a stream that ends while
 * its bytes are unread leaves them in the connection's output, which evhttp writes before it
 * reads the next request, so they keep the place until they go. It goes back when the output
 * is down to HTTP_BACKLOG_LOW (16 KiB; below the mark, so a reader hovering at the mark does not
 * take and give at every write) or the connection closes (a cut included). The drain is seen
 * without periodic work: a callback on the output evbuffer (libevent runs it at every change,
 * the bufferevent's writes to the socket included; evhttp's own write callback is the
 * bufferevent's, untouched), added only while the place is held, so a stream that keeps up
 * costs one comparison per write. The output lives as long as the hlink: on_conn_close, which
 * frees the hlink, runs before evhttp frees the bufferevent (or drains its output on a reset),
 * and gives the place back first, so the callback never runs on a freed hlink. Everything here
 * runs on the connection's HTTP thread; the counts are principal.c's (any thread). */
#include "http/internal.h"

#include "core/config.h"
#include "core/log.h"
#include "core/stats.h"

#include <errno.h>
#include <event2/buffer.h>

/* Runs at every change of the output of a connection holding a place. */
static void on_output(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
    if (info->n_deleted && evbuffer_get_length(out) <= HTTP_BACKLOG_LOW)
        http_backlog_give(arg); /* removes this callback: libevent allows it from inside */
}

static void refused(const hconn_t *c, size_t unsent, int rc)
{
    STAT_INC(sse_slow_reader_cuts_total);
    STAT_INC(sse_backlog_cuts_total);
    STAT_INC(limit_refusals_total);
    if (rc == -EDQUOT) {
        STAT_INC(share_refusals_total);
        log_warn("session %.8s: SSE reader too slow (%zu bytes unsent) and its client holds %lld "
                 "connections that far behind, its share of --sse-backlog (--principal-share "
                 "%lld%%): its connection is closed and the bytes dropped; it can resume",
                 c->sid, unsent, (long long)principal_limit(PR_SSE_BACKLOG),
                 (long long)g_cfg.principal_share);
        return;
    }
    log_warn("session %.8s: SSE reader too slow (%zu bytes unsent) and --sse-backlog is full (%lld "
             "connections that far behind): its connection is closed and the bytes dropped; it "
             "can resume",
             c->sid, unsent, principal_total(PR_SSE_BACKLOG));
}

bool http_backlog_take(hconn_t *c, struct evbuffer *out, size_t unsent)
{
    hlink_t *l = c->link;
    if (!l || l->backlog)
        return true; /* (every stream has a link; one without is bounded by --sse-buffer only) */
    principal_t *p = http_request_principal(c->req, c->who, l);
    int rc = principal_take(p, PR_SSE_BACKLOG);
    if (rc != 0) {
        principal_unref(p);
        refused(c, unsent, rc);
        return false;
    }
    l->backlog = p;
    l->backlog_out = out;
    /* without the watch (no memory) the place is held until the connection closes */
    l->backlog_cb = evbuffer_add_cb(out, on_output, l);
    STAT_INC(sse_backlogged);
    return true;
}

void http_backlog_give(hlink_t *l)
{
    if (!l->backlog)
        return;
    if (l->backlog_cb)
        evbuffer_remove_cb_entry(l->backlog_out, l->backlog_cb);
    l->backlog_cb = NULL;
    l->backlog_out = NULL;
    principal_give(l->backlog, PR_SSE_BACKLOG);
    principal_unref(l->backlog);
    l->backlog = NULL;
    STAT_DEC(sse_backlogged);
}
