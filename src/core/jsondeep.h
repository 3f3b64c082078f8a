/* A value's depth and its release without recursion, for values nobody bounded (what a
 * plugin's handler builds through jansson). Pure, any thread.
 *
 * Why: jansson's json_decref recurses once a level (some 32 bytes of stack each), so a handler's
 * result nested some 250,000 levels deep overflowed an 8 MiB thread stack where it was freed.
 * jansson's own json_loads stops at 2048 levels and so does core/jsonparse.c; a value built
 * through the API has no such bound. */
#ifndef MCPD_CORE_JSONDEEP_H
#define MCPD_CORE_JSONDEEP_H

#include <jansson.h>
#include <stdbool.h>

/* True when v nests at most max levels (an object or array is a level, the outermost 1; a
 * scalar or NULL is 0: the store's reader, which counts a scalar inside too, reads back a value
 * within 2047). Walks with its own stack on the heap and stops at the first value past max. */
bool json_depth_within(const json_t *v, int max);
/* json_decref(v) at any depth: a container whose only reference this is gives its members to a
 * stack on the heap before it is freed, so no free recurses. NULL is ignored. */
void json_decref_deep(json_t *v);
/* For a value handed over (stolen) whose depth nobody bounded: true when v nests deeper than
 * max, and then v is released (json_decref_deep); false, v untouched, when it is within. */
bool json_drop_if_deeper(json_t *v, int max);

#endif
