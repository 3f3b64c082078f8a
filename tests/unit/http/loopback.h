/* A test's HTTP client for a server on 127.0.0.1: one raw request per connection ("Connection:
 * close" is the caller's to send), the whole answer read back and split into status, head and
 * body. The server is either an evhttp the test runs on its own event_base (base given: the
 * client turns that loop between its reads, so the request callback runs on the test's
 * thread, as on an HTTP thread) or a listener with a thread of its own (base NULL).
 * Used by tests/unit/http and tests/unit/admin. */
#ifndef MCPD_TEST_LOOPBACK_H
#define MCPD_TEST_LOOPBACK_H

#include <stddef.h>

struct event_base;
struct evhttp;
struct evhttp_request;

typedef struct lb_answer {
    int status;       /* 0 when no complete status line came back */
    char *raw;        /* everything read, NUL-terminated (malloc'd) */
    const char *head; /* in raw: the header lines, each ending "\r\n" */
    const char *body; /* in raw: what follows the empty line */
    size_t body_len;
} lb_answer_t;

/* http (an evhttp) bound to 127.0.0.1 on a free port, every path to cb(req, arg). Returns the
 * port, or -1. */
int lb_listen(struct evhttp *http, void (*cb)(struct evhttp_request *, void *), void *arg);
/* Sends raw to 127.0.0.1:port and reads until the server closes (5 s at most). 0, or -1. */
int lb_exchange(struct event_base *base, int port, const char *raw, lb_answer_t *a);
/* The value of the answer's header name (the first, case-insensitive) copied into out, or
 * NULL when it is absent. */
const char *lb_header(const lb_answer_t *a, const char *name, char *out, size_t n);
/* How many times header name occurs in the answer. */
int lb_header_count(const lb_answer_t *a, const char *name);
void lb_answer_free(lb_answer_t *a);

#endif
