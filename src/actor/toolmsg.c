/* Threads: worker threads. */
/* What tool handlers send their session (WM_TOOL_*): notifications, server->client requests,
 * state operations, closing the call's connection, and the end of a job; and the session's
 * share of the tool pool (--session-jobs). What a server->client request means (a capability
 * check, an input request of a 2026-07-28 call) is the protocol layer's (on_tool_request,
 * mcp/toolreq.c); here it is routed to a stream and its answer awaited (the pending table).
 * Worker thread only. */
#include "actor/actor.h"

#include "actor/refuse.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/jsondeep.h"
#include "core/log.h"
#include "core/shard.h"
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

/* A cancelled job still waiting for a place ends now, without taking one. */
void actor_unqueue_job(actor_t *a, job_t *j)
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

/* ---- tool messages ---- */

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
    if (atomic_load(&j->cancelled)) {
        /* the call was cancelled (or the server is stopping): nothing goes to the client */
        job_reply(j, m->u.tool.wait_seq, NULL, "the call was cancelled");
        return;
    }
    if (j->inline_mode) {
        job_reply(j, m->u.tool.wait_seq, NULL,
                  "a non-blocking tool cannot send requests to the client");
        return;
    }
    worker_ops(a->w)->on_tool_request(a, j, m);
}

void actor_send_tool_request(actor_t *a, job_t *j, const wmsg_t *m, const char *method)
{
    stream_t *route = NULL;
    bool json_only = g_cfg.response_mode == RESPONSE_JSON;
    if (m->u.tool.target == MCPD_TARGET_REQUEST && j->call && !json_only) {
        route = j->call->stream;
    } else {
        stream_t *g = actor_get_stream(a, false, NULL); /* unreadable: not attached either */
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
            job_reply(j, m->u.tool.wait_seq, NULL, why);
            return;
        }
    }
    pending_t *p = xcalloc(1, sizeof *p);
    p->num = a->next_req_num++;
    actor_persist_meta(a); /* the counter goes to the store with this turn's events */
    p->job = j;
    p->wait_seq = m->u.tool.wait_seq;
    str_copy(p->method, sizeof p->method, method);
    p->next = a->pending;
    a->pending = p;
    json_t *req = json_object();
    json_object_set_new(req, "jsonrpc", json_string("2.0"));
    json_object_set_new(req, "id", json_integer((json_int_t)p->num));
    json_object_update(req, m->u.tool.payload);
    actor_stream_send(a, route, req);
}

static void handle_tool_out(actor_t *a, job_t *j, wmsg_t *m)
{
    json_t *msg = m->u.tool.payload;
    m->u.tool.payload = NULL;
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method && strcmp(method, "notifications/message") == 0) {
        const char *lvl = json_string_value(
            json_object_get(json_object_get(msg, "params"), "level"));
        if (!actor_log_enabled(a, lvl)) {
            json_decref(msg);
            return;
        }
    }
    if (a->kind == ACTOR_TASK) {
        /* SEP-2663: no progress or log messages for a task (no stream carries them) */
        json_decref(msg);
    } else if (m->u.tool.target == MCPD_TARGET_SESSION) {
        if (actor_send_session(a, msg) != 0)
            worker_fail_turn(a->w, a); /* not stored: the call is not acknowledged either */
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
        actor_send_sse_end(a, s->conn, s->num);
        s->conn.gen = 0;
    }
}

/* Applies a state get/put/update of job j to owner's state (a session's or a handle's) and
 * answers the handler once the change is stored. A value the store fails to read is not an
 * absent one: nothing is written over it, and the call gets the retryable storage error. */
