/* Threads: main thread registers; handlers on the tool pool threads (NONBLOCKING ones
 * inline on the session's worker thread). */
/* The conformance toolset (--toolset conformance). Handlers run on the tool pool (the ones flagged
 * MCPD_TOOL_NONBLOCKING inline on the session's worker); registration runs on the main thread.
 *
 * Every fixture that the server scenarios of the official MCP conformance suite
 * (@modelcontextprotocol/conformance) call by name: the test_* tools, the test:// resources, the
 * test_* prompts and completion. Names, texts and shapes follow what the suite checks (see
 * tests/interop/); the texts are the ones the suite's scenario descriptions ask for, so a person
 * reading a failed run sees what they expect. The tool names do not collide with the demo
 * toolset, so `--toolset demo,conformance` serves both.
 */
#include <mcpactord/tool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/toolsets.h"

/* A 1x1 red pixel, PNG (69 bytes). */
static const char RED_PIXEL_PNG[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";

/* 2 ms of a square wave: RIFF/WAVE, PCM 16-bit mono 8 kHz, 16 samples (76 bytes). */
static const char SHORT_TONE_WAV[] =
    "UklGRkQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YSAAAADoA+gD6APoAxj8GPwY/Bj86APoA+gD6AMY"
    "/Bj8GPwY/A==";

/* ---- content helpers ---- */

static json_t *image_content(void)
{
    return json_pack("{s:s,s:s,s:s}", "type", "image", "data", RED_PIXEL_PNG, "mimeType",
                     "image/png");
}

static json_t *text_resource(const char *uri, const char *mime, const char *text)
{
    return json_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType", mime, "text", text);
}

static json_t *embedded(json_t *resource)
{
    return json_pack("{s:s,s:o}", "type", "resource", "resource", resource);
}

static json_t *result_of(json_t *content_items)
{
    return json_pack("{s:o}", "content", content_items);
}

/* Compact JSON text of v (NULL prints as {}); the caller frees it. */
static char *compact(const json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    return s ? s : strdup("{}");
}

/* ---- tools ---- */

static json_t *simple_text(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)args, (void)ud;
    return mcpd_text_result("This is a simple text response for testing.");
}

static json_t *image(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)args, (void)ud;
    return result_of(json_pack("[o]", image_content()));
}

static json_t *audio(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)args, (void)ud;
    return result_of(json_pack("[{s:s,s:s,s:s}]", "type", "audio", "data", SHORT_TONE_WAV,
                               "mimeType", "audio/wav"));
}

static json_t *embedded_resource(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)args, (void)ud;
    return result_of(
        json_pack("[o]", embedded(text_resource("test://embedded-resource", "text/plain",
                                                "This is an embedded resource content."))));
}

static json_t *multiple_content_types(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)args, (void)ud;
    return result_of(
        json_pack("[o,o,o]", mcpd_text_content("Multiple content types test:"), image_content(),
                  embedded(text_resource("test://mixed-content-resource", "application/json",
                                         "{\"test\":\"data\",\"value\":123}"))));
}

static json_t *with_logging(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args, (void)ud;
    static const char *const steps[] = {"Tool execution started", "Tool processing data",
                                        "Tool execution completed"};
    for (int i = 0; i < 3; i++) {
        if (i > 0 && !mcpd_ctx_sleep_ms(ctx, 50))
            return mcpd_error_result("cancelled");
        mcpd_ctx_log(ctx, "info", "test_tool_with_logging", json_string(steps[i]));
    }
    return mcpd_text_result("Tool with logging executed successfully");
}

static json_t *error_handling(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)args, (void)ud;
    return mcpd_error_result("This tool intentionally returns an error for testing");
}

static json_t *with_progress(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args, (void)ud;
    for (int p = 0; p <= 100; p += 50) {
        if (p > 0 && !mcpd_ctx_sleep_ms(ctx, 50))
            return mcpd_error_result("cancelled at %d/100", p - 50);
        char msg[32];
        snprintf(msg, sizeof msg, "%d/100", p);
        mcpd_ctx_progress(ctx, p, 100, msg);
    }
    return mcpd_text_result("Tool with progress executed successfully");
}

