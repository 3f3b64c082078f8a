/* The admin listener's connection cap (conns.c): ADMIN_MAX_CONNECTIONS open at once; past it
 * new connections wait in the kernel's backlog; ADMIN_ADDRESS_SHARE of them from one address. Its answers' timeouts while they are written.
 * Admin thread only, but for init and free. */
#ifndef MCPD_ADMIN_CONNS_H
#define MCPD_ADMIN_CONNS_H

#include "core/acceptguard.h"

struct evhttp;
struct evhttp_request;
struct event_base;

#define ADMIN_MAX_CONNECTIONS 32
/* Of which one address (an IPv6 /64) holds at most this many: its next connections are closed at once, so
 * a client holding silent connections cannot keep a health check or a scrape from another
 * address waiting at the cap. */
#define ADMIN_ADDRESS_SHARE (ADMIN_MAX_CONNECTIONS / 2)
/* A connection's input read and not yet parsed, at most (its pipelined requests). */
#define ADMIN_INPUT_MAX (64 * 1024)

/* Counts http's connections and holds guard's listener at the cap. 0, or -1 (out of memory). */
int admin_conns_init(struct evhttp *http, struct event_base *base, accept_guard_t *guard);
/* Once the loop has ended, before evhttp_free. */
void admin_conns_free(void);
/* req's answer is written with no read timeout (the write timeout stays), which comes back when
 * it is done; call it just before evhttp_send_reply. */
void admin_conns_answer_unhurried(struct evhttp_request *req);
/* The admin listener's read and write timeout: --read-timeout, at most 30 s (a longer one for
 * slow MCP uploads does not let silent connections hold the admin's places longer). */
int admin_conns_timeout_s(void);

#endif
