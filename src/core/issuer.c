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
#include "core/issuer.h"

#include "core/jsonparse.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define FETCH_TIMEOUT_S 5
#define METADATA_MAX_LEN (64 * 1024)

static struct {
    char issuer[1024];
    pthread_t thread;
    bool started;
    struct event_base *base;
    struct event *wake;
    pthread_mutex_t mu;       /* guards keys, fetching, last_end_ms */
    pthread_cond_t ended;     /* a chain ended (issuer_wait) */
    jwks_t *keys;             /* the published set (a reference), or NULL */
    bool fetching;            /* a chain is running (or asked for) */
    int64_t last_end_ms;      /* when the last chain ended (0: never) */
    /* auth thread only */
    char *urls[3];
    int nurls, next_url;
    char *jwks_uri;
    bool want_jwks;           /* the step in flight is the key set */
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .ended = PTHREAD_COND_INITIALIZER};

/* ---- pure parts ---- */

static char *strf(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *strf(const char *f, ...)
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
        out[0] = strf("%.*s/.well-known/oauth-authorization-server", (int)base_len, issuer);
        out[1] = strf("%.*s/.well-known/openid-configuration", (int)base_len, issuer);
        return 2;
    }
    out[0] = strf("%.*s/.well-known/oauth-authorization-server%.*s", (int)base_len, issuer,
                       (int)plen, path);
    out[1] = strf("%.*s/.well-known/openid-configuration%.*s", (int)base_len, issuer,
                       (int)plen, path);
    out[2] = strf("%.*s%.*s/.well-known/openid-configuration", (int)base_len, issuer,
                       (int)plen, path);
    return 3;
}

/* ---- the auth thread ---- */

static void chain_end(jwks_t *fresh)
{
    pthread_mutex_lock(&S.mu);
    jwks_t *old = NULL;
    if (!fresh)
        STAT_INC(jwks_fetch_failures_total);
    if (fresh) {
        old = S.keys;
        S.keys = fresh;
    }
    S.fetching = false;
    S.last_end_ms = now_mono_ms();
    pthread_cond_broadcast(&S.ended);
    pthread_mutex_unlock(&S.mu);
    jwks_unref(old);
}

static void chain_fail(const char *what, const char *url, const char *why)
{
    log_warn("auth: %s %s: %s", what, url, why);
}

static void get(const char *url);

static void next_metadata(void)
{
    if (S.next_url >= S.nurls) {
        log_warn("auth: no usable metadata at the issuer %s (tried %d URLs); requests with a "
                 "JWT get 503 until a fetch succeeds", S.issuer, S.nurls);
        chain_end(NULL);
        return;
    }
    S.want_jwks = false;
    get(S.urls[S.next_url++]);
}

static void on_metadata(const char *url, int status, const char *body, size_t len)
{
    if (status != 200) {
        if (status)
            log_debug("auth: %s: HTTP %d", url, status);
        next_metadata();
        return;
    }
    char err[160];
    json_t *doc = json_parse_buf_bounded(body, len, 4096, NULL, err, sizeof err, NULL);
    const json_t *iss = json_object_get(doc, "issuer"), *ju = json_object_get(doc, "jwks_uri");
    if (!json_is_string(iss) || strcmp(json_string_value(iss), S.issuer) != 0) {
        /* RFC 8414 3.3: a document for another issuer is not ours, whoever serves it */
        chain_fail("metadata", url, doc ? "its issuer is not the configured --auth-issuer"
                                        : "not JSON");
        json_decref(doc);
        next_metadata();
        return;
    }
    if (!json_is_string(ju) || (strncmp(json_string_value(ju), "http://", 7) != 0)) {
        chain_fail("metadata", url, "no http:// jwks_uri");
        json_decref(doc);
        next_metadata();
        return;
    }
    free(S.jwks_uri);
    S.jwks_uri = xstrdup(json_string_value(ju));
    json_decref(doc);
    S.want_jwks = true;
    get(S.jwks_uri);
}

static void on_jwks(const char *url, int status, const char *body, size_t len,
                    const char *cache_control)
{
    char why[200];
    jwks_t *k = NULL;
    if (status != 200)
        snprintf(why, sizeof why, status ? "HTTP %d" : "no answer (refused, reset or timed out)",
                 status);
    else
        k = jwks_parse(body, len, why, sizeof why);
    if (!k) {
        chain_fail("key set", url, why);
        /* the metadata may have moved it: rediscover, unless that is what just failed */
        free(S.jwks_uri);
        S.jwks_uri = NULL;
        if (S.next_url == 0 || S.next_url > S.nurls) {
            S.next_url = 0;
            next_metadata();
        } else {
            chain_end(NULL);
        }
        return;
    }
    jwks_set_time(k, now_mono_ms() / 1000, issuer_max_age(cache_control));
    STAT_INC(jwks_fetches_total);
    log_info("auth: %zu signing keys from %s", jwks_count(k), url);
    chain_end(k);
}

typedef struct get_ctx {
    struct evhttp_connection *conn;
    char *url;
} get_ctx_t;

/* A connection cannot be freed inside its own request's callback: on the next loop turn. */
static void free_conn(evutil_socket_t fd, short what, void *arg)
{
    get_ctx_t *g = arg;
    evhttp_connection_free(g->conn);
    free(g->url);
    free(g);
}

