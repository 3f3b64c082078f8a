/* The protocol layer's face to main: the catalogue, the table through which the actors reach
 * this layer, and the requestState key. Everything else in src/mcp/ runs on worker threads,
 * behind actor_ops_t (actor/worker.h). The HTTP thread has already checked the HTTP layer and
 * the JSON-RPC shape of every message; this layer decides what the messages mean. */
#ifndef MCPD_MCP_MCP_H
#define MCPD_MCP_MCP_H

#include "actor/actor.h"

#include "mcp/registry.h"

/* Main thread, before the workers start: the catalogue the methods serve (read-only from then
 * on), and the table through which the actors reach this layer (workers_start takes it). */
void mcp_init(const mcpd_registry_t *reg);
const actor_ops_t *mcp_actor_ops(void);
/* Main thread, at start with --modern: the requestState key from file (created with 32 random
 * bytes, mode 600, when missing) and the lifetime of a state. 0, or -1 after logging. */
int modern_state_key_init(const char *file, int64_t ttl_ms);

#endif
