/* The OAuth resource server's configuration: which issuer, which resource (the audience every
 * token must carry), which scopes each tool needs, and the Protected Resource Metadata
 * (RFC 9728) built from them. Built on the main thread before the HTTP threads start (the
 * tool scopes from the registry and --auth-tool-scope), read-only afterwards: any thread.
 *
 * A scope list is a string of scopes separated by one space; each scope is RFC 6749 scope
 * characters (%x21 / %x23-5B / %x5D-7E), AUTHZ_SCOPE_MAX at most (longer is refused). */
#ifndef MCPD_CORE_AUTHZ_H
#define MCPD_CORE_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTHZ_SCOPE_MAX 255

typedef struct authz {
    bool on; /* --auth-issuer given */
    char issuer[1024];
    char resource[1024]; /* --auth-resource, or http://<listen address>/mcp */
    char prm_url[1200];  /* where the metadata is (resource_metadata of the challenges) */
    char prm_path[1200]; /* its path on this server */
    char required[256];  /* --auth-required-scope, or "" */
    int64_t leeway;
    int64_t introspection_cache; /* seconds an introspection answer is kept (main sets it) */
    int64_t fetch_timeout;       /* seconds one fetch at the issuer may take (main sets it) */
    char *metadata;              /* the metadata document (JSON text) */
    size_t metadata_len;
} authz_t;

extern authz_t g_authz;

/* Main thread, before authz_configure: tool needs scopes (a space- or comma-separated list);
 * a later call for the same tool replaces the earlier (so --auth-tool-scope, applied after
 * the tools' own declarations, wins). -1 when scopes holds something that is not a scope
 * (a character outside RFC 6749's, or a scope over AUTHZ_SCOPE_MAX characters). */
int authz_set_tool_scopes(const char *tool, const char *scopes);
/* Main thread: fills g_authz (listen_host and port give the default resource). scopes: the
 * --auth-scopes list, or NULL for every scope named by a flag or a tool. 0, or -1 with why. */
int authz_configure(const char *issuer, const char *resource, const char *scopes,
                    const char *required, int64_t leeway, const char *listen_host, int port,
                    char *why, size_t whylen);
void authz_free(void);
/* The scopes a call of tool needs ("" when none). */
const char *authz_tool_scopes(const char *tool);
/* RFC 9728 3.1: the metadata URL of a resource URL: /.well-known/oauth-protected-resource
 * inserted between the authority and the path. 0, or -1 when resource is not an absolute
 * http(s) URL without query or fragment. path_out: the metadata's path alone. */
int authz_prm_url(const char *resource, char *out, size_t n, char *path_out, size_t pn);
/* Appends the scopes of add missing from list (a buffer of n bytes); false when it would
 * not fit (list is left as it was). */
bool authz_scope_union(char *list, size_t n, const char *add);

#endif
