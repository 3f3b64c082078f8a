/* Threads: the auth thread; issuer_start/issuer_stop on the main thread; issuer_keys and
 * issuer_refresh on any thread. */
/* The authorization server's signing keys: the auth thread (see issuer.h).
 *
 * Runs on: issuer_start/issuer_stop on the main thread; issuer_keys and issuer_refresh on any
 * thread (one mutex, held only to copy a pointer or flip a flag); everything else on the auth
 * thread, inside its event loop.
 *
 * A fetch is a chain of asynchronous GETs on the auth thread's loop: the metadata URLs in
 * order until one gives a document whose `issuer` is ours and that names a `jwks_uri`, then
 * that URI. The metadata is fetched again only when the key set fetch fails (a moved
 * jwks_uri). A fetch that fails leaves the previous key set in place: an issuer that is down
 * for a while does not take the keys we had. */
#include "core/issuer_internal.h"

#include "core/authz.h"
#include "core/b64.h"
#include "core/jsonparse.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

issuer_state_t ISS = {.mu = PTHREAD_MUTEX_INITIALIZER, .ended = PTHREAD_COND_INITIALIZER};

/* ---- pure parts ---- */

char *iss_strf(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    if (vasprintf(&s, f, ap) < 0)
        abort();
    va_end(ap);
    return s;
}

long issuer_max_age(const char *cc)
{
    const char *p = cc ? strcasestr(cc, "max-age=") : NULL;
    if (!p)
        return 3600;
    long v = strtol(p + 8, NULL, 10);
    return v < 60 ? 60 : v > 86400 ? 86400 : v;
}

int issuer_metadata_urls(const char *issuer, char *out[3])
{
    /* scheme://authority[/path] */
    const char *auth = strstr(issuer, "://");
    if (!auth)
        return 0;
    auth += 3;
    const char *path = strchr(auth, '/');
    size_t base_len = path ? (size_t)(path - issuer) : strlen(issuer);
    size_t plen = path ? strlen(path) : 0;
    while (plen && path[plen - 1] == '/')
        plen--;
    if (plen == 0) {
        out[0] = iss_strf("%.*s/.well-known/oauth-authorization-server", (int)base_len, issuer);
        out[1] = iss_strf("%.*s/.well-known/openid-configuration", (int)base_len, issuer);
        return 2;
    }
    out[0] = iss_strf("%.*s/.well-known/oauth-authorization-server%.*s", (int)base_len, issuer,
                      (int)plen, path);
    out[1] = iss_strf("%.*s/.well-known/openid-configuration%.*s", (int)base_len, issuer, (int)plen,
                      path);
    out[2] = iss_strf("%.*s%.*s/.well-known/openid-configuration", (int)base_len, issuer, (int)plen,
                      path);
    return 3;
}

/* ---- waits: requests parked on their HTTP thread until the auth thread has an answer ---- */

void issuer_wait_free(issuer_wait_t *w)
{
    if (!w)
        return;
    if (w->release)
        w->release(w);
    if (w->token) {
        OPENSSL_cleanse(w->token, w->token_len); /* a token does not linger in freed memory */
        free(w->token);
    }
    free(w);
}

/* Hands w back to its owner (auth thread). */
void iss_give_back(issuer_wait_t *w)
{
    pthread_mutex_lock(&ISS.mu);
    ISS.waits--;
    pthread_mutex_unlock(&ISS.mu);
    w->done(w);
}

static void give_back_all(issuer_wait_t **list)
{
    issuer_wait_t *w = *list;
    *list = NULL;
    while (w) {
        issuer_wait_t *next = w->next;
        iss_give_back(w);
        w = next;
    }
}

/* Unlinks from *list (and fixes *tail, when given) every wait past now and hands it back as
 * unanswered; returns the earliest deadline left, or next when that is earlier (0: none). */
static int64_t expire_list(issuer_wait_t **list, issuer_wait_t **tail, int64_t now, int64_t next)
{
    issuer_wait_t **pp = list, *prev = NULL;
    while (*pp) {
        issuer_wait_t *w = *pp;
        if (w->deadline_ms > now) {
            next = !next || w->deadline_ms < next ? w->deadline_ms : next;
            prev = w;
            pp = &w->next;
            continue;
        }
        *pp = w->next; /* before the give-back: its owner reuses next */
        if (tail && *tail == w)
            *tail = prev;
        w->outcome = -1; /* an introspection's; a key wait's request looks at the key set */
        w->why = "the authorization server did not answer within --auth-fetch-timeout";
        iss_give_back(w);
    }
    return next;
}

