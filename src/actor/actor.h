/* The session actor: one MCP session, pinned to a worker, touched only by that worker.
 *
 * State in memory is a cache of the store: protocol version, counters, and the streams that are
 * in use (an attached connection or unanswered requests), and the protocol layer's part (client
 * info and capabilities, and behind `ps` its typed state: log level, subscriptions, a record's
 * or task's state), which it stores and reads back through actor_ops_t. Everything a later wake
 * needs is written to the store in the worker's turn batch.
 *
 * Streams. Number 0 is the standalone GET stream; POST streams are numbered from 1 per session.
 * A POST stream starts as a pending HTTP request and becomes an SSE stream when it has to carry
 * more than one JSON response: at its first request-related message, when the call stays silent
 * past --json-window (auto mode), or at once (--response-mode sse). Once SSE, every message gets
 * an event id <streamId>:<seq> and is stored before it is sent.
 */
#ifndef MCPD_ACTOR_ACTOR_H
#define MCPD_ACTOR_ACTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "actor/msg.h"
#include "actor/worker.h"
#include "core/buf.h"
#include "store/records.h"
#include "core/stats.h"
#include "wire/proto.h"
#include "actor/job.h"

struct event;
struct actor;
struct proto_state;

typedef struct stream {
    struct stream *next; /* actor->streams */
    struct stream *dirty_next;
    struct actor *actor;
    uint64_t num;          /* 0 = standalone GET stream */
    uint64_t seq;          /* last event seq issued */
    uint64_t bytes;        /* payload bytes of the events it keeps */
    int64_t last_write_ms; /* wall clock of the last stored event */
    conn_ref_t conn;       /* attached connection, gen 0 = none */
    bool sse;              /* the connection carries SSE (ids assigned) */
    bool finished;         /* every response written */
    bool dirty;            /* metadata to write at turn end */
    bool unmapped;         /* SSE with calls whose in-flight keys are not written yet */
    bool batch;            /* JSON mode answers with an array */
    bool diverted;         /* a POST stream in JSON mode: a message of its calls went on the
                              standalone stream instead (actor_send_diverted) */
    int outstanding;       /* requests not yet answered */
    buf_t resp;            /* JSON mode: the responses collected so far, as JSON text joined by
                              * commas (n_resp of them) */
    int n_resp;
    json_t *req_ids;      /* request ids this stream serves (persisted) */
    struct event *window; /* auto mode: switch a silent call to SSE */
    bool session_header;  /* add Mcp-Session-Id to the response (initialize) */
    bool dispatching;     /* its POST body is being dispatched: do not settle yet */
    bool delivered;       /* standalone stream: a GET has been attached to it before */
    bool server_ended;    /* standalone stream: the server ended its last connection (idle,
                                a slow reader) after event ended_seq; the next GET without
                                Last-Event-ID gets what came after it (in memory only) */
    uint64_t ended_seq;
    int http_status;         /* a JSON reply's status when not 200 (2026-07-28 errors, a
                              * storage refusal) */
    const char *retry_after; /* with http_status 503: Retry-After (static; NULL: "1") */
    struct post_cap *cap;    /* a POST stream's cap accounting (stream.c), from its first event */
    struct fresh_events *fresh; /* sizes of the events put since its last commit (stream.c) */
} stream_t;

typedef struct call {
    struct call *next;
    json_t *id; /* the client's request id */
    stream_t *stream;
    job_t *job; /* NULL when answered synchronously */
    stats_method_t method;
    bool mapped; /* its reqmap key (the in-flight index) is written */
    int64_t started_us;
} call_t;

typedef struct pending { /* a server->client request waiting for the client's answer */
    struct pending *next;
    uint64_t num; /* the JSON-RPC id we sent */
    job_t *job;
    uint32_t wait_seq; /* the job's wait the answer is for */
    char method[48];   /* what was asked (elicitation/create, ...): its answer's shape is checked */
} pending_t;