/* The reconnection fixture (SEP-1699). The suite POSTs this call, reads the SSE stream up to its
 * end, and resumes with GET + Last-Event-ID when the stream ended before the result.
 *
 * What it does now: it makes the call's response an SSE stream at once (a log message: the
 * stream then opens with the retry hint and the priming event for 2025-11-25 sessions) and
 * answers after a short pause, on the same connection.
 * What it is meant to do: end the connection after the priming event, with the call still
 * running, so that the client must resume to get the result. The handler API cannot ask for that
 * yet; when the core has a call for it (mcpd_ctx_close_stream, see "Conformance and interop" in
 * docs/ARCHITECTURE.md), it goes here, in place of the log message. */
static json_t *reconnection(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args, (void)ud;
    if (mcpd_ctx_close_stream(ctx) != 0)
        mcpd_ctx_log(ctx, "info", "test_reconnection", json_string(mcpd_ctx_last_error(ctx)));
    if (!mcpd_ctx_sleep_ms(ctx, 200))
        return mcpd_error_result("cancelled");
    return mcpd_text_result("Reconnection test completed successfully. If you received this, the "
                            "client properly reconnected after stream closure.");
}

/* The text of a sampling result: CreateMessageResult.content is one content block, or (from
 * 2025-11-25, with tools) an array of them. */
static const char *sampled_text(const json_t *r)
{
    const json_t *c = json_object_get(r, "content");
    if (json_is_array(c)) {
        size_t i;
        const json_t *item;
        json_array_foreach(c, i, item) {
            const char *t = json_string_value(json_object_get(item, "text"));
            if (t)
                return t;
        }
        return NULL;
    }
    return json_string_value(json_object_get(c, "text"));
}

static json_t *sampling(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ud;
    const char *prompt = json_string_value(json_object_get(args, "prompt"));
    json_t *params = json_pack("{s:[{s:s,s:{s:s,s:s}}],s:i}", "messages", "role", "user", "content",
                               "type", "text", "text", prompt, "maxTokens", 100);
    json_t *r = mcpd_ctx_sample(ctx, params, 0);
    if (!r)
        return mcpd_error_result("sampling failed: %s", mcpd_ctx_last_error(ctx));
    const char *text = sampled_text(r);
    json_t *out = mcpd_text_resultf("LLM response: %s", text ? text : "No response");
    json_decref(r);
    return out;
}

/* Elicits with `schema` (stolen) and reports "<prefix>action=A, content={...}". */
static json_t *elicit_and_report(mcpd_ctx_t *ctx, const char *message, json_t *schema,
                                 const char *prefix)
{
    json_t *r = mcpd_ctx_elicit(ctx, message, schema, 0);
    if (!r)
        return mcpd_error_result("elicitation failed: %s", mcpd_ctx_last_error(ctx));
    const char *action = json_string_value(json_object_get(r, "action"));
    char *content = compact(json_object_get(r, "content"));
    json_t *out = mcpd_text_resultf("%saction=%s, content=%s", prefix, action ? action : "?",
                                    content);
    free(content);
    json_decref(r);
    return out;
}

static json_t *elicitation(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ud;
    json_t *schema = json_pack("{s:s,s:{s:{s:s,s:s},s:{s:s,s:s}},s:[s,s]}", "type", "object",
                               "properties", "username", "type", "string", "description",
                               "User's response", "email", "type", "string", "description",
                               "User's email address", "required", "username", "email");
    return elicit_and_report(ctx, json_string_value(json_object_get(args, "message")), schema,
                             "User response: ");
}

static json_t *load_schema(const char *text)
{
    json_error_t e;
    return json_loads(text, 0, &e);
}

/* SEP-1034: a default value for every primitive type. */
static const char DEFAULTS_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"description\":\"User name\",\"default\":\"John Doe\"},"
    "\"age\":{\"type\":\"integer\",\"description\":\"User age\",\"default\":30},"
    "\"score\":{\"type\":\"number\",\"description\":\"User score\",\"default\":95.5},"
    "\"status\":{\"type\":\"string\",\"description\":\"User status\","
    "\"enum\":[\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
    "\"verified\":{\"type\":\"boolean\",\"description\":\"Verification status\",\"default\":true}"
    "}}";

static json_t *elicitation_defaults(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args, (void)ud;
    return elicit_and_report(ctx, "Please review and update the form fields with defaults",
                             load_schema(DEFAULTS_SCHEMA), "Elicitation completed: ");
}

