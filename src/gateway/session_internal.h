/* What session.c, session_client.c and ops.c share: a gateway session's state
 * (docs/design/gateway.md). Worker threads. */
#ifndef MCPD_GATEWAY_SESSION_INTERNAL_H
#define MCPD_GATEWAY_SESSION_INTERNAL_H

#include "actor/actor.h"
#include "core/config.h"
#include "gateway/upstream.h"

typedef struct gw_out { /* a message sent to the upstream that awaits its answer */
    struct gw_out *next;
    uint64_t up_id;     /* the id the upstream got */
    uint64_t stream;    /* the call's stream */
    json_t *client_id;  /* the call's id (the client's); NULL: the stored initialize re-sent */
    json_t *progress;   /* its params._meta.progressToken, or NULL: where its progress goes */
    bool init;          /* an initialize: the client's (the session's start), or the re-sent */
    bool later;         /* sent while the process was being stopped: for the next process */
    int64_t touched_us; /* sent, or its last progress: --upstream-call-timeout counts from it */
} gw_out_t;

typedef struct gw_in { /* an upstream request sent to the client */
    struct gw_in *next;
    uint64_t our_id; /* the id the client got */
    json_t *up_id;   /* the upstream's */
    int64_t sent_us; /* --upstream-call-timeout counts from it */
} gw_in_t;

typedef struct gw_sess {
    actor_t *a; /* NULL once the actor is freed while its process ends */
    worker_t *w;
    int index; /* --upstream index; -1: no longer configured */
    char name[CFG_UPSTREAM_NAME_MAX + 1];
    upstream_t *u;            /* NULL: no process */
    principal_t *slot;        /* whose --upstream-max place the process holds (a reference);
                                 NULL: none held */
    struct event *init_timer; /* --upstream-init-timeout, armed at each start until ready */
    struct event *idle_timer; /* --upstream-idle, armed while a process runs (ops.c) */
    struct event *call_timer; /* --upstream-call-timeout, armed while calls are open (ops.c) */
    int64_t last_us;          /* the last message to the process or answer from it (monotonic) */
    bool idle_stop;           /* stopped for --upstream-idle: its exit is no fault */
    bool stopping;            /* gs_stop ran: what comes until the exit waits for a new process */
    size_t keep_from;         /* the first message of the queue sent while stopping */
    bool share_back;          /* slot's share unit went back at the stop (the global one goes at
                                 the exit) */
    json_t *init;             /* the client's initialize params (stored "gi") */
    json_t *level;            /* its last logging/setLevel params (stored "gl"), sent again to
                                 a restarted process; NULL: none */
    bool ready;               /* the process answered initialize: messages go straight to it */
    bool noted;               /* notifications/initialized is sent or queued to this process,
                                 or the gateway sends it at ready (a restart): once each */
    bool init_failed;         /* the upstream refused the client's initialize: no session */
    json_t *queue;            /* what waits for ready (an array) */
    size_t queued_bytes;      /* its size as JSON text (bounded like a process's stdin) */
    json_t *held;             /* the client's answers of this turn, sent at its commit (ops.c);
                                 NULL: none */
    uint64_t next_id;
    gw_out_t *out;
    gw_in_t *in;
    struct gw_sess *dprev, *dnext; /* the detached list, while a is NULL and the process ends */
    char tag[96];
} gw_sess_t;

/* a's state when a is a gateway session, else NULL */
gw_sess_t *gs_of(const actor_t *a);
const char *gw_name(const gw_sess_t *gs);
gw_sess_t *gs_new(worker_t *w, int index, const char *name, const char *sid);
/* ops.c: a message sent to the upstream under up_id, awaited (for stream and the client's id;
 * params' progressToken is mapped back), with the call timer armed. */
gw_out_t *gw_add_out(gw_sess_t *gs, uint64_t up_id, uint64_t stream, const json_t *client_id,
                     const json_t *params);
/* ops.c: frees one awaited message; forgets every awaited message, upstream request and
 * queued message */