typedef struct actor {
    struct actor *hnext;               /* worker table chain */
    struct actor *lru_prev, *lru_next; /* the worker's idle list (hibernation candidates) */
    bool in_lru;
    bool meta_dirty;         /* metadata to write at the end of the turn */
    bool stored_more;        /* it may have keys beyond metadata and alarm (streams, state) */
    struct actor *meta_next; /* the turn's list of actors with dirty metadata */
    uint64_t touch_epoch;    /* worker_touch: touched since the worker's last good commit */
    int64_t idle_since_ms;   /* monotonic */
    char sid[SESSION_ID_LEN + 1];
    uint32_t tag; /* stream-id tag (keys.h) */
    worker_t *w;
    const proto_t *proto;
    /* what the client said about itself (clientInfo, capabilities; NULL = none): the
       protocol layer sets, stores and reads them back (actor_ops_t meta_put/meta_load); here,
       not in ps, so that a session needs no second allocation */
    json_t *client_info;
    json_t *client_caps;
    bool initialized;
    bool used;              /* a request (not a notification) or a GET came after initialize;
                                a session never used is deleted after --unused-session-ttl */
    uint8_t upstream;       /* a gateway session (/mcp/NAME of --upstream NAME): 1 + its
                                index, its ps the gateway's (src/gateway/); 0: a built-in one */
    char kind;              /* ACTOR_SESSION, ACTOR_REQUEST, ACTOR_RECORD, ACTOR_HANDLE or
                                ACTOR_TASK */
    struct proto_state *ps; /* the protocol layer's state (mcp/state.h; opaque here), NULL
                                until it keeps something: freed, stored and read back through
                                actor_ops_t (state_free, meta_put, meta_load) */

    char auth_name[64];
    principal_t *owner;    /* reference: who made it, for the shares (core/principal.h):
                                "t:<token>", or "a:<address>" without tokens; stored ("p");
                                for one stored before it was kept, "t:<its token>" or "a:" */
    bool share_given_back; /* a session, handle or task holds one unit of its owner's share
                                of --max-sessions, --max-handles or --max-tasks until it is
                                deleted; true (stored "hs": false) for a task cancelled by an
                                older server, which gave its share back at the cancel */
    int64_t created_ms;
    int64_t touched_ms;
    int64_t touched_stored_ms; /* the touched_ms last written to the store */
    int64_t alarm_due;         /* its one alarm (wall ms), 0 = none */
    uint64_t next_stream;
    uint64_t next_req_num;
    uint64_t log_bytes; /* payload bytes kept in its event log (--session-log-bytes) */
    bool meta_at_rest;  /* its stored metadata was written at rest (hibernation, shutdown), so
                           its "lb" is what the stream records hold: until the first change of
                           log_bytes writes it again (actor_log_changing) */
    stream_t *streams;
    stream_t *get; /* the standalone stream, loaded on first use */
    call_t *calls;
    pending_t *pending;
    job_t *detached;  /* jobs still running whose call was cancelled (until done) */
    int jobs_running; /* jobs on the pool holding a --session-jobs place */
    job_t *jobs_queued, *jobs_queued_tail; /* waiting for a place, oldest first */
} actor_t;

#include "core/config.h"

/* Worker entry points. */
void actor_dispatch(worker_t *w, wmsg_t *m);
void actor_flush_dirty(worker_t *w);
void actor_cancel_all_jobs(worker_t *w);
void actor_destroy_all(worker_t *w);

/* What an actor is. A session and a record are durable (stored, hibernating, woken, deleted
 * by their alarm); a stateless request's actor is not. A record is a small durable object with no
 * streams: the protocol layer keeps in it what must outlive a request (2026-07-28 input
 * requests: the answers collected so far). A handle is a durable owner of tool state that no
 * session owns (mcpd_ctx_handle_*), deleted --handle-ttl after its last use. */
enum {
    ACTOR_SESSION = 's',
    ACTOR_REQUEST = 'm', /* serves one request of the stateless revision (2026-07-28): never
                            stored, no event ids, freed once it is answered (actor_discard) */
    ACTOR_RECORD = 'r',
    ACTOR_HANDLE = 'h',
    ACTOR_TASK = 't'
};
/* How stale a stored touch time may get before a use rewrites it, for a TTL of ttl_s counted
 * from the last use: an eighth of it, at most an hour, at least a second. A crash forgets the
 * touches since the stored one, so it shortens the TTL by at most this much. */
static inline int64_t actor_touch_persist_ms(int64_t ttl_s)
{
    int64_t ms = ttl_s * 1000 / 8;
    return ms > 3600 * 1000 ? 3600 * 1000 : ms < 1000 ? 1000 : ms;
}

/* a serves one stateless request (ACTOR_REQUEST). */
static inline bool actor_one_request(const struct actor *a)
{
    return a->kind == ACTOR_REQUEST;
}

