/* Threads: any thread (pure functions). */
/* HTTP request checks. Pure functions, any thread. */
#include "wire/checks.h"

#include "core/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Compares [s, s+n) with the NUL-terminated t, case-insensitively, ignoring trailing space. */
static bool token_eq(const char *s, size_t n, const char *t)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    return strlen(t) == n && strncasecmp(s, t, n) == 0;
}

static bool range_has_zero_q(const char *params, size_t n)
{
    /* looks for ";q=0", ";q=0.0", ";q=0.000" among the parameters */
    const char *p = params, *end = params + n;
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        if (!semi)
            break;
        p = skip_ws(semi + 1);
        if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            const char *v = p + 2;
            if (*v != '0')
                return false;
            v++;
            if (*v == '.') {
                v++;
                while (v < end && *v == '0')
                    v++;
            }
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            return v >= end || *v == ';' || *v == ',';
        }
    }
    return false;
}

bool accept_allows(const char *accept, const char *type)
{
    if (!accept)
        return false;
    const char *slash = strchr(type, '/');
    size_t major_len = (size_t)(slash - type);
    /* RFC 9110 12.5.1: the most specific matching range decides (exact > type/ * > * / *) */
    int best = 0;
    bool best_allows = false;
    const char *p = accept;
    while (*p) {
        p = skip_ws(p);
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *semi = memchr(p, ';', len);
        size_t mlen = semi ? (size_t)(semi - p) : len;
        while (mlen > 0 && (p[mlen - 1] == ' ' || p[mlen - 1] == '\t'))
            mlen--;
        int spec = 0;
        if (token_eq(p, mlen, type))
            spec = 3;
        else if (mlen == major_len + 2 && strncasecmp(p, type, major_len) == 0 &&
                 p[major_len] == '/' && p[major_len + 1] == '*')
            spec = 2;
        else if (token_eq(p, mlen, "*/*"))
            spec = 1;
        if (spec > 0 && spec >= best) {
            bool allows = !(semi && range_has_zero_q(semi, len - (size_t)(semi - p)));
            best_allows = spec > best ? allows : (best_allows || allows);
            best = spec;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return best > 0 && best_allows;
}

bool content_type_is_json(const char *ct)
{
    if (!ct)
        return false;
    ct = skip_ws(ct);
    const char *semi = strchr(ct, ';');
    size_t n = semi ? (size_t)(semi - ct) : strlen(ct);
    return token_eq(ct, n, "application/json");
}

bool content_coding_is_identity(const char *v)
{
    for (const char *p = v;;) {
        const char *item = skip_ws(p);
        const char *comma = strchr(item, ',');
        size_t n = comma ? (size_t)(comma - item) : strlen(item);
        /* token_eq ignores trailing spaces and tabs; a member that is only blanks (", ,")
         * codes nothing (RFC 9110 5.6.1 lets a recipient skip empty members) */
        if (!token_eq(item, n, "identity") && !token_eq(item, n, ""))
            return false;
        if (!comma)
            return true;
        p = comma + 1;
    }
}

bool header_is_visible_ascii(const char *v, size_t max)
{
    size_t i = 0;
    for (; v[i]; i++) {
        if (i >= max)
            return false;
        unsigned char c = (unsigned char)v[i];
        if (c < 0x21 || c > 0x7e)
            return false;
    }
    return i > 0;
}

const char *framing_problem(const char *cl, const char *te, bool repeated)
{
    if (repeated)
        return "Bad Request: Content-Length or Transfer-Encoding sent more than once";
    if (cl && te)
        return "Bad Request: Content-Length together with Transfer-Encoding";
    /* evhttp decodes chunked alone; with any other coding it would read no body at all */
    if (te && strcasecmp(te, "chunked") != 0)
        return "Bad Request: the only Transfer-Encoding accepted is chunked";
    if (cl) {
        /* evhttp's strtoll also takes "+5", which a proxy may read differently or not at all */
        size_t n = strspn(cl, "0123456789");
        if (n == 0 || cl[n] != '\0')
            return "Bad Request: Content-Length must be decimal digits";
    }
    return NULL;
}

static char *lower_dup(const char *s)
{
    char *d = xstrdup(s);
    for (char *p = d; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    /* a trailing slash on an origin is not part of it */
    size_t n = strlen(d);
    if (n > 0 && d[n - 1] == '/')
        d[n - 1] = '\0';
    return d;
}

/* Adds "host:port"; an IPv6 literal gets its brackets. */
static void add_host(hostcheck_t *hc, const char *h, int port)
{
    if (hc->n_hosts >= HOSTCHECK_MAX)
        return;
    char tmp[300];
    bool v6 = strchr(h, ':') && h[0] != '[';
    snprintf(tmp, sizeof tmp, "%s%s%s:%d", v6 ? "[" : "", h, v6 ? "]" : "", port);
    hc->hosts[hc->n_hosts++] = lower_dup(tmp);
}

static void add_origin(hostcheck_t *hc, const char *s)
{
    if (hc->n_origins < HOSTCHECK_MAX)
        hc->origins[hc->n_origins++] = lower_dup(s);
}

/* True when a "host[:port]" value ends in a port ("[v6]:port" or "name:port"). */
static bool has_port(const char *h)
{
    if (h[0] == '[')
        return strstr(h, "]:") != NULL;
    return strchr(h, ':') != NULL;
}

static bool is_wildcard(const char *h)
{
    return strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0 || strcmp(h, "*") == 0;
}

static bool is_loopback(const char *h)
{
    return strcmp(h, "127.0.0.1") == 0 || strcmp(h, "localhost") == 0 || strcmp(h, "::1") == 0;
}

void hostcheck_init(hostcheck_t *hc, const char *listen_host, int port,
                    char *const *extra_hosts, int n_extra_hosts,
                    char *const *extra_origins, int n_extra_origins)
{
    memset(hc, 0, sizeof *hc);
    bool wild = is_wildcard(listen_host);
    hc->check_host = !wild || n_extra_hosts > 0;
    hc->check_origin = !wild || n_extra_origins > 0 || n_extra_hosts > 0;
    if (is_loopback(listen_host)) {
        /* any loopback spelling reaches the same socket */
        static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
        for (int i = 0; i < 3; i++)
            add_host(hc, names[i], port);
    } else if (!wild) {
        add_host(hc, listen_host, port);
    }
    for (int i = 0; i < n_extra_hosts; i++) {
        if (hc->n_hosts < HOSTCHECK_MAX)
            hc->hosts[hc->n_hosts++] = lower_dup(extra_hosts[i]);
    }
    /* origins: the allowed hosts under http and https, plus explicit ones */
    int nh = hc->n_hosts;
    for (int i = 0; i < nh; i++) {
        /* a host allowed on any port allows its origins on any port: "scheme://host:*" */
        const char *any = has_port(hc->hosts[i]) ? "" : ":*";
        char tmp[320];
        snprintf(tmp, sizeof tmp, "http://%s%s", hc->hosts[i], any);
        add_origin(hc, tmp);
        snprintf(tmp, sizeof tmp, "https://%s%s", hc->hosts[i], any);
        add_origin(hc, tmp);
    }
    for (int i = 0; i < n_extra_origins; i++)
        add_origin(hc, extra_origins[i]);
}

void hostcheck_free(hostcheck_t *hc)
{
    for (int i = 0; i < hc->n_hosts; i++)
        free(hc->hosts[i]);
    for (int i = 0; i < hc->n_origins; i++)
        free(hc->origins[i]);
    hc->n_hosts = hc->n_origins = 0;
}

/* "host:port" matches an entry "host:port" exactly, or an entry "host" (no port) by name. */
static bool host_matches(const char *entry, const char *value)
{
    if (strcasecmp(entry, value) == 0)
        return true;
    if (has_port(entry))
        return false;
    /* entry without a port: compare the value's host part */
    const char *vend;
    if (value[0] == '[') {
        vend = strchr(value, ']');
        if (!vend)
            return false;
        vend++;
    } else {
        vend = strrchr(value, ':');
        if (!vend)
            vend = value + strlen(value);
    }
    size_t n = (size_t)(vend - value);
    return strlen(entry) == n && strncasecmp(entry, value, n) == 0;
}

bool hostcheck_host_ok(const hostcheck_t *hc, const char *host)
{
    if (!hc->check_host)
        return true;
    if (!host || !*host)
        return false;
    for (int i = 0; i < hc->n_hosts; i++) {
        if (host_matches(hc->hosts[i], host))
            return true;
    }
    if (!has_port(host)) {
        /* RFC 9110 7.2: a Host without a port names the default port, 80 for http */
        char with_port[300];
        if ((size_t)snprintf(with_port, sizeof with_port, "%s:80", host) < sizeof with_port) {
            for (int i = 0; i < hc->n_hosts; i++) {
                if (host_matches(hc->hosts[i], with_port))
                    return true;
            }
        }
    }
    return false;
}

/* origin[0, n) against an entry "scheme://host[:port]", or "scheme://host:*" (any port or none). */
static bool origin_matches(const char *entry, const char *origin, size_t n)
{
    size_t el = strlen(entry);
    if (el >= 2 && strcmp(entry + el - 2, ":*") == 0) {
        size_t hl = el - 2;
        if (n < hl || strncasecmp(entry, origin, hl) != 0)
            return false;
        if (n == hl)
            return true;
        if (origin[hl] != ':' || n == hl + 1)
            return false;
        for (size_t i = hl + 1; i < n; i++) {
            if (origin[i] < '0' || origin[i] > '9')
                return false;
        }
        return true;
    }
    return el == n && strncasecmp(entry, origin, n) == 0;
}

static bool origin_listed(const hostcheck_t *hc, const char *origin, size_t n)
{
    for (int i = 0; i < hc->n_origins; i++) {
        if (origin_matches(hc->origins[i], origin, n))
            return true;
    }
    return false;
}

bool hostcheck_origin_ok(const hostcheck_t *hc, const char *origin)
{
    if (!origin)
        return true;
    if (!hc->check_origin)
        return true;
    size_t n = strlen(origin);
    while (n > 0 && origin[n - 1] == '/')
        n--;
    if (origin_listed(hc, origin, n))
        return true;
    /* an origin without a port names its scheme's default port */
    size_t off = strncasecmp(origin, "http://", 7) == 0    ? 7
                 : strncasecmp(origin, "https://", 8) == 0 ? 8
                                                           : 0;
    if (off == 0 || n <= off || n - off >= 256)
        return false;
    char host[256];
    memcpy(host, origin + off, n - off);
    host[n - off] = '\0';
    if (has_port(host))
        return false;
    int port = off == 7 ? 80 : 443;
    char with_port[300];
    int m = snprintf(with_port, sizeof with_port, "%.*s:%d", (int)n, origin, port);
    return m > 0 && (size_t)m < sizeof with_port && origin_listed(hc, with_port, (size_t)m);
}
