/* Threads: HTTP threads. */
/* The /mcp endpoint's 2026-07-28 requests: the checks of a stateless request's metadata and
 * mirrored headers (Mcp-Method, Mcp-Name, Mcp-Param-*), the shard checks of the ids it names,
 * then the hand-over to a worker, where a one-request actor serves it. */
#include "http/endpoint_internal.h"

#include "actor/worker.h"
#include "core/config.h"
#include "core/log.h"
#include "core/shard.h"
#include "core/stats.h"
#include "wire/jsonrpc.h"
#include "wire/route.h"
#include "wire/stateless.h"

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The Mcp-Param-* headers, {lowercased name after the prefix: raw value}; the protocol layer
 * decodes and compares the ones the called tool declares (x-mcp-header). NULL when a name
 * came twice (*dup set) or there are none. */
static json_t *collect_param_headers(struct evhttp_request *req, const char **dup)
{
    json_t *o = NULL;
    *dup = NULL;
    struct evkeyval *kv;
    for (kv = evhttp_request_get_input_headers(req)->tqh_first; kv; kv = kv->next.tqe_next) {
        size_t kl = strlen(kv->key);
        if (kl <= 10 || kl > 10 + 128 || strncasecmp(kv->key, "Mcp-Param-", 10) != 0)
            continue;
        char name[129];
        for (size_t i = 10; i <= kl; i++)
            name[i - 10] = (char)(kv->key[i] >= 'A' && kv->key[i] <= 'Z' ? kv->key[i] + 32
                                                                         : kv->key[i]);
        if (!o)
            o = json_object();
        if (json_object_get(o, name)) {
            *dup = kv->key;
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, name, json_stringn(kv->value, strlen(kv->value)));
    }
    return o;
}

/* Every 2026-07-28 request of --upstream index i goes to one worker, where its pool is
 * (src/gateway/pool.c): its actor's id takes the routing prefix of an id of a shard this node
 * serves, made at its first request (and again if that shard moves away). */
static pthread_mutex_t g_anchor_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_anchor[CFG_MAX_UPSTREAMS][SESSION_ID_LEN + 1];

static void pool_request_id(int i, char sid[SESSION_ID_LEN + 1])
{
    session_id_fast(sid);
    pthread_mutex_lock(&g_anchor_mu);
    if (!g_anchor[i][0] || !shard_owns_id(g_anchor[i]))
        memcpy(g_anchor[i], sid, SESSION_ID_LEN + 1);
    memcpy(sid, g_anchor[i], SESSION_ROUTE_LEN);
    pthread_mutex_unlock(&g_anchor_mu);
}

static void submit_modern(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                          const char *who, hlink_t *link, pbody_t *b, wmsg_t *m, json_t *params)
{
    (void)h;
    str_copy(m->u.client.proto_hdr, sizeof m->u.client.proto_hdr, MODERN_VERSION);
    m->u.client.principal = http_request_principal(req, who, link);
    m->u.post.modern = true;
    m->u.post.param_hdrs = params;
    ep_submit(t, req, m, b, who, link);
}

/* A request that claims 2026-07-28: the checks of its metadata and mirrored headers, then the
 * hand-over to a worker, where a one-request actor serves it. Every refusal echoes the id. */
