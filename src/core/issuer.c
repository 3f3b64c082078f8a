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
#include "core/issuer.h"

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

#define FETCH_TIMEOUT_S 5
#define METADATA_MAX_LEN (64 * 1024)
#define INTROSPECT_MAX_LEN (64 * 1024)
#define WAITS_MAX ISSUER_WAITS_MAX
#define INTROSPECT_MAX 32 /* introspections in flight at once; more wait in intro_queue */

static struct {
    char issuer[1024];
    pthread_t thread;
    bool started;             /* under mu once running: issuer_park and issuer_refresh read it */
    struct event_base *base;
    struct event *wake;
    pthread_mutex_t mu;       /* guards the members up to the next comment */
    pthread_cond_t ended;     /* a chain ended (issuer_wait) */
    jwks_t *keys;             /* the published set (a reference), or NULL */
    bool fetching;            /* a chain is running (or asked for) */
    bool kick;                /* issuer_refresh asked for a chain: on_wake starts it */
    int64_t last_end_ms;      /* when the last chain ended (0: never) */
    issuer_wait_t *incoming;  /* waits handed over, not yet seen by the auth thread */
    int waits;                /* waits held by the auth thread (incoming included) */
    /* auth thread only */
    char *urls[3];
    int nurls, next_url;
    char *jwks_uri;
    char *introspection_endpoint;
    char *basic;              /* "Basic base64(id:secret)" for introspection, or NULL */
    SSL_CTX *tls;             /* for https:// (the system's CA store, peer and name verified) */
    bool https;               /* the issuer is https://: every URL it names must be too */
    issuer_wait_t *key_waits; /* waiting for the chain to end */
    issuer_wait_t *intro_waits; /* waiting for the chain to find the introspection endpoint */
    issuer_wait_t *intro_queue, *intro_queue_tail; /* waiting for an introspection slot, FIFO */
    struct fetch *fetches;    /* in flight or about to be freed (free_call) */
    bool introspects;         /* --auth-introspect given: set before the threads, then read-only */
    int intro_inflight;       /* introspection POSTs out now (INTROSPECT_MAX at most) */
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
static void give_back(issuer_wait_t *w)
{
    pthread_mutex_lock(&S.mu);
    S.waits--;
    pthread_mutex_unlock(&S.mu);
    w->done(w);
}

static void give_back_all(issuer_wait_t **list)
{
    issuer_wait_t *w = *list;
    *list = NULL;
    while (w) {
        issuer_wait_t *next = w->next;
        give_back(w);
        w = next;
    }
}

static void introspect(issuer_wait_t *w);

/* ---- the chain: metadata, then the key set ---- */

typedef struct fetch fetch_t;
typedef void (*fetch_cb)(fetch_t *f, int status, const char *body, size_t len, const char *cc);
struct fetch {
    struct evhttp_connection *conn;
    char *url;
    fetch_cb cb;
    issuer_wait_t *w; /* an introspection's wait until its answer is handed back, or NULL */
    fetch_t *prev, *next; /* S.fetches: every fetch not yet freed, so issuer_stop frees those
                             in flight (their callbacks never run) and the waits they carry */
};

static void http_call(const char *url, const char *form, size_t max, fetch_cb cb, issuer_wait_t *w);

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
    give_back_all(&S.key_waits);
    issuer_wait_t *w = S.intro_waits;
    S.intro_waits = NULL;
    while (w) {
        issuer_wait_t *next = w->next;
        if (S.introspection_endpoint) {
            introspect(w);
        } else {
            w->outcome = -1;
            w->why = "the authorization server's introspection endpoint is not known yet";
            give_back(w);
        }
        w = next;
    }
}

static void chain_fail(const char *what, const char *url, const char *why)
{
    log_warn("auth: %s %s: %s", what, url, why);
}

static void on_metadata(fetch_t *f, int status, const char *body, size_t len, const char *cc);
static void on_jwks(fetch_t *f, int status, const char *body, size_t len, const char *cc);

