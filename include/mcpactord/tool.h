/* mcpactord public tool API.
 *
 * Threads: registration functions run once, on the main thread, before the server starts
 * (from a built-in toolset or from a plugin's mcpd_plugin_init). Handlers run on a tool-pool
 * thread (or, for MCPD_TOOL_NONBLOCKING tools, on the session's actor worker) and may call
 * every mcpd_ctx_* function from that thread only.
 *
 * Ownership: arguments handed to a handler are borrowed for the duration of the call, to read
 * (not to change: a 2026-07-28 request that asks for input is bound to its arguments as they
 * are when the handler asks, and its retry must match them). A
 * handler returns a new reference (the result object) that the server takes. Functions whose
 * parameter is documented "stolen" take the caller's reference in every case, success or not.
 * A stolen value crosses to another thread: the handler must keep no reference to it or to
 * any part of it (build a fresh object, or json_deep_copy what you also keep).
 *
 * Strings: a JSON string may hold U+0000 ("a\u0000b"). String arguments reach a handler whole:
 * read them with json_string_value and json_string_length, and answer with mcpd_text_resultn
 * to keep them whole (json_string_value alone, and every const char * of this API, ends at the
 * first NUL). An embedded NUL never makes a name match: a method, tool or prompt name,
 * resource URI, log level or completion reference holding U+0000 is unknown (-32601, -32602,
 * -32002); a completion argument holding it is refused with -32602, since mcpd_complete_fn
 * receives C strings.
 */
#ifndef MCPACTORD_TOOL_H
#define MCPACTORD_TOOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MCPD_API_VERSION 1

typedef struct mcpd_registry mcpd_registry_t;
typedef struct mcpd_ctx mcpd_ctx_t;

/* JSON-RPC error codes a handler may report through mcpd_ctx_set_error. */
enum {
    MCPD_ERR_INVALID_PARAMS = -32602,
    MCPD_ERR_INTERNAL = -32603,
    /* a 2026-07-28 client gets -32602 with data.uri instead (SEP-2164: that revision never
     * emits -32002) */
    MCPD_ERR_RESOURCE_NOT_FOUND = -32002,
    /* the state it needs (a handle) lives in a shard that is moving to another node: the
     * request is answered 503 + Retry-After and the client's retry reaches the new owner */
    MCPD_ERR_MOVED = -32010,
    /* a server limit was reached (--max-handles, or the caller's share of it): the call may
     * succeed later; mcpd_ctx_handle_new returns -EDQUOT with the reason in
     * mcpd_ctx_last_error() */
    MCPD_ERR_OVERLOADED = -32003,
};

/* ---- results ------------------------------------------------------------------------ */

/* {"content":[{"type":"text","text":TEXT}]} */
json_t *mcpd_text_result(const char *text);
/* The same for the len bytes at text (UTF-8, which may hold U+0000). */
json_t *mcpd_text_resultn(const char *text, size_t len);
/* printf-style variant of mcpd_text_result. */
json_t *mcpd_text_resultf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"content":[{"type":"text","text":...}],"isError":true}: a tool-level failure the model sees. */
json_t *mcpd_error_result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* {"type":"text","text":TEXT}, for building content arrays by hand. */
json_t *mcpd_text_content(const char *text);
/* The same for the len bytes at text (UTF-8, which may hold U+0000). */
json_t *mcpd_text_contentn(const char *text, size_t len);

/* ---- tools -------------------------------------------------------------------------- */

/* The deepest a JSON value a plugin hands the server may nest (an object or array is a level,
 * the value itself the first). A handler's result, log data (mcpd_ctx_log) and a notification's
 * or request's params (mcpd_ctx_notify, mcpd_ctx_request, elicit, sample) are sent, and stored
 * as the text sent, at most MCPD_RESULT_MAX_DEPTH deep: a deeper result, from any handler
 * (tool, resource, prompt, completion), is the handler's error, answered -32603 saying so
 * (logged); a deeper data or params is refused by its call (-EINVAL, or NULL with
 * mcpd_ctx_last_error() set) and nothing is sent. A state value is stored to be read again, and
 * the server's reader stops at 2048 levels counting every value, a scalar too: a state value
 * nested deeper than MCPD_STATE_MAX_DEPTH objects and arrays (put, or returned by an update's
 * fn) is refused (-EIO / NULL) and the old value stays. A refused value is freed without
 * recursion (jansson's json_decref recurses once a level). */
