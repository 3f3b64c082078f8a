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
/* Appends v (not NULL) whole at any depth: past 2048, the same text from a writer that keeps
 * its own stack on the heap (slower; jansson's json_dumps recurses and overflowed a thread's
 * stack some 25,000 levels down). For a value bounded past 2048, such as a handler's result
 * (50,000 levels, actor/ctx.c): a partial text would be no JSON at all. */
void json_dump_whole_into(buf_t *out, const json_t *v);
/* The text of v at any depth (caller frees) and its length. */
char *json_dump_compact(const json_t *v, size_t *len);

/* The text of v (caller frees) when the store's reader reads it back (json_parse_buf): it
 * nests at most 2048 levels, is UTF-8 (no string made by jansson's _nocheck calls that is
 * not) and has no key with a NUL in it (json_object_setn); else NULL. For what a plugin
 * stores: a state value, a task's result. */
char *json_dump_storable(const json_t *v, size_t *len);
/* Does v read back (as json_dump_storable's text) where a stored text holds it at level depth
 * (1: the whole text)? For a plugin's JSON kept inside metadata (a task's input requests). */
bool json_storable_at(const json_t *v, int depth);

/* An object written member by member, without building it: the text is what the same members,
 * set in the same order on a jansson object (json_object_set_new / json_object_set), dump to
 * (the stored metadata of every session, actor.c). A string that json_string would refuse (NULL,
 * or not UTF-8) leaves its member out, as json_object_set_new(o, k, json_string(s)) does. Keys
 * must be distinct (a jansson object would keep the last value, in the first one's place). */
typedef struct jobj {
    buf_t *out;
    bool more; /* a member was written: the next one needs a comma */
} jobj_t;

void jobj_begin(jobj_t *o, buf_t *out);
void jobj_str(jobj_t *o, const char *key, const char *s);
void jobj_int(jobj_t *o, const char *key, json_int_t v);
void jobj_bool(jobj_t *o, const char *key, bool v);
/* v's text; NULL leaves the member out (json_object_set refuses NULL). */
void jobj_json(jobj_t *o, const char *key, const json_t *v);
void jobj_end(jobj_t *o);

#endif
