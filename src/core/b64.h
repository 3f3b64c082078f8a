/* Base64 (RFC 4648): the standard alphabet with padding (the Mcp-Name / Mcp-Param-* sentinel
 * form of 2026-07-28) and the URL-safe alphabet without padding (tokens the server mints).
 * Pure functions, any thread. */
#ifndef MCPD_CORE_B64_H
#define MCPD_CORE_B64_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes the encoding of n bytes takes, NUL included. */
#define B64_ENCODED_SIZE(n) (((n) + 2) / 3 * 4 + 1)

/* Encodes n bytes into out (B64_ENCODED_SIZE(n) bytes); returns the length written. url: the
 * URL-safe alphabet without padding. */
size_t b64_encode(const void *in, size_t n, char *out, bool url);
/* Decodes len characters into out (at least len / 4 * 3 + 3 bytes). Standard: padding required
 * to a multiple of 4; url: no padding, '-' and '_'. -1 on any other character or a bad
 * length, else the number of bytes written. */
long b64_decode(const char *in, size_t len, unsigned char *out, bool url);

#endif