static void state_apply(actor_t *owner, job_t *j, uint32_t wait_seq)
{
    json_t *cur = NULL;
    if (j->state_op != STATE_PUT) {
        worker_commit(owner->w);
        char *v;
        size_t vl;
        int rc = sessionrec_get_state(worker_store(owner->w), owner->sid, j->state_key, &v, &vl);
        if (rc == -EIO) {
            job_reply_fail(j, wait_seq, MCPD_ERR_INTERNAL, JERR_STORAGE, READ_FAILED_STATE);
            return;
        }
        if (rc == 0) {
            cur = json_parse_buf(v, vl, NULL, 0, NULL);
            free(v);
        }
    }
    json_t *out = NULL;
    switch (j->state_op) {
    case STATE_GET:
        job_reply(j, wait_seq, cur ? cur : json_null(), NULL);
        return;
    case STATE_PUT:
        out = j->state_value;
        j->state_value = NULL;
        break;
    case STATE_UPDATE:
        out = j->state_fn(cur, j->state_arg);
        json_decref(cur);
        break;
    default:
        json_decref(cur);
        job_reply(j, wait_seq, NULL, "not a state operation");
        return;
    }
    size_t len = 0;
    /* a put's value was measured by its call (ctx.c); an update's fn returns one here */
    char *text = out && json_depth_within(out, MCPD_STATE_MAX_DEPTH) ? json_dump_storable(out, &len)
                                                                     : NULL;
    if (out && !text) {
        /* it could not be read back: refused, the old value stays; freed without recursion
         * (json_decref recurses once a level) */
        json_decref_deep(out);
        job_reply_code(j, wait_seq, NULL, MCPD_ERR_INVALID_PARAMS,
                       "the state value cannot be stored: it nests deeper than 2047 levels, or "
                       "holds a string that is not UTF-8 or a key with a NUL in it");
        return;
    }
    if (out) {
        owner->stored_more = true;
        sessionrec_put_state(actor_batch(owner), owner->sid, j->state_key, text, len);
        free(text);
    } else {
        sessionrec_delete_state(actor_batch(owner), owner->sid, j->state_key);
    }
    json_t *answer = out ? out : json_null();
    if (j->state_op == STATE_PUT) {
        json_decref(out);
        answer = json_true();
    }
    /* The handler learns the new value only once it is stored: it may tell the client. An
     * inline handler is waiting on this very thread, so its write is committed now. */
    if (j->inline_mode) {
        if (worker_commit(owner->w) == 0)
            job_reply(j, wait_seq, answer, NULL);
        else {
            json_decref(answer);
            job_reply_fail(j, wait_seq, MCPD_ERR_INTERNAL, JERR_STORAGE, REFUSE_MESSAGE);
        }
    } else {
        worker_defer_reply(owner->w, j, wait_seq, answer);
    }
}

static void handle_tool_state(actor_t *a, job_t *j, const wmsg_t *m)
{
    if (j->modern) {
        job_reply_fail(j, m->u.tool.wait_seq, MCPD_ERR_INTERNAL, JERR_INPUT,
                       "no session state in protocol version 2026-07-28: the request has no "
                       "session (keep state behind a handle: mcpd_ctx_handle_new)");
        return;
    }
    if (strlen(j->state_key) > 200 || !*j->state_key) {
        job_reply(j, m->u.tool.wait_seq, NULL, "bad state key");
        return;
    }
    state_apply(a, j, m->u.tool.wait_seq);
}

