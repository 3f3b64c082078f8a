/* Bearer-token authentication. Loaded on the main thread; read-only afterwards (any thread).
 *
 * A token file has one `name:token` per line (blank lines and lines starting with '#' are
 * ignored), every name and every token once; it must not be readable or writable by group or
 * others. The name identifies the
 * client in logs and binds its sessions; the token never leaves this module (never logged). */
#ifndef MCPD_CORE_AUTH_H
#define MCPD_CORE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AUTH_TOKEN_MAX 255
#define AUTH_TOKEN_MIN 16
#define AUTH_NAME_MAX 63

typedef struct auth_entry {
    char name[AUTH_NAME_MAX + 1];
    unsigned char token[AUTH_TOKEN_MAX + 1];
    size_t len;
} auth_entry_t;

typedef struct auth {
    auth_entry_t *entries;
    size_t n;
} auth_t;

/* --auth-tokens (the MCP endpoint) and --admin-token (the admin listener); n == 0: open. */
extern auth_t g_auth, g_admin_auth;

/* 0, or -1 with a message in err (the token text is never in it). */
int auth_load(auth_t *a, const char *path, char *err, size_t errlen);
void auth_free(auth_t *a);
/* The token of an Authorization value "Bearer <token>" or "DPoP <token>" (RFC 6750 2.1, RFC
 * 9449 7.1; the scheme in any case, spaces around the token cut): a pointer into h and its
 * length (*len), *dpop telling which scheme; NULL when h is NULL, names another scheme or
 * carries no token. What every caller that reads the header uses,
 * before any token is checked: tests/fuzz/fuzz_auth.c holds it to a reference. */
const char *auth_scheme_token(const char *h, size_t *len, bool *dpop);
/* The name whose token the Authorization header value carries ("Bearer <token>"), or NULL.
 * Every entry is compared in constant time, whichever matches. */
const char *auth_check(const auth_t *a, const char *authorization);
/* The name whose token is these len bytes (the token alone, whatever scheme it came with), or
 * NULL; in constant time as auth_check. */
const char *auth_check_token(const auth_t *a, const char *token, size_t len);
/* Parses the lines of a token file (exposed for unit tests). */
int auth_parse(auth_t *a, const char *text, char *err, size_t errlen);

#endif
