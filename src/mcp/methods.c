/* Threads: worker threads; the jobs' run functions on the tool pool threads (or inline on the
 * worker); mcp_init on the main thread. */
/* The methods both eras share (lists, tools/call, resources, prompts, completion), what their
 * jobs run, and the dispatch of every method: worker thread only. A session (session.c) and a
 * modern request's actor (modern.c) dispatch here, through the handler the method table
 * (core/methodtable.h) binds for the request's era; version-specific behaviour is read from
 * the actor's proto_t and, for 2026-07-28, applied to every answer in one place
 * (modern_decorate). */
#include "mcp/internal.h"

#include "actor/refuse.h"
#include "core/buf.h"
#include "core/jsondump.h"
#include "core/jsonparse.h"
#include "core/config.h"
#include "core/jsondeep.h"
#include "core/log.h"
#include "wire/jsonrpc.h"
#include "wire/stateless.h"
#include "mcp/schema.h"

#include <pthread.h>
#include <string.h>

#ifndef MCPD_VERSION
#define MCPD_VERSION "unknown"
#endif

/* The catalogue, handed over by mcp_init at start (read-only afterwards). */
static const mcpd_registry_t *REG;

const mcpd_registry_t *mcp_reg(void)
{
    return REG;
}

/* ---- what jobs run (tool threads, or the worker for inline tools) ---- */

/* A handler's result as the method's result object: one that is no object, or lacks the array
 * every such result has (CallToolResult.content...), is the handler's error, answered -32603,
 * instead of a response no client accepts. */
/* Does object r have an array member? Its first key first: a result built in the usual order
 * has it there, found without hashing the name (300 instructions a call, 0.5 %). */
static bool has_array(json_t *r, const char *member)
{
    void *it = json_object_iter(r);
    /* its length too: a key may hold a NUL (json_object_setn), "content\0x" is not "content" */
    if (it && json_object_iter_key_len(it) == strlen(member) &&
        memcmp(json_object_iter_key(it), member, strlen(member)) == 0)
        return json_is_array(json_object_iter_value(it));
    return json_is_array(json_object_get(r, member));
}

static json_t *result_checked(job_t *j, json_t *r, const char *member, const char *what,
                              const char *name)
{
    /* a run left waiting for input: whatever it returns is replaced by input_required */
    if (!r || (json_is_object(r) && has_array(r, member)) || mcpd_ctx_input_pending(j))
        return r;
    static const char *const TYPES[] = {"an object", "an array", "a string", "an integer",
                                        "a real",    "true",     "false",    "null"};
    const char *type = TYPES[json_typeof(r)];
    json_decref_deep(r); /* as deep as it came: depth_checked has not seen it yet */
    mcpd_ctx_set_error(j, MCPD_ERR_INTERNAL,
                       "the handler of %s returned %s, not a %s (an object with a \"%s\" array)",
                       name, type, what, member);
    static _Atomic long long warned_us;
    if (log_due(&warned_us, 60 * 1000000LL)) /* a plugin's bug: said once a minute, not a call */
        log_warn("%s (said at most once a minute)", j->err);
    return NULL;
}

static json_t *run_tool(job_t *j)
{
    const tool_t *t = j->target;
    return result_checked(j, t->fn(j, j->args, t->ud), "content", "CallToolResult", t->name);
}

static json_t *run_resource(job_t *j)
{
    const resource_t *r = j->target;
    return result_checked(j, r->read(j, j->uri, j->args, r->ud), "contents", "ReadResourceResult",
                          j->uri);
}