void actor_handle_handle_op(worker_t *w, wmsg_t *m)
{
    job_t *j = m->u.tool.job; /* its handler waits for this answer: j is not freed meanwhile */
    uint32_t seq = m->u.tool.wait_seq;
    if (!shard_owns_id(m->sid)) {
        /* its shard is moving away (or moved): from the flag on nothing of it changes here */
        job_reply_code(j, seq, NULL, MCPD_ERR_MOVED,
                       "this state handle's shard is moving to another node; retry");
        return;
    }
    int err;
    actor_t *h = actor_find_or_load(w, m->sid, &err);
    int64_t now = now_wall_ms();
    if (err < 0) {
        /* not an absence: a new handle would overwrite a record that may exist, an unknown
         * one would tell the tool its state is gone */
        job_reply_fail(j, seq, MCPD_ERR_INTERNAL, JERR_STORAGE, READ_FAILED_STATE);
        return;
    }
    if (j->state_op == HANDLE_NEW) {
        if (h) {
            worker_note_activity(w, h);
            job_reply(j, seq, NULL, "handle id collision; try again");
            return;
        }
        /* --max-handles, and the caller's share of it: a handle costs a store record for
         * --handle-ttl (a week by default), so one client minting them in a loop would fill
         * the cap for everyone */
        principal_t *owner = j->owner ? principal_ref(j->owner) : principal_get("a:");
        int rc = principal_take_counted(owner, PR_HANDLES);
        if (rc != 0) {
            char msg[300];
            if (rc == -EDQUOT)
                snprintf(msg, sizeof msg,
                         "too many state handles: this client holds %lld, its "
                         "share of --max-handles (--principal-share); delete some "
                         "(mcpd_ctx_handle_delete) or let them expire (--handle-ttl)",
                         (long long)principal_limit(PR_HANDLES));
            else
                snprintf(msg, sizeof msg,
                         "too many state handles: %lld are stored "
                         "(--max-handles); retry later",
                         (long long)principal_total(PR_HANDLES));
            principal_unref(owner);
            job_reply_code(j, seq, NULL, MCPD_ERR_OVERLOADED, msg);
            return;
        }
        h = actor_create_kind(w, m->sid, ACTOR_HANDLE);
        h->owner = owner; /* it holds one of the owner's --max-handles until it is deleted */
        h->proto = proto_modern();
        str_copy(h->auth_name, sizeof h->auth_name, j->principal);
        actor_alarm_set(h, now + g_cfg.handle_ttl_s * 1000); /* its expiry; persists the meta */
        STAT_INC(handles_created_total);
        worker_stat_add(w, DS_HANDLES_STORED, 1); /* counted once its write is stored */
        log_debug("handle %.8s created", h->sid);
        worker_defer_reply(w, j, seq, json_true());
        worker_note_activity(w, h);
        return;
    }
    if (!h || h->kind != ACTOR_HANDLE || strcmp(h->auth_name, j->principal) != 0) {
        if (h)
            worker_note_activity(w, h);
        job_reply_fail(j, seq, MCPD_ERR_INVALID_PARAMS, JERR_INPUT,
                       "unknown handle: it expired (--handle-ttl), was deleted, or belongs to "
                       "another principal");
        return;
    }
    h->touched_ms = now;
    if (h->touched_ms - h->touched_stored_ms > actor_touch_persist_ms(g_cfg.handle_ttl_s))
        actor_persist_meta(h);
    if (j->state_op == HANDLE_DELETE) {
        actor_delete(h);
        worker_defer_reply(w, j, seq, json_true());
        return;
    }
    if (strlen(j->state_key) > 200 || !*j->state_key) {
        job_reply(j, seq, NULL, "bad state key");
    } else {
        state_apply(h, j, seq);
    }
    worker_note_activity(w, h);
}

/* ---- the session's share of the tool pool ---- */

/* Whose share of the pool a's jobs run in (a new reference): the token name; without tokens
 * the client's address (a->owner: every session, request and task of one client shares one
 * share, so opening more sessions does not buy more threads). A session without an owner (one
 * stored before owners were kept) is its own principal. */
static principal_t *fair_principal(const actor_t *a)
{
    if (a->auth_name[0])
        return principal_of('t', a->auth_name);
    if (a->owner)
        return principal_ref(a->owner);
    return principal_of('s', a->sid);
}

void actor_submit_job(actor_t *a, job_t *j)
{
    if (!j->fair)
        j->fair = fair_principal(a);
    if (!j->owner)
        j->owner = principal_ref(a->owner);
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
void actor_release_queued_jobs(actor_t *a)
{
    job_t *j;
    while ((j = dequeue_job(a)))
        pool_submit(j);
}

void actor_handle_tool_msg(worker_t *w, wmsg_t *m)
{
    job_t *j = m->u.tool.job;
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
            job_reply(j, m->u.tool.wait_seq, NULL, "the session has ended");
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
            job_reply(j, m->u.tool.wait_seq, NULL, "the session has ended");
        break;
    default:
        break;
    }
    (void)w;
}
