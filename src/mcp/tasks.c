/* Threads: worker threads. */
/* The tasks extension (SEP-2663) on the 2026-07-28 path: worker thread only.
 *
 * A task is a durable actor (ACTOR_TASK, actor.h): the session machinery without streams, like
 * an input-request record. Its id is made near the id of the request that creates it
 * (session_id_new_near), so it lives on the worker that serves that tools/call: the task's
 * metadata, its arguments (state key TASK_STATE_ARGS) and its alarm (its TTL) go into the same
 * turn batch as the CreateTaskResult, and frames leave only after the commit. So once a client
 * holds a taskId, a tasks/get for it resolves (strong consistency), and the job that runs the
 * tool needs no hand-over: it is simply adopted by the task (its actor, id and answers change
 * before it starts).
 *
 * tasks/get, tasks/update and tasks/cancel name the task in params.taskId and in the Mcp-Name
 * header; the HTTP thread gives such a request an id with the task's routing prefix, so the
 * request's one-request actor meets the task on its worker and every tasks request is
 * serialised with the task and with its job's end (WM_TOOL_DONE). The capability gate (-32021)
 * comes before any lookup; an unknown, expired or another principal's task is -32602.
 *
 * What the task keeps (its state's task.status, mcp/state.h; written in its metadata as "task"):
 *   st  status: working, input_required, completed, failed, cancelled
 *   sm  statusMessage (optional)
 *   ca, ua  createdAt, lastUpdatedAt (wall ms)      ttl  ttlMs      pi  pollIntervalMs
 *   tool  the tool's name (a re-run looks it up)
 *   ir  the outstanding input requests {key: {method, params}} (input_required)
 *   ans every answer so far (the MRTR rounds before the task, then tasks/update), for re-runs
 *   err the JSON-RPC error of a failed task       x  a cancel was requested
 * The final result is the state key TASK_STATE_RESULT (bulky; read at the first tasks/get and
 * cached in its state's task.result).
 *
 * Input requests inside a task use the re-run model of 2026-07-28 calls (modern.c): the job
 * runs with the answers so far; a request without an answer is collected, and when the handler
 * returns the task goes to input_required with those requests. No job and no pool thread is
 * held meanwhile, so the task may hibernate and survives restarts. tasks/update moves the
 * answers of outstanding keys into ans (other keys are ignored) and, once nothing is
 * outstanding, runs the handler again. A task stored as working has lost its job (a crash or a
 * refused turn: a task with a job never hibernates): it is marked failed when next read. */
#include "mcp/internal.h"

#include "actor/refuse.h"
#include "core/config.h"
#include "core/jsondump.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "store/sessionrec.h"
#include "wire/jsonrpc.h"
#include "wire/stateless.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TASK_NOT_FOUND "Failed to retrieve task: Task not found"
#define TASK_LOST "The server restarted while the task was working; its result is lost"
#define TASK_STOPPED "The server stopped while the task was working; its result is lost"

static const char *status_of(const json_t *st)
{
    const char *s = json_string_value(json_object_get(st, "st"));
    return s ? s : "";
}

static bool is_terminal(const char *status)
{
    return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "cancelled") == 0;
}

/* ISO 8601 UTC with milliseconds: 2026-12-03T13:48:28.295Z. */
static json_t *iso_time(json_int_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char buf[48];
    size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, sizeof buf - n, ".%03dZ", (int)(ms % 1000));
    return json_string(buf);
}

/* The Task fields every shape shares (CreateTaskResult, DetailedTask). */
static json_t *task_fields(const char *task_id, const json_t *st)
{
    json_t *o = json_object();
    json_object_set_new(o, "taskId", json_string(task_id));
    json_object_set_new(o, "status", json_string(status_of(st)));
    json_t *sm = json_object_get(st, "sm");
    if (json_is_string(sm))
        json_object_set(o, "statusMessage", sm);
    json_object_set_new(o, "createdAt", iso_time(json_integer_value(json_object_get(st, "ca"))));
    json_object_set_new(o, "lastUpdatedAt",
                        iso_time(json_integer_value(json_object_get(st, "ua"))));
    json_t *ttl = json_object_get(st, "ttl");
    json_object_set_new(o, "ttlMs",
                        json_is_integer(ttl) ? json_integer(json_integer_value(ttl)) : json_null());
    json_int_t pi = json_integer_value(json_object_get(st, "pi"));
    if (pi > 0)
        json_object_set_new(o, "pollIntervalMs", json_integer(pi));
    return o;
}