/* The auth thread: hands back every wait past its deadline, wherever it waits (for the chain,
 * for the introspection endpoint, in the introspection FIFO, or with its POST in flight, whose
 * answer then goes to no one), and arms ISS.deadline at the next one. Each wait is bounded so:
 * the fetches are bounded one by one, but a key chain is several fetches and an introspection
 * may first wait for a slot. */
static void expire_waits(void)
{
    int64_t now = now_mono_ms(), next = 0;
    next = expire_list(&ISS.key_waits, NULL, now, next);
    next = expire_list(&ISS.intro_waits, NULL, now, next);
    next = expire_list(&ISS.intro_queue, &ISS.intro_queue_tail, now, next);
    for (fetch_t *f = ISS.fetches; f; f = f->next) {
        issuer_wait_t *w = f->w;
        if (w && w->deadline_ms <= now) {
            /* what on_introspected would have said a moment later, when the fetch's own
             * deadline ends it (it then has no wait, and says nothing) */
            log_warn("auth: introspection at %s: no answer within --auth-fetch-timeout", f->url);
            f->w = NULL;
            w->outcome = -1;
            w->why = "the authorization server's introspection endpoint did not answer within "
                     "--auth-fetch-timeout";
            iss_give_back(w);
        } else if (w) {
            next = !next || w->deadline_ms < next ? w->deadline_ms : next;
        }
    }
    if (next) {
        int64_t ms = next - now;
        struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
        event_add(ISS.deadline, &tv);
    }
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    expire_waits();
}

/* ---- the chain: metadata, then the key set ---- */

static void chain_end(jwks_t *fresh)
{
    pthread_mutex_lock(&ISS.mu);
    jwks_t *old = NULL;
    if (!fresh)
        STAT_INC(jwks_fetch_failures_total);
    if (fresh) {
        old = ISS.keys;
        ISS.keys = fresh;
    }
    ISS.fetching = false;
    ISS.last_end_ms = now_mono_ms();
    pthread_cond_broadcast(&ISS.ended);
    pthread_mutex_unlock(&ISS.mu);
    jwks_unref(old);
    give_back_all(&ISS.key_waits);
    issuer_wait_t *w = ISS.intro_waits;
    ISS.intro_waits = NULL;
    while (w) {
        issuer_wait_t *next = w->next;
        if (ISS.introspection_endpoint) {
            iss_introspect(w);
        } else {
            w->outcome = -1;
            w->why = "the authorization server's introspection endpoint is not known yet";
            iss_give_back(w);
        }
        w = next;
    }
}

void iss_chain_fail(const char *what, const char *url, const char *why)
{
    log_warn("auth: %s %s: %s", what, url, why);
}

static void on_metadata(fetch_t *f, int status, const char *body, size_t len, const char *cc);
static void on_jwks(fetch_t *f, int status, const char *body, size_t len, const char *cc);

static void next_metadata(void)
{
    if (ISS.next_url >= ISS.nurls) {
        log_warn("auth: no usable metadata at the issuer %s (tried %d URLs); requests with a "
                 "JWT get 503 until a fetch succeeds",
                 ISS.issuer, ISS.nurls);
        chain_end(NULL);
        return;
    }
    iss_http_call(ISS.urls[ISS.next_url++], NULL, METADATA_MAX_LEN, on_metadata, NULL);
}

/* A URL the issuer's metadata may name: https://, or http:// for an http:// issuer (an https
 * issuer's keys never come over plain HTTP). */
static bool http_url(const json_t *v, bool https)
{
    if (!json_is_string(v))
        return false;
    const char *u = json_string_value(v);
    return strncmp(u, "https://", 8) == 0 || (!https && strncmp(u, "http://", 7) == 0);
}