static json_t *run_prompt(job_t *j)
{
    const prompt_t *p = j->target;
    return result_checked(j, p->get(j, j->args, p->ud), "messages", "GetPromptResult", p->name);
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

void mcp_answer(actor_t *a, call_t *c, json_t *result)
{
    size_t extra_len = 0;
    const char *extra = actor_one_request(a) ? modern_decorate(a, c, result, &extra_len) : NULL;
    actor_complete_result(a, c, result, extra, extra_len);
}

void mcp_answer_error(actor_t *a, call_t *c, int code, const char *msg, json_t *data)
{
    if (actor_one_request(a) && !c->stream->sse)
        stream_set_reply_status(c->stream, stateless_http_status(code), NULL);
    else if (code == MCP_ERR_NOT_HERE && !c->stream->sse && !c->stream->batch)
        /* with Retry-After: 1: the retry reaches the new owner */
        stream_set_reply_status(c->stream, 503, NULL);
    actor_complete_call(a, c, jsonrpc_error(c->id, code, msg, data));
}

void mcp_answer_unavailable(actor_t *a, call_t *c, const char *msg)
{
    stream_t *s = c->stream;
    if (!s->sse && !s->batch)
        stream_set_reply_status(s, 503, REFUSE_RETRY_AFTER);
    actor_complete_call(a, c, jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR, msg, NULL));
}

/* Built once at start; each thread that answers takes its own copy, once (json_pack parsed its
 * format on every answer). Not one value shared by every worker: jansson's json_incref reads
 * the count before its atomic add, a race ThreadSanitizer reports once workers are many, and no
 * json_t crosses threads here (docs/ARCHITECTURE.md). */
static json_t *SERVER_INFO;
static pthread_key_t g_info_key; /* the calling thread's copy, freed when the thread ends */

static void info_free(void *info)
{
    json_decref(info);
}
/* What modern_decorate adds to most results, as JSON members' text (built with SERVER_INFO). */
static char *DECORATION;
static size_t DECORATION_LEN;

const char *mcp_decoration(size_t *len)
{
    *len = DECORATION_LEN;
    return DECORATION;
}

json_t *mcp_server_info(void)
{
    json_t *mine = pthread_getspecific(g_info_key);
    if (!mine) {
        mine = json_deep_copy(SERVER_INFO);
        REQUIRE(mine != NULL && pthread_setspecific(g_info_key, mine) == 0);
    }
    return json_incref(mine);
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
    json_t *r = bad ? NULL : registry_list(mcp_reg(), kind, cursor, (size_t)g_cfg.page_size);
    if (!r)
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, "Invalid cursor", NULL);
    else
        mcp_answer(a, c, r);
}

/* Starts a job on the pool (or inline) for call c. */
static void start_job(actor_t *a, call_t *c, job_t *j, bool run_inline)
{
    j->actor = a;
    j->call = c;
    c->job = j;
    j->client_caps = job_caps_of(a->client_caps);
    memcpy(j->principal, a->auth_name, sizeof j->principal);
    j->modern = actor_one_request(a);
    if (actor_one_request(a))
        j->answers = modern_answers(a, false);
    if (run_inline) {
        j->inline_mode = true;
        job_run(j);
        mcp_job_done(a, j);
        job_free(j);
        return;
    }
    actor_submit_job(a, j);
}

