/* The HTTP layer's tests' server: an evhttp on 127.0.0.1 that hands every request to one of the
 * layer's callbacks (http_on_mcp, http_on_other, or a test's own), run on the test's thread by
 * the loopback client (loopback.h), with the configuration the listener would leave: defaults
 * (core/config.c), the principals' caps, the Host/Origin allow-lists for the bound port. No
 * worker runs: a request that passes every check would be handed to one, so the tests send
 * requests that some check refuses. */
#ifndef MCPD_TEST_HTTP_FIXTURE_H
#define MCPD_TEST_HTTP_FIXTURE_H

#include <jansson.h>

#include "http/internal.h"
#include "loopback.h"

typedef struct fixture {
    struct event_base *base;
    struct evhttp *http;
    http_thread_t t; /* the "HTTP thread" the callbacks get as their argument */
    int port;
} fixture_t;

/* g_cfg gets its defaults first; a test changes it after this and before fixture_listen
 * (which builds the Host/Origin lists from it, as the listener does). */
void fixture_config(void);
/* Starts the server with cb for every path (arg: &f->t); cb NULL: the listener's routes,
 * http_on_mcp for /mcp and http_on_other for the rest. 0, or -1. */
int fixture_listen(fixture_t *f, void (*cb)(struct evhttp_request *, void *));
void fixture_stop(fixture_t *f);
/* Sends "<method> <path> HTTP/1.1" with the header lines in headers ("Name: value\r\n" each,
 * may be ""), then Host (unless headers hold one), Content-Length (with a body) and
 * Connection: close, then body (may be NULL). Fails the test when no answer comes. */
void fixture_send(fixture_t *f, const char *method, const char *path, const char *headers,
                  const char *body, lb_answer_t *a);
/* Fails the test unless a is a JSON-RPC error answer with this status and code whose message
 * contains says and whose id is id (JSON text: "7", "\"a\"" or "null"). */
void expect_error(const lb_answer_t *a, int status, int code, const char *says, const char *id);
/* Fails the test unless header name is value (value NULL: absent). */
void expect_header(const lb_answer_t *a, const char *name, const char *value);

#endif