json_t *tasks_detailed(const char *task_id, const json_t *st, const json_t *result)
{
    json_t *o = task_fields(task_id, st);
    const char *s = status_of(st);
    if (strcmp(s, "input_required") == 0) {
        json_t *ir = json_object_get(st, "ir");
        json_object_set_new(o, "inputRequests",
                            json_is_object(ir) ? json_deep_copy(ir) : json_object());
    } else if (strcmp(s, "completed") == 0 && result) {
        json_object_set_new(o, "result", json_deep_copy(result));
    } else if (strcmp(s, "failed") == 0) {
        json_t *err = json_object_get(st, "err");
        json_object_set_new(o, "error",
                            json_is_object(err)
                                ? json_deep_copy(err)
                                : json_pack("{s:i,s:s}", "code", JSONRPC_INTERNAL_ERROR, "message",
                                            "failed"));
    }
    return o;
}

bool tasks_declared(const actor_t *a)
{
    /* (a 2026-07-28 request's capabilities hold objects only: stateless_declared_caps) */
    return json_is_object(
        json_object_get(json_object_get(a->client_caps, "extensions"), TASKS_EXTENSION));
}

void tasks_answer_missing_extension(actor_t *a, call_t *c)
{
    mcp_answer_error(a, c, MCP_ERR_MISSING_CAPABILITY,
                     "Missing required client capability: the " TASKS_EXTENSION " extension "
                     "(declare it in _meta[\"io.modelcontextprotocol/clientCapabilities\"]"
                     ".extensions)",
                     json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions",
                               TASKS_EXTENSION));
}

/* ---- status changes ---- */

/* Moves the task to status (its lastUpdatedAt now); the metadata is written at turn end. */
static void set_status(actor_t *task, const char *status, const char *message)
{
    json_t *st = mcp_task_status(task);
    json_object_set_new(st, "st", json_string(status));
    json_object_set_new(st, "ua", json_integer(now_wall_ms()));
    if (message) /* it may quote a handler's text: kept whatever its bytes, as an error's */
        json_object_set_new(st, "sm", json_string_lossy(message));
    else
        json_object_del(st, "sm");
    if (strcmp(status, "input_required") != 0)
        json_object_del(st, "ir");
    actor_persist_meta(task);
}

static void task_fail(actor_t *task, int code, const char *msg, json_t *data,
                      const char *status_msg)
{
    json_t *err = json_object();
    json_object_set_new(err, "code", json_integer(code));
    /* a handler's text, as a call's error keeps it (jsonrpc_error): json_pack would refuse one
     * that is not UTF-8, and the task would fail as -32603 "failed" */
    json_object_set_new(err, "message", json_string_lossy(msg));
    if (data)
        json_object_set_new(err, "data", data);
    json_object_set_new(mcp_task_status(task), "err", err);
    set_status(task, "failed", status_msg ? status_msg : msg);
    STAT_INC(tasks_failed_total);
    log_debug("task %.8s failed: %s", task->sid, msg);
}

/* ---- runs ---- */

/* j (not started) runs for the task, with answers (borrowed, may be NULL). */
static void start_run(actor_t *task, job_t *j, const json_t *answers)
{
    j->actor = task;
    j->call = NULL;
    j->w = task->w;
    memcpy(j->sid, task->sid, SESSION_ID_LEN + 1); /* mcpd_ctx_session_id names the task */
    j->proto = task->proto;
    j->client_caps = job_caps_of(task->client_caps);
    memcpy(j->principal, task->auth_name, sizeof j->principal);
    j->modern = true; /* its requests become the task's input requests */
    json_decref(j->answers);
    j->answers = json_object_size(answers) ? json_deep_copy(answers) : NULL;
    json_decref(j->progress_token); /* no progress notifications for a task */
    j->progress_token = NULL;
    /* on the detached list: a task with a job is not idle, a TTL deletion cancels the job, and
     * WM_TOOL_DONE takes it off */
    j->detached_next = task->detached;
    task->detached = j;
    actor_submit_job(task, j);
}

