/* Threads: the admin thread (a request's check); tests and fuzzers call admin_host_ok. */
/* Whether a request to the admin listener is a web page's (see admin.h). */
#include "admin/admin.h"

#include "core/util.h"

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* host[:port] names "name" (any port or none) */
static bool host_is(const char *host, const char *name)
{
    size_t n = strlen(name);
    return strncasecmp(host, name, n) == 0 && (host[n] == '\0' || host[n] == ':');
}

bool admin_host_ok(const char *bound, const char *addr, bool loopback, const char *host)
{
    if (!host || !loopback)
        return true;
    if (host_is(host, "localhost") || host_is(host, "127.0.0.1") || host_is(host, "[::1]"))
        return true;
    /* the name it was bound by, or the address it bound (IPv6 bracketed in a Host) */
    const char *own[2] = {bound, addr};
    for (int i = 0; i < 2; i++) {
        char bracketed[260];
        snprintf(bracketed, sizeof bracketed, "[%s]", own[i] ? own[i] : "");
        if (own[i] && own[i][0] && (host_is(host, own[i]) || host_is(host, bracketed)))
            return true;
    }
    return false;
}

/* The machine's own names: gethostname's, and the canonical name it resolves to (/etc/hosts'
 * first name on a Debian host: "127.0.1.1 host.example.com host"), read once at the start
 * (admin_browser_init, before the admin thread runs): no lookup per request. */
static char own_names[2][256];
static bool wildcard; /* the listener's address is 0.0.0.0 or :: */

void admin_browser_init(const char *addr)
{
    memset(own_names, 0, sizeof own_names);
    wildcard = strcmp(addr, "0.0.0.0") == 0 || strcmp(addr, "::") == 0;
    if (!wildcard)
        return; /* only a wildcard listener's connections name the machine */
    if (gethostname(own_names[0], sizeof own_names[0] - 1) != 0) {
        own_names[0][0] = '\0';
        return;
    }
    struct addrinfo hints = {.ai_flags = AI_CANONNAME}, *res = NULL;
    if (getaddrinfo(own_names[0], NULL, &hints, &res) == 0 && res && res->ai_canonname)
        snprintf(own_names[1], sizeof own_names[1], "%s", res->ai_canonname);
    if (res)
        freeaddrinfo(res);
}

/* A listener on a wildcard address takes connections to every address the machine has, loopback
 * among them: such a connection is checked as a loopback listener's would be, with the address
 * it arrived at (addr[n]), and the machine's own names (a local Prometheus that names it,
 * /etc/hosts mapping it to 127.0.1.1) in place of a bound name. false: the connection is not a
 * loopback one. */
static bool wildcard_by_loopback(struct evhttp_request *req, char *addr, size_t n)
{
    struct evhttp_connection *c = evhttp_request_get_connection(req);
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    struct sockaddr_storage ss = {0};
    socklen_t sl = sizeof ss;
    addr[0] = '\0'; /* read by admin_host_ok whatever happens below */
    if (!bev || getsockname(bufferevent_getfd(bev), (struct sockaddr *)&ss, &sl) != 0)
        return true; /* unknown: checked as loopback (the stricter) */
    if (!sockaddr_is_loopback((struct sockaddr *)&ss))
        return false;
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)&ss;
    if (ss.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
        /* a v4 connection to a dual-stack "::": the address its client wrote, 127.x.y.z */
        memcpy(&v4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
        if (sockaddr_numeric((struct sockaddr *)&v4, sizeof v4, addr, n) != 0)
            addr[0] = '\0';
    } else if (sockaddr_numeric((struct sockaddr *)&ss, sl, addr, n) != 0) {
        addr[0] = '\0';
    }
    return true;
}

const char *admin_browser_refusal(struct evhttp_request *req, const char *bound, const char *addr,
                                  bool loopback)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *site = evhttp_find_header(in, "Sec-Fetch-Site");
    if (evhttp_find_header(in, "Origin") || (site && strcmp(site, "none") != 0))
        return "forbidden: the admin listener answers no web page's request (it carried Origin "
               "or Sec-Fetch-Site)\n";
    char local[64];
    const char *host = evhttp_find_header(in, "Host");
    if (host && wildcard && wildcard_by_loopback(req, local, sizeof local)) {
        if (own_names[1][0] && admin_host_ok(own_names[1], local, true, host))
            return NULL;
        bound = own_names[0];
        addr = local;
        loopback = true;
    }
    if (!admin_host_ok(bound, addr, loopback, host))
        return "forbidden: this admin listener is reached over loopback; the Host header must "
               "name localhost, 127.0.0.1, [::1] or its own address\n";
    return NULL;
}
