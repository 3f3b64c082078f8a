/* Threads: main thread registers; handlers on the tool pool threads. */
/* The tasks-extension fixtures of the conformance toolset (--toolset conformance): the tools the
 * suite's tasks-* scenarios (SEP-2663) call by name. Registered by toolset_conformance_register
 * after the other fixtures. Public API only.
 *
 * Whether a call becomes a task is the server's business (the MCPD_TOOL_TASK* flags); the
 * handlers are plain tools. Their input requests use the same calls as any 2026-07-28 tool:
 * inside a task they become the task's inputRequests, answered through tasks/update.
 * `greet` is also the name of the example plugin's tool (src/plugins/hello.c): the two cannot
 * be served together. */
#include <mcpactord/tool.h>

#include <stdio.h>
#include <string.h>

#include "toolsets/toolsets.h"

static const char NO_ARGS[] = "{\"type\":\"object\",\"properties\":{}}";

static json_t *string_schema(const char *field)
{
    return json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", field, "type",
                     "string", "required", field);
}

/* The accepted content of an elicitation answer, or NULL. */
static const json_t *accepted(const json_t *r)
{
    const char *action = json_string_value(json_object_get(r, "action"));
    return action && strcmp(action, "accept") == 0 ? json_object_get(r, "content") : NULL;
}

/* A handler whose request was left unanswered returns at once (the result is replaced: the
 * task waits for tasks/update); one whose request failed otherwise says why. */
static json_t *not_answered(mcpd_ctx_t *ctx)
{
    if (mcpd_ctx_input_pending(ctx))
        return mcpd_text_result("input required");
    return mcpd_error_result("the request to the client failed: %s", mcpd_ctx_last_error(ctx));
}

static json_t *greet(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx;
    (void)ud;
    json_t *name = json_object_get(args, "name");
    return mcpd_text_resultf("Hello, %s!", json_string_value(name) ? json_string_value(name) : "?");
}

static json_t *slow_compute(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ud;
    json_int_t secs = json_integer_value(json_object_get(args, "seconds"));
    const char *label = json_string_value(json_object_get(args, "label"));
    if (!mcpd_ctx_sleep_ms(ctx, (long)secs * 1000))
        return mcpd_error_result("Computation \"%s\" was cancelled", label ? label : "");
    return mcpd_text_resultf("Computation \"%s\" completed after %lld s. Result: 42.",
                             label ? label : "", (long long)secs);
}

static json_t *failing_job(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_sleep_ms(ctx, 1000);
    return mcpd_error_result("failing_job: simulated tool failure");
}

static json_t *protocol_error_job(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_sleep_ms(ctx, 500);
    mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "protocol_error_job: simulated internal failure");
    return NULL;
}

static json_t *confirm_delete(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ud;
    const char *file = json_string_value(json_object_get(args, "filename"));
    char msg[300];
    snprintf(msg, sizeof msg, "Delete %s?", file ? file : "?");
    mcpd_ctx_input_key(ctx, "confirm");
    json_t *schema = json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", "confirm",
                               "type", "boolean", "required", "confirm");
    json_t *r = mcpd_ctx_elicit(ctx, msg, schema, 0);
    if (!r)
        return not_answered(ctx);
    bool yes = json_is_true(json_object_get(accepted(r), "confirm"));
    json_decref(r);
    return mcpd_text_resultf("%s %s", yes ? "Deleted" : "Kept", file ? file : "?");
}

static json_t *multi_input(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    /* both asked in the same run: an unanswered one does not stop the next */
    mcpd_ctx_input_key(ctx, "first");
    json_t *a = mcpd_ctx_elicit(ctx, "First name?", string_schema("name"), 0);
    mcpd_ctx_input_key(ctx, "second");
    json_t *b = mcpd_ctx_elicit(ctx, "Second name?", string_schema("name"), 0);
    json_t *out;
    if (!a || !b) {
        out = not_answered(ctx);
    } else {
        const char *x = json_string_value(json_object_get(accepted(a), "name"));
        const char *y = json_string_value(json_object_get(accepted(b), "name"));
        out = mcpd_text_resultf("Received %s and %s", x ? x : "(none)", y ? y : "(none)");
    }
    json_decref(a);
    json_decref(b);
    return out;
}

static json_t *tool_with_task(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "user_name");
    json_t *r = mcpd_ctx_elicit(ctx, "What is your name?", string_schema("name"), 0);
    if (!r)
        return not_answered(ctx);
    const char *name = json_string_value(json_object_get(accepted(r), "name"));
    char text[300];
    snprintf(text, sizeof text, "Hello, %s! (from the task)", name ? name : "stranger");
    json_decref(r);
    /* the asynchronous part: it runs inside the task */
    if (!mcpd_ctx_sleep_ms(ctx, 500))
        return mcpd_error_result("cancelled");
    return mcpd_text_result(text);
}

int toolset_conformance_tasks_register(mcpd_registry_t *reg)
{
    const mcpd_tool_def_t tools[] = {
        {.name = "greet",
         .description = "Greets by name (never a task).",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
                         "\"required\":[\"name\"]}",
         .handler = greet},
        {.name = "slow_compute",
         .description = "Computes for `seconds` (a task when the client declares the tasks "
                        "extension; a cancel stops it).",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"integer\","
                         "\"minimum\":0,\"maximum\":3600},\"label\":{\"type\":\"string\"}}}",
         .handler = slow_compute,
         .flags = MCPD_TOOL_TASK},
        {.name = "failing_job",
         .description = "Runs only as a task, and ends with a tool error (isError).",
         .input_schema = NO_ARGS,
         .handler = failing_job,
         .flags = MCPD_TOOL_TASK_REQUIRED},
        {.name = "protocol_error_job",
         .description = "Ends with a JSON-RPC error (a task: failed).",
         .input_schema = NO_ARGS,
         .handler = protocol_error_job,
         .flags = MCPD_TOOL_TASK},
        {.name = "confirm_delete",
         .description = "Asks to confirm the deletion of `filename` (input request confirm).",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"filename\":{\"type\":\"string\"}},"
                         "\"required\":[\"filename\"]}",
         .handler = confirm_delete,
         .flags = MCPD_TOOL_TASK},
        {.name = "multi_input",
         .description = "Asks two names in one round (input requests first and second).",
         .input_schema = NO_ARGS,
         .handler = multi_input,
         .flags = MCPD_TOOL_TASK},
        {.name = "test_tool_with_task",
         .description = "Asks the user's name first (synchronously), then runs as a task.",
         .input_schema = NO_ARGS,
         .handler = tool_with_task,
         .flags = MCPD_TOOL_TASK_REQUIRED | MCPD_TOOL_TASK_AFTER_INPUT},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int rc = mcpd_register_tool(reg, &tools[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}
