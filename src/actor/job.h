/* A job: one handler invocation (tool call, resource read, prompt get, completion). The job is
 * the handler's mcpd_ctx_t.
 *
 * Ownership and threads:
 *   - the actor (worker thread) creates the job, hands it to the tool pool (or runs it inline
 *     for MCPD_TOOL_NONBLOCKING tools), and frees it after WM_TOOL_DONE;
 *   - the tool thread owns `args`, `result` and the error fields while the handler runs, and
 *     never touches the job after pushing WM_TOOL_DONE;
 *   - `actor` and `call` are touched only by the worker (NULL once the session is gone);
 *   - `cancelled` and the reply slot (mu/cv) are shared: the actor answers a waiting handler
 *     by filling the slot under mu and signalling cv.
 */
#ifndef MCPD_ACTOR_JOB_H
#define MCPD_ACTOR_JOB_H

#include <mcpactord/tool.h>

#include <pthread.h>
#include <stdatomic.h>

#include "core/principal.h"
#include "core/util.h"
#include "wire/proto.h"

struct worker;
struct actor;
struct call;

typedef enum { JOB_TOOL, JOB_RESOURCE, JOB_PROMPT, JOB_COMPLETE } job_kind_t;

struct mcpd_ctx;
/* What the job runs: the protocol layer (mcp/) picks it; the actor only calls it. Returns the
 * result (new reference) or NULL after mcpd_ctx_set_error. */
typedef json_t *(*job_fn)(struct mcpd_ctx *j);

typedef enum { STATE_GET, STATE_PUT, STATE_UPDATE, HANDLE_NEW, HANDLE_DELETE } state_op_t;

/* What a handler's error is, beyond its JSON-RPC code: the protocol layer answers by it. */
typedef enum {
    JERR_OTHER = 0,
    /* the call's input cannot work (a malformed or unknown state handle, session state in a
     * request that has no session): a tools/call whose handler fails with it is answered with
     * a tool result with isError, which the model can act on, not a JSON-RPC error */
    JERR_INPUT,
    /* the store refused the write the handler waited for: answered as a refused turn is (503 +
     * Retry-After while the response has not started; refuse.h) */
    JERR_STORAGE,
} job_err_t;

struct mcpd_ctx {
    struct mcpd_ctx *pool_next; /* tool pool queue link (under the pool's mutex) */
    bool pool_waiting;          /* in its principal's pool queue (the pool's mutex) */
    bool pool_skip;             /* cancelled while it waited there: the handler is not run */
    job_kind_t kind;
    /* fixed at creation */
    struct worker *w;
    char sid[SESSION_ID_LEN + 1];
    const proto_t *proto;
    job_fn run;         /* set by its creator before it starts */
    const void *target; /* what run runs (a tool, a resource...), the creator's business */
    char *uri;
    json_t *args;           /* tool arguments, prompt arguments, template vars */
    json_t *extra;          /* completion: {ref, argument, context} */
    json_t *progress_token; /* NULL when the call has none */
    bool inline_mode;
    bool modern;          /* a 2026-07-28 call: requests become input requests (MRTR) */
    unsigned client_caps; /* JOB_CAP_* the client declared */
    char principal[64];   /* the auth token name of the call (handles belong to it) */
    principal_t *fair;    /* reference: whose share of the tool pool it runs in (pool.c) */
    principal_t *owner;   /* reference: who a handle it makes is counted for (the call's
                               client: core/principal.h), NULL when not known */
    atomic_bool cancelled;
    /* cancelled because its shard moves away (job_cancel_moving): one that never ran is
     * answered with the retry error (-32010), as a request that reaches a moved shard is */
    atomic_bool moving;
    /* messages sent (progress, logs, notifications) that the worker has not handled yet: a
     * handler that sends faster than its session stores them waits (JOB_OUT_MAX) */
    atomic_int out_inflight;

    /* handler thread only */
    double last_progress;
    char *input_key;           /* mcpd_ctx_input_key: the next request's key (NULL = numbered) */
    atomic_bool input_pending; /* a request of this run was left unanswered (set by the worker) */
    int err_code;
    unsigned char err_kind; /* job_err_t of err (mcpd_ctx_set_error: JERR_OTHER) */
    char err[256];
    json_t *result;

