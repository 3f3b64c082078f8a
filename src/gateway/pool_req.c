/* Threads: worker threads (the pool's). */
/* A 2026-07-28 request on /mcp/NAME (pool.c serves it) and its input requests (MRTR).
 *
 * MRTR. An upstream written for the session era asks its client (elicitation, sampling, roots)
 * in the middle of a call and waits for the answer. The revision has no stream for such a
 * request: the call answers input_required with it and a requestState, and the client retries
 * the call with the answer. Here the upstream's call is not run again: its process stays with
 * the exchange (it waits for the answer, as it would in a session), the requestState names the
 * exchange (a random id, HMAC-protected with the same key as /mcp's, bound to the principal,
 * the method and a digest of the params, with an expiry), and the retry's answers go to the
 * waiting upstream request with its own id; the call then goes on (its answer, or the next
 * input request). So a tool runs once, as its author wrote it. The cost: an exchange lives in
 * one process's memory on one node, and holds that process until the retry, at most
 * --upstream-call-timeout; a retry whose exchange is gone (timed out, mcpactord restarted, the
 * process exited, another node) runs the request again from the start, which asks again. */
#include "gateway/gateway.h"
#include "gateway/pool_internal.h"

#include "actor/worker.h"
#include "core/log.h"
#include "core/methodtable.h"
#include "core/stats.h"
#include "core/util.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"
#include "wire/reqstate.h"
#include "wire/stateless.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Input requests of one exchange that wait for the client, at most. */
#define POOL_MAX_PENDING 16

_Thread_local actor_t *t_pool_intake;

pjob_t *mrtr_find(pool_t *pl, const char *xid)
{
    for (pproc_t *p = pl->procs; p; p = p->next)
        if (p->job && p->job->xid[0] && strcmp(p->job->xid, xid) == 0)
            return p->job;
    return NULL;
}

static bool may_ask(const char *method)
{
    return strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0 ||
           strcmp(method, "resources/read") == 0;
}

bool mrtr_answer_input_required(pjob_t *job)
{
    if (!job->xid[0])
        session_id_fast(job->xid);
    json_t *asks = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(job->pending, key, v)
        json_object_set_new(asks, key,
                            json_pack("{s:O, s:O}", "method", json_object_get(v, "method"),
                                      "params", json_object_get(v, "params")));
    json_t *payload = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:s}", "k", "gw", "x", job->xid,
                                "u", job->pool->name, "e",
                                (json_int_t)(now_wall_ms() + g_cfg.request_state_ttl_s * 1000), "m",
                                job->method, "d", job->digest, "p", job->principal);
    char *token = reqstate_mint(reqstate_process_key(), payload);
    json_decref(payload);
    if (!token) { /* no input_required without its token: the exchange ends, the client told */
        json_decref(asks);
        pool_job_abort(job, "cannot make the requestState of this input request (out of "
                            "memory); the call ends here");
        return false;
    }
    json_t *result = json_pack("{s:s, s:o, s:s}", "resultType", "input_required", "inputRequests",
                               asks, "requestState", token);
    free(token);
    STAT_INC(input_required_total);
    job->touched_us = now_mono_us();
    pool_answer(job, json_pack("{s:s, s:o}", "jsonrpc", "2.0", "result",
                               pool_decorate(job->pool, job, result)));
    return true;
}

