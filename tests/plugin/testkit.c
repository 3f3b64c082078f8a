/* Test plugin (tests only; worker and tool-pool threads as the tool API says):
 *   stall {ms}                  claims to be non-blocking but sleeps on the session's worker, so
 *                               requests queue up behind it (fills a mailbox deterministically);
 *   session_request {method}    sends a session-level server->client request (no related
 *                               request) and returns the client's result as JSON text, or an
 *                               isError result saying why it could not be routed;
 *   ask_twice {first_ms, second_ms}  elicits with a first_ms timeout; when that times out,
 *                               elicits again with second_ms and returns what the second got;
 *   count_cancel {}             sleeps until cancelled, then adds 7 to its state "cancels"
 *                               through state_update with a heap argument it frees after;
 *   state_read {key}            returns the session's state value for key as JSON text;
 *   confirm_once {item}         2026-07-28: asks a confirmation (input request "confirm") and
 *                               returns "redeemed <item>"; flagged MCPD_TOOL_INPUT_ONCE, so its
 *                               requestState works at most once;
 *   confirm_slow {item, ms}     2026-07-28: the same without MCPD_TOOL_INPUT_ONCE; once
 *                               confirmed it works ms milliseconds, then returns
 *                               "confirmed <item>" (concurrent retries of one round);
 *   not_utf8 {what}             hands the tool API text that is not UTF-8: "request" asks the
 *                               client "roots/list\xff" (returns why it failed), "notify" sends
 *                               "notifications/\xff" (returns the rc), "texts" logs
 *                               "caf\xe9 \xff" by mcpd_ctx_logf, logs with the logger "kit\xff",
 *                               reports progress with the message "half\xff" (with a token) and
 *                               elicits with the message "ok\xff?" (returns the action),
 *                               "fail" fails with -32602 and the error text "no such caf\xc3" (a
 *                               text cut inside a character); not_utf8_task is the same tool
 *                               flagged MCPD_TOOL_TASK;
 *   arg_refs {...}              returns how many references its arguments object has when it
 *                               runs on a tool thread (1: the handler's alone; another is one
 *                               the worker may drop meanwhile, a count shared across threads);
 *   prompt kit_prompt {x} and a completion provider that, for the value "ask", asks the client
 *                               for input (2026-07-28 allows that only on tools, prompts and
 *                               resources: the server must refuse it, not crash);
 *   resource kit://ask          2026-07-28: asks the client (input request "pick") and reads
 *                               as the answer's content.choice;
 *   resource kit://item/{id}    reads "item <id>" for the id "here"; any other id is reported
 *                               not found by the handler (MCPD_ERR_RESOURCE_NOT_FOUND);
 *   misbehave {what, n}         results and calls at the edges of what the API allows: "deep"
 *                               returns a result whose structuredContent.v nests n arrays
 *                               ("deep_bare": n nested arrays, not a CallToolResult;
 *                               "deep_late": "deep" after a log message and {ms} ms);
 *                               "string" returns a JSON string and "no_content" an object
 *                               without content, neither a CallToolResult ("nul_content" one
 *                               whose only key is "content\0x", an array); "pending" asks
 *                               (input "pick") and returns null while the answer is missing; "bad_uri" reports
 *                               kit://watch/\xff updated (not UTF-8) and returns the rc;
 *                               "deep_state" stores n nested arrays (as "bad_state" does);
 *                               "deep_update", "deep_handle" and "deep_handle_update" the
 *                               same through state_update, a handle's state_put and a
 *                               handle's state_update; "deep_log", "deep_notify" hand n
 *                               nested arrays to mcpd_ctx_log / mcpd_ctx_notify (return the
 *                               rc), "deep_request" (roots/list params), "deep_elicit" and
 *                               "deep_sample" (params.x) to a request (return what it got);
 *                               "nul_key_state" an object whose key holds a NUL (the same);
 *                               "nul_key_elicit" elicits with a schema whose key holds a NUL;
 *                               "bad_state" stores a string that is not UTF-8 (made with
 *                               jansson's _nocheck) and returns the rc and the stored "k";
 *                               "bad_params" sends a notification whose params are a string
 *                               and a roots/list whose params are 1, and says what came. */