/* SEP-1330: the five enum shapes of an elicitation schema. */
static const char ENUMS_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"untitledSingle\":{\"type\":\"string\",\"description\":\"Pick one option\","
    "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
    "\"titledSingle\":{\"type\":\"string\",\"description\":\"Pick one titled option\",\"oneOf\":["
    "{\"const\":\"value1\",\"title\":\"First Option\"},"
    "{\"const\":\"value2\",\"title\":\"Second Option\"},"
    "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
    "\"legacyEnum\":{\"type\":\"string\",\"description\":\"Pick one (legacy enumNames)\","
    "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
    "\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
    "\"untitledMulti\":{\"type\":\"array\",\"description\":\"Pick several options\","
    "\"items\":{\"type\":\"string\",\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
    "\"titledMulti\":{\"type\":\"array\",\"description\":\"Pick several titled options\","
    "\"items\":{\"anyOf\":["
    "{\"const\":\"value1\",\"title\":\"First Choice\"},"
    "{\"const\":\"value2\",\"title\":\"Second Choice\"},"
    "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}"
    "}}";

static json_t *elicitation_enums(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args, (void)ud;
    return elicit_and_report(ctx, "Please select options from the enum fields",
                             load_schema(ENUMS_SCHEMA), "Elicitation completed: ");
}

/* SEP-1613: the listing keeps $schema, $defs and additionalProperties as registered. */
static json_t *json_schema_2020_12(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)ud;
    char *s = compact(args);
    json_t *r = mcpd_text_resultf("Received arguments: %s", s);
    free(s);
    return r;
}

/* ---- resources ---- */

static json_t *contents_of(json_t *item)
{
    return json_pack("{s:[o]}", "contents", item);
}

static json_t *read_static_text(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *ud)
{
    (void)ctx, (void)vars, (void)ud;
    return contents_of(
        text_resource(uri, "text/plain", "This is the content of the static text resource."));
}

static json_t *read_static_binary(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *ud)
{
    (void)ctx, (void)vars, (void)ud;
    return contents_of(
        json_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType", "image/png", "blob", RED_PIXEL_PNG));
}

static json_t *read_template(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *ud)
{
    (void)ctx, (void)ud;
    const char *id = json_string_value(json_object_get(vars, "id"));
    if (!id)
        id = "";
    size_t n = strlen(id) + 32;
    char *data = malloc(n);
    if (!data)
        return NULL;
    snprintf(data, n, "Data for ID: %s", id);
    json_t *doc = json_pack("{s:s,s:b,s:s}", "id", id, "templateTest", 1, "data", data);
    free(data);
    char *text = compact(doc);
    json_decref(doc);
    json_t *r = contents_of(text_resource(uri, "application/json", text));
    free(text);
    return r;
}

static json_t *read_watched(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *ud)
{
    (void)ctx, (void)vars, (void)ud;
    return contents_of(text_resource(uri, "text/plain", "Watched resource content"));
}

/* ---- prompts ---- */

static json_t *user_message(json_t *content)
{
    return json_pack("{s:s,s:o}", "role", "user", "content", content);
}

static json_t *messages_of(json_t *list)
{
    return json_pack("{s:o}", "messages", list);
}

static json_t *simple_prompt(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)args, (void)ud;
    return messages_of(
        json_pack("[o]", user_message(mcpd_text_content("This is a simple prompt for testing."))));
}

static json_t *prompt_with_arguments(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)ud;
    /* required arguments are checked by the server before the handler runs */
    const char *a1 = json_string_value(json_object_get(args, "arg1"));
    const char *a2 = json_string_value(json_object_get(args, "arg2"));
    char *text = NULL;
    if (asprintf(&text, "Prompt with arguments: arg1='%s', arg2='%s'", a1 ? a1 : "", a2 ? a2 : "") <
        0) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    json_t *r = messages_of(json_pack("[o]", user_message(mcpd_text_content(text))));
    free(text);
    return r;
}

