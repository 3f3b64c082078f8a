/* The protocol layer's state of an actor (actor_t.ps): what the MCP methods keep beyond what the
 * actor layer knows, one typed member per thing, grouped by the kind of actor (ACTOR_*) that
 * owns it. The actor layer sees only the pointer: it frees the state, stores its persisted part
 * and reads it back through actor_ops_t (worker.h), which mcp/session.c fills from here.
 * Worker thread only.
 *
 * A session has none until it first needs one (logging/setLevel, resources/subscribe), so an
 * ordinary session costs no second allocation; a modern request's actor gets one when it keeps
 * anything (its Mcp-Param-* headers, a call's first-round params, a log level, a listen filter);
 * a record and a task always have one. Absent, every member reads as its default.
 */
#ifndef MCPD_MCP_STATE_H
#define MCPD_MCP_STATE_H

#include <jansson.h>

#include "actor/actor.h"

struct proto_state {
    /* ACTOR_SESSION (logging/setLevel) and ACTOR_REQUEST (_meta's log level): index of the
     * lowest level sent (log_level_index), -1 = every level; stored as "ll" */
    int log_level;
    /* ACTOR_SESSION: {uri: true} of resources/subscribe, NULL = none; stored as "sub" */
    json_t *subscriptions;
    union {
        struct {                   /* ACTOR_REQUEST: one 2026-07-28 request, never stored */
            json_t *param_hdrs;    /* the request's Mcp-Param-* headers (raw), NULL = none */
            json_t *bound;         /* [target, arguments] of a first round of a call (its mrtr is
                                   made from them if it asks for input) */
            json_t *mrtr;          /* the input-request exchange of its call */
            json_t *listen_id;     /* serving subscriptions/listen: the request id (its
                                   subscriptionId) ... */
            json_t *listen_filter; /* ... and the honoured SubscriptionFilter */
        } modern;
        struct {         /* ACTOR_RECORD */
            json_t *rec; /* what an input-request exchange keeps (stored as "rec"; the
                            record's alarm is its expiry) */
        } record;
        struct {            /* ACTOR_TASK */
            json_t *status; /* the task's status and what its runs need (stored as "task";
                               its alarm is its TTL) */
            json_t *result; /* a cache of its stored result (not in the metadata) */
        } task;
    };
};

/* a's state, made at first use with its kind's defaults (never NULL). */
struct proto_state *mcp_state(actor_t *a);

/* Replaces *slot with v (taken; NULL clears it). */
static inline void mcp_state_set(json_t **slot, json_t *v)
{
    json_t *old = *slot;
    *slot = v;
    json_decref(old);
}

/* Reads (borrowed, NULL when absent), for the kind named. */
static inline json_t *mcp_modern_param_hdrs(const actor_t *a)
{
    return a->ps && a->kind == ACTOR_REQUEST ? a->ps->modern.param_hdrs : NULL;
}
static inline json_t *mcp_modern_bound(const actor_t *a)
{
    return a->ps && a->kind == ACTOR_REQUEST ? a->ps->modern.bound : NULL;
}
static inline json_t *mcp_modern_mrtr(const actor_t *a)
{
    return a->ps && a->kind == ACTOR_REQUEST ? a->ps->modern.mrtr : NULL;
}
static inline json_t *mcp_record_rec(const actor_t *a)
{
    return a->ps && a->kind == ACTOR_RECORD ? a->ps->record.rec : NULL;
}
static inline json_t *mcp_task_status(const actor_t *a)
{
    return a->ps && a->kind == ACTOR_TASK ? a->ps->task.status : NULL;
}
static inline json_t *mcp_task_result(const actor_t *a)
{
    return a->ps && a->kind == ACTOR_TASK ? a->ps->task.result : NULL;
}
/* A session's resources/subscribe set, NULL when it has none. */
static inline json_t *mcp_subscriptions(const actor_t *a)
{
    return a->ps ? a->ps->subscriptions : NULL;
}
/* The log threshold (log_level_index), -1 = every level. Without a state: a session sends
 * every level, a modern request none (8: its _meta named no level). */
static inline int mcp_log_level(const actor_t *a)
{
    return a->ps ? a->ps->log_level : a->kind == ACTOR_REQUEST ? 8 : -1;
}

/* Index of a logging level name (debug=0 .. emergency=7), -1 when unknown. */
int log_level_index(const char *level);

/* The actor_ops_t entries (mcp/session.c puts them in its table). */
void mcp_state_free(actor_t *a);
void mcp_meta_put(const actor_t *a, jobj_t *meta, int at);
void mcp_meta_load(actor_t *a, const json_t *meta);
bool mcp_log_enabled(const actor_t *a, const char *level);
void mcp_on_broadcast(actor_t *a, wmsg_t *m);
void mcp_end_listen(actor_t *a);

#endif
