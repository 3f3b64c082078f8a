/* Who a request to /mcp is, and whether it may do what it asks: the bearer token checked
 * against --auth-tokens (constant time) and, with --auth-issuer, as a JWT access token
 * (core/jwt.c against the key set core/issuer.c publishes), then the scopes the request needs
 * (--auth-required-scope, and each tools/call's tool scopes). Also the Protected Resource
 * Metadata (RFC 9728) route. HTTP threads only.
 *
 * Answers, with a JSON-RPC error echoing the id:
 *   401 + WWW-Authenticate: Bearer resource_metadata="..." [, scope="..."]    no token
 *   401 + ... error="invalid_token", error_description="..."                  a bad token
 *   403 + ... error="insufficient_scope", scope="<what the request needs>"    too few scopes
 *   503 + Retry-After                                                          no key set can
 *         be had, or an introspection gets no answer
 * A request whose JWT names a kid the key set lacks, or that comes while no key set is there
 * and a fetch can start, is parked: the auth thread fetches, hands the request back to its
 * thread (an event made active from the auth thread), and the request runs again from its
 * checks, once. So a key rotation at the issuer is seen without a restart and without a failed
 * request. An opaque token (with --auth-introspect) is parked the same way for its
 * introspection.
 * With --auth-tokens alone, the 401 keeps its old form (Bearer realm="mcpactord").
 *
 * A verified JWT (or an introspection answer) is kept in the thread's cache (8,192 entries, keyed by the SHA-256 of the
 * token, until its exp), so a client that reuses its token costs a hash and a lookup. A
 * token is never logged. */
#ifndef MCPD_HTTP_OAUTH_H
#define MCPD_HTTP_OAUTH_H

#include <jansson.h>
#include <stdbool.h>

struct evhttp_request;
typedef struct http_thread http_thread_t;

/* The length of a principal name for an OAuth token: "o:" + 32 hex digits of the SHA-256 of
 * issuer "\n" subject. */
#define OAUTH_WHO_LEN 34
/* Requests parked for the auth thread, per HTTP thread; a client address holds at most
 * --principal-share percent of all threads' (core/principal.h, PR_AUTH_WAITS). */
#define OAUTH_PARKED_MAX 1024

/* Whether authentication is on (--auth-tokens or --auth-issuer). */
bool http_auth_on(void);
/* Checks the request's token and scopes. True with who (64 bytes) set: the token's name, or
 * "o:<hex>" for an OAuth subject. False after answering the request. body: the parsed POST
 * body (a message or a batch) or NULL; id: the request's id to echo, or NULL. */
bool http_authorize(http_thread_t *t, struct evhttp_request *req, const char *authorization,
                    const json_t *body, const json_t *id, char who[64]);
/* Serves the Protected Resource Metadata when req's path is one of its URLs; false when the
 * path is not (or no issuer is configured: no metadata). */
bool http_serve_prm(struct evhttp_request *req);
/* Main thread, after the HTTP threads have ended: frees every thread's cache. */
void http_oauth_free(void);
/* http_free, after evhttp_free and before the thread's event_base goes: the thread's parked
 * requests' leftovers and its wake event. */
void http_oauth_thread_end(http_thread_t *t);
/* endpoint.c: runs a parked request again from its checks (its framing was checked). */
void http_mcp_resume(http_thread_t *t, struct evhttp_request *req);

#endif