/* The task's stored state value `name`, parsed into *out (new reference; NULL when absent or
 * not JSON): 0, or -EIO when the store failed to read it (not an absence: the caller changes
 * nothing and answers the retryable storage error). */
static int load_state(actor_t *task, const char *name, json_t **out)
{
    worker_commit(task->w); /* this turn's writes must be visible */
    char *v;
    size_t vl;
    *out = NULL;
    int rc = sessionrec_get_state(worker_store(task->w), task->sid, name, &v, &vl);
    if (rc != 0)
        return rc == -EIO ? rc : 0;
    *out = json_parse_buf(v, vl, NULL, 0, NULL);
    free(v);
    return 0;
}

/* false when value cannot be stored to be read back (past 2048 levels, a string with bad UTF-8
 * made by a *_nocheck call, a key with a NUL in it): nothing is stored */
static bool put_state(actor_t *task, const char *name, const json_t *value)
{
    size_t len;
    char *text = json_dump_storable(value, &len);
    if (!text)
        return false;
    sessionrec_put_state(actor_batch(task), task->sid, name, text, len);
    free(text);
    return true;
}

/* Every outstanding request is answered: the handler runs again with all the answers and the
 * stored arguments (args, stolen; NULL: not stored). */
static void run_again(actor_t *task, json_t *args)
{
    json_t *st = mcp_task_status(task);
    const char *name = json_string_value(json_object_get(st, "tool"));
    const tool_t *t = name ? registry_find_tool(mcp_reg(), name) : NULL;
    if (!t || !args) {
        json_decref(args);
        task_fail(task, JSONRPC_INTERNAL_ERROR,
                  t ? "the task's arguments are lost" : "the task's tool is no longer served", NULL,
                  NULL);
        return;
    }
    start_run(task, mcp_tool_job(task, t, args), json_object_get(st, "ans"));
}

