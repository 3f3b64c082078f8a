/* Actor workers: N threads, each with an event_base, an inbox and the table of the live actors
 * pinned to it (hash(session) % N). Only the owning worker touches an actor.
 *
 * A worker turn: take the whole inbox, let each message's actor handle it, then (1) commit the
 * turn's store writes as one batch and (2) only then hand the turn's outgoing bytes to the HTTP
 * threads, one splice per HTTP thread. So a client never sees an event that is not in the
 * store, and N events cost one write. Timer callbacks end with the same commit-then-send step.
 */
#ifndef MCPD_ACTOR_WORKER_H
#define MCPD_ACTOR_WORKER_H

#include <stdbool.h>

#include "actor/msg.h"
#include "store/store.h"
#include "tools/registry.h"

typedef struct worker worker_t;
struct actor;
struct event_base;

/* Main thread. With host_bases (n of them), worker i runs on host_bases[i], an HTTP thread's
 * loop ("co-located": no thread of its own, no thread switch between HTTP and actor);
 * otherwise each worker gets its own thread and event_base. */
int workers_start(int n, store_t *store, const mcpd_registry_t *reg, int n_http_threads,
                  struct event_base **host_bases);
/* Main thread, before co-located workers' loops run: handles what is already queued. */
void workers_drain_now(void);
/* Main thread, at shutdown: cancel every job so handlers return; workers keep running. */
void workers_cancel_all(void);
/* true once workers_cancel_all ran: a job created now starts cancelled. Any thread. */
bool workers_stopping(void);
/* Main thread: drain and stop the workers (after the tool pool has stopped; co-located workers
 * after their HTTP threads have stopped). */
void workers_stop(void);

/* Any thread. */
worker_t *worker_for_session(const char *sid);
void worker_push(worker_t *w, wmsg_t *m);
/* Runs m at once when `now` is true (the caller is w's own thread: inline jobs), else pushes. */
void worker_deliver(worker_t *w, wmsg_t *m, bool now);
/* HTTP threads: admission against the session's mailbox bound. true = admitted (m->counted). */
bool worker_admit(worker_t *w, wmsg_t *m);
const mcpd_registry_t *worker_registry(void);
long worker_config_request_timeout_ms(void);
int worker_count(void);
/* Live actors across workers (approximate, for stats). */
long long workers_live_actors(void);

/* The owning worker thread only. */
store_t *worker_store(worker_t *w);
store_batch_t *worker_batch(worker_t *w);
/* Commits pending writes now: called before any read that must see them. */
void worker_commit(worker_t *w);
/* Queues m for its HTTP thread; sent after the turn's commit. */
void worker_send_http(worker_t *w, hmsg_t *m);
struct event_base *worker_base(worker_t *w);
/* Commit, then send: the end of every turn and timer callback. */
void worker_turn_end(worker_t *w);
struct actor *worker_find_actor(worker_t *w, const char *sid);
void worker_add_actor(worker_t *w, struct actor *a);
void worker_remove_actor(worker_t *w, struct actor *a);
/* After handling a message of a: keeps the idle list (hibernation) in order. */
void worker_note_activity(worker_t *w, struct actor *a);
/* An alarm was set at due in this turn: the scheduler hears of it after the commit. */
void worker_note_alarm(worker_t *w, int64_t due);
/* Calls fn for every live actor; fn may remove (and free) the actor it is given. */
void worker_foreach_actor(worker_t *w, void (*fn)(struct actor *, void *), void *arg);

#endif
