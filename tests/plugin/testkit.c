/* Test plugin (tests only; worker and tool-pool threads as the tool API says):
 *   stall {ms}                  claims to be non-blocking but sleeps on the session's worker, so
 *                               requests queue up behind it (fills a mailbox deterministically);
 *   session_request {method}    sends a session-level server->client request (no related
 *                               request) and returns the client's result as JSON text, or an
 *                               isError result saying why it could not be routed. */
#include <mcpactord/tool.h>

#include <stdlib.h>
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
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        int rc = mcpd_register_tool(reg, &defs[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}