static void on_response(struct evhttp_request *req, void *arg)
{
    get_ctx_t *g = arg;
    int status = req ? evhttp_request_get_response_code(req) : 0;
    struct evbuffer *in = req ? evhttp_request_get_input_buffer(req) : NULL;
    size_t len = in ? evbuffer_get_length(in) : 0;
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    const char *cc = req ? evhttp_find_header(evhttp_request_get_input_headers(req), "Cache-Control")
                         : NULL;
    if (S.want_jwks)
        on_jwks(g->url, status, body, len, cc);
    else
        on_metadata(g->url, status, body, len);
    event_base_once(S.base, -1, EV_TIMEOUT, free_conn, g, NULL);
}

static void get(const char *url)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    get_ctx_t *g = xcalloc(1, sizeof *g);
    g->url = xstrdup(url);
    if (!host || !evhttp_uri_get_scheme(u) || strcasecmp(evhttp_uri_get_scheme(u), "http") != 0)
        goto bad;
    int port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 80;
    g->conn = evhttp_connection_base_new(S.base, NULL, host, (ev_uint16_t)port);
    if (!g->conn)
        goto bad;
    evhttp_connection_set_timeout(g->conn, FETCH_TIMEOUT_S);
    evhttp_connection_set_retries(g->conn, 0);
    evhttp_connection_set_max_body_size(g->conn, S.want_jwks ? JWKS_MAX_LEN : METADATA_MAX_LEN);
    struct evhttp_request *req = evhttp_request_new(on_response, g);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char hosthdr[300];
    snprintf(hosthdr, sizeof hosthdr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    evhttp_add_header(h, "Host", hosthdr);
    evhttp_add_header(h, "Accept", "application/json");
    evhttp_add_header(h, "Connection", "close");
    const char *path = evhttp_uri_get_path(u);
    const char *query = evhttp_uri_get_query(u);
    char *target = strf("%s%s%s", path && *path ? path : "/", query ? "?" : "",
                             query ? query : "");
    int rc = evhttp_make_request(g->conn, req, EVHTTP_REQ_GET, target);
    free(target);
    evhttp_uri_free(u);
    if (rc != 0) { /* the request was freed by evhttp */
        on_response(NULL, g);
        return;
    }
    return;
bad:
    if (u)
        evhttp_uri_free(u);
    chain_fail(S.want_jwks ? "key set" : "metadata", url, "not an http:// URL");
    free(g->url);
    free(g);
    if (S.want_jwks) {
        chain_end(NULL);
    } else {
        next_metadata();
    }
}

/* The wake event: a fetch was asked for (issuer_refresh set S.fetching). */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    if (S.jwks_uri) {
        S.want_jwks = true;
        S.next_url = S.nurls + 1; /* a failure goes back to the metadata */
        get(S.jwks_uri);
    } else {
        S.next_url = 0;
        next_metadata();
    }
}

static void *auth_main(void *arg)
{
    log_set_thread_name("auth");
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

int issuer_start(const char *issuer, char *why, size_t whylen)
{
    if (strncasecmp(issuer, "https://", 8) == 0) {
        snprintf(why, whylen, "--auth-issuer %s: https issuers are not supported yet (the key "
                 "fetcher speaks plain HTTP); reach the issuer over http:// on a trusted network "
                 "or a local TLS-terminating proxy", issuer);
        return -1;
    }
    if (strncmp(issuer, "http://", 7) != 0 || strlen(issuer) >= sizeof S.issuer ||
        strchr(issuer, '#') || strchr(issuer, '?')) {
        snprintf(why, whylen, "--auth-issuer %s: expected an http:// URL without query or "
                 "fragment", issuer);
        return -1;
    }
    strcpy(S.issuer, issuer);
    S.nurls = issuer_metadata_urls(issuer, S.urls);
    S.base = event_base_new();
    S.wake = S.base ? event_new(S.base, -1, 0, on_wake, NULL) : NULL;
    if (!S.wake || pthread_create(&S.thread, NULL, auth_main, NULL) != 0) {
        snprintf(why, whylen, "cannot start the auth thread");
        return -1;
    }
    S.started = true;
    issuer_refresh();
    return 0;
}

void issuer_stop(void)
{
    if (!S.started)
        return;
    event_base_loopbreak(S.base);
    pthread_join(S.thread, NULL);
    event_free(S.wake);
    event_base_free(S.base); /* frees connections still in flight */
    S.started = false;
    for (int i = 0; i < S.nurls; i++)
        free(S.urls[i]);
    free(S.jwks_uri);
    S.jwks_uri = NULL;
    pthread_mutex_lock(&S.mu);
    jwks_t *k = S.keys;
    S.keys = NULL;
    pthread_mutex_unlock(&S.mu);
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
    pthread_mutex_lock(&S.mu);
    while (S.started && S.fetching &&
           pthread_cond_timedwait(&S.ended, &S.mu, &until) == 0)
        ;
    bool have = S.keys != NULL;
    pthread_mutex_unlock(&S.mu);
    return have;
}

jwks_t *issuer_keys(void)
{
    pthread_mutex_lock(&S.mu);
    jwks_t *k = jwks_ref(S.keys);
    pthread_mutex_unlock(&S.mu);
    return k;
}

bool issuer_refresh(void)
{
    if (!S.started)
        return false;
    pthread_mutex_lock(&S.mu);
    bool start = false, running = S.fetching;
    if (!running) {
        int64_t cool = S.keys ? ISSUER_COOLDOWN_MS : ISSUER_COOLDOWN_EMPTY_MS;
        if (S.last_end_ms == 0 || now_mono_ms() - S.last_end_ms >= cool)
            start = running = S.fetching = true;
    }
    pthread_mutex_unlock(&S.mu);
    if (start)
        event_active(S.wake, 0, 0); /* thread-safe: evthread_use_pthreads */
    return running;
}
