/* The cluster file (--cluster FILE --node NAME): which shards this node owns, and its own
 * addresses and data directory unless the command line gives them. Format in README "Run a
 * cluster"; tools/mcpd-cluster writes HAProxy's configuration from the same file. */
#ifndef MCPD_CORE_CLUSTER_H
#define MCPD_CORE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

/* given_*: the flag was on the command line (it wins over the file). 0, or -1 after printing
 * what is wrong with the file. */
int cluster_load(config_t *c, bool given_listen, bool given_admin, bool given_data);

/* What the cluster file says of shard s (after cluster_load): whether it gives s to this node,
 * and the shard's epoch there ("epochs": {"abc": N}; 1 for a shard it names no epoch for: one
 * that never moved). */
bool cluster_file_mine(int s);
uint32_t cluster_file_epoch(int s);
/* The nodes the file names: how many, and the name of the i-th (NULL past the last). */
int cluster_node_count(void);
const char *cluster_node_name(int i);
/* Whether the file names a node so, and its admin address: 0, or -1. */
int cluster_node_admin(const char *name, char *host, size_t hostlen, int *port);
/* A node name as the file allows it: 1..64 of letters, digits, '_', '.', '-' (no leading '.'
 * or '-'): it becomes an HAProxy backend name and goes into records unescaped. */
bool cluster_name_ok(const char *name);

#endif
