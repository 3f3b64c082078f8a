/* Threads: worker threads. */
/* GET on a session: open the standalone stream, or resume a stream after a Last-Event-ID with
 * the replay of what the event log kept. Worker thread only. */
#include "actor/actor.h"

#include "actor/refuse.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/log.h"
#include "core/jsonparse.h"
#include "store/eventlog.h"
#include "store/sessionrec.h"
#include "wire/eventid.h"
#include "wire/jsonrpc.h"
#include "wire/sse.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

/* ---- GET: open or resume ---- */

static long replay_after(actor_t *a, uint64_t num, uint64_t after, buf_t *out);

/* A replay whose scan failed: nothing of it is sent and the stream is not attached, so the
 * client retries from where it was (a partial replay would skip what the scan missed). */
static void replay_failed(actor_t *a, conn_ref_t conn, buf_t *b)
{
    buf_free(b);
    if (conn.gen)
        worker_send_http(a->w, refuse_read_failed(conn, NULL, READ_FAILED_EVENTS));
}

static void open_standalone(actor_t *a, conn_ref_t conn)
{
    buf_t b = {0};
    int err;
    stream_t *g = actor_get_stream(a, true, &err);
    if (!g) { /* its record could not be read: a new stream would reuse its event ids */
        replay_failed(a, conn, &b);
        return;
    }
    long backlog = 0;
    bool after_end = g->server_ended && g->seq > g->ended_seq;
    if (((!g->delivered && g->seq > 0) || after_end) && g_cfg.event_store) {
        /* The session's first GET: its client cannot have seen anything stored for it yet
         * (session-level messages sent before it connected), so it gets all of it. Likewise
         * after the server ended the stream (--get-idle-timeout): a client with no event id
         * to resume from (an older version's stream that never sent one) gets what came
         * since. Other GETs without Last-Event-ID start fresh, as the client asked. */
        if (a->proto->priming)
            sse_frame_retry(&b, g_cfg.retry_ms);
        backlog = replay_after(a, STREAM_GET, after_end ? g->ended_seq : 0, &b);
        if (backlog < 0) {
            replay_failed(a, conn, &b);
            return;
        }
        if (backlog == 0)
            buf_free(&b);
    }
    if (g->conn.gen)
        actor_send_sse_end(a, g->conn, g->num); /* a new GET replaces the previous one */
    g->conn = conn;
    g->server_ended = false;
    if (backlog == 0)
        actor_stream_prime(a, g, &b);
    if (!g->delivered && g_cfg.event_store) {
        g->delivered = true;
        actor_stream_dirty(g);
    }
    /* with an event store, idle drops are recovered with Last-Event-ID: no keepalive */
    actor_send_sse_start(a, g, &b, !g_cfg.event_store);
    buf_free(&b);
}

struct replay {
    actor_t *a;
    uint64_t num;
    buf_t *out;
    long sent;
};

static void replay_one(void *arg, uint64_t seq, const char *data, size_t len)
{
    struct replay *r = arg;
    if (len == 0)
        return; /* a priming event: nothing to replay */
    char eid[EVENT_ID_MAX];
    event_id_format(eid, r->a->tag, r->num, seq);
    sse_frame_event(r->out, eid, data, len);
    r->sent++;
}

/* Appends every stored event of stream num after `after` to out; returns the count, or -EIO
 * when the store failed to read them all (out then holds part of them). */
static long replay_after(actor_t *a, uint64_t num, uint64_t after, buf_t *out)
{
    worker_commit(a->w); /* this turn's events too */
    struct replay r = {a, num, out, 0};
    uint64_t first;
    long found = eventlog_replay_after(worker_store(a->w), a->sid, num, after, replay_one, &r,
                                       &first);
    if (found < 0)
        return found; /* not a gap: what it found first may not be the oldest kept */
    if (found && first != after + 1) {
        STAT_INC(replay_gaps_total); /* evicted by the cap: replay from the oldest kept */
        log_info("session %.8s: resume after seq %llu finds the oldest kept event at %llu", a->sid,
                 (unsigned long long)after, (unsigned long long)first);
    }
    STAT_ADD(events_replayed_total, r.sent);
    return r.sent;
}

/* A Last-Event-ID this session cannot resume (another session's, or a stream it does not have:
 * never made, or deleted by its TTL or the session's byte budget) gets 400, not 404: a 404 to
 * a request with Mcp-Session-Id tells the client its session is gone (the spec: it MUST start
 * a new one), and this session is not. */
