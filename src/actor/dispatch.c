/* Threads: worker threads (actor_dispatch runs every message of a worker's turn). */
/* The dispatch of a worker's messages to its actors: one case per message type. A client's
 * message (POST, GET, DELETE) is checked against the shards this node serves, then runs on its
 * session, woken from the store if it hibernated; a tool's message goes to the call that waits
 * for it; an alarm or a startup recovery runs on an actor of a shard this node still owns.
 * Worker thread only (worker.c calls actor_dispatch for every message of a turn).
 */
#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/refuse.h"

#include "core/config.h"
#include "core/log.h"
#include "core/shard.h"
#include "wire/jsonrpc.h"

#include <stdio.h>
#include <string.h>

/* A POST that uses its session: one carrying a request or a response (notifications alone,
 * such as notifications/initialized, do not). */
static bool post_uses(const wmsg_t *m)
{
    for (size_t i = 0; i < m->u.post.n; i++)
        if (m->u.post.kinds[i] != JR_NOTIFICATION)
            return true;
    return false;
}

/* Its shard moved away after the HTTP thread let a client's message through: the same retry
 * answer the HTTP thread gives (the client's retry reaches the new owner). True: answered. */
static bool misdirected(worker_t *w, const wmsg_t *m)
{
    if (shard_owns_id(m->sid))
        return false;
    const json_t *rid = m->type == WM_POST ? jsonrpc_request_id(m->u.post.body) : NULL;
    if (m->u.client.conn.gen) {
        json_t *body = jsonrpc_error(rid, MCP_ERR_NOT_HERE,
                                     "Misdirected: this shard moved to another node while the "
                                     "request waited; retry",
                                     NULL);
        hmsg_t *h = hmsg_new(HM_REPLY, m->u.client.conn);
        h->status = 503;
        h->content_type = "application/json";
        h->body = jsonrpc_dump(body, &h->len);
        h->retry_after = "1";
        json_decref(body);
        worker_send_http(w, h);
    }
    STAT_INC(misdirected_total);
    return true;
}

/* The store failed to read the session's record (store_get logged and counted it): 503 with
 * Retry-After, as a refused turn gets, so the client retries rather than starts over. */
static void answer_read_failed(worker_t *w, const wmsg_t *m)
{
    if (m->u.client.conn.gen)
        worker_send_http(w,
                         refuse_read_failed(m->u.client.conn,
                                            m->type == WM_POST ? jsonrpc_request_id(m->u.post.body)
                                                               : NULL,
                                            READ_FAILED_MESSAGE));
}

/* The session a client's message is for, in memory or woken from the store, ready to run it;
 * NULL after answering 404 (none, a record's id, another path's or another token's session)
 * or 503 (its record could not be read). */
static actor_t *client_actor(worker_t *w, const wmsg_t *m)
{
    int err;
    actor_t *a = actor_find_or_load(w, m->sid, &err);
    if (err < 0) {
        answer_read_failed(w, m); /* its recover mark stays: the request may come again */
        return NULL;
    }
    if (!a)
        worker_take_recover_mark(w, m->sid); /* never stored, or deleted: nothing to recover */
    if (a && a->kind != ACTOR_SESSION) {
        /* a record's id is not a session id, whoever learned it */
        worker_note_activity(w, a);
        a = NULL;
    } else if (a && a->upstream != m->upstream) {
        /* a session of /mcp is not one of a gateway path /mcp/NAME, nor one of another NAME's
         * (a->upstream, m->upstream: src/gateway/); a gateway session whose NAME is no longer
         * configured matches no path */
        worker_note_activity(w, a);
        a = NULL;
    } else if (a && strcmp(a->auth_name, m->u.client.auth_name) != 0) {
        /* a session belongs to the token that created it: to anyone else it does not exist */
        log_debug("session %.8s: request from another token refused as unknown", a->sid);
        worker_note_activity(w, a);
        a = NULL;
    }
    if (!a) { /* one that is not this client's keeps its mark for its own next message */
        actor_reply_error(w, m->u.client.conn,
                          m->type == WM_POST ? jsonrpc_request_id(m->u.post.body) : NULL, 404,
                          MCP_ERR_SESSION_NOT_FOUND, "Session not found");
        return NULL;
    }
    actor_recover_after_reset(a);
    return a;
}

/* The actor a scheduled message (an alarm, a startup recovery) is for; NULL: nothing to run
 * (its shard moved away or is being released: the alarm key went, or goes, with the data, and
 * the new owner's scheduler runs it there; or the actor is gone). */
static actor_t *scheduled_actor(worker_t *w, const wmsg_t *m)
{
    if (!shard_owns_id(m->sid))
        return NULL;
    int err;
    actor_t *a = actor_find_or_load(w, m->sid, &err);
    if (!a && err == 0) {
        worker_take_recover_mark(w, m->sid); /* never stored, or deleted: nothing to recover */
    } else if (!a && m->type == WM_RECOVER) {
        /* unreadable: its interrupted requests are answered at its next load (the mark) */
        worker_mark_recover(w, m->sid, m->u.recover.why);
    } else if (!a) {
        alarms_retry(m->u.alarm.due); /* unreadable: its alarm goes again later */
    }
    if (!a)
        return NULL;
    actor_recover_after_reset(a);
    return a;
}

/* After a message ran on an actor that lives on. */
static void settle(worker_t *w, actor_t *a)
{
    if (a->touched_ms - a->touched_stored_ms > actor_touch_persist_ms(g_cfg.session_ttl_s))
        actor_persist_meta(a);
    worker_note_activity(w, a);
}

