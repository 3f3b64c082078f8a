/* The MCP methods of a session: worker thread only.
 *
 * A POST body is dispatched in order: notifications and responses take effect at once;
 * requests become calls on one POST stream. The stream's outstanding count is set before the
 * first request runs and the stream is settled once after the last, so a body whose requests
 * all answer synchronously gets one JSON reply (an array for a batch). */
#include "mcp/session.h"

#include "core/config.h"
#include "core/log.h"
#include "wire/jsonrpc.h"
#include "mcp/schema.h"

#include <string.h>

#ifndef MCPD_VERSION
#define MCPD_VERSION "unknown"
#endif

/* The catalogue, handed over by mcp_init at start (read-only afterwards). */
static const mcpd_registry_t *REG;

static const mcpd_registry_t *reg(void)
{
    return REG;
}

/* ---- what jobs run (tool threads, or the worker for inline tools) ---- */

static json_t *run_tool(job_t *j)
{
    const tool_t *t = j->target;
    return t->fn(j, j->args, t->ud);
}

static json_t *run_resource(job_t *j)
{
    const resource_t *r = j->target;
    return r->read(j, j->uri, j->args, r->ud);
}

static json_t *run_prompt(job_t *j)
{
    const prompt_t *p = j->target;
    return p->get(j, j->args, p->ud);
}

static json_t *run_complete(job_t *j)
{
    const mcpd_registry_t *r = j->target;
    json_t *arg = json_object_get(j->extra, "argument");
    json_t *ctxargs = json_object_get(json_object_get(j->extra, "context"), "arguments");
    json_t *out = r->complete(j, json_object_get(j->extra, "ref"),
                              json_string_value(json_object_get(arg, "name")),
                              json_string_value(json_object_get(arg, "value")), ctxargs,
                              r->complete_ud);
    if (!out && j->err_code == 0)
        out = json_array(); /* a provider's NULL without an error: nothing to suggest */
    return out;
}

static void answer(actor_t *a, call_t *c, json_t *result)
{
    actor_complete_call(a, c, jsonrpc_result(c->id, result));
}

static void answer_error(actor_t *a, call_t *c, int code, const char *msg, json_t *data)
{
    actor_complete_call(a, c, jsonrpc_error(c->id, code, msg, data));
}

static json_t *server_info(void)
{
    return json_pack("{s:s,s:s,s:s}", "name", "mcpactord", "title", "mcpactord", "version",
                     MCPD_VERSION);
}

/* ---- initialize ---- */

/* What a session keeps of its client's initialize (capabilities and clientInfo, compact). */
#define MCP_MAX_CLIENT_META_BYTES 65536

static void mcp_job_done(actor_t *a, job_t *j);