static void mcp_on_tools_call(actor_t *a, call_t *c, json_t *params)
{
    static const jkey_t KEYS[] = {JKEY("name"), JKEY("arguments"), JKEY("_meta")};
    json_t *pv[3];
    json_pick(params, KEYS, 3, pv);
    json_t *tok = json_object_get(pv[2], "progressToken");
    if (json_is_string(tok) && json_string_length(tok) > MCP_MAX_PROGRESS_TOKEN_BYTES) {
        /* it is copied into every progress notification: 1 MB of token, 100 steps, 100 MB */
        char msg[120];
        snprintf(msg, sizeof msg,
                 "params._meta.progressToken must be an integer or a string of at most %d bytes",
                 MCP_MAX_PROGRESS_TOKEN_BYTES);
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    json_t *name = pv[0];
    if (!json_is_string(name)) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, "tools/call needs params.name (a string)",
                         NULL);
        return;
    }
    const char *tname = jsonrpc_cstr(name);
    const tool_t *t = tname ? registry_find_tool(mcp_reg(), tname) : NULL;
    if (!t) {
        char quoted[201], msg[300];
        jsonrpc_quote_name(name, quoted, sizeof quoted);
        snprintf(msg, sizeof msg, "Unknown tool: %s", quoted);
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    if (actor_one_request(a) && (t->flags & MCPD_TOOL_TASK_REQUIRED) && !tasks_declared(a)) {
        /* SEP-2663: a tool that runs only as a task, called without the extension: refused
         * before anything else looks at the call */
        tasks_answer_missing_extension(a, c);
        return;
    }
    json_t *args = pv[1];
    if (args && !json_is_object(args)) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, "params.arguments must be an object", NULL);
        return;
    }
    char why[300];
    json_t *empty = NULL;
    if (!args)
        args = empty = json_object();
    /* SEP-2243: the mirrored Mcp-Param-* headers before the arguments' own checks: a header
     * that disagrees with the body is refused whatever the body holds (an intermediary may have
     * acted on the header) */
    if (actor_one_request(a) && t->param_headers &&
        modern_check_params(t->input_schema, args, mcp_modern_param_hdrs(a), why, sizeof why)) {
        json_decref(empty);
        mcp_answer_error(a, c, MCP_ERR_HEADER_MISMATCH, why, NULL);
        return;
    }
    if (!schema_validate_args(t->input_schema, args, why, sizeof why)) {
        char msg[400];
        snprintf(msg, sizeof msg, "Invalid arguments for tool %s: %s", t->name, why);
        json_decref(empty);
        if (a->proto->tool_input_errors_as_results)
            mcp_answer(a, c, mcpd_error_result("%s", msg));
        else
            mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    /* the handler owns its arguments: taken out of the request, never shared. A 2026-07-28
     * call's actor keeps them too (modern.c's bound_of: the digest of a round that asks for
     * input) and drops them on its worker while the handler may run on a tool thread: a
     * handler that may run there (not inline, or as a task) gets a copy of its own (validated:
     * the values as coerced) */
    bool pooled = !(t->flags & MCPD_TOOL_NONBLOCKING) || (t->flags & MCPD_TOOL_TASK);
    job_t *j = mcp_tool_job(a, t,
                            empty                            ? empty
                            : actor_one_request(a) && pooled ? json_deep_copy(args)
                                                             : json_incref(args));
    if (!empty)
        json_object_del(params, "arguments");
    if (json_is_string(tok) || json_is_integer(tok))
        j->progress_token = json_deep_copy(tok);
    STAT_INC(tool_calls_total);
    if (actor_one_request(a) && (t->flags & MCPD_TOOL_TASK) && tasks_maybe_create(a, c, t, j))
        return; /* answered with its CreateTaskResult; j runs for the task */
    start_job(a, c, j, (t->flags & MCPD_TOOL_NONBLOCKING) != 0);
}

job_t *mcp_tool_job(actor_t *a, const tool_t *t, json_t *args)
{
    job_t *j = job_new(JOB_TOOL, a->w, a->sid, a->proto);
    j->run = run_tool;
    j->target = t;
    j->args = args;
    return j;
}

/* The resource a URI names; NULL for none, and for a URI holding U+0000 (uri NULL). */
static const resource_t *find_resource(const char *uri, json_t **vars)
{
    *vars = NULL;
    return uri ? registry_find_resource(mcp_reg(), uri, vars) : NULL;
}

static void mcp_on_resources_read(actor_t *a, call_t *c, json_t *params)
{
    json_t *uri = json_object_get(params, "uri");
    if (!json_is_string(uri)) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, "resources/read needs params.uri (a string)",
                         NULL);
        return;
    }
    json_t *vars;
    const resource_t *r = find_resource(jsonrpc_cstr(uri), &vars);
    if (!r) {
        /* 2026-07-28 (SEP-2164): invalid params, with the URI */
        mcp_answer_error(a, c,
                         a->proto->resource_not_found_invalid_params ? JSONRPC_INVALID_PARAMS
                                                                     : MCP_ERR_RESOURCE_NOT_FOUND,
                         "Resource not found", json_pack("{s:O}", "uri", uri));
        return;
    }
    job_t *j = job_new(JOB_RESOURCE, a->w, a->sid, a->proto);
    j->run = run_resource;
    j->target = r;
    j->uri = xstrdup(json_string_value(uri));
    j->args = vars;
    start_job(a, c, j, false);
}

