/* Threads: worker threads (each session's actor on its worker). */
/* The session actor: its life (create, wake from the store, hibernate, delete, reset after a
 * refused turn, destroy at shutdown) and its metadata (the protocol layer adds its part and reads
 * it back through actor_ops_t: meta_put, meta_load). Worker thread only. See actor.h for the
 * model; the dispatch of the worker's messages is in dispatch.c, the streams in stream.c, GET
 * and resume in resume.c, the messages of tool handlers in toolmsg.c, alarms and the sweep in
 * sweep.c.
 */
#include "actor/actor.h"

#include "actor/refuse.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/jsondump.h"
#include "core/log.h"
#include "core/shard.h"
#include "core/slab.h"
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

static _Thread_local actor_t *t_meta_dirty; /* actors whose metadata changed this turn */

bool actor_log_enabled(const actor_t *a, const char *level)
{
    return worker_ops(a->w)->log_enabled(a, level);
}

/* ---- replies on connections the actor does not keep ---- */

void actor_reply_text(worker_t *w, conn_ref_t conn, int status, char *body, size_t len,
                      const char *sid_header, const char *retry_after)
{
    hmsg_t *h = hmsg_reply(conn, status, body, len, sid_header, retry_after);
    if (h)
        worker_send_http(w, h);
}

