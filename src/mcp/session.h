/* The MCP methods of a session: worker thread only.
 * The HTTP thread has already checked the HTTP layer and the JSON-RPC shape of every message;
 * this layer decides what the messages mean for the session. */
#ifndef MCPD_MCP_SESSION_H
#define MCPD_MCP_SESSION_H

#include "actor/actor.h"

/* A POST that carries `initialize` and no session id: m->sid is the new session's id. */
void mcp_handle_initialize(worker_t *w, wmsg_t *m);
/* Any other POST to a live session. */
void mcp_handle_post(actor_t *a, wmsg_t *m);
/* A job finished (or was cancelled): answer its call if it still has one. */
void mcp_job_done(actor_t *a, job_t *j);

#endif