static void mcp_handle_initialize(worker_t *w, wmsg_t *m)
{
    json_t *params = json_object_get(m->u.post.body, "params");
    json_t *id = json_object_get(m->u.post.body, "id");
    json_t *pv = json_object_get(params, "protocolVersion");
    json_t *caps = json_object_get(params, "capabilities");
    json_t *info = json_object_get(params, "clientInfo");
    const char *bad = NULL;
    if (!json_is_string(pv))
        bad = "initialize needs params.protocolVersion (a string)";
    else if (caps && !json_is_object(caps))
        bad = "params.capabilities must be an object";
    else if (info && !json_is_object(info))
        bad = "params.clientInfo must be an object";
    else if (json_dumpb(caps, NULL, 0, JSON_COMPACT) + json_dumpb(info, NULL, 0, JSON_COMPACT) >
             MCP_MAX_CLIENT_META_BYTES)
        /* both are kept in the session's metadata, which is rewritten at every change of it:
         * an unbounded clientInfo would make each of those writes that large */
        bad = "params.capabilities and params.clientInfo together take more than 65536 bytes";
    if (bad) {
        actor_reply(w, m->u.client.conn, 400, jsonrpc_error(id, JSONRPC_INVALID_PARAMS, bad, NULL), NULL);
        return;
    }
    actor_t *a = actor_create(w, m->sid);
    a->proto = proto_negotiate(jsonrpc_cstr(pv)); /* one holding U+0000 is unknown: the latest */
    a->client_caps = caps ? json_incref(caps) : json_object();
    a->client_info = info ? json_incref(info) : NULL;
    snprintf(a->auth_name, sizeof a->auth_name, "%s", m->u.client.auth_name);
    /* every session holds one alarm while it exists: at the latest, its own expiry */
    actor_alarm_set(a, a->created_ms + g_cfg.session_ttl_s * 1000); /* persists the metadata */
    STAT_INC(sessions_created_total);
    worker_stat_add(w, DS_SESSIONS_STORED, 1);
    STAT_INC(requests_total[SM_initialize]);
    log_info("session %.8s created: protocol %s, client %s", a->sid, a->proto->version,
             json_string_value(json_object_get(info, "name")) ? json_string_value(json_object_get(info, "name")) : "?");

    stream_t *s = actor_new_post_stream(a, m->u.client.conn);
    s->session_header = true;
    s->outstanding = 1;
    s->dispatching = true;
    call_t *c = actor_add_call(a, s, id, SM_initialize);
    if (m->u.client.recv_us)
        c->started_us = m->u.client.recv_us;
    if (g_cfg.response_mode == RESPONSE_SSE)
        actor_stream_start_sse(a, s);
    json_t *result = json_object();
    json_object_set_new(result, "protocolVersion", json_string(a->proto->version));
    json_object_set_new(result, "capabilities", registry_capabilities(reg()));
    json_object_set_new(result, "serverInfo", server_info());
    json_object_set_new(result, "instructions",
                        json_string("mcpactord: durable MCP sessions. Tools are listed by tools/list."));
    answer(a, c, result);
    s->dispatching = false;
    actor_stream_settle(a, s);
}

/* ---- requests ---- */

static const char *cursor_of(json_t *params, bool *bad)
{
    json_t *c = json_object_get(params, "cursor");
    *bad = c && !jsonrpc_cstr(c);
    return jsonrpc_cstr(c);
}

static void do_list(actor_t *a, call_t *c, json_t *params, list_kind_t kind)
{
    bool bad;
    const char *cursor = cursor_of(params, &bad);
    json_t *r = bad ? NULL : registry_list(reg(), kind, cursor, (size_t)g_cfg.page_size);
    if (!r)
        answer_error(a, c, JSONRPC_INVALID_PARAMS, "Invalid cursor", NULL);
    else
        answer(a, c, r);
}

/* Starts a job on the pool (or inline) for call c. */
static void start_job(actor_t *a, call_t *c, job_t *j, bool run_inline)
{
    j->actor = a;
    j->call = c;
    c->job = j;
    if (run_inline) {
        j->inline_mode = true;
        job_run(j);
        mcp_job_done(a, j);
        job_free(j);
        return;
    }
    actor_submit_job(a, j);
}

static void do_tools_call(actor_t *a, call_t *c, json_t *params)
{
    json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (json_is_string(tok) && json_string_length(tok) > MCP_MAX_PROGRESS_TOKEN_BYTES) {
        /* it is copied into every progress notification: 1 MB of token, 100 steps, 100 MB */
        char msg[120];
        snprintf(msg, sizeof msg,
                 "params._meta.progressToken must be an integer or a string of at most %d bytes",
                 MCP_MAX_PROGRESS_TOKEN_BYTES);
        answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    json_t *name = json_object_get(params, "name");
    if (!json_is_string(name)) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS, "tools/call needs params.name (a string)", NULL);
        return;
    }
    const char *tname = jsonrpc_cstr(name);
    const tool_t *t = tname ? registry_find_tool(reg(), tname) : NULL;
    if (!t) {
        char quoted[201], msg[300];
        jsonrpc_quote_name(name, quoted, sizeof quoted);
        snprintf(msg, sizeof msg, "Unknown tool: %s", quoted);
        answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args)) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS, "params.arguments must be an object", NULL);
        return;
    }
    char why[300];
    json_t *empty = NULL;
    if (!args)
        args = empty = json_object();
    if (!schema_validate_args(t->input_schema, args, why, sizeof why)) {
        char msg[400];
        snprintf(msg, sizeof msg, "Invalid arguments for tool %s: %s", t->name, why);
        json_decref(empty);
        if (a->proto->tool_input_errors_as_results)
            answer(a, c, mcpd_error_result("%s", msg));
        else
            answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    job_t *j = job_new(JOB_TOOL, a->w, a->sid, a->proto);
    j->run = run_tool;
    j->target = t;
    /* the handler owns its arguments: taken out of the request, never shared */
    j->args = empty ? empty : json_incref(args);
    if (!empty)
        json_object_del(params, "arguments");
    if (json_is_string(tok) || json_is_integer(tok))
        j->progress_token = json_deep_copy(tok);
    STAT_INC(tool_calls_total);
    start_job(a, c, j, (t->flags & MCPD_TOOL_NONBLOCKING) != 0);
}

