/* Threads: worker threads. */
/* A session's streams and calls: the stream table, events (stored, then framed), the switch of
 * a POST stream to SSE, settling a POST exchange, and the calls it carries. Worker thread only.
 *
 * The life of a message to the client (actor_stream_send):
 *   1. the actor picks the stream (the call's POST stream, or the standalone stream);
 *   2. it assigns the event id <streamId>:<seq> and puts the event, the eviction of the event
 *      --stream-cap places older, and (at the next commit) the stream's record in the worker
 *      batch (store/eventlog);
 *   3. the frame is queued for the connection's HTTP thread, which receives it only after the
 *      worker has committed the batch (worker_turn_end).
 * A detached stream still gets step 2, so a client that resumes finds every message.
 *
 * The cap (--stream-cap N) counts the messages a client asked to be able to resume: a stream
 * keeps its newest N notifications and server->client requests. On the standalone stream every
 * event counts (its priming events too: one per GET, so they must be evictable). On a POST
 * stream the priming event and the responses do not count and are never evicted: they are
 * bounded by the requests the POST carried, and without them a stream of N notifications and
 * its result, resumed from its priming event, came back one short at the default cap (N = 256:
 * 258 events). Its counted events are not contiguous in seq, so the stream remembers, while it
 * is live, which seqs it did not count (a POST stream is only appended to while it is live;
 * crash recovery appends a response, which evicts nothing).
 */
#include "actor/actor.h"

#include "actor/refuse.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/log.h"
#include "core/jsondump.h"
#include "core/jsonparse.h"
#include "store/eventlog.h"
#include "store/sessionrec.h"
#include "wire/eventid.h"
#include "wire/jsonrpc.h"
#include "wire/sse.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local stream_t *t_dirty; /* streams whose metadata changed this turn */

/* A POST stream's cap accounting (see the file comment). Owned by its stream. */
typedef struct post_cap {
    uint64_t evict_next; /* the next seq the cap looks at: every seq below it is gone or kept */
    uint64_t kept;       /* counted events stored and not evicted */
    uint32_t n_skip, cap_skip, skip_at;
    uint64_t *skip; /* seqs not counted (priming, responses), ascending; skip_at: the first
                          * not below evict_next */
} post_cap_t;

/* The sizes of the events a stream put since its record was last written at a commit: they
 * are in the turn's batch, which the store's reads do not see, so the cap that evicts one of
 * them takes its size from here (a turn that puts more than the cap's events into one stream
 * evicts some of its own). Freed when the stream is written at a commit. */
typedef struct fresh_events {
    uint64_t first; /* the seq of len[0] */
    uint32_t n, cap;
    uint64_t len[];
} fresh_events_t;

static void fresh_note(stream_t *s, uint64_t seq, size_t len)
{
    fresh_events_t *f = s->fresh;
    if (f && f->first + f->n != seq) { /* not the next one: start again */
        free(f);
        f = s->fresh = NULL;
    }
    if (!f || f->n == f->cap) {
        uint32_t cap = f ? 2 * f->cap : 8;
        f = xrealloc(f, sizeof *f + cap * sizeof f->len[0]);
        if (!s->fresh) {
            f->first = seq;
            f->n = 0;
        }
        f->cap = cap;
        s->fresh = f;
    }
    f->len[f->n++] = len;
}

static const uint64_t *fresh_len(const stream_t *s, uint64_t seq)
{
    const fresh_events_t *f = s->fresh;
    return f && seq >= f->first && seq - f->first < f->n ? &f->len[seq - f->first] : NULL;
}

/* Evicts event seq of s; its size. */
static uint64_t evict(actor_t *a, stream_t *s, uint64_t seq)
{
    return eventlog_evict(worker_store(a->w), actor_batch(a), a->sid, s->num, seq,
                          fresh_len(s, seq));
}

int actor_requests_in_flight(const actor_t *a)
{
    int n = 0;
    for (const stream_t *s = a->streams; s; s = s->next)
        if (s->num != STREAM_GET)
            n += s->outstanding;
    return n;
}