void out_free(gw_out_t *o);
void gs_clear_maps(gw_sess_t *gs);
void gs_free(gw_sess_t *gs);
/* The open call of stream num with the client's id, or NULL (answered, cancelled, lost). */
call_t *gw_find_call(actor_t *a, uint64_t num, const json_t *id);
/* The process layer's on_bad_line: a stdout line that is not a message. With exactly one
 * client request open (the process past initialize) that request gets -32603 saying why. */
void gw_on_bad_line(upstream_t *u, upstream_bad_t why, const char *detail, void *arg);
/* ops.c: a response that answers no request open here (msg: the upstream's; the caller is in
 * its turn). An id the gateway never gives (not an integer, or none of those given yet) with
 * exactly one client request open errors that request, as a bad line does; anything else (a
 * late answer to a cancelled request, a second answer) is logged and dropped. */
void gw_unknown_response(gw_sess_t *gs, const json_t *msg);
/* A place of --upstream-max for a process of gs, counted for owner, the session's (its share:
 * --principal-share percent of it; NULL: the session's id stands for it); false with the reason
 * in err. gw_slot_give returns it. */
bool gw_slot_take(gw_sess_t *gs, principal_t *owner, const char *sid, char *err, size_t errlen);
void gw_slot_give(gw_sess_t *gs);
/* Stops gs's process on purpose (idle, no initialize answer, a session's end): requests that
 * come before it has exited wait for a new one (gw_out_t.later, the queue from keep_from), and
 * its place stops counting in the owner's share at once, so the session (or its next wake)
 * can start the next process within its share. */
void gs_stop(gw_sess_t *gs);
/* --upstream-idle (nothing when it is 0): arms gs's timer for a process just started. Its
 * firing stops a process that has had no request or answer for that long and no request
 * open; a busy one is looked at again later, and a quiet session's process, once stopped, arms
 * nothing (no periodic work). */
void gw_idle_arm(gw_sess_t *gs);
/* --upstream-call-timeout (nothing when it is 0): arms gs's call timer unless it is pending. */
void gw_call_timer_arm(gw_sess_t *gs);
/* A notifications/progress for a call's token resets its --upstream-call-timeout clock (in
 * every response mode). */
void gw_progress_seen(gw_sess_t *gs, const json_t *msg);
/* Stops gs's idle and call timers (its process exited). */
void gw_timers_del(gw_sess_t *gs);
/* An answer (a response, or a batch of them), not a message the upstream sends on its own. */
bool gw_is_answer(const json_t *msg);
/* msg (taken) to the process, or to the queue until it answered initialize. -1: the process
 * is gone or does not read (its queue is full). */
int gs_send(gw_sess_t *gs, json_t *msg);
/* A request to the upstream under the session's next gateway id (*id), params (if any)
 * referenced: new. */
json_t *request_to_up(gw_sess_t *gs, const char *method, json_t *params, uint64_t *id);
/* A session woken, or whose process ended: a new process, initialized with the stored
 * initialize. false when it cannot be started (err says why; *full: past --upstream-max). */
bool gs_ensure(gw_sess_t *gs, bool *full, char *err, size_t errlen);
/* ops.c: msg (taken) to the process once the turn's writes are committed (dropped if the
 * store refused them and reset the session: its process is stopped) */
void gs_send_after_commit(gw_sess_t *gs, json_t *msg);
/* an initialize on /mcp/NAME; session_client.c: a POST to a gateway session */
void gw_initialize(worker_t *w, wmsg_t *m);
void gw_post(actor_t *a, wmsg_t *m);
/* ops.c: an upstream notifications/cancelled mapped to the client's id (see ops.c); true:
 * dropped (a request the client was not sent) */
bool up_cancel(gw_sess_t *gs, json_t *msg);
/* ops.c: a client's answer to an upstream request: back with the upstream's id, after the
 * turn's commit */
void gw_client_response(actor_t *a, gw_sess_t *gs, json_t *msg);
/* ops.c: puts gs on (add) or takes it off the detached list */
void detach(gw_sess_t *gs, bool add);

#endif
