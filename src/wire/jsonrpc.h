/* JSON-RPC 2.0 message validation and construction. Pure functions, any thread. */
#ifndef MCPD_WIRE_JSONRPC_H
#define MCPD_WIRE_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/methodtable.h"

enum {
    JSONRPC_PARSE_ERROR = -32700,
    JSONRPC_INVALID_REQUEST = -32600,
    JSONRPC_METHOD_NOT_FOUND = -32601,
    JSONRPC_INVALID_PARAMS = -32602,
    JSONRPC_INTERNAL_ERROR = -32603,
    /* implementation-defined server errors */
    MCP_ERR_BAD_REQUEST = -32000,
    MCP_ERR_SESSION_NOT_FOUND = -32001,
    MCP_ERR_RESOURCE_NOT_FOUND = -32002,
    MCP_ERR_OVERLOADED = -32003,
    MCP_ERR_NOT_HERE = -32010, /* the id's shard is served by another node (503, Retry-After) */
    MCP_ERR_REQUEST_CANCELLED = -32800,
    /* 2026-07-28 (protocol-defined) */
    MCP_ERR_HEADER_MISMATCH = -32020,
    MCP_ERR_MISSING_CAPABILITY = -32021,
    MCP_ERR_UNSUPPORTED_VERSION = -32022,
};

/* Bounds on request fields the server copies again and again (README, Limits). A string
 * request id goes into the response, into its stream's record (rewritten by every turn that
 * touches the stream) and into a reqmap key; a string progressToken into every progress
 * notification. Integers are small anyway. */
#define JSONRPC_MAX_ID_BYTES 256
#define MCP_MAX_PROGRESS_TOKEN_BYTES 256

typedef enum {
    JR_INVALID = -1,
    JR_REQUEST = 0,
    JR_NOTIFICATION,
    JR_RESPONSE, /* result or error */
} jr_kind_t;

/* The text of a JSON string as a C string, or NULL when v is not a string or holds U+0000:
 * read as a C string it would end at the NUL and could match a name it is not ("ping\u0000x"
 * is not "ping"). For every client string the server compares with a name of its own. */
const char *jsonrpc_cstr(const json_t *v);
/* True when v is exactly the JSON string s (one holding U+0000 never is). */
bool jsonrpc_str_is(const json_t *v, const char *s);
/* The method table's slot (core/methodtable.h) of a message's method member: SM_other when it
 * is not a string or holds U+0000. */
stats_method_t jsonrpc_method_slot(const json_t *method);
/* The string v for an error message: at most outlen - 1 bytes, cut between UTF-8 characters
 * (the message must stay valid UTF-8), a U+0000 written as \u0000. */
void jsonrpc_quote_name(const json_t *v, char *out, size_t outlen);
/* -32601 "Method not found: <method, quoted>" answering id. */
json_t *jsonrpc_method_not_found(const json_t *id, const json_t *method);

/* Classifies one message; on JR_INVALID, *why says what is wrong (a static string). */
jr_kind_t jsonrpc_classify(const json_t *msg, const char **why);
/* A message's members that its handlers read, found while it is classified (borrowed from the
 * message; NULL when absent, every one NULL for a message that is not an object). */
typedef struct {
    json_t *method, *id, *params;
} jr_view_t;
/* jsonrpc_classify, which also fills *v. */
jr_kind_t jsonrpc_classify_view(const json_t *msg, const char **why, jr_view_t *v);
/* The method, id and params of a message in one walk over its members (no validation). */
void jsonrpc_view(const json_t *msg, jr_view_t *v);
/* A request id is a string of at most JSONRPC_MAX_ID_BYTES bytes or an integer (never null, a
 * bool, a real, an object). An integer literal past the 64-bit range is parsed as a real
 * (core/jsonparse.h), so it is refused as 1.5 is: the answer must echo the id exactly, and a
 * double cannot hold 9223372036854775809. */
bool jsonrpc_id_valid(const json_t *id);
/* An id read from its own text (text[0..len), as a message holds it), when it is a valid one: a
 * new reference, else NULL. For an id located in a message that is not parsed whole. */
json_t *jsonrpc_id_parse(const char *text, size_t len);
/* Marks as JR_INVALID each request of a batch (an array whose items' kinds are kinds[]) whose
 * id an earlier request of the batch has (7 and "7" differ). JSON-RPC asks for unique ids, and
 * the in-flight index keys a request by its stream and id (actor/stream.c): the requests of a
 * batch share a stream, so two with one id would share a key and, after a crash, one would go
 * unanswered. Such an item is then answered like any invalid one (-32600, its id echoed).
 * Linear: ids are hashed by their JSON text. Returns how many it marked. */
size_t jsonrpc_batch_repeats(const json_t *batch, signed char *kinds);
/* Why a batch item that is JR_INVALID is: jsonrpc_classify's reason, or, for a request that
 * is valid alone, that its id repeats (jsonrpc_batch_repeats). A static string. */
const char *jsonrpc_batch_item_why(const json_t *msg);
/* The id the -32600 answer to an invalid batch item echoes: the item's id where a request's can
 * be read (it has "method" and a string or integer id), else NULL (null). A message without
 * "method" is a response, whose id is one of the server's own requests. Borrowed from msg. */
const json_t *jsonrpc_batch_item_id(const json_t *msg);
/* The id an error about msg echoes: msg's id when msg is one valid request, else NULL (a
 * notification, a response, a batch, an invalid message). Borrowed from msg. */
const json_t *jsonrpc_request_id(const json_t *msg);

/* {"jsonrpc":"2.0","id":id,"result":result}; result stolen, id borrowed. */
json_t *jsonrpc_result(const json_t *id, json_t *result);
/* Appends {"jsonrpc":"2.0","id":ID,"result":RESULT} to out as JSON text (id NULL: null; result
 * NULL: {}). extra, when given and the result is an object, is members' text (no leading comma)
 * added at the end of the result object. */
struct buf;
void jsonrpc_result_into(struct buf *out, const json_t *id, const json_t *result, const char *extra,
                         size_t extra_len);
/* The length of the JSON object or array at the start of text (up to n bytes): where the
 * bracket that closes its first one is, strings skipped; n when it does not close. */
size_t jsonrpc_text_len(const char *text, size_t n);
/* {"jsonrpc":"2.0","id":id|null,"error":{code,message[,data]}}; data stolen, id borrowed. */
json_t *jsonrpc_error(const json_t *id, int code, const char *message, json_t *data);
/* {"jsonrpc":"2.0","method":method[,"params":params]}; params stolen (may be NULL). */
json_t *jsonrpc_notification(const char *method, json_t *params);
/* Compact one-line serialization (caller frees). */
char *jsonrpc_dump(const json_t *msg, size_t *len);

#endif
