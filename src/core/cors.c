/* Threads: any thread (pure functions). */
/* CORS values: see core/cors.h. Pure, any thread. */
#include "core/cors.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

/* RFC 9110 tchar: what a header name is made of */
static bool is_tchar(char c)
{
    return is_alpha(c) || is_digit(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* a host of a URL as browsers serialize it: a DNS name (IDNs in their punycode form) or an
 * IPv4 address, or an IPv6 address in brackets */
static bool host_char(char c, bool bracketed)
{
    if (bracketed)
        return is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'f') || c == ':' || c == '.';
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_';
}

int cors_origin_norm(const char *in, char *out, size_t cap)
{
    if (!in || !out || cap == 0)
        return -EINVAL;
    if (strcmp(in, "*") == 0) {
        if (cap < 2)
            return -EINVAL;
        memcpy(out, "*", 2);
        return 0;
    }
    const char *p = in;
    if (!is_alpha(*p))
        return -EINVAL;
    while (is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-' || *p == '.')
        p++;
    size_t slen = (size_t)(p - in);
    if (strncmp(p, "://", 3) != 0)
        return -EINVAL; /* "null" and other opaque origins too */
    const char *host = p + 3;
    const char *h = host;
    bool bracketed = *h == '[';
    if (bracketed)
        h++;
    while (*h && host_char(*h, bracketed))
        h++;
    if (bracketed) {
        if (*h != ']' || h == host + 1)
            return -EINVAL;
        h++;
    }
    size_t hlen = (size_t)(h - host);
    if (hlen == 0)
        return -EINVAL;
    long port = -1;
    if (*h == ':') {
        h++;
        port = 0;
        int digits = 0;
        while (is_digit(*h) && digits < 6) {
            port = port * 10 + (*h++ - '0');
            digits++;
        }
        if (digits == 0 || port < 1 || port > 65535)
            return -EINVAL;
    }
    if (*h == '/')
        h++;
    if (*h != '\0')
        return -EINVAL; /* a path, a query, user info, a byte no host has */
    char scheme[32];
    if (slen >= sizeof scheme)
        return -EINVAL;
    for (size_t i = 0; i < slen; i++)
        scheme[i] = lower(in[i]);
    scheme[slen] = '\0';
    if ((port == 80 && strcmp(scheme, "http") == 0) || (port == 443 && strcmp(scheme, "https") == 0))
        port = -1;
    char pstr[8] = "";
    if (port > 0)
        snprintf(pstr, sizeof pstr, ":%ld", port);
    size_t need = slen + 3 + hlen + strlen(pstr) + 1;
    if (need > cap)
        return -EINVAL;
    char *o = out;
    memcpy(o, scheme, slen), o += slen;
    memcpy(o, "://", 3), o += 3;
    for (size_t i = 0; i < hlen; i++)
        *o++ = lower(host[i]);
    memcpy(o, pstr, strlen(pstr) + 1);
    return 0;
}

bool cors_any_origin(char *const *list, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], "*") == 0)
            return true;
    return false;
}

const char *cors_allow_origin(char *const *list, int n, const char *origin)
{
    if (!origin)
        return NULL;
    for (int i = 0; i < n; i++) {
        if (strcmp(list[i], "*") == 0)
            return "*";
        if (strcmp(list[i], origin) == 0)
            return origin;
    }
    return NULL;
}

size_t cors_allow_headers(const char *req, char *out, size_t cap)
{
    static const char fixed[] = CORS_ALLOW_HEADERS;
    if (cap < sizeof fixed) {
        if (cap)
            out[0] = '\0';
        return 0;
    }
    memcpy(out, fixed, sizeof fixed);
    size_t len = sizeof fixed - 1;
    const char *p = req;
    while (p && *p) {
        /* one element of a comma-separated list, optional whitespace around it */
        while (*p == ' ' || *p == '\t')
            p++;
        const char *name = p;
        while (is_tchar(*p))
            p++;
        size_t n = (size_t)(p - name);
        while (*p == ' ' || *p == '\t')
            p++;
        bool token = *p == ',' || *p == '\0';
        while (*p && *p != ',')
            p++; /* past what is not a token */
        if (*p == ',')
            p++;
        if (!token || n <= 10 || n > CORS_PARAM_NAME_MAX || strncasecmp(name, "Mcp-Param-", 10) != 0)
            continue; /* not MCP's (the fixed ones are listed already) */
        if (len + 2 + n + 1 > cap)
            continue;
        memcpy(out + len, ", ", 2);
        memcpy(out + len + 2, name, n);
        len += 2 + n;
        out[len] = '\0';
    }
    return len;
}