    /* the reply slot for blocking requests and state operations */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool waiting;
    bool reply_ready;
    uint32_t wait_seq; /* which wait the slot serves: a reply meant for an older one is dropped */
    json_t *reply;
    int reply_code;           /* with reply_err: its JSON-RPC code (0: internal error) */
    unsigned char reply_kind; /* with reply_err: its job_err_t */
    char reply_err[256];
    state_op_t state_op;
    char *state_key;
    bool state_on_handle; /* the op is on the handle the message names (m->sid), not on the
                               session's state */
    json_t *state_value;
    mcpd_state_update_fn state_fn;
    void *state_arg;

    /* worker only */
    struct actor *actor;
    struct call *call;
    bool counted;                   /* holds one of its session's --session-jobs places */
    struct mcpd_ctx *queue_next;    /* the actor's queue of jobs waiting for a place */
    struct mcpd_ctx *detached_next; /* the actor's list of jobs whose call was cancelled */
    /* the call's answer when not the handler's: a protocol error the worker decided while the
     * handler ran (2026-07-28: -32021 for a capability the request did not declare) */
    json_t *answers;        /* 2026-07-28: {key: the client's answer} for this run */
    json_t *answers_taken;  /* 2026-07-28: those of them its requests took (kept) */
    json_t *input_requests; /* 2026-07-28: {key: {method, params}} left unanswered */
    int input_seq;          /* requests made by this run (numbers the keys) */
    int fail_code;          /* 0 = none */
    char *fail_msg;         /* malloc'd with fail_code */
    json_t *fail_data;      /* owned */
};

typedef struct mcpd_ctx job_t;

/* The job is allocated per call: it stays within glibc's tcache sizes (1032 bytes), where
 * allocation is cheapest; past them every call took malloc's large-chunk path and its
 * consolidation (callgrind: +4,400 instructions per tools/call). */

enum { JOB_CAP_ELICITATION = 1u << 0, JOB_CAP_SAMPLING = 1u << 1, JOB_CAP_ROOTS = 1u << 2 };
/* The JOB_CAP_* bits of a ClientCapabilities object. */
unsigned job_caps_of(const json_t *caps);

job_t *job_new(job_kind_t kind, struct worker *w, const char *sid, const proto_t *proto);
void job_free(job_t *j);
/* Messages a handler may have in flight to its worker before mcpd_ctx_progress/log/notify
 * wait: it bounds what a burst queues in memory (a notify of 100,000 messages). */
#define JOB_OUT_MAX 256

/* Worker side: one of the job's messages was handled (wakes a handler waiting to send). */
void job_out_done(job_t *j);
/* Actor side: cancel (sets the flag and wakes a waiting handler). */
void job_cancel(job_t *j);
/* job_cancel, from a shard's release: a job that has not started ends with MCPD_ERR_MOVED. */
void job_cancel_moving(job_t *j);
/* Actor side: answer the handler's pending wait with a result (stolen) or an error message. */
void job_reply(job_t *j, uint32_t wait_seq, json_t *result, const char *err);
/* The same with the JSON-RPC code the handler's error gets (0: internal error). */
void job_reply_code(job_t *j, uint32_t wait_seq, json_t *result, int code, const char *err);
/* An error answer with its code and its kind (job_err_t). */
void job_reply_fail(job_t *j, uint32_t wait_seq, int code, job_err_t kind, const char *err);
/* Runs the handler (tool thread, or the worker for inline jobs) and stores its outcome. */
void job_run(job_t *j);

/* Tool pool: started before the HTTP threads, stopped after them. */
int pool_start(int nthreads);
/* Any thread: j (with j->fair set) runs when a thread is free for its principal's share. */
void pool_submit(job_t *j);
/* j was cancelled: if it still waits for a thread it ends at once, without its handler. */
void pool_expedite(job_t *j);
void pool_stop(void);

#endif