bool tasks_maybe_create(actor_t *a, call_t *c, const tool_t *t, job_t *j)
{
    if (!tasks_declared(a))
        return false; /* a tool that may run as a task runs synchronously */
    if (t->flags & MCPD_TOOL_TASK_AFTER_INPUT) {
        if (!modern_round_answered(a))
            return false; /* input first: the MRTR rounds stay synchronous */
        char why[160];
        const char *bad = modern_round_problem(a, why, sizeof why);
        if (bad) {
            /* refused as the plain call's run refuses it, before a place is taken or the
             * record deleted: the round is left to the next retry */
            job_free(j);
            mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, bad, NULL);
            return true;
        }
    }
    char id[SESSION_ID_LEN + 1];
    int code = 0;
    const char *refusal = NULL;
    /* a place of --max-tasks, within the client's share of it (a cancelled task keeps its
     * place until it is deleted, a minute after the cancel) */
    principal_t *owner = a->owner ? principal_ref(a->owner) : principal_get("a:");
    int rc = principal_take(owner, PR_TASKS);
    if (rc != 0) {
        principal_unref(owner);
        if (!(t->flags & MCPD_TOOL_TASK_REQUIRED))
            return false; /* the server may run it synchronously instead */
        code = MCP_ERR_OVERLOADED;
        refusal = rc == -EDQUOT
                      ? "Too many tasks: this client holds its share of --max-tasks "
                        "(--principal-share; a cancelled task holds its place until it is "
                        "deleted, a minute after the cancel); retry later"
                      : "Server busy: too many tasks are stored (--max-tasks); retry later";
        STAT_INC(limit_refusals_total);
        if (rc == -EDQUOT)
            STAT_INC(share_refusals_total);
    } else if (session_id_new_near(id, a->sid) != 0) {
        principal_give(owner, PR_TASKS);
        principal_unref(owner);
        code = JSONRPC_INTERNAL_ERROR;
        refusal = "cannot make a task id";
    }
    if (refusal) {
        job_free(j);
        mcp_answer_error(a, c, code, refusal, NULL);
        return true;
    }
    actor_t *task = actor_create_kind(a->w, id, ACTOR_TASK);
    task->proto = proto_modern();
    task->client_caps = json_deep_copy(a->client_caps);
    memcpy(task->auth_name, a->auth_name, sizeof task->auth_name);
    /* it holds that place until it is deleted, and its runs take its creator's share of the
     * tool pool */
    task->owner = owner;
    json_int_t now = now_wall_ms(), ttl = g_cfg.task_ttl_s * 1000;
    json_t *st = json_pack("{s:s,s:I,s:I,s:I,s:I,s:s}", "st", "working", "ca", now, "ua", now,
                           "ttl", ttl, "pi", (json_int_t)g_cfg.task_poll_ms, "tool", t->name);
    json_t *ans = modern_answers(a, true); /* what the MRTR rounds before the task answered */
    if (ans)
        json_object_set_new(st, "ans", json_deep_copy(ans));
    json_decref(ans);
    mcp_state_set(&mcp_state(task)->task.status, st);
    put_state(task, TASK_STATE_ARGS, j->args);
    actor_alarm_set(task, now + ttl); /* its TTL; persists the metadata in this turn */
    actor_persist_meta(task);
    worker_stat_add(a->w, DS_TASKS_STORED, 1); /* counted once its write is stored */
    STAT_INC(tasks_created_total);
    modern_call_complete(a); /* the input-request exchange (if any) is over: no requestState */
    start_run(task, j, json_object_get(st, "ans"));
    log_debug("task %.8s created for tool %s", task->sid, t->name);
    json_t *r = task_fields(task->sid, st);
    json_object_set_new(r, "resultType", json_string("task"));
    mcp_answer(a, c, r);
    worker_note_activity(a->w, task);
    return true;
}

void tasks_job_done(actor_t *task, job_t *j)
{
    json_t *st = mcp_task_status(task);
    if (!st || json_is_true(json_object_get(st, "x")) || is_terminal(status_of(st)))
        return; /* cancelled (or ended otherwise): the run's outcome is dropped */
    if (atomic_load(&j->cancelled)) {
        /* not by the client (that sets x): the server is stopping */
        task_fail(task, JSONRPC_INTERNAL_ERROR, TASK_STOPPED, NULL, NULL);
    } else if (j->fail_code) {
        json_t *data = j->fail_data;
        j->fail_data = NULL;
        task_fail(task, j->fail_code, j->fail_msg ? j->fail_msg : "the task failed", data, NULL);
    } else if (json_object_size(j->input_requests) && !json_storable_at(j->input_requests, 3)) {
        /* the metadata keeps them (level 3: "task", then "ir"): one the store's reader
         * refuses would make the whole task unreadable, unknown at its next wake */
        task_fail(task, JSONRPC_INTERNAL_ERROR,
                  "the tool's input request cannot be stored: it nests too deep, or holds a "
                  "string that is not UTF-8 or a key with a NUL in it",
                  NULL, NULL);
    } else if (json_object_size(j->input_requests)) {
        json_object_set_new(st, "ir", j->input_requests);
        j->input_requests = NULL;
        set_status(task, "input_required", NULL);
    } else if (!j->result && j->err_kind != JERR_INPUT) {
        char sm[320];
        const char *err = j->err[0] ? j->err : "internal error";
        snprintf(sm, sizeof sm, "Tool execution failed: %s", err);
        /* the task's client speaks 2026-07-28: the handler's code as that revision emits it */
        task_fail(task, stateless_error_code(j->err_code ? j->err_code : JSONRPC_INTERNAL_ERROR),
                  err, NULL, sm);
    } else {
        json_t *r = j->result;
        j->result = NULL;
        if (!r) /* a failure the model can fix: a tool error, as the call would have answered */
            r = mcpd_error_result("%s", j->err);
        /* what the call would have answered (no related-task _meta: SEP-2663) */
        if (json_is_object(r) && !json_object_get(r, "resultType"))
            json_object_set_new(r, "resultType", json_string("complete"));
        if (!put_state(task, TASK_STATE_RESULT, r)) {
            json_decref(r);
            task_fail(
                task, JSONRPC_INTERNAL_ERROR,
                "the tool's result cannot be stored: it nests deeper than 2048 levels, or holds a "
                "string that is not UTF-8 or a key with a NUL in it",
                NULL, NULL);
            return;
        }
        mcp_state_set(&mcp_state(task)->task.result, r);
        set_status(task, "completed", NULL);
        STAT_INC(tasks_completed_total);
    }
}

