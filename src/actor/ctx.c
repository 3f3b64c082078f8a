/* Threads: the handler's: a tool pool thread, or the session's worker thread for an inline job. */
/* The handler context (mcpd_ctx_* functions): runs on the handler's thread, a tool-pool thread
 * or, for inline jobs, the session's worker. Every effect on the session goes to the actor as a
 * message (worker_deliver runs it at once for inline jobs), so the actor stays the only one
 * touching session state. */
#include "actor/job.h"

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/config.h"
#include "core/jsondeep.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "core/shard.h"
#include "wire/jsonrpc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>

job_t *job_new(job_kind_t kind, struct worker *w, const char *sid, const proto_t *proto)
{
    job_t *j = xcalloc(1, sizeof *j);
    j->kind = kind;
    j->w = w;
    memcpy(j->sid, sid, SESSION_ID_LEN + 1);
    j->proto = proto;
    j->last_progress = -INFINITY;                   /* any finite first value is taken */
    atomic_init(&j->cancelled, workers_stopping()); /* shutdown: it must end soon */
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    return j;
}

void job_free(job_t *j)
{
    if (!j)
        return;
    free(j->uri);
    json_decref(j->args);
    json_decref(j->extra);
    json_decref(j->progress_token);
    json_decref(j->result);
    json_decref(j->reply);
    free(j->state_key);
    json_decref(j->state_value);
    json_decref(j->fail_data);
    free(j->fail_msg);
    free(j->input_key);
    json_decref(j->answers);
    json_decref(j->answers_taken);
    json_decref(j->input_requests);
    principal_unref(j->fair);
    principal_unref(j->owner);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

void job_cancel(job_t *j)
{
    pthread_mutex_lock(&j->mu);
    atomic_store(&j->cancelled, true);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (!j->inline_mode)
        pool_expedite(j); /* one still waiting for a thread ends now */
}

void job_cancel_moving(job_t *j)
{
    atomic_store(&j->moving, true);
    job_cancel(j);
}

static void reply_slot(job_t *j, uint32_t wait_seq, json_t *result, int code, job_err_t kind,
                       const char *err);

void job_reply(job_t *j, uint32_t wait_seq, json_t *result, const char *err)
{
    reply_slot(j, wait_seq, result, 0, JERR_OTHER, err);
}

void job_reply_code(job_t *j, uint32_t wait_seq, json_t *result, int code, const char *err)
{
    reply_slot(j, wait_seq, result, code, JERR_OTHER, err);
}

void job_reply_fail(job_t *j, uint32_t wait_seq, int code, job_err_t kind, const char *err)
{
    reply_slot(j, wait_seq, NULL, code, kind, err);
}

static void reply_slot(job_t *j, uint32_t wait_seq, json_t *result, int code, job_err_t kind,
                       const char *err)
{
    pthread_mutex_lock(&j->mu);
    if (!j->waiting || j->reply_ready || wait_seq != j->wait_seq) {
        /* the handler gave up waiting (timeout, cancel), perhaps already waits for something
         * else: nobody will read this answer */
        pthread_mutex_unlock(&j->mu);
        json_decref(result);
        return;
    }
    j->reply = result;
    j->reply_code = code;
    j->reply_kind = (unsigned char)kind;
    str_copy(j->reply_err, sizeof j->reply_err, err ? err : "");
    j->reply_ready = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void deadline_after(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Sends m to the actor and waits for the reply slot. Returns the reply (new ref) or NULL with
 * j->err set. wait_ms < 0 waits without limit. A cancel ends the wait unless until_answered:
 * state operations wait for their answer regardless, since the worker reads their parameters
 * from the job and must be done with them before the handler goes on. */
static json_t *send_and_wait_to(job_t *j, wmsg_t *m, long wait_ms, bool until_answered,
                                worker_t *to);

static json_t *send_and_wait(job_t *j, wmsg_t *m, long wait_ms, bool until_answered)
{
    return send_and_wait_to(j, m, wait_ms, until_answered, NULL);
}

/* to: the worker that answers (NULL: the call's). */
static json_t *send_and_wait_to(job_t *j, wmsg_t *m, long wait_ms, bool until_answered,
                                worker_t *to)
{
    const bool is_request = m->type == WM_TOOL_REQ; /* m belongs to the worker once delivered */
    pthread_mutex_lock(&j->mu);
    j->waiting = true;
    j->reply_ready = false;
    j->reply = NULL;
    j->reply_err[0] = '\0';
    m->u.tool.wait_seq = ++j->wait_seq;
    pthread_mutex_unlock(&j->mu);

    worker_deliver(to ? to : j->w, m, j->inline_mode);

    struct timespec deadline;
    if (wait_ms > 0)
        deadline_after(&deadline, wait_ms);
    pthread_mutex_lock(&j->mu);
    int rc = 0;
    while (!j->reply_ready && rc != ETIMEDOUT && (until_answered || !atomic_load(&j->cancelled))) {
        if (j->inline_mode)
            break; /* inline: the actor answered synchronously or never will */
        if (wait_ms > 0)
            rc = pthread_cond_timedwait(&j->cv, &j->mu, &deadline);
        else
            pthread_cond_wait(&j->cv, &j->mu);
    }
    json_t *reply = NULL;
    if (j->reply_ready) {
        reply = j->reply;
        j->reply = NULL;
        if (!reply) {
            mcpd_ctx_set_error(j, j->reply_code ? j->reply_code : MCPD_ERR_INTERNAL, "%s",
                               j->reply_err);
            j->err_kind = j->reply_kind;
        }
    } else if (atomic_load(&j->cancelled)) {
        mcpd_ctx_set_error(j, MCPD_ERR_INTERNAL, "the call was cancelled");
    } else if (j->inline_mode) {
        mcpd_ctx_set_error(j, MCPD_ERR_INTERNAL, "a non-blocking tool cannot wait for the client");
    } else {
        mcpd_ctx_set_error(j, MCPD_ERR_INTERNAL, "timed out after %ld ms waiting for the client",
                           wait_ms);
    }
    bool gave_up = !j->reply_ready;
    j->waiting = false;
    j->reply_ready = false;
    pthread_mutex_unlock(&j->mu);
    if (gave_up && is_request && !j->inline_mode) {
        wmsg_t *ab = wmsg_new(WM_TOOL_ABANDON);
        ab->u.tool.job = j;
        worker_deliver(j->w, ab, false);
    }
    return reply;
}

/* A result past MCPD_RESULT_MAX_DEPTH: the handler's error (-32603), freed before json_decref,
 * which recurses once a level, touches it; a run waiting for input gets null (replaced). */
static json_t *depth_checked(job_t *j, json_t *r)
{
    if (!json_drop_if_deeper(r, MCPD_RESULT_MAX_DEPTH))
        return r;
    if (mcpd_ctx_input_pending(j))
        return json_null();
    mcpd_ctx_set_error(j, MCPD_ERR_INTERNAL,
                       "the handler returned a result nested deeper than %d levels",
                       MCPD_RESULT_MAX_DEPTH);
    static _Atomic long long warned_us;
    if (log_due(&warned_us, 60 * 1000000LL)) /* a plugin's bug: said once a minute, not a call */
        log_warn("%s (said at most once a minute)", j->err);
    return NULL;
}

void job_run(job_t *j)
{
    json_t *r = depth_checked(j, j->run(j));
    if (!r && j->err_code == 0)
        mcpd_ctx_set_error(j, MCPD_ERR_INTERNAL, "the handler failed without saying why");
    j->result = r;
}

/* ---- public API ---- */

const char *mcpd_ctx_session_id(const mcpd_ctx_t *ctx)
{
    return ctx->sid;
}

const char *mcpd_ctx_protocol_version(const mcpd_ctx_t *ctx)
{
    return ctx->proto->version;
}

bool mcpd_ctx_cancelled(const mcpd_ctx_t *ctx)
{
    return atomic_load(&((mcpd_ctx_t *)ctx)->cancelled);
}

bool mcpd_ctx_sleep_ms(mcpd_ctx_t *ctx, long ms)
{
    if (ms <= 0)
        return !mcpd_ctx_cancelled(ctx);
    struct timespec deadline;
    deadline_after(&deadline, ms);
    pthread_mutex_lock(&ctx->mu);
    int rc = 0;
    while (!atomic_load(&ctx->cancelled) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&ctx->cv, &ctx->mu, &deadline);
    pthread_mutex_unlock(&ctx->mu);
    return !atomic_load(&ctx->cancelled);
}

bool mcpd_ctx_has_progress(const mcpd_ctx_t *ctx)
{
    return ctx->progress_token != NULL;
}

void job_out_done(job_t *j)
{
    if (j->inline_mode)
        return;
    /* the one decrement that crosses the low mark wakes the sender; it takes the mutex, so it
     * cannot slip in between the sender's check and its wait */
    if (atomic_fetch_sub(&j->out_inflight, 1) - 1 == JOB_OUT_MAX / 2) {
        pthread_mutex_lock(&j->mu);
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
}

/* Waits while the worker has JOB_OUT_MAX of this handler's messages to handle. */
static void wait_for_room(mcpd_ctx_t *ctx)
{
    if (atomic_load(&ctx->out_inflight) < JOB_OUT_MAX)
        return;
    pthread_mutex_lock(&ctx->mu);
    while (atomic_load(&ctx->out_inflight) >= JOB_OUT_MAX && !atomic_load(&ctx->cancelled))
        pthread_cond_wait(&ctx->cv, &ctx->mu);
    pthread_mutex_unlock(&ctx->mu);
}

static int send_out(mcpd_ctx_t *ctx, mcpd_target_t target, json_t *msg)
{
    if (!ctx->inline_mode) {
        wait_for_room(ctx);
        if (atomic_load(&ctx->cancelled)) {
            /* nothing of a cancelled call reaches the client: not queued either */
            json_decref(msg);
            return -ECANCELED;
        }
        atomic_fetch_add(&ctx->out_inflight, 1);
    }
    wmsg_t *m = wmsg_new(WM_TOOL_OUT);
    m->u.tool.job = ctx;
    m->u.tool.payload = msg;
    m->u.tool.target = (int)target;
    worker_deliver(ctx->w, m, ctx->inline_mode);
    return 0;
}

/* Integral values as JSON integers ("3", not "3.0"). */
static json_t *json_number_of(double v)
{
    if (v > -9e15 && v < 9e15 && v == (double)(json_int_t)v) /* the cast only where defined */
        return json_integer((json_int_t)v);
    return json_real(v);
}

int mcpd_ctx_progress(mcpd_ctx_t *ctx, double progress, double total, const char *message)
{
    if (!ctx->progress_token)
        return 0;
    if (!isfinite(progress) || progress <= ctx->last_progress)
        return -EINVAL; /* progress must increase, and JSON has no NaN or infinity */
    ctx->last_progress = progress;
    json_t *params = json_object();
    /* a copy: the message goes to the worker, the token stays with this thread */
    json_object_set_new(params, "progressToken", json_deep_copy(ctx->progress_token));
    json_object_set_new(params, "progress", json_number_of(progress));
    if (isfinite(total) && total >= 0)
        json_object_set_new(params, "total", json_number_of(total));
    if (message) /* a handler's text: kept whatever its bytes, as every text below */
        json_object_set_new(params, "message", json_string_lossy(message));
    return send_out(ctx, MCPD_TARGET_REQUEST,
                    jsonrpc_notification("notifications/progress", params));
}

static bool level_valid(const char *level)
{
    static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};
    for (int i = 0; i < 8; i++)
        if (level && strcmp(level, levels[i]) == 0)
            return true;
    return false;
}

int mcpd_ctx_log(mcpd_ctx_t *ctx, const char *level, const char *logger, json_t *data)
{
    if (json_drop_if_deeper(data, MCPD_RESULT_MAX_DEPTH)) /* as a result: tool.h */
        return -EINVAL;
    if (!level_valid(level)) {
        json_decref(data);
        return -EINVAL;
    }
    json_t *params = json_object();
    json_object_set_new(params, "level", json_string(level));
    if (logger)
        json_object_set_new(params, "logger", json_string_lossy(logger));
    json_object_set_new(params, "data", data ? data : json_null());
    return send_out(ctx, MCPD_TARGET_REQUEST,
                    jsonrpc_notification("notifications/message", params));
}

int mcpd_ctx_logf(mcpd_ctx_t *ctx, const char *level, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    int rc = mcpd_ctx_log(ctx, level, NULL, json_string_lossy(s));
    free(s);
    return rc;
}

/* A method name as a JSON string, or NULL when it is empty or not UTF-8: a name is not a text
 * to repair (one with U+FFFD is another method), and without it the message is no message. */
static json_t *method_string(const char *method)
{
    return method && *method ? json_string(method) : NULL;
}

int mcpd_ctx_notify(mcpd_ctx_t *ctx, mcpd_target_t target, const char *method, json_t *params)
{
    if (json_drop_if_deeper(params, MCPD_RESULT_MAX_DEPTH))
        return -EINVAL;
    json_t *name = method_string(method);
    /* JSON-RPC's params are structured: an object or an array, or none */
    if (!name || (params && !json_is_object(params) && !json_is_array(params))) {
        json_decref(name);
        json_decref(params);
        return -EINVAL;
    }
    json_decref(name);
    return send_out(ctx, target, jsonrpc_notification(method, params));
}

json_t *mcpd_ctx_request(mcpd_ctx_t *ctx, mcpd_target_t target, const char *method, json_t *params,
                         int timeout_ms)
{
    if (json_drop_if_deeper(params, MCPD_RESULT_MAX_DEPTH)) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "a request's params nest deeper than %d levels",
                           MCPD_RESULT_MAX_DEPTH);
        return NULL;
    }
    json_t *name = method_string(method);
    if (!name) { /* the protocol layer reads the method as a C string: it is always there */
        json_decref(params);
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL,
                           "a request's method must be a non-empty UTF-8 string");
        return NULL;
    }
    if (params && !json_is_object(params) && !json_is_array(params)) {
        json_decref(name);
        json_decref(params);
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "a request's params are an object or an array");
        return NULL;
    }
    wmsg_t *m = wmsg_new(WM_TOOL_REQ);
    m->u.tool.job = ctx;
    m->u.tool.target = (int)target;
    m->u.tool.payload = json_object();
    json_object_set_new(m->u.tool.payload, "method", name);
    if (ctx->input_key) {
        json_object_set_new(m->u.tool.payload, "key", json_string(ctx->input_key));
        free(ctx->input_key);
        ctx->input_key = NULL;
    }
    if (params)
        json_object_set_new(m->u.tool.payload, "params", params);
    long wait = timeout_ms > 0 ? timeout_ms : (long)g_cfg.request_timeout_ms;
    return send_and_wait(ctx, m, wait, false);
}

