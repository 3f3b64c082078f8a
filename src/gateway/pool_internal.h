/* What pool.c, pool_lease.c and pool_req.c share: a pool of warm upstream processes for the 2026-07-28
 * requests of one --upstream name on one worker (docs/design/gateway.md). Worker threads. */
#ifndef MCPD_GATEWAY_POOL_INTERNAL_H
#define MCPD_GATEWAY_POOL_INTERNAL_H

#include "actor/actor.h"
#include "core/config.h"
#include "core/principal.h"
#include "gateway/upstream.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Requests that wait for a free process, per pool, at most (past it: 503); one client's, at
 * most its --principal-share of it. */
#define POOL_MAX_WAITING 1024

typedef struct pool pool_t;
typedef struct pjob pjob_t;

typedef struct pproc { /* one warm process */
    struct pproc *next;
    pool_t *pool;
    upstream_t *u;
    principal_t *slot; /* its --upstream-max place (the pool's principal) */
    bool ready;        /* it answered initialize and the ping after it */
    bool stopping;     /* stopped: it takes no more work */
    uint64_t next_id;
    uint64_t init_id;
    int64_t started_us; /* --upstream-init-timeout counts from it */
    pjob_t *job;        /* the one request it serves (a lease); NULL: free */
    uint64_t fence_id;  /* the ping sent after its initialize or its last request's answer: it
                           is leased only once that is answered (what it wrote before is the
                           ended request's, dropped); 0: none */
    int64_t fence_us;   /* when that ping was sent (--upstream-call-timeout bounds its wait) */
    int64_t free_us;    /* when it last came free (--upstream-idle counts from it) */
    char why[120];      /* why it was stopped before it answered initialize ("": it exited) */
    char tag[96];
} pproc_t;

/* One client request, over all of its rounds (MRTR): while it waits for a process it is on
 * the pool's queue; then its process serves it alone until the upstream answers it. */
struct pjob {
    pjob_t *next; /* the queue */
    pool_t *pool;
    pproc_t *p;              /* its process; NULL: waiting for one */
    actor_t *a;              /* the open request (ACTOR_REQUEST, one call; a->ps is this job); NULL:
                       between rounds, waiting for the client's retry */
    json_t *req;             /* what the upstream gets (method, params), before it is sent */
    uint64_t up_id;          /* the upstream's id of it, once sent */
    bool discover;           /* server/discover: answered from a process's initialize */
    bool retried;            /* a round carried inputResponses or requestState: its result is
                                not cacheable (caching.mdx) */
    json_t *progress;        /* the progressToken the upstream got (the first round's) */
    json_t *client_progress; /* the latest round's: the upstream's progress goes with it */
    json_t *caps;            /* the client's capabilities (the latest round's) */
    int log_min;             /* notifications/message at or above this level go on; 99: none */
    json_t *pending;         /* MRTR: key -> {id (the upstream's), method, params} unanswered */
    unsigned next_key;       /* the next key's number */
    json_t *final;           /* the upstream's answer that came between rounds: the retry gets it */
    char xid[SESSION_ID_LEN + 1]; /* the exchange's id (its requestState names it); "": none */
    principal_t *owner; /* its client (a reference), for the shares of the processes and queue */
    char principal[64];
    char method[32];
    char digest[33];    /* of the request's params, without _meta and the MRTR members */
    int64_t touched_us; /* queued, sent, progress, an input request, a retry */
};

struct pool {
    pool_t *next_all;
    worker_t *w;
    int index;
    pproc_t *procs;
    int nprocs;
    pjob_t *wait_head, *wait_tail;
    int nwaiting;
    json_t *info;        /* the initialize result of the first process that answered */
    principal_t *who;    /* the pool's principal: its processes' places */
    struct event *timer; /* --upstream-call-timeout, armed while jobs live */
    bool closing;        /* mcpactord stops: nothing more is started or leased */
    char name[CFG_UPSTREAM_NAME_MAX + 1];
};

/* pool.c */
/* The pool of --upstream index on w (made at its first request). */
pool_t *pool_get(worker_t *w, int index);
/* A new process, its initialize sent; NULL with the reason in err (*full: --upstream-max or
 * the pool's share of it). */