static void on_tool(worker_t *w, wmsg_t *m)
{
    if (m->type == WM_TOOL_STATE && m->u.tool.job->state_on_handle) {
        /* on the handle's worker: the job and its actor belong to another one */
        actor_handle_handle_op(w, m);
        return;
    }
    actor_t *a = m->u.tool.job->actor;
    actor_handle_tool_msg(w, m);
    if (a)
        worker_note_activity(w, a);
}

/* A POST body no session serves, whichever protocol runs it (mcp's, or a gateway's on
 * /mcp/NAME): a batch where the session's version has none (2025-06-18 removed them), or one
 * carrying more requests than --max-streams could ever admit at once (final, unlike the 429 for
 * the requests in flight, and refused whole, its notifications too). True: answered. */
static bool batch_refused(worker_t *w, const actor_t *a, const wmsg_t *m)
{
    if (!json_is_array(m->u.post.body))
        return false;
    char msg[240];
    if (!a->proto->batches) {
        snprintf(msg, sizeof msg,
                 "Invalid Request: JSON-RPC batches are not supported in protocol version %s",
                 a->proto->version);
        actor_reply_error(w, m->u.client.conn, NULL, 400, JSONRPC_INVALID_REQUEST, msg);
        return true;
    }
    int requests = 0;
    for (size_t i = 0; i < m->u.post.n; i++) /* an invalid item gets an answer: it counts */
        requests += m->u.post.kinds[i] == JR_REQUEST || m->u.post.kinds[i] == JR_INVALID;
    if (requests <= g_cfg.max_streams)
        return false;
    snprintf(msg, sizeof msg,
             "Invalid Request: this batch carries %d requests and a session may have at most "
             "%lld in flight (--max-streams); split it",
             requests, (long long)g_cfg.max_streams);
    STAT_INC(limit_refusals_total);
    actor_reply_error(w, m->u.client.conn, NULL, 413, JSONRPC_INVALID_REQUEST, msg);
    return true;
}

static void on_post(worker_t *w, wmsg_t *m)
{
    if (misdirected(w, m))
        return;
    if (m->u.post.create || m->u.post.modern) {
        if (m->u.post.modern)
            worker_ops(w)->on_modern(w, m);
        else
            worker_ops(w)->on_initialize(w, m);
        actor_t *a = worker_find_actor(w, m->sid);
        if (a)
            worker_note_activity(w, a);
        return;
    }
    actor_t *a = client_actor(w, m);
    if (!a)
        return;
    a->touched_ms = now_wall_ms();
    if (!a->used && post_uses(m))
        actor_mark_used(a);
    if (!batch_refused(w, a, m))
        worker_ops(w)->on_post(a, m);
    settle(w, a);
}

static void on_get(worker_t *w, wmsg_t *m)
{
    actor_t *a = misdirected(w, m) ? NULL : client_actor(w, m);
    if (!a)
        return;
    a->touched_ms = now_wall_ms();
    if (!a->used)
        actor_mark_used(a);
    actor_handle_get(a, m);
    settle(w, a);
}

static void on_delete(worker_t *w, wmsg_t *m)
{
    actor_t *a = misdirected(w, m) ? NULL : client_actor(w, m);
    if (!a)
        return;
    conn_ref_t conn = m->u.client.conn;
    actor_delete(a);
    actor_reply(w, conn, 200, NULL, NULL);
}

static void on_conn_closed(worker_t *w, wmsg_t *m)
{
    actor_t *a = worker_find_actor(w, m->sid); /* a hibernated actor has no connection */
    if (!a)
        return;
    actor_recover_after_reset(a);
    actor_handle_conn_closed(a, m);
    settle(w, a);
}

static void on_alarm(worker_t *w, wmsg_t *m)
{
    actor_t *a = scheduled_actor(w, m);
    if (a && actor_on_alarm(a, m->u.alarm.due))
        settle(w, a);
}

/* The list was read when the message was made (at start, or when a shard was adopted): only
 * what is still stored now is answered. A refused turn's mark on a session of a shard that
 * left and came back has just answered its requests (scheduled_actor); a request that came
 * since is live and not in the list. */
static void on_recover(worker_t *w, wmsg_t *m)
{
    actor_t *a = scheduled_actor(w, m);
    if (!a)
        return;
    json_t *stored = actor_inflight(a, m->u.recover.why);
    if (!stored) { /* unreadable: the mark answers them at the session's next message */
        settle(w, a);
        return;
    }
    json_t *left = json_array();
    size_t i, k;
    json_t *item, *have;
    json_array_foreach(m->u.recover.list, i, item) {
        json_array_foreach(stored, k, have) {
            if (json_equal(item, have)) {
                json_array_append(left, item);
                break;
            }
        }
    }
    json_decref(stored);
    if (json_array_size(left))
        actor_recover(a, left, m->u.recover.why);
    json_decref(left);
    settle(w, a);
}

void actor_dispatch(worker_t *w, wmsg_t *m)
{
    ASSERT_OWNER(w);
    switch (m->type) {
    case WM_TOOL_DONE:
    case WM_TOOL_OUT:
    case WM_TOOL_REQ:
    case WM_TOOL_ABANDON:
    case WM_TOOL_STATE:
    case WM_TOOL_CLOSE:
        on_tool(w, m);
        break;
    case WM_POST:
        on_post(w, m);
        break;
    case WM_GET:
        on_get(w, m);
        break;
    case WM_DELETE:
        on_delete(w, m);
        break;
    case WM_CONN_CLOSED:
        on_conn_closed(w, m);
        break;
    case WM_ALARM:
        on_alarm(w, m);
        break;
    case WM_RECOVER:
        on_recover(w, m);
        break;
    case WM_BROADCAST:
        actor_broadcast(w, m);
        break;
    }
    wmsg_free(m);
}
