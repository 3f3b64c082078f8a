/* Threads: main thread registers; handlers on the tool pool threads (echo and add inline on the
 * session's worker thread). */
/* The demo toolset (--toolset demo). Handlers run on the tool pool (echo and add inline).
 * Names and behaviour are relied on by the tests, the README and mcpbench. */
#include <mcpactord/tool.h>

#include <errno.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/toolsets.h"

/* True when v is exactly the string s: json_string_value alone ends at a U+0000. */
static bool str_is(const json_t *v, const char *s)
{
    size_t n = strlen(s);
    return json_is_string(v) && json_string_length(v) == n &&
           memcmp(json_string_value(v), s, n) == 0;
}

static json_t *echo(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx;
    (void)ud;
    json_t *text = json_object_get(args, "text"); /* whole, U+0000 included */
    return mcpd_text_resultn(json_string_value(text), json_string_length(text));
}

static json_t *add(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx;
    (void)ud;
    json_t *ja = json_object_get(args, "a"), *jb = json_object_get(args, "b");
    long long isum;
    /* two integers add exactly while the sum fits in 64 bits; past it, as doubles (a signed
     * overflow is undefined, and wrapped to a sum of the wrong sign) */
    if (json_is_integer(ja) && json_is_integer(jb) &&
        !__builtin_add_overflow((long long)json_integer_value(ja),
                                (long long)json_integer_value(jb), &isum))
        return mcpd_text_resultf("%lld", isum);
    double sum = json_number_value(ja) + json_number_value(jb);
    if (!isfinite(sum))
        return mcpd_error_result("the sum of %.17g and %.17g is beyond the largest double",
                                 json_number_value(ja), json_number_value(jb));
    return mcpd_text_resultf("%.17g", sum);
}

static json_t *slow(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ud;
    double seconds = json_number_value(json_object_get(args, "seconds"));
    json_t *st = json_object_get(args, "steps");
    long steps = st ? (long)json_integer_value(st) : 5;
    long step_ms = steps > 0 ? (long)(seconds * 1000.0 / (double)steps) : (long)(seconds * 1000.0);
    long done = 0;
    for (long i = 1; i <= steps; i++) {
        if (!mcpd_ctx_sleep_ms(ctx, step_ms))
            return mcpd_error_result("cancelled after %ld of %ld steps", done, steps);
        done = i;
        char msg[64];
        snprintf(msg, sizeof msg, "step %ld of %ld", i, steps);
        mcpd_ctx_progress(ctx, (double)i, (double)steps, msg);
    }
    if (steps <= 0 && !mcpd_ctx_sleep_ms(ctx, step_ms))
        return mcpd_error_result("cancelled");
    return mcpd_text_resultf("done after %ld steps", done);
}

typedef struct counter_op {
    json_int_t by;
    bool overflow; /* set by counter_add, read by the handler once the update is answered */
} counter_op_t;

static json_t *counter_add(json_t *current, void *arg)
{
    counter_op_t *op = arg;
    json_int_t v = json_is_integer(current) ? json_integer_value(current) : 0, sum;
    if (__builtin_add_overflow(v, op->by, &sum)) {
        /* signed overflow would wrap (2^63-1 + 2^63-1 = -2): keep the value, report it */
        op->overflow = true;
        return json_incref(current);
    }
    return json_integer(sum);
}

static json_t *counter(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ud;
    json_t *byj = json_object_get(args, "by");
    counter_op_t op = {byj ? json_integer_value(byj) : 1, false};
    /* behind a handle (new_counter) when given, else the session's own counter */
    const char *handle = json_string_value(json_object_get(args, "handle"));
    json_t *v = handle ? mcpd_ctx_handle_state_update(ctx, handle, "counter", counter_add, &op)
                       : mcpd_ctx_state_update(ctx, "counter", counter_add, &op);
    if (!v)
        return NULL; /* the error is set */
    long long now = (long long)json_integer_value(v);
    json_decref(v);
    if (op.overflow)
        return mcpd_error_result("counter: adding %lld to %lld would overflow a 64-bit integer; "
                                 "the counter stays at %lld",
                                 (long long)op.by, now, now);
    return mcpd_text_resultf("%lld", now);
}

static json_t *new_counter(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    char h[MCPD_HANDLE_LEN + 1];
    int rc = mcpd_ctx_handle_new(ctx, h);
    if (rc == -EDQUOT) /* a limit: the model can act on it (use a handle it has, retry later) */
        return mcpd_error_result("new_counter: %s", mcpd_ctx_last_error(ctx));
    if (rc != 0)
        return NULL; /* the error is set */
    json_t *r = mcpd_text_resultf("%s", h);
    json_object_set_new(r, "structuredContent", json_pack("{s:s}", "handle", h));
    return r;
}