/* ---- tasks/get, tasks/update, tasks/cancel ---- */

/* The task id names, on this worker, if it is the principal's; a stored task that was working
 * when its job was lost is marked failed here. NULL with *err -EIO: the store failed to read it. */
static actor_t *find_task(actor_t *a, const char *id, int *err)
{
    *err = 0;
    if (!id || !session_id_valid(id) || worker_for_session(id) != a->w)
        return NULL;
    actor_t *t = actor_find_or_load(a->w, id, err);
    if (t && (t->kind != ACTOR_TASK || strcmp(t->auth_name, a->auth_name) != 0)) {
        worker_note_activity(a->w, t);
        return NULL;
    }
    if (t && strcmp(status_of(mcp_task_status(t)), "working") == 0 && !t->detached)
        task_fail(t, JSONRPC_INTERNAL_ERROR, TASK_LOST, NULL, NULL);
    return t;
}

/* The stored result of a completed task into *r (borrowed; cached; NULL: none): 0, or -EIO. */
static int result_of(actor_t *task, const json_t **r)
{
    json_t *v = mcp_task_result(task);
    if (!v && strcmp(status_of(mcp_task_status(task)), "completed") == 0) {
        if (load_state(task, TASK_STATE_RESULT, &v) != 0)
            return -EIO;
        if (v)
            mcp_state_set(&mcp_state(task)->task.result, v);
    }
    *r = v;
    return 0;
}

/* Outstanding keys (ir) that responses does not answer. */
static size_t left_after(json_t *ir, json_t *responses)
{
    size_t left = json_object_size(ir);
    const char *key;
    json_t *answer;
    json_object_foreach(responses, key, answer)
        left -= json_object_get(ir, key) != NULL;
    return left;
}

/* tasks/update: answers for outstanding keys are checked (one bad answer refuses them all),
 * then applied; other keys are ignored. Nothing outstanding left: the handler runs again, with
 * the stored arguments read before anything is applied. NULL when done, else the error message
 * (in why; *unread: the store failed to read the arguments, and nothing was applied). */
static const char *update(actor_t *task, json_t *responses, char *why, size_t whylen, bool *unread)
{
    json_t *st = mcp_task_status(task);
    if (strcmp(status_of(st), "input_required") != 0)
        return NULL; /* nothing is outstanding: the answers are ignored */
    json_t *ir = json_object_get(st, "ir");
    const char *key;
    json_t *answer;
    json_object_foreach(responses, key, answer) {
        json_t *req = json_object_get(ir, key);
        const char *method = json_string_value(json_object_get(req, "method"));
        const char *bad = req ? stateless_answer_problem(method ? method : "", answer) : NULL;
        if (bad) {
            snprintf(why, whylen, "Invalid params: inputResponses[\"%.64s\"] %s", key, bad);
            return why;
        }
    }
    json_t *args = NULL;
    if (json_object_size(ir) && !left_after(ir, responses) &&
        (*unread = load_state(task, TASK_STATE_ARGS, &args) != 0))
        return READ_FAILED_STATE;
    json_t *ans = json_object_get(st, "ans");
    if (!json_is_object(ans)) {
        ans = json_object();
        json_object_set_new(st, "ans", ans);
    }
    bool changed = false;
    json_object_foreach(responses, key, answer) {
        if (!json_object_get(ir, key))
            continue; /* never asked, already answered, or superseded */
        json_object_set_new(ans, key, json_deep_copy(answer));
        json_object_del(ir, key);
        changed = true;
    }
    if (!changed || json_object_size(ir)) {
        json_decref(args); /* NULL: read only when none would be left */
        if (!changed)
            return NULL;
        /* partly answered: still input_required, the rest outstanding */
        json_object_set_new(st, "ua", json_integer(now_wall_ms()));
        actor_persist_meta(task);
        return NULL;
    }
    set_status(task, "working", NULL);
    run_again(task, args);
    return NULL;
}