int mcpd_ctx_resource_updated(mcpd_ctx_t *ctx, const char *uri)
{
    (void)ctx;
    /* a URI that is not UTF-8 has no JSON string: the notification would go out without it */
    json_t *juri = uri && *uri ? json_string(uri) : NULL;
    if (!juri)
        return -EINVAL;
    json_t *params = json_object();
    json_object_set_new(params, "uri", juri);
    workers_broadcast(jsonrpc_notification("notifications/resources/updated", params),
                      BC_RESOURCE_UPDATED);
    return 0;
}

int mcpd_ctx_list_changed(mcpd_ctx_t *ctx, const char *what)
{
    (void)ctx;
    int bc;
    const char *method;
    if (what && strcmp(what, "tools") == 0) {
        bc = BC_TOOLS_CHANGED;
        method = "notifications/tools/list_changed";
    } else if (what && strcmp(what, "prompts") == 0) {
        bc = BC_PROMPTS_CHANGED;
        method = "notifications/prompts/list_changed";
    } else if (what && strcmp(what, "resources") == 0) {
        bc = BC_RESOURCES_CHANGED;
        method = "notifications/resources/list_changed";
    } else {
        return -EINVAL;
    }
    workers_broadcast(jsonrpc_notification(method, NULL), bc);
    return 0;
}

