/* The gateway: stdio MCP servers served on /mcp/NAME (--upstream NAME=COMMAND), one upstream
 * process per session (docs/design/gateway.md). */
#ifndef MCPD_GATEWAY_GATEWAY_H
#define MCPD_GATEWAY_GATEWAY_H

#include "actor/worker.h"

#include <jansson.h>
#include <stddef.h>

/* Main thread, at start: splits every --upstream COMMAND (upstream_split). 0, or 2 after
 * logging which one is wrong and why (a bad flag). */
int gateway_setup(void);
/* Main thread, at the end: frees what gateway_setup made. */
void gateway_free(void);
/* The argv of upstream i (NULL-terminated; its name is g_cfg.upstream_names[i]). */
char *const *gateway_argv(int i);

/* Worker threads (session.c, pool.c): what a request answered by msg, a response of upstream
 * `name` with an id the gateway never sent, gets as its -32603 message (the id and the
 * upstream's error message, if any, shortened). */
void gateway_bad_id_why(const char *name, const json_t *msg, char *out, size_t n);

/* The actor ops of the process: the gateway's sessions (a->upstream != 0) are handled here
 * (src/gateway/session.c), everything else by `inner` (mcp_actor_ops()). Main thread, once,
 * before workers_start. */
const actor_ops_t *gateway_actor_ops(const actor_ops_t *inner);
/* Main thread, after upstream_kill_all: frees the sessions whose process was still ending. */
void gateway_free_detached(void);

#endif