void ep_handle_modern(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                      const char *who, hlink_t *link, pbody_t *b, route_t *r)
{
    const json_t *id = b->id;
    if (h->twice_mirror) { /* (endpoint.c refused the other repeated headers with -32000) */
        char msg[160];
        snprintf(msg, sizeof msg, "Header mismatch: the %s header was sent more than once",
                 h->twice_mirror);
        http_reply_error(req, id, 400, MCP_ERR_HEADER_MISMATCH, msg, NULL);
        return;
    }
    if (json_is_array(b->json)) {
        http_reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST,
                         "Invalid Request: batches are not part of protocol version " MODERN_VERSION
                         " (a POST carries one request or notification)",
                         NULL);
        return;
    }
    if (b->kind == JR_RESPONSE) {
        http_reply_error(req, NULL, 400, JSONRPC_INVALID_REQUEST,
                         "Invalid Request: a 2026-07-28 POST carries one request or notification, "
                         "never a response",
                         NULL);
        return;
    }
    if (b->kind == JR_NOTIFICATION) {
        /* nothing in this revision needs the server to act on a notification (cancellation
         * is closing the response stream): accepted */
        http_send_reply(req, 202, NULL, NULL, 0, NULL, NULL);
        return;
    }
    char msg[400];
    json_t *data = NULL;
    int code = stateless_check_meta(b->v.params, msg, sizeof msg, &data);
    if (code == JSONRPC_INVALID_PARAMS) {
        http_reply_error(req, id, 400, code, msg, NULL);
        return;
    }
    /* the mirrored headers before the version: a header that disagrees with the body is the
     * error, whichever version either names */
    char hmsg[400];
    if (stateless_check_headers(&b->v, h->version, h->mcp_method, h->mcp_name, hmsg, sizeof hmsg)) {
        json_decref(data);
        http_reply_error(req, id, 400, MCP_ERR_HEADER_MISMATCH, hmsg, NULL);
        return;
    }
    if (code) {
        http_reply_error_data(req, id, 400, code, msg, data, NULL);
        return;
    }
    const char *method = jsonrpc_cstr(b->v.method);
    stateless_method_t mk = stateless_method_kind(method);
    if (mk != MM_KNOWN) {
        char quoted[201];
        jsonrpc_quote_name(b->v.method, quoted, sizeof quoted);
        snprintf(msg, sizeof msg,
                 mk == MM_REMOVED
                     ? "Method not found: %s does not exist in protocol version " MODERN_VERSION
                       " (it belongs to the session era)"
                     : "Method not found: %s",
                 quoted);
        http_reply_error(req, id, 404, JSONRPC_METHOD_NOT_FOUND, msg, NULL);
        return;
    }
    const char *dup = NULL;
    json_t *params = h->mcp_param ? collect_param_headers(req, &dup) : NULL;
    if (dup) {
        snprintf(msg, sizeof msg, "Header mismatch: the %.140s header was sent more than once",
                 dup);
        http_reply_error(req, id, 400, MCP_ERR_HEADER_MISMATCH, msg, NULL);
        return;
    }
    if (shard_owned_count() == 0) { /* drained: what it creates could not be kept here */
        json_decref(params);
        http_reply_not_here(req, id, NULL, NULL);
        return;
    }
    if (h->upstream) { /* /mcp/NAME: its pool (src/gateway/pool.c) */
        wmsg_t *m = wmsg_new(WM_POST);
        pool_request_id(h->upstream - 1, m->sid);
        m->upstream = h->upstream;
        json_decref(params);
        submit_modern(t, req, h, who, link, b, m, NULL);
        return;
    }
    /* the ids it names (a state handle in Mcp-Param-Handle, a task, an exchange's record)
     * must be served here (wire/route.c says which, in which order) */
    route_stateless(&b->v, json_string_value(json_object_get(params, "handle")), r);
    if (r->handle && !shard_owns_id(r->handle)) {
        http_reply_not_here(req, id, "state handle", r->handle); /* (the handle is params') */
        json_decref(params);
        return;
    }
    wmsg_t *m = wmsg_new(WM_POST);
    if (r->kind != ROUTE_STATELESS && !shard_owns_id(r->key)) {
        json_decref(params);
        wmsg_free(m);
        http_reply_not_here(req, id, route_key_name(r->kind), r->key);
        return;
    }
    int idrc = 0;
    if (r->kind == ROUTE_RECORD) {
        /* a retry meets its record's actor: the same worker */
        idrc = session_id_new_near(m->sid, r->key);
    } else {
        session_id_fast(m->sid); /* no syscall per request: this id is never shown to anyone */
        /* tasks/get, tasks/update, tasks/cancel go to the task's worker (SEP-2663): their
         * actor's id takes the task id's routing prefix; polling is hot, so no getrandom */
        if (r->kind == ROUTE_TASK)
            memcpy(m->sid, r->key, SESSION_ROUTE_LEN);
        else
            worker_place_on_thread(m->sid, t->idx); /* served on this thread */
    }
    if (idrc != 0) {
        json_decref(params);
        http_reply_error(req, id, 500, JSONRPC_INTERNAL_ERROR, "cannot generate a request id",
                         NULL);
        wmsg_free(m);
        return;
    }
    submit_modern(t, req, h, who, link, b, m, params);
}
