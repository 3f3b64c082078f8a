/* Moving a shard between nodes (issue 13): the old owner releases it (stops serving it, lets
 * its actors finish their turns and hibernate, writes its keys out as SST files and deletes its
 * copy); the new owner adopts it (ingests the files, counts what came, hints the alarms, serves
 * it). Called from the admin thread, one move at a time. See ARCHITECTURE.md, Shards. */
#ifndef MCPD_ACTOR_SHARDMOVE_H
#define MCPD_ACTOR_SHARDMOVE_H

#include <jansson.h>
#include <stddef.h>

#include "store/store.h"

void shardmove_init(store_t *store);
/* 0 with *report (new), or -errno with why: -EALREADY not owned here, -EBUSY its actors did
 * not settle within wait_ms (the shard is served here again), -EIO the export failed (served
 * here again; nothing was deleted). */
int shard_release(int shard, const char *dir, long wait_ms, json_t **report, char *why,
                  size_t whylen);
/* 0 with *report, or -errno with why (-EALREADY owned here already, -EIO ingestion failed). */
int shard_adopt(int shard, const char *dir, json_t **report, char *why, size_t whylen);

#endif