#include <mcpactord/tool.h>

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>

static json_t *stall(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)ctx;
    (void)userdata;
    long ms = (long)json_integer_value(json_object_get(args, "ms"));
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return mcpd_text_result("stalled");
}

static json_t *arg_refs(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)ctx;
    (void)userdata;
    char text[32];
    snprintf(text, sizeof text, "%zu", args->refcount);
    return mcpd_text_result(text);
}

static json_t *session_request(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)userdata;
    const char *method = json_string_value(json_object_get(args, "method"));
    json_t *r = mcpd_ctx_request(ctx, MCPD_TARGET_SESSION, method, NULL, 10000);
    if (!r)
        return mcpd_error_result("%s", mcpd_ctx_last_error(ctx));
    char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(r);
    json_t *out = mcpd_text_result(text);
    free(text);
    return out;
}

static json_t *not_utf8_texts(mcpd_ctx_t *ctx)
{
    int rc = mcpd_ctx_logf(ctx, "info", "caf\xe9 %s", "\xff");
    int rc2 = mcpd_ctx_log(ctx, "info", "kit\xff", json_string("from a bad logger"));
    int rc3 = mcpd_ctx_progress(ctx, 1, 2, "half\xff");
    json_t *r = mcpd_ctx_elicit(ctx, "ok\xff?", NULL, 5000);
    const char *action = json_string_value(json_object_get(r, "action"));
    json_t *out = mcpd_text_resultf("logf %d, log %d, progress %d, elicit %s", rc, rc2, rc3,
                                    action ? action : mcpd_ctx_last_error(ctx));
    json_decref(r);
    return out;
}

static json_t *not_utf8(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)userdata;
    const char *what = json_string_value(json_object_get(args, "what"));
    if (what && strcmp(what, "request") == 0) {
        json_t *r = mcpd_ctx_request(ctx, MCPD_TARGET_REQUEST, "roots/list\xff", NULL, 2000);
        json_decref(r);
        return r ? mcpd_text_result("answered")
                 : mcpd_error_result("refused: %s", mcpd_ctx_last_error(ctx));
    }
    if (what && strcmp(what, "fail") == 0) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_INVALID_PARAMS, "no such caf\xc3");
        return NULL;
    }
    if (what && strcmp(what, "progress") == 0) { /* values no notification can carry */
        int low_rc = mcpd_ctx_progress(ctx, -1e301, -1, NULL); /* any first value is taken */
        int nan_rc = mcpd_ctx_progress(ctx, NAN, -1, NULL);
        int inf_rc = mcpd_ctx_progress(ctx, INFINITY, -1, NULL);
        int big_rc = mcpd_ctx_progress(ctx, 1e19, NAN, NULL);
        int next_rc = mcpd_ctx_progress(ctx, 2e19, 4e19, NULL);
        return mcpd_text_resultf("-1e301 %d, nan %d, inf %d, 1e19 %d, 2e19 %d", low_rc, nan_rc,
                                 inf_rc, big_rc, next_rc);
    }
    if (what && strcmp(what, "notify") == 0)
        return mcpd_text_resultf("notify %d", mcpd_ctx_notify(ctx, MCPD_TARGET_REQUEST,
                                                              "notifications/\xff", NULL));
    return not_utf8_texts(ctx);
}

static json_t *ask_twice(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)userdata;
    int first_ms = (int)json_integer_value(json_object_get(args, "first_ms"));
    int second_ms = (int)json_integer_value(json_object_get(args, "second_ms"));
    json_t *r = mcpd_ctx_elicit(ctx, "first question", NULL, first_ms);
    if (r) {
        json_decref(r);
        return mcpd_text_result("the first was answered in time");
    }
    r = mcpd_ctx_elicit(ctx, "second question", NULL, second_ms);
    if (!r)
        return mcpd_text_resultf("the second got no answer: %s", mcpd_ctx_last_error(ctx));
    char *text = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(r);
    json_t *out = mcpd_text_resultf("the second got %s", text);
    free(text);
    return out;
}

static json_t *add_arg(json_t *cur, void *arg)
{
    long by = *(const long *)arg;
    return json_integer((json_is_integer(cur) ? json_integer_value(cur) : 0) + by);
}