int mcpd_ctx_input_key(mcpd_ctx_t *ctx, const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > 64)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return -EINVAL;
    }
    free(ctx->input_key);
    ctx->input_key = xstrdup(key);
    return 0;
}

bool mcpd_ctx_input_pending(const mcpd_ctx_t *ctx)
{
    return atomic_load(&((mcpd_ctx_t *)ctx)->input_pending);
}

int mcpd_ctx_close_stream(mcpd_ctx_t *ctx)
{
    const char *why = NULL;
    if (!g_cfg.event_store)
        why = "the event store is off (--no-event-store): the client could not resume";
    else if (!ctx->proto->priming)
        why = "the session's protocol version has no priming events: the client could not resume";
    else if (g_cfg.response_mode == RESPONSE_JSON)
        why = "--response-mode json: the call has no stream";
    else if (ctx->inline_mode)
        why = "a non-blocking tool cannot close its stream";
    if (why) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "%s", why);
        return -ENOTSUP;
    }
    wmsg_t *m = wmsg_new(WM_TOOL_CLOSE);
    m->u.tool.job = ctx;
    worker_deliver(ctx->w, m, false);
    return 0;
}

json_t *mcpd_ctx_elicit(mcpd_ctx_t *ctx, const char *message, json_t *requested_schema,
                        int timeout_ms)
{
    json_t *params = json_object();
    json_object_set_new(params, "message", json_string_lossy(message ? message : ""));
    json_object_set_new(params, "requestedSchema",
                        requested_schema ? requested_schema
                                         : json_pack("{s:s,s:{}}", "type", "object", "properties"));
    return mcpd_ctx_request(ctx, MCPD_TARGET_REQUEST, "elicitation/create", params, timeout_ms);
}