/* True when a's streams are stored and resumable: the event store is on and a is a session
 * (a stateless request's actor keeps nothing). */
static inline bool actor_stores(const actor_t *a)
{
    return g_cfg.event_store && !actor_one_request(a);
}

/* A task (the tasks extension, SEP-2663) is a durable actor with no streams, like a record: the
 * protocol layer keeps its status in its state (ps; stored in the metadata); its arguments and its final result are two
 * keys of its state (TASK_STATE_ARGS, TASK_STATE_RESULT), deleted with it; its running job, if
 * any, is on its `detached` list (so it is not idle while it runs); its one alarm is its TTL. */
#define TASK_STATE_ARGS "args"
#define TASK_STATE_RESULT "result"

/* "session", "record", "handle", "task" or "request" (for logs). */
const char *actor_kind_name(const actor_t *a);

/* Used by the MCP layer (mcp/session.c), worker thread. */
actor_t *actor_create(worker_t *w, const char *sid);
/* An actor of another kind (ACTOR_*): a stateless request's actor (ACTOR_REQUEST), or a record;
 * neither is counted as a session. */
actor_t *actor_create_kind(worker_t *w, const char *sid, char kind);
/* What stored metadata (actor_write_meta's) belongs to: the startup counts (sessionrec_count). */
enum { STORED_SESSION = 0, STORED_RECORD, STORED_HANDLE, STORED_TASK, STORED__KINDS };
int actor_meta_kind(const char *meta, size_t len);
/* The same of parsed metadata (NULL: a session). */
int actor_kind_of(const json_t *m);
/* Adds sign (+1, -1) times what the stored records of ids starting with prefix (plen 0: all)
 * hold of their owners' shares (principal_add), and counts them by kind into by_kind (may be
 * NULL): at startup (account.c). 0, or -EIO when a read error stopped the walk: the counts and
 * shares are short. */
int actors_account_stored(store_t *s, const char *prefix, size_t plen, int sign,
                          uint64_t by_kind[STORED__KINDS]);
/* The same for a shard that moves, read before anything is added (account.c): the shares its
 * stored records hold, counted by kind into by_kind (zeroed by the caller), as a tally (new) to
 * add later with actors_tally_apply; NULL when a read error stopped the walk (nothing added). */
typedef struct actors_tally actors_tally_t;
actors_tally_t *actors_tally_stored(store_t *s, const char *prefix, size_t plen,
                                    uint64_t by_kind[STORED__KINDS]);
/* Adds sign (+1, -1) times the tally's shares (principal_add), and frees it. */
void actors_tally_apply(actors_tally_t *t, int sign);
void actors_tally_free(actors_tally_t *t);
/* The owner a stored record names ("p"), or for one written before owners were kept, the
 * principal it would have had: its token's, or "a:" (an address not known). */
void actor_owner_of(const json_t *m, char *out, size_t n);
/* What the startup count takes from one stored record (account.c, without a parse where it can:
 * the owner from the record's last member, the kind from "k"): its kind (actor_meta_kind's), its
 * owner (actor_owner_of's of the parsed record, into out[n]) and whether it holds a unit of
 * the owner's share (false: "hs": false). */
int actor_meta_unit(const char *meta, size_t len, char *out, size_t n, bool *holds);
/* The actor sid names on w, woken from the store when it hibernates; NULL when there is none
 * (*err 0) or when the store failed to read it (*err -EIO: not an absence, never a 404). */
actor_t *actor_find_or_load(worker_t *w, const char *sid, int *err);
/* A failed turn reset a (and its in-flight requests lost their jobs), or a recovery could not
 * read it (worker_mark_recover): once the store takes writes again, they are answered as after
 * a crash, with a stored error a resuming client finds (sweep.c). While it refuses, reads and
 * replays go on and this waits. */
void actor_recover_after_reset(actor_t *a);
/* The metadata changed: it is written once, at the end of the turn. */
void actor_persist_meta(actor_t *a);
/* Writes the metadata into the batch now. */
void actor_write_meta(actor_t *a);
/* log_bytes is about to change (events put or deleted): a metadata written at rest must not
 * stay stored beside stream records that no longer add up to its "lb", so it is written again
 * (once a wake) in the same commit. A wake reads "lb" only from a metadata written at rest, and
 * otherwise sums the stream records (after a crash, or a refused turn). */
