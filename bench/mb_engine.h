/* mcpbench load engine: operations on connection slots, closed or open loop. Main thread only.
 *
 * A run has `slots` connections. An operation (mb_op_t, embedded first in a scenario's own struct)
 * is one measured unit: a tools/call, a whole handshake, a resume. It runs on one slot, using the
 * slot's connection for its requests in sequence, and may open connections of its own (GET
 * streams). It ends with exactly one mb_engine_op_done(), which records it and frees it.
 *
 * Closed loop (rate 0): a slot starts its next operation as soon as the previous one ends.
 * Open loop (--rate R): operations are due every 1/R s; an operation's latency counts from when
 * it was due, not from when a slot was free, so a server that falls behind shows its queueing
 * (no coordinated omission).
 *
 * Bounds: a run starts no operation after `duration_us` or after `max_ops`, then waits for the
 * operations in flight; each is bounded by `timeout_us` (the engine ends it with MB_E_TIMEOUT,
 * which closes its slot's connection). So every run ends within duration + timeout.
 */
#ifndef MCPBENCH_MB_ENGINE_H
#define MCPBENCH_MB_ENGINE_H

#include "mb.h"
#include "mb_hist.h"
#include "mb_http.h"

#define MB_MAX_CLASSES 4

typedef struct mb_engine mb_engine_t;
typedef struct mb_op mb_op_t;

typedef struct mb_slot {
    mb_engine_t *e;
    mb_conn_t *conn;
    mb_op_t *op;
    int idx;
    bool waiting; /* next_op had nothing to start */
} mb_slot_t;

struct mb_op {
    mb_engine_t *e;
    mb_slot_t *slot;
    int64_t t_start; /* when it was due (open loop) or started (closed loop) */
    int64_t t_began; /* when a slot started it (open loop: t_start or later) */
    int64_t deadline;
    int cls;    /* class for per-class figures (mixed) */
    int status; /* the HTTP status to count with MB_E_STATUS */
    void (*start)(mb_op_t *op);
    /* Frees the operation and whatever it opened (not the slot's connection). */
    void (*destroy)(mb_op_t *op);
    mb_op_t *prev, *next;
};

typedef struct mb_stats {
    uint64_t ok;
    uint64_t err[MB_E__COUNT];
    uint64_t status[600];
    mb_hist_t hist;
} mb_stats_t;

typedef struct mb_engine_cfg {
    const char *label; /* progress line */
    int slots;
    /* The slots' connections, kept by the caller (NULL: the engine opens and closes its own).
     * A run on the connections of an earlier run meets the server where that one left it. */
    mb_conn_t **conns;
    int64_t duration_us; /* 0: no time bound */
    int64_t max_ops;     /* 0: no count bound */
    double rate;         /* operations per second; 0: closed loop */
    int64_t timeout_us;
    bool progress;
    int nclasses;
    /* A new operation for slot s, or NULL when none can start now (the slot waits until another
     * operation ends). Call mb_engine_finish() when there will be none at all. */
    mb_op_t *(*next_op)(mb_engine_t *e, mb_slot_t *s);
    void *ud;
} mb_engine_cfg_t;

struct mb_engine {
    mb_engine_cfg_t cfg;
    mb_target_t *t;
    mb_slot_t *slots;
    mb_op_t *active_head, *active_tail;
    long active;
    int64_t started;
    int64_t t_begin, t_last_done, t_stop;
    int64_t next_due;
    /* open loop, after the run: operations due within --duration that never started (every
     * slot was busy until the end); their latencies, the longest, are in no percentile */
    int64_t due_not_started;
    bool no_more, done, in_fill;
    int waiting;
    mb_stats_t total;
    mb_stats_t cls[MB_MAX_CLASSES];
    struct event *tick;
    struct event *due; /* open loop: fires when the next operation is due */
    int64_t last_progress;
    uint64_t last_progress_ok;
};

/* Runs to completion (blocking in the event loop). The engine keeps its figures afterwards. */
void mb_engine_init(mb_engine_t *e, mb_target_t *t, const mb_engine_cfg_t *cfg);
void mb_engine_run(mb_engine_t *e);
void mb_engine_free(mb_engine_t *e);

/* Initializes the common fields of a new operation. */
void mb_op_init(mb_op_t *op, void (*start)(mb_op_t *), void (*destroy)(mb_op_t *));
/* Ends op: records it and frees it through its destroy. latency_us < 0: now - t_start. A latency
 * of the operation's own (from a later point: a stream's POST, a resume's GET) is charged the
 * time the operation waited past its due time for a free slot, so an open loop behind its rate
 * shows the queueing there too. */
void mb_engine_op_done(mb_op_t *op, mb_err_t err, int64_t latency_us);
/* No more operations will be offered (the scenario ran out of work). */
void mb_engine_finish(mb_engine_t *e);
/* Wakes slots that found nothing to do (the scenario has work again). */
void mb_engine_kick(mb_engine_t *e);

double mb_engine_elapsed_s(const mb_engine_t *e);

/* The event loop for a run. precise_timers (open loop): timers fire to the microsecond instead
 * of the backend's millisecond (epoll's timeout), at one timerfd_settime per loop turn. */
struct event_base *mb_event_base_new(bool precise_timers);

/* Runs the loop for `us` microseconds (idle connections keep being serviced). */
void mb_sleep_loop(struct event_base *base, int64_t us);
/* Runs the loop until *flag is true or `us` microseconds passed. Returns *flag. */
bool mb_loop_until(struct event_base *base, const bool *flag, int64_t us);

/* Whether progress lines may be drawn (stdout is a terminal and not --quiet). */
extern bool mb_progress_tty;

#endif