int iss_metadata_check(const char *issuer, bool https, bool introspect, const char *body,
                       size_t len, char **jwks_uri, char **introspection_endpoint, const char **why)
{
    json_t *doc = json_parse_buf_bounded(body, len, 4096, NULL, NULL, 0, NULL);
    const json_t *iss = json_object_get(doc, "issuer"), *ju = json_object_get(doc, "jwks_uri");
    if (!json_is_string(iss) || json_string_length(iss) != strlen(issuer) ||
        memcmp(json_string_value(iss), issuer, json_string_length(iss)) != 0) {
        /* RFC 8414 3.3: a document for another issuer is not ours, whoever serves it */
        *why = doc ? "its issuer is not the configured --auth-issuer" : "not JSON";
        json_decref(doc);
        return -1;
    }
    if (!http_url(ju, https)) {
        *why = https ? "no https:// jwks_uri" : "no http(s):// jwks_uri";
        json_decref(doc);
        return -1;
    }
    *jwks_uri = xstrdup(json_string_value(ju));
    const json_t *ie = json_object_get(doc, "introspection_endpoint");
    *introspection_endpoint = introspect && http_url(ie, https) ? xstrdup(json_string_value(ie))
                                                                : NULL;
    json_decref(doc);
    return 0;
}

static void on_metadata(fetch_t *f, int status, const char *body, size_t len, const char *cc)
{
    if (status != 200) {
        if (status)
            log_debug("auth: %s: HTTP %d", f->url, status);
        else
            log_warn("auth: %s: no answer (refused, reset, timed out, or TLS failed: the "
                     "certificate must chain to the system's CA store or SSL_CERT_FILE)",
                     f->url);
        next_metadata();
        return;
    }
    char *ju, *ie;
    const char *why;
    if (iss_metadata_check(ISS.issuer, ISS.https, ISS.basic != NULL, body, len, &ju, &ie, &why) !=
        0) {
        iss_chain_fail("metadata", f->url, why);
        next_metadata();
        return;
    }
    free(ISS.jwks_uri);
    ISS.jwks_uri = ju;
    if (ie) {
        free(ISS.introspection_endpoint);
        ISS.introspection_endpoint = ie;
    } else if (ISS.basic && !ISS.introspection_endpoint) {
        iss_chain_fail("metadata", f->url, "no usable introspection_endpoint (--auth-introspect)");
    }
    iss_http_call(ISS.jwks_uri, NULL, JWKS_MAX_LEN, on_jwks, NULL);
}

static void on_jwks(fetch_t *f, int status, const char *body, size_t len, const char *cc)
{
    char why[200];
    jwks_t *k = NULL;
    if (status != 200)
        snprintf(why, sizeof why, status ? "HTTP %d" : "no answer (refused, reset or timed out)",
                 status);
    else
        k = jwks_parse(body, len, why, sizeof why);
    if (!k) {
        iss_chain_fail("key set", f->url, why);
        /* the metadata may have moved it: rediscover, unless that is what just failed */
        free(ISS.jwks_uri);
        ISS.jwks_uri = NULL;
        if (ISS.next_url > ISS.nurls) {
            ISS.next_url = 0;
            next_metadata();
        } else {
            chain_end(NULL);
        }
        return;
    }
    jwks_set_time(k, now_mono_ms() / 1000, issuer_max_age(cc));
    STAT_INC(jwks_fetches_total);
    log_info("auth: %zu signing keys from %s", jwks_count(k), f->url);
    chain_end(k);
}

static void chain_start(void)
{
    if (ISS.jwks_uri) {
        ISS.next_url = ISS.nurls + 1; /* a failure goes back to the metadata */
        iss_http_call(ISS.jwks_uri, NULL, JWKS_MAX_LEN, on_jwks, NULL);
    } else {
        ISS.next_url = 0;
        next_metadata();
    }
}

/* ---- the auth thread ---- */

/* No chain runs: the waits get their answer now (the key set is what it is). */
static void chain_end_waits_only(void)
{
    give_back_all(&ISS.key_waits);
    issuer_wait_t *w = ISS.intro_waits;
    ISS.intro_waits = NULL;
    while (w) {
        issuer_wait_t *next = w->next;
        w->outcome = -1;
        w->why = "the authorization server's introspection endpoint is not known yet";
        iss_give_back(w);
        w = next;
    }
}