#define MCPD_RESULT_MAX_DEPTH 50000
#define MCPD_STATE_MAX_DEPTH 2047

/* Returns a CallToolResult object (new reference), or NULL after mcpd_ctx_set_error. A result
 * that is not an object with a "content" array (as a resource read's needs "contents" and a
 * prompt's "messages") is the handler's error: the call is answered -32603 saying so (logged).
 * args satisfy the tool's input_schema. Where the schema says "integer", a whole number sent as
 * a real (2.0, which JSON Schema counts as an integer) arrives as a JSON integer, so
 * json_integer_value reads 2. A whole number past the 64-bit range (1e19, or the literal
 * 10000000000000000000, which is read as a real, the nearest double) is refused there before
 * the handler runs, as the call's tool error; where the schema says "number", it arrives as a
 * real. (A literal from -9223372036854775809 to -9223372036854776832 is read as -2^63, which
 * is in the range: it arrives as -9223372036854775808.) */
typedef json_t *(*mcpd_tool_fn)(mcpd_ctx_t *ctx, json_t *args, void *userdata);

enum {
    /* The handler never blocks and finishes in microseconds: the server may run it inline on
     * the session's worker instead of the tool pool. Inline handlers cannot elicit or sample. */
    MCPD_TOOL_NONBLOCKING = 1u << 0,
    /* 2026-07-28 input requests: a retry's requestState is accepted at most once (a second
     * retry with the same state is refused as a replay, even if the first did not finish).
     * Without it a state stays good until its call completes or it expires. */
    MCPD_TOOL_INPUT_ONCE = 1u << 1,
    /* The tasks extension (SEP-2663, protocol version 2026-07-28): the tool may run as a task.
     * A call whose request declares the extension (io.modelcontextprotocol/tasks in its
     * clientCapabilities.extensions) is answered at once with a CreateTaskResult; the handler
     * runs as usual and the client polls tasks/get for its result. Without the declaration, and
     * in a session, the call runs synchronously. The handler is the same either way: its input
     * requests (elicit, sample, request) become the task's inputRequests, answered through
     * tasks/update, and it runs again with the answers (as for a 2026-07-28 retry). Progress and
     * log messages are dropped for a task. Not with MCPD_TOOL_NONBLOCKING (-EINVAL). */
    MCPD_TOOL_TASK = 1u << 2,
    /* Implies MCPD_TOOL_TASK: the tool runs only as a task; a 2026-07-28 call without the
     * declaration is refused with -32021 before the handler runs, and a session's call runs
     * synchronously (the extension does not exist there). */
    MCPD_TOOL_TASK_REQUIRED = 1u << 3,
    /* With MCPD_TOOL_TASK(_REQUIRED): input first. The handler's input requests of a call are
     * asked synchronously (input_required + requestState, as without a task); the retry that
     * answers every request of the last round becomes the task, whose run sees those answers. */
    MCPD_TOOL_TASK_AFTER_INPUT = 1u << 4,
};

typedef struct mcpd_tool_def {
    const char *name;          /* required, unique */
    const char *title;         /* optional */
    const char *description;   /* optional */
    const char *input_schema;  /* JSON text of an object schema; NULL means {"type":"object"} */
    const char *output_schema; /* optional JSON text */
    const char *annotations;   /* optional JSON text */
    mcpd_tool_fn handler;      /* required */
    void *userdata;
    unsigned flags; /* MCPD_TOOL_* */
    /* optional: the OAuth scopes a call of this tool needs, separated by spaces (or commas),
     * e.g. "files:read files:write". With --auth-issuer, a tools/call whose token lacks one
     * of them is answered 403 insufficient_scope naming them (the tool is still listed);
     * --auth-tool-scope TOOL=... replaces them. Static --auth-tokens tokens are not checked.
     * NULL: no scope beyond --auth-required-scope. (A member added at the end: a plugin
     * built against an older header must be rebuilt.) */
    const char *scopes;
} mcpd_tool_def_t;

