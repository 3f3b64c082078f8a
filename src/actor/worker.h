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

#include <assert.h>
#include <stdbool.h>

#include "actor/msg.h"
#include "core/jsondump.h"
#include "store/store.h"

typedef struct worker worker_t;
struct actor;
struct call;
struct event_base;
struct mcpd_ctx;

/* The protocol the actors serve. The actor layer knows sessions, streams and jobs, not what a
 * message means: it calls up through this table, which the protocol layer fills (mcp/) and
 * main hands to workers_start. Worker thread. */
typedef struct actor_ops {
    /* a POST carrying initialize without a session id; m->sid is the new session's id */
    void (*on_initialize)(worker_t *w, wmsg_t *m);
    /* any other POST to a live session */
    void (*on_post)(struct actor *a, wmsg_t *m);
    /* a 2026-07-28 request (m->u.post.modern); m->sid is a fresh id for its one-request actor */
    void (*on_modern)(worker_t *w, wmsg_t *m);
    /* a job finished (or was cancelled): answer its call if it still has one */
    void (*on_job_done)(struct actor *a, struct mcpd_ctx *j);
    /* a live, blocking job's server->client request (WM_TOOL_REQ; the payload's "method" is a
     * string): answer it (job_reply), or send it on a stream (actor_send_tool_request) */
    void (*on_tool_request)(struct actor *a, struct mcpd_ctx *j, wmsg_t *m);
    /* The protocol layer's state of an actor (actor_t.ps, opaque here): */
    /* frees it (a->ps not NULL; sets it to NULL), when the actor is freed */
    void (*state_free)(struct actor *a);
    /* writes its part of a's stored metadata into meta at `at` (ACTOR_META_*) */
    void (*meta_put)(const struct actor *a, jobj_t *meta, int at);
    /* reads its part back from the stored metadata (borrowed) when a is woken */
    void (*meta_load)(struct actor *a, const json_t *meta);
    /* true when a log message at `level` (a logging level name) goes to a's client */
    bool (*log_enabled)(const struct actor *a, const char *level);
    /* a WM_BROADCAST reaching live actor a: delivered to it if it asked for it */
    void (*on_broadcast)(struct actor *a, wmsg_t *m);
    /* shutdown: a's subscriptions/listen call, if it has one, ends with its closing result */
    void (*end_listen)(struct actor *a);
    /* call c of a is dropped unanswered (actor_drop_call: the client cancelled it, or closed
     * a stream that cannot be resumed): the protocol forgets what it keeps for it. Called
     * before c is unlinked and freed; its job, if any, is cancelled by the actor layer */
    void (*on_call_dropped)(struct actor *a, const struct call *c);
} actor_ops_t;

/* Where in the stored metadata's member order meta_put adds its members (the order of the
 * record written before they moved, kept byte for byte): after the protocol version, before
 * the owner, and last (after the kind). A session's record should end with its owner ("p"):
 * the startup count reads it without a parse then (actor.c, fast_owner), so a protocol adds a
 * session's members at HEAD or MIDDLE; TAIL is for the other kinds (records, tasks). */
enum { ACTOR_META_HEAD = 0, ACTOR_META_MIDDLE, ACTOR_META_TAIL };

/* Where a turn's frames go after its commit: one call per HTTP thread that has frames, with the
 * chain of hmsg_t for it (main passes the HTTP layer's delivery). Worker thread. */
typedef void (*frame_sink_fn)(uint32_t http_thread, mq_node_t *first, mq_node_t *last, size_t n);

/* Any thread: hands a copy of note (a notification, stolen) to every worker, which delivers
 * it to its listeners (actor_broadcast). what: BC_*. */
void workers_broadcast(json_t *note, int what);

/* Main thread. With host_bases (n of them), worker i runs on host_bases[i], an HTTP thread's
 * loop ("co-located": no thread of its own, no thread switch between HTTP and actor);
 * otherwise each worker gets its own thread and event_base. */
int workers_start(int n, store_t *store, const actor_ops_t *ops, frame_sink_fn sink,
                  int n_http_threads, struct event_base **host_bases);
