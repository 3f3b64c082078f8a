/* What a client gets instead of a turn's frames when the store refused the turn's writes.
 * Pure functions, any thread (the worker calls them at the end of a failed turn).
 *
 * The rule is "stored before sent": a frame queued after the turn's last successful commit may
 * describe something the store does not have (an event, a counter's new value, a session that
 * was never written). None of them goes out. What replaces each:
 *   - a complete reply (JSON, 202, a DELETE's 200) and the start of an SSE response: the
 *     response has not started, so 503 + Retry-After with a JSON-RPC -32603 "storage
 *     unavailable" error, echoing the request id when the replaced body names exactly one;
 *   - more bytes of an SSE response already under way: for every JSON-RPC response among them,
 *     an error for the same request id as an event without an id (it is not stored, so it must
 *     not take a place in the stream's numbering); everything else in them is dropped;
 *   - the end of a stream is kept (it promises nothing).
 */
#ifndef MCPD_ACTOR_REFUSE_H
#define MCPD_ACTOR_REFUSE_H

#include <jansson.h>

#include "actor/msg.h"

/* Seconds a refused client is asked to wait (RocksDB looks at the free space every 5 s). */
#define REFUSE_RETRY_AFTER "5"
#define REFUSE_MESSAGE                                                                     \
    "Storage unavailable: the server could not store this request's effects (its disk is " \
    "full or failing), so nothing of it was kept. Retry later."

/* What a turn that worker_fail_turn failed (a read error, not a refused write) answers in its
 * place, and its interrupted requests get: its cause is known to be a read. */
#define READ_FAILED_TURN                                                                   \
    "Storage unavailable: the server could not read this session's stored data (its disk " \
    "is failing), so nothing of this request was kept. Retry later."

/* What a request for a session whose record the store failed to read gets (503, Retry-After:
 * REFUSE_RETRY_AFTER, -32603): not the 404 of an absent session, which would make the client
 * give up a session that may well exist. */
#define READ_FAILED_MESSAGE                                                               \
    "Storage unavailable: the server could not read this session from its store (a read " \
    "error); the session is not known to be gone. Retry later."
/* A resume whose replay the store failed to read gets it too: nothing of it is sent. */
#define READ_FAILED_EVENTS                                                                \
    "Storage unavailable: the server could not read this stream's stored events (a read " \
    "error), so nothing was replayed. Retry with the same Last-Event-ID later."

/* A call that needs stored state the store failed to read (a tool's state, a handle, a task,
 * an input record) changes nothing and gets it, as a refused write's 503 (JERR_STORAGE). */
#define READ_FAILED_STATE                                                                 \
    "Storage unavailable: the server could not read this request's stored state (a read " \
    "error), so nothing of it was changed. Retry later."

/* The 503 (Retry-After, -32603 msg, id echoed: may be NULL) of a request the store failed to
 * read for: a session's record, a stream's events to replay. */
hmsg_t *refuse_read_failed(conn_ref_t conn, const json_t *id, const char *msg);

/* The JSON-RPC error a refused request gets (new reference); id may be NULL; msg: why
 * (REFUSE_MESSAGE, or READ_FAILED_TURN when a read failed it). */
json_t *refuse_error(const json_t *id, const char *msg);
/* Replaces m (which it frees) by what the client gets instead, saying msg (as refuse_error);
 * NULL when nothing is sent. */
hmsg_t *refuse_frame(hmsg_t *m, const char *msg);
/* The ids of the JSON-RPC responses carried in SSE text (new array). */
json_t *refuse_response_ids_in_sse(const char *text, size_t len);

#endif
