/* Shared by the files of src/mcp (worker thread only): the catalogue, answering a call (with
 * the 2026-07-28 decorations applied in one place), the shared method dispatch, and the two
 * eras' entry points. */
#ifndef MCPD_MCP_INTERNAL_H
#define MCPD_MCP_INTERNAL_H

#include "mcp/mcp.h"
#include "mcp/state.h"
#include "wire/jsonrpc.h"

const mcpd_registry_t *mcp_reg(void);
json_t *mcp_server_info(void);
/* Answers call c with result (stolen). */
void mcp_answer(actor_t *a, call_t *c, json_t *result);
/* Answers call c with an error (data stolen, may be NULL). */
void mcp_answer_error(actor_t *a, call_t *c, int code, const char *msg, json_t *data);
/* resources/subscribe (on) and resources/unsubscribe: state.c. */
void mcp_subscribe(actor_t *a, call_t *c, json_t *params, bool on);
/* Answers call c as a refused turn answers (actor/refuse.h): 503 + Retry-After and a -32603
 * error with msg while the response has not started and answers c alone, else the error in
 * its place. For a write the store refused, or a read it failed: nothing was changed. */
void mcp_answer_unavailable(actor_t *a, call_t *c, const char *msg);
/* A method's handler: answers call c (now, or when its job ends); params borrowed (a handler
 * may take members out of it). */
typedef void mcp_method_fn(actor_t *a, call_t *c, json_t *params);
/* The handler of method m in an era (modern: 2026-07-28), or NULL where the method table says
 * the method does not exist in that era. */
mcp_method_fn *mcp_method_handler(stats_method_t m, bool modern);
/* Counts the request and runs its handler for the actor's era, or answers -32601. A session's
 * first initialize is served before (mcp_handle_initialize), and a 2026-07-28 call that may
 * answer input_required has read its requestState before (modern.c). */
void mcp_dispatch_request(actor_t *a, call_t *c, const jr_view_t *v);
void mcp_job_done(actor_t *a, job_t *j);
/* toolreq.c: a tool's server->client request (actor_ops_t.on_tool_request). */
void mcp_tool_request(actor_t *a, job_t *j, wmsg_t *m);

/* modern.c */
void mcp_handle_modern(worker_t *w, wmsg_t *m);
/* The handlers of the methods only 2026-07-28 has (tasks.c has the tasks methods'). */
void mcp_on_server_discover(actor_t *a, call_t *c, json_t *params);
void mcp_on_subscriptions_listen(actor_t *a, call_t *c, json_t *params);
/* resultType, serverInfo and the caching hints on a result of a 2026-07-28 request. For the
 * common result (an object with neither, from a method without hints) nothing is changed: the
 * shared text to add inside the result object is returned (mcp_decoration); else NULL. */
const char *modern_decorate(actor_t *a, call_t *c, json_t *result, size_t *extra_len);
/* "resultType":"complete","_meta":{serverInfo} as JSON members' text (built by mcp_init). */
const char *mcp_decoration(size_t *len);
/* initialize's result for session-era version p, as the members' text of its object,
 * NUL-terminated (built by mcp_init; the same for every session of that version). */
const char *mcp_initialize_result(const proto_t *p, size_t *len);
/* MRTR (2026-07-28 input requests). */
/* The call's handler left requests unanswered: the record of the exchange is written (or
 * moved to its next round) and the call answers input_required with a fresh requestState. */
void modern_input_required(actor_t *a, call_t *c, job_t *j);
/* The call completed: the record of its exchange (if any) is deleted. */
void modern_call_complete(actor_t *a);
/* The tool's x-mcp-header parameters against the request's Mcp-Param-* headers: NULL when
 * they agree, else the HeaderMismatch message (in why). */
const char *modern_check_params(const json_t *input_schema, const json_t *args,
                                const json_t *param_hdrs, char *why, size_t whylen);

/* rounds.c: what the last round of an exchange asked ("k": {key: method}, or a list of keys in
 * a record written before the methods were kept). */
/* A retry's answers so far (new reference or NULL): what the handler's requests return.
 * kept_only: only those of a verified exchange (its record's and the answers to what its last
 * round asked), none from a request without a requestState: what a task stores. */
json_t *modern_answers(actor_t *a, bool kept_only);
/* The "k" of a round whose handler left input_requests ({key: {method, params}}) unanswered
 * (new reference). */
json_t *modern_round_asked(const json_t *input_requests);
/* Adds to answers those of a retry's inputResponses (ir) that its record's last round asked
 * for (keys, its "k"; a record from before keys were kept: all): the others are ignored, so
 * they are never stored. */
void modern_take_asked(json_t *answers, json_t *ir, const json_t *keys);
/* True when the call continues a verified exchange and answers every request of its last
 * round (a MCPD_TOOL_TASK_AFTER_INPUT tool then becomes a task). */
bool modern_round_answered(actor_t *a);
/* NULL when each answer to the last round has its method's result shape (or the method is not
 * known), else the -32602 message a plain call's run gives (in why). */
const char *modern_round_problem(actor_t *a, char *why, size_t whylen);

/* methods.c: a tool job for a (not started; the caller submits it). args stolen. */
job_t *mcp_tool_job(actor_t *a, const tool_t *t, json_t *args);

/* tasks.c: the tasks extension (SEP-2663) on the 2026-07-28 path. */
/* True when the request's actor declares the extension in its clientCapabilities. */
bool tasks_declared(const actor_t *a);
/* Answers c with -32021 and data.requiredCapabilities naming the extension. */
void tasks_answer_missing_extension(actor_t *a, call_t *c);
/* The tools/call c of a (tool t, job j not started) becomes a task when it should: the call is
 * answered with a CreateTaskResult and j runs for the task. false when it runs as usual. */
bool tasks_maybe_create(actor_t *a, call_t *c, const tool_t *t, job_t *j);
/* tasks/get, tasks/update, tasks/cancel. */
void tasks_handle_request(actor_t *a, call_t *c, json_t *params);
/* A task's run ended (a->kind == ACTOR_TASK). */
void tasks_job_done(actor_t *task, job_t *j);
/* The DetailedTask of a task's state (pure; new object): the Task fields, and inputRequests,
 * result (borrowed, may be NULL) or error by status. */
json_t *tasks_detailed(const char *task_id, const json_t *state, const json_t *result);

#endif
