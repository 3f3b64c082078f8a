/* Threads: any thread (a pure function). */
/* Routing a request. Pure functions, any thread (an HTTP thread calls them per request).
 *
 * Every id the server mints (session, task, input record, state handle) is 32 lowercase hex:
 * its first SHARD_HEX characters are its shard, which decides the node in a cluster, and its
 * first SESSION_ROUTE_LEN characters decide the worker inside the node. A request is routed by
 * the first id it names, in this order:
 *
 *   1. Mcp-Session-Id: the session era. GET and DELETE always take it, and so does a POST that
 *      does not take the 2026-07-28 path; without it only initialize is served (a new id,
 *      minted in a shard this node owns), and GET/DELETE answer 405 when 2026-07-28 is on.
 *   2. A POST without Mcp-Session-Id that claims 2026-07-28 (stateless_claims) and is not an
 *      initialize carrying params.protocolVersion is stateless (a batch too, which is refused
 *      there). It names, for the node:
 *      a. Mcp-Param-Handle, a state handle: its shard must be served here; it never picks
 *         the worker (a handle is read from the store by whichever worker serves the call);
 *      b. for tasks/ methods, params.taskId: the task's shard and worker (Mcp-Name mirrors it);
 *      c. otherwise params.requestState, "<b64url payload>.<b64url mac>": the record its
 *         payload's "r" names (read, not verified: verifying is the actor's job), so a retry
 *         meets its record's actor on one worker;
 *      d. nothing: any worker (a fresh id), any node.
 *
 * The order is HAProxy's too (tools/mcpd-cluster writes it as configuration: session, handle,
 * task by Mcp-Name, record). The node that receives a request checks the same ids against the
 * shards it owns and answers 503 + Retry-After when one is not its own; this file only names
 * them, since ownership is global state (core/shard.h). Costs: no allocation but the
 * requestState's decode (one, as before this file existed), and nothing for the session path
 * beyond the id's checks. */
#include "wire/route.h"

#include "wire/checks.h"
#include "wire/stateless.h"
#include "wire/reqstate.h"

#include <string.h>

static void refuse(route_t *r, route_err_t err)
{
    r->kind = ROUTE_REFUSED;
    r->err = err;
}

/* The session path: Mcp-Session-Id must be there and be an id. */
static void by_session(const char *sid, route_t *r)
{
    if (!sid)
        refuse(r, ROUTE_ERR_NO_SESSION);
    else if (!header_is_visible_ascii(sid, 256))
        refuse(r, ROUTE_ERR_BAD_SESSION);
    else if (!session_id_valid(sid))
        refuse(r, ROUTE_ERR_UNKNOWN_SESSION);
    else {
        r->kind = ROUTE_SESSION;
        memcpy(r->key, sid, SESSION_ID_LEN + 1);
    }
}

/* An initialize that carries the modern claim and no params.protocolVersion is a modern client
 * probing a removed method (its 404 is the stateless path's); with protocolVersion it opens a
 * session. A batch that claims the revision takes the path too: it is refused there (-32600,
 * the revision has no batches), not as a session-era request without its session. */
bool route_takes_stateless(const route_in_t *in)
{
    return in->stateless_on && !in->session_id && in->body &&
           stateless_claims(in->body, in->version) &&
           (!in->is_init || !json_object_get(in->view->params, "protocolVersion"));
}

void route_request(const route_in_t *in, route_t *r)
{
    r->kind = ROUTE_REFUSED;
    r->err = ROUTE_OK;
    r->key[0] = '\0';
    r->handle = NULL;
    if (in->verb != ROUTE_POST) {
        if (!in->session_id && in->stateless_on)
            refuse(r, ROUTE_ERR_SESSIONLESS);
        else
            by_session(in->session_id, r);
        return;
    }
    if (route_takes_stateless(in))
        r->kind = ROUTE_STATELESS;
    else if (!in->is_init)
        by_session(in->session_id, r);
    else if (in->session_id)
        refuse(r, ROUTE_ERR_INIT_IN_SESSION);
    else
        r->kind = ROUTE_NEW_SESSION;
}

void route_stateless(const jr_view_t *v, const char *handle, route_t *r)
{
    r->handle = handle && session_id_valid(handle) ? handle : NULL;
    const char *method = jsonrpc_cstr(v->method);
    if (method && strncmp(method, "tasks/", 6) == 0) {
        const char *task = json_string_value(json_object_get(v->params, "taskId"));
        if (task) {
            if (session_id_valid(task)) {
                r->kind = ROUTE_TASK;
                memcpy(r->key, task, SESSION_ID_LEN + 1);
            }
            return; /* a taskId that is not an id: no requestState counts either */
        }
    }
    const char *rs = json_string_value(json_object_get(v->params, "requestState"));
    if (rs && reqstate_peek_record(rs, r->key) == 0)
        r->kind = ROUTE_RECORD;
    else
        r->key[0] = '\0';
}

const char *route_node_id(const route_t *r)
{
    switch (r->kind) {
    case ROUTE_SESSION:
        return r->key;
    case ROUTE_STATELESS:
    case ROUTE_TASK:
    case ROUTE_RECORD:
        return r->handle ? r->handle : r->key[0] ? r->key : NULL;
    default:
        return NULL;
    }
}

const char *route_key_name(route_kind_t kind)
{
    switch (kind) {
    case ROUTE_SESSION:
        return "session";
    case ROUTE_TASK:
        return "task";
    case ROUTE_RECORD:
        return "input request";
    default:
        return "request";
    }
}
