/* mcpbench HTTP/1.1 client (bufferevents, SSE decoding). Main thread only.
 *
 * Why its own parser and not evhttp's client: evhttp buffers a whole response before it calls
 * back (no SSE event as it arrives), allocates per request, and costs more per request than the
 * servers we want to saturate. Here a request is one evbuffer_add, and a response is parsed from
 * the contiguous input with no copy except SSE lines split across reads and event data.
 *
 * A request on a reused keep-alive connection that sees EOF before any byte of its response is
 * resent once on a fresh connection: that is the idle-close race (Node closes idle keep-alive
 * connections after 5 s), not a server failure. Anything else that breaks is counted.
 */
#include "mb_http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

mb_http_counters_t mb_http_counters;

const char *const mb_err_names[MB_E__COUNT] = {
    "ok", "connect", "timeout", "status", "protocol", "body", "io",
};

int64_t mb_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void *mb_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "mcpbench: out of memory\n");
        abort();
    }
    return p;
}

void *mb_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "mcpbench: out of memory\n");
        abort();
    }
    return p;
}

void *mb_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "mcpbench: out of memory\n");
        abort();
    }
    return q;
}

void mb_buf_add(mb_buf_t *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = mb_xrealloc(b->p, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void mb_buf_addc(mb_buf_t *b, char c)
{
    mb_buf_add(b, &c, 1);
}

void mb_buf_free(mb_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

size_t mb_fmt_i64(char *out, int64_t v)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t k = 0;
    if (v < 0)
        out[k++] = '-';
    while (n)
        out[k++] = tmp[--n];
    return k;
}

/* ---- target ---- */

static bool host_is_loopback_name(const char *h)
{
    return strcmp(h, "127.0.0.1") == 0 || strcasecmp(h, "localhost") == 0 || strcmp(h, "::1") == 0;
}

int mb_target_parse(mb_target_t *t, struct event_base *base, const char *url, bool allow_remote,
                    char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->base = base;
    if (strncasecmp(url, "http://", 7) != 0) {
        snprintf(err, errlen, "%s: only http:// URLs are supported", url);
        return -1;
    }
    const char *a = url + 7;
    const char *slash = strchr(a, '/');
    size_t alen = slash ? (size_t)(slash - a) : strlen(a);
    if (alen == 0 || alen >= MB_HOST_MAX) {
        snprintf(err, errlen, "%s: bad host", url);
        return -1;
    }
    memcpy(t->host, a, alen);
    t->host[alen] = '\0';
    snprintf(t->path, sizeof t->path, "%s", slash ? slash : "/");
    snprintf(t->url, sizeof t->url, "%s", url);

    char host[MB_HOST_MAX], port[16] = "80";
    const char *hp = t->host;
    if (hp[0] == '[') {
        const char *rb = strchr(hp, ']');
        if (!rb) {
            snprintf(err, errlen, "%s: bad IPv6 literal", url);
            return -1;
        }
        snprintf(host, sizeof host, "%.*s", (int)(rb - hp - 1), hp + 1);
        if (rb[1] == ':')
            snprintf(port, sizeof port, "%s", rb + 2);
        else if (rb[1] != '\0') {
            snprintf(err, errlen, "%s: bad host", url);
            return -1;
        }
    } else {
        const char *colon = strrchr(hp, ':');
        if (colon) {
            snprintf(host, sizeof host, "%.*s", (int)(colon - hp), hp);
            snprintf(port, sizeof port, "%s", colon + 1);
        } else {
            snprintf(host, sizeof host, "%s", hp);
        }
    }
    char *end;
    long pn = strtol(port, &end, 10);
    if (*end || pn <= 0 || pn > 65535) {
        snprintf(err, errlen, "%s: bad port", url);
        return -1;
    }
    if (!allow_remote && !host_is_loopback_name(host)) {
        snprintf(err, errlen,
                 "%s: refusing a target that is not 127.0.0.1, localhost or ::1 "
                 "(--allow-remote to override)",
                 url);
        return -1;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    /* localhost: prefer IPv4, which is what servers bound to 127.0.0.1 listen on */
    hints.ai_family = strcasecmp(host, "localhost") == 0 ? AF_INET : AF_UNSPEC;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "%s: cannot resolve %s: %s", url, host, gai_strerror(rc));
        return -1;
    }
    memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
    t->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    if (!allow_remote) {
        bool lo = false;
        if (t->addr.ss_family == AF_INET) {
            const struct sockaddr_in *sin = (const struct sockaddr_in *)&t->addr;
            lo = (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
        } else if (t->addr.ss_family == AF_INET6) {
            const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&t->addr;
            lo = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
        }
        if (!lo) {
            snprintf(err, errlen, "%s: %s does not resolve to a loopback address", url, host);
            return -1;
        }
    }
    return 0;
}

/* ---- connection ---- */

enum { CS_CLOSED, CS_CONNECTING, CS_IDLE, CS_BUSY };
enum { PS_HEAD, PS_CL, PS_CHUNK_SIZE, PS_CHUNK_DATA, PS_CHUNK_CRLF, PS_TRAILER, PS_EOF };
enum { R_MORE, R_DONE, R_STOP, R_ERR };

#define MAX_HEAD_BYTES (64 * 1024)
#define MAX_BODY_BYTES (8u << 20)

typedef struct sse_parser {
    mb_buf_t line; /* a line split across reads */
    mb_buf_t id, data;
    bool has_id, has_data;
    bool skip_lf; /* the previous line ended in CR: a following LF belongs to it */
} sse_parser_t;

struct mb_conn {
    mb_target_t *t;
    struct bufferevent *bev;
    struct event *fail_ev; /* reports a connect that failed synchronously */
    int state;
    mb_req_t *req;
    bool reused, got_bytes, retried;
    int ps;
    uint64_t remaining;
    mb_resp_t resp;
    mb_buf_t out, body;
    sse_parser_t sse;
};

static void conn_readcb(struct bufferevent *bev, void *arg);
static void conn_eventcb(struct bufferevent *bev, short events, void *arg);

mb_conn_t *mb_conn_new(mb_target_t *t)
{
    mb_conn_t *c = mb_xcalloc(1, sizeof *c);
    c->t = t;
    c->state = CS_CLOSED;
    return c;
}

static void close_sock(mb_conn_t *c)
{
    if (c->bev)
        bufferevent_free(c->bev);
    c->bev = NULL;
    c->state = CS_CLOSED;
}

void mb_conn_reset(mb_conn_t *c)
{
    close_sock(c);
    c->req = NULL;
    if (c->fail_ev)
        event_del(c->fail_ev);
}

void mb_conn_free(mb_conn_t *c)
{
    if (!c)
        return;
    mb_conn_reset(c);
    if (c->fail_ev)
        event_free(c->fail_ev);
    mb_buf_free(&c->out);
    mb_buf_free(&c->body);
    mb_buf_free(&c->sse.line);
    mb_buf_free(&c->sse.id);
    mb_buf_free(&c->sse.data);
    free(c);
}

bool mb_conn_busy(const mb_conn_t *c)
{
    return c->req != NULL;
}

static void reset_response(mb_conn_t *c)
{
    memset(&c->resp, 0, sizeof c->resp);
    c->resp.keep_alive = true;
    c->body.len = 0;
    c->sse.line.len = c->sse.id.len = c->sse.data.len = 0;
    c->sse.has_id = c->sse.has_data = c->sse.skip_lf = false;
    c->ps = PS_HEAD;
    c->got_bytes = false;
}

char mb_extra_headers[4096];
size_t mb_extra_headers_len;

static void write_req(mb_conn_t *c)
{
    mb_req_t *r = c->req;
    mb_buf_t *o = &c->out;
    o->len = 0;
    mb_buf_add(o, r->method, strlen(r->method));
    mb_buf_addc(o, ' ');
    mb_buf_add(o, c->t->path, strlen(c->t->path));
    static const char v[] = " HTTP/1.1\r\nHost: ";
    mb_buf_add(o, v, sizeof v - 1);
    mb_buf_add(o, c->t->host, strlen(c->t->host));
    if (strcmp(r->method, "POST") == 0) {
        static const char h[] = "\r\nContent-Type: application/json\r\n"
                                "Accept: application/json, text/event-stream\r\n"
                                "Content-Length: ";
        mb_buf_add(o, h, sizeof h - 1);
        char num[24];
        mb_buf_add(o, num, mb_fmt_i64(num, (int64_t)r->body_len));
        mb_buf_add(o, "\r\n", 2);
    } else if (strcmp(r->method, "GET") == 0) {
        static const char h[] = "\r\nAccept: text/event-stream\r\n";
        mb_buf_add(o, h, sizeof h - 1);
    } else {
        mb_buf_add(o, "\r\n", 2);
    }
    if (r->headers_len)
        mb_buf_add(o, r->headers, r->headers_len);
    if (mb_extra_headers_len)
        mb_buf_add(o, mb_extra_headers, mb_extra_headers_len);
    mb_buf_add(o, "\r\n", 2);
    if (r->body_len)
        mb_buf_add(o, r->body, r->body_len);
    reset_response(c);
    r->t_sent = mb_now_us();
    /* Write now rather than on the loop's next EV_WRITE: one loop round trip less per request
     * (the server sees the next request while we still handle this batch of responses), and
     * no epoll_ctl to arm and disarm the write event. A partial write or an error goes through
     * the bufferevent, which finishes it or reports the error through conn_eventcb. */
    struct evbuffer *out = bufferevent_get_output(c->bev);
    size_t done = 0;
    if (evbuffer_get_length(out) == 0) {
        ssize_t n = send(bufferevent_getfd(c->bev), o->p, o->len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            done = (size_t)n;
    }
    if (done < o->len)
        bufferevent_write(c->bev, o->p + done, o->len - done);
}

static void fail_cb(evutil_socket_t fd, short what, void *arg);

static void conn_connect(mb_conn_t *c)
{
    c->bev = bufferevent_socket_new(c->t->base, -1, BEV_OPT_CLOSE_ON_FREE);
    c->state = CS_CONNECTING;
    mb_http_counters.connects++;
    if (!c->bev) {
        c->state = CS_CLOSED;
    } else {
        bufferevent_setcb(c->bev, conn_readcb, NULL, conn_eventcb, c);
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
        if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&c->t->addr, (int)c->t->addrlen) == 0)
            return; /* success or an asynchronous failure, both reported by conn_eventcb */
        close_sock(c);
    }
    /* no socket at all (EMFILE...): report it from the loop, never from inside mb_conn_send */
    if (!c->fail_ev)
        c->fail_ev = evtimer_new(c->t->base, fail_cb, c);
    struct timeval tv0 = {0, 0};
    evtimer_add(c->fail_ev, &tv0);
}

int mb_conn_send(mb_conn_t *c, mb_req_t *r)
{
    if (c->req)
        return -1;
    c->req = r;
    c->retried = false;
    if (c->state == CS_IDLE) {
        c->reused = true;
        c->state = CS_BUSY;
        write_req(c);
    } else {
        c->reused = false;
        close_sock(c);
        conn_connect(c);
    }
    return 0;
}

/* Ends the current request: the connection is made reusable (or closed) first, then on_done is
 * called as the very last step, so it may send again on c or free it. */
static void finish(mb_conn_t *c, mb_err_t err)
{
    mb_req_t *r = c->req;
    c->req = NULL;
    if (err != MB_OK || c->resp.stopped || !c->resp.keep_alive)
        close_sock(c);
    else
        c->state = CS_IDLE;
    c->resp.body = c->body.p ? c->body.p : "";
    c->resp.body_len = c->body.len;
    if (r)
        r->on_done(r, err, &c->resp);
}

static void fail_cb(evutil_socket_t fd, short what, void *arg)
{
    mb_conn_t *c = arg;
    if (c->req && c->state == CS_CLOSED)
        finish(c, MB_E_CONNECT);
}

/* ---- response parsing ---- */

static bool name_is(const char *p, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n == k && strncasecmp(p, name, k) == 0;
}

static bool has_token_ci(const char *p, size_t n, const char *tok)
{
    size_t k = strlen(tok);
    for (size_t i = 0; i + k <= n; i++)
        if (strncasecmp(p + i, tok, k) == 0)
            return true;
    return false;
}

/* Parses the status line and headers in [p, p+n) (n excludes the blank line). */
static int parse_head(mb_conn_t *c, const char *p, size_t n, bool *chunked, int64_t *clen)
{
    mb_resp_t *rs = &c->resp;
    if (n < 12 || strncmp(p, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)p[9]) ||
        !isdigit((unsigned char)p[10]) || !isdigit((unsigned char)p[11]))
        return -1;
    rs->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    rs->keep_alive = p[7] == '1';
    *chunked = false;
    *clen = -1;
    const char *end = p + n;
    const char *line = memchr(p, '\n', n);
    line = line ? line + 1 : end;
    while (line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        const char *next = eol ? eol + 1 : end;
        const char *le = eol ? eol : end;
        if (le > line && le[-1] == '\r')
            le--;
        const char *colon = memchr(line, ':', (size_t)(le - line));
        if (colon) {
            size_t nl = (size_t)(colon - line);
            const char *v = colon + 1;
            while (v < le && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = le;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            size_t vl = (size_t)(ve - v);
            if (name_is(line, nl, "content-length")) {
                *clen = strtoll(v, NULL, 10);
            } else if (name_is(line, nl, "transfer-encoding")) {
                *chunked = has_token_ci(v, vl, "chunked");
            } else if (name_is(line, nl, "content-type")) {
                if (vl >= 16 && strncasecmp(v, "application/json", 16) == 0)
                    rs->ctype = MB_CT_JSON;
                else if (vl >= 17 && strncasecmp(v, "text/event-stream", 17) == 0)
                    rs->ctype = MB_CT_SSE;
                else
                    rs->ctype = MB_CT_OTHER;
            } else if (name_is(line, nl, "mcp-session-id")) {
                if (vl < MB_SID_MAX) {
                    memcpy(rs->session_id, v, vl);
                    rs->session_id[vl] = '\0';
                }
            } else if (name_is(line, nl, "connection")) {
                if (has_token_ci(v, vl, "close"))
                    rs->keep_alive = false;
                else if (has_token_ci(v, vl, "keep-alive"))
                    rs->keep_alive = true;
            }
        }
        line = next;
    }
    return 0;
}

static int sse_dispatch(mb_conn_t *c)
{
    sse_parser_t *s = &c->sse;
    int rc = MB_SSE_CONTINUE;
    if (s->has_id || s->has_data) {
        c->resp.sse_events++;
        if (c->req->on_event) {
            mb_sse_ev_t ev = {
                .id = s->id.p ? s->id.p : "",
                .id_len = s->id.len,
                .has_id = s->has_id,
                .data = s->data.p ? s->data.p : "",
                .data_len = s->data.len,
                .has_data = s->has_data,
            };
            rc = c->req->on_event(c->req, &ev);
        }
    }
    s->id.len = s->data.len = 0;
    s->has_id = s->has_data = false;
    return rc;
}

static int sse_line(mb_conn_t *c, const char *line, size_t len)
{
    sse_parser_t *s = &c->sse;
    if (len == 0)
        return sse_dispatch(c);
    if (line[0] == ':') {
        c->resp.sse_comments++;
        return MB_SSE_CONTINUE;
    }
    const char *colon = memchr(line, ':', len);
    size_t nl = colon ? (size_t)(colon - line) : len;
    const char *v = colon ? colon + 1 : line + len;
    size_t vl = colon ? len - nl - 1 : 0;
    if (vl && *v == ' ') {
        v++;
        vl--;
    }
    if (nl == 4 && memcmp(line, "data", 4) == 0) {
        if (s->has_data)
            mb_buf_addc(&s->data, '\n');
        mb_buf_add(&s->data, v, vl);
        s->has_data = true;
    } else if (nl == 2 && memcmp(line, "id", 2) == 0) {
        if (!memchr(v, '\0', vl)) {
            s->id.len = 0;
            mb_buf_add(&s->id, v, vl);
            s->has_id = true;
        }
    }
    /* "event" and "retry" do not matter to a load generator */
    return MB_SSE_CONTINUE;
}

static int sse_feed(mb_conn_t *c, const char *p, size_t n)
{
    sse_parser_t *s = &c->sse;
    size_t i = 0;
    while (i < n) {
        if (s->skip_lf) {
            s->skip_lf = false;
            if (p[i] == '\n') {
                i++;
                continue;
            }
        }
        size_t j = i;
        while (j < n && p[j] != '\n' && p[j] != '\r')
            j++;
        if (j == n) {
            mb_buf_add(&s->line, p + i, n - i);
            break;
        }
        const char *line = p + i;
        size_t len = j - i;
        if (s->line.len) {
            mb_buf_add(&s->line, p + i, j - i);
            line = s->line.p;
            len = s->line.len;
        }
        s->skip_lf = p[j] == '\r';
        i = j + 1;
        int rc = sse_line(c, line, len);
        s->line.len = 0;
        if (rc == MB_SSE_STOP)
            return R_STOP;
    }
    return R_MORE;
}

static int body_data(mb_conn_t *c, const char *p, size_t n)
{
    if (c->resp.ctype == MB_CT_SSE)
        return sse_feed(c, p, n);
    if (c->body.len + n <= MAX_BODY_BYTES)
        mb_buf_add(&c->body, p, n);
    return R_MORE;
}

static int parse(mb_conn_t *c, const char *p, size_t n, size_t *used)
{
    size_t off = 0;
    int rc = R_MORE;
    for (;;) {
        switch (c->ps) {
        case PS_HEAD: {
            const char *e = n - off >= 4 ? memmem(p + off, n - off, "\r\n\r\n", 4) : NULL;
            if (!e) {
                rc = n - off > MAX_HEAD_BYTES ? R_ERR : R_MORE;
                goto out;
            }
            bool chunked;
            int64_t clen;
            if (parse_head(c, p + off, (size_t)(e - (p + off)), &chunked, &clen) != 0) {
                rc = R_ERR;
                goto out;
            }
            off = (size_t)(e - p) + 4;
            if (c->resp.status >= 100 && c->resp.status < 200) {
                reset_response(c); /* an interim response: the real one follows */
                c->got_bytes = true;
                continue;
            }
            if (c->req->on_headers)
                c->req->on_headers(c->req, &c->resp);
            if (c->resp.status == 204 || c->resp.status == 304) {
                rc = R_DONE;
                goto out;
            } else if (chunked) {
                c->ps = PS_CHUNK_SIZE;
            } else if (clen >= 0) {
                c->remaining = (uint64_t)clen;
                c->ps = PS_CL;
                if (clen == 0) {
                    rc = R_DONE;
                    goto out;
                }
            } else {
                c->ps = PS_EOF;
                c->resp.keep_alive = false;
            }
            break;
        }
        case PS_CL: {
            size_t m = n - off < c->remaining ? n - off : (size_t)c->remaining;
            int r = body_data(c, p + off, m);
            off += m;
            c->remaining -= m;
            if (r == R_STOP) {
                rc = R_STOP;
                goto out;
            }
            rc = c->remaining == 0 ? R_DONE : R_MORE;
            goto out;
        }
        case PS_CHUNK_SIZE: {
            const char *e = memchr(p + off, '\n', n - off);
            if (!e) {
                rc = n - off > 1024 ? R_ERR : R_MORE;
                goto out;
            }
            char *end;
            unsigned long long sz = strtoull(p + off, &end, 16);
            if (end == p + off) {
                rc = R_ERR;
                goto out;
            }
            off = (size_t)(e - p) + 1;
            if (sz == 0) {
                c->ps = PS_TRAILER;
            } else {
                c->remaining = sz;
                c->ps = PS_CHUNK_DATA;
            }
            break;
        }
        case PS_CHUNK_DATA: {
            size_t m = n - off < c->remaining ? n - off : (size_t)c->remaining;
            int r = body_data(c, p + off, m);
            off += m;
            c->remaining -= m;
            if (r == R_STOP) {
                rc = R_STOP;
                goto out;
            }
            if (c->remaining) {
                rc = R_MORE;
                goto out;
            }
            c->ps = PS_CHUNK_CRLF;
            break;
        }
        case PS_CHUNK_CRLF: {
            if (n - off < 2) {
                rc = R_MORE;
                goto out;
            }
            if (p[off] != '\r' || p[off + 1] != '\n') {
                rc = R_ERR;
                goto out;
            }
            off += 2;
            c->ps = PS_CHUNK_SIZE;
            break;
        }
        case PS_TRAILER: {
            const char *e = memchr(p + off, '\n', n - off);
            if (!e) {
                rc = R_MORE;
                goto out;
            }
            size_t ll = (size_t)(e - (p + off));
            off = (size_t)(e - p) + 1;
            if (ll == 0 || (ll == 1 && p[off - 2] == '\r')) {
                rc = R_DONE;
                goto out;
            }
            break;
        }
        case PS_EOF: {
            int r = body_data(c, p + off, n - off);
            off = n;
            rc = r == R_STOP ? R_STOP : R_MORE;
            goto out;
        }
        default:
            rc = R_ERR;
            goto out;
        }
    }
out:
    *used = off;
    return rc;
}

static void conn_readcb(struct bufferevent *bev, void *arg)
{
    mb_conn_t *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);
    if (n == 0)
        return;
    if (c->state != CS_BUSY || !c->req) {
        /* bytes nobody asked for: the connection is no longer in a known state */
        close_sock(c);
        return;
    }
    c->got_bytes = true;
    const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
    size_t used = 0;
    int rc = parse(c, p, n, &used);
    evbuffer_drain(in, used);
    switch (rc) {
    case R_MORE:
        return;
    case R_DONE:
        finish(c, MB_OK);
        return;
    case R_STOP:
        c->resp.stopped = true;
        finish(c, MB_OK);
        return;
    default:
        finish(c, MB_E_PROTO);
        return;
    }
}

static void conn_eventcb(struct bufferevent *bev, short events, void *arg)
{
    mb_conn_t *c = arg;
    if (events & BEV_EVENT_CONNECTED) {
        int one = 1;
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (c->req) {
            c->state = CS_BUSY;
            write_req(c);
        } else {
            c->state = CS_IDLE;
        }
        return;
    }
    if (!(events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    int was = c->state;
    close_sock(c);
    if (!c->req)
        return; /* an idle keep-alive connection closed by the server */
    if (was == CS_CONNECTING) {
        finish(c, MB_E_CONNECT);
    } else if ((events & BEV_EVENT_EOF) && c->ps == PS_EOF) {
        finish(c, MB_OK);
    } else if (!c->got_bytes && c->reused && !c->retried) {
        c->retried = true;
        c->reused = false;
        mb_http_counters.reconnect_retries++;
        conn_connect(c);
    } else {
        finish(c, MB_E_IO);
    }
}