static inline void actor_log_changing(actor_t *a)
{
    if (a->meta_at_rest)
        actor_persist_meta(a);
}
stream_t *actor_new_post_stream(actor_t *a, conn_ref_t conn);
call_t *actor_add_call(actor_t *a, stream_t *s, const json_t *id, stats_method_t method);
/* Answers a call: response stolen. Frees the call. */
void actor_complete_call(actor_t *a, call_t *c, json_t *response);
/* The same for a result (taken): {"jsonrpc":"2.0","id":...,"result":RESULT} is written straight
 * as text, with extra (members as JSON text, no leading comma; NULL: none) added inside the
 * result object, so no envelope object is built. */
void actor_complete_result(actor_t *a, call_t *c, json_t *result, const char *extra,
                           size_t extra_len);
/* Drops a call without a response (cancelled). */
void actor_drop_call(actor_t *a, call_t *c);
/* Sends a message on a stream (stored first when the stream is SSE). msg stolen. */
void actor_stream_send(actor_t *a, stream_t *s, json_t *msg);
/* Session-level message (no related request): standalone stream, or stored for it. msg stolen.
 * 0, or -EIO when the store failed to read the standalone stream's record: msg is dropped
 * (stored on a new stream it would take the stored one's event ids), and the caller decides
 * what the turn acknowledges (worker_fail_turn: nothing). */
int actor_send_session(actor_t *a, json_t *msg);
/* A message of a call on POST stream s that s cannot carry (JSON-only mode): session-level, and
 * s's answer goes out after it (stream_t.diverted). One that cannot be stored fails the turn. */
void actor_send_diverted(actor_t *a, stream_t *s, json_t *msg);
/* Ends the POST exchange when nothing is outstanding. true when s was freed. */
bool actor_stream_settle(actor_t *a, stream_t *s);
/* Auto mode: arms the timer that switches a silent POST stream to SSE. */
void actor_stream_arm_window(actor_t *a, stream_t *s);

/* ---- an exchange on a POST stream (the protocol layer's three entry points) ----
 *
 * stream_begin opens the exchange of one POST body: a new POST stream on conn that owes
 * `requests` answers and is not settled while the body is dispatched (so a body whose requests
 * all answer at once gets one reply); stream_add_call adds each request's call (its latency
 * counted from recv_us, the receipt, when known); stream_settle ends the dispatch and settles
 * the stream. Between them the caller may start SSE (actor_stream_start_sse) and answers or
 * starts the calls; it writes none of the stream's fields itself. */
enum {
    STREAM_BEGIN_BATCH = 1,     /* a JSON reply is an array (a JSON-RPC batch) */
    STREAM_BEGIN_SESSION_ID = 2 /* the reply carries Mcp-Session-Id (initialize) */
};
static inline stream_t *stream_begin(actor_t *a, conn_ref_t conn, int requests, unsigned flags)
{
    stream_t *s = actor_new_post_stream(a, conn);
    s->batch = (flags & STREAM_BEGIN_BATCH) != 0;
    s->session_header = (flags & STREAM_BEGIN_SESSION_ID) != 0;
    s->outstanding = requests;
    s->dispatching = true;
    return s;
}
static inline call_t *stream_add_call(actor_t *a, stream_t *s, const json_t *id,
                                      stats_method_t method, int64_t recv_us)
{
    call_t *c = actor_add_call(a, s, id, method);
    if (recv_us)
        c->started_us = recv_us; /* latency counts from receipt, queueing included */
    return c;
}
/* The body is dispatched: s settles when nothing is outstanding (true: it was answered and
 * freed); otherwise, with arm_window, auto mode's timer starts (actor_stream_arm_window). */
static inline bool stream_settle(actor_t *a, stream_t *s, bool arm_window)
{
    s->dispatching = false;
    if (actor_stream_settle(a, s))
        return true;
    if (arm_window)
        actor_stream_arm_window(a, s);
    return false;
}
/* A JSON reply (not SSE) goes out with this HTTP status instead of 200; retry_after (static)
 * goes with a 503 (NULL: it stays as it is, by default "1"). */
static inline void stream_set_reply_status(stream_t *s, int status, const char *retry_after)
{
    s->http_status = status;
    if (retry_after)
        s->retry_after = retry_after;
}
/* Switches a pending POST stream to SSE now. */
void actor_stream_start_sse(actor_t *a, stream_t *s);
void actor_delete(actor_t *a);
/* The turn's writes were refused (worker.h): the client side of every stream is told (an
 * error for each request still open, 503 for a response not started), its jobs are cancelled,
 * and a is freed without writing; its next message reloads it from the store. why: the error's
 * message (refuse.h: REFUSE_MESSAGE, READ_FAILED_TURN). */
