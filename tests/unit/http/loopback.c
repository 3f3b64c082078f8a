/* The tests' loopback HTTP client: see loopback.h. */
#include "loopback.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int lb_listen(struct evhttp *http, void (*cb)(struct evhttp_request *, void *), void *arg)
{
    evhttp_set_gencb(http, cb, arg);
    struct evhttp_bound_socket *b = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
    if (!b)
        return -1;
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (getsockname(evhttp_bound_socket_get_fd(b), (struct sockaddr *)&sa, &sl) != 0)
        return -1;
    return ntohs(sa.sin_port);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void split(lb_answer_t *a, size_t len)
{
    a->status = 0;
    a->head = a->raw + len;
    a->body = a->raw + len;
    a->body_len = 0;
    char *eol = strstr(a->raw, "\r\n");
    char *end = strstr(a->raw, "\r\n\r\n");
    if (!eol || !end || strncmp(a->raw, "HTTP/1.", 7) != 0 || len < 12)
        return;
    a->status = atoi(a->raw + 9);
    a->head = eol + 2;
    a->body = end + 4;
    a->body_len = len - (size_t)(a->body - a->raw);
}

int lb_exchange(struct event_base *base, int port, const char *raw, lb_answer_t *a)
{
    memset(a, 0, sizeof *a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    size_t cap = 65536, len = 0, sent = 0, want = strlen(raw);
    a->raw = malloc(cap + 1);
    long long deadline = now_ms() + 5000;
    int rc = -1;
    while (now_ms() < deadline) {
        if (base)
            event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        struct pollfd p = {.fd = fd, .events = (short)(POLLIN | (sent < want ? POLLOUT : 0))};
        if (poll(&p, 1, base ? 1 : 50) < 0)
            break;
        if (sent < want && (p.revents & POLLOUT)) {
            ssize_t n = send(fd, raw + sent, want - sent, MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            if (len == cap)
                a->raw = realloc(a->raw, (cap *= 2) + 1);
            ssize_t n = recv(fd, a->raw + len, cap - len, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                rc = 0; /* the server closed: the answer is complete */
                break;
            }
            if (n > 0)
                len += (size_t)n;
        }
    }
    close(fd);
    if (base) /* the server's side of the close (its close callbacks) */
        for (int i = 0; i < 20; i++)
            event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    a->raw[len] = '\0';
    split(a, len);
    return rc;
}

/* The next header line of the head at p: its name's length and its value, or NULL at the end. */
static const char *next_line(const char *p, const char *end, size_t *namelen, const char **value,
                             size_t *valuelen)
{
    if (p >= end || strncmp(p, "\r\n", 2) == 0)
        return NULL;
    const char *eol = strstr(p, "\r\n");
    const char *colon = memchr(p, ':', eol ? (size_t)(eol - p) : 0);
    if (!eol || !colon)
        return NULL;
    *namelen = (size_t)(colon - p);
    const char *v = colon + 1;
    while (*v == ' ')
        v++;
    *value = v;
    *valuelen = (size_t)(eol - v);
    return eol + 2;
}

const char *lb_header(const lb_answer_t *a, const char *name, char *out, size_t n)
{
    const char *p = a->head, *end = a->body, *v;
    size_t nl, vl, want = strlen(name);
    const char *line = p;
    while ((p = next_line(line, end, &nl, &v, &vl)) != NULL) {
        if (nl == want && strncasecmp(line, name, nl) == 0) {
            size_t c = vl < n - 1 ? vl : n - 1;
            memcpy(out, v, c);
            out[c] = '\0';
            return out;
        }
        line = p;
    }
    return NULL;
}

int lb_header_count(const lb_answer_t *a, const char *name)
{
    const char *p, *line = a->head, *v;
    size_t nl, vl, want = strlen(name);
    int count = 0;
    while ((p = next_line(line, a->body, &nl, &v, &vl)) != NULL) {
        if (nl == want && strncasecmp(line, name, nl) == 0)
            count++;
        line = p;
    }
    return count;
}

void lb_answer_free(lb_answer_t *a)
{
    free(a->raw);
    a->raw = NULL;
}