/* The resource a URI names; NULL for none, and for a URI holding U+0000 (uri NULL). */
static const resource_t *find_resource(const char *uri, json_t **vars)
{
    *vars = NULL;
    return uri ? registry_find_resource(reg(), uri, vars) : NULL;
}

static void do_resources_read(actor_t *a, call_t *c, json_t *params)
{
    json_t *uri = json_object_get(params, "uri");
    if (!json_is_string(uri)) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS, "resources/read needs params.uri (a string)", NULL);
        return;
    }
    json_t *vars;
    const resource_t *r = find_resource(jsonrpc_cstr(uri), &vars);
    if (!r) {
        answer_error(a, c, MCP_ERR_RESOURCE_NOT_FOUND, "Resource not found",
                     json_pack("{s:O}", "uri", uri));
        return;
    }
    job_t *j = job_new(JOB_RESOURCE, a->w, a->sid, a->proto);
    j->run = run_resource;
    j->target = r;
    j->uri = xstrdup(json_string_value(uri));
    j->args = vars;
    start_job(a, c, j, false);
}

static void do_subscribe(actor_t *a, call_t *c, json_t *params, bool on)
{
    json_t *uri = json_object_get(params, "uri");
    if (!json_is_string(uri)) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS, "params.uri must be a string", NULL);
        return;
    }
    json_t *vars;
    const resource_t *r = find_resource(jsonrpc_cstr(uri), &vars);
    json_decref(vars);
    if (!r) {
        answer_error(a, c, MCP_ERR_RESOURCE_NOT_FOUND, "Resource not found",
                     json_pack("{s:O}", "uri", uri));
        return;
    }
    if (on && !r->subscribable) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS, "this resource does not support subscriptions",
                     json_pack("{s:O}", "uri", uri));
        return;
    }
    if (!a->subscriptions)
        a->subscriptions = json_object();
    if (on)
        json_object_set_new(a->subscriptions, json_string_value(uri), json_true());
    else
        json_object_del(a->subscriptions, json_string_value(uri));
    actor_persist_meta(a);
    answer(a, c, json_object());
}

static void do_prompts_get(actor_t *a, call_t *c, json_t *params)
{
    json_t *name = json_object_get(params, "name");
    const prompt_t *p = jsonrpc_cstr(name) ? registry_find_prompt(reg(), jsonrpc_cstr(name)) : NULL;
    if (!p) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS, json_is_string(name) ? "Unknown prompt" : "prompts/get needs params.name", NULL);
        return;
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args)) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS, "params.arguments must be an object", NULL);
        return;
    }
    /* required arguments are checked here, so handlers can rely on them */
    size_t i;
    json_t *pa;
    json_array_foreach(p->arguments, i, pa) {
        const char *an = json_string_value(json_object_get(pa, "name"));
        if (an && json_is_true(json_object_get(pa, "required")) && !json_object_get(args, an)) {
            char msg[200];
            snprintf(msg, sizeof msg, "Missing required argument: %s", an);
            answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
            return;
        }
    }
    job_t *j = job_new(JOB_PROMPT, a->w, a->sid, a->proto);
    j->run = run_prompt;
    j->target = p;
    j->args = args ? json_deep_copy(args) : json_object();
    start_job(a, c, j, false);
}

/* True when template t has the variable {name}. */
static bool template_has_var(const char *t, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{')) {
        if (strncmp(p + 1, name, n) == 0 && p[1 + n] == '}')
            return true;
    }
    return false;
}

/* What a completion request names must exist (spec: an invalid prompt name is -32602): a prompt
 * and one of its arguments, or a resource template (by its URI template) and one of its
 * variables. NULL when valid, else the error message. */
