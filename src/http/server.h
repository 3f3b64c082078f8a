/* The MCP endpoint's HTTP threads: one event_base + evhttp each, each with its own
 * SO_REUSEPORT listening socket on the same address (the kernel spreads connections).
 * Only an HTTP thread touches its evhttp requests; actors reach them with conn_ref_t. */
#ifndef MCPD_HTTP_SERVER_H
#define MCPD_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/mq.h"

/* Main thread: binds host:port on n threads (port 0 picks a free one; the bound port is
 * written to *bound_port) and starts them. 0, or -1 after logging why. */
int http_start(int n, const char *host, int port, int *bound_port);
/* Any thread: hands a chain of hmsg_t to HTTP thread `thread`. */
void http_deliver(uint32_t thread, mq_node_t *first, mq_node_t *last, size_t n);
/* Main thread: stop accepting, end every open stream, answer pending requests with 503, and
 * join the threads. */
void http_stop(void);
/* Main thread, after the workers stopped: free what is left in the inboxes. */
void http_free(void);

#endif
