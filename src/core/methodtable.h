/* The MCP methods, once. Pure data and a lookup, any thread.
 *
 * Several parts of the server need the list of JSON-RPC methods: the per-method counters of
 * /stats and /metrics (core/stats.h), the 2026-07-28 rules the HTTP thread applies before a
 * worker sees a request (which methods the revision has, which it removed, what Mcp-Name
 * mirrors: wire/stateless.c), and the dispatch to a handler in each era (mcp/methods.c). They
 * are all made from MCP_METHODS below, so a method cannot be counted and not dispatched, or
 * dispatched and refused by the header checks.
 *
 * The row's position is its stats_method_t value: the order of /stats and /metrics, and a
 * number that requestState tokens and input-request records carry (mcp/modern.c). Add a row
 * at the end of the methods (before the three slots that are not methods); never reorder.
 *
 * What this header does not know: what a method does. The handler of row `id` is the function
 * mcp_on_<id> of src/mcp/ (bound there by expanding this list); a row that names an era
 * without a handler does not compile. */
#ifndef MCPD_CORE_METHODTABLE_H
#define MCPD_CORE_METHODTABLE_H

#include <stddef.h>

/* X(id, name, eras, removed_in, target, flags), one row per method:
 *   id          the C name: the stats slot SM_<id>, the handler mcp_on_<id>
 *   name        the JSON-RPC method
 *   eras        SESSION (2024-11-05 to 2025-11-25: initialize and Mcp-Session-Id), MODERN
 *               (2026-07-28, stateless), or BOTH: where the method exists
 *   removed_in  the protocol version that removed it (a 2026-07-28 request for it is told so),
 *               or NULL
 *   target      the params member that names what the call acts on: the Mcp-Name header
 *               mirrors it (SEP-2243, SEP-2663) and a requestState binds it; NULL for none
 *   flags       METHOD_INPUT: a 2026-07-28 call may answer input_required (SEP-2322);
 *               METHOD_CACHE_HINTS: a 2026-07-28 result carries ttlMs and cacheScope */
#define MCP_METHODS(X)                                                                            \
    X(initialize, "initialize", SESSION, "2026-07-28", NULL, 0)                                   \
    X(ping, "ping", SESSION, "2026-07-28", NULL, 0)                                               \
    X(tools_list, "tools/list", BOTH, NULL, NULL, METHOD_CACHE_HINTS)                             \
    X(tools_call, "tools/call", BOTH, NULL, "name", METHOD_INPUT)                                 \
    X(logging_setLevel, "logging/setLevel", SESSION, "2026-07-28", NULL, 0)                       \
    X(resources_list, "resources/list", BOTH, NULL, NULL, METHOD_CACHE_HINTS)                     \
    X(resources_read, "resources/read", BOTH, NULL, "uri", METHOD_INPUT | METHOD_CACHE_HINTS)     \
    X(resources_templates_list, "resources/templates/list", BOTH, NULL, NULL, METHOD_CACHE_HINTS) \
    X(resources_subscribe, "resources/subscribe", SESSION, "2026-07-28", NULL, 0)                 \
    X(resources_unsubscribe, "resources/unsubscribe", SESSION, "2026-07-28", NULL, 0)             \
    X(prompts_list, "prompts/list", BOTH, NULL, NULL, METHOD_CACHE_HINTS)                         \
    X(prompts_get, "prompts/get", BOTH, NULL, "name", METHOD_INPUT)                               \
    X(completion_complete, "completion/complete", BOTH, NULL, NULL, 0)                            \
    X(server_discover, "server/discover", MODERN, NULL, NULL, METHOD_CACHE_HINTS)                 \
    X(subscriptions_listen, "subscriptions/listen", MODERN, NULL, NULL, 0)                        \
    /* the tasks extension (SEP-2663); tasks/result and tasks/list are not methods of it */       \
    X(tasks_get, "tasks/get", MODERN, NULL, "taskId", 0)                                          \
    X(tasks_update, "tasks/update", MODERN, NULL, "taskId", 0)                                    \
    X(tasks_cancel, "tasks/cancel", MODERN, NULL, "taskId", 0)

/* The eras a row names, as bits (METHOD_ERAS_##eras). */
enum { METHOD_ERA_SESSION = 1, METHOD_ERA_MODERN = 2 };
#define METHOD_ERAS_SESSION METHOD_ERA_SESSION
#define METHOD_ERAS_MODERN METHOD_ERA_MODERN
#define METHOD_ERAS_BOTH (METHOD_ERA_SESSION | METHOD_ERA_MODERN)

enum { METHOD_INPUT = 1, METHOD_CACHE_HINTS = 2 };

/* A method's slot, and the three slots of messages that are not a known method. The enum is
 * also the index of the per-method counters (core/stats.h), hence its name. */
typedef enum {
#define X(id, name, eras, removed_in, target, flags) SM_##id,
    MCP_METHODS(X)
#undef X
        SM_notification, /* any notifications/... */
    SM_response,         /* a client's answer to a server request */
    SM_other,            /* a method that is none of the above */
    SM__COUNT
} stats_method_t;

/* A row of the table, for the code that reads its columns at run time. */
typedef struct method_rule {
    const char *name;       /* the method; for the last three slots, the counter's name */
    const char *removed_in; /* or NULL */
    const char *target;     /* or NULL */
    unsigned char eras;     /* METHOD_ERA_* bits; 0 for the slots that are not methods */
    unsigned char flags;    /* METHOD_INPUT, METHOD_CACHE_HINTS */
} method_rule_t;

extern const method_rule_t method_table[SM__COUNT];

static inline const method_rule_t *method_rule(stats_method_t m)
{
    return &method_table[m];
}

/* The slot of a method name: SM_notification for notifications/..., SM_other for a name the
 * table does not hold and for NULL (a name that holds U+0000, see jsonrpc_cstr). A length
 * compare then one fixed-size compare per row: no string is compared twice. */
stats_method_t stats_method_of(const char *method);
/* The same for a name of len bytes (NUL-terminated, none inside), without measuring it. */
stats_method_t stats_method_of_n(const char *method, size_t len);
/* The name /stats and /metrics give slot m. */
const char *stats_method_name(stats_method_t m);

#endif
