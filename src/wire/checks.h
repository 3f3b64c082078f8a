/* HTTP request checks: media types, Host and Origin allow-lists. Pure functions, any thread. */
#ifndef MCPD_WIRE_CHECKS_H
#define MCPD_WIRE_CHECKS_H

#include <stdbool.h>
#include <stddef.h>

/* True when the Accept header value admits the media type `type` ("application/json"): the
 * most specific matching range (exact, then "type/ *", then "* / *") has a q-value above zero.
 * NULL accept admits nothing. */
bool accept_allows(const char *accept, const char *type);
/* True when a Content-Type value is application/json (parameters such as charset allowed). */
bool content_type_is_json(const char *ct);
/* True when a Content-Encoding value names no coding but identity: a comma-separated list of
 * "identity" (any case, optional spaces and tabs around each), or an empty one. */
bool content_coding_is_identity(const char *v);
/* True when every byte is visible ASCII (0x21..0x7E) and the length is 1..max. */
bool header_is_visible_ascii(const char *v, size_t max);
/* RFC 9112 6.3: why a request's body length is ambiguous, or NULL when it is not. cl and te
 * are the Content-Length and Transfer-Encoding values (NULL when absent); repeated: either
 * came more than once. A proxy in front may have framed such a request differently, so the
 * bytes after its body cannot be trusted as the next request. */
const char *framing_problem(const char *cl, const char *te, bool repeated);

#define HOSTCHECK_MAX 96 /* room for every flag's entries: see http/listener.c's assert */

/* DNS-rebinding protection. Built once from --listen / --allowed-host / --allowed-origin. */
typedef struct hostcheck {
    bool check_host;    /* false when listening on a wildcard address with no --allowed-host */
    bool check_origin;  /* false when listening on a wildcard address with no --allowed-origin */
    char *hosts[HOSTCHECK_MAX];   /* lowercase "host:port" or "host" (any port) */
    int n_hosts;
    char *origins[HOSTCHECK_MAX]; /* lowercase "scheme://host[:port]", or "scheme://host:*" */
    int n_origins;
} hostcheck_t;

/* listen_host/port are the bound address; extra_* come from the flags. */
void hostcheck_init(hostcheck_t *hc, const char *listen_host, int port,
                    char *const *extra_hosts, int n_extra_hosts,
                    char *const *extra_origins, int n_extra_origins);
void hostcheck_free(hostcheck_t *hc);
/* Host header value: NULL (absent, HTTP/1.0) is refused when checking; no port means 80. */
bool hostcheck_host_ok(const hostcheck_t *hc, const char *host);
/* Origin header value: NULL (absent) is always allowed; "null" is refused when checking.
 * No port means the scheme's default (http 80, https 443). */
bool hostcheck_origin_ok(const hostcheck_t *hc, const char *origin);

#endif
