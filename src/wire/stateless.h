/* MCP 2026-07-28 (the stateless revision) on the wire: which requests take the stateless path,
 * the request metadata (_meta) and the HTTP headers that mirror the body (SEP-2243), which
 * methods the revision has, and the HTTP status of its errors. Pure functions, any thread.
 * Which methods exist in the revision, which it removed and what Mcp-Name mirrors are columns
 * of the method table (core/methodtable.h); this file applies them.
 *
 * The era is decided per request (basic/versioning, "Dual-era"): a request without
 * Mcp-Session-Id that is not initialize and carries the _meta protocol-version claim, or a
 * 2026+ MCP-Protocol-Version header, is served statelessly; everything else takes the session
 * path. */
#ifndef MCPD_WIRE_STATELESS_H
#define MCPD_WIRE_STATELESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "wire/jsonrpc.h"

#define MODERN_VERSION "2026-07-28"

#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"
/* The tasks extension (SEP-2663): its id in capabilities.extensions, both sides. */
#define TASKS_EXTENSION "io.modelcontextprotocol/tasks"

/* Longest decoded Mcp-Name / Mcp-Param-* value the server compares (bytes). */
#define MODERN_HEADER_VALUE_MAX 4096

/* The capabilities of a request's _meta clientCapabilities as declared (a new reference; NULL
 * when caps is not an object): the schema types each capability, and each entry of its
 * extensions and experimental maps, as an object, so a member that holds anything else (null,
 * true, a string) declares nothing and is left out. caps itself when nothing is left out. */
json_t *stateless_declared_caps(json_t *caps);

/* True when body (a message of any shape, or a batch) claims the modern era: its params._meta
 * (a batch: one of its messages') holds the protocol-version key, or version_hdr (NULL when
 * absent) is a 2026 or later version. */
bool stateless_claims(const json_t *body, const char *version_hdr);

/* Every version this server speaks, newest first, modern included (a new array). */
json_t *stateless_supported_versions(void);

/* Checks params._meta of a modern request. Returns 0 when it is usable; else the JSON-RPC
 * code (-32602 for a missing or malformed field, -32022 for a version the server does not
 * speak), with msg filled and *data set (new reference) for -32022. */
int stateless_check_meta(const json_t *params, char *msg, size_t msglen, json_t **data);

/* Decodes a Mcp-Name or Mcp-Param-* header value: plain visible ASCII (spaces and tabs
 * inside, not at the ends), or the sentinel =?base64?...?= of the UTF-8 bytes. 0 with the
 * value (NUL-terminated, *outlen bytes) in out; -1 when it holds a character a header may not
 * carry, is malformed base64, or does not fit outsize - 1 bytes. */
int stateless_header_decode(const char *v, char *out, size_t outsize, size_t *outlen);

/* The checks of the mirrored headers (SEP-2243) against the message (v: its method and params,
 * from jsonrpc_classify_view or jsonrpc_view): MCP-Protocol-Version
 * present and equal to the _meta claim, Mcp-Method equal to method, Mcp-Name equal to the
 * params member the method table names as the method's target (params.name for tools/call
 * and prompts/get, params.uri for resources/read, params.taskId for the tasks methods:
 * SEP-2663's routing header). Mcp-Name is required for such a method whatever the body
 * holds, except when the target is there but not a string: that is invalid params, which the
 * method answers (-32602), so no header is compared with it; a target that is absent is the
 * method's -32602 too once the header is there and well formed. NULL when they hold; else the
 * HeaderMismatch message in msg. */
const char *stateless_check_headers(const jr_view_t *v, const char *version_hdr,
                                    const char *method_hdr, const char *name_hdr, char *msg,
                                    size_t msglen);

typedef enum {
    MM_UNKNOWN = 0, /* not a method of the revision: 404 + -32601 */
    MM_REMOVED,     /* a session-era method the revision removed: 404 + -32601 */
    MM_KNOWN,
} stateless_method_t;

/* What the method table says of method (NULL: unknown) in 2026-07-28: KNOWN for a row whose
 * eras hold MODERN, REMOVED for a row removed in this version or before. */
stateless_method_t stateless_method_kind(const char *method);

/* The HTTP status a modern JSON error answer takes (streamable-http, "Server Validation",
 * "Request Metadata"): 404 for -32601, 400 for the protocol errors and malformed requests,
 * 200 for the rest (a tool's or a handler's error is an answer, not a transport failure). */
int stateless_http_status(int code);

/* The code a handler's error (mcpd_ctx_set_error) goes out with in this revision
 * (basic/index.mdx, "Error Codes"): it MUST NOT emit -32002 (resource not found: -32602 since
 * SEP-2164) nor -32042 (URL elicitation, 2025-11-25 only), nor a code of -32020..-32099 the
 * specification does not define (those it defines, -32020..-32022, mean what they say):
 * -32002 -> -32602, the others -> -32603; any other code as it is. */
int stateless_error_code(int code);

/* The client capability an input request's method needs ("elicitation" for
 * elicitation/create, "sampling" for sampling/createMessage, "roots" for roots/list); NULL: the
 * method is not an input request. */
const char *stateless_input_capability(const char *method);

/* What a 2026-07-28 result carries, added to result (an object) where it is not there yet:
 * resultType "complete", _meta with server_info (borrowed) under META_SERVER_INFO (none when
 * NULL), and for a method the method table marks METHOD_CACHE_HINTS ttlMs and cacheScope
 * (ttl_ms; private_scope: "private", else "public"). caching.mdx: only a complete result
 * carries the hints (an input_required one is interim, not cacheable); and one that answers a
 * retry (retry: the request carried inputResponses or requestState) depends on answers
 * outside the cache key, so it MUST NOT be cached: ttlMs 0 and "private", whatever the
 * flags say. */
void stateless_decorate(json_t *result, const json_t *server_info, stats_method_t m,
                        long long ttl_ms, bool private_scope, bool retry);

/* What is wrong with a client's answer to an input request of `method`, or NULL: an
 * elicitation answer is an ElicitResult (an action), a sampling answer a CreateMessageResult
 * (role and content), a roots answer a ListRootsResult (a roots array). */
const char *stateless_answer_problem(const char *method, const json_t *ans);

#endif
