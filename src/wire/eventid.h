/* Event ids: what a client holds of a stream position. Pure functions, any thread.
 *
 * Event ids are "<streamId>:<seq>". streamId is "<tag>-get" for the standalone stream (number 0)
 * or "<tag>-p<hex>" for POST stream number n >= 1, where tag is 8 hex digits derived from the
 * session id: an id copied from another session names a stream this session does not have,
 * even when both sessions have a stream p1. seq is 16 lowercase hex digits, from 1. A stream id
 * never contains ':', so the stream is parsed out of an event id without reading storage.
 */
#ifndef MCPD_WIRE_EVENTID_H
#define MCPD_WIRE_EVENTID_H

#include <stddef.h>
#include <stdint.h>

#define STREAM_GET 0ULL
#define EVENT_ID_MAX 64

/* The session's 32-bit stream-id tag. */
uint32_t session_tag(const char *sid);
/* "<tag>-get" or "<tag>-p<hex>"; returns the length written (out >= 32 bytes). */
size_t stream_id_format(char *out, uint32_t tag, uint64_t stream);
/* Writes "<streamId>:<seq as 16 hex>"; returns its length (out >= EVENT_ID_MAX). */
size_t event_id_format(char *out, uint32_t tag, uint64_t stream, uint64_t seq);
/* Parses an event id: 0, or -1 when malformed (wrong shape, seq 0, stream "p0"). */
int event_id_parse(const char *s, uint32_t *tag, uint64_t *stream, uint64_t *seq);

#endif
