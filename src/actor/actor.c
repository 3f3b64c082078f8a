/* The session actor: worker thread only. See actor.h for the model.
 *
 * The life of a message to the client (actor_stream_send):
 *   1. the actor picks the stream (the call's POST stream, or the standalone stream);
 *   2. it assigns the event id <streamId>:<seq> and puts the event, the eviction of the event
 *      --stream-cap places older, and (at turn end) the stream's metadata in the worker batch;
 *   3. the frame is queued for the connection's HTTP thread, which receives it only after the
 *      worker has committed the batch (worker_turn_end).
 * A detached stream still gets step 2, so a client that resumes finds every message.
 */
#include "actor/actor.h"

#include "actor/refuse.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/log.h"
#include "wire/sse.h"
#include "core/jsonparse.h"
#include "wire/jsonrpc.h"
#include "store/eventlog.h"
#include "store/sessionrec.h"
#include "wire/eventid.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

static void unqueue_job(actor_t *a, job_t *j);
static void release_queued_jobs(actor_t *a);

static _Thread_local stream_t *t_dirty; /* streams whose metadata changed this turn */
static _Thread_local actor_t *t_meta_dirty; /* actors whose metadata changed this turn */

static const char *const LOG_LEVELS[] = {"debug", "info", "notice", "warning",
                                         "error", "critical", "alert", "emergency"};

int log_level_index(const char *level)
{
    for (int i = 0; i < 8; i++)
        if (level && strcmp(level, LOG_LEVELS[i]) == 0)
            return i;
    return -1;
}

bool actor_log_enabled(const actor_t *a, const char *level)
{
    if (a->log_level < 0)
        return true;
    int l = log_level_index(level);
    return l < 0 || l >= a->log_level;
}

/* ---- replies on connections the actor does not keep ---- */

void actor_reply(worker_t *w, conn_ref_t conn, int status, json_t *body, const char *sid_header)
{
    if (!conn.gen) {
        json_decref(body);
        return;
    }
    hmsg_t *h = hmsg_new(HM_REPLY, conn);
    h->status = status;
    if (body) {
        h->content_type = "application/json";
        h->body = jsonrpc_dump(body, &h->len);
        json_decref(body);
    }
    if (sid_header)
        memcpy(h->session_id, sid_header, SESSION_ID_LEN + 1);
    worker_send_http(w, h);
}

void actor_reply_error(worker_t *w, conn_ref_t conn, const json_t *id, int status, int code,
                       const char *msg)
{
    actor_reply(w, conn, status, jsonrpc_error(id, code, msg, NULL), NULL);
}