/* The wake event: a chain was asked for (issuer_refresh), or waits were handed over. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    pthread_mutex_lock(&ISS.mu);
    bool kick = ISS.kick;
    ISS.kick = false;
    issuer_wait_t *in = ISS.incoming;
    ISS.incoming = NULL;
    pthread_mutex_unlock(&ISS.mu);
    if (kick)
        chain_start();
    while (in) {
        issuer_wait_t *next = in->next;
        if (in->kind == ISSUER_WAIT_KEYS) {
            in->next = ISS.key_waits;
            ISS.key_waits = in;
        } else if (ISS.introspection_endpoint) {
            iss_introspect(in);
        } else {
            in->next = ISS.intro_waits;
            ISS.intro_waits = in;
        }
        in = next;
    }
    /* a wait that came after its chain ended, or introspection with no endpoint known yet */
    pthread_mutex_lock(&ISS.mu);
    bool running = ISS.fetching;
    bool start = false;
    if (!running && ISS.intro_waits) {
        int64_t cool = ISS.keys ? ISSUER_COOLDOWN_MS : ISSUER_COOLDOWN_EMPTY_MS;
        if (ISS.last_end_ms == 0 || now_mono_ms() - ISS.last_end_ms >= cool)
            start = running = ISS.fetching = true;
    }
    pthread_mutex_unlock(&ISS.mu);
    if (start)
        chain_start();
    else if (!running)
        chain_end_waits_only();
    /* a timer pending is due no later than these new waits' deadlines (they were parked after
     * every wait it was armed for); with none pending, arm it for them */
    if (!evtimer_pending(ISS.deadline, NULL))
        expire_waits();
}

static void *auth_main(void *arg)
{
    log_set_thread_name("auth");
    event_base_loop(ISS.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* Whether url's host is this machine (localhost, 127.0.0.0/8, ::1). */
static bool loopback_url(const char *url)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *h = u ? evhttp_uri_get_host(u) : NULL;
    unsigned char a[4];
    bool lo = h && (strcasecmp(h, "localhost") == 0 || strcmp(h, "[::1]") == 0 ||
                    strcmp(h, "::1") == 0 || (inet_pton(AF_INET, h, a) == 1 && a[0] == 127));
    if (u)
        evhttp_uri_free(u);
    return lo;
}

int issuer_start(const char *issuer, char *why, size_t whylen)
{
    ISS.https = strncmp(issuer, "https://", 8) == 0;
    if ((!ISS.https && strncmp(issuer, "http://", 7) != 0) || strlen(issuer) >= sizeof ISS.issuer ||
        strchr(issuer, '#') || strchr(issuer, '?')) {
        snprintf(why, whylen,
                 "--auth-issuer %s: expected an https:// (or http://) URL without "
                 "query or fragment",
                 issuer);
        return -1;
    }
    ISS.tls = SSL_CTX_new(TLS_client_method());
    if (!ISS.tls || SSL_CTX_set_default_verify_paths(ISS.tls) != 1 ||
        SSL_CTX_set_min_proto_version(ISS.tls, TLS1_2_VERSION) != 1) {
        snprintf(why, whylen, "cannot set up TLS for the issuer's fetches");
        return -1;
    }
    SSL_CTX_set_verify(ISS.tls, SSL_VERIFY_PEER, NULL);
    if (!ISS.https && !loopback_url(issuer))
        log_warn("authorization: the issuer %s is plain http:// and not on this machine: its "
                 "key set, tokens being introspected and the introspection secret travel in the "
                 "clear, and a machine in between can swap jwks_uri and sign its own tokens; use "
                 "https://",
                 issuer);
    strcpy(ISS.issuer, issuer);
    ISS.nurls = issuer_metadata_urls(issuer, ISS.urls);
    ISS.base = event_base_new();
    ISS.wake = ISS.base ? event_new(ISS.base, -1, 0, on_wake, NULL) : NULL;
    ISS.deadline = ISS.base ? evtimer_new(ISS.base, on_deadline, NULL) : NULL;
    if (!ISS.wake || !ISS.deadline || pthread_create(&ISS.thread, NULL, auth_main, NULL) != 0) {
        snprintf(why, whylen, "cannot start the auth thread");
        return -1;
    }
    pthread_mutex_lock(&ISS.mu);
    ISS.started = true;
    pthread_mutex_unlock(&ISS.mu);
    issuer_refresh();
    return 0;
}

static void free_list(issuer_wait_t *w)
{
    while (w) {
        issuer_wait_t *next = w->next;
        issuer_wait_free(w);
        w = next;
    }
}

void issuer_stop(void)
{
    pthread_mutex_lock(&ISS.mu);
    bool was = ISS.started;
    ISS.started = false; /* nothing is handed over from now on */
    pthread_mutex_unlock(&ISS.mu);
    if (!was) {
        if (ISS.basic)
            OPENSSL_cleanse(ISS.basic, strlen(ISS.basic));
        free(ISS.basic);
        ISS.basic = NULL;
        return;
    }
    event_base_loopbreak(ISS.base);
    pthread_join(ISS.thread, NULL);
    event_free(ISS.wake);
    event_free(ISS.deadline);
    /* fetches in flight: freeing a connection does not run its request's callback, so their
     * waits (an introspection's carries a copy of the token, wiped by issuer_wait_free) are
     * freed here; their HTTP requests end with evhttp_free */
    while (ISS.fetches) {
        fetch_t *f = ISS.fetches;
        ISS.fetches = f->next;
        if (f->conn)
            evhttp_connection_free(f->conn);
        if (f->timer)
            event_free(f->timer);
        issuer_wait_free(f->w);
        free(f->url);
        free(f);
    }
    event_base_free(ISS.base);
    for (int i = 0; i < ISS.nurls; i++)
        free(ISS.urls[i]);
    free(ISS.jwks_uri);
    free(ISS.introspection_endpoint);
    if (ISS.basic)
        OPENSSL_cleanse(ISS.basic, strlen(ISS.basic));
    free(ISS.basic);
    ISS.jwks_uri = ISS.introspection_endpoint = ISS.basic = NULL;
    SSL_CTX_free(ISS.tls);
    ISS.tls = NULL;
    free_list(ISS.key_waits);
    free_list(ISS.intro_waits);
    free_list(ISS.intro_queue);
    ISS.key_waits = ISS.intro_waits = ISS.intro_queue = ISS.intro_queue_tail = NULL;
    ISS.intro_inflight = 0;
    pthread_mutex_lock(&ISS.mu);
    jwks_t *k = ISS.keys;
    ISS.keys = NULL;
    free_list(ISS.incoming);
    ISS.incoming = NULL;
    pthread_mutex_unlock(&ISS.mu);
    jwks_unref(k);
}

bool issuer_wait(int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&ISS.mu);
    while (ISS.started && ISS.fetching && pthread_cond_timedwait(&ISS.ended, &ISS.mu, &until) == 0)
        ;
    bool have = ISS.keys != NULL;
    pthread_mutex_unlock(&ISS.mu);
    return have;
}

