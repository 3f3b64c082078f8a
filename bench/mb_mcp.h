/* mcpbench MCP client pieces (sessions, JSON-RPC over Streamable HTTP, handshake). Main thread only.
 *
 * Also reads a server's RSS (stats URL or /proc).
 *
 * A POST's answer is either application/json (one message) or text/event-stream: then the
 * request's response is the event whose JSON-RPC id matches, and the request ends when the
 * chunked body ends. mb_rpc_t hides the difference: its done callback gets the status, whether a
 * response with the id arrived, whether it was an error, whether it contained the check text,
 * and what else came on the stream (notifications, the first event id).
 */
#ifndef MCPBENCH_MB_MCP_H
#define MCPBENCH_MB_MCP_H

#include "mb_engine.h"
#include "mb_http.h"

#include <jansson.h>

typedef struct mb_sess mb_sess_t;
struct mb_sess {
    char sid[MB_SID_MAX]; /* empty: the server has no sessions */
    char pv[40];
    char hdr[MB_SID_MAX + 96]; /* Mcp-Session-Id and MCP-Protocol-Version header lines */
    size_t hdr_len;
    int64_t next_id; /* JSON-RPC ids are unique per session */
    /* for the scenarios */
    int idx;
    bool ready, dead;
    void *pending;
    mb_conn_t *get;
    mb_sess_t *qnext;
};

void mb_sess_init(mb_sess_t *s, const char *pv);
void mb_sess_set(mb_sess_t *s, const char *sid, const char *pv);
/* The stateless 2026-07-28 era: no session; the header lines are MCP-Protocol-Version pv,
 * Mcp-Method method and (name non-NULL, e.g. a tools/call's tool) Mcp-Name name. */
void mb_sess_set_modern(mb_sess_t *s, const char *pv, const char *method, const char *name);

/* Request bodies; each returns a malloc'd string and its length. */
char *mb_body_initialize(int64_t id, const char *pv, size_t *len);
char *mb_body_call(int64_t id, const char *tool, const char *args_json, size_t *len);
/* tools/call in the stateless 2026-07-28 era: params._meta carries the protocol version pv, the
 * client info and (empty) client capabilities. */
char *mb_body_call_modern(int64_t id, const char *tool, const char *args_json, const char *pv,
                          size_t *len);
char *mb_body_ping(int64_t id, size_t *len);
extern const char mb_body_initialized[];

typedef enum {
    MB_MSG_BAD,
    MB_MSG_RESPONSE,
    MB_MSG_ERROR,
    MB_MSG_NOTIFICATION,
    MB_MSG_REQUEST
} mb_msg_t;
/* Classifies one JSON-RPC message; *id gets a response's integer id (-1 otherwise). With keep,
 * the parsed message is handed over (the caller decrefs), else freed. */
mb_msg_t mb_msg_classify(const char *data, size_t len, int64_t *id, json_t **keep);

typedef struct mb_rpc mb_rpc_t;
struct mb_rpc {
    mb_req_t req;
    int64_t id;        /* the request's JSON-RPC id (0: a notification) */
    const char *check; /* a string the response must contain (optional) */
    size_t check_len;
    bool want_response;    /* keep the parsed response in `response` */
    bool stop_on_response; /* end the request when the response arrived (do not wait for EOF) */
    /* results */
    int status;
    mb_ctype_t ctype;
    char sid[MB_SID_MAX];
    bool got_response, is_error, check_ok;
    bool tool_error; /* the response is a result with "isError":true (a failed tools/call) */
    json_t *response;
    char first_id[256];
    bool has_first_id;
    int64_t notes; /* notifications that came on this stream */
    void (*done)(mb_rpc_t *r, mb_err_t err);
    void *ud;
};

/* Sends a POST with body on c, with s's session headers (s may be NULL). Clears the results. */
void mb_rpc_post(mb_rpc_t *r, mb_conn_t *c, const mb_sess_t *s, const char *body, size_t len);
/* The verdict for a request that expects a 200 with a successful JSON-RPC response: not a JSON-RPC
 * error (MB_E_PROTO), not a tool result with isError true, and holding the check text (MB_E_BODY). */
mb_err_t mb_rpc_verdict(const mb_rpc_t *r);
void mb_rpc_clear(mb_rpc_t *r);

/* The handshake operation: initialize, notifications/initialized and (with do_delete) DELETE.
 * With sess NULL it uses a session of its own. */
mb_op_t *mb_hs_op_new(mb_sess_t *sess, bool do_delete, const char *pv);
/* Requests per handshake of the last completed handshake (for the report). */
extern int mb_hs_requests;

/* A session-setup phase: initializes (no DELETE) each of n sessions with `slots` connections.
 * With conns (`slots` of them, kept by the caller), session i is initialized on conns[i % slots].
 * Returns the number that failed. */
long mb_setup_sessions(mb_target_t *t, mb_sess_t *sess, long n, int slots, mb_conn_t **conns,
                       int64_t timeout_us, const char *pv, const char *label, bool progress,
                       mb_stats_t *stats_out);

/* GETs url and parses its JSON body (blocking in the loop, bounded by timeout). NULL on failure
 * with a message in err. */
json_t *mb_get_json(struct event_base *base, const char *url, bool allow_remote, int64_t timeout_us,
                    char *err, size_t errlen);
/* The server's RSS in bytes: from /proc/PID/status when pid > 0, else from the stats URL's JSON
 * (`rss_bytes`, mcpactord's /stats; or `rss`, Node's process.memoryUsage()). -1 when unknown.
 * With stats_out, the parsed JSON is handed over (caller decrefs). */
int64_t mb_read_rss(struct event_base *base, const char *stats_url, int pid, bool allow_remote,
                    json_t **stats_out);
/* A top-level integer field of a stats JSON, or -1. */
int64_t mb_json_int(const json_t *o, const char *key);

#endif