json_t *mcpd_ctx_sample(mcpd_ctx_t *ctx, json_t *params, int timeout_ms)
{
    return mcpd_ctx_request(ctx, MCPD_TARGET_REQUEST, "sampling/createMessage", params, timeout_ms);
}

static json_t *state_op_on(mcpd_ctx_t *ctx, const char *handle, state_op_t op, const char *key,
                           json_t *value, mcpd_state_update_fn fn, void *arg);

static json_t *state_op(mcpd_ctx_t *ctx, state_op_t op, const char *key, json_t *value,
                        mcpd_state_update_fn fn, void *arg)
{
    return state_op_on(ctx, NULL, op, key, value, fn, arg);
}

/* handle NULL: the session's state; else the handle's (its worker answers). */
static json_t *state_op_on(mcpd_ctx_t *ctx, const char *handle, state_op_t op, const char *key,
                           json_t *value, mcpd_state_update_fn fn, void *arg)
{
    if (json_drop_if_deeper(value, MCPD_STATE_MAX_DEPTH)) { /* what the store reads back */
        mcpd_ctx_set_error(ctx, MCPD_ERR_INVALID_PARAMS,
                           "the state value cannot be stored: it nests deeper than %d levels",
                           MCPD_STATE_MAX_DEPTH);
        return NULL;
    }
    if (handle && ctx->inline_mode) {
        json_decref(value);
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "a non-blocking tool cannot use handles");
        return NULL;
    }
    if (handle && !session_id_valid(handle)) {
        json_decref(value);
        mcpd_ctx_set_error(ctx, MCPD_ERR_INVALID_PARAMS,
                           "not a handle (32 lowercase hex characters)");
        ctx->err_kind = JERR_INPUT;
        return NULL;
    }
    if (op == HANDLE_NEW || op == HANDLE_DELETE)
        key = "-";
    if (!key || !*key || strlen(key) > 200) {
        json_decref(value);
        mcpd_ctx_set_error(ctx, MCPD_ERR_INVALID_PARAMS, "state keys are 1..200 bytes");
        return NULL;
    }
    free(ctx->state_key);
    ctx->state_key = xstrdup(key);
    ctx->state_op = op;
    json_decref(ctx->state_value);
    ctx->state_value = value;
    ctx->state_fn = fn;
    ctx->state_arg = arg;
    if (handle && !shard_owns_id(handle)) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_MOVED,
                           "this state handle belongs to a shard another node serves; retry");
        return NULL;
    }
    wmsg_t *m = wmsg_new(WM_TOOL_STATE); /* only once it is sent: it is the worker's to free */
    m->u.tool.job = ctx;
    if (!handle) {
        ctx->state_on_handle = false;
        return send_and_wait(ctx, m, -1, true);
    }
    /* the handle's worker, not the call's: the message carries the handle's id */
    ctx->state_on_handle = true;
    memcpy(m->sid, handle, SESSION_ID_LEN + 1);
    return send_and_wait_to(ctx, m, -1, true, worker_for_session(handle));
}

