/* Threads: the calling thread (the shard-move thread), on a private event_base. */
/* Node-to-node HTTP calls (see peer.h). Runs on the calling thread, on a private event_base. */
#include "core/peer.h"

#include "core/util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct call {
    struct event_base *base;
    int status;
    bool done, failed;
    int fd; /* peer_fetch: where a 200's body goes; -1: into body */
    uint64_t max, bytes;
    sha256_t sha;
    struct evbuffer *body;
    int err; /* -errno of a local failure (write, too long) */
    char *why;
    size_t whylen;
} call_t;

/* The body as it comes: a fetch writes and hashes it, a call keeps it (bounded). */
static void on_chunk(struct evhttp_request *req, void *arg)
{
    call_t *c = arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    if (c->err) {
        evbuffer_drain(in, n);
        return;
    }
    if (c->bytes + n > c->max) {
        c->err = -EMSGSIZE;
        snprintf(c->why, c->whylen, "the answer is longer than %llu bytes",
                 (unsigned long long)c->max);
        evbuffer_drain(in, n);
        return;
    }
    c->bytes += n;
    if (c->fd < 0 || evhttp_request_get_response_code(req) != 200) {
        evbuffer_add_buffer(c->body, in);
        return;
    }
    while (evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        sha256_update(&c->sha, v.iov_base, v.iov_len);
        const char *p = v.iov_base;
        size_t left = v.iov_len;
        while (left > 0) {
            ssize_t w = write(c->fd, p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                c->err = -errno ? -errno : -EIO;
                snprintf(c->why, c->whylen, "writing the fetched file: %s", strerror(errno));
                evbuffer_drain(in, evbuffer_get_length(in));
                return;
            }
            p += w;
            left -= (size_t)w;
        }
        evbuffer_drain(in, v.iov_len);
    }
}

static void on_done(struct evhttp_request *req, void *arg)
{
    call_t *c = arg;
    c->done = true;
    if (!req || evhttp_request_get_response_code(req) == 0) {
        c->failed = true; /* connection refused, reset or timed out */
    } else {
        c->status = evhttp_request_get_response_code(req);
        on_chunk(req, c); /* whatever the last read left */
    }
    event_base_loopbreak(c->base);
}

static int run(const peer_t *p, const char *method, const char *path, call_t *c)
{
    c->base = event_base_new();
    c->body = evbuffer_new();
    int rc = 0;
    struct evhttp_connection *conn = evhttp_connection_base_new(c->base, NULL, p->host,
                                                                (ev_uint16_t)p->port);
    if (!c->base || !c->body || !conn) {
        snprintf(c->why, c->whylen, "cannot set up a connection to %s:%d", p->host, p->port);
        rc = -ENOMEM;
        goto out;
    }
    evhttp_connection_set_timeout(conn, p->timeout_s > 0 ? p->timeout_s : 10);
    evhttp_connection_set_retries(conn, 0);
    struct evhttp_request *req = evhttp_request_new(on_done, c);
    evhttp_request_set_chunked_cb(req, on_chunk);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char host[300];
    snprintf(host, sizeof host, strchr(p->host, ':') ? "[%s]:%d" : "%s:%d", p->host, p->port);
    evhttp_add_header(h, "Host", host);
    evhttp_add_header(h, "Connection", "close");
    if (p->token) {
        char auth[300];
        snprintf(auth, sizeof auth, "Bearer %s", p->token);
        evhttp_add_header(h, "Authorization", auth);
    }
    if (strcmp(method, "POST") == 0)
        evhttp_add_header(h, "Content-Length", "0");
    if (evhttp_make_request(conn, req, strcmp(method, "POST") == 0 ? EVHTTP_REQ_POST
                                                                   : EVHTTP_REQ_GET,
                            path) != 0) {
        snprintf(c->why, c->whylen, "cannot send a request to %s:%d", p->host, p->port);
        rc = -EIO;
        goto out;
    }
    event_base_dispatch(c->base);
    if (!c->done || c->failed) {
        snprintf(c->why, c->whylen, "no answer from %s:%d (refused, reset or timed out)",
                 p->host, p->port);
        rc = -ECONNREFUSED;
    } else if (c->err) {
        rc = c->err;
    }
out:
    if (conn)
        evhttp_connection_free(conn);
    if (c->base)
        event_base_free(c->base);
    return rc;
}

int peer_call(const peer_t *p, const char *method, const char *path, size_t max, int *status,
              char **body, size_t *len, char *why, size_t whylen)
{
    call_t c = {.fd = -1, .max = max, .why = why, .whylen = whylen};
    *body = NULL;
    *len = 0;
    int rc = run(p, method, path, &c);
    if (rc == 0) {
        *status = c.status;
        *len = evbuffer_get_length(c.body);
        *body = xmalloc(*len + 1);
        evbuffer_remove(c.body, *body, *len);
        (*body)[*len] = '\0';
    }
    if (c.body)
        evbuffer_free(c.body);
    return rc;
}

int peer_fetch(const peer_t *p, const char *path, int fd, uint64_t max, int *status,
               uint64_t *bytes, unsigned char digest[SHA256_LEN], char *why, size_t whylen)
{
    call_t c = {.fd = fd, .max = max, .why = why, .whylen = whylen};
    sha256_init(&c.sha);
    int rc = run(p, "GET", path, &c);
    if (rc == 0) {
        *status = c.status;
        *bytes = c.bytes;
        sha256_final(&c.sha, digest);
    } else {
        sha256_discard(&c.sha);
    }
    if (c.body)
        evbuffer_free(c.body);
    return rc;
}
