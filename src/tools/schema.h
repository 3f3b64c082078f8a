/* A small JSON Schema validator for tool arguments. Pure, any thread.
 *
 * Supported keywords: type, properties, required, additionalProperties, items, enum, const,
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems,
 * maxItems, anyOf, oneOf, allOf, not, and local $ref ("#/$defs/..", "#/definitions/.."). Other
 * keywords (format, pattern, ...) are accepted and not enforced.
 */
#ifndef MCPD_TOOLS_SCHEMA_H
#define MCPD_TOOLS_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* True when value satisfies schema; otherwise err holds "<path>: <reason>". */
bool schema_validate(const json_t *schema, const json_t *value, char *err, size_t errlen);

#endif
