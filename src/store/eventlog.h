/* The event log: a session's streams and what was sent on them, in RocksDB. Any thread for reads
 * (RocksDB is thread-safe); writes go into the caller's batch. It owns the layout (keys.h,
 * records.h) and knows nothing of actors: the caller decides when to append, evict, expire or
 * delete (the policy), this module how it is stored.
 *
 *   events   sid | stream | seq     -> the message text (empty: a priming event, kept so that
 *                                      its seq is never issued again)
 *   streams  sid | stream           -> the stream record (records.h)
 *   expiry   sid | expiry | stream  -> (empty) finished POST streams in expiry order
 *   reqmap   sid | id | 0 | stream  -> (empty) the in-flight index: requests of an SSE stream
 *                                      not answered yet (what a crash interrupted)
 *
 * Errors follow the store's convention: reads return 0 / 1 (absent) / negative errno; a read
 * error is logged and counted by the store. Where a value is returned without a status (a
 * newest seq of 0, no first expiry) a read error reads as "absent"; what numbers or replays
 * from it has the checked form (eventlog_newest, eventlog_replay_after's -EIO).
 */
#ifndef MCPD_STORE_EVENTLOG_H
#define MCPD_STORE_EVENTLOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/records.h"
#include "store/store.h"

/* ---- events ---- */

/* Puts event `seq` of a stream into b. With cap > 0 and seq > cap, the event cap places older
 * is deleted in the same batch; *evicted_bytes gets its size as stored (0 when none was
 * stored, or when it is in b: see eventlog_evict). */
void eventlog_append(store_t *s, store_batch_t *b, const char *sid, uint64_t stream, uint64_t seq,
                     const char *data, size_t len, uint64_t cap, uint64_t *evicted_bytes);

/* Deletes event `seq` of a stream in b; returns its size (0 when it was not stored). The
 * caller's cap policy picks seq (a POST stream's cap skips its priming event and responses).
 * The size is read from the store, which does not see b: `known`, when not NULL, is the size
 * of an event put into b and not yet committed. */
uint64_t eventlog_evict(store_t *s, store_batch_t *b, const char *sid, uint64_t stream,
                        uint64_t seq, const uint64_t *known);

/* Called for each stored event after `after`, in order (data may be empty: a priming event). */
typedef void (*eventlog_event_fn)(void *arg, uint64_t seq, const char *data, size_t len);
/* Replays a stream's events after `after`; returns how many it found (priming events
 * included). *first_seq gets the first seq found (0 when none): a gap when it is not
 * after + 1 (the cap evicted the ones between). Nothing can follow UINT64_MAX. -EIO when a
 * read error ended the scan early: fn saw only part of them, and the replay is incomplete. */
long eventlog_replay_after(store_t *s, const char *sid, uint64_t stream, uint64_t after,
                           eventlog_event_fn fn, void *arg, uint64_t *first_seq);
/* The newest stored seq of a stream into *seq (0 when it has no event): 0, or -EIO when a read
 * error hid it. */
int eventlog_newest(store_t *s, const char *sid, uint64_t stream, uint64_t *seq);
/* The same, 0 also for a read error (the sweep's use: nothing is numbered from it). */
uint64_t eventlog_newest_seq(store_t *s, const char *sid, uint64_t stream);
/* Deletes every event of a stream (its record stays). */
void eventlog_delete_events(store_batch_t *b, const char *sid, uint64_t stream);

/* ---- stream records ---- */

void eventlog_put_stream(store_batch_t *b, const char *sid, uint64_t stream, const streamrec_t *r);
/* 0 found (r->req_ids a new reference or NULL), 1 absent or unreadable, negative errno. */
int eventlog_get_stream(store_t *s, const char *sid, uint64_t stream, streamrec_t *r);
/* The number after the session's newest stored stream (1 when it has none; 0: a read error). */
uint64_t eventlog_next_stream(store_t *s, const char *sid);
/* What a wake needs of the session's stream records, in one walk over them: the number after
 * the newest (1 when it has none) and the payload bytes they say their streams keep (the
 * session's event-log budget counts them). *all_known false: an older record without that
 * figure was among them (counted as 0). O(streams of the session). 0: a read error stopped
 * the walk (the number is not known). */
uint64_t eventlog_stream_totals(store_t *s, const char *sid, uint64_t *bytes, bool *all_known);

/* ---- finished streams by expiry ---- */

void eventlog_index_expiry(store_batch_t *b, const char *sid, int64_t expiry_ms, uint64_t stream);
/* The first indexed expiry of the session (0 when none). */
int64_t eventlog_first_expiry(store_t *s, const char *sid);
/* Called for indexed streams in expiry order; return false to stop. */
typedef bool (*eventlog_expiry_fn)(void *arg, int64_t expiry_ms, uint64_t stream);
/* Walks the index of the session for expiries <= until (INT64_MAX: all). */
void eventlog_scan_expiry(store_t *s, const char *sid, int64_t until, eventlog_expiry_fn fn,
                          void *arg);
/* Deletes a finished stream: its events (one range), its record and its index key. Returns the
 * payload bytes its record said it kept. */
uint64_t eventlog_delete_stream(store_t *s, store_batch_t *b, const char *sid, uint64_t stream,
                                int64_t expiry_ms);

/* ---- the in-flight index ---- */

void eventlog_inflight_put(store_batch_t *b, const char *sid, const json_t *id, uint64_t stream);
void eventlog_inflight_delete(store_batch_t *b, const char *sid, const json_t *id, uint64_t stream);
/* The session's entries as [[stream, id], ...] (new array); NULL with *err -EIO when a read
 * error stopped the scan (the entries after it are unread, not absent). */
json_t *eventlog_inflight_list(store_t *s, const char *sid, int *err);
/* How many puts and deletes of in-flight keys were batched so far, process-wide (tests). */
long eventlog_inflight_writes(void);
/* Startup: fn gets every session with entries, once, with its list (stolen: fn owns it, so it
 * can hand it to another thread whole). Returns the number of entries, or -EIO when a read
 * error stopped the walk (fn got only part of them). */
typedef void (*eventlog_inflight_fn)(void *arg, const char *sid, json_t *list);
long eventlog_inflight_scan_all(store_t *s, eventlog_inflight_fn fn, void *arg);
/* The same for the sessions whose ids start with prefix (plen bytes: a shard's, after an
 * adopt). */
long eventlog_inflight_scan_prefix(store_t *s, const char *prefix, size_t plen,
                                   eventlog_inflight_fn fn, void *arg);

/* ---- a whole session ---- */

/* Deletes every key of the session in the event log and sessionrec families (metadata, streams,
 * events, in-flight index, state, expiry index); its alarm key is the caller's (sessionrec.h).
 * With only_meta, the session stored nothing but its metadata: one point delete, no range
 * tombstones (they slow later reads). */
void eventlog_delete_session(store_batch_t *b, const char *sid, bool only_meta);

#endif
