/* A JSON parser that builds jansson values straight from a buffer. Pure, any thread. */
#ifndef MCPD_CORE_JSONPARSE_H
#define MCPD_CORE_JSONPARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Parses one JSON value (any type) filling the whole buffer. Returns a new reference, or
 * NULL with a message in err and the byte offset of the problem in *err_pos (both optional).
 * Accepts and refuses what json_loadb(JSON_DECODE_ANY | JSON_ALLOW_NUL) does, with one
 * difference: jansson accepts a raw NUL byte right after a number ("[1\0]"), which is not
 * JSON; this parser refuses it (tests/fuzz/fuzz_json.c checks the rest, input by input). */
json_t *json_parse_buf(const char *buf, size_t len, char *err, size_t errlen, size_t *err_pos);

#endif