static const char *complete_ref_error(json_t *ref, const char *arg_name)
{
    const json_t *type = json_object_get(ref, "type");
    if (jsonrpc_str_is(type, "ref/prompt")) {
        const char *name = jsonrpc_cstr(json_object_get(ref, "name"));
        const prompt_t *p = name ? registry_find_prompt(reg(), name) : NULL;
        if (!p)
            return "Invalid prompt name";
        size_t i;
        json_t *pa;
        json_array_foreach(p->arguments, i, pa) {
            const char *an = json_string_value(json_object_get(pa, "name"));
            if (an && strcmp(an, arg_name) == 0)
                return NULL;
        }
        return "The prompt has no argument of that name";
    }
    if (jsonrpc_str_is(type, "ref/resource")) {
        const char *uri = jsonrpc_cstr(json_object_get(ref, "uri"));
        if (!uri)
            return json_is_string(json_object_get(ref, "uri")) ? "Unknown resource template"
                                                               : "ref.uri must be a string";
        for (size_t i = 0; i < reg()->n_templates; i++) {
            if (strcmp(reg()->templates[i].uri_template, uri) == 0)
                return template_has_var(uri, arg_name) ? NULL
                                                       : "The resource template has no variable of that name";
        }
        return "Unknown resource template";
    }
    return "ref.type must be ref/prompt or ref/resource";
}

static void do_complete(actor_t *a, call_t *c, json_t *params)
{
    if (!reg()->complete) {
        answer_error(a, c, JSONRPC_METHOD_NOT_FOUND, "Method not found: completion/complete", NULL);
        return;
    }
    json_t *ref = json_object_get(params, "ref");
    json_t *arg = json_object_get(params, "argument");
    if (!json_is_object(ref) || !json_is_object(arg) ||
        !json_is_string(json_object_get(arg, "name")) || !json_is_string(json_object_get(arg, "value"))) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS,
                     "completion/complete needs params.ref and params.argument {name, value}", NULL);
        return;
    }
    const char *arg_name = jsonrpc_cstr(json_object_get(arg, "name"));
    if (!arg_name || !jsonrpc_cstr(json_object_get(arg, "value"))) {
        /* the completion provider gets C strings: one holding U+0000 would reach it cut */
        answer_error(a, c, JSONRPC_INVALID_PARAMS,
                     "params.argument name and value must not hold U+0000", NULL);
        return;
    }
    const char *bad = complete_ref_error(ref, arg_name);
    if (bad) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS, bad, NULL);
        return;
    }
    job_t *j = job_new(JOB_COMPLETE, a->w, a->sid, a->proto);
    j->run = run_complete;
    j->target = reg();
    j->extra = json_deep_copy(params);
    start_job(a, c, j, false);
}

static void do_set_level(actor_t *a, call_t *c, json_t *params)
{
    int lvl = log_level_index(jsonrpc_cstr(json_object_get(params, "level")));
    if (lvl < 0) {
        answer_error(a, c, JSONRPC_INVALID_PARAMS,
                     "params.level must be one of debug, info, notice, warning, error, critical, alert, emergency",
                     NULL);
        return;
    }
    a->log_level = lvl;
    actor_persist_meta(a);
    answer(a, c, json_object());
}

static void dispatch_request(actor_t *a, call_t *c, json_t *msg)
{
    json_t *params = json_object_get(msg, "params");
    STAT_INC(requests_total[c->method]);
    switch (c->method) {
    case SM_ping:
        answer(a, c, json_object());
        return;
    case SM_tools_list:
        do_list(a, c, params, LIST_TOOLS);
        return;
    case SM_tools_call:
        do_tools_call(a, c, params);
        return;
    case SM_logging_setLevel:
        do_set_level(a, c, params);
        return;
    case SM_resources_list:
        do_list(a, c, params, LIST_RESOURCES);
        return;
    case SM_resources_templates_list:
        do_list(a, c, params, LIST_TEMPLATES);
        return;
    case SM_resources_read:
        do_resources_read(a, c, params);
        return;
    case SM_resources_subscribe:
    case SM_resources_unsubscribe:
        do_subscribe(a, c, params, c->method == SM_resources_subscribe);
        return;
    case SM_prompts_list:
        do_list(a, c, params, LIST_PROMPTS);
        return;
    case SM_prompts_get:
        do_prompts_get(a, c, params);
        return;
    case SM_completion_complete:
        do_complete(a, c, params);
        return;
    case SM_initialize:
        answer_error(a, c, JSONRPC_INVALID_REQUEST,
                     "Invalid Request: this session is already initialized", NULL);
        return;
    default: {
        char quoted[201], m[300];
        jsonrpc_quote_name(json_object_get(msg, "method"), quoted, sizeof quoted);
        snprintf(m, sizeof m, "Method not found: %s", quoted);
        answer_error(a, c, JSONRPC_METHOD_NOT_FOUND, m, NULL);
        return;
    }
    }
}

