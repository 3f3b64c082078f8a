/* Store key encoding and event ids. Pure functions, any thread.
 *
 * Every per-session key starts with the 32-byte session id, so one session's records are one
 * contiguous range in each column family (deleted with one DeleteRange, iterated with bounds).
 * Integers are big-endian so that byte order is numeric order.
 *
 *   sessions  sid                                  -> session metadata (JSON)
 *   streams   sid | stream u64                     -> stream metadata (JSON)
 *   events    sid | stream u64 | seq u64           -> message text (empty = priming event)
 *   reqmap    sid | request-id JSON | 0 | stream u64 -> (empty)   reverse of stream's ids
 *   state     sid | name                           -> tool state value (JSON)
 *   alarms    due_ms u64 | sid                     -> (empty)   one per session, by due time
 *   expiry    sid | expiry_ms u64 | stream u64      -> (empty)   finished POST streams, by expiry
 *
 * Event ids (what a client sees of a stream and a seq) are in wire/eventid.h.
 */
#ifndef MCPD_STORE_KEYS_H
#define MCPD_STORE_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

#define KEY_SESSION_LEN SESSION_ID_LEN
#define KEY_STREAM_LEN (SESSION_ID_LEN + 8)
#define KEY_EVENT_LEN (SESSION_ID_LEN + 16)
#define KEY_ALARM_LEN (8 + SESSION_ID_LEN)
#define KEY_EXPIRY_LEN (SESSION_ID_LEN + 16)
#define KEY_STATE_MAX (SESSION_ID_LEN + 200)

void key_put_u64(unsigned char *p, uint64_t v);
uint64_t key_get_u64(const unsigned char *p);

size_t key_stream(unsigned char *out, const char *sid, uint64_t stream);
size_t key_event(unsigned char *out, const char *sid, uint64_t stream, uint64_t seq);
size_t key_alarm(unsigned char *out, int64_t due_ms, const char *sid);
size_t key_expiry(unsigned char *out, const char *sid, int64_t expiry_ms, uint64_t stream);
/* -1 when name is empty or longer than 200 bytes. */
long key_state(unsigned char *out, const char *sid, const char *name);
/* out must hold SESSION_ID_LEN + idlen + 9 bytes. */
size_t key_reqmap(unsigned char *out, const char *sid, const char *reqid_json, size_t idlen,
                  uint64_t stream);
/* The exclusive upper bound of a session's range: sid with its last byte incremented. */
void key_session_upper(unsigned char *out, const char *sid);

/* Decoders: 0 on success, -1 when the key does not have that shape. */
int key_event_decode(const unsigned char *k, size_t len, uint64_t *stream, uint64_t *seq);
int key_stream_decode(const unsigned char *k, size_t len, uint64_t *stream);
int key_alarm_decode(const unsigned char *k, size_t len, int64_t *due_ms, char *sid_out);
int key_expiry_decode(const unsigned char *k, size_t len, int64_t *expiry_ms, uint64_t *stream);

#endif
