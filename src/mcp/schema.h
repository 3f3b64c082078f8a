/* A small JSON Schema validator for tool arguments. Pure, any thread.
 *
 * Supported keywords: type, properties, required, additionalProperties, items, enum, const,
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems,
 * maxItems, anyOf, oneOf, allOf, not, and local $ref ("#/$defs/..", "#/definitions/.."). Other
 * keywords (format, pattern, ...) are accepted and not enforced.
 */
#ifndef MCPD_MCP_SCHEMA_H
#define MCPD_MCP_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* True when value satisfies schema; otherwise err holds "<path>: <reason>".
 * Numbers compare by value: "integer" admits 2.0 within the 64-bit range; a whole real past it
 * (1e19, or the literal 10000000000000000000, which the request parser reads as a real) fails
 * with "is outside the 64-bit integer range". enum [2] and const 2 admit 2.0. */
bool schema_validate(const json_t *schema, const json_t *value, char *err, size_t errlen);

/* schema_validate for a tool's arguments, which it then normalizes: every integral real that a
 * "type" naming integer accepted (in a subschema that held) is replaced in value by the equal
 * JSON integer, so a handler reading json_integer_value sees 2 for 2.0. Other numbers are left
 * as they came. value is a container (an object or an array). */
bool schema_validate_args(const json_t *schema, json_t *value, char *err, size_t errlen);

#endif