/* Main thread, before co-located workers' loops run: handles what is already queued. */
void workers_drain_now(void);
/* Main thread, at shutdown, before the HTTP threads end their streams: every
 * subscriptions/listen stream gets its closing result. */
void workers_end_listens(void);
/* Runs fn on every worker thread (as a turn of its own) and waits for all of them. One caller
 * at a time (others wait). */
void workers_run_each(void (*fn)(worker_t *w));
/* Main thread, at shutdown: cancel every job so handlers return; workers keep running. */
void workers_cancel_all(void);
/* true once workers_cancel_all ran: a job created now starts cancelled. Any thread. */
bool workers_stopping(void);
/* Main thread: drain and stop the workers (after the tool pool has stopped; co-located workers
 * after their HTTP threads have stopped). */
void workers_stop(void);
/* Main thread, before workers_start: fn runs in workers_stop once every worker's loop has
 * stopped and before any is freed (the gateway's upstream_kill_all: its processes' events
 * live on those loops). */
void workers_on_stopped(void (*fn)(void));

/* Any thread. */
worker_t *worker_for_session(const char *sid);
/* Whether w runs on HTTP thread http_thread's loop (--workers 0: worker i on thread i). */
bool worker_is_on_thread(const worker_t *w, uint32_t http_thread);
/* HTTP thread http_thread, for an id it has just minted (a new session, a stateless request's
 * actor): when workers run on the HTTP threads (--workers 0), rewrites the routing characters
 * after sid's shard so that sid's worker is this thread's own. The request and every later one
 * on the same connection then stay on one thread: no hand-over between threads, no wake-up.
 * Otherwise (separate workers, one worker) sid is left as it is. The shard and the other 24 hex
 * characters are kept. */
void worker_place_on_thread(char *sid, uint32_t http_thread);
void worker_push(worker_t *w, wmsg_t *m);
/* Runs m at once when `now` is true (the caller is w's own thread: inline jobs), else pushes. */
void worker_deliver(worker_t *w, wmsg_t *m, bool now);
/* HTTP threads: admission against the mailbox bounds: --mailbox requests of the session queued
 * (counted by its id), and WORKER_QUEUE_MAX times that in the worker's inbox. ADMIT_OK: admitted
 * (m->mbox: counted in); else refused, and why. */
#define WORKER_QUEUE_MAX 4096
typedef enum { ADMIT_OK, ADMIT_SESSION_FULL, ADMIT_WORKER_FULL } admit_t;
admit_t worker_admit(worker_t *w, wmsg_t *m);

/* The worker whose turn the calling thread runs now (NULL outside one). A callback on a
 * worker's loop brackets its work with worker_enter/worker_leave (nesting restores the
 * previous one). Debug builds assert it at the entry points (actor dispatch, stream send, the
 * batch): only the owning worker touches an actor, its streams and its batch. */
worker_t *worker_current(void);
worker_t *worker_enter(worker_t *w);
void worker_leave(worker_t *prev);
#define ASSERT_OWNER(w) assert(worker_current() == (w) && "only the owning worker may touch this")

/* Hands free memory back to the kernel now: the actor pages' free spans, this thread's kept
 * blocks, every malloc arena's free pages (memory_trims_total). When the store has flushes or
 * compactions running (store_background_work), once more after they end: they free memtables
 * and buffers into the arenas after this trim. The store is asked at 0.25, 0.5, 1, 2 and 4 s;
 * work still running then is left to the next trim. One such follow-up at a time in the
 * process. The owning worker thread only (worker_trim.c). */
void worker_give_back(worker_t *w);
/* For tests: what says how much background work the store has (NULL: store_background_work).
 * Before workers_start, or after workers_stop. */
void worker_set_store_work_source(uint64_t (*fn)(store_t *));

/* The owning worker thread only. */
const actor_ops_t *worker_ops(const worker_t *w);
store_t *worker_store(worker_t *w);
store_batch_t *worker_batch(worker_t *w);
/* Commits pending writes now: called before any read that must see them. 0, or -EIO when the
 * store refused them (or refused an earlier commit of this turn): then the whole turn fails
 * (worker_turn_end replaces its frames, refuse.h, and resets the actors it touched). */
