/* The authorization server's signing keys (--auth-issuer), fetched on the auth thread.
 *
 * The auth thread has its own event_base and fetches with libevent's HTTP client: first the
 * issuer's metadata (RFC 8414 `/.well-known/oauth-authorization-server`, then OpenID
 * discovery, with the path-insertion order of the MCP spec), whose `issuer` must equal the
 * configured one, then its `jwks_uri`. No HTTP or worker thread ever waits for it: they read
 * the published key set (an immutable, reference-counted jwks_t swapped under a mutex) and,
 * when it is missing, lacks a token's kid or does not verify its signature, ask for a fetch and
 * park the request for it (or answer 503 + Retry-After).
 *
 * Nothing runs while nothing is asked: one fetch at start, then only on demand (a token with an
 * unknown kid, or a signature that fails under its kid's keys; no key set yet; a key set older
 * than its max-age), at most once per cooldown (10 s with a key set, 2 s without), so a flood
 * of forged tokens costs the issuer one request per cooldown. Requests parked on their HTTP thread (issuer_park) get their answer when the
 * fetch ends, or when their introspection is answered, and no later than --auth-fetch-timeout
 * after they were parked; one fetch (a GET or a POST: connect, send, answer) takes at most
 * --auth-fetch-timeout as a whole. https:// (libevent's bufferevent_openssl:
 * the system's CA store, or SSL_CERT_FILE; the peer's name checked) or http://; an https
 * issuer's metadata must name https URLs only. */
#ifndef MCPD_CORE_ISSUER_H
#define MCPD_CORE_ISSUER_H

#include "core/jwt.h"

#include <stdbool.h>
#include <stddef.h>

#define ISSUER_COOLDOWN_MS 10000
#define ISSUER_COOLDOWN_EMPTY_MS 2000
#define ISSUER_WAITS_MAX 4096 /* waits handed to the auth thread and not answered, all threads */

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
/* Any thread: seconds until issuer_refresh may start a fetch again, at least 1 (a
 * Retry-After for a token whose key may come with the next fetch). */
int issuer_cooldown_left_s(void);
/* A request parked on its HTTP thread until the auth thread has an answer: the key set after
 * the fetch under way (ISSUER_WAIT_KEYS), or an opaque token's introspection (RFC 7662 at the
 * issuer's introspection_endpoint, with the --auth-introspect credentials). The owner allocates
 * it (a larger struct may start with it), hands it over with issuer_park, and gets it back
 * through done, called on the auth thread, which must not touch it afterwards. Whoever holds it
 * at shutdown frees it with issuer_wait_free (the auth thread's waits are freed by
 * issuer_stop, without done). */
typedef enum { ISSUER_WAIT_KEYS = 0, ISSUER_WAIT_INTROSPECT } issuer_wait_kind_t;
typedef struct issuer_wait issuer_wait_t;
struct issuer_wait {
    issuer_wait_t *next; /* the holder's list */
    issuer_wait_kind_t kind;
    char *token; /* INTROSPECT: the token (malloc'd; wiped and freed with the wait) */
    size_t token_len;
    int outcome; /* INTROSPECT's answer: 1 active and for us (claims), 0 refused (why),
                             -1 no answer (why) */
    const char *why;
    jwt_claims_t claims;
    void (*done)(issuer_wait_t *w);
    void (*release)(issuer_wait_t *w); /* or NULL: issuer_wait_free calls it first (the owner's
                                          own references, whoever frees the wait) */
    int64_t deadline_ms; /* issuer_park sets it (monotonic): handed back by then, answered or
                            not (an introspection's outcome -1) */
};
/* Any thread: hands w to the auth thread; false (w stays the caller's) when it is stopped or
 * holds too many waits already. w comes back within --auth-fetch-timeout: a key wait whose
 * fetch has not ended by then comes back as if it had failed, an introspection with outcome
 * -1 (no answer). */
bool issuer_park(issuer_wait_t *w);
void issuer_wait_free(issuer_wait_t *w);
/* Main thread, before issuer_start: the client credentials for introspection, from a file of
 * one line client_id:client_secret, mode 600. 0, or -1 with why. */
int issuer_introspect_setup(const char *path, char *why, size_t whylen);
/* Whether opaque tokens are introspected (--auth-introspect). */
bool issuer_introspects(void);
/* For tests: parses "max-age=N" from a Cache-Control value (N clamped to 60..86400; 3600
 * when absent). */
long issuer_max_age(const char *cache_control);
/* For tests: the metadata URLs to try for issuer, in order (at most 3, each malloc'd);
 * returns how many. */
int issuer_metadata_urls(const char *issuer, char *out[3]);

#endif