static void mcp_on_prompts_get(actor_t *a, call_t *c, json_t *params)
{
    json_t *name = json_object_get(params, "name");
    const prompt_t *p = jsonrpc_cstr(name) ? registry_find_prompt(mcp_reg(), jsonrpc_cstr(name))
                                           : NULL;
    if (!p) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS,
                         json_is_string(name) ? "Unknown prompt" : "prompts/get needs params.name",
                         NULL);
        return;
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args)) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, "params.arguments must be an object", NULL);
        return;
    }
    /* GetPromptRequest: arguments map names to strings; a handler reads them as strings, so a
     * 5 or a null would reach it as "" (and a null would pass for a required one) */
    const char *key;
    json_t *val;
    json_object_foreach(args, key, val) {
        if (!json_is_string(val)) {
            char msg[200]; /* (a key never holds U+0000: the parser refuses it) */
            snprintf(msg, sizeof msg, "params.arguments.%.100s must be a string", key);
            mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
            return;
        }
    }
    /* required arguments are checked here, so handlers can rely on them */
    size_t i;
    json_t *pa;
    json_array_foreach(p->arguments, i, pa) {
        const char *an = json_string_value(json_object_get(pa, "name"));
        if (an && json_is_true(json_object_get(pa, "required")) && !json_object_get(args, an)) {
            char msg[200];
            snprintf(msg, sizeof msg, "Missing required argument: %s", an);
            mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, msg, NULL);
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
        const prompt_t *p = name ? registry_find_prompt(mcp_reg(), name) : NULL;
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
        for (size_t i = 0; i < mcp_reg()->n_templates; i++) {
            if (strcmp(mcp_reg()->templates[i].uri_template, uri) == 0)
                return template_has_var(uri, arg_name)
                           ? NULL
                           : "The resource template has no variable of that name";
        }
        return "Unknown resource template";
    }
    return "ref.type must be ref/prompt or ref/resource";
}

static void mcp_on_completion_complete(actor_t *a, call_t *c, json_t *params)
{
    if (!mcp_reg()->complete) {
        mcp_answer_error(a, c, JSONRPC_METHOD_NOT_FOUND, "Method not found: completion/complete",
                         NULL);
        return;
    }
    json_t *ref = json_object_get(params, "ref");
    json_t *arg = json_object_get(params, "argument");
    if (!json_is_object(ref) || !json_is_object(arg) ||
        !json_is_string(json_object_get(arg, "name")) ||
        !json_is_string(json_object_get(arg, "value"))) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS,
                         "completion/complete needs params.ref and params.argument {name, value}",
                         NULL);
        return;
    }
    const char *arg_name = jsonrpc_cstr(json_object_get(arg, "name"));
    if (!arg_name || !jsonrpc_cstr(json_object_get(arg, "value"))) {
        /* the completion provider gets C strings: one holding U+0000 would reach it cut */
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS,
                         "params.argument name and value must not hold U+0000", NULL);
        return;
    }
    const char *bad = complete_ref_error(ref, arg_name);
    if (bad) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, bad, NULL);
        return;
    }
    job_t *j = job_new(JOB_COMPLETE, a->w, a->sid, a->proto);
    j->run = run_complete;
    j->target = mcp_reg();
    j->extra = json_deep_copy(params);
    start_job(a, c, j, false);
}

static void mcp_on_logging_setLevel(actor_t *a, call_t *c, json_t *params)
{
    int lvl = log_level_index(jsonrpc_cstr(json_object_get(params, "level")));
    if (lvl < 0) {
        mcp_answer_error(
            a, c, JSONRPC_INVALID_PARAMS,
            "params.level must be one of debug, info, notice, warning, error, critical, alert, emergency",
            NULL);
        return;
    }
    mcp_state(a)->log_level = lvl;
    actor_persist_meta(a);
    mcp_answer(a, c, json_object());
}

/* ---- the other handlers (one per row of core/methodtable.h, bound below) ---- */

static void mcp_on_initialize(actor_t *a, call_t *c, json_t *params)
{
    (void)params; /* a session's first initialize is served before (mcp_handle_initialize) */
    mcp_answer_error(a, c, JSONRPC_INVALID_REQUEST,
                     "Invalid Request: this session is already initialized", NULL);
}