void mrtr_upstream_request(pproc_t *p, json_t *msg)
{
    pjob_t *job = p->job;
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *cap = stateless_input_capability(method);
    char why[300];
    int code = JSONRPC_INTERNAL_ERROR;
    why[0] = '\0';
    if (!cap) {
        code = JSONRPC_METHOD_NOT_FOUND;
        snprintf(why, sizeof why, "Method not found: %.100s", method);
    } else if (!job || (!job->a && !job->xid[0])) {
        snprintf(why, sizeof why,
                 "no client request is open on this process: %s cannot reach "
                 "a client",
                 method);
    } else if (!may_ask(job->method)) {
        snprintf(why, sizeof why,
                 "%s is possible only during tools/call, prompts/get or "
                 "resources/read in protocol version " MODERN_VERSION,
                 method);
    } else if (!json_object_get(job->caps, cap)) {
        code = JSONRPC_METHOD_NOT_FOUND;
        snprintf(why, sizeof why, "the client did not declare the %s capability", cap);
    } else if (json_object_size(job->pending) >= POOL_MAX_PENDING) {
        snprintf(why, sizeof why, "%d input requests already wait for the client",
                 POOL_MAX_PENDING);
    }
    if (why[0]) {
        log_info("%s: refused %s: %s", p->tag, method, why);
        pool_write(p, jsonrpc_error(json_object_get(msg, "id"), code, why, NULL));
        return;
    }
    char key[32];
    snprintf(key, sizeof key, "input-%u", job->next_key++);
    if (!job->pending)
        job->pending = json_object();
    json_t *params = json_object_get(msg, "params");
    json_object_set_new(job->pending, key,
                        json_pack("{s:O, s:s, s:o}", "id", json_object_get(msg, "id"), "method",
                                  method, "params",
                                  json_is_object(params) ? json_incref(params) : json_object()));
    job->touched_us = now_mono_us();
    pool_t *pl = job->pool; /* the job is freed when its answer cannot be made */
    if (job->a)
        mrtr_answer_input_required(job);
    pool_timer_arm(pl);
}

/* A retry refused: -32602 with why. */
static bool refuse(pjob_t *fresh, const char *why)
{
    STAT_INC(request_state_refused_total);
    pool_answer_error(fresh, JSONRPC_INVALID_PARAMS, why);
    pool_job_free(fresh);
    return true;
}

bool mrtr_retry(pool_t *pl, pjob_t *fresh, const json_t *params)
{
    const char *rs = json_string_value(json_object_get(params, "requestState"));
    json_t *pay = NULL;
    int rc = reqstate_open(reqstate_process_key(), rs, now_wall_ms(), &pay);
    if (rc == -ETIME)
        return refuse(fresh, "Invalid params: the requestState has expired; call again without "
                             "it");
    if (rc != 0)
        return refuse(fresh, "Invalid params: the requestState does not verify");
    const char *x = json_string_value(json_object_get(pay, "x"));
    bool ok = x && jsonrpc_str_is(json_object_get(pay, "k"), "gw") &&
              jsonrpc_str_is(json_object_get(pay, "u"), pl->name) &&
              jsonrpc_str_is(json_object_get(pay, "m"), fresh->method) &&
              jsonrpc_str_is(json_object_get(pay, "d"), fresh->digest) &&
              jsonrpc_str_is(json_object_get(pay, "p"), fresh->principal);
    char xid[SESSION_ID_LEN + 1];
    str_copy(xid, sizeof xid, x ? x : "");
    json_decref(pay);
    if (!ok)
        return refuse(fresh, "Invalid params: the requestState belongs to another request");
    pjob_t *job = mrtr_find(pl, xid);
    if (!job) {
        log_info("upstream %s pool: a retry's exchange is gone (timed out, its process ended, or "
                 "a restart): the request runs again",
                 pl->name);
        return false;
    }
    if (job->a)
        return refuse(fresh, "Invalid params: another retry of this requestState is running");
    json_t *answers = json_object_get(params, "inputResponses");
    const char *key;
    json_t *v;
    json_object_foreach(job->pending, key, v) {
        json_t *ans = json_object_get(answers, key);
        const char *bad =
            ans ? stateless_answer_problem(json_string_value(json_object_get(v, "method")), ans)
                : NULL;
        if (bad) {
            char why[300];
            snprintf(why, sizeof why, "Invalid params: inputResponses.%.60s %s", key, bad);
            return refuse(fresh, why);
        }
    }
    /* the retry takes the exchange's place: its actor, its progress token, its level */
    job->retried = true;
    job->a = fresh->a;
    job->a->ps = (struct proto_state *)(void *)job;
    fresh->a = NULL;
    json_t *t = job->caps;
    job->caps = fresh->caps;
    fresh->caps = t;
    t = job->client_progress;
    job->client_progress = fresh->client_progress;
    fresh->client_progress = t;
    job->log_min = fresh->log_min;
    job->touched_us = now_mono_us();
    pool_job_free(fresh);
    void *tmp;
    json_object_foreach_safe(job->pending, tmp, key, v) {
        const char *cap = stateless_input_capability(
            json_string_value(json_object_get(v, "method")));
        if (cap && json_object_get(job->caps, cap))
            continue; /* this round's client declares it: it may be asked */
        char why[120];
        snprintf(why, sizeof why, "the client did not declare the %s capability", cap);
        pool_write(job->p,
                   jsonrpc_error(json_object_get(v, "id"), JSONRPC_METHOD_NOT_FOUND, why, NULL));
        json_object_del(job->pending, key);
    }
    if (job->final) {
        json_t *r = job->final;
        job->final = NULL;
        pool_answer(job, r);
        pool_job_done(job);
        return true;
    }
    json_object_foreach_safe(job->pending, tmp, key, v) {
        json_t *ans = json_object_get(answers, key);
        if (!ans)
            continue;
        pool_write(job->p, json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id",
                                     json_object_get(v, "id"), "result", ans));
        json_object_del(job->pending, key);
    }
    if (json_object_size(job->pending)) /* what is still missing is asked again */
        mrtr_answer_input_required(job);
    pool_timer_arm(pl);
    return true;
}