void actor_reset(actor_t *a, const char *why);
/* The worker's turn batch, for writes on behalf of a (marks a touched: worker_touch). */
store_batch_t *actor_batch(actor_t *a);
/* Replies on a connection the actor does not keep (errors, 202s, DELETE). */
void actor_reply(worker_t *w, conn_ref_t conn, int status, json_t *body, const char *sid_header);
/* The same with the body already JSON text (malloc'd, taken); retry_after (static) goes with
 * a 503 (NULL: "1", a shard moving: ask again soon). */
void actor_reply_text(worker_t *w, conn_ref_t conn, int status, char *body, size_t len,
                      const char *sid_header, const char *retry_after);
/* id: the request's id to echo (borrowed; NULL for null, e.g. a batch). */
void actor_reply_error(worker_t *w, conn_ref_t conn, const json_t *id, int status, int code,
                       const char *msg);
/* An error reply with Retry-After (a static string). */
void actor_reply_retry(worker_t *w, conn_ref_t conn, const json_t *id, int status, const char *msg,
                       const char *retry_after);
/* Requests of the session not answered yet (every request of a batch counts). */
int actor_requests_in_flight(const actor_t *a);
/* Hands j to the tool pool, or queues it on the actor while the session runs --session-jobs
 * handlers already (fairness: one session never holds the whole pool). */
void actor_submit_job(actor_t *a, job_t *j);
/* A modern request's actor whose request is answered: freed, nothing written. */
void actor_discard(actor_t *a);
/* Hibernation: true when nothing is attached, running or awaited. */
bool actor_is_idle(const actor_t *a);
/* Tells its running jobs to stop (their results still reach the store) and ends its queued
 * ones; moving (a shard's release): those that never ran answer the retry error. */
void actor_cancel_jobs(actor_t *a, bool moving);
/* A request or a GET reached session a: from now on it expires by --session-ttl only. */
void actor_mark_used(actor_t *a);
/* Writes what a wake needs and frees the actor (idle actors only). */
void actor_hibernate(actor_t *a);

/* ---- shared by the files of src/actor (worker thread) ---- */

/* stream.c */
/* The opening bytes of a fresh SSE stream (retry hint and priming event where the version
 * has them) into `into`. */
void actor_stream_prime(actor_t *a, stream_t *s, buf_t *into);
/* Queues the start of an SSE response on s->conn (body: first bytes, taken). */
void actor_send_sse_start(actor_t *a, stream_t *s, buf_t *body, bool keepalive);
/* Queues the end of the SSE response on conn. */
void actor_send_sse_end(actor_t *a, conn_ref_t conn, uint64_t num);
/* Takes s off the turn's dirty list, writing its record first when `write`. */
void actor_stream_undirty(stream_t *s, bool write);
/* Reads a stream record (commits the turn first), its seq raised to the newest stored event's:
 * 0 found, 1 absent, -EIO when the store failed to read the record or its newest event. */
int actor_load_stream_rec(actor_t *a, uint64_t num, streamrec_t *r);
/* actor.c: writes the metadata of every actor marked this turn into the batch. */
void actor_flush_meta(void);
/* resume.c */
void actor_handle_get(actor_t *a, wmsg_t *m);
void actor_handle_conn_closed(actor_t *a, wmsg_t *m);
/* toolmsg.c */
void actor_handle_tool_msg(worker_t *w, wmsg_t *m);
/* A handler's operation on a handle (WM_TOOL_STATE whose job names a handle), on the
 * handle's worker: create, delete, or a state get/put/update. */
void actor_handle_handle_op(worker_t *w, wmsg_t *m);
/* A cancelled job still waiting for a place ends now, without taking one. */
void actor_unqueue_job(actor_t *a, job_t *j);
/* Sends j's server->client request m (WM_TOOL_REQ, method its payload's) to the client, used
 * by the protocol layer (actor_ops_t.on_tool_request): on the call's stream (a request-related
 * one), else on the standalone stream, else on the one active POST stream; the client's answer
 * goes to the handler (the pending table). With no such stream the handler gets an error. */