static json_t *count_cancel(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)args;
    (void)userdata;
    mcpd_ctx_sleep_ms(ctx, 20000);
    long *by = malloc(sizeof *by);
    *by = 7;
    json_t *v = mcpd_ctx_state_update(ctx, "cancels", add_arg, by);
    free(by); /* the update is over when state_update returns */
    json_decref(v);
    return mcpd_text_result("cancelled");
}

static json_t *state_read(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)userdata;
    json_t *v = mcpd_ctx_state_get(ctx, json_string_value(json_object_get(args, "key")));
    if (!v)
        return mcpd_error_result("%s", mcpd_ctx_last_error(ctx));
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    json_t *out = mcpd_text_result(text);
    free(text);
    return out;
}

static json_t *confirm_once(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)userdata;
    mcpd_ctx_input_key(ctx, "confirm");
    json_t *r = mcpd_ctx_elicit(ctx, "Redeem?",
                                json_pack("{s:s,s:{s:{s:s}}}", "type", "object", "properties", "ok",
                                          "type", "boolean"),
                                0);
    if (!r)
        return mcpd_ctx_input_pending(ctx) ? mcpd_text_result("input required")
                                           : mcpd_error_result("%s", mcpd_ctx_last_error(ctx));
    json_decref(r);
    return mcpd_text_resultf("redeemed %s", json_string_value(json_object_get(args, "item")));
}

static json_t *confirm_slow(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)userdata;
    mcpd_ctx_input_key(ctx, "confirm");
    json_t *r = mcpd_ctx_elicit(ctx, "Proceed?",
                                json_pack("{s:s,s:{s:{s:s}}}", "type", "object", "properties", "ok",
                                          "type", "boolean"),
                                0);
    if (!r)
        return mcpd_ctx_input_pending(ctx) ? mcpd_text_result("input required")
                                           : mcpd_error_result("%s", mcpd_ctx_last_error(ctx));
    json_decref(r);
    mcpd_ctx_sleep_ms(ctx, (long)json_integer_value(json_object_get(args, "ms")));
    return mcpd_text_resultf("confirmed %s", json_string_value(json_object_get(args, "item")));
}

static json_t *kit_prompt(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)ctx;
    (void)userdata;
    return json_pack("{s:[{s:s,s:{s:s,s:s}}]}", "messages", "role", "user", "content", "type",
                     "text", "text",
                     json_string_value(json_object_get(args, "x"))
                         ? json_string_value(json_object_get(args, "x"))
                         : "");
}

static json_t *kit_complete(mcpd_ctx_t *ctx, json_t *ref, const char *arg_name,
                            const char *arg_value, json_t *context_args, void *userdata)
{
    (void)ref;
    (void)arg_name;
    (void)context_args;
    (void)userdata;
    if (strcmp(arg_value, "ask") == 0) {
        json_t *r = mcpd_ctx_elicit(ctx, "Which?", NULL, 0);
        if (!r)
            return json_pack("[s]", "unanswered");
        json_decref(r);
    }
    return json_pack("[s]", "alpha");
}

static json_t *text_contents(const char *uri, const char *text)
{
    return json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", "text/plain",
                     "text", text);
}

static json_t *read_ask(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *userdata)
{
    (void)vars;
    (void)userdata;
    mcpd_ctx_input_key(ctx, "pick");
    json_t *r = mcpd_ctx_elicit(ctx, "Which one?",
                                json_pack("{s:s,s:{s:{s:s}}}", "type", "object", "properties",
                                          "choice", "type", "string"),
                                0);
    if (!r) {
        if (mcpd_ctx_input_pending(ctx))
            return text_contents(uri, "input required"); /* replaced by input_required */
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "%s", mcpd_ctx_last_error(ctx));
        return NULL;
    }
    const char *choice = json_string_value(
        json_object_get(json_object_get(r, "content"), "choice"));
    json_t *out = text_contents(uri, choice ? choice : "(none)");
    json_decref(r);
    return out;
}

static json_t *read_item(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *userdata)
{
    (void)userdata;
    const char *id = json_string_value(json_object_get(vars, "id"));
    if (!id || strcmp(id, "here") != 0) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_RESOURCE_NOT_FOUND, "no item %s", id ? id : "");
        return NULL;
    }
    return text_contents(uri, "item here");
}

