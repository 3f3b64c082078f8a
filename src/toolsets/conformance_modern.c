/* Threads: main thread registers; handlers on the tool pool threads (NONBLOCKING ones
 * inline on the session's worker thread). */
/* The 2026-07-28 fixtures of the conformance toolset (--toolset conformance): the tools and the
 * prompt the suite's 2026-07-28 server scenarios call by name (input requests, the per-request
 * capability and log level, a parameter mirrored in a header). Registered by
 * toolset_conformance_register after the session-era fixtures. Public API only.
 *
 * The input-request fixtures use the same calls a session-era tool does (elicit, sample,
 * request); mcpd_ctx_input_key names the keys the suite expects in inputRequests. */
#include <mcpactord/tool.h>

#include <stdio.h>
#include <string.h>

#include "toolsets/toolsets.h"

static const char NO_ARGS[] = "{\"type\":\"object\",\"properties\":{}}";

static json_t *name_schema(const char *field, const char *type)
{
    return json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", field, "type", type,
                     "required", field);
}

/* The accepted content's string field, or NULL. */
static const char *accepted(const json_t *r, const char *field)
{
    const char *action = json_string_value(json_object_get(r, "action"));
    if (!action || strcmp(action, "accept") != 0)
        return NULL;
    return json_string_value(json_object_get(json_object_get(r, "content"), field));
}

/* Ends a handler whose request was left unanswered (the result is replaced), or one whose
 * request failed otherwise. */
static json_t *not_answered(mcpd_ctx_t *ctx)
{
    if (mcpd_ctx_input_pending(ctx))
        return mcpd_text_result("input required");
    return mcpd_error_result("the request to the client failed: %s", mcpd_ctx_last_error(ctx));
}

static json_t *sample_params(const char *text, int max_tokens)
{
    return json_pack("{s:[{s:s,s:{s:s,s:s}}],s:i}", "messages", "role", "user", "content", "type",
                     "text", "text", text, "maxTokens", max_tokens);
}

static json_t *ir_elicitation(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "user_name");
    json_t *r = mcpd_ctx_elicit(ctx, "What is your name?", name_schema("name", "string"), 0);
    if (!r)
        return not_answered(ctx);
    const char *name = accepted(r, "name");
    json_t *out = name ? mcpd_text_resultf("Hello, %s!", name) : mcpd_text_result("declined");
    json_decref(r);
    return out;
}

static json_t *ir_sampling(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "capital_question");
    json_t *r = mcpd_ctx_sample(ctx, sample_params("What is the capital of France?", 100), 0);
    if (!r)
        return not_answered(ctx);
    const char *text = json_string_value(json_object_get(json_object_get(r, "content"), "text"));
    json_t *out = mcpd_text_resultf("The model said: %s", text ? text : "(no text)");
    json_decref(r);
    return out;
}

static json_t *ir_list_roots(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "client_roots");
    json_t *r = mcpd_ctx_request(ctx, MCPD_TARGET_REQUEST, "roots/list", json_object(), 0);
    if (!r)
        return not_answered(ctx);
    json_t *out = mcpd_text_resultf("The client has %zu roots",
                                    json_array_size(json_object_get(r, "roots")));
    json_decref(r);
    return out;
}

static json_t *ir_request_state(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "confirm");
    json_t *r = mcpd_ctx_elicit(ctx, "Confirm to continue", name_schema("ok", "boolean"), 0);
    if (!r)
        return not_answered(ctx);
    bool ok = json_is_true(json_object_get(json_object_get(r, "content"), "ok"));
    json_decref(r);
    return mcpd_text_result(ok ? "state-ok: confirmed" : "state-ok: not confirmed");
}

/* Three requests in one round: each is asked even when the one before was not answered. */
static json_t *ir_multiple_inputs(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "user_name");
    json_t *name = mcpd_ctx_elicit(ctx, "What is your name?", name_schema("name", "string"), 0);
    mcpd_ctx_input_key(ctx, "greeting");
    json_t *greeting = mcpd_ctx_sample(ctx, sample_params("Generate a greeting", 50), 0);
    mcpd_ctx_input_key(ctx, "client_roots");
    json_t *roots = mcpd_ctx_request(ctx, MCPD_TARGET_REQUEST, "roots/list", json_object(), 0);
    json_t *out;
    if (!name || !greeting || !roots)
        out = not_answered(ctx);
    else
        out = mcpd_text_resultf("name=%s, roots=%zu",
                                accepted(name, "name") ? accepted(name, "name") : "?",
                                json_array_size(json_object_get(roots, "roots")));
    json_decref(name);
    json_decref(greeting);
    json_decref(roots);
    return out;
}