int mcpd_ctx_handle_new(mcpd_ctx_t *ctx, char *out)
{
    char id[SESSION_ID_LEN + 1];
    if (session_id_new(id) != 0) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "cannot make a handle id");
        return -EIO;
    }
    json_t *r = state_op_on(ctx, id, HANDLE_NEW, NULL, NULL, NULL, NULL);
    if (!r)
        return ctx->err_code == MCPD_ERR_OVERLOADED ? -EDQUOT : -EIO;
    json_decref(r);
    memcpy(out, id, SESSION_ID_LEN + 1);
    return 0;
}

json_t *mcpd_ctx_handle_state_get(mcpd_ctx_t *ctx, const char *handle, const char *key)
{
    json_t *r = state_op_on(ctx, handle, STATE_GET, key, NULL, NULL, NULL);
    if (json_is_null(r)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

int mcpd_ctx_handle_state_put(mcpd_ctx_t *ctx, const char *handle, const char *key, json_t *value)
{
    json_t *r = state_op_on(ctx, handle, STATE_PUT, key, value, NULL, NULL);
    if (!r)
        return -EIO;
    json_decref(r);
    return 0;
}

json_t *mcpd_ctx_handle_state_update(mcpd_ctx_t *ctx, const char *handle, const char *key,
                                     mcpd_state_update_fn fn, void *arg)
{
    if (!fn) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "state update needs a function");
        return NULL;
    }
    json_t *r = state_op_on(ctx, handle, STATE_UPDATE, key, NULL, fn, arg);
    if (json_is_null(r)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

int mcpd_ctx_handle_delete(mcpd_ctx_t *ctx, const char *handle)
{
    json_t *r = state_op_on(ctx, handle, HANDLE_DELETE, NULL, NULL, NULL, NULL);
    if (!r)
        return strstr(mcpd_ctx_last_error(ctx), "unknown") ? -ENOENT : -EIO;
    json_decref(r);
    return 0;
}

json_t *mcpd_ctx_state_get(mcpd_ctx_t *ctx, const char *key)
{
    json_t *r = state_op(ctx, STATE_GET, key, NULL, NULL, NULL);
    if (json_is_null(r)) {
        json_decref(r);
        return NULL; /* absent */
    }
    return r;
}

int mcpd_ctx_state_put(mcpd_ctx_t *ctx, const char *key, json_t *value)
{
    json_t *r = state_op(ctx, STATE_PUT, key, value, NULL, NULL);
    if (!r)
        return -EIO;
    json_decref(r);
    return 0;
}

json_t *mcpd_ctx_state_update(mcpd_ctx_t *ctx, const char *key, mcpd_state_update_fn fn, void *arg)
{
    if (!fn) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "state update needs a function");
        return NULL;
    }
    json_t *r = state_op(ctx, STATE_UPDATE, key, NULL, fn, arg);
    if (json_is_null(r)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

void mcpd_ctx_set_error(mcpd_ctx_t *ctx, int code, const char *fmt, ...)
{
    ctx->err_code = code ? code : MCPD_ERR_INTERNAL;
    ctx->err_kind = JERR_OTHER;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
}

const char *mcpd_ctx_last_error(const mcpd_ctx_t *ctx)
{
    return ctx->err;
}
