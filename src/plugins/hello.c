/* Threads: main thread (mcpd_plugin_init); the tool's handler on the tool pool threads. */
/* Example plugin: `--plugin libmcpd_hello.so` adds the tool `greet`.
 * Build your own the same way: include <mcpactord/tool.h>, export mcpd_plugin_init, link
 * against jansson, and let the server resolve the mcpd_* symbols at load time. */
#include <mcpactord/tool.h>

static json_t *add_one(json_t *current, void *arg)
{
    (void)arg;
    return json_integer(json_is_integer(current) ? json_integer_value(current) + 1 : 1);
}

static json_t *greet(mcpd_ctx_t *ctx, json_t *args, void *userdata)
{
    const char *greeting = userdata;
    const char *name = json_string_value(json_object_get(args, "name"));
    /* durable per-session state: how many greetings this session has had */
    json_t *n = mcpd_ctx_state_update(ctx, "hello.greetings", add_one, NULL);
    if (!n)
        return NULL;
    json_t *r = mcpd_text_resultf("%s, %s! (greeting #%lld in this session)", greeting, name,
                                  (long long)json_integer_value(n));
    json_decref(n);
    return r;
}

int mcpd_plugin_init(mcpd_registry_t *reg, int api_version)
{
    if (api_version != MCPD_API_VERSION)
        return -1;
    static const mcpd_tool_def_t def = {
        .name = "greet",
        .description = "Greets someone by name and counts greetings per session (example plugin).",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
                        "\"required\":[\"name\"]}",
        .handler = greet,
        .userdata = "Hello",
    };
    return mcpd_register_tool(reg, &def);
}
