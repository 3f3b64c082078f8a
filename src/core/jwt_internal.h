/* What the JWT files share (jwt.c: the JWS, its keys and its signature; jwt_claims.c: the
 * claims of a verified token, and scopes). Nothing outside these files includes it. Pure; any
 * thread. */
#ifndef MCPD_CORE_JWT_INTERNAL_H
#define MCPD_CORE_JWT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <string.h>

/* v is the JSON string s exactly. */
static inline bool jwt_str_is(const json_t *v, const char *s)
{
    /* lengths first: a JSON string may hold \u0000, and "x\u0000evil" is not "x" */
    return json_is_string(v) && json_string_length(v) == strlen(s) &&
           memcmp(json_string_value(v), s, json_string_length(v)) == 0;
}

/* c is in the base64url alphabet. */
static inline bool jwt_b64u_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

#endif
