/* Value encodings of store records. Pure functions, any thread.
 *
 * Stream record (column family "streams"), binary so that the per-event metadata update is
 * cheap:  'T' | flags u8 | seq u64 | last_write_ms u64 | bytes u64 | request ids as JSON text
 * (may be empty). bytes: the payload bytes of the events the stream keeps (the session's
 * event-log budget counts them). The older form 'S' has no bytes field; it decodes as 0.
 *   flags: bit 0 finished (every response written), bit 1 standalone GET stream, bit 2
 *          delivered (a GET connection has been attached to it at least once).
 */
#ifndef MCPD_STORE_RECORDS_H
#define MCPD_STORE_RECORDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct streamrec {
    bool finished;
    bool is_get;
    bool delivered;
    uint64_t seq;
    int64_t last_write_ms;
    uint64_t bytes;
    json_t *req_ids; /* array or NULL */
} streamrec_t;

/* Returns a malloc'd value and its length. */
char *streamrec_encode(const streamrec_t *r, size_t *len);
/* 0, or -1 when malformed. r->req_ids is a new reference (or NULL). */
int streamrec_decode(const char *v, size_t len, streamrec_t *r);
/* The bytes field alone, without the request ids' parse: 0 with *known true when it is there,
 * -1 when the record is malformed; an older 'S' record has none (*known false, 0 bytes). */
int streamrec_bytes(const char *v, size_t len, uint64_t *bytes, bool *known);

#endif