static void resume(actor_t *a, wmsg_t *m)
{
    if (m->u.get.tag != a->tag) {
        actor_reply_error(a->w, m->u.client.conn, NULL, 400, MCP_ERR_BAD_REQUEST,
                          "Last-Event-ID does not name a stream of this session");
        return;
    }
    uint64_t num = m->u.get.stream;
    int rc = 0;
    stream_t *s = num == STREAM_GET ? actor_get_stream(a, false, &rc) : actor_find_stream(a, num);
    streamrec_t r;
    if (!s && num != STREAM_GET && (rc = actor_load_stream_rec(a, num, &r)) == 0)
        json_decref(r.req_ids);
    /* a POST stream not live: every response was written (or the process restarted) */
    bool finished = !s && num != STREAM_GET && rc == 0;
    buf_t b = {0};
    if (rc < 0) { /* unreadable, not one it does not have: the client retries from the same id */
        replay_failed(a, m->u.client.conn, &b);
        return;
    }
    if (!finished && (!s || !s->sse)) {
        actor_reply_error(a->w, m->u.client.conn, NULL, 400, MCP_ERR_BAD_REQUEST,
                          "Last-Event-ID names a stream this session does not have");
        return;
    }
    if (a->proto->priming) {
        /* The priming event of a resumed connection re-asserts the client's own position: a
         * fresh id here, ahead of the replay, would make a drop before the first replayed
         * event skip the whole replay on the next resume. */
        char eid[EVENT_ID_MAX];
        event_id_format(eid, a->tag, num, m->u.get.seq);
        sse_frame_retry(&b, g_cfg.retry_ms);
        sse_frame_event(&b, eid, "", 0);
    }
    long n = replay_after(a, num, m->u.get.seq, &b);
    if (n < 0) {
        replay_failed(a, m->u.client.conn, &b);
        return;
    }
    log_debug("session %.8s: resumed stream %llu after %llu, %ld events replayed", a->sid,
              (unsigned long long)num, (unsigned long long)m->u.get.seq, n);
    if (finished) {
        stream_t tmp = {.num = num, .conn = m->u.client.conn};
        actor_send_sse_start(a, &tmp, &b, false);
        actor_send_sse_end(a, m->u.client.conn, num);
        buf_free(&b);
        return;
    }
    s->server_ended = false; /* it resumes from its own position */
    /* the connection takes the stream over; an older connection on it is ended */
    if (s->conn.gen && !conn_ref_eq(s->conn, m->u.client.conn))
        actor_send_sse_end(a, s->conn, s->num);
    s->conn = m->u.client.conn;
    actor_send_sse_start(a, s, &b, num != STREAM_GET || !g_cfg.event_store);
    buf_free(&b);
}

void actor_handle_get(actor_t *a, wmsg_t *m)
{
    if (m->u.get.resume)
        resume(a, m);
    else
        open_standalone(a, m->u.client.conn);
}

void actor_handle_conn_closed(actor_t *a, wmsg_t *m)
{
    stream_t *s = actor_find_stream(a, m->u.closed.stream);
    if (!s || !conn_ref_eq(s->conn, m->u.closed.conn))
        return;
    s->conn.gen = 0;
    if (s->num == STREAM_GET && m->u.closed.by_server) {
        s->server_ended = true;
        s->ended_seq = s->seq;
    }
    if (actor_stores(a))
        return; /* a session's stream lives on: its client resumes (a disconnect is not a
                   cancellation: 2025-11-25 transports, "SHOULD NOT be interpreted as the
                   client cancelling its request") */
    /* 2026-07-28: closing the response stream cancels its request (streamable-http,
     * "Cancellation"); nothing more is sent for it. A session's stream without the event
     * store (--no-event-store) cannot be resumed either: its response can never reach the
     * client, so its calls are cancelled the same way and free their tool threads. */
    int n = 0; /* a batch's requests share their stream: every one of them is cancelled */
    for (const call_t *c = a->calls; c; c = c->next)
        n += c->stream == s;
    call_t *c = a->calls;
    while (c && n > 0) {
        call_t *next = c->next;
        if (c->stream == s) {
            log_debug("%s: a request was cancelled: its client closed the response stream, which "
                      "cannot be resumed",
                      actor_one_request(a) ? "2026-07-28" : "--no-event-store");
            n--;
            actor_drop_call(a, c); /* the last may settle and free s: s is not read after it */
        }
        c = next;
    }
}