void actor_reply_retry(worker_t *w, conn_ref_t conn, const json_t *id, int status, const char *msg,
                       const char *retry_after)
{
    if (!conn.gen)
        return;
    json_t *body = jsonrpc_error(id, MCP_ERR_BAD_REQUEST, msg, NULL);
    hmsg_t *h = hmsg_new(HM_REPLY, conn);
    h->status = status;
    h->content_type = "application/json";
    h->body = jsonrpc_dump(body, &h->len);
    h->retry_after = retry_after;
    json_decref(body);
    worker_send_http(w, h);
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
    if (!g_cfg.event_store)
        return;
    a->stored_more = true;
    streamrec_t r = {.finished = s->finished, .is_get = s->num == STREAM_GET,
                     .delivered = s->delivered, .seq = s->seq, .last_write_ms = s->last_write_ms,
                     .bytes = s->bytes, .req_ids = s->req_ids};
    eventlog_put_stream(actor_batch(a), a->sid, s->num, &r);
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

void actor_flush_dirty(worker_t *w)
{
    (void)w;
    while (t_meta_dirty) {
        actor_t *a = t_meta_dirty;
        t_meta_dirty = a->meta_next;
        a->meta_dirty = false;
        actor_write_meta(a);
    }
    for (stream_t *s = t_dirty; s; s = s->dirty_next) {
        put_stream_meta(s->actor, s);
        s->dirty = false;
    }
    t_dirty = NULL;
}

static void unlink_dirty(stream_t *s, bool write)
{
    if (!s->dirty)
        return;
    if (write)
        put_stream_meta(s->actor, s);
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
    unlink_dirty(s, write_meta);
    if (s->window)
        event_free(s->window);
    json_decref(s->responses);
    json_decref(s->req_ids);
    free(s);
}

uint64_t actor_newest_seq(actor_t *a, uint64_t num)
{
    return eventlog_newest_seq(worker_store(a->w), a->sid, num);
}

/* Reads a stream record; 0 found, 1 absent. */
static int load_stream_rec(actor_t *a, uint64_t num, streamrec_t *r)
{
    worker_commit(a->w);
    if (eventlog_get_stream(worker_store(a->w), a->sid, num, r) != 0)
        return 1;
    uint64_t newest = actor_newest_seq(a, num);
    if (newest > r->seq)
        r->seq = newest; /* an id is never issued twice */
    return 0;
}

stream_t *actor_get_stream(actor_t *a, bool create)
{
    if (a->get)
        return a->get;
    streamrec_t r;
    bool found = g_cfg.event_store && load_stream_rec(a, STREAM_GET, &r) == 0;
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

stream_t *actor_load_stream(actor_t *a, uint64_t num)
{
    stream_t *s = actor_find_stream(a, num);
    if (s)
        return s;
    streamrec_t r;
    if (!g_cfg.event_store || load_stream_rec(a, num, &r) != 0)
        return NULL;
    s = stream_new(a, num);
    s->sse = true;
    s->seq = r.seq;
    s->last_write_ms = r.last_write_ms;
    s->bytes = r.bytes;
    s->finished = r.finished;
    s->req_ids = r.req_ids ? r.req_ids : json_array();
    s->responses = json_array();
    return s;
}

/* Stores one event (when the event store is on) and frames it either into `into` or, when the
 * stream has a connection, as an SSE_DATA message. text may be empty (a priming event). */
static void emit_event(actor_t *a, stream_t *s, const char *text, size_t len, buf_t *into)
{
    char eid[EVENT_ID_MAX];
    const char *id = NULL;
    if (g_cfg.event_store) {
        s->seq++;
        event_id_format(eid, a->tag, s->num, s->seq);
        id = eid;
        uint64_t old; /* the evicted event's size, for the byte budget */
        eventlog_append(worker_store(a->w), actor_batch(a), a->sid, s->num, s->seq, text, len,
                        (uint64_t)g_cfg.stream_cap, &old);
        a->stored_more = true;
        s->bytes += len;
        a->log_bytes += len;
        if (s->seq > (uint64_t)g_cfg.stream_cap) {
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
static void stream_prime(actor_t *a, stream_t *s, buf_t *into)
{
    if (!a->proto->priming || !g_cfg.event_store)
        return;
    sse_frame_retry(into, g_cfg.retry_ms);
    emit_event(a, s, "", 0, into);
}

static void send_sse_start(actor_t *a, stream_t *s, buf_t *body, bool keepalive)
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
        h->req_id = json_dumps(json_array_get(s->req_ids, 0), JSON_COMPACT | JSON_ENCODE_ANY);
    worker_send_http(a->w, h);
}

static void send_sse_end(actor_t *a, conn_ref_t conn, uint64_t num)
{
    hmsg_t *h = hmsg_new(HM_SSE_END, conn);
    h->stream = num;
    worker_send_http(a->w, h);
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

static void map_calls(actor_t *a, stream_t *s)
{
    if (!g_cfg.event_store)
        return;
    for (call_t *c = a->calls; c; c = c->next)
        if (c->stream == s && !c->mapped)
            reqmap_key(a, c, true);
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
    stream_prime(a, s, &b);
    /* responses already collected for a JSON reply (a batch) go out first, as events */
    size_t i;
    json_t *r;
    json_array_foreach(s->responses, i, r) {
        size_t len;
        char *text = jsonrpc_dump(r, &len);
        emit_event(a, s, text, len, &b);
        free(text);
    }
    json_array_clear(s->responses);
    send_sse_start(a, s, &b, true); /* POST streams always get the keepalive */
    buf_free(&b);
    if (g_cfg.event_store) {
        mark_dirty(s);
        map_calls(a, s);
    }
}

static void on_window(evutil_socket_t fd, short what, void *arg)
{
    stream_t *s = arg;
    worker_t *w = s->actor->w;
    event_free(s->window);
    s->window = NULL;
    actor_stream_start_sse(s->actor, s);
    worker_turn_end(w);
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
    s->responses = json_array();
    s->req_ids = json_array();
    return s;
}

void actor_stream_send(actor_t *a, stream_t *s, json_t *msg)
{
    if (s->num != STREAM_GET && !s->sse) {
        if (g_cfg.response_mode == RESPONSE_JSON) {
            /* a JSON-only POST cannot carry it: it becomes session-level */
            actor_send_session(a, msg);
            return;
        }
        actor_stream_start_sse(a, s);
    }
    size_t len;
    char *text = jsonrpc_dump(msg, &len);
    json_decref(msg);
    emit_event(a, s, text, len, NULL);
    free(text);
}

void actor_send_session(actor_t *a, json_t *msg)
{
    stream_t *g = actor_get_stream(a, true);
    actor_stream_send(a, g, msg);
}

bool actor_stream_settle(actor_t *a, stream_t *s)
{
    if (s->dispatching || s->outstanding > 0 || s->num == STREAM_GET)
        return false;
    if (!s->sse && json_array_size(s->responses) == 0 && json_array_size(s->req_ids) > 0)
        /* Every request it carried was cancelled: no response is sent for them, yet a POST
         * that carried requests is not answered 202. It becomes an event stream that ends
         * (every client accepts one: the Accept check requires it). */
        actor_stream_start_sse(a, s);
    if (s->sse) {
        s->finished = true;
        mark_dirty(s);
        if (g_cfg.event_store)
            actor_stream_finished(a, s);
        if (s->conn.gen)
            send_sse_end(a, s->conn, s->num);
    } else if (json_array_size(s->responses) == 0) {
        actor_reply(a->w, s->conn, 202, NULL, NULL);
    } else {
        json_t *body = s->batch ? json_incref(s->responses)
                                : json_incref(json_array_get(s->responses, 0));
        actor_reply(a->w, s->conn, 200, body, s->session_header ? a->sid : NULL);
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
    if (s->sse && g_cfg.event_store)
        reqmap_key(a, c, true);
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

void actor_complete_call(actor_t *a, call_t *c, json_t *response)
{
    stream_t *s = c->stream;
    stats_observe_latency(c->method, now_mono_us() - c->started_us);
    unlink_call(a, c);
    s->outstanding--;
    if (s->sse) {
        size_t len;
        char *text = jsonrpc_dump(response, &len);
        emit_event(a, s, text, len, NULL);
        free(text);
        json_decref(response);
    } else {
        json_array_append_new(s->responses, response);
    }
    json_decref(c->id);
    free(c);
    actor_stream_settle(a, s);
}

void actor_drop_call(actor_t *a, call_t *c)
{
    stream_t *s = c->stream;
    job_t *j = c->job;
    unlink_call(a, c);
    if (j) {
        /* The handler runs on until it sees the flag. The actor keeps the job until its
         * WM_TOOL_DONE: the session stays awake, and a DELETE or expiry detaches it. */
        job_cancel(j);
        j->detached_next = a->detached;
        a->detached = j;
        unqueue_job(a, j);
    }
    s->outstanding--;
    json_decref(c->id);
    free(c);
    actor_stream_settle(a, s);
}

/* A cancelled job still waiting for a place ends now, without taking one. */
static void unqueue_job(actor_t *a, job_t *j)
{
    for (job_t **pp = &a->jobs_queued; *pp; pp = &(*pp)->queue_next) {
        if (*pp == j) {
            *pp = j->queue_next;
            if (a->jobs_queued_tail == j) {
                a->jobs_queued_tail = NULL;
                for (job_t *q = a->jobs_queued; q; q = q->queue_next)
                    a->jobs_queued_tail = q;
            }
            j->queue_next = NULL;
            pool_submit(j);
            return;
        }
    }
}

static void drop_pending_of(actor_t *a, job_t *j)
{
    pending_t **pp = &a->pending;
    while (*pp) {
        if ((*pp)->job == j) {
            pending_t *p = *pp;
            *pp = p->next;
            free(p);
        } else {
            pp = &(*pp)->next;
        }
    }
}

/* ---- session metadata ---- */

void actor_persist_meta(actor_t *a)
{
    if (a->meta_dirty)
        return;
    a->meta_dirty = true;
    a->meta_next = t_meta_dirty;
    t_meta_dirty = a;
}

/* Drops a from the turn's dirty list without writing (deleted, or written now). */
static void meta_undirty(actor_t *a)
{
    if (!a->meta_dirty)
        return;
    for (actor_t **pp = &t_meta_dirty; *pp; pp = &(*pp)->meta_next) {
        if (*pp == a) {
            *pp = a->meta_next;
            break;
        }
    }
    a->meta_dirty = false;
}

void actor_write_meta(actor_t *a)
{
    meta_undirty(a);
    json_t *m = json_object();
    json_object_set_new(m, "v", json_string(a->proto->version));
    json_object_set(m, "ci", a->client_info ? a->client_info : json_null());
    json_object_set(m, "cc", a->client_caps ? a->client_caps : json_null());
    json_object_set_new(m, "ll", json_integer(a->log_level));
    json_object_set_new(m, "c", json_integer(a->created_ms));
    json_object_set_new(m, "t", json_integer(a->touched_ms));
    json_object_set_new(m, "i", json_boolean(a->initialized));
    json_object_set_new(m, "a", json_string(a->auth_name));
    json_object_set_new(m, "al", json_integer(a->alarm_due));
    json_object_set_new(m, "ns", json_integer((json_int_t)a->next_stream));
    json_object_set_new(m, "lb", json_integer((json_int_t)a->log_bytes));
    json_object_set_new(m, "rq", json_integer((json_int_t)a->next_req_num));
    if (a->subscriptions && json_object_size(a->subscriptions))
        json_object_set(m, "sub", a->subscriptions);
    size_t len;
    char *text = jsonrpc_dump(m, &len);
    json_decref(m);
    sessionrec_put_meta(actor_batch(a), a->sid, text, len);
    free(text);
    a->touched_stored_ms = a->touched_ms;
}

actor_t *actor_create(worker_t *w, const char *sid)
{
    actor_t *a = xcalloc(1, sizeof *a);
    memcpy(a->sid, sid, SESSION_ID_LEN + 1);
    a->tag = session_tag(sid);
    a->w = w;
    a->proto = proto_latest();
    a->log_level = -1;
    a->next_stream = 1;
    a->next_req_num = 1;
    a->created_ms = a->touched_ms = now_wall_ms();
    worker_add_actor(w, a);
    return a;
}

/* Wakes a session from the store; NULL when it does not exist. */
static actor_t *actor_load(worker_t *w, const char *sid)
{
    worker_commit(w); /* a delete earlier in this turn must be visible */
    char *v;
    size_t vl;
    if (sessionrec_get_meta(worker_store(w), sid, &v, &vl) != 0)
        return NULL;
    /* our own writer's text: it may hold U+0000 (a client's strings), which jansson refuses */
    json_t *m = json_parse_buf(v, vl, NULL, 0, NULL);
    free(v);
    const proto_t *p = proto_find(json_string_value(json_object_get(m, "v")));
    if (!json_is_object(m) || !p) {
        log_error("session %.8s: unreadable metadata, treating it as unknown", sid);
        json_decref(m);
        return NULL;
    }
    actor_t *a = actor_create(w, sid);
    a->proto = p;
    a->stored_more = true; /* unknown: it may have streams or state from before */
    json_t *ci = json_object_get(m, "ci"), *cc = json_object_get(m, "cc");
    a->client_info = json_is_object(ci) ? json_incref(ci) : NULL;
    a->client_caps = json_is_object(cc) ? json_incref(cc) : NULL;
    a->log_level = (int)json_integer_value(json_object_get(m, "ll"));
    a->created_ms = json_integer_value(json_object_get(m, "c"));
    a->touched_ms = json_integer_value(json_object_get(m, "t"));
    a->initialized = json_is_true(json_object_get(m, "i"));
    a->alarm_due = json_integer_value(json_object_get(m, "al"));
    a->touched_stored_ms = a->touched_ms;
    a->log_bytes = (uint64_t)json_integer_value(json_object_get(m, "lb"));
    json_int_t ns = json_integer_value(json_object_get(m, "ns"));
    if (ns > 1)
        a->next_stream = (uint64_t)ns;
    /* server->client request ids are never reused in a session, across wakes and restarts */
    json_int_t rq = json_integer_value(json_object_get(m, "rq"));
    if (rq > 1)
        a->next_req_num = (uint64_t)rq;
    snprintf(a->auth_name, sizeof a->auth_name, "%s",
             json_string_value(json_object_get(m, "a")) ? json_string_value(json_object_get(m, "a")) : "");
    json_t *sub = json_object_get(m, "sub");
    a->subscriptions = json_is_object(sub) ? json_incref(sub) : NULL;
    json_decref(m);

    /* POST stream numbers continue after the newest stored stream */
    uint64_t next = eventlog_next_stream(worker_store(w), sid);
    if (next > a->next_stream)
        a->next_stream = next;
    STAT_INC(wakes_total);
    log_debug("session %.8s woken from the store", sid);
    return a;
}

/* A failed turn reset a (and its in-flight requests lost their jobs): once the store takes
 * writes again, they are answered as after a crash, with a stored error a resuming client
 * finds. While it refuses, reads and replays go on and this waits. */
static void recover_after_reset(actor_t *a)
{
    if (!store_writable(worker_store(a->w)) || !worker_take_recover_mark(a->w, a->sid))
        return;
    json_t *list = actor_inflight(a);
    if (json_array_size(list))
        actor_recover(a, list, REFUSE_MESSAGE);
    json_decref(list);
}

static void actor_free(actor_t *a)
{
    REQUIRE(!a->meta_dirty); /* a freed actor on the turn's dirty list would be written later */
    while (a->streams)
        actor_free_stream(a, a->streams, false);
    while (a->calls) {
        call_t *c = a->calls;
        a->calls = c->next;
        json_decref(c->id);
        free(c);
    }
    while (a->pending) {
        pending_t *p = a->pending;
        a->pending = p->next;
        free(p);
    }
    json_decref(a->client_info);
    json_decref(a->client_caps);
    json_decref(a->subscriptions);
    free(a);
}

/* Detaches every job from the actor and cancels it: the worker frees each at WM_TOOL_DONE. */
static void orphan_jobs(actor_t *a)
{
    while (a->detached) {
        job_t *j = a->detached;
        a->detached = j->detached_next;
        j->detached_next = NULL;
        j->actor = NULL;
        job_cancel(j);
    }
    for (call_t *c = a->calls; c; c = c->next) {
        if (c->job) {
            c->job->actor = NULL;
            c->job->call = NULL;
            job_cancel(c->job);
            c->job = NULL;
        }
    }
    release_queued_jobs(a);
}

static void end_connections(actor_t *a, const char *why)
{
    for (stream_t *s = a->streams; s; s = s->next) {
        if (!s->conn.gen)
            continue;
        if (s->sse)
            send_sse_end(a, s->conn, s->num);
        else
            actor_reply_error(a->w, s->conn,
                              json_array_size(s->req_ids) == 1 ? json_array_get(s->req_ids, 0) : NULL,
                              404, MCP_ERR_SESSION_NOT_FOUND, why);
        s->conn.gen = 0;
    }
}

void actor_delete(actor_t *a)
{
    worker_t *w = a->w;
    end_connections(a, "Session not found: it was deleted");
    orphan_jobs(a);
    /* the streams' metadata must not be written back after the range deletes */
    for (stream_t *s = a->streams; s; s = s->next)
        unlink_dirty(s, false);
    meta_undirty(a);
    store_batch_t *b = actor_batch(a);
    if (a->alarm_due) {
        sessionrec_delete_alarm(b, a->alarm_due, a->sid);
        worker_stat_add(w, DS_ALARMS_PENDING, -1);
        a->alarm_due = 0;
    }
    /* a session that never stored a stream or state has its metadata as its only key: one
     * point delete, no range tombstones (they slow later reads) */
    eventlog_delete_session(b, a->sid, !a->stored_more);
    worker_stat_add(w, DS_SESSIONS_DELETED, 1);
    worker_stat_add(w, DS_SESSIONS_STORED, -1);
    log_info("session %.8s deleted", a->sid);
    worker_remove_actor(w, a);
    actor_free(a);
}

/* The client side of a refused turn: every request still open on an attached stream gets the
 * storage error (an SSE event without an id: it is not stored), a response that has not
 * started gets 503. */
static void refuse_connections(actor_t *a)
{
    for (stream_t *s = a->streams; s; s = s->next) {
        if (!s->conn.gen)
            continue;
        if (!s->sse) {
            const json_t *id = json_array_size(s->req_ids) == 1 ? json_array_get(s->req_ids, 0)
                                                                : NULL;
            hmsg_t *h = hmsg_new(HM_REPLY, s->conn);
            h->status = 503;
            h->content_type = "application/json";
            h->retry_after = REFUSE_RETRY_AFTER;
            json_t *err = refuse_error(id);
            h->body = jsonrpc_dump(err, &h->len);
            json_decref(err);
            worker_send_http(a->w, h);
        } else {
            buf_t b = {0};
            for (call_t *c = a->calls; c; c = c->next) {
                if (c->stream != s)
                    continue;
                json_t *err = refuse_error(c->id);
                size_t len;
                char *text = jsonrpc_dump(err, &len);
                sse_frame_event(&b, NULL, text, len);
                free(text);
                json_decref(err);
            }
            if (b.len) {
                hmsg_t *h = hmsg_new(HM_SSE_DATA, s->conn);
                h->stream = s->num;
                h->body = buf_steal(&b, &h->len);
                worker_send_http(a->w, h);
            }
            send_sse_end(a, s->conn, s->num);
        }
        s->conn.gen = 0;
    }
}

void actor_reset(actor_t *a)
{
    refuse_connections(a);
    orphan_jobs(a);
    for (stream_t *s = a->streams; s; s = s->next)
        unlink_dirty(s, false);
    meta_undirty(a);
    log_info("session %.8s: its writes were refused; it is reloaded from the store at its next "
             "request (%s)", a->sid, a->calls ? "its open requests got the storage error" : "nothing was open");
    worker_remove_actor(a->w, a);
    actor_free(a);
}

static void cancel_jobs_of(actor_t *a, void *arg)
{
    (void)arg;
    for (call_t *c = a->calls; c; c = c->next)
        if (c->job)
            job_cancel(c->job);
    release_queued_jobs(a); /* cancelled: they end at once, before the pool stops */
}

void actor_cancel_all_jobs(worker_t *w)
{
    /* shutdown: handlers see the flag and return; their results still reach the store */
    worker_foreach_actor(w, cancel_jobs_of, NULL);
}

static void destroy_one(actor_t *a, void *arg)
{
    (void)arg;
    orphan_jobs(a);
    for (stream_t *s = a->streams; s; s = s->next)
        unlink_dirty(s, true);
    actor_write_meta(a); /* shutdown: the latest touch and counters, like a hibernation */
    worker_remove_actor(a->w, a);
    actor_free(a);
}

void actor_destroy_all(worker_t *w)
{
    worker_foreach_actor(w, destroy_one, NULL);
}

/* ---- hibernation ---- */

bool actor_is_idle(const actor_t *a)
{
    if (a->calls || a->pending || a->detached)
        return false;
    for (const stream_t *s = a->streams; s; s = s->next)
        if (s->conn.gen)
            return false;
    return true;
}

void actor_hibernate(actor_t *a)
{
    worker_t *w = a->w;
    REQUIRE(actor_is_idle(a));
    /* everything else is already in the store; the metadata gets the latest touch */
    actor_write_meta(a);
    while (a->streams)
        actor_free_stream(a, a->streams, true);
    STAT_INC(hibernations_total);
    log_debug("session %.8s hibernated", a->sid);
    worker_remove_actor(w, a);
    actor_free(a);
}

/* ---- GET: open or resume ---- */

static long replay_after(actor_t *a, uint64_t num, uint64_t after, buf_t *out);

static void open_standalone(actor_t *a, conn_ref_t conn)
{
    stream_t *g = actor_get_stream(a, true);
    if (g->conn.gen)
        send_sse_end(a, g->conn, g->num); /* a new GET replaces the previous one */
    g->conn = conn;
    buf_t b = {0};
    long backlog = 0;
    if (!g->delivered && g->seq > 0 && g_cfg.event_store) {
        /* The session's first GET: its client cannot have seen anything stored for it yet
         * (session-level messages sent before it connected), so it gets all of it. Later
         * GETs without Last-Event-ID start fresh, as the client asked. */
        if (a->proto->priming)
            sse_frame_retry(&b, g_cfg.retry_ms);
        backlog = replay_after(a, STREAM_GET, 0, &b);
        if (backlog == 0)
            buf_free(&b);
    }
    if (backlog == 0)
        stream_prime(a, g, &b);
    if (!g->delivered && g_cfg.event_store) {
        g->delivered = true;
        mark_dirty(g);
    }
    /* with an event store, idle drops are recovered with Last-Event-ID: no keepalive */
    send_sse_start(a, g, &b, !g_cfg.event_store);
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

/* Appends every stored event of stream num after `after` to out; returns the count. */
static long replay_after(actor_t *a, uint64_t num, uint64_t after, buf_t *out)
{
    worker_commit(a->w); /* this turn's events too */
    struct replay r = {a, num, out, 0};
    uint64_t first;
    long found = eventlog_replay_after(worker_store(a->w), a->sid, num, after, replay_one, &r,
                                       &first);
    if (found && first != after + 1) {
        STAT_INC(replay_gaps_total); /* evicted by the cap: replay from the oldest kept */
        log_info("session %.8s: resume after seq %llu finds the oldest kept event at %llu",
                 a->sid, (unsigned long long)after, (unsigned long long)first);
    }
    STAT_ADD(events_replayed_total, r.sent);
    return r.sent;
}

static void resume(actor_t *a, wmsg_t *m)
{
    if (m->resume_tag != a->tag) {
        actor_reply_error(a->w, m->conn, NULL, 404, MCP_ERR_BAD_REQUEST,
                          "Last-Event-ID does not name a stream of this session");
        return;
    }
    uint64_t num = m->resume_stream;
    stream_t *s = num == STREAM_GET ? actor_get_stream(a, false) : actor_find_stream(a, num);
    bool finished = false;
    if (!s && num != STREAM_GET) {
        streamrec_t r;
        if (load_stream_rec(a, num, &r) == 0) {
            finished = true; /* not live: every response was written (or the process restarted) */
            json_decref(r.req_ids);
        } else {
            actor_reply_error(a->w, m->conn, NULL, 404, MCP_ERR_BAD_REQUEST,
                              "Last-Event-ID names a stream this session does not have");
            return;
        }
    } else if (!s || !s->sse) {
        actor_reply_error(a->w, m->conn, NULL, 404, MCP_ERR_BAD_REQUEST,
                          "Last-Event-ID names a stream this session does not have");
        return;
    }
    buf_t b = {0};
    if (a->proto->priming) {
        /* The priming event of a resumed connection re-asserts the client's own position: a
         * fresh id here, ahead of the replay, would make a drop before the first replayed
         * event skip the whole replay on the next resume. */
        char eid[EVENT_ID_MAX];
        event_id_format(eid, a->tag, num, m->resume_seq);
        sse_frame_retry(&b, g_cfg.retry_ms);
        sse_frame_event(&b, eid, "", 0);
    }
    long n = replay_after(a, num, m->resume_seq, &b);
    log_debug("session %.8s: resumed stream %llu after %llu, %ld events replayed", a->sid,
              (unsigned long long)num, (unsigned long long)m->resume_seq, n);
    if (finished) {
        stream_t tmp = {.num = num, .conn = m->conn};
        send_sse_start(a, &tmp, &b, false);
        send_sse_end(a, m->conn, num);
        buf_free(&b);
        return;
    }
    /* the connection takes the stream over; an older connection on it is ended */
    if (s->conn.gen && !conn_ref_eq(s->conn, m->conn))
        send_sse_end(a, s->conn, s->num);
    s->conn = m->conn;
    send_sse_start(a, s, &b, num != STREAM_GET || !g_cfg.event_store);
    buf_free(&b);
}

static void handle_get(actor_t *a, wmsg_t *m)
{
    if (m->has_last_event_id)
        resume(a, m);
    else
        open_standalone(a, m->conn);
}

static void handle_conn_closed(actor_t *a, wmsg_t *m)
{
    stream_t *s = actor_find_stream(a, m->stream);
    if (s && conn_ref_eq(s->conn, m->conn))
        s->conn.gen = 0;
}

/* ---- tool messages ---- */

static const char *capability_for(const char *method)
{
    if (strcmp(method, "elicitation/create") == 0)
        return "elicitation";
    if (strcmp(method, "sampling/createMessage") == 0)
        return "sampling";
    if (strcmp(method, "roots/list") == 0)
        return "roots";
    return NULL;
}

/* The stream for a message with no related request, when the standalone stream is closed:
 * the single unfinished POST stream, if there is exactly one. */
static stream_t *single_active_post(actor_t *a, int *count)
{
    stream_t *found = NULL;
    *count = 0;
    for (stream_t *s = a->streams; s; s = s->next) {
        if (s->num != STREAM_GET && s->outstanding > 0) {
            (*count)++;
            found = s;
        }
    }
    return *count == 1 ? found : NULL;
}

static void handle_tool_req(actor_t *a, job_t *j, wmsg_t *m)
{
    const char *method = json_string_value(json_object_get(m->payload, "method"));
    if (atomic_load(&j->cancelled)) {
        /* the call was cancelled (or the server is stopping): nothing goes to the client */
        job_reply(j, m->wait_seq, NULL, "the call was cancelled");
        return;
    }
    if (j->inline_mode) {
        job_reply(j, m->wait_seq, NULL, "a non-blocking tool cannot send requests to the client");
        return;
    }
    if (strcmp(method, "elicitation/create") == 0 && !a->proto->elicitation) {
        char why[160];
        snprintf(why, sizeof why, "elicitation does not exist in protocol version %s",
                 a->proto->version);
        job_reply(j, m->wait_seq, NULL, why);
        return;
    }
    const char *cap = capability_for(method);
    if (cap && !json_object_get(a->client_caps, cap)) {
        char why[160];
        snprintf(why, sizeof why, "the client did not declare the %s capability", cap);
        job_reply(j, m->wait_seq, NULL, why);
        return;
    }
    stream_t *route = NULL;
    bool json_only = g_cfg.response_mode == RESPONSE_JSON;
    if (m->target == MCPD_TARGET_REQUEST && j->call && !json_only) {
        route = j->call->stream;
    } else {
        stream_t *g = actor_get_stream(a, false);
        int n = 0;
        if (g && g->conn.gen)
            route = g;
        else if (!json_only)
            route = single_active_post(a, &n);
        if (!route) {
            char why[200];
            snprintf(why, sizeof why,
                     "no stream can carry %s: the standalone GET stream is not open and %d "
                     "POST streams are active",
                     method, n);
            job_reply(j, m->wait_seq, NULL, why);
            return;
        }
    }
    pending_t *p = xcalloc(1, sizeof *p);
    p->num = a->next_req_num++;
    actor_persist_meta(a); /* the counter goes to the store with this turn's events */
    p->job = j;
    p->wait_seq = m->wait_seq;
    p->next = a->pending;
    a->pending = p;
    json_t *req = json_object();
    json_object_set_new(req, "jsonrpc", json_string("2.0"));
    json_object_set_new(req, "id", json_integer((json_int_t)p->num));
    json_object_update(req, m->payload);
    actor_stream_send(a, route, req);
}

static void handle_tool_out(actor_t *a, job_t *j, wmsg_t *m)
{
    json_t *msg = m->payload;
    m->payload = NULL;
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method && strcmp(method, "notifications/message") == 0) {
        const char *lvl = json_string_value(json_object_get(json_object_get(msg, "params"), "level"));
        if (!actor_log_enabled(a, lvl)) {
            json_decref(msg);
            return;
        }
    }
    if (m->target == MCPD_TARGET_SESSION) {
        actor_send_session(a, msg);
    } else if (j->call) {
        actor_stream_send(a, j->call->stream, msg);
    } else {
        json_decref(msg); /* the call was cancelled: nothing more goes out for it */
    }
}

/* Ends the connection of the call's stream, leaving the stream live for a resume. */
static void handle_tool_close(actor_t *a, job_t *j)
{
    if (!j->call)
        return;
    stream_t *s = j->call->stream;
    actor_stream_start_sse(a, s);
    if (s->conn.gen) {
        send_sse_end(a, s->conn, s->num);
        s->conn.gen = 0;
    }
}

static void handle_tool_state(actor_t *a, job_t *j, const wmsg_t *m)
{
    if (strlen(j->state_key) > 200 || !*j->state_key) {
        job_reply(j, m->wait_seq, NULL, "bad state key");
        return;
    }
    json_t *cur = NULL;
    if (j->state_op != STATE_PUT) {
        worker_commit(a->w);
        char *v;
        size_t vl;
        if (sessionrec_get_state(worker_store(a->w), a->sid, j->state_key, &v, &vl) == 0) {
            cur = json_parse_buf(v, vl, NULL, 0, NULL);
            free(v);
        }
    }
    json_t *out = NULL;
    switch (j->state_op) {
    case STATE_GET:
        job_reply(j, m->wait_seq, cur ? cur : json_null(), NULL);
        return;
    case STATE_PUT:
        out = j->state_value;
        j->state_value = NULL;
        break;
    case STATE_UPDATE:
        out = j->state_fn(cur, j->state_arg);
        json_decref(cur);
        break;
    }
    if (out) {
        char *text = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY);
        a->stored_more = true;
        sessionrec_put_state(actor_batch(a), a->sid, j->state_key, text, strlen(text));
        free(text);
    } else {
        sessionrec_delete_state(actor_batch(a), a->sid, j->state_key);
    }
    json_t *answer = out ? out : json_null();
    if (j->state_op == STATE_PUT) {
        json_decref(out);
        answer = json_true();
    }
    /* The handler learns the new value only once it is stored: it may tell the client. An
     * inline handler is waiting on this very thread, so its write is committed now. */
    if (j->inline_mode) {
        if (worker_commit(a->w) == 0)
            job_reply(j, m->wait_seq, answer, NULL);
        else {
            json_decref(answer);
            job_reply(j, m->wait_seq, NULL, REFUSE_MESSAGE);
        }
    } else {
        worker_defer_reply(a->w, j, m->wait_seq, answer);
    }
}

/* ---- the session's share of the tool pool ---- */

void actor_submit_job(actor_t *a, job_t *j)
{
    if (a->jobs_running < g_cfg.session_jobs || workers_stopping()) {
        /* at shutdown every job starts cancelled and ends at once: none may wait for a place
         * the pool will not give after it stops */
        j->counted = true;
        a->jobs_running++;
        pool_submit(j);
        return;
    }
    j->queue_next = NULL;
    if (a->jobs_queued_tail)
        a->jobs_queued_tail->queue_next = j;
    else
        a->jobs_queued = j;
    a->jobs_queued_tail = j;
    log_debug("session %.8s: %d handlers running (--session-jobs); a call waits its turn", a->sid,
              a->jobs_running);
}

static job_t *dequeue_job(actor_t *a)
{
    job_t *j = a->jobs_queued;
    if (j) {
        a->jobs_queued = j->queue_next;
        if (!a->jobs_queued)
            a->jobs_queued_tail = NULL;
        j->queue_next = NULL;
    }
    return j;
}

/* A counted job finished: its place goes to the oldest waiting job. */
static void job_place_freed(actor_t *a, job_t *done)
{
    if (!done->counted)
        return;
    done->counted = false;
    a->jobs_running--;
    job_t *next;
    while (a->jobs_running < g_cfg.session_jobs && (next = dequeue_job(a))) {
        next->counted = true;
        a->jobs_running++;
        pool_submit(next);
    }
}

/* Jobs that never got a place go to the pool regardless (the caller cancelled them, so they
 * end at once and come back as WM_TOOL_DONE like every other job). */
static void release_queued_jobs(actor_t *a)
{
    job_t *j;
    while ((j = dequeue_job(a)))
        pool_submit(j);
}

static void handle_tool_msg(worker_t *w, wmsg_t *m)
{
    job_t *j = m->job;
    actor_t *a = j->actor;
    switch (m->type) {
    case WM_TOOL_DONE:
        if (a) {
            for (job_t **pp = &a->detached; *pp; pp = &(*pp)->detached_next) {
                if (*pp == j) {
                    *pp = j->detached_next;
                    break;
                }
            }
            drop_pending_of(a, j);
            job_place_freed(a, j);
            worker_ops(w)->on_job_done(a, j);
        }
        job_free(j);
        break;
    case WM_TOOL_OUT:
        if (a)
            handle_tool_out(a, j, m);
        job_out_done(j);
        break;
    case WM_TOOL_REQ:
        if (a)
            handle_tool_req(a, j, m);
        else
            job_reply(j, m->wait_seq, NULL, "the session has ended");
        break;
    case WM_TOOL_ABANDON:
        if (a)
            drop_pending_of(a, j);
        break;
    case WM_TOOL_CLOSE:
        if (a)
            handle_tool_close(a, j);
        break;
    case WM_TOOL_STATE:
        if (a)
            handle_tool_state(a, j, m);
        else
            job_reply(j, m->wait_seq, NULL, "the session has ended");
        break;
    default:
        break;
    }
    (void)w;
}

/* ---- dispatch ---- */

/* How stale the stored touch time may get before a request rewrites it (session TTL). */
#define TOUCH_PERSIST_MS (3600 * 1000)

void actor_dispatch(worker_t *w, wmsg_t *m)
{
    switch (m->type) {
    case WM_TOOL_DONE:
    case WM_TOOL_OUT:
    case WM_TOOL_REQ:
    case WM_TOOL_ABANDON:
    case WM_TOOL_STATE:
    case WM_TOOL_CLOSE: {
        actor_t *a = m->job->actor;
        handle_tool_msg(w, m);
        wmsg_free(m);
        if (a)
            worker_note_activity(w, a);
        return;
    }
    case WM_POST:
        if (m->create) {
            worker_ops(w)->on_initialize(w, m);
            actor_t *a = worker_find_actor(w, m->sid);
            if (a)
                worker_note_activity(w, a);
            wmsg_free(m);
            return;
        }
        break;
    default:
        break;
    }
    actor_t *a = worker_find_actor(w, m->sid);
    if (!a && m->type == WM_CONN_CLOSED) {
        wmsg_free(m);
        return;
    }
    if (!a)
        a = actor_load(w, m->sid);
    bool from_client = m->type == WM_POST || m->type == WM_GET || m->type == WM_DELETE;
    if (a && from_client && strcmp(a->auth_name, m->auth_name) != 0) {
        /* a session belongs to the token that created it: to anyone else it does not exist */
        log_debug("session %.8s: request from another token refused as unknown", a->sid);
        worker_note_activity(w, a);
        a = NULL;
    }
    if (!a) {
        worker_take_recover_mark(w, m->sid); /* never stored, or deleted: nothing to recover */
        if (m->type != WM_ALARM && m->type != WM_RECOVER)
            actor_reply_error(w, m->conn, m->type == WM_POST ? jsonrpc_request_id(m->body) : NULL,
                              404, MCP_ERR_SESSION_NOT_FOUND, "Session not found");
        wmsg_free(m);
        return;
    }
    recover_after_reset(a);
    bool alive = true;
    switch (m->type) {
    case WM_POST:
        a->touched_ms = now_wall_ms();
        worker_ops(w)->on_post(a, m);
        break;
    case WM_GET:
        a->touched_ms = now_wall_ms();
        handle_get(a, m);
        break;
    case WM_DELETE: {
        conn_ref_t conn = m->conn;
        actor_delete(a);
        actor_reply(w, conn, 200, NULL, NULL);
        alive = false;
        break;
    }
    case WM_CONN_CLOSED:
        handle_conn_closed(a, m);
        break;
    case WM_ALARM:
        alive = actor_on_alarm(a, m->alarm_due);
        break;
    case WM_RECOVER:
        actor_recover(a, m->payload,
                      "The server restarted while this request was in flight; its result is "
                      "lost. Send the request again.");
        break;
    default:
        break;
    }
    if (alive) {
        if (a->touched_ms - a->touched_stored_ms > TOUCH_PERSIST_MS)
            actor_persist_meta(a);
        worker_note_activity(w, a);
    }
    wmsg_free(m);
}
