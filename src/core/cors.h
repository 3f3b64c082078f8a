/* CORS for browser clients (--cors-origin): the form of an allowed origin, and the header values
 * a cross-origin answer carries. Pure functions, any thread. Which answer carries what, and
 * when, is the HTTP layer's (http/cors.c); this file knows no request.
 *
 * MCP's requests carry non-safelisted headers (Content-Type: application/json, Authorization,
 * Mcp-Session-Id...), so a browser sends a preflight OPTIONS before each kind of request, and
 * reads an answer only when it names the page's origin. The preflight's answer lists exactly
 * the request headers MCP uses: a fixed set, plus the Mcp-Param-* headers (SEP-2243) the
 * preflight asks for by name, since CORS has no wildcard for a name prefix (and `*` never
 * covers Authorization). A header that is not MCP's is left out, and the browser refuses the
 * request itself, naming the header in its console. */
#ifndef MCPD_CORE_CORS_H
#define MCPD_CORE_CORS_H

#include <stdbool.h>
#include <stddef.h>

#define CORS_ALLOW_METHODS "GET, POST, DELETE, OPTIONS"
/* The request headers MCP uses (and DPoP's proof, RFC 9449); Accept is CORS-safelisted for
 * the values MCP sends. */
#define CORS_ALLOW_HEADERS                                                                      \
    "Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, "       \
    "Mcp-Method, Mcp-Name, DPoP"
/* What a client must read besides the safelisted response headers: the session, the version,
 * an authorization challenge, when to retry. */
#define CORS_EXPOSE_HEADERS "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, Retry-After"
/* Seconds a browser may keep a preflight's answer (Chromium keeps at most 7200). */
#define CORS_MAX_AGE "600"

/* The longest Mcp-Param-* name echoed, prefix included: the endpoint reads no longer one. */
#define CORS_PARAM_NAME_MAX (10 + 128)

/* A --cors-origin value in the form a browser sends in Origin (RFC 6454 serialization): scheme
 * and host lowercased, the scheme's default port (http 80, https 443) and one trailing slash
 * dropped ("HTTPS://App.Example:443/" -> "https://app.example"); "*" stays "*". 0, or -EINVAL
 * for what is not an origin (a path, a query, user info, "null", no host, a port that is not
 * 1..65535, a byte that is not ASCII) or does not fit in cap bytes with its NUL. */
int cors_origin_norm(const char *in, char *out, size_t cap);

/* The Access-Control-Allow-Origin value answering a request whose Origin is origin (exactly as
 * sent; NULL: none), given the n normalized entries of list: origin itself when listed, "*"
 * when list holds "*", NULL when not allowed. A browser serializes an origin one way, so the
 * match is exact. ("*" suffices: MCP's requests carry no credentials in the CORS sense, their
 * token travels in Authorization, never in a cookie.) */
const char *cors_allow_origin(char *const *list, int n, const char *origin);

/* Whether list holds "*". */
bool cors_any_origin(char *const *list, int n);

/* The Access-Control-Allow-Headers value answering a preflight whose
 * Access-Control-Request-Headers is req (NULL when absent): CORS_ALLOW_HEADERS, then each
 * Mcp-Param-* name req lists, as req spells it (browsers compare names without case), at most
 * CORS_PARAM_NAME_MAX bytes each. A name that is not MCP's or not a token (RFC 9110) is left
 * out, as is one that would not fit. Writes at most cap bytes with the NUL; returns the length
 * (0 and "" when cap cannot hold CORS_ALLOW_HEADERS). */
size_t cors_allow_headers(const char *req, char *out, size_t cap);

#endif