jwks_t *issuer_keys(void)
{
    pthread_mutex_lock(&ISS.mu);
    jwks_t *k = jwks_ref(ISS.keys);
    pthread_mutex_unlock(&ISS.mu);
    return k;
}

bool issuer_refresh(void)
{
    pthread_mutex_lock(&ISS.mu);
    bool start = false, running = ISS.started && ISS.fetching;
    if (ISS.started && !running) {
        int64_t cool = ISS.keys ? ISSUER_COOLDOWN_MS : ISSUER_COOLDOWN_EMPTY_MS;
        if (ISS.last_end_ms == 0 || now_mono_ms() - ISS.last_end_ms >= cool)
            start = running = ISS.fetching = ISS.kick = true;
    }
    if (start)
        event_active(ISS.wake, 0,
                     0); /* thread-safe (evthread_use_pthreads), under mu: not stopped */
    pthread_mutex_unlock(&ISS.mu);
    return running;
}

int issuer_cooldown_left_s(void)
{
    pthread_mutex_lock(&ISS.mu);
    int64_t cool = ISS.keys ? ISSUER_COOLDOWN_MS : ISSUER_COOLDOWN_EMPTY_MS;
    int64_t left = ISS.last_end_ms ? ISS.last_end_ms + cool - now_mono_ms() : 0;
    pthread_mutex_unlock(&ISS.mu);
    return left > 1000 ? (int)((left + 999) / 1000) : 1;
}

bool issuer_introspects(void)
{
    return ISS.introspects; /* not ISS.basic: issuer_stop frees it while HTTP threads may ask */
}

bool issuer_park(issuer_wait_t *w)
{
    pthread_mutex_lock(&ISS.mu);
    bool ok = ISS.started && ISS.waits < WAITS_MAX;
    if (ok) {
        w->deadline_ms = now_mono_ms() + iss_timeout_ms();
        ISS.waits++;
        w->next = ISS.incoming;
        ISS.incoming = w;
        event_active(ISS.wake, 0, 0);
    }
    pthread_mutex_unlock(&ISS.mu);
    return ok;
}