/* 0, or -EINVAL (bad definition, unparsable schema), -EEXIST (name taken). */
int mcpd_register_tool(mcpd_registry_t *reg, const mcpd_tool_def_t *def);

/* ---- resources ---------------------------------------------------------------------- */

/* Returns a ReadResourceResult ({"contents":[...]}) or NULL after mcpd_ctx_set_error.
 * vars is NULL for a fixed resource, or the template's variables as a JSON object. */
typedef json_t *(*mcpd_resource_fn)(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *userdata);

typedef struct mcpd_resource_def {
    const char *uri;          /* a fixed URI, or NULL when uri_template is set */
    const char *uri_template; /* RFC 6570 level-1 template such as "test://item/{id}" */
    const char *name;         /* required */
    const char *title;
    const char *description;
    const char *mime_type;
    bool subscribable;     /* resources/subscribe accepted for it */
    mcpd_resource_fn read; /* required */
    void *userdata;
} mcpd_resource_def_t;

int mcpd_register_resource(mcpd_registry_t *reg, const mcpd_resource_def_t *def);

/* ---- prompts ------------------------------------------------------------------------ */

/* Returns a GetPromptResult ({"messages":[...]}) or NULL after mcpd_ctx_set_error. args is an
 * object of strings holding every argument the definition marks required. */
typedef json_t *(*mcpd_prompt_fn)(mcpd_ctx_t *ctx, json_t *args, void *userdata);

typedef struct mcpd_prompt_def {
    const char *name; /* required */
    const char *title;
    const char *description;
    const char *arguments; /* JSON text of the PromptArgument array, or NULL */
    mcpd_prompt_fn get;    /* required */
    void *userdata;
} mcpd_prompt_def_t;

int mcpd_register_prompt(mcpd_registry_t *reg, const mcpd_prompt_def_t *def);

/* ---- completion --------------------------------------------------------------------- */

/* ref: {"type":"ref/prompt","name":..} or {"type":"ref/resource","uri":..};
 * returns a JSON array of candidate strings (new reference), or NULL when nothing applies. */
typedef json_t *(*mcpd_complete_fn)(mcpd_ctx_t *ctx, json_t *ref, const char *arg_name,
                                    const char *arg_value, json_t *context_args, void *userdata);

/* One completion provider per registry; setting it announces the `completions` capability. */
int mcpd_set_completion(mcpd_registry_t *reg, mcpd_complete_fn fn, void *userdata);

/* ---- the handler context ------------------------------------------------------------ */

typedef enum {
    MCPD_TARGET_REQUEST = 0, /* tied to the call: goes on the call's stream */
    MCPD_TARGET_SESSION = 1, /* session-level: standalone stream, or stored for it */
} mcpd_target_t;

/* The call's arguments are the handler's `args`. These identify where it runs. */
const char *mcpd_ctx_session_id(const mcpd_ctx_t *ctx);
const char *mcpd_ctx_protocol_version(const mcpd_ctx_t *ctx);
/* Set when the client cancelled the call (notifications/cancelled) or the session ended. */
bool mcpd_ctx_cancelled(const mcpd_ctx_t *ctx);

/* Sleeps up to ms milliseconds; returns early with false when the call is cancelled. */
bool mcpd_ctx_sleep_ms(mcpd_ctx_t *ctx, long ms);

/* True when the call carried a progressToken; mcpd_ctx_progress is a no-op otherwise.
 * total < 0 (or not finite) means "unknown"; message may be NULL. Progress must increase and be
 * finite (else -EINVAL).
 * Texts given to these calls (a progress message, a log text or logger, an elicitation's
 * message) are sent whatever their bytes: a byte that starts no valid UTF-8 sequence becomes
 * U+FFFD. */
bool mcpd_ctx_has_progress(const mcpd_ctx_t *ctx);
int mcpd_ctx_progress(mcpd_ctx_t *ctx, double progress, double total, const char *message);

/* notifications/message at `level` (debug .. emergency); dropped below the session's
 * logging/setLevel threshold. data is stolen. 0, or -EINVAL for an unknown level or data
 * nested deeper than MCPD_RESULT_MAX_DEPTH (nothing is sent). */
