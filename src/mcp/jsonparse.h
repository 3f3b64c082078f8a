/* A JSON parser that builds jansson values straight from a buffer. Pure, any thread. */
#ifndef MCPD_MCP_JSONPARSE_H
#define MCPD_MCP_JSONPARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Parses one JSON value (any type) filling the whole buffer. Returns a new reference, or
 * NULL with a message in err and the byte offset of the problem in *err_pos (both optional).
 * Accepts and refuses exactly what json_loadb(JSON_DECODE_ANY | JSON_ALLOW_NUL) does. */
json_t *json_parse_buf(const char *buf, size_t len, char *err, size_t errlen, size_t *err_pos);

#endif