/* ---- notifications and responses from the client ---- */

static void do_cancelled(actor_t *a, json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");
    if (!rid)
        return;
    /* ids may repeat across streams; the newest matching call is the one meant */
    for (call_t *c = a->calls; c; c = c->next) {
        if (json_equal(c->id, rid)) {
            if (c->method == SM_initialize)
                return; /* initialize is never cancelled */
            log_debug("session %.8s: call cancelled by the client", a->sid);
            actor_drop_call(a, c); /* cancels its job */
            return;
        }
    }
}

static void handle_notification(actor_t *a, json_t *msg)
{
    const json_t *method = json_object_get(msg, "method");
    STAT_INC(requests_total[SM_notification]);
    if (jsonrpc_str_is(method, "notifications/initialized")) {
        /* kept in memory; the next metadata write (at the latest, hibernation) carries it:
         * nothing depends on it across a crash, and it saves a write per session */
        a->initialized = true;
    } else if (jsonrpc_str_is(method, "notifications/cancelled")) {
        do_cancelled(a, json_object_get(msg, "params"));
    }
    /* other notifications (roots/list_changed, progress) need no action */
}

static void handle_response(actor_t *a, json_t *msg)
{
    STAT_INC(requests_total[SM_response]);
    json_t *id = json_object_get(msg, "id");
    if (json_is_integer(id)) {
        for (pending_t **pp = &a->pending; *pp; pp = &(*pp)->next) {
            pending_t *p = *pp;
            if ((json_int_t)p->num != json_integer_value(id))
                continue;
            *pp = p->next;
            json_t *err = json_object_get(msg, "error");
            if (err) {
                char why[256];
                snprintf(why, sizeof why, "the client answered with error %lld: %s",
                         (long long)json_integer_value(json_object_get(err, "code")),
                         json_string_value(json_object_get(err, "message"))
                             ? json_string_value(json_object_get(err, "message")) : "");
                job_reply(p->job, p->wait_seq, NULL, why);
            } else {
                /* a copy: the body stays with this worker, the result goes to the tool thread */
                job_reply(p->job, p->wait_seq, json_deep_copy(json_object_get(msg, "result")), NULL);
            }
            free(p);
            return;
        }
    }
    STAT_INC(client_responses_unknown_total);
    log_info("session %.8s: a response to an unknown server request was ignored", a->sid);
}