void actor_reply(worker_t *w, conn_ref_t conn, int status, json_t *body, const char *sid_header)
{
    size_t len = 0;
    char *text = NULL;
    if (body && conn.gen)
        text = jsonrpc_dump(body, &len);
    json_decref(body);
    actor_reply_text(w, conn, status, text, len, sid_header, NULL);
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

/* ---- session metadata ---- */

void actor_flush_meta(void)
{
    while (t_meta_dirty) {
        actor_t *a = t_meta_dirty;
        t_meta_dirty = a->meta_next;
        a->meta_dirty = false;
        actor_write_meta(a);
    }
}

void actor_persist_meta(actor_t *a)
{
    if (a->meta_dirty || actor_one_request(a))
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

/* rest: the actor leaves memory with everything stored (hibernation, shutdown), so "lb" is
 * exact and a wake may take it instead of summing the stream records. */
static void write_meta(actor_t *a, bool rest)
{
    meta_undirty(a);
    if (actor_one_request(a))
        return; /* a modern request's actor is never stored */
    /* written as text, member by member (the same bytes a jansson object of these members
     * dumped to, without building one: about 12k instructions less a handshake) */
    buf_t b = {0};
    buf_reserve(&b, 256);
    jobj_t m;
    jobj_begin(&m, &b);
    const actor_ops_t *ops = worker_ops(a->w);
    jobj_str(&m, "v", a->proto->version);
    ops->meta_put(a, &m, ACTOR_META_HEAD); /* what the client said, its log level */
    jobj_int(&m, "c", a->created_ms);
    jobj_int(&m, "t", a->touched_ms);
    jobj_bool(&m, "i", a->initialized);
    if (a->kind == ACTOR_SESSION && !a->used)
        jobj_bool(&m, "u", false); /* absent: used (and every older session) */
    jobj_str(&m, "a", a->auth_name);
    jobj_int(&m, "al", a->alarm_due);
    jobj_int(&m, "ns", (json_int_t)a->next_stream);
    jobj_int(&m, "lb", (json_int_t)a->log_bytes);
    jobj_int(&m, "rq", (json_int_t)a->next_req_num);
    if (rest) /* before "p", which ends a session's record (account.c: fast_owner) */
        jobj_bool(&m, "lx", true);
    ops->meta_put(a, &m, ACTOR_META_MIDDLE); /* a session's subscriptions */
    if (a->owner)
        jobj_str(&m, "p", principal_name(a->owner));
    if (a->share_given_back)
        jobj_bool(&m, "hs", false);
    if (a->kind == ACTOR_RECORD)
        jobj_str(&m, "k", "r");
    else if (a->kind == ACTOR_HANDLE)
        jobj_str(&m, "k", "h");
    else if (a->kind == ACTOR_TASK)
        jobj_str(&m, "k", "t");
    ops->meta_put(a, &m, ACTOR_META_TAIL); /* a record's or a task's state */
    jobj_end(&m);
    sessionrec_put_meta(actor_batch(a), a->sid, b.p, b.len);
    buf_free(&b);
    a->touched_stored_ms = a->touched_ms;
    a->meta_at_rest = rest;
}

void actor_write_meta(actor_t *a)
{
    write_meta(a, false);
}

const char *actor_kind_name(const actor_t *a)
{
    switch (a->kind) {
    case ACTOR_HANDLE:
        return "handle";
    case ACTOR_RECORD:
        return "record";
    case ACTOR_TASK:
        return "task";
    case ACTOR_REQUEST:
        return "request";
    default:
        return "session";
    }
}

actor_t *actor_create(worker_t *w, const char *sid)
{
    return actor_create_kind(w, sid, ACTOR_SESSION);
}

actor_t *actor_create_kind(worker_t *w, const char *sid, char kind)
{
    actor_t *a = slab_alloc(worker_actor_slab(w));
    a->kind = kind;
    memcpy(a->sid, sid, SESSION_ID_LEN + 1);
    a->tag = session_tag(sid);
    a->w = w;
    a->proto = proto_latest();
    a->next_stream = 1;
    a->next_req_num = 1;
    a->created_ms = a->touched_ms = now_wall_ms();
    worker_add_actor(w, a);
    return a;
}

void actor_owner_of(const json_t *m, char *out, size_t n)
{
    const char *p = json_string_value(json_object_get(m, "p"));
    const char *auth = json_string_value(json_object_get(m, "a"));
    if (p)
        snprintf(out, n, "%s", p);
    else if (auth && *auth)
        snprintf(out, n, "t:%s", auth);
    else
        snprintf(out, n, "a:");
}

/* Which share a kind of actor holds a unit of (-1: none). */
static int share_of(char kind)
{
    return kind == ACTOR_SESSION  ? PR_SESSIONS
           : kind == ACTOR_HANDLE ? PR_HANDLES
           : kind == ACTOR_TASK   ? PR_TASKS
           : kind == ACTOR_RECORD ? PR_RECORDS
                                  : -1;
}

/* a's unit of its owner's share goes back: now (never stored), or once the turn's writes that
 * free it (a delete) are stored, so a refused turn never frees a place whose record stays. */
static void give_share(actor_t *a, bool now)
{
    int r = share_of(a->kind);
    if (r < 0 || !a->owner || actor_one_request(a))
        return;
    if (a->share_given_back) {
        /* its share went back earlier (a task cancelled by an older server, stored "hs":
         * false, so never one made in this turn): the global count ends with it */
        worker_give_at_commit(a->w, a->owner, r, GIVE_GLOBAL);
        return;
    }
    a->share_given_back = true;
    if (now)
        principal_give(a->owner, (pres_t)r);
    else
        worker_give_at_commit(a->w, a->owner, r, GIVE_BOTH);
}

/* Wakes a session from the store; NULL when it does not exist (*err 0) or is unreadable (-EIO). */
static actor_t *actor_load(worker_t *w, const char *sid, int *err)
{
    worker_commit(w); /* a delete earlier in this turn must be visible */
    char *v;
    size_t vl;
    if ((*err = sessionrec_get_meta(worker_store(w), sid, &v, &vl)) != 0) {
        *err = *err < 0 ? *err : 0;
        return NULL;
    }
    /* our own writer's text: it may hold U+0000 (a client's strings), which jansson refuses */
    json_t *m = json_parse_buf(v, vl, NULL, 0, NULL);
    free(v);
    bool record = jsonrpc_str_is(json_object_get(m, "k"), "r");
    bool handle = jsonrpc_str_is(json_object_get(m, "k"), "h");
    bool task = jsonrpc_str_is(json_object_get(m, "k"), "t");
    const proto_t *p = record || handle || task
                           ? proto_modern()
                           : proto_find(json_string_value(json_object_get(m, "v")));
    if (!json_is_object(m) || !p) {
        log_error("session %.8s: unreadable metadata, treating it as unknown", sid);
        json_decref(m);
        return NULL;
    }
    /* POST stream numbers continue after the newest stored stream. "lb" is exact only in a
     * metadata written at rest: one written while the actor lived (an alarm moved, a touch)
     * is followed by turns that put or evict events without writing it, so after a crash or a
     * refused turn the stream records are summed (O(its streams)) */
    uint64_t next, bytes = 0;
    bool all_known = true, at_rest = json_is_true(json_object_get(m, "lx"));
    if ((next = at_rest ? eventlog_next_stream(worker_store(w), sid)
                        : eventlog_stream_totals(worker_store(w), sid, &bytes, &all_known)) == 0) {
        json_decref(m);
        *err = -EIO; /* a read error: a stream number taken again would overwrite a stored one */
        return NULL;
    }
    actor_t *a = actor_create_kind(w, sid,
                                   record   ? ACTOR_RECORD
                                   : handle ? ACTOR_HANDLE
                                   : task   ? ACTOR_TASK
                                            : ACTOR_SESSION);
    a->proto = p;
    /* unknown: it may have streams or state from before; a record has its metadata and alarm
     * keys only (one point delete suffices), a task two state keys more (point deletes) */
    a->stored_more = !record && !task;
    /* the protocol layer's part: what the client said, the log level, subscriptions, a
     * record's or a task's state */
    worker_ops(w)->meta_load(a, m);
    a->created_ms = json_integer_value(json_object_get(m, "c"));
    a->touched_ms = json_integer_value(json_object_get(m, "t"));
    a->initialized = json_is_true(json_object_get(m, "i"));
    a->used = !json_is_false(json_object_get(m, "u"));
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
             json_string_value(json_object_get(m, "a")) ? json_string_value(json_object_get(m, "a"))
                                                        : "");
    char owner[PRINCIPAL_NAME_MAX];
    actor_owner_of(m, owner, sizeof owner);
    a->owner = principal_get(owner);
    a->share_given_back = json_is_false(json_object_get(m, "hs"));
    a->meta_at_rest = at_rest;
    json_decref(m);
    if (!at_rest)
        a->log_bytes = all_known || bytes > a->log_bytes ? bytes : a->log_bytes;
    if (next > a->next_stream)
        a->next_stream = next;
    STAT_INC(wakes_total);
    log_debug("%s %.8s woken from the store", actor_kind_name(a), sid);
    return a;
}

int actor_meta_kind(const char *meta, size_t len)
{
    /* records and handles carry "k" in their metadata; a session's clientInfo may hold the
     * text too, so a hit is parsed to be sure (rare: only records and handles pay it) */
    if (!memmem(meta, len, "\"k\":\"", 5))
        return STORED_SESSION;
    json_t *m = json_parse_buf(meta, len, NULL, 0, NULL);
    int kind = actor_kind_of(m);
    json_decref(m);
    return kind;
}

int actor_kind_of(const json_t *m)
{
    const json_t *k = json_object_get(m, "k");
    return jsonrpc_str_is(k, "r")   ? STORED_RECORD
           : jsonrpc_str_is(k, "h") ? STORED_HANDLE
           : jsonrpc_str_is(k, "t") ? STORED_TASK
                                    : STORED_SESSION;
}

actor_t *actor_find_or_load(worker_t *w, const char *sid, int *err)
{
    actor_t *a = worker_find_actor(w, sid);
    *err = 0;
    return a ? a : actor_load(w, sid, err);
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
    if (a->ps)
        worker_ops(a->w)->state_free(a);
    principal_unref(a->owner);
    slab_free(worker_actor_slab(a->w), a);
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
    actor_release_queued_jobs(a);
}

static void end_connections(actor_t *a, const char *why)
{
    for (stream_t *s = a->streams; s; s = s->next) {
        if (!s->conn.gen)
            continue;
        if (s->sse)
            actor_send_sse_end(a, s->conn, s->num);
        else
            actor_reply_error(a->w, s->conn,
                              json_array_size(s->req_ids) == 1 ? json_array_get(s->req_ids, 0)
                                                               : NULL,
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
        actor_stream_undirty(s, false);
    meta_undirty(a);
    store_batch_t *b = actor_batch(a);
    if (a->alarm_due) {
        sessionrec_delete_alarm(b, a->alarm_due, a->sid);
        worker_stat_add(w, DS_ALARMS_PENDING, -1);
        a->alarm_due = 0;
    }
    /* a session that never stored a stream or state has its metadata as its only key: one
     * point delete, no range tombstones (they slow later reads); a task has its two state
     * keys more */
    eventlog_delete_session(b, a->sid, !a->stored_more || a->kind == ACTOR_TASK);
    if (a->kind == ACTOR_TASK) {
        sessionrec_delete_state(b, a->sid, TASK_STATE_ARGS);
        sessionrec_delete_state(b, a->sid, TASK_STATE_RESULT);
    }
    give_share(a, false);
    if (a->kind == ACTOR_SESSION) {
        worker_stat_add(w, DS_SESSIONS_DELETED, 1);
        worker_stat_add(w, DS_SESSIONS_STORED, -1);
        log_info("session %.8s deleted", a->sid);
    } else {
        worker_stat_add(w,
                        a->kind == ACTOR_RECORD ? DS_INPUT_RECORDS_STORED
                        : a->kind == ACTOR_TASK ? DS_TASKS_STORED
                                                : DS_HANDLES_STORED,
                        -1);
        log_debug("%s %.8s deleted", actor_kind_name(a), a->sid);
    }
    worker_remove_actor(w, a);
    actor_free(a);
}

/* The client side of a refused turn: every request still open on an attached stream gets the
 * storage error (an SSE event without an id: it is not stored), a response that has not
 * started gets 503. */
static void refuse_connections(actor_t *a, const char *why)
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
            json_t *err = refuse_error(id, why);
            h->body = jsonrpc_dump(err, &h->len);
            json_decref(err);
            worker_send_http(a->w, h);
        } else {
            buf_t b = {0};
            for (call_t *c = a->calls; c; c = c->next) {
                if (c->stream != s)
                    continue;
                json_t *err = refuse_error(c->id, why);
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
            actor_send_sse_end(a, s->conn, s->num);
        }
        s->conn.gen = 0;
    }
}

void actor_reset(actor_t *a, const char *why)
{
    if (share_of(a->kind) >= 0) {
        char *v = NULL;
        size_t vl;
        int rc = sessionrec_get_meta(worker_store(a->w), a->sid, &v, &vl);
        if (rc == 0)
            free(v);
        else if (rc == 1)
            give_share(a, true); /* created in the refused turn: it was never stored */
    }
    refuse_connections(a, why);
    orphan_jobs(a);
    for (stream_t *s = a->streams; s; s = s->next)
        actor_stream_undirty(s, false);
    meta_undirty(a);
    /* debug: a full disk refuses every turn, and the store logs the refusals' start and end
     * (with their count) once each */
    log_debug("session %.8s: its writes were refused; it is reloaded from the store at its next "
              "request (%s)",
              a->sid, a->calls ? "its open requests got the storage error" : "nothing was open");
    worker_remove_actor(a->w, a);
    actor_free(a);
}

/* ---- broadcasts and listen streams ---- */

static void broadcast_one(actor_t *a, void *arg)
{
    worker_ops(a->w)->on_broadcast(a, arg);
}

void actor_broadcast(worker_t *w, wmsg_t *m)
{
    worker_foreach_actor(w, broadcast_one, m);
}

static void end_listen(actor_t *a, void *arg)
{
    (void)arg;
    worker_ops(a->w)->end_listen(a);
}

void actor_end_listens(worker_t *w)
{
    worker_foreach_actor(w, end_listen, NULL);
}

void actor_cancel_jobs(actor_t *a, bool moving)
{
    void (*cancel)(job_t *) = moving ? job_cancel_moving : job_cancel;
    for (call_t *c = a->calls; c; c = c->next)
        if (c->job)
            cancel(c->job);
    for (job_t *j = a->detached; j; j = j->detached_next)
        cancel(j);                /* a task's run (a cancelled call's job is cancelled already) */
    actor_release_queued_jobs(a); /* cancelled: they end at once, before the pool stops */
}

static void cancel_jobs_each(actor_t *a, void *arg)
{
    (void)arg;
    actor_cancel_jobs(a, false);
}

void actor_cancel_all_jobs(worker_t *w)
{
    /* shutdown: handlers see the flag and return; their results still reach the store */
    worker_foreach_actor(w, cancel_jobs_each, NULL);
}

static void destroy_one(actor_t *a, void *arg)
{
    (void)arg;
    orphan_jobs(a);
    for (stream_t *s = a->streams; s; s = s->next)
        actor_stream_undirty(s, true);
    write_meta(a, true); /* shutdown: the latest touch and counters, like a hibernation */
    worker_remove_actor(a->w, a);
    actor_free(a);
}

void actor_destroy_all(worker_t *w)
{
    worker_foreach_actor(w, destroy_one, NULL);
}

void actor_discard(actor_t *a)
{
    REQUIRE(actor_one_request(a) && actor_is_idle(a));
    worker_remove_actor(a->w, a);
    actor_free(a);
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
    write_meta(a, true);
    while (a->streams)
        actor_free_stream(a, a->streams, true);
    STAT_INC(hibernations_total);
    log_debug("%s %.8s hibernated", actor_kind_name(a), a->sid);
    worker_remove_actor(w, a);
    actor_free(a);
}

void actor_mark_used(actor_t *a)
{
    a->used = true;
    actor_persist_meta(a);
    /* its alarm was its unused expiry: its own expiry now (a stored stream's, if it has one,
     * comes back at that alarm's sweep, so then it is left as it is) */
    if (a->alarm_due == actor_unused_expiry(a) && !a->stored_more)
        actor_alarm_set(a, a->touched_ms + g_cfg.session_ttl_s * 1000);
}
