/* The admin listener's connection cap (conns.c): ADMIN_MAX_CONNECTIONS open at once; past it
 * new connections wait in the kernel's backlog. Admin thread only, but for init and free. */
#ifndef MCPD_ADMIN_CONNS_H
#define MCPD_ADMIN_CONNS_H

#include "core/acceptguard.h"

struct evhttp;
struct event_base;

#define ADMIN_MAX_CONNECTIONS 32

/* Counts http's connections and holds guard's listener at the cap. 0, or -1 (out of memory). */
int admin_conns_init(struct evhttp *http, struct event_base *base, accept_guard_t *guard);
/* Once the loop has ended, before evhttp_free. */
void admin_conns_free(void);

#endif
