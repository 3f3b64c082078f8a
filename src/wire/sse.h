/* Server-sent events framing. Pure functions, any thread.
 *
 * Each message is one event: "id: <id>\n" (when ids are on), then the JSON on "data:" lines,
 * then a blank line. A compact JSON text has no raw line breaks, so it is one data line; any
 * CR or LF in data still splits into several data lines, which a client joins with LF.
 * The keepalive is a comment frame, which every SSE client ignores: ": keepalive\n\n".
 */
#ifndef MCPD_WIRE_SSE_H
#define MCPD_WIRE_SSE_H

#include <stddef.h>

#include "core/buf.h"

#define SSE_KEEPALIVE ": keepalive\n\n"

/* Appends one event. id may be NULL (no id line); data may be empty (priming). */
void sse_frame_event(buf_t *out, const char *id, const char *data, size_t len);
/* Appends a retry field line "retry: <ms>\n": put it inside an event block (before
 * sse_frame_event), or follow it with "\n" to send it alone. */
void sse_frame_retry(buf_t *out, long long ms);

#endif