store_batch_t *actor_batch(actor_t *a)
{
    worker_touch(a->w, a);
    return worker_batch(a->w);
}

/* ---- stream metadata ---- */

static void put_stream_meta(actor_t *a, stream_t *s)
{
    if (!actor_stores(a))
        return;
    a->stored_more = true;
    streamrec_t r = {.finished = s->finished,
                     .is_get = s->num == STREAM_GET,
                     .delivered = s->delivered,
                     .seq = s->seq,
                     .last_write_ms = s->last_write_ms,
                     .bytes = s->bytes,
                     .req_ids = s->req_ids};
    eventlog_put_stream(actor_batch(a), a->sid, s->num, &r);
}

/* The in-flight index: a reqmap key per unanswered request of an SSE stream, deleted with its
 * answer; what is left at startup was interrupted by a crash (actors_recover_all). */
static void reqmap_key(actor_t *a, call_t *c, bool put)
{
    a->stored_more = true;
    if (put)
        eventlog_inflight_put(actor_batch(a), a->sid, c->id, c->stream->num);
    else
        eventlog_inflight_delete(actor_batch(a), a->sid, c->id, c->stream->num);
    c->mapped = put;
}

/* Written with the stream's metadata at the next commit (flush_stream), not when the call
 * starts: a call answered before that commit (a quick tool under load) would put its key and
 * delete it in the same batch, two memtable writes for nothing. */
static void map_calls(actor_t *a, stream_t *s)
{
    if (!s->unmapped)
        return;
    s->unmapped = false;
    if (!actor_stores(a) || !s->sse)
        return;
    for (call_t *c = a->calls; c; c = c->next)
        if (c->stream == s && !c->mapped)
            reqmap_key(a, c, true);
}

static void mark_dirty(stream_t *s)
{
    if (s->dirty)
        return;
    s->dirty = true;
    s->dirty_next = t_dirty;
    t_dirty = s;
}

void actor_stream_dirty(stream_t *s)
{
    mark_dirty(s);
}

/* A dirty stream's writes at a commit: its record and the in-flight keys of its unanswered
 * calls. */
static void flush_stream(stream_t *s)
{
    put_stream_meta(s->actor, s);
    map_calls(s->actor, s);
    free(s->fresh); /* committed with the record, or the turn fails and the stream is reset */
    s->fresh = NULL;
}

void actor_flush_dirty(worker_t *w)
{
    (void)w;
    actor_flush_meta();
    for (stream_t *s = t_dirty; s; s = s->dirty_next) {
        flush_stream(s);
        s->dirty = false;
    }
    t_dirty = NULL;
}

void actor_stream_undirty(stream_t *s, bool write)
{
    if (!s->dirty)
        return;
    if (write)
        flush_stream(s);
    for (stream_t **pp = &t_dirty; *pp; pp = &(*pp)->dirty_next) {
        if (*pp == s) {
            *pp = s->dirty_next;
            break;
        }
    }
    s->dirty = false;
}

/* ---- streams ---- */

static stream_t *stream_new(actor_t *a, uint64_t num)
{
    stream_t *s = xcalloc(1, sizeof *s);
    s->actor = a;
    s->num = num;
    s->next = a->streams;
    a->streams = s;
    return s;
}

