/* Test plugin: the tool `stall {ms}` claims to be non-blocking but sleeps on the session's
 * worker, so requests queue up behind it. Used to fill a session's mailbox deterministically. */
#include <mcpactord/tool.h>

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

int mcpd_plugin_init(mcpd_registry_t *reg, int api_version)
{
    if (api_version != MCPD_API_VERSION)
        return -1;
    static const mcpd_tool_def_t def = {
        .name = "stall",
        .description = "Test only: blocks the session's worker for ms milliseconds.",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}}",
        .handler = stall,
        .flags = MCPD_TOOL_NONBLOCKING,
    };
    return mcpd_register_tool(reg, &def);
}
