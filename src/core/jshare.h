/* A few recent JSON values that equal ones can share (a session's clientInfo and capabilities).
 *
 * Sessions from one kind of client send the same clientInfo and capabilities. Each session
 * kept its own parsed copy, two jansson objects of ~800 bytes together, more than half of an
 * idle session's memory. A jshare_t remembers the last JSHARE_SLOTS distinct values it was
 * given; a value equal (json_equal) to one of them is replaced by a reference to it (values of
 * up to JSHARE_MAX_NODES values only, so a comparison stays cheap). Shared
 * values must be treated as read-only (nothing in the server changes them). Not thread-safe:
 * one owner thread (a worker), and the references it hands out stay on that thread (no value
 * is shared across threads: jansson reads a count plainly before it changes it).
 */
#ifndef MCPD_CORE_JSHARE_H
#define MCPD_CORE_JSHARE_H

#include <jansson.h>

#define JSHARE_SLOTS 8
#define JSHARE_MAX_NODES 256 /* values of more (objects, arrays and scalars) are not shared */

typedef struct {
    json_t *v[JSHARE_SLOTS];
    unsigned next; /* the slot the next new value replaces (round robin) */
} jshare_t;

/* A new reference to a value equal to v (borrowed): a remembered one, or v itself, which is
 * remembered from then on. NULL for NULL. */
json_t *jshare_get(jshare_t *s, json_t *v);
/* Forgets every remembered value. */
void jshare_clear(jshare_t *s);

#endif
