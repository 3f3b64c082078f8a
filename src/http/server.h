/* The MCP endpoint's HTTP threads: one event_base + evhttp each, each with its own
 * SO_REUSEPORT listening socket on the same address (the kernel spreads connections).
 * Only an HTTP thread touches its evhttp requests; actors reach them with conn_ref_t. */
#ifndef MCPD_HTTP_SERVER_H
#define MCPD_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/mq.h"

struct event_base;

/* Main thread: binds host:port for n threads (port 0 picks a free one; the bound port is
 * written to *bound_port) and makes their event loops, without starting them. 0, or -1 after
 * logging why. */
int http_init(int n, const char *host, int port, int *bound_port);
/* The event_base of HTTP thread i (co-located workers run on it). */
struct event_base *http_base(int i);
/* Main thread: starts the HTTP threads. */
int http_run(void);
/* Main thread, before http_run: the listening sockets close, so that loops started only to
 * stop (a start refused once the threads run: co-located workers live on these loops, and the
 * stop waits for turns they take) accept nothing meanwhile. */
void http_unlisten(void);
/* Any thread: hands a chain of hmsg_t to HTTP thread `thread`. */
void http_deliver(uint32_t thread, mq_node_t *first, mq_node_t *last, size_t n);
/* Main thread: stop accepting, end every open stream, answer pending requests with 503. The
 * loops keep running (co-located workers may still have work). Returns when every thread did. */
void http_quiesce(void);
/* Main thread: ends the loops and joins the threads. */
void http_stop(void);
/* Main thread, after the workers stopped: free what is left in the inboxes. */
void http_free(void);

#endif