/* Two rounds: the second request is only asked once the first is answered. */
static json_t *ir_multi_round(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "step1");
    json_t *name = mcpd_ctx_elicit(ctx, "Step 1: what is your name?", name_schema("name", "string"),
                                   0);
    if (!name)
        return not_answered(ctx);
    mcpd_ctx_input_key(ctx, "step2");
    json_t *color = mcpd_ctx_elicit(ctx, "Step 2: what is your favourite colour?",
                                    name_schema("color", "string"), 0);
    if (!color) {
        json_decref(name);
        return not_answered(ctx);
    }
    json_t *out = mcpd_text_resultf("%s likes %s",
                                    accepted(name, "name") ? accepted(name, "name") : "?",
                                    accepted(color, "color") ? accepted(color, "color") : "?");
    json_decref(name);
    json_decref(color);
    return out;
}

/* Asks only for what the request's capabilities allow. */
static json_t *ir_capabilities(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    json_t *a = NULL, *b = NULL;
    bool asked = false;
    if (mcpd_ctx_client_supports(ctx, "elicitation")) {
        asked = true;
        mcpd_ctx_input_key(ctx, "user_name");
        a = mcpd_ctx_elicit(ctx, "What is your name?", name_schema("name", "string"), 0);
    }
    if (mcpd_ctx_client_supports(ctx, "sampling")) {
        asked = true;
        mcpd_ctx_input_key(ctx, "capital_question");
        b = mcpd_ctx_sample(ctx, sample_params("What is the capital of France?", 100), 0);
    }
    json_t *out = mcpd_ctx_input_pending(ctx) ? mcpd_text_result("input required")
                  : asked                     ? mcpd_text_result("answered")
                                              : mcpd_text_result("nothing to ask");
    json_decref(a);
    json_decref(b);
    return out;
}

/* Needs sampling whatever the request declared: without it the call answers -32021. */
static json_t *missing_capability(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "sample");
    json_t *r = mcpd_ctx_sample(ctx, sample_params("Say hello", 20), 0);
    if (!r)
        return not_answered(ctx);
    json_decref(r);
    return mcpd_text_result("Success");
}

static json_t *streaming_elicitation(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_progress(ctx, 1, 2, "asking");
    mcpd_ctx_input_key(ctx, "user_name");
    json_t *r = mcpd_ctx_elicit(ctx, "What is your name?", name_schema("name", "string"), 0);
    if (!r)
        return not_answered(ctx);
    json_decref(r);
    return mcpd_text_result("elicited");
}

static json_t *logging_tool(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    for (int i = 1; i <= 3; i++)
        mcpd_ctx_logf(ctx, "info", "log message %d of 3", i);
    return mcpd_text_result("logged 3 messages (sent only when the request set a log level)");
}

static json_t *custom_header(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx;
    (void)ud;
    const char *region = json_string_value(json_object_get(args, "region"));
    return mcpd_text_resultf("region: %s", region ? region : "?");
}

static json_t *trigger_tool_change(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_list_changed(ctx, "tools");
    return mcpd_text_result("announced notifications/tools/list_changed");
}

static json_t *trigger_prompt_change(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_list_changed(ctx, "prompts");
    return mcpd_text_result("announced notifications/prompts/list_changed");
}

static json_t *update_resource(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ud;
    const char *uri = json_string_value(json_object_get(args, "uri"));
    if (mcpd_ctx_resource_updated(ctx, uri) != 0)
        return mcpd_error_result("uri must be a non-empty string");
    return mcpd_text_resultf("announced notifications/resources/updated for %s", uri);
}