static int register_resources(mcpd_registry_t *reg)
{
    static const mcpd_resource_def_t defs[] = {
        {.uri = "kit://ask",
         .name = "kit-ask",
         .description = "Test only: asks the client which one to read.",
         .mime_type = "text/plain",
         .read = read_ask},
        {.uri_template = "kit://watch/{id}",
         .name = "kit-watch",
         .description = "Test only: any item, subscribable.",
         .mime_type = "text/plain",
         .subscribable = true,
         .read = read_item},
        {.uri_template = "kit://item/{id}",
         .name = "kit-item",
         .description = "Test only: only the item \"here\" exists.",
         .mime_type = "text/plain",
         .read = read_item},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        int rc = mcpd_register_resource(reg, &defs[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static json_t *nested(long n)
{
    json_t *v = json_integer(0);
    for (long i = 0; i < n; i++) {
        json_t *a = json_array();
        json_array_append_new(a, v);
        v = a;
    }
    return v;
}

static json_t *nested_of(json_t *current, void *arg)
{
    (void)current; /* borrowed */
    return nested(*(const long *)arg);
}

/* "deep_*": a value of n nested arrays handed to the API where the server keeps or sends it;
 * says what each call returned (NULL when what names none of them). */
static json_t *misbehave_deep(mcpd_ctx_t *ctx, const char *what, long n)
{
    if (strcmp(what, "deep_log") == 0)
        return mcpd_text_resultf("log %d", mcpd_ctx_log(ctx, "info", "kit", nested(n)));
    if (strcmp(what, "deep_notify") == 0)
        return mcpd_text_resultf("notify %d", mcpd_ctx_notify(ctx, MCPD_TARGET_REQUEST,
                                                              "notifications/kit", nested(n)));
    json_t *answer = NULL;
    if (strcmp(what, "deep_request") == 0)
        answer = mcpd_ctx_request(ctx, MCPD_TARGET_REQUEST, "roots/list", nested(n), 2000);
    else if (strcmp(what, "deep_elicit") == 0)
        answer = mcpd_ctx_elicit(ctx, "Deep?", json_pack("{s:o}", "x", nested(n)), 2000);
    else if (strcmp(what, "deep_sample") == 0)
        answer = mcpd_ctx_sample(ctx, json_pack("{s:o}", "x", nested(n)), 2000);
    else
        return NULL;
    bool answered = answer != NULL;
    json_decref(answer);
    return mcpd_text_resultf("request %s", answered ? "answered"
                                           : mcpd_ctx_input_pending(ctx)
                                               ? "input required"
                                               : mcpd_ctx_last_error(ctx));
}

/* "deep_update" / "deep_handle" / "deep_handle_update": as "deep_state", through
 * mcpd_ctx_state_update, a handle's state_put or a handle's state_update. */
static json_t *misbehave_deep_state(mcpd_ctx_t *ctx, const char *what, long n)
{
    char h[MCPD_HANDLE_LEN + 1];
    bool on_handle = strncmp(what, "deep_handle", 11) == 0;
    if (on_handle && mcpd_ctx_handle_new(ctx, h) != 0)
        return mcpd_error_result("handle_new: %s", mcpd_ctx_last_error(ctx));
    int rc;
    if (on_handle) {
        mcpd_ctx_handle_state_put(ctx, h, "k", json_string("before"));
        if (strcmp(what, "deep_handle") == 0) {
            rc = mcpd_ctx_handle_state_put(ctx, h, "k", nested(n));
        } else {
            json_t *r = mcpd_ctx_handle_state_update(ctx, h, "k", nested_of, &n);
            rc = r ? 0 : -5;
            json_decref(r);
        }
    } else {
        mcpd_ctx_state_put(ctx, "k", json_string("before"));
        json_t *r = mcpd_ctx_state_update(ctx, "k", nested_of, &n);
        rc = r ? 0 : -5;
        json_decref(r);
    }
    json_t *now = on_handle ? mcpd_ctx_handle_state_get(ctx, h, "k") : mcpd_ctx_state_get(ctx, "k");
    json_t *r = mcpd_text_resultf("put %d, k %s", rc,
                                  json_is_string(now) ? json_string_value(now)
                                  : now               ? "another value"
                                                      : "none");
    json_decref(now);
    if (on_handle)
        mcpd_ctx_handle_delete(ctx, h);
    return r;
}

static json_t *misbehave(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    (void)userdata;
    const char *what = json_string_value(json_object_get(args, "what"));
    long n = (long)json_integer_value(json_object_get(args, "n"));
    if (!what)
        what = "";
    if (strcmp(what, "deep") == 0) {
        json_t *r = mcpd_text_result("deep");
        json_object_set_new(r, "structuredContent", json_pack("{s:o}", "v", nested(n)));
        return r;
    }
    if (strcmp(what, "deep_bare") == 0)
        return nested(n);
    if (strcmp(what, "deep_late") == 0) { /* "deep" after a log message and ms milliseconds */
        mcpd_ctx_logf(ctx, "info", "started");
        mcpd_ctx_sleep_ms(ctx, (long)json_integer_value(json_object_get(args, "ms")));
        json_t *r = mcpd_text_result("deep");
        json_object_set_new(r, "structuredContent", json_pack("{s:o}", "v", nested(n)));
        return r;
    }
    if (strcmp(what, "deep_update") == 0 || strncmp(what, "deep_handle", 11) == 0)
        return misbehave_deep_state(ctx, what, n);
    json_t *deep = strncmp(what, "deep_", 5) == 0 ? misbehave_deep(ctx, what, n) : NULL;
    if (deep)
        return deep;
    if (strcmp(what, "string") == 0)
        return json_string("not an object");
    if (strcmp(what, "pending") == 0) { /* tool.h: what is returned is replaced */
        mcpd_ctx_input_key(ctx, "pick");
        json_t *r = mcpd_ctx_elicit(ctx, "Which one?", json_pack("{s:s}", "type", "object"), 0);
        if (!r && mcpd_ctx_input_pending(ctx))
            return json_null();
        json_decref(r);
        return mcpd_text_result("answered");
    }
    if (strcmp(what, "no_content") == 0)
        return json_pack("{s:s}", "text", "no content array");
    if (strcmp(what, "nul_content") == 0) { /* a first key "content\0x": no "content" either */
        json_t *r = json_object();
        json_object_setn_new(r, "content\0x", 9, json_array());
        return r;
    }
    if (strcmp(what, "bad_uri") == 0)
        return mcpd_text_resultf("updated %d", mcpd_ctx_resource_updated(ctx, "kit://watch/\xff"));
    if (strcmp(what, "deep_state") == 0 || strcmp(what, "nul_key_state") == 0) {
        /* deeper than the store's reader reads back, or a key it refuses */
        json_t *v = nested(n);
        if (what[0] == 'n') {
            json_decref(v);
            v = json_object();
            json_object_setn_new(v, "a\0b", 3, json_true());
        }
        mcpd_ctx_state_put(ctx, "k", json_string("before"));
        int rc = mcpd_ctx_state_put(ctx, "k", v);
        json_t *now = mcpd_ctx_state_get(ctx, "k");
        json_t *r = mcpd_text_resultf("put %d, k %s", rc,
                                      json_is_string(now) ? json_string_value(now)
                                      : now               ? "another value"
                                                          : "none");
        json_decref(now);
        return r;
    }
    if (strcmp(what, "nul_key_elicit") == 0) { /* what the store's reader refuses */
        json_t *schema = json_pack("{s:s,s:{}}", "type", "object", "properties");
        json_object_setn_new(json_object_get(schema, "properties"), "a\0b", 3, json_object());
        json_t *r = mcpd_ctx_elicit(ctx, "Which?", schema, 0);
        if (!r)
            return mcpd_ctx_input_pending(ctx) ? mcpd_text_result("input required")
                                               : mcpd_error_result("%s", mcpd_ctx_last_error(ctx));
        json_decref(r);
        return mcpd_text_result("answered");
    }
    if (strcmp(what, "bad_state") == 0) {
        mcpd_ctx_state_put(ctx, "k", json_string("before"));
        int rc = mcpd_ctx_state_put(ctx, "k", json_stringn_nocheck("caf\xc3", 4));
        json_t *now = mcpd_ctx_state_get(ctx, "k");
        json_t *r = mcpd_text_resultf("put %d, k %s", rc, json_string_value(now));
        json_decref(now);
        return r;
    }
    if (strcmp(what, "bad_params") == 0) {
        int rc = mcpd_ctx_notify(ctx, MCPD_TARGET_REQUEST, "notifications/kit",
                                 json_string("not structured"));
        json_t *answer = mcpd_ctx_request(ctx, MCPD_TARGET_REQUEST, "roots/list", json_integer(1),
                                          2000);
        json_decref(answer);
        return mcpd_text_resultf("notify %d, request %s", rc,
                                 answer ? "answered" : mcpd_ctx_last_error(ctx));
    }
    return mcpd_error_result("unknown misbehaviour %s", what);
}

int mcpd_plugin_init(mcpd_registry_t *reg, int api_version)
{
    if (api_version != MCPD_API_VERSION)
        return -1;
    static const mcpd_tool_def_t defs[] = {
        {.name = "stall",
         .description = "Test only: blocks the session's worker for ms milliseconds.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}}",
         .handler = stall,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "session_request",
         .description = "Test only: sends a session-level request to the client.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"method\":{\"type\":\"string\"}},"
                         "\"required\":[\"method\"]}",
         .handler = session_request},
        {.name = "not_utf8",
         .description = "Test only: text that is not UTF-8 handed to the tool API.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"what\":{\"type\":\"string\"}}}",
         .handler = not_utf8},
        {.name = "not_utf8_task",
         .description = "Test only: not_utf8, which may run as a task.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"what\":{\"type\":\"string\"}}}",
         .handler = not_utf8,
         .flags = MCPD_TOOL_TASK},
        {.name = "arg_refs",
         .description = "Test only: the reference count of its arguments object.",
         .input_schema = "{\"type\":\"object\"}",
         .handler = arg_refs},
        {.name = "ask_twice",
         .description = "Test only: an elicitation asked again after its timeout.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"first_ms\":{\"type\":\"integer\"},"
                         "\"second_ms\":{\"type\":\"integer\"}}}",
         .handler = ask_twice},
        {.name = "count_cancel",
         .description = "Test only: counts its cancellation in durable state.",
         .input_schema = "{\"type\":\"object\",\"properties\":{}}",
         .handler = count_cancel},
        {.name = "state_read",
         .description = "Test only: reads a state key.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\"}},"
                         "\"required\":[\"key\"]}",
         .handler = state_read},
        {.name = "confirm_once",
         .description = "Test only: an input request whose state works at most once.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"item\":{\"type\":\"string\"}},"
                         "\"required\":[\"item\"]}",
         .handler = confirm_once,
         .flags = MCPD_TOOL_INPUT_ONCE},
        {.name = "confirm_slow",
         .description = "Test only: an input request, then ms milliseconds of work.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"item\":{\"type\":\"string\"},"
                         "\"ms\":{\"type\":\"integer\"}},\"required\":[\"item\"]}",
         .handler = confirm_slow},
        {.name = "misbehave",
         .description = "Test only: a handler that breaks the tool API's rules.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"what\":{\"type\":\"string\"},"
                         "\"n\":{\"type\":\"integer\"},\"ms\":{\"type\":\"integer\"}}}",
         .handler = misbehave},
        {.name = "misbehave_task",
         .description = "Test only: misbehave, which may run as a task.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"what\":{\"type\":\"string\"},"
                         "\"n\":{\"type\":\"integer\"}}}",
         .handler = misbehave,
         .flags = MCPD_TOOL_TASK},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        int rc = mcpd_register_tool(reg, &defs[i]);
        if (rc != 0)
            return rc;
    }
    const mcpd_prompt_def_t prompt = {.name = "kit_prompt",
                                      .description = "Test only: a prompt for completion tests.",
                                      .arguments = "[{\"name\":\"x\",\"required\":false}]",
                                      .get = kit_prompt};
    int rc = mcpd_register_prompt(reg, &prompt);
    if (rc == 0)
        rc = register_resources(reg);
    return rc != 0 ? rc : mcpd_set_completion(reg, kit_complete, NULL);
}