static json_t *prompt_with_embedded_resource(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)ud;
    const char *uri = json_string_value(json_object_get(args, "resourceUri"));
    if (!uri) {
        mcpd_ctx_set_error(ctx, MCPD_ERR_INVALID_PARAMS, "resourceUri must be a string");
        return NULL;
    }
    return messages_of(
        json_pack("[o,o]",
                  user_message(embedded(
                      text_resource(uri, "text/plain", "Embedded resource content for testing."))),
                  user_message(mcpd_text_content("Please process the embedded resource above."))));
}

static json_t *prompt_with_image(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx, (void)args, (void)ud;
    return messages_of(
        json_pack("[o,o]", user_message(image_content()),
                  user_message(mcpd_text_content("Please analyze the image above."))));
}

/* ---- completion ---- */

/* The candidates of `all` that start with `prefix`, as a JSON array. */
static json_t *matching(const char *const *all, const char *prefix)
{
    json_t *out = json_array();
    size_t n = prefix ? strlen(prefix) : 0;
    for (const char *const *p = all; *p; p++) {
        if (strncmp(*p, prefix ? prefix : "", n) == 0)
            json_array_append_new(out, json_string(*p));
    }
    return out;
}

static json_t *complete(mcpd_ctx_t *ctx, json_t *ref, const char *arg_name, const char *arg_value,
                        json_t *context_args, void *ud)
{
    (void)ctx, (void)context_args, (void)ud;
    static const char *const arg1[] = {"paris", "park", "party", "test", "testValue1", NULL};
    static const char *const arg2[] = {"world", "wonder", "test", "testValue2", NULL};
    static const char *const ids[] = {"1", "2", "3", "42", "123", NULL};
    const char *type = json_string_value(json_object_get(ref, "type"));
    if (!type)
        return NULL;
    if (strcmp(type, "ref/prompt") == 0) {
        const char *name = json_string_value(json_object_get(ref, "name"));
        if (name && strcmp(name, "test_prompt_with_arguments") == 0) {
            if (strcmp(arg_name, "arg1") == 0)
                return matching(arg1, arg_value);
            if (strcmp(arg_name, "arg2") == 0)
                return matching(arg2, arg_value);
        }
    } else if (strcmp(type, "ref/resource") == 0) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        if (uri && strcmp(uri, "test://template/{id}/data") == 0 && strcmp(arg_name, "id") == 0)
            return matching(ids, arg_value);
    }
    return NULL; /* nothing to suggest */
}

/* ---- registration ---- */

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static const char JSON_SCHEMA_2020_12[] =
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
    "\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\",\"properties\":{"
    "\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
    "\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"},"
    "\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},"
    "\"phone\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"
    "\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"
    "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},\"required\":[\"contactMethod\"]},"
    "\"then\":{\"required\":[\"phone\"]},\"else\":{\"required\":[\"email\"]},"
    "\"additionalProperties\":false}";