void actor_free_stream(actor_t *a, stream_t *s, bool write_meta)
{
    for (stream_t **pp = &a->streams; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    if (a->get == s)
        a->get = NULL;
    actor_stream_undirty(s, write_meta);
    if (s->window)
        event_free(s->window);
    buf_free(&s->resp);
    json_decref(s->req_ids);
    if (s->cap)
        free(s->cap->skip);
    free(s->cap);
    free(s->fresh);
    free(s);
}

uint64_t actor_newest_seq(actor_t *a, uint64_t num)
{
    return eventlog_newest_seq(worker_store(a->w), a->sid, num);
}

int actor_load_stream_rec(actor_t *a, uint64_t num, streamrec_t *r)
{
    worker_commit(a->w);
    int rc = eventlog_get_stream(worker_store(a->w), a->sid, num, r);
    if (rc != 0)
        return rc == -EIO ? rc : 1;
    uint64_t newest;
    if (eventlog_newest(worker_store(a->w), a->sid, num, &newest) != 0) {
        json_decref(r->req_ids);
        return -EIO; /* its seq may be behind the events: an id would be issued twice */
    }
    if (newest > r->seq)
        r->seq = newest; /* an id is never issued twice */
    return 0;
}

stream_t *actor_get_stream(actor_t *a, bool create, int *err)
{
    int rc = 1;
    if (err)
        *err = 0;
    if (a->get)
        return a->get;
    streamrec_t r;
    if (actor_stores(a) && (rc = actor_load_stream_rec(a, STREAM_GET, &r)) < 0) {
        if (err)
            *err = rc;
        return NULL; /* not made: it would number its events from 1 over the stored ones */
    }
    bool found = rc == 0;
    if (!found && !create)
        return NULL;
    stream_t *s = stream_new(a, STREAM_GET);
    s->sse = true;
    if (found) {
        s->seq = r.seq;
        s->last_write_ms = r.last_write_ms;
        s->bytes = r.bytes;
        s->delivered = r.delivered;
        json_decref(r.req_ids);
    }
    a->get = s;
    return s;
}

stream_t *actor_find_stream(actor_t *a, uint64_t num)
{
    for (stream_t *s = a->streams; s; s = s->next)
        if (s->num == num)
            return s;
    return NULL;
}

stream_t *actor_load_stream(actor_t *a, uint64_t num, int *err)
{
    stream_t *s = actor_find_stream(a, num);
    *err = 0;
    if (s)
        return s;
    streamrec_t r;
    if (!actor_stores(a) || (*err = actor_load_stream_rec(a, num, &r)) != 0) {
        *err = *err < 0 ? *err : 0;
        return NULL;
    }
    s = stream_new(a, num);
    s->sse = true;
    s->seq = r.seq;
    s->last_write_ms = r.last_write_ms;
    s->bytes = r.bytes;
    s->finished = r.finished;
    s->req_ids = r.req_ids ? r.req_ids : json_array();
    return s;
}

/* The cap of a POST stream, after event s->seq was put: 1 when it evicted an event (its size in
 * *old), 0 when nothing had to go. */
static int post_cap_evict(actor_t *a, stream_t *s, bool counted, uint64_t *old)
{
    if (!s->cap)
        s->cap = xcalloc(1, sizeof *s->cap);
    post_cap_t *c = s->cap;
    if (!c->evict_next)
        c->evict_next = s->seq; /* a stream reloaded by recovery: nothing older is ours */
    if (!counted) {
        if (c->n_skip == c->cap_skip) {
            c->cap_skip = c->cap_skip ? 2 * c->cap_skip : 4;
            c->skip = xrealloc(c->skip, c->cap_skip * sizeof *c->skip);
        }
        c->skip[c->n_skip++] = s->seq;
        return 0;
    }
    if (++c->kept <= (uint64_t)g_cfg.stream_cap)
        return 0;
    /* the oldest counted event still stored: seqs below evict_next are gone or not counted */
    while (c->skip_at < c->n_skip && c->skip[c->skip_at] <= c->evict_next) {
        if (c->skip[c->skip_at] == c->evict_next)
            c->evict_next++;
        c->skip_at++;
    }
    *old = evict(a, s, c->evict_next++);
    c->kept--;
    return 1;
}

/* Stores one event (when the event store is on) and frames it either into `into` or, when the
 * stream has a connection, as an SSE_DATA message. text may be empty (a priming event).
 * `counted`: the event counts against a POST stream's cap (not a priming event, not a response). */
static void emit_event(actor_t *a, stream_t *s, const char *text, size_t len, buf_t *into,
                       bool counted)
{
    char eid[EVENT_ID_MAX];
    const char *id = NULL;
    if (actor_stores(a)) {
        s->seq++;
        event_id_format(eid, a->tag, s->num, s->seq);
        id = eid;
        uint64_t old = 0; /* the evicted event's size, for the byte budget */
        bool post = s->num != STREAM_GET;
        actor_log_changing(a);
        eventlog_append(worker_store(a->w), actor_batch(a), a->sid, s->num, s->seq, text, len, 0,
                        &old);
        fresh_note(s, s->seq, len);
        a->stored_more = true;
        s->bytes += len;
        a->log_bytes += len;
        bool evicted = post ? post_cap_evict(a, s, counted, &old)
                            : s->seq > (uint64_t)g_cfg.stream_cap;
        if (!post && evicted)
            old = evict(a, s, s->seq - (uint64_t)g_cfg.stream_cap);
        if (evicted) {
            s->bytes -= old < s->bytes ? old : s->bytes;
            a->log_bytes -= old < a->log_bytes ? old : a->log_bytes;
            worker_stat_add(a->w, DS_EVENTS_EVICTED, 1);
        }
        s->last_write_ms = now_wall_ms();
        mark_dirty(s);
        worker_stat_add(a->w, DS_EVENTS_STORED, 1);
        if (s->num == STREAM_GET)
            actor_alarm_ensure(a, s->last_write_ms + g_cfg.event_ttl_s * 1000);
        if (a->log_bytes > (uint64_t)g_cfg.session_log_bytes)
            actor_trim_log(a);
    }
    if (into) {
        sse_frame_event(into, id, text, len);
    } else if (s->conn.gen) {
        worker_touch(a->w, a);
        buf_t b = {0};
        sse_frame_event(&b, id, text, len);
        hmsg_t *h = hmsg_new(HM_SSE_DATA, s->conn);
        h->stream = s->num;
        h->body = buf_steal(&b, &h->len);
        worker_send_http(a->w, h);
    }
}

/* The opening bytes of a fresh SSE stream: a retry hint and a priming event (an id with empty
 * data) for protocol versions that expect them. */
void actor_stream_prime(actor_t *a, stream_t *s, buf_t *into)
{
    if (!a->proto->priming || !actor_stores(a))
        return;
    sse_frame_retry(into, g_cfg.retry_ms);
    emit_event(a, s, "", 0, into, s->num == STREAM_GET);
}

void actor_send_sse_start(actor_t *a, stream_t *s, buf_t *body, bool keepalive)
{
    worker_touch(a->w, a); /* if the turn fails, the stream's connection is not SSE after all */
    hmsg_t *h = hmsg_new(HM_SSE_START, s->conn);
    h->status = 200;
    h->stream = s->num;
    h->flags = keepalive ? HM_KEEPALIVE : 0;
    h->content_type = "text/event-stream";
    if (s->session_header)
        memcpy(h->session_id, a->sid, SESSION_ID_LEN + 1);
    if (body && body->len)
        h->body = buf_steal(body, &h->len);
    if (s->num != STREAM_GET && json_array_size(s->req_ids) == 1)
        h->req_id = json_dump_compact(json_array_get(s->req_ids, 0), NULL);
    worker_send_http(a->w, h);
}

void actor_send_sse_end(actor_t *a, conn_ref_t conn, uint64_t num)
{
    hmsg_t *h = hmsg_new(HM_SSE_END, conn);
    h->stream = num;
    worker_send_http(a->w, h);
}

void actor_stream_start_sse(actor_t *a, stream_t *s)
{
    if (s->sse)
        return;
    s->sse = true;
    if (s->window) {
        event_free(s->window);
        s->window = NULL;
    }
    buf_t b = {0};
    actor_stream_prime(a, s, &b);
    /* responses already collected for a JSON reply (a batch) go out first, as events */
    for (size_t off = 0; s->n_resp > 0; s->n_resp--) {
        size_t len = s->n_resp > 1 ? jsonrpc_text_len(s->resp.p + off, s->resp.len - off)
                                   : s->resp.len - off;
        emit_event(a, s, s->resp.p + off, len, &b, false);
        off += len + 1; /* and its comma */
    }
    buf_free(&s->resp);
    actor_send_sse_start(a, s, &b, true); /* POST streams always get the keepalive */
    buf_free(&b);
    if (actor_stores(a)) {
        s->unmapped = true;
        mark_dirty(s); /* its record, and its calls' in-flight keys, at the commit */
    }
}

static void on_window(evutil_socket_t fd, short what, void *arg)
{
    stream_t *s = arg;
    worker_t *w = s->actor->w;
    worker_t *prev = worker_enter(w);
    event_free(s->window);
    s->window = NULL;
    actor_stream_start_sse(s->actor, s);
    worker_turn_end(w);
    worker_leave(prev);
}

void actor_stream_arm_window(actor_t *a, stream_t *s)
{
    if (s->sse || s->window)
        return;
    if (g_cfg.response_mode == RESPONSE_JSON)
        return;
    if (g_cfg.json_window_ms == 0) {
        actor_stream_start_sse(a, s);
        return;
    }
    s->window = evtimer_new(worker_base(a->w), on_window, s);
    struct timeval tv = {g_cfg.json_window_ms / 1000, (g_cfg.json_window_ms % 1000) * 1000};
    evtimer_add(s->window, &tv);
}

stream_t *actor_new_post_stream(actor_t *a, conn_ref_t conn)
{
    stream_t *s = stream_new(a, a->next_stream++);
    s->conn = conn;
    s->req_ids = json_array();
    return s;
}

void actor_stream_send(actor_t *a, stream_t *s, json_t *msg)
{
    ASSERT_OWNER(a->w);
    if (s->num != STREAM_GET && !s->sse) {
        if (g_cfg.response_mode == RESPONSE_JSON && !actor_one_request(a)) {
            /* a JSON-only POST cannot carry it: it becomes session-level. A 2026-07-28 request
             * has no session: what its call sends (progress it asked for with a progressToken,
             * log messages at its logLevel) has no other way to it, so its response turns SSE */
            actor_send_diverted(a, s, msg);
            return;
        }
        actor_stream_start_sse(a, s);
    }
    size_t len;
    char *text = jsonrpc_dump(msg, &len);
    json_decref(msg);
    emit_event(a, s, text, len, NULL, true);
    free(text);
}

void actor_send_diverted(actor_t *a, stream_t *s, json_t *msg)
{
    s->diverted = true;
    if (actor_send_session(a, msg) != 0)
        worker_fail_turn(a->w, a); /* the call's message was not stored: nor is its answer */
}

int actor_send_session(actor_t *a, json_t *msg)
{
    int err;
    stream_t *g = actor_get_stream(a, true, &err);
    if (!g) {
        json_decref(msg);
        return err;
    }
    actor_stream_send(a, g, msg);
    return 0;
}

bool actor_stream_settle(actor_t *a, stream_t *s)
{
    if (s->dispatching || s->outstanding > 0 || s->num == STREAM_GET)
        return false;
    if (!s->sse && actor_one_request(a) && g_cfg.response_mode == RESPONSE_SSE && !s->http_status)
        actor_stream_start_sse(a, s); /* --response-mode sse: a result goes out as an event */
    if (!s->sse && s->n_resp == 0 && json_array_size(s->req_ids) > 0)
        /* Every request it carried was cancelled: no response is sent for them, yet a POST
         * that carried requests is not answered 202. It becomes an event stream that ends
         * (every client accepts one: the Accept check requires it). */
        actor_stream_start_sse(a, s);
    if (s->sse) {
        s->finished = true;
        mark_dirty(s);
        if (actor_stores(a))
            actor_stream_finished(a, s);
        if (s->conn.gen)
            actor_send_sse_end(a, s->conn, s->num);
    } else if (s->n_resp == 0) {
        actor_reply(a->w, s->conn, 202, NULL, NULL);
    } else {
        if (s->batch) { /* the responses as one array */
            buf_t arr = {0};
            buf_reserve(&arr, s->resp.len + 2);
            buf_add(&arr, "[", 1);
            buf_add(&arr, s->resp.p, s->resp.len);
            buf_add(&arr, "]", 1);
            buf_free(&s->resp);
            s->resp = arr;
        }
        size_t len;
        char *text = buf_steal(&s->resp, &len);
        hmsg_t *h = hmsg_reply(s->conn, s->http_status ? s->http_status : 200, text, len,
                               s->session_header ? a->sid : NULL, s->retry_after);
        /* What its calls sent went on the standalone stream (a JSON answer cannot carry it),
         * another connection, maybe of another HTTP thread: the answer is written to its
         * socket only after those frames are written to theirs, so a client does not get a
         * call's result before its progress (hmsg_t.after; best effort: the two connections
         * are not ordered past the sockets) */
        if (h && s->diverted && a->get && a->get->conn.gen)
            h->after = a->get->conn;
        if (h)
            worker_send_http(a->w, h);
    }
    actor_free_stream(a, s, true);
    return true;
}

/* ---- calls ---- */

call_t *actor_add_call(actor_t *a, stream_t *s, const json_t *id, stats_method_t method)
{
    call_t *c = xcalloc(1, sizeof *c);
    c->id = json_deep_copy(id);
    c->stream = s;
    c->method = method;
    c->started_us = now_mono_us();
    c->next = a->calls;
    a->calls = c;
    json_array_append(s->req_ids, c->id);
    if (s->sse && actor_stores(a)) {
        s->unmapped = true;
        mark_dirty(s); /* the call's in-flight key, at the commit */
    }
    return c;
}

static void unlink_call(actor_t *a, call_t *c)
{
    if (c->mapped)
        reqmap_key(a, c, false);
    for (call_t **pp = &a->calls; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    if (c->job)
        c->job->call = NULL;
}

/* The common end of a call: its response, as JSON text, goes out on its stream (an event) or
 * joins the stream's JSON reply. */
static void complete_text(actor_t *a, call_t *c, buf_t *text)
{
    stream_t *s = c->stream;
    stats_observe_latency(c->method, now_mono_us() - c->started_us);
    unlink_call(a, c);
    s->outstanding--;
    if (s->sse) {
        emit_event(a, s, text->p, text->len, NULL, false);
        buf_free(text);
    } else if (s->n_resp++ == 0) {
        buf_free(&s->resp);
        s->resp = *text;
    } else {
        buf_add(&s->resp, ",", 1);
        buf_add(&s->resp, text->p, text->len);
        buf_free(text);
    }
    json_decref(c->id);
    free(c);
    actor_stream_settle(a, s);
}

void actor_complete_call(actor_t *a, call_t *c, json_t *response)
{
    buf_t text = {0};
    json_dump_whole_into(&text, response);
    json_decref(response);
    complete_text(a, c, &text);
}

void actor_complete_result(actor_t *a, call_t *c, json_t *result, const char *extra,
                           size_t extra_len)
{
    buf_t text = {0};
    jsonrpc_result_into(&text, c->id, result, extra, extra_len);
    json_decref(result);
    complete_text(a, c, &text);
}

void actor_drop_call(actor_t *a, call_t *c)
{
    stream_t *s = c->stream;
    job_t *j = c->job;
    worker_ops(a->w)->on_call_dropped(a, c); /* the gateway tells its upstream, say */
    unlink_call(a, c);
    if (j) {
        /* The handler runs on until it sees the flag. The actor keeps the job until its
         * WM_TOOL_DONE: the session stays awake, and a DELETE or expiry detaches it. */
        job_cancel(j);
        j->detached_next = a->detached;
        a->detached = j;
        actor_unqueue_job(a, j);
    }
    s->outstanding--;
    json_decref(c->id);
    free(c);
    actor_stream_settle(a, s);
}