static void next_metadata(void)
{
    if (S.next_url >= S.nurls) {
        log_warn("auth: no usable metadata at the issuer %s (tried %d URLs); requests with a "
                 "JWT get 503 until a fetch succeeds", S.issuer, S.nurls);
        chain_end(NULL);
        return;
    }
    http_call(S.urls[S.next_url++], NULL, METADATA_MAX_LEN, on_metadata, NULL);
}

/* A URL the issuer's metadata may name: https://, or http:// for an http:// issuer (an https
 * issuer's keys never come over plain HTTP). */
static bool http_url(const json_t *v)
{
    if (!json_is_string(v))
        return false;
    const char *u = json_string_value(v);
    return strncmp(u, "https://", 8) == 0 || (!S.https && strncmp(u, "http://", 7) == 0);
}

static void on_metadata(fetch_t *f, int status, const char *body, size_t len, const char *cc)
{
    if (status != 200) {
        if (status)
            log_debug("auth: %s: HTTP %d", f->url, status);
        else
            log_warn("auth: %s: no answer (refused, reset, timed out, or TLS failed: the "
                     "certificate must chain to the system's CA store or SSL_CERT_FILE)", f->url);
        next_metadata();
        return;
    }
    char err[160];
    json_t *doc = json_parse_buf_bounded(body, len, 4096, NULL, err, sizeof err, NULL);
    const json_t *iss = json_object_get(doc, "issuer"), *ju = json_object_get(doc, "jwks_uri");
    if (!json_is_string(iss) || json_string_length(iss) != strlen(S.issuer) ||
        memcmp(json_string_value(iss), S.issuer, json_string_length(iss)) != 0) {
        /* RFC 8414 3.3: a document for another issuer is not ours, whoever serves it */
        chain_fail("metadata", f->url, doc ? "its issuer is not the configured --auth-issuer"
                                           : "not JSON");
        json_decref(doc);
        next_metadata();
        return;
    }
    if (!http_url(ju)) {
        chain_fail("metadata", f->url, S.https ? "no https:// jwks_uri" : "no http(s):// jwks_uri");
        json_decref(doc);
        next_metadata();
        return;
    }
    free(S.jwks_uri);
    S.jwks_uri = xstrdup(json_string_value(ju));
    const json_t *ie = json_object_get(doc, "introspection_endpoint");
    if (S.basic && http_url(ie)) {
        free(S.introspection_endpoint);
        S.introspection_endpoint = xstrdup(json_string_value(ie));
    } else if (S.basic && !S.introspection_endpoint) {
        chain_fail("metadata", f->url, "no usable introspection_endpoint (--auth-introspect)");
    }
    json_decref(doc);
    http_call(S.jwks_uri, NULL, JWKS_MAX_LEN, on_jwks, NULL);
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
        chain_fail("key set", f->url, why);
        /* the metadata may have moved it: rediscover, unless that is what just failed */
        free(S.jwks_uri);
        S.jwks_uri = NULL;
        if (S.next_url > S.nurls) {
            S.next_url = 0;
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
    if (S.jwks_uri) {
        S.next_url = S.nurls + 1; /* a failure goes back to the metadata */
        http_call(S.jwks_uri, NULL, JWKS_MAX_LEN, on_jwks, NULL);
    } else {
        S.next_url = 0;
        next_metadata();
    }
}

/* ---- introspection (RFC 7662) ---- */

static void introspect_next(void);

/* RFC 7662 2.2 token_type: absent, or an access token's (RFC 6749 7.1: Bearer, RFC 9449 DPoP,
 * or RFC 8693's access_token names). */
static bool access_token_type(const json_t *t)
{
    if (!t)
        return true;
    static const char *const ok[] = {"bearer", "dpop", "access_token",
                                     "urn:ietf:params:oauth:token-type:access_token"};
    for (size_t i = 0; json_is_string(t) && i < sizeof ok / sizeof ok[0]; i++)
        if (json_string_length(t) == strlen(ok[i]) && strcasecmp(json_string_value(t), ok[i]) == 0)
            return true;
    return false;
}

static void on_introspected(fetch_t *f, int status, const char *body, size_t len, const char *cc)
{
    issuer_wait_t *w = f->w;
    S.intro_inflight--;
    introspect_next(); /* before the answer: its slot is free whichever way this ends */
    if (status != 200) {
        w->outcome = -1;
        w->why = "the authorization server's introspection endpoint did not answer";
        log_warn("auth: introspection at %s: %s", f->url, status ? "an error status" : "no answer");
        give_back(w);
        return;
    }
    json_t *doc = json_parse_buf_bounded(body, len, 4096, NULL, NULL, 0, NULL);
    if (!json_is_true(json_object_get(doc, "active"))) {
        w->outcome = doc ? 0 : -1;
        w->why = doc ? "the token is not active" : "the introspection answer is not JSON";
    } else if (!access_token_type(json_object_get(doc, "token_type"))) {
        w->outcome = 0; /* a refresh token (or an ID token) is active, but not for us */
        w->why = "the token is not an access token (token_type)";
    } else {
        jwt_expect_t ex = {S.issuer, g_authz.resource, (int64_t)time(NULL), g_authz.leeway};
        jwt_result_t r = jwt_check_claims(doc, &ex, true, &w->claims, &w->why);
        w->outcome = r == JWT_OK ? 1 : 0;
    }
    json_decref(doc);
    give_back(w);
}

static char *form_escape(const char *s, size_t n)
{
    char *out = xmalloc(n * 3 + 1), *o = out;
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    return out;
}

/* A flood of random opaque tokens cannot open more than INTROSPECT_MAX POSTs at the
 * authorization server: the rest wait in order (their number is bounded by WAITS_MAX, and
 * each client address's share of those by the HTTP side's PR_AUTH_WAITS). */
static void introspect_now(issuer_wait_t *w);

static void introspect(issuer_wait_t *w)
{
    if (S.intro_inflight >= INTROSPECT_MAX) {
        w->next = NULL;
        if (S.intro_queue_tail)
            S.intro_queue_tail->next = w;
        else
            S.intro_queue = w;
        S.intro_queue_tail = w;
        return;
    }
    introspect_now(w);
}

static void introspect_next(void)
{
    issuer_wait_t *w = S.intro_queue;
    if (!w || S.intro_inflight >= INTROSPECT_MAX)
        return;
    S.intro_queue = w->next;
    if (!S.intro_queue)
        S.intro_queue_tail = NULL;
    introspect_now(w);
}

static void introspect_now(issuer_wait_t *w)
{
    S.intro_inflight++;
    char *tok = form_escape(w->token, w->token_len);
    char *form = strf("token=%s&token_type_hint=access_token", tok);
    OPENSSL_cleanse(tok, strlen(tok));
    free(tok);
    http_call(S.introspection_endpoint, form, INTROSPECT_MAX_LEN, on_introspected, w);
    OPENSSL_cleanse(form, strlen(form));
    free(form);
}

int issuer_introspect_setup(const char *path, char *why, size_t whylen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, whylen, "--auth-introspect %s: %s", path, strerror(errno));
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(why, whylen, "--auth-introspect %s is accessible by group or others (mode %04o); "
                 "chmod 600 it", path, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    FILE *fp = fopen(path, "r");
    char line[1024] = "";
    if (!fp || !fgets(line, sizeof line, fp)) {
        snprintf(why, whylen, "--auth-introspect %s: cannot read it", path);
        if (fp)
            fclose(fp);
        return -1;
    }
    fclose(fp);
    size_t n = strcspn(line, "\r\n");
    line[n] = '\0';
    char *colon = strchr(line, ':');
    if (!colon || colon == line || !colon[1]) {
        OPENSSL_cleanse(line, sizeof line);
        snprintf(why, whylen, "--auth-introspect %s: expected one line client_id:client_secret", path);
        return -1;
    }
    /* RFC 6749 2.3.1: each part form-encoded, then Basic */
    char *id = form_escape(line, (size_t)(colon - line)), *secret = form_escape(colon + 1, strlen(colon + 1));
    char *pair = strf("%s:%s", id, secret);
    size_t pl = strlen(pair);
    char *b64 = xmalloc(B64_ENCODED_SIZE(pl));
    b64_encode(pair, pl, b64, false);
    free(S.basic);
    S.basic = strf("Basic %s", b64);
    S.introspects = true;
    OPENSSL_cleanse(line, sizeof line);
    OPENSSL_cleanse(pair, pl);
    OPENSSL_cleanse(secret, strlen(secret));
    OPENSSL_cleanse(b64, strlen(b64));
    free(id), free(secret), free(pair), free(b64);
    return 0;
}

/* ---- HTTP client calls on the auth thread's loop ---- */

/* A connection cannot be freed inside its own request's callback: on the next loop turn. */
static void free_call(evutil_socket_t fd, short what, void *arg)
{
    fetch_t *f = arg;
    if (f->prev)
        f->prev->next = f->next;
    else
        S.fetches = f->next;
    if (f->next)
        f->next->prev = f->prev;
    if (f->conn)
        evhttp_connection_free(f->conn);
    free(f->url);
    free(f);
}

static void on_response(struct evhttp_request *req, void *arg)
{
    fetch_t *f = arg;
    int status = req ? evhttp_request_get_response_code(req) : 0;
    struct evbuffer *in = req ? evhttp_request_get_input_buffer(req) : NULL;
    size_t len = in ? evbuffer_get_length(in) : 0;
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    const char *cc = req ? evhttp_find_header(evhttp_request_get_input_headers(req), "Cache-Control")
                         : NULL;
    f->cb(f, status, body, len, cc);
    f->w = NULL; /* handed back by cb */
    event_base_once(S.base, -1, EV_TIMEOUT, free_call, f, NULL);
}

/* A client connection over TLS: the peer's certificate must chain to the system's CA store
 * (or SSL_CERT_FILE / SSL_CERT_DIR) and name host (SNI sent). NULL on failure. */
static struct evhttp_connection *tls_connection(const char *host, int port)
{
    SSL *ssl = S.tls ? SSL_new(S.tls) : NULL;
    if (!ssl)
        return NULL;
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    if (literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1
                : (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)) {
        SSL_free(ssl);
        return NULL;
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        S.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (!bev) {
        SSL_free(ssl);
        return NULL;
    }
    /* a server that closes without close_notify: the body's length tells the end anyway */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    struct evhttp_connection *c = evhttp_connection_base_bufferevent_new(S.base, NULL, bev, host,
                                                                         (ev_uint16_t)port);
    if (!c)
        bufferevent_free(bev);
    return c;
}

/* GET url (form NULL) or POST the form; cb gets the status (0: no answer) and the body. */
static void http_call(const char *url, const char *form, size_t max, fetch_cb cb, issuer_wait_t *w)
{
    fetch_t *f = xcalloc(1, sizeof *f);
    f->url = xstrdup(url);
    f->cb = cb;
    f->w = w;
    f->next = S.fetches;
    if (S.fetches)
        S.fetches->prev = f;
    S.fetches = f;
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    char bare[256]; /* an IPv6 literal without its brackets: inet_pton, connect, SSL_set1_host */
    size_t hl = host ? strlen(host) : 0;
    if (hl > 2 && host[0] == '[' && host[hl - 1] == ']' && hl - 2 < sizeof bare) {
        memcpy(bare, host + 1, hl - 2);
        bare[hl - 2] = '\0';
        host = bare;
    }
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
    bool tls = scheme && strcasecmp(scheme, "https") == 0;
    if (!host || !scheme || (!tls && (S.https || strcasecmp(scheme, "http") != 0))) {
        if (u)
            evhttp_uri_free(u);
        chain_fail("fetch", url, S.https ? "not an https:// URL" : "not an http(s):// URL");
        on_response(NULL, f);
        return;
    }
    int port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : tls ? 443 : 80;
    f->conn = tls ? tls_connection(host, port)
                  : evhttp_connection_base_new(S.base, NULL, host, (ev_uint16_t)port);
    if (!f->conn) {
        evhttp_uri_free(u);
        on_response(NULL, f);
        return;
    }
    evhttp_connection_set_timeout(f->conn, FETCH_TIMEOUT_S);
    evhttp_connection_set_retries(f->conn, 0);
    evhttp_connection_set_max_body_size(f->conn, (ev_ssize_t)max);
    struct evhttp_request *req = evhttp_request_new(on_response, f);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char hosthdr[300];
    snprintf(hosthdr, sizeof hosthdr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    evhttp_add_header(h, "Host", hosthdr);
    evhttp_add_header(h, "Accept", "application/json");
    evhttp_add_header(h, "Connection", "close");
    if (form) {
        evhttp_add_header(h, "Content-Type", "application/x-www-form-urlencoded");
        evhttp_add_header(h, "Authorization", S.basic);
        evbuffer_add(evhttp_request_get_output_buffer(req), form, strlen(form));
    }
    const char *path = evhttp_uri_get_path(u);
    const char *query = evhttp_uri_get_query(u);
    char *target = strf("%s%s%s", path && *path ? path : "/", query ? "?" : "", query ? query : "");
    int rc = evhttp_make_request(f->conn, req, form ? EVHTTP_REQ_POST : EVHTTP_REQ_GET, target);
    free(target);
    evhttp_uri_free(u);
    if (rc != 0) /* the request was freed by evhttp */
        on_response(NULL, f);
}

/* ---- the auth thread ---- */

/* No chain runs: the waits get their answer now (the key set is what it is). */
static void chain_end_waits_only(void)
{
    give_back_all(&S.key_waits);
    issuer_wait_t *w = S.intro_waits;
    S.intro_waits = NULL;
    while (w) {
        issuer_wait_t *next = w->next;
        w->outcome = -1;
        w->why = "the authorization server's introspection endpoint is not known yet";
        give_back(w);
        w = next;
    }
}

/* The wake event: a chain was asked for (issuer_refresh), or waits were handed over. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    pthread_mutex_lock(&S.mu);
    bool kick = S.kick;
    S.kick = false;
    issuer_wait_t *in = S.incoming;
    S.incoming = NULL;
    pthread_mutex_unlock(&S.mu);
    if (kick)
        chain_start();
    while (in) {
        issuer_wait_t *next = in->next;
        if (in->kind == ISSUER_WAIT_KEYS) {
            in->next = S.key_waits;
            S.key_waits = in;
        } else if (S.introspection_endpoint) {
            introspect(in);
        } else {
            in->next = S.intro_waits;
            S.intro_waits = in;
        }
        in = next;
    }
    /* a wait that came after its chain ended, or introspection with no endpoint known yet */
    pthread_mutex_lock(&S.mu);
    bool running = S.fetching;
    bool start = false;
    if (!running && S.intro_waits) {
        int64_t cool = S.keys ? ISSUER_COOLDOWN_MS : ISSUER_COOLDOWN_EMPTY_MS;
        if (S.last_end_ms == 0 || now_mono_ms() - S.last_end_ms >= cool)
            start = running = S.fetching = true;
    }
    pthread_mutex_unlock(&S.mu);
    if (start)
        chain_start();
    else if (!running)
        chain_end_waits_only();
}

static void *auth_main(void *arg)
{
    log_set_thread_name("auth");
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
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
    S.https = strncmp(issuer, "https://", 8) == 0;
    if ((!S.https && strncmp(issuer, "http://", 7) != 0) || strlen(issuer) >= sizeof S.issuer ||
        strchr(issuer, '#') || strchr(issuer, '?')) {
        snprintf(why, whylen, "--auth-issuer %s: expected an https:// (or http://) URL without "
                 "query or fragment", issuer);
        return -1;
    }
    S.tls = SSL_CTX_new(TLS_client_method());
    if (!S.tls || SSL_CTX_set_default_verify_paths(S.tls) != 1 ||
        SSL_CTX_set_min_proto_version(S.tls, TLS1_2_VERSION) != 1) {
        snprintf(why, whylen, "cannot set up TLS for the issuer's fetches");
        return -1;
    }
    SSL_CTX_set_verify(S.tls, SSL_VERIFY_PEER, NULL);
    if (!S.https && !loopback_url(issuer))
        log_warn("authorization: the issuer %s is plain http:// and not on this machine: its "
                 "key set, tokens being introspected and the introspection secret travel in the "
                 "clear, and a machine in between can swap jwks_uri and sign its own tokens; use "
                 "https://", issuer);
    strcpy(S.issuer, issuer);
    S.nurls = issuer_metadata_urls(issuer, S.urls);
    S.base = event_base_new();
    S.wake = S.base ? event_new(S.base, -1, 0, on_wake, NULL) : NULL;
    if (!S.wake || pthread_create(&S.thread, NULL, auth_main, NULL) != 0) {
        snprintf(why, whylen, "cannot start the auth thread");
        return -1;
    }
    pthread_mutex_lock(&S.mu);
    S.started = true;
    pthread_mutex_unlock(&S.mu);
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
    pthread_mutex_lock(&S.mu);
    bool was = S.started;
    S.started = false; /* nothing is handed over from now on */
    pthread_mutex_unlock(&S.mu);
    if (!was) {
        if (S.basic)
            OPENSSL_cleanse(S.basic, strlen(S.basic));
        free(S.basic);
        S.basic = NULL;
        return;
    }
    event_base_loopbreak(S.base);
    pthread_join(S.thread, NULL);
    event_free(S.wake);
    /* fetches in flight: freeing a connection does not run its request's callback, so their
     * waits (an introspection's carries a copy of the token, wiped by issuer_wait_free) are
     * freed here; their HTTP requests end with evhttp_free */
    while (S.fetches) {
        fetch_t *f = S.fetches;
        S.fetches = f->next;
        if (f->conn)
            evhttp_connection_free(f->conn);
        issuer_wait_free(f->w);
        free(f->url);
        free(f);
    }
    event_base_free(S.base);
    for (int i = 0; i < S.nurls; i++)
        free(S.urls[i]);
    free(S.jwks_uri);
    free(S.introspection_endpoint);
    if (S.basic)
        OPENSSL_cleanse(S.basic, strlen(S.basic));
    free(S.basic);
    S.jwks_uri = S.introspection_endpoint = S.basic = NULL;
    SSL_CTX_free(S.tls);
    S.tls = NULL;
    free_list(S.key_waits);
    free_list(S.intro_waits);
    free_list(S.intro_queue);
    S.key_waits = S.intro_waits = S.intro_queue = S.intro_queue_tail = NULL;
    S.intro_inflight = 0;
    pthread_mutex_lock(&S.mu);
    jwks_t *k = S.keys;
    S.keys = NULL;
    free_list(S.incoming);
    S.incoming = NULL;
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
    while (S.started && S.fetching && pthread_cond_timedwait(&S.ended, &S.mu, &until) == 0)
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
    pthread_mutex_lock(&S.mu);
    bool start = false, running = S.started && S.fetching;
    if (S.started && !running) {
        int64_t cool = S.keys ? ISSUER_COOLDOWN_MS : ISSUER_COOLDOWN_EMPTY_MS;
        if (S.last_end_ms == 0 || now_mono_ms() - S.last_end_ms >= cool)
            start = running = S.fetching = S.kick = true;
    }
    if (start)
        event_active(S.wake, 0, 0); /* thread-safe (evthread_use_pthreads), under mu: not stopped */
    pthread_mutex_unlock(&S.mu);
    return running;
}

int issuer_cooldown_left_s(void)
{
    pthread_mutex_lock(&S.mu);
    int64_t cool = S.keys ? ISSUER_COOLDOWN_MS : ISSUER_COOLDOWN_EMPTY_MS;
    int64_t left = S.last_end_ms ? S.last_end_ms + cool - now_mono_ms() : 0;
    pthread_mutex_unlock(&S.mu);
    return left > 1000 ? (int)((left + 999) / 1000) : 1;
}

bool issuer_introspects(void)
{
    return S.introspects; /* not S.basic: issuer_stop frees it while HTTP threads may ask */
}

bool issuer_park(issuer_wait_t *w)
{
    pthread_mutex_lock(&S.mu);
    bool ok = S.started && S.waits < WAITS_MAX;
    if (ok) {
        S.waits++;
        w->next = S.incoming;
        S.incoming = w;
        event_active(S.wake, 0, 0);
    }
    pthread_mutex_unlock(&S.mu);
    return ok;
}