void actor_send_tool_request(actor_t *a, job_t *j, const wmsg_t *m, const char *method);
/* Jobs that never got a place go to the pool regardless (cancelled: they end at once). */
void actor_release_queued_jobs(actor_t *a);

/* The standalone stream (loaded on first use; created when `create` and none is stored). NULL
 * when there is none and not `create`, or when the store failed to read its record (*err
 * -EIO; err may be NULL where unreadable may count as none): none is made then. */
stream_t *actor_get_stream(actor_t *a, bool create, int *err);
/* A stream in memory, or NULL. */
stream_t *actor_find_stream(actor_t *a, uint64_t num);
/* A POST stream from its stored record, put in memory; NULL when the session has no such stream
 * (*err 0) or the store failed to read it (*err -EIO). */
stream_t *actor_load_stream(actor_t *a, uint64_t num, int *err);
void actor_free_stream(actor_t *a, stream_t *s, bool write_meta);
/* Its metadata is written at the end of the turn. */
void actor_stream_dirty(stream_t *s);
/* Newest stored seq of a stream (0 when it has no events). */
uint64_t actor_newest_seq(actor_t *a, uint64_t num);

/* A WM_BROADCAST: offered to every actor of the worker in memory (actor_ops_t on_broadcast:
 * the protocol layer delivers it where a subscriptions/listen filter or a resources/subscribe
 * asks for it). */
void actor_broadcast(worker_t *w, wmsg_t *m);
/* Shutdown: every subscriptions/listen call of the worker ends with its closing result. */
void actor_end_listens(worker_t *w);

/* sweep.c: alarms, expiry, sweep, recovery. */
/* When a session never used after initialize is deleted (created + --unused-session-ttl). */
int64_t actor_unused_expiry(const actor_t *a);
/* Moves the session's alarm to `due` (0 clears it). */
void actor_alarm_set(actor_t *a, int64_t due);
/* Makes sure the alarm is due no later than `due`. */
void actor_alarm_ensure(actor_t *a, int64_t due);
/* A POST stream finished: index its expiry and make sure the alarm covers it. */
void actor_stream_finished(actor_t *a, stream_t *s);
/* Past --session-log-bytes: deletes the oldest finished POST streams until the session is
 * back under three quarters of it. */
void actor_trim_log(actor_t *a);
/* Handles the alarm due at `due`. Returns false when the session was deleted (a is freed). */
bool actor_on_alarm(actor_t *a, int64_t due);
/* Writes an error for requests that were in flight when the process died (or when a failed
 * turn reset the actor): list is [[stream, id], ...], why the error message. A request whose
 * stream is live in memory (outstanding: one that came after a read error left the recovery for
 * a later message) is not one of them: its key stays. */
void actor_recover(actor_t *a, json_t *list, const char *why);
/* The session's requests in the in-flight index ([[stream, id], ...]; new array). NULL when a
 * read error stopped the scan: the keys stay, and the session is marked (worker_mark_recover,
 * with why) so that its next message reads them again. */
json_t *actor_inflight(actor_t *a, const char *why);
/* The sweep's re-arm decision (pure): the earliest of the session's expiry, the first
 * finished-stream expiry and the standalone stream's expiry (0 = none); SWEEP_SOON_MS after
 * now when the run hit its limit (`more`) or something already due was left. */
int64_t sweep_next_due(int64_t now, bool more, int64_t session_expiry,
                       int64_t first_finished_expiry, int64_t standalone_expiry);
/* Main thread, at startup: finds in-flight requests in the store and sends WM_RECOVER; returns
 * how many, or -EIO when a read error stopped the walk (some were not found). */
long actors_recover_all(store_t *store);
/* A shard came in (adopt, reclaim): the in-flight requests of the ids under prefix, read
 * before they are served ({sid: [[stream, id], ...]}, new), so none of this node's own is
 * among them: what its last holder left unanswered (an answer its store refused, whose reset
 * actor was remembered only in that process's memory). NULL when a read error stopped the
 * scan: the rest is unread, not absent. */
json_t *actors_inflight_of_prefix(store_t *store, const char *prefix, size_t plen);
/* Once they are served: WM_RECOVER for each (a stored -32603 error, as at startup); takes
 * by_sid. Returns the number of requests. */
long actors_recover_moved(json_t *by_sid);

/* The actor's log threshold (the protocol layer's: actor_ops_t log_enabled): true when a
 * message at `level` is to be sent. */
bool actor_log_enabled(const actor_t *a, const char *level);

#endif
