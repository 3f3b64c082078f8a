/* What the auth thread's files share (issuer.c: start, stop, the key-set chain and the waits;
 * issuer_introspect.c: RFC 7662 introspection; issuer_http.c: the HTTP client calls on the auth
 * thread's loop). Nothing outside these files includes it. Threads as issuer.c says. */
#ifndef MCPD_CORE_ISSUER_INTERNAL_H
#define MCPD_CORE_ISSUER_INTERNAL_H

#include "core/issuer.h"

#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METADATA_MAX_LEN (64 * 1024)
#define INTROSPECT_MAX_LEN (64 * 1024)
#define WAITS_MAX ISSUER_WAITS_MAX
#define INTROSPECT_MAX 32 /* introspections in flight at once; more wait in intro_queue */

typedef struct {
    char issuer[1024];
    pthread_t thread;
    bool started; /* under mu once running: issuer_park and issuer_refresh read it */
    struct event_base *base;
    struct event *wake;
    pthread_mutex_t mu;      /* guards the members up to the next comment */
    pthread_cond_t ended;    /* a chain ended (issuer_wait) */
    jwks_t *keys;            /* the published set (a reference), or NULL */
    bool fetching;           /* a chain is running (or asked for) */
    bool kick;               /* issuer_refresh asked for a chain: on_wake starts it */
    int64_t last_end_ms;     /* when the last chain ended (0: never) */
    issuer_wait_t *incoming; /* waits handed over, not yet seen by the auth thread */
    int waits;               /* waits held by the auth thread (incoming included) */
    /* auth thread only */
    char *urls[3];
    int nurls, next_url;
    char *jwks_uri;
    char *introspection_endpoint;
    char *basic;                /* "Basic base64(id:secret)" for introspection, or NULL */
    SSL_CTX *tls;               /* for https:// (the system's CA store, peer and name verified) */
    bool https;                 /* the issuer is https://: every URL it names must be too */
    issuer_wait_t *key_waits;   /* waiting for the chain to end */
    issuer_wait_t *intro_waits; /* waiting for the chain to find the introspection endpoint */
    issuer_wait_t *intro_queue, *intro_queue_tail; /* waiting for an introspection slot, FIFO */
    struct fetch *fetches;                         /* in flight or about to be freed (free_call) */
    struct event *deadline; /* gives back the waits past their deadline_ms (iss_expire_waits) */
    bool introspects;       /* --auth-introspect given: set before the threads, then read-only */
    int intro_inflight;     /* introspection POSTs out now (INTROSPECT_MAX at most) */
} issuer_state_t;

/* The auth thread's state (the members before "auth thread only" under its mu). */
extern issuer_state_t ISS;

typedef struct fetch fetch_t;
typedef void (*fetch_cb)(fetch_t *f, int status, const char *body, size_t len, const char *cc);
struct fetch {
    struct evhttp_connection *conn;
    struct event *timer; /* the whole fetch's deadline (--auth-fetch-timeout) */
    bool answered;       /* cb has run */
    char *url;
    fetch_cb cb;
    issuer_wait_t *w;     /* an introspection's wait until its answer is handed back, or NULL */
    fetch_t *prev, *next; /* ISS.fetches: every fetch not yet freed, so issuer_stop frees those
                             in flight (their callbacks never run) and the waits they carry */
};

/* A GET (form NULL), or a form POST, of url on the auth thread's loop, with the fetch timeout
 * (on the connect and each read, and on the whole fetch once its request is made) and an
 * answer of at most max bytes; cb gets the answer (status 0: none). */
void iss_http_call(const char *url, const char *form, size_t max, fetch_cb cb, issuer_wait_t *w);

/* The key-set chain failed at one of its fetches: logged, and the chain ends without a new set. */
void iss_chain_fail(const char *what, const char *url, const char *why);

/* Hands w back to its owner (auth thread). */
void iss_give_back(issuer_wait_t *w);

/* Queues w's introspection (auth thread): sent now if a slot is free, else in FIFO order. */
void iss_introspect(issuer_wait_t *w);

/* --auth-fetch-timeout in milliseconds: the bound of one fetch, and of one wait. */
int64_t iss_timeout_ms(void);

/* The checks on an authorization server's metadata document (RFC 8414; on_metadata's, pure):
 * body parsed as JSON (4096 values at most), its "issuer" byte for byte the configured issuer,
 * its "jwks_uri" an https:// URL (or http:// for an http:// issuer: https false). 0 with
 * *jwks_uri (malloc'd) and *introspection_endpoint (malloc'd when introspect and the document
 * names one that passes the same URL check, else NULL); -1 with *why, the outputs untouched. */
int iss_metadata_check(const char *issuer, bool https, bool introspect, const char *body,
                       size_t len, char **jwks_uri, char **introspection_endpoint,
                       const char **why);

/* A formatted, allocated string. */
char *iss_strf(const char *f, ...) __attribute__((format(printf, 1, 2)));

#endif