/* ---- what mcpactord adds to the upstream's answers ---- */

json_t *pool_decorate(pool_t *pl, const pjob_t *job, json_t *result)
{
    if (json_is_object(result))
        stateless_decorate(result, json_object_get(pl->info, "serverInfo"),
                           jsonrpc_method_slot(json_object_get(job->req, "method")),
                           g_cfg.cache_ttl_ms, g_cfg.cache_private, job->retried);
    return result;
}

/* The discovery answer: the upstream's capabilities without what needs a session or a
 * subscription here, in the revision's shape. */
json_t *pool_discover_result(pool_t *pl)
{
    json_t *caps = json_deep_copy(json_object_get(pl->info, "capabilities"));
    if (!json_is_object(caps)) {
        json_decref(caps);
        caps = json_object();
    }
    const char *lists[] = {"tools", "prompts", "resources"};
    for (size_t i = 0; i < 3; i++) {
        json_t *c = json_object_get(caps, lists[i]);
        json_object_del(c, "listChanged"); /* subscriptions/listen is not served here */
        json_object_del(c, "subscribe");
    }
    json_object_del(caps, "tasks"); /* the session era's tasks */
    json_t *r = json_object();
    json_object_set_new(r, "supportedVersions", stateless_supported_versions());
    json_object_set_new(r, "capabilities", caps);
    json_t *ins = json_object_get(pl->info, "instructions");
    if (json_is_string(ins))
        json_object_set(r, "instructions", ins);
    return r;
}

/* ---- the request ---- */

/* The params the upstream gets: without the revision's _meta members and the MRTR ones. */
static json_t *strip(const json_t *params)
{
    json_t *p = json_is_object(params) ? json_deep_copy(params) : json_object();
    json_object_del(p, "requestState");
    json_object_del(p, "inputResponses");
    json_t *meta = json_object_get(p, "_meta");
    const char *k;
    void *tmp;
    json_t *v;
    json_object_foreach_safe(meta, tmp, k, v)
        if (strncmp(k, "io.modelcontextprotocol/", 24) == 0)
            json_object_del(meta, k);
    if (json_is_object(meta) && json_object_size(meta) == 0)
        json_object_del(p, "_meta");
    return p;
}

int pool_level_index(const json_t *l)
{
    static const char *const LV[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};
    for (int i = 0; json_is_string(l) && i < 8; i++)
        if (strcmp(json_string_value(l), LV[i]) == 0)
            return i;
    return 99; /* without a level, no log message goes to the client */
}

/* Is the queue full for job: POOL_MAX_WAITING wait, or its client's share of them (then
 * share_refusals_total)? msg says which. A request past its share is refused, not queued: the
 * queue is the resource here, as a session's place is (its client retries). */
static bool queue_full(pool_t *pl, const pjob_t *job, char *msg, size_t n)
{
    if (pl->nwaiting >= POOL_MAX_WAITING) {
        snprintf(msg, n,
                 "Server busy: %d requests wait for the upstream %s's %d processes "
                 "(--upstream-pool); retry later",
                 pl->nwaiting, pl->name, pl->nprocs);
        return true;
    }
    int mine = 0, share = (int)principal_share_of(POOL_MAX_WAITING);
    for (const pjob_t *j = pl->wait_head; j; j = j->next)
        mine += j->owner == job->owner;
    if (mine < share)
        return false;
    STAT_INC(share_refusals_total);
    snprintf(msg, n,
             "Server busy: this client has %d requests waiting for the upstream %s, its share "
             "(--principal-share) of the %d a pool queues; retry later",
             mine, pl->name, POOL_MAX_WAITING);
    return true;
}

