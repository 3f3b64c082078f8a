/* CORS on the MCP listener (--cors-origin): what a browser needs to call /mcp from a page of
 * another origin. HTTP threads only. The values are core/cors.h's.
 *
 * Two hooks, and nothing else in the HTTP layer knows about CORS:
 *  - http_cors_preflight, at the front of every request callback (right after the framing
 *    check, before shutdown, --max-connections, the Origin and Host checks and
 *    authentication): a preflight from an allowed origin gets its 204 there, one from another
 *    origin 403. A preflight carries no credentials, so nothing it could be refused for later
 *    applies to it.
 *  - http_cors_headers, from the two places every answer of the listener leaves by
 *    (http_send_reply, and the start of an SSE answer): the answer to a request whose Origin
 *    is allowed carries Access-Control-Allow-Origin and the exposed headers, whichever thread
 *    built it and whatever its status. The Origin is read from the request itself, which
 *    lives until its answer is sent, so an answer a worker sends later (hmsg_t) needs nothing
 *    remembered.
 * Without --cors-origin both return at once. */
#ifndef MCPD_HTTP_CORS_H
#define MCPD_HTTP_CORS_H

#include <stdbool.h>

struct evhttp_request;

/* Answers req when it is a CORS preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) and --cors-origin is set: 204 with the allowed methods and
 * headers for an allowed origin, 403 (a JSON-RPC error, no CORS headers) for another. True when
 * it answered. */
bool http_cors_preflight(struct evhttp_request *req);
/* Adds the CORS response headers to req's answer: Vary: Origin whenever --cors-origin is set,
 * and for an allowed Origin Access-Control-Allow-Origin and Access-Control-Expose-Headers. */
void http_cors_headers(struct evhttp_request *req);

#endif
