/* The admin listener (--admin-listen, loopback by default): GET /healthz and GET /stats.
 * One thread with its own event_base; it only reads process-wide counters and RocksDB
 * properties, never actor state. */
#ifndef MCPD_ADMIN_ADMIN_H
#define MCPD_ADMIN_ADMIN_H

#include "store/store.h"

/* 0, or -1 after logging why. *bound_port gets the port (port 0 picks one). */
int admin_start(const char *host, int port, store_t *store, int *bound_port);
void admin_stop(void);

#endif