static int register_tools(mcpd_registry_t *reg)
{
    const mcpd_tool_def_t tools[] = {
        {.name = "test_simple_text",
         .description = "Returns one text item.",
         .input_schema = NO_ARGS,
         .handler = simple_text,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_image_content",
         .description = "Returns an image item (a 1x1 PNG).",
         .input_schema = NO_ARGS,
         .handler = image,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_audio_content",
         .description = "Returns an audio item (a short audio/wav).",
         .input_schema = NO_ARGS,
         .handler = audio,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_embedded_resource",
         .description = "Returns an embedded text resource.",
         .input_schema = NO_ARGS,
         .handler = embedded_resource,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_multiple_content_types",
         .description = "Returns text, image and embedded resource items in one result.",
         .input_schema = NO_ARGS,
         .handler = multiple_content_types,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_tool_with_logging",
         .description = "Sends three info log notifications 50 ms apart while it runs.",
         .input_schema = NO_ARGS,
         .handler = with_logging},
        {.name = "test_error_handling",
         .description = "Always fails: a tool result with isError true.",
         .input_schema = NO_ARGS,
         .handler = error_handling,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "test_tool_with_progress",
         .description =
             "Reports progress 0, 50 and 100 of 100, 50 ms apart (with a progressToken).",
         .input_schema = NO_ARGS,
         .handler = with_progress},
        {.name = "test_reconnection",
         .description = "SSE polling fixture (SEP-1699): answers on an SSE stream after a short "
                        "pause; a client that lost the stream resumes with Last-Event-ID.",
         .input_schema = NO_ARGS,
         .handler = reconnection},
        {.name = "test_sampling",
         .description = "Asks the client's model to answer `prompt` (sampling/createMessage) and "
                        "returns 'LLM response: ...'.",
         .input_schema =
             "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
             "\"description\":\"The prompt to send to the LLM\"}},\"required\":[\"prompt\"]}",
         .handler = sampling},
        {.name = "test_elicitation",
         .description = "Asks the user for a username and an email (elicitation/create) and "
                        "returns their answer.",
         .input_schema =
             "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\","
             "\"description\":\"The message to show the user\"}},\"required\":[\"message\"]}",
         .handler = elicitation},
        {.name = "test_elicitation_sep1034_defaults",
         .description = "Elicits a form whose string, integer, number, enum and boolean fields "
                        "have default values (SEP-1034).",
         .input_schema = NO_ARGS,
         .handler = elicitation_defaults},
        {.name = "test_elicitation_sep1330_enums",
         .description = "Elicits a form with the five enum shapes of SEP-1330.",
         .input_schema = NO_ARGS,
         .handler = elicitation_enums},
        {.name = "json_schema_2020_12_tool",
         .description = "Tool with JSON Schema 2020-12 features ($schema, $defs, "
                        "additionalProperties); echoes its arguments.",
         .input_schema = JSON_SCHEMA_2020_12,
         .handler = json_schema_2020_12,
         .flags = MCPD_TOOL_NONBLOCKING},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int rc = mcpd_register_tool(reg, &tools[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int register_resources(mcpd_registry_t *reg)
{
    const mcpd_resource_def_t resources[] = {
        {.uri = "test://static-text",
         .name = "static-text",
         .title = "Static text",
         .description = "A fixed text resource.",
         .mime_type = "text/plain",
         .read = read_static_text},
        {.uri = "test://static-binary",
         .name = "static-binary",
         .title = "Static binary",
         .description = "A fixed binary resource (a 1x1 PNG).",
         .mime_type = "image/png",
         .read = read_static_binary},
        {.uri_template = "test://template/{id}/data",
         .name = "template-data",
         .title = "Template data",
         .description = "JSON data for any id.",
         .mime_type = "application/json",
         .read = read_template},
        {.uri = "test://watched-resource",
         .name = "watched-resource",
         .title = "Watched resource",
         .description = "A resource clients may subscribe to.",
         .mime_type = "text/plain",
         .subscribable = true,
         .read = read_watched},
    };
    for (size_t i = 0; i < sizeof resources / sizeof resources[0]; i++) {
        int rc = mcpd_register_resource(reg, &resources[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int register_prompts(mcpd_registry_t *reg)
{
    const mcpd_prompt_def_t prompts[] = {
        {.name = "test_simple_prompt",
         .description = "A prompt without arguments.",
         .get = simple_prompt},
        {.name = "test_prompt_with_arguments",
         .description = "A prompt that quotes its two arguments.",
         .arguments =
             "[{\"name\":\"arg1\",\"description\":\"First test argument\",\"required\":true},"
             "{\"name\":\"arg2\",\"description\":\"Second test argument\",\"required\":true}]",
         .get = prompt_with_arguments},
        {.name = "test_prompt_with_embedded_resource",
         .description = "A prompt that embeds the resource named by resourceUri.",
         .arguments = "[{\"name\":\"resourceUri\",\"description\":\"URI of the resource to embed\","
                      "\"required\":true}]",
         .get = prompt_with_embedded_resource},
        {.name = "test_prompt_with_image",
         .description = "A prompt with an image.",
         .get = prompt_with_image},
    };
    for (size_t i = 0; i < sizeof prompts / sizeof prompts[0]; i++) {
        int rc = mcpd_register_prompt(reg, &prompts[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int toolset_conformance_register(mcpd_registry_t *reg)
{
    int rc = register_tools(reg);
    if (rc == 0)
        rc = register_resources(reg);
    if (rc == 0)
        rc = register_prompts(reg);
    if (rc == 0)
        rc = toolset_conformance_modern_register(reg);
    if (rc == 0)
        rc = toolset_conformance_tasks_register(reg);
    if (rc != 0)
        return rc;
    return mcpd_set_completion(reg, complete, NULL);
}
