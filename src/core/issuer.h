/* The authorization server's signing keys (--auth-issuer), fetched on the auth thread.
 *
 * The auth thread has its own event_base and fetches with libevent's HTTP client: first the
 * issuer's metadata (RFC 8414 `/.well-known/oauth-authorization-server`, then OpenID
 * discovery, with the path-insertion order of the MCP spec), whose `issuer` must equal the
 * configured one, then its `jwks_uri`. No HTTP or worker thread ever waits for it: they read
 * the published key set (an immutable, reference-counted jwks_t swapped under a mutex) and,
 * when it is missing or lacks a token's kid, ask for a fetch and answer 503 + Retry-After.
 *
 * Nothing runs while nothing is asked: one fetch at start, then only on demand (a token with an
 * unknown kid, no key set yet, or a key set older than its max-age), at most once per cooldown
 * (10 s with a key set, 2 s without), so a flood of forged kids costs the issuer one request
 * per cooldown. http:// issuers only (see README: Authorization); https:// is refused at
 * start. */
#ifndef MCPD_CORE_ISSUER_H
#define MCPD_CORE_ISSUER_H

#include "core/jwt.h"

#include <stdbool.h>
#include <stddef.h>

#define ISSUER_COOLDOWN_MS 10000
#define ISSUER_COOLDOWN_EMPTY_MS 2000

/* Main thread: checks the URL, starts the auth thread and its first fetch (it does not wait
 * for it). 0, or -1 with why. */
int issuer_start(const char *issuer, char *why, size_t whylen);
/* Main thread: stops the auth thread (a fetch in flight is dropped) and frees the key set. */
void issuer_stop(void);
/* Main thread, at start: waits up to ms for the fetch under way to end. True when a key set
 * is there. (So a server whose issuer is up serves tokens from its first request; one whose
 * issuer is down starts anyway and answers 503 until a fetch succeeds.) */
bool issuer_wait(int ms);
/* Any thread: the current key set (a new reference), or NULL when none was fetched yet. */
jwks_t *issuer_keys(void);
/* Any thread: asks for a fresh key set. True when a fetch is under way now (started by this
 * call or already running): an answer may come within seconds; false while the cooldown
 * holds after the last fetch ended. */
bool issuer_refresh(void);
/* For tests: parses "max-age=N" from a Cache-Control value (N clamped to 60..86400; 3600
 * when absent). */
long issuer_max_age(const char *cache_control);
/* For tests: the metadata URLs to try for issuer, in order (at most 3, each malloc'd);
 * returns how many. */
int issuer_metadata_urls(const char *issuer, char *out[3]);

#endif