static void mcp_on_ping(actor_t *a, call_t *c, json_t *params)
{
    (void)params;
    mcp_answer(a, c, json_object());
}

static void mcp_on_tools_list(actor_t *a, call_t *c, json_t *params)
{
    do_list(a, c, params, LIST_TOOLS);
}

static void mcp_on_resources_list(actor_t *a, call_t *c, json_t *params)
{
    do_list(a, c, params, LIST_RESOURCES);
}

static void mcp_on_resources_templates_list(actor_t *a, call_t *c, json_t *params)
{
    do_list(a, c, params, LIST_TEMPLATES);
}

static void mcp_on_resources_subscribe(actor_t *a, call_t *c, json_t *params)
{
    mcp_subscribe(a, c, params, true);
}

static void mcp_on_resources_unsubscribe(actor_t *a, call_t *c, json_t *params)
{
    mcp_subscribe(a, c, params, false);
}

static void mcp_on_prompts_list(actor_t *a, call_t *c, json_t *params)
{
    do_list(a, c, params, LIST_PROMPTS);
}

/* server/discover and subscriptions/listen are modern.c's (mcp_on_server_discover,
 * mcp_on_subscriptions_listen); the tasks methods are tasks.c's, which serves the three in
 * one place. */
static void mcp_on_tasks_get(actor_t *a, call_t *c, json_t *params)
{
    tasks_handle_request(a, c, params);
}

static void mcp_on_tasks_update(actor_t *a, call_t *c, json_t *params)
{
    tasks_handle_request(a, c, params);
}

static void mcp_on_tasks_cancel(actor_t *a, call_t *c, json_t *params)
{
    tasks_handle_request(a, c, params);
}

/* Every row's handler, whatever its eras (a row without one does not compile); the slots that
 * are not methods have none. */
static mcp_method_fn *const HANDLERS[SM__COUNT] = {
#define X(id, name, eras, removed_in, target, flags) [SM_##id] = mcp_on_##id,
    MCP_METHODS(X)
#undef X
};

mcp_method_fn *mcp_method_handler(stats_method_t m, bool modern)
{
    unsigned era = modern ? METHOD_ERA_MODERN : METHOD_ERA_SESSION;
    return (method_rule(m)->eras & era) ? HANDLERS[m] : NULL;
}

void mcp_dispatch_request(actor_t *a, call_t *c, const jr_view_t *v)
{
    STAT_INC(requests_total[c->method]);
    mcp_method_fn *h = mcp_method_handler(c->method, actor_one_request(a));
    if (h) {
        h(a, c, v->params);
        return;
    }
    char quoted[201], m[300];
    jsonrpc_quote_name(v->method, quoted, sizeof quoted);
    snprintf(m, sizeof m, "Method not found: %s", quoted);
    mcp_answer_error(a, c, JSONRPC_METHOD_NOT_FOUND, m, NULL);
}

/* ---- job results ---- */

/* Answers c with a handler's error: a 2026-07-28 request gets the code its revision may emit
 * (stateless_error_code: resource not found is -32602 with data.uri there, SEP-2164); a
 * session keeps the code (-32002 included). data: taken, may be NULL. */
static void answer_job_error(actor_t *a, call_t *c, const job_t *j, int code, const char *msg,
                             json_t *data)
{
    if (actor_one_request(a)) {
        if (code == MCP_ERR_RESOURCE_NOT_FOUND && !data && j->uri)
            data = json_pack("{s:s}", "uri", j->uri);
        code = stateless_error_code(code);
    }
    mcp_answer_error(a, c, code, msg, data);
}

