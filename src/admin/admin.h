/* The admin listener (--admin-listen, loopback by default): GET /healthz and GET /stats.
 * One thread with its own event_base; it only reads process-wide counters and RocksDB
 * properties, never actor state. */
#ifndef MCPD_ADMIN_ADMIN_H
#define MCPD_ADMIN_ADMIN_H

#include <jansson.h>
#include <stddef.h>

#include "store/store.h"

/* 0, or -1 after logging why. *bound_port gets the port (port 0 picks one). */
int admin_start(const char *host, int port, store_t *store, int *bound_port);
/* Shard moves, done by the actor layer (main registers them; admin cannot reach it): POST
 * /shards/release?shard=abc&dir=PATH and /shards/adopt?shard=abc&dir=PATH start one on a
 * thread of its own (202; 409 while one runs), GET /shards/move tells how it went. An op
 * returns 0 with *report (new), or -errno with why. */
typedef int (*admin_shard_op)(int shard, const char *dir, json_t **report, char *why,
                              size_t whylen);
void admin_set_shard_ops(admin_shard_op release, admin_shard_op adopt);
void admin_stop(void);

#endif