int worker_commit(worker_t *w);
/* a wrote to the batch or queued a frame: if the turn fails, a is reset (freed without
 * writing and reloaded from the store at its next message), so memory never runs ahead of
 * the disk. */
void worker_touch(worker_t *w, struct actor *a);
/* The message being handled cannot go on as it should (a read failed where a write would build
 * on what was not read: a message for a stream whose record is unreadable, read right after a
 * good commit): it ends as a refused turn does, when its handling returns. Nothing it queued
 * since the last good commit goes out as it was (503 + Retry-After, or the storage error in
 * place), nothing more of it is written, and a (and every actor it touched) is reset and
 * reloaded at its next message. The turn's other messages (other sessions') go on: a read
 * error of one session fails no other's request. */
void worker_fail_turn(worker_t *w, struct actor *a);
/* The answer to a state operation, handed to the waiting handler only after the turn's
 * commit (value stolen); if the commit fails the handler gets an error instead. */
struct mcpd_ctx;
void worker_defer_reply(worker_t *w, struct mcpd_ctx *j, uint32_t wait_seq, json_t *value);
/* fn(w, arg, committed) runs once what the turn wrote so far is committed (committed true), or
 * once the store refused it (false, the actors it touched reset): for an effect outside the
 * server that must not run ahead of the disk, as a frame does not (a gateway's write to its
 * upstream). It owns arg. Worker thread. */
typedef void (*after_commit_fn)(worker_t *w, void *arg, bool committed);
void worker_after_commit(worker_t *w, after_commit_fn fn, void *arg);
/* Counters that describe stored data change only when the writes they count are committed: a
 * refused turn drops its changes (a record, handle or task it made was never stored, one it
 * deleted is still there). */
typedef enum {
    DS_EVENTS_STORED,
    DS_EVENTS_EVICTED,
    DS_SESSIONS_STORED,
    DS_SESSIONS_DELETED,
    DS_ALARMS_PENDING,
    DS_STREAMS_EXPIRED,
    DS_LOG_TRIMS,
    DS_INPUT_RECORDS_STORED,
    DS_HANDLES_STORED,
    DS_TASKS_STORED,
    DS__COUNT
} dstat_t;
void worker_stat_add(worker_t *w, dstat_t which, long long n);
/* p's unit of r (a pres_t) goes back once the turn's writes so far are stored (a delete): at
 * the next good commit; a refused turn keeps it held, as the store does. GIVE_GLOBAL: from the
 * global count only (a task whose share an older server gave back at its cancel, "hs": false). */
struct principal;
typedef enum { GIVE_BOTH = 0, GIVE_GLOBAL } give_mode_t;
void worker_give_at_commit(worker_t *w, struct principal *p, int r, give_mode_t mode);
/* Session sid has interrupted requests to answer when it is next loaded, with the error message
 * why (static): one a failed turn reset (REFUSE_MESSAGE), or one whose recovery could not read
 * it (a read error: its in-flight keys stay). */
void worker_mark_recover(worker_t *w, const char *sid, const char *why);
/* The mark's message, taken (forgotten); NULL when sid has none. */
const char *worker_take_recover_mark(worker_t *w, const char *sid);
/* Queues m for its HTTP thread; sent after the turn's commit. */
void worker_send_http(worker_t *w, hmsg_t *m);
struct event_base *worker_base(worker_t *w);
/* Commit, then send: the end of every turn and timer callback. */
void worker_turn_end(worker_t *w);
/* A new reference to a value equal to v (borrowed) that the worker's sessions share: one kind
 * of client sends the same clientInfo and capabilities in every session (core/jshare.h). The
 * value must not be changed. Worker thread only. */
json_t *worker_share_json(worker_t *w, json_t *v);
/* Where its actors' memory comes from (core/slab.h). Worker thread only. */
struct slab *worker_actor_slab(worker_t *w);
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