static json_t *ir_prompt(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    mcpd_ctx_input_key(ctx, "user_context");
    json_t *r = mcpd_ctx_elicit(ctx, "What context should the prompt use?",
                                name_schema("context", "string"), 0);
    if (!r) {
        if (mcpd_ctx_input_pending(ctx))
            return json_pack("{s:[]}", "messages"); /* replaced by the input_required result */
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "%s", mcpd_ctx_last_error(ctx));
        return NULL;
    }
    const char *c = accepted(r, "context");
    char text[300];
    snprintf(text, sizeof text, "Use this context: %s", c ? c : "(none)");
    json_decref(r);
    return json_pack("{s:s,s:[{s:s,s:{s:s,s:s}}]}", "description", "A prompt built from input",
                     "messages", "role", "user", "content", "type", "text", "text", text);
}

int toolset_conformance_modern_register(mcpd_registry_t *reg)
{
    const mcpd_tool_def_t tools[] = {
        {.name = "test_input_required_result_elicitation",
         .description = "Asks the user's name (input request user_name) and greets them.",
         .input_schema = NO_ARGS,
         .handler = ir_elicitation},
        {.name = "test_input_required_result_sampling",
         .description = "Asks the client's model a question (input request capital_question).",
         .input_schema = NO_ARGS,
         .handler = ir_sampling},
        {.name = "test_input_required_result_list_roots",
         .description = "Asks the client's roots (input request client_roots).",
         .input_schema = NO_ARGS,
         .handler = ir_list_roots},
        {.name = "test_input_required_result_request_state",
         .description = "Asks a confirmation (input request confirm) and completes with state-ok.",
         .input_schema = NO_ARGS,
         .handler = ir_request_state},
        {.name = "test_input_required_result_multiple_inputs",
         .description = "Asks a name, a sampled greeting and the roots in one round.",
         .input_schema = NO_ARGS,
         .handler = ir_multiple_inputs},
        {.name = "test_input_required_result_multi_round",
         .description = "Asks a name, then (next round) a colour.",
         .input_schema = NO_ARGS,
         .handler = ir_multi_round},
        {.name = "test_input_required_result_tampered_state",
         .description = "Asks a confirmation; a retry with an altered requestState is refused.",
         .input_schema = NO_ARGS,
         .handler = ir_request_state},
        {.name = "test_input_required_result_capabilities",
         .description = "Asks only what the request's client capabilities allow.",
         .input_schema = NO_ARGS,
         .handler = ir_capabilities},
        {.name = "test_missing_capability",
         .description = "Needs sampling: without the capability the call answers -32021.",
         .input_schema = NO_ARGS,
         .handler = missing_capability},
        {.name = "test_streaming_elicitation",
         .description = "Reports progress, then asks the user's name as an input request.",
         .input_schema = NO_ARGS,
         .handler = streaming_elicitation},
        {.name = "test_logging_tool",
         .description = "Logs three info messages (sent only at a requested log level).",
         .input_schema = NO_ARGS,
         .handler = logging_tool},
        {.name = "test_trigger_tool_change",
         .description = "Announces that the tool list changed (to subscriptions/listen streams).",
         .input_schema = NO_ARGS,
         .handler = trigger_tool_change,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_trigger_prompt_change",
         .description = "Announces that the prompt list changed (to subscriptions/listen streams).",
         .input_schema = NO_ARGS,
         .handler = trigger_prompt_change,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_update_resource",
         .description =
             "Announces that the resource at uri changed (notifications/resources/updated, "
             "both eras).",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"uri\":{\"type\":\"string\"}},"
                         "\"required\":[\"uri\"]}",
         .handler = update_resource,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_custom_header",
         .description = "Echoes its region, a parameter mirrored in the Mcp-Param-Region header.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"region\":{\"type\":\"string\","
                         "\"description\":\"A region name\",\"x-mcp-header\":\"Region\"}},"
                         "\"required\":[\"region\"]}",
         .handler = custom_header,
         .flags = MCPD_TOOL_NONBLOCKING},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int rc = mcpd_register_tool(reg, &tools[i]);
        if (rc != 0)
            return rc;
    }
    const mcpd_prompt_def_t prompt = {
        .name = "test_input_required_result_prompt",
        .description =
            "A prompt that asks the user for its context first (input request user_context).",
        .get = ir_prompt};
    return mcpd_register_prompt(reg, &prompt);
}