void gw_pool_modern(worker_t *w, wmsg_t *m)
{
    jr_view_t v = m->u.post.v;
    pool_t *pl = pool_get(w, m->upstream - 1);
    actor_t *a = actor_create_kind(w, m->sid, ACTOR_REQUEST);
    STAT_INC(modern_requests_total);
    a->proto = proto_modern();
    a->upstream = m->upstream;
    str_copy(a->auth_name, sizeof a->auth_name, m->u.client.auth_name);
    a->owner = m->u.client.principal; /* taken: its client, for the shares */
    m->u.client.principal = NULL;
    stream_t *s = stream_begin(a, m->u.client.conn, 1, 0);
    stream_add_call(a, s, v.id, jsonrpc_method_slot(v.method), m->u.client.recv_us);
    t_pool_intake = a;
    pjob_t *job = xcalloc(1, sizeof *job);
    job->pool = pl;
    job->a = a;
    job->owner = principal_ref(a->owner);
    a->ps = (struct proto_state *)(void *)job;
    str_copy(job->principal, sizeof job->principal, a->auth_name);
    str_copy(job->method, sizeof job->method, jsonrpc_cstr(v.method));
    json_t *meta = json_object_get(v.params, "_meta");
    job->caps = stateless_declared_caps(json_object_get(meta, META_CLIENT_CAPS));
    job->log_min = pool_level_index(json_object_get(meta, META_LOG_LEVEL));
    job->client_progress = json_incref(json_object_get(meta, "progressToken"));
    job->progress = json_incref(job->client_progress);
    job->retried = json_object_get(v.params, "inputResponses") ||
                   json_object_get(v.params, "requestState");
    json_t *params = strip(v.params);
    json_t *bare = json_deep_copy(params);
    json_object_del(bare, "_meta");
    reqstate_digest(bare, job->digest);
    json_decref(bare);
    job->req = json_pack("{s:s, s:o}", "method", job->method, "params", params);
    job->touched_us = now_mono_us();
    char msg[300];
    if (pl->closing) {
        if (!s->sse)
            stream_set_reply_status(s, 503, "1");
        pool_answer_error(job, MCP_ERR_OVERLOADED, "mcpactord is shutting down; retry");
        pool_job_free(job);
    } else if (strncmp(job->method, "tasks/", 6) == 0 ||
               strcmp(job->method, "subscriptions/listen") == 0) {
        snprintf(msg, sizeof msg, "Method not found: %s is not served on a gateway path (/mcp/%s)",
                 job->method, pl->name);
        pool_answer_error(job, JSONRPC_METHOD_NOT_FOUND, msg);
        pool_job_free(job);
    } else if (json_is_string(json_object_get(v.params, "requestState")) &&
               mrtr_retry(pl, job, v.params)) {
        /* attached to its exchange, or refused */
    } else if (queue_full(pl, job, msg, sizeof msg)) {
        STAT_INC(limit_refusals_total);
        if (!s->sse)
            stream_set_reply_status(s, 503, "1");
        pool_answer_error(job, MCP_ERR_OVERLOADED, msg);
        pool_job_free(job);
    } else {
        job->discover = strcmp(job->method, "server/discover") == 0;
        pool_enqueue(pl, job);
    }
    t_pool_intake = NULL;
    stream_settle(a, s, true);
}

void gw_pool_call_dropped(actor_t *a, const call_t *c)
{
    (void)c;
    pjob_t *job = (pjob_t *)(void *)a->ps;
    if (!job)
        return;
    a->ps = NULL;
    job->a = NULL;
    pool_job_abort(job, "the client closed its response stream");
}

void gw_pool_actor_gone(actor_t *a)
{
    pjob_t *job = (pjob_t *)(void *)a->ps;
    a->ps = NULL;
    if (job)
        job->a = NULL;
}

void gw_pool_end(actor_t *a)
{
    pjob_t *job = (pjob_t *)(void *)a->ps;
    if (!job)
        return;
    job->pool->closing = true;
    actor_t *prev = t_pool_intake; /* the worker walks its actors: a stays until the end */
    t_pool_intake = a;
    pool_job_abort(job, "mcpactord is shutting down: the request was cancelled at the upstream");
    t_pool_intake = prev;
}