/* "Hello, NAME!" with the whole name, U+0000 included. */
static json_t *greeting(const char *name, size_t len)
{
    char *text = malloc(len + 9);
    if (!text)
        return mcpd_error_result("out of memory");
    memcpy(text, "Hello, ", 7);
    memcpy(text + 7, name, len);
    text[7 + len] = '!';
    json_t *r = mcpd_text_resultn(text, len + 8);
    free(text);
    return r;
}

static json_t *elicit_name(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)args;
    (void)ud;
    json_t *schema = json_pack("{s:s,s:{s:{s:s,s:s}},s:[s]}", "type", "object", "properties",
                               "name", "type", "string", "description", "Your name", "required",
                               "name");
    json_t *r = mcpd_ctx_elicit(ctx, "What is your name?", schema, 0);
    if (!r)
        return mcpd_error_result("elicitation failed: %s", mcpd_ctx_last_error(ctx));
    json_t *name = json_object_get(json_object_get(r, "content"), "name");
    json_t *out;
    if (str_is(json_object_get(r, "action"), "accept") && json_is_string(name))
        out = greeting(json_string_value(name), json_string_length(name));
    else
        out = mcpd_text_result("declined");
    json_decref(r);
    return out;
}

static json_t *notify(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ud;
    long count = (long)json_integer_value(json_object_get(args, "count"));
    bool session = str_is(json_object_get(args, "target"), "session");
    for (long i = 1; i <= count; i++) {
        /* each message is built whole and handed over: nothing of it stays on this thread */
        json_t *data = json_pack("{s:I,s:I}", "n", (json_int_t)i, "of", (json_int_t)count);
        if (session)
            mcpd_ctx_notify(ctx, MCPD_TARGET_SESSION, "notifications/message",
                            json_pack("{s:s,s:s,s:o}", "level", "info", "logger", "notify", "data",
                                      data));
        else
            mcpd_ctx_log(ctx, "info", "notify", data);
    }
    return mcpd_text_resultf("sent %ld", count);
}

int toolset_demo_register(mcpd_registry_t *reg)
{
    const mcpd_tool_def_t tools[] = {
        {.name = "echo",
         .description = "Returns its text argument unchanged.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
                         "\"required\":[\"text\"]}",
         .handler = echo,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "add",
         .description = "Adds two numbers.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
                         "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"]}",
         .handler = add,
         .flags = MCPD_TOOL_NONBLOCKING},
        {.name = "slow",
         .description = "Sends `steps` progress notifications spread over `seconds`, then "
                        "returns 'done after N steps'.",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"number\","
                         "\"minimum\":0,\"maximum\":3600},\"steps\":{\"type\":\"integer\","
                         "\"minimum\":0,\"maximum\":10000}},\"required\":[\"seconds\"]}",
         .handler = slow},
        {.name = "counter",
         .description = "Adds `by` (default 1) to a durable counter and returns the new value: "
                        "the one behind `handle` (from new_counter) when given, else the "
                        "session's own (the session era only).",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"by\":{\"type\":\"integer\"},"
                         "\"handle\":{\"type\":\"string\",\"description\":\"A counter from "
                         "new_counter\",\"x-mcp-header\":\"Handle\"}}}",
         .handler = counter},
        {.name = "new_counter",
         .description = "Makes a durable counter (a state handle) and returns its handle, for "
                        "counter's `handle` argument; it is deleted after --handle-ttl unused.",
         .input_schema = "{\"type\":\"object\",\"properties\":{}}",
         .output_schema = "{\"type\":\"object\",\"properties\":{\"handle\":{\"type\":\"string\"}},"
                          "\"required\":[\"handle\"]}",
         .handler = new_counter},
        {.name = "elicit_name",
         .description = "Asks the user for their name (elicitation) and greets them.",
         .input_schema = "{\"type\":\"object\",\"properties\":{}}",
         .handler = elicit_name},
        {.name = "notify",
         .description = "Sends `count` log notifications, tied to this call (target "
                        "'request') or session-level (target 'session').",
         .input_schema = "{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\","
                         "\"minimum\":0,\"maximum\":100000},\"target\":{\"type\":\"string\","
                         "\"enum\":[\"request\",\"session\"]}},\"required\":[\"count\"]}",
         .handler = notify},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int rc = mcpd_register_tool(reg, &tools[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}
