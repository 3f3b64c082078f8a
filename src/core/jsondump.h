/* Compact JSON serialisation: the same text as json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)
 * (keys in insertion order, UTF-8 kept, reals as %.17g with a ".0" when integral), written
 * straight into a buffer. Pure, any thread.
 *
 * Why not json_dumps: it goes through a generic string buffer and snprintf for every number,
 * and showed as 12% of a tools/call in callgrind; this writer is the hot path of every reply. */
#ifndef MCPD_CORE_JSONDUMP_H
#define MCPD_CORE_JSONDUMP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

/* Appends v; false (with nothing sensible appended) when v nests deeper than 2048. */
bool json_dump_into(buf_t *out, const json_t *v);
/* The text of v (caller frees) and its length. */
char *json_dump_compact(const json_t *v, size_t *len);

#endif
