/* The cluster file (--cluster FILE --node NAME): which shards this node owns, and its own
 * addresses and data directory unless the command line gives them. Format in README "Run a
 * cluster"; tools/mcpd-cluster writes HAProxy's configuration from the same file. */
#ifndef MCPD_CORE_CLUSTER_H
#define MCPD_CORE_CLUSTER_H

#include <stdbool.h>

#include "core/config.h"

/* given_*: the flag was on the command line (it wins over the file). 0, or -1 after printing
 * what is wrong with the file. */
int cluster_load(config_t *c, bool given_listen, bool given_admin, bool given_data);

#endif