void mcp_job_done(actor_t *a, job_t *j)
{
    if (a->kind == ACTOR_TASK) {
        tasks_job_done(a, j);
        return;
    }
    call_t *c = j->call;
    if (!c)
        return; /* cancelled: no response is sent */
    c->job = NULL;
    if (j->fail_code) {
        json_t *data = j->fail_data;
        j->fail_data = NULL;
        answer_job_error(a, c, j, j->fail_code, j->fail_msg ? j->fail_msg : "the call failed",
                         data);
        return;
    }
    if (actor_one_request(a) && json_object_size(j->input_requests)) {
        if (method_rule(c->method)->flags & METHOD_INPUT) {
            modern_input_required(a, c, j);
        } else {
            /* SEP-2322: input_required only answers tools/call, prompts/get, resources/read */
            mcp_answer_error(a, c, JSONRPC_INTERNAL_ERROR,
                             "the handler asked the client for input, which protocol version "
                             "2026-07-28 allows only on tools/call, prompts/get and resources/read",
                             NULL);
        }
        return;
    }
    if (actor_one_request(a))
        modern_call_complete(a);
    json_t *r = j->result;
    j->result = NULL;
    if (!r && j->kind == JOB_TOOL && j->err_kind == JERR_INPUT)
        r = mcpd_error_result("%s", j->err); /* the model can fix its arguments */
    if (!r && j->err_kind == JERR_STORAGE) { /* a write the store refused, a read it failed */
        mcp_answer_unavailable(a, c, j->err[0] ? j->err : REFUSE_MESSAGE);
        return;
    }
    if (!r) {
        answer_job_error(a, c, j, j->err_code ? j->err_code : JSONRPC_INTERNAL_ERROR,
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
    mcp_answer(a, c, r);
}

/* ---- start ---- */

/* The result of initialize, as the members' text of its object, for each session-era version
 * (built by mcp_init: it depends only on the version and the catalogue, which is read-only once
 * the server runs). A handshake dumped the same tree every time: about 14k instructions. */
#define MCP_MAX_INIT_RESULTS 8
static struct {
    const proto_t *proto;
    char *text;
    size_t len;
} INIT_RESULTS[MCP_MAX_INIT_RESULTS];

static const char INSTRUCTIONS[] =
    "mcpactord: durable MCP sessions. Tools are listed by tools/list.";

static void build_init_results(void)
{
    size_t i = 0;
    for (const proto_t *p = proto_latest(); p; p = proto_older(p), i++) {
        REQUIRE(i < MCP_MAX_INIT_RESULTS);
        json_t *result = json_object();
        json_object_set_new(result, "protocolVersion", json_string(p->version));
        json_object_set_new(result, "capabilities", registry_capabilities(REG));
        json_object_set_new(result, "serverInfo", json_incref(SERVER_INFO));
        json_object_set_new(result, "instructions", json_string(INSTRUCTIONS));
        buf_t b = {0};
        REQUIRE(json_dump_into(&b, result) && b.len >= 2 && b.p[0] == '{');
        json_decref(result);
        free(INIT_RESULTS[i].text);
        INIT_RESULTS[i].proto = p;
        INIT_RESULTS[i].len = b.len - 2; /* without the object's braces */
        INIT_RESULTS[i].text = xstrndup(b.p + 1, INIT_RESULTS[i].len);
        buf_free(&b);
    }
}

const char *mcp_initialize_result(const proto_t *p, size_t *len)
{
    for (size_t i = 0; i < MCP_MAX_INIT_RESULTS && INIT_RESULTS[i].proto; i++) {
        if (INIT_RESULTS[i].proto == p) {
            *len = INIT_RESULTS[i].len;
            return INIT_RESULTS[i].text;
        }
    }
    REQUIRE(!"initialize negotiated a version outside the session-era table");
    return NULL;
}

void mcp_init(const mcpd_registry_t *reg)
{
    REG = reg;
    if (!SERVER_INFO) {
        REQUIRE(pthread_key_create(&g_info_key, info_free) == 0);
        SERVER_INFO = json_pack("{s:s,s:s,s:s}", "name", "mcpactord", "title", "mcpactord",
                                "version", MCPD_VERSION);
        buf_t b = {0};
        buf_adds(&b, "\"resultType\":\"complete\",\"_meta\":{\"" META_SERVER_INFO "\":");
        json_dump_into(&b, SERVER_INFO);
        buf_add(&b, "}", 1);
        DECORATION = buf_steal(&b, &DECORATION_LEN);
    }
    build_init_results(); /* again for another catalogue (the unit tests start several) */
}