static void mcp_handle_post(actor_t *a, wmsg_t *m)
{
    json_t *body = m->u.post.body;
    bool batch = json_is_array(body);
    if (batch && !a->proto->batches) {
        char msg[160];
        snprintf(msg, sizeof msg, "Invalid Request: JSON-RPC batches are not supported in protocol version %s",
                 a->proto->version);
        actor_reply_error(a->w, m->u.client.conn, NULL, 400, JSONRPC_INVALID_REQUEST, msg); /* a batch: no id */
        return;
    }
    size_t n = m->u.post.n;
    int requests = 0;
    /* the HTTP thread validated every message and classified it once: the kind travels with
     * the message */
    const signed char *kinds = m->u.post.kinds;
    for (size_t i = 0; i < n; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        jr_kind_t k = (jr_kind_t)kinds[i];
        if (k == JR_REQUEST || k == JR_INVALID) /* an invalid batch item gets an error answer */
            requests++;
        else if (k == JR_NOTIFICATION)
            handle_notification(a, msg);
        else if (k == JR_RESPONSE)
            handle_response(a, msg);
    }
    if (requests == 0) {
        actor_reply(a->w, m->u.client.conn, 202, NULL, NULL);
        return;
    }
    /* every request of a batch counts: a batch is no way around the limit */
    int in_flight = actor_requests_in_flight(a);
    if (in_flight + requests > g_cfg.max_streams) {
        char msg[240];
        snprintf(msg, sizeof msg,
                 "Too Many Requests: this session has %d requests in flight and this message "
                 "carries %d; the limit is %lld (--max-streams); retry when one finishes",
                 in_flight, requests, (long long)g_cfg.max_streams);
        STAT_INC(limit_refusals_total);
        actor_reply_retry(a->w, m->u.client.conn, jsonrpc_request_id(body), 429, msg, "1");
        return;
    }
    stream_t *s = actor_new_post_stream(a, m->u.client.conn);
    s->batch = batch;
    s->outstanding = requests;
    s->dispatching = true;
    /* the calls join the stream before it starts: its first frame names them */
    call_t *calls_small[16];
    call_t **calls = n <= 16 ? calls_small : xmalloc(n * sizeof *calls);
    for (size_t i = 0; i < n; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        calls[i] = NULL;
        if (kinds[i] == JR_INVALID) {
            json_t *null_id = json_null();
            calls[i] = actor_add_call(a, s, null_id, SM_other);
            json_decref(null_id);
        } else if (kinds[i] == JR_REQUEST) {
            /* a method name holding U+0000 is "other": unknown, never the method it starts with */
            const char *method = jsonrpc_cstr(json_object_get(msg, "method"));
            calls[i] = actor_add_call(a, s, json_object_get(msg, "id"), stats_method_of(method));
            if (m->u.client.recv_us)
                calls[i]->started_us = m->u.client.recv_us; /* latency counts from receipt, queueing included */
        }
    }
    if (g_cfg.response_mode == RESPONSE_SSE)
        actor_stream_start_sse(a, s);
    for (size_t i = 0; i < n; i++) {
        json_t *msg = batch ? json_array_get(body, i) : body;
        if (kinds[i] == JR_INVALID) {
            /* JSON-RPC 2.0: an invalid item of a batch is answered with -32600, id null, and
             * the rest of the batch is served (only a batch can get here: the HTTP thread
             * refuses an invalid single message) */
            const char *why;
            jsonrpc_classify(msg, &why);
            char text[300];
            snprintf(text, sizeof text, "Invalid Request: batch item %zu: %s", i, why);
            answer_error(a, calls[i], JSONRPC_INVALID_REQUEST, text, NULL);
        } else if (kinds[i] == JR_REQUEST) {
            dispatch_request(a, calls[i], msg);
        }
    }
    if (calls != calls_small)
        free(calls);
    s->dispatching = false;
    if (!actor_stream_settle(a, s))
        actor_stream_arm_window(a, s);
}

/* ---- job results ---- */

static void mcp_job_done(actor_t *a, job_t *j)
{
    call_t *c = j->call;
    if (!c)
        return; /* cancelled: no response is sent */
    c->job = NULL;
    json_t *r = j->result;
    j->result = NULL;
    if (!r) {
        answer_error(a, c, j->err_code ? j->err_code : JSONRPC_INTERNAL_ERROR,
                     j->err[0] ? j->err : "internal error", NULL);
        return;
    }
    if (j->kind == JOB_COMPLETE) {
        json_t *values = json_is_array(r) ? r : json_array();
        if (values != r)
            json_decref(r);
        size_t total = json_array_size(values);
        while (json_array_size(values) > 100)
            json_array_remove(values, 100);
        r = json_pack("{s:{s:o,s:I,s:b}}", "completion", "values", values, "total",
                      (json_int_t)total, "hasMore", total > 100);
    }
    answer(a, c, r);
}

/* ---- start ---- */

void mcp_init(const mcpd_registry_t *reg)
{
    REG = reg;
}

static const actor_ops_t OPS = {
    .on_initialize = mcp_handle_initialize,
    .on_post = mcp_handle_post,
    .on_job_done = mcp_job_done,
};

const actor_ops_t *mcp_actor_ops(void)
{
    return &OPS;
}