/* How long a cancelled task is kept for its tasks/get (at most; its TTL may end it sooner). */
#define CANCELLED_TASK_KEEP_MS (60 * 1000)

static void cancel(actor_t *task)
{
    json_t *st = mcp_task_status(task);
    if (is_terminal(status_of(st)))
        return; /* idempotent: the ack only */
    json_object_set_new(st, "x", json_true());
    /* cancelled at once (not when the job returns), so the next tasks/get is deterministic */
    set_status(task, "cancelled", "Cancelled by the client");
    /* it is kept a minute (its ttlMs says so: SEP-2663 lets a task's ttlMs change), not until
     * its TTL, and holds its place of --max-tasks and of its client's share until it is
     * deleted: creating and cancelling tasks in a loop cannot fill the cap or the store, and a
     * client's cancelled tasks never lock the others out */
    json_int_t now = now_wall_ms(), ca = json_integer_value(json_object_get(st, "ca"));
    if (task->alarm_due == 0 || now + CANCELLED_TASK_KEEP_MS < task->alarm_due) {
        json_object_set_new(st, "ttl", json_integer(now + CANCELLED_TASK_KEEP_MS - ca));
        actor_alarm_set(task, now + CANCELLED_TASK_KEEP_MS);
    }
    for (job_t *j = task->detached; j; j = j->detached_next)
        job_cancel(j);
    STAT_INC(tasks_cancelled_total);
    log_debug("task %.8s cancelled", task->sid);
}

void tasks_handle_request(actor_t *a, call_t *c, json_t *params)
{
    if (!tasks_declared(a)) { /* before any lookup: a client without it learns nothing */
        tasks_answer_missing_extension(a, c);
        return;
    }
    json_t *idv = json_object_get(params, "taskId");
    if (!json_is_string(idv)) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS,
                         "Invalid params: params.taskId must be a string", NULL);
        return;
    }
    json_t *responses = json_object_get(params, "inputResponses");
    if (c->method == SM_tasks_update && !json_is_object(responses)) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS,
                         "Invalid params: params.inputResponses must be an object of answers keyed "
                         "as the task's inputRequests",
                         NULL);
        return;
    }
    /* the same answer for an unknown, expired or another principal's task */
    int err;
    actor_t *task = find_task(a, jsonrpc_cstr(idv), &err);
    if (err < 0) { /* not an unknown task: it may be there, and a retry may read it */
        mcp_answer_unavailable(a, c, READ_FAILED_STATE);
        return;
    }
    if (!task) {
        mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, TASK_NOT_FOUND, NULL);
        return;
    }
    char why[200];
    const char *bad = NULL;
    const json_t *result = NULL;
    bool unread = false;
    if (c->method == SM_tasks_get && result_of(task, &result) != 0) {
        mcp_answer_unavailable(a, c, READ_FAILED_STATE); /* not a completed task without one */
    } else if (c->method == SM_tasks_get) {
        mcp_answer(a, c, tasks_detailed(task->sid, mcp_task_status(task), result));
    } else if (c->method == SM_tasks_update &&
               (bad = update(task, responses, why, sizeof why, &unread))) {
        if (unread)
            mcp_answer_unavailable(a, c, bad);
        else
            mcp_answer_error(a, c, JSONRPC_INVALID_PARAMS, bad, NULL);
    } else {
        if (c->method == SM_tasks_cancel)
            cancel(task);
        mcp_answer(a, c, json_object()); /* an ack: resultType and _meta only */
    }
    worker_note_activity(a->w, task);
}
