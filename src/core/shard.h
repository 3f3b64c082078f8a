/* Shards (scale-out): every id the server mints (sessions, state handles, tasks, input records)
 * carries its shard in its first SHARD_HEX hex characters, one of SHARD_COUNT, fixed for every
 * cluster. A node serves only the shards it owns (all of them without --cluster); a request
 * naming another shard is misdirected (503 + Retry-After, -32010: HAProxy's map is changing, or
 * the client came to the wrong node). Ownership is read by every thread (atomics) and changed
 * only at start (the cluster file) or by a shard move. */
#ifndef MCPD_CORE_SHARD_H
#define MCPD_CORE_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#define SHARD_COUNT 4096
#define SHARD_HEX 3

/* The shard of an id (its first SHARD_HEX lowercase hex characters); -1 when they are not. */
int shard_of(const char *id);
/* Writes shard s as SHARD_HEX lowercase hex characters at out (no NUL). */
void shard_put(char *out, int s);
bool shard_owned(int s);
/* id's shard is owned here (an id that carries no shard is: it cannot be anyone else's). */
bool shard_owns_id(const char *id);
void shard_set_owned(int s, bool owned);
/* From now on only these shards are owned (cluster_load; before it every shard is). */
void shard_begin_cluster(const bool owned[SHARD_COUNT]);
bool shard_in_cluster(void);
/* Shards owned now. */
int shard_owned_count(void);
/* An owned shard chosen by r (uniform over the owned ones when r is); -1 when none is owned. */
int shard_pick(uint64_t r);
/* The owned shards as ranges, "000-555,7a0" (written into out, cut at len). */
void shard_ranges(char *out, unsigned long len);
/* This node's name in its cluster ("" for a single node). */
const char *shard_node_name(void);
void shard_set_node_name(const char *name);

/* Parses a range list entry "abc" or "abc-def" (3 hex each, inclusive): 0, or -1. */
int shard_parse_range(const char *s, int *from, int *to);

#endif
