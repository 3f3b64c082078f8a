/* Routing: which session, task or record a request belongs to, hence which shard (the node, in a
 * cluster) and which worker serve it, from its headers and its parsed view. Pure functions,
 * any thread.
 *
 * What it does not know: which shards this node owns (core/shard.h, global state the caller
 * asks), how many workers there are (actor/worker.h hashes the key's SESSION_ROUTE_LEN
 * prefix), and what a refusal says (http/endpoint.c writes the replies). tools/mcpd-cluster
 * writes the same rule as HAProxy configuration; tests/unit/wire/route_cases.json holds the
 * two to one table of cases. */
#ifndef MCPD_WIRE_ROUTE_H
#define MCPD_WIRE_ROUTE_H

#include <jansson.h>
#include <stdbool.h>

#include "core/util.h"
#include "wire/jsonrpc.h"

typedef enum {
    ROUTE_REFUSED = 0, /* err says why; the request goes nowhere */
    ROUTE_SESSION,     /* session era: the session Mcp-Session-Id names (key) */
    ROUTE_NEW_SESSION, /* initialize: a new id, minted in a shard this node owns (any worker) */
    ROUTE_STATELESS,   /* 2026-07-28, naming no task or record: any worker (a fresh id) */
    ROUTE_TASK,        /* 2026-07-28 tasks/get|update|cancel: the worker of the task (key) */
    ROUTE_RECORD,      /* 2026-07-28 retry with a requestState: the worker of its record (key) */
} route_kind_t;

/* Why a request cannot be routed (each is a fixed HTTP answer, written by the caller). */
typedef enum {
    ROUTE_OK = 0,
    ROUTE_ERR_NO_SESSION,      /* 400: a session-era request without Mcp-Session-Id */
    ROUTE_ERR_BAD_SESSION,     /* 400: Mcp-Session-Id is not 1..256 visible ASCII */
    ROUTE_ERR_UNKNOWN_SESSION, /* 404: Mcp-Session-Id is not an id this server mints */
    ROUTE_ERR_INIT_IN_SESSION, /* 400: initialize came with Mcp-Session-Id (the two conflict) */
    ROUTE_ERR_SESSIONLESS,     /* 405: GET or DELETE without a session while 2026-07-28 is on */
} route_err_t;

typedef enum { ROUTE_POST, ROUTE_GET, ROUTE_DELETE } route_verb_t;

/* What routing reads of a request; every pointer borrowed, NULL when absent. */
typedef struct route_in {
    route_verb_t verb;
    bool stateless_on;      /* 2026-07-28 is served (g_cfg.modern) */
    const char *session_id; /* Mcp-Session-Id */
    const char *version;    /* MCP-Protocol-Version */
    const json_t *body;     /* POST: the parsed body, an object or a batch */
    const jr_view_t *view;  /* POST: a single message's members (all NULL for a batch) */
    bool is_init;           /* POST: the body is one initialize request */
} route_in_t;

typedef struct route {
    route_kind_t kind;
    route_err_t err;              /* ROUTE_OK unless kind is ROUTE_REFUSED */
    char key[SESSION_ID_LEN + 1]; /* SESSION, TASK, RECORD: the id that picks the shard and
                                        the worker (32 lowercase hex); "" otherwise */
    const char *handle;           /* STATELESS, TASK, RECORD: a state handle (32 hex, from
                                        Mcp-Param-Handle) whose shard must be served too; it
                                        picks the node before key does, never the worker */
} route_t;

/* True when a POST takes the 2026-07-28 path (route_request's ROUTE_STATELESS): 2026-07-28 is
 * on, no Mcp-Session-Id, the body claims the revision and is not an initialize carrying
 * params.protocolVersion. Usable before the body's checks (is_init: its method is
 * initialize). */
bool route_takes_stateless(const route_in_t *in);

/* The era and the session decision. A POST must have passed the body's checks (is_init is
 * known, a batch holds no initialize). ROUTE_STATELESS here means the request takes the
 * 2026-07-28 path: route_stateless names its task or record once its metadata holds (so a
 * refused request never decodes a requestState). */
void route_request(const route_in_t *in, route_t *r);

/* A 2026-07-28 request (r from route_request, kind ROUTE_STATELESS): a tasks/ method goes by
 * params.taskId (a request about a task goes by the task, whatever else it carries; a taskId
 * that is not an id routes nowhere in particular), else a params.requestState whose payload
 * names a record goes by the record, else any worker. handle: the Mcp-Param-Handle value. */
void route_stateless(const jr_view_t *v, const char *handle, route_t *r);

/* The id whose shard picks the node (what HAProxy's map looks up): the state handle, else the
 * key; NULL when any node serves the request (a new session, a stateless one, a refusal). */
const char *route_node_id(const route_t *r);

/* What the key of a request of this kind is, for messages: "session", "task", "input request". */
const char *route_key_name(route_kind_t kind);

#endif
