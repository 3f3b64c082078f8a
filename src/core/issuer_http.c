/* Threads: the auth thread (its event loop). */
/* The auth thread's HTTP client: one evhttp connection per call (https through
 * bufferevent_openssl with the system's CA store, the peer and its name verified), a timeout
 * (--auth-fetch-timeout: libevent's, on the connect and on each wait for the next bytes, and a
 * timer of our own on the whole fetch, so a server that sends a byte at a time cannot hold it
 * longer; the host name is resolved before, outside both), a bound on the answer, and the
 * connection freed on the loop's next turn. */
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

/* ---- HTTP client calls on the auth thread's loop ---- */

int64_t iss_timeout_ms(void)
{
    /* main sets it before the thread starts; 0 would be libevent's own 45-50 s */
    return (g_authz.fetch_timeout > 0 ? g_authz.fetch_timeout : 5) * 1000;
}

/* A connection cannot be freed inside its own request's callback: on the next loop turn. */
static void free_call(evutil_socket_t fd, short what, void *arg)
{
    fetch_t *f = arg;
    if (f->prev)
        f->prev->next = f->next;
    else
        ISS.fetches = f->next;
    if (f->next)
        f->next->prev = f->prev;
    if (f->conn)
        evhttp_connection_free(f->conn);
    if (f->timer)
        event_free(f->timer);
    free(f->url);
    free(f);
}

static void on_response(struct evhttp_request *req, void *arg)
{
    fetch_t *f = arg;
    f->answered = true;
    if (f->timer)
        event_del(f->timer); /* it must not fire before free_call */
    int status = req ? evhttp_request_get_response_code(req) : 0;
    struct evbuffer *in = req ? evhttp_request_get_input_buffer(req) : NULL;
    size_t len = in ? evbuffer_get_length(in) : 0;
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    const char *cc = req ? evhttp_find_header(evhttp_request_get_input_headers(req),
                                              "Cache-Control")
                         : NULL;
    f->cb(f, status, body, len, cc);
    f->w = NULL; /* handed back by cb */
    event_base_once(ISS.base, -1, EV_TIMEOUT, free_call, f, NULL);
}

/* The whole fetch took --auth-fetch-timeout (each read within it, as a server that answers a
 * byte at a time does): it ends as one that timed out. Freeing the connection drops its request
 * without running its callback; the answer is "none". */
static void on_fetch_deadline(evutil_socket_t fd, short what, void *arg)
{
    fetch_t *f = arg;
    log_debug("auth: %s: no whole answer within --auth-fetch-timeout", f->url);
    evhttp_connection_free(f->conn);
    f->conn = NULL;
    on_response(NULL, f);
}

/* A client connection over TLS: the peer's certificate must chain to the system's CA store
 * (or SSL_CERT_FILE / SSL_CERT_DIR) and name host (SNI sent). NULL on failure. */
static struct evhttp_connection *tls_connection(const char *host, int port)
{
    SSL *ssl = ISS.tls ? SSL_new(ISS.tls) : NULL;
    if (!ssl)
        return NULL;
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    if (literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1
                : (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)) {
        SSL_free(ssl);
        return NULL;
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(ISS.base, -1, ssl,
                                                             BUFFEREVENT_SSL_CONNECTING,
                                                             BEV_OPT_CLOSE_ON_FREE |
                                                                 BEV_OPT_DEFER_CALLBACKS);
    if (!bev) {
        SSL_free(ssl);
        return NULL;
    }
    /* a server that closes without close_notify: the body's length tells the end anyway */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    struct evhttp_connection *c = evhttp_connection_base_bufferevent_new(ISS.base, NULL, bev, host,
                                                                         (ev_uint16_t)port);
    if (!c)
        bufferevent_free(bev);
    return c;
}

/* GET url (form NULL) or POST the form; cb gets the status (0: no answer) and the body. */
void iss_http_call(const char *url, const char *form, size_t max, fetch_cb cb, issuer_wait_t *w)
{
    fetch_t *f = xcalloc(1, sizeof *f);
    f->url = xstrdup(url);
    f->cb = cb;
    f->w = w;
    f->timer = evtimer_new(ISS.base, on_fetch_deadline, f);
    f->next = ISS.fetches;
    if (ISS.fetches)
        ISS.fetches->prev = f;
    ISS.fetches = f;
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
    if (!host || !scheme || (!tls && (ISS.https || strcasecmp(scheme, "http") != 0))) {
        if (u)
            evhttp_uri_free(u);
        iss_chain_fail("fetch", url, ISS.https ? "not an https:// URL" : "not an http(s):// URL");
        on_response(NULL, f);
        return;
    }
    int port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : tls ? 443 : 80;
    f->conn = tls ? tls_connection(host, port)
                  : evhttp_connection_base_new(ISS.base, NULL, host, (ev_uint16_t)port);
    if (!f->conn) {
        evhttp_uri_free(u);
        on_response(NULL, f);
        return;
    }
    int64_t ms = iss_timeout_ms();
    evhttp_connection_set_timeout(f->conn, (int)(ms / 1000));
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
        evhttp_add_header(h, "Authorization", ISS.basic);
        evbuffer_add(evhttp_request_get_output_buffer(req), form, strlen(form));
    }
    const char *path = evhttp_uri_get_path(u);
    const char *query = evhttp_uri_get_query(u);
    char *target = iss_strf("%s%s%s", path && *path ? path : "/", query ? "?" : "",
                            query ? query : "");
    int rc = evhttp_make_request(f->conn, req, form ? EVHTTP_REQ_POST : EVHTTP_REQ_GET, target);
    free(target);
    evhttp_uri_free(u);
    if (rc != 0) { /* the request was freed by evhttp */
        on_response(NULL, f);
        return;
    }
    /* from here: the name is resolved (in evhttp_make_request, before the connect) */
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
    if (!f->answered && f->timer)
        event_add(f->timer, &tv);
}