int mcpd_ctx_log(mcpd_ctx_t *ctx, const char *level, const char *logger, json_t *data);
int mcpd_ctx_logf(mcpd_ctx_t *ctx, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Any server notification; params stolen (may be NULL). -EINVAL for a method that is empty or
 * not UTF-8, or params that are neither an object nor an array or nest deeper than
 * MCPD_RESULT_MAX_DEPTH (nothing is sent). */
int mcpd_ctx_notify(mcpd_ctx_t *ctx, mcpd_target_t target, const char *method, json_t *params);

/* A server->client request (elicitation/create, sampling/createMessage, roots/list...). Blocks
 * the handler until the client answers or timeout_ms passes (<= 0: the server default).
 * Returns the client's result (new reference), or NULL with mcpd_ctx_last_error() set: the
 * method is empty or not UTF-8, params are neither an object nor an array or nest deeper than
 * MCPD_RESULT_MAX_DEPTH (an elicitation's schema is one level down in them), the client lacks
 * the capability, no stream can carry it, the client answered with an error or with a result
 * that is not its method's (an elicitation's action not accept, decline or cancel, a sampling
 * answer without role and content, roots not an array), the call was cancelled, or the wait
 * timed out. params stolen. */
json_t *mcpd_ctx_request(mcpd_ctx_t *ctx, mcpd_target_t target, const char *method, json_t *params,
                         int timeout_ms);
/* elicitation/create with a message and a requestedSchema (stolen). */
json_t *mcpd_ctx_elicit(mcpd_ctx_t *ctx, const char *message, json_t *requested_schema,
                        int timeout_ms);
/* sampling/createMessage with the given params (stolen). */
json_t *mcpd_ctx_sample(mcpd_ctx_t *ctx, json_t *params, int timeout_ms);

/* Requests to the client in the two eras. In a session (2025 versions) the calls above send
 * the request on the call's stream and wait for the answer. In protocol version 2026-07-28
 * there is no session and the server never sends requests: a call that needs the client's
 * input ends with an input_required result listing what it asks, and the client retries the
 * call with the answers. The handler is then run again from the start, and each request it
 * makes returns the client's answer at once (matched by its key), until it completes. So a
 * handler that asks should be deterministic up to its requests, and do its side effects after
 * them. When an answer is missing, the request returns NULL with mcpd_ctx_input_pending() true:
 * return promptly (what is returned is replaced by the input_required result); requests made
 * after it are asked in the same round. */
/* Names the next request's key in inputRequests (1..64 bytes of [A-Za-z0-9_.-]); without it
 * the keys are input_1, input_2... in the order of the requests. Ignored in a session. */
int mcpd_ctx_input_key(mcpd_ctx_t *ctx, const char *key);
/* True once a request of this run was left unanswered (2026-07-28: the call will end with an
 * input_required result). */
bool mcpd_ctx_input_pending(const mcpd_ctx_t *ctx);
/* True when the client declared the capability ("elicitation", "sampling", "roots") for this
 * call, as an object (null declares nothing): its session's initialize, or the request's own
 * _meta in 2026-07-28. A request that needs one the client lacks fails (2026-07-28: the whole
 * call answers -32021). */
bool mcpd_ctx_client_supports(const mcpd_ctx_t *ctx, const char *capability);

/* Ends the HTTP connection that carries the call's response stream, without ending the call
 * (SEP-1699 polling). The stream is switched to SSE first, so the client holds an event id and the
 * retry hint; the call goes on, everything it sends is stored, and the client resumes with
 * GET + Last-Event-ID. Returns 0, or -ENOTSUP with mcpd_ctx_last_error() set when the client
 * could not resume: the event store is off, the session's protocol version has no priming events
 * (before 2025-11-25), --response-mode json, or the tool runs inline. */
int mcpd_ctx_close_stream(mcpd_ctx_t *ctx);

/* Durable per-session state, stored in the session's key range: survives hibernation and
 * restarts, deleted with the session. Keys are 1..200 bytes. A value must read back as it was
 * stored: one that nests deeper than MCPD_STATE_MAX_DEPTH (2047) levels, holds a string that is
 * not UTF-8 (made with jansson's _nocheck calls) or a key with a NUL in it (json_object_setn),
 * is refused (-EIO / NULL) and the old value stays. */
json_t *mcpd_ctx_state_get(mcpd_ctx_t *ctx, const char *key);            /* new ref or NULL */
int mcpd_ctx_state_put(mcpd_ctx_t *ctx, const char *key, json_t *value); /* stolen; NULL deletes */
/* Atomic read-modify-write: fn runs on the session's actor with the current value (NULL when
 * absent) and returns the new value (new reference; NULL deletes). Returns the new value
 * (new reference) to the caller. fn must be quick and must not call back into the ctx. */
typedef json_t *(*mcpd_state_update_fn)(json_t *current, void *arg);
json_t *mcpd_ctx_state_update(mcpd_ctx_t *ctx, const char *key, mcpd_state_update_fn fn, void *arg);

/* State handles: durable state that no session owns, for 2026-07-28 clients (which have no
 * session) and for anything shared across sessions. A handle is minted by the server, given to
 * the client (a tool result), and passed back as a tool argument; mark that argument
 * "x-mcp-header" in the input schema so a load balancer can route by it. Behind it is a durable
 * actor like a session: pinned to a worker, hibernating, deleted after --handle-ttl seconds
 * untouched or on request. Only the principal (auth token) that made it may use it. The calls
 * block until the worker that owns the handle has stored the change; they fail in a
 * MCPD_TOOL_NONBLOCKING tool. */
#define MCPD_HANDLE_LEN 32
/* Mints a handle: out (MCPD_HANDLE_LEN + 1 bytes) gets its id. 0, or a negative errno:
 * -EDQUOT when --max-handles is reached or the caller (its token, or its address without
 * tokens) holds its share of it (--principal-share): a tool should answer that with a tool
 * error (isError) carrying mcpd_ctx_last_error(), which a model can act on. */
int mcpd_ctx_handle_new(mcpd_ctx_t *ctx, char *out);
/* As mcpd_ctx_state_get/put/update, on the handle's state. An unknown (expired, deleted,
 * another principal's) handle fails with mcpd_ctx_last_error() saying so, as does a malformed
 * one; so does session state (mcpd_ctx_state_*) in a 2026-07-28 request, which has no session.
 * A tool handler that returns NULL after such a failure is answered with a tool result with
 * isError and that message, since the model can fix its arguments (other handlers: -32602,
 * or -32603 for the missing session). */
json_t *mcpd_ctx_handle_state_get(mcpd_ctx_t *ctx, const char *handle, const char *key);
int mcpd_ctx_handle_state_put(mcpd_ctx_t *ctx, const char *handle, const char *key, json_t *value);
json_t *mcpd_ctx_handle_state_update(mcpd_ctx_t *ctx, const char *handle, const char *key,
                                     mcpd_state_update_fn fn, void *arg);
/* Deletes the handle and its state. 0, -ENOENT when unknown, or another negative errno. */
int mcpd_ctx_handle_delete(mcpd_ctx_t *ctx, const char *handle);

/* Change notifications, for every client listening (any thread of a handler). */
/* The resource at uri changed: notifications/resources/updated goes to each session in memory
 * that subscribed to it (resources/subscribe; a hibernated session is not woken for it) and to
 * each 2026-07-28 subscriptions/listen stream whose resourceSubscriptions name it. 0, or
 * -EINVAL for a uri that is NULL, empty or not UTF-8 (nothing is sent). */
int mcpd_ctx_resource_updated(mcpd_ctx_t *ctx, const char *uri);
/* A list changed (what: "tools", "prompts" or "resources"): notifications/<what>/list_changed
 * goes to each subscriptions/listen stream that asked for it. 0 or -EINVAL. */
int mcpd_ctx_list_changed(mcpd_ctx_t *ctx, const char *what);

/* Error reporting: a handler that returns NULL reports this code and message to the client. */
void mcpd_ctx_set_error(mcpd_ctx_t *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *mcpd_ctx_last_error(const mcpd_ctx_t *ctx);

/* ---- plugins ------------------------------------------------------------------------ */

/* A plugin (--plugin PATH.so) exports this symbol; it registers its tools and returns 0.
 * api_version is MCPD_API_VERSION of the server; refuse to load on a mismatch. */
int mcpd_plugin_init(mcpd_registry_t *reg, int api_version);

#ifdef __cplusplus
}
#endif

#endif