pproc_t *pool_proc_start(pool_t *pl, bool *full, char *err, size_t errlen);
/* Stops p: it takes no more work (its exit frees it). */
void pool_proc_stop(pproc_t *p);
/* Frees a job that no process holds (and detaches its actor). */
void pool_job_free(pjob_t *job);
/* msg (taken) to p's process; -1 (logged) when it does not take it. */
int pool_write(pproc_t *p, json_t *msg);
/* Answers job's open call with response (taken; its id is set to the call's). The actor goes
 * when the turn ends; the job is no longer attached to it. */
void pool_answer(pjob_t *job, json_t *response);
/* The same with an error (the HTTP status of a JSON answer is the revision's). */
void pool_answer_error(pjob_t *job, int code, const char *msg);
/* pool_req.c: a result (taken) decorated as the revision asks: resultType, the server's
 * identity, the caching hints of a list. */
json_t *pool_decorate(pool_t *pl, const pjob_t *job, json_t *result);
/* pool_req.c: the server/discover result, from pl->info (a process's initialize answer). */
json_t *pool_discover_result(pool_t *pl);
/* pool_req.c: a log level's rank (debug 0 .. emergency 7); 99 for none or another value. */
int pool_level_index(const json_t *level);
/* pool_lease.c */
/* job to the pool: to a free process, or on the queue (processes started as needed); a
 * server/discover is answered at once when a process has answered initialize. */
void pool_enqueue(pool_t *pl, pjob_t *job);
/* Requests waiting go to free ready processes; more are started while fewer than N run and
 * requests wait for them; with none running and none startable, the waiting get the reason. */
void pool_pump(pool_t *pl);
/* No process can serve: every waiting request gets msg (full: 503 + Retry-After, the cap). */
void pool_fail_waiting(pool_t *pl, const char *msg, bool full);
/* A ping to p, which is leased again only once it answers it (up_response): a stdio server
 * reads and answers in order, so what it writes before that answer (a log line, a progress
 * notification, a request after the answer to the last request) is no later request's. A
 * process that cannot be sent it is stopped. */
void pool_proc_fence(pproc_t *p);
/* Frees job and fences its process (which then takes the next request). */
void pool_job_done(pjob_t *job);
/* The job's end on purpose (timeout, a client gone): its input requests get an error, the
 * upstream a notifications/cancelled; the call, if open, gets -32603 why. */
void pool_job_abort(pjob_t *job, const char *why);
/* Arms the pool's timer for its earliest deadline (nothing open: disarmed). */
void pool_timer_arm(pool_t *pl);

/* pool_req.c */
/* An upstream request (elicitation, sampling, roots) on p: an input request of its job. */
void mrtr_upstream_request(pproc_t *p, json_t *msg);
/* Answers job's open call with input_required (its pending requests and a requestState);
 * false when its requestState cannot be made: the call is answered -32603 and the job aborted
 * (freed: pool_job_abort). */
bool mrtr_answer_input_required(pjob_t *job);
/* A retry with params.requestState: true when it was handled (attached to its exchange, or
 * refused); false: run it as a new request (its exchange is gone). */
bool mrtr_retry(pool_t *pl, pjob_t *fresh, const json_t *params);
/* The exchange in pl named xid, or NULL. */
pjob_t *mrtr_find(pool_t *pl, const char *xid);

/* The actor of the request being taken in (gw_pool_modern): it is not to go before its stream
 * settles (the dispatcher lets it go then). */
extern _Thread_local actor_t *t_pool_intake;

/* The entries ops.c calls: a 2026-07-28 request on /mcp/NAME; its call dropped (the client
 * closed its response stream); its actor freed. */
void gw_pool_modern(worker_t *w, wmsg_t *m);
void gw_pool_call_dropped(actor_t *a, const call_t *c);
void gw_pool_actor_gone(actor_t *a);
/* mcpactord stops (the listens' end, before the streams close): a's request gets an error and
 * is cancelled at the upstream; its pool starts and leases nothing more. */
void gw_pool_end(actor_t *a);
/* Main thread, after upstream_kill_all: frees every pool. */
void gateway_pool_free(void);

#endif
