/* Messages between threads. Created by a sender, owned by the receiver once pushed.
 *
 *   HTTP thread  --wmsg_t-->  worker (actor)      requests, closed connections
 *   tool thread  --wmsg_t-->  worker (actor)      progress, logs, server->client requests, done
 *   worker       --hmsg_t-->  HTTP thread         replies, SSE bytes, end of stream
 *
 * An actor never holds an evhttp pointer: it names a connection by conn_ref_t {HTTP thread,
 * slot, generation}. The HTTP thread drops messages whose generation no longer matches (the
 * connection went away), so a late message can never touch a reused slot.
 */
#ifndef MCPD_ACTOR_MSG_H
#define MCPD_ACTOR_MSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/mq.h"
#include "core/util.h"

typedef struct conn_ref {
    uint32_t thread; /* HTTP thread index */
    uint32_t slot;
    uint32_t gen;    /* 0 = no connection */
} conn_ref_t;

static inline bool conn_ref_eq(conn_ref_t a, conn_ref_t b)
{
    return a.thread == b.thread && a.slot == b.slot && a.gen == b.gen;
}

struct mcpd_ctx;

typedef enum {
    WM_POST = 1,     /* body: parsed JSON-RPC message or batch (owned) */
    WM_GET,          /* open or resume a stream */
    WM_DELETE,       /* end the session */
    WM_CONN_CLOSED,  /* the client closed conn (an SSE stream of stream `stream`) */
    WM_TOOL_OUT,     /* a tool's notification: payload, target */
    WM_TOOL_REQ,     /* a tool's server->client request: method in payload, answer via job */
    WM_TOOL_ABANDON, /* the tool stopped waiting for server request `req_num` */
    WM_TOOL_STATE,   /* a tool's state get/put/update, answer via job */
    WM_TOOL_DONE,    /* the job finished: result or error in the job */
    WM_TOOL_CLOSE,   /* end the connection of the job's call stream; the call goes on */
    WM_ALARM,        /* the session's alarm at alarm_due is due */
    WM_RECOVER,      /* startup: these requests were in flight when the process died */
} wmsg_type_t;

typedef struct wmsg {
    mq_node_t link;
    wmsg_type_t type;
    bool counted;              /* counted against the session's mailbox bound */
    int64_t recv_us;           /* when the HTTP thread received it (monotonic), 0 = internal */
    char sid[SESSION_ID_LEN + 1];
    conn_ref_t conn;
    json_t *body;              /* WM_POST */
    char proto_hdr[32];        /* MCP-Protocol-Version header ("" when absent) */
    bool create;               /* WM_POST: initialize, with a fresh session id in sid */
    bool has_last_event_id;    /* WM_GET */
    uint32_t resume_tag;
    uint64_t resume_stream, resume_seq;
    uint64_t stream;           /* WM_CONN_CLOSED */
    char auth_name[64];        /* the token name that sent it ("" without auth) */
    struct mcpd_ctx *job;         /* WM_TOOL_* */
    json_t *payload;           /* WM_TOOL_OUT / WM_TOOL_REQ: the message (owned);
                                  WM_RECOVER: [[stream, request id], ...] */
    int target;                /* mcpd_target_t */
    uint64_t req_num;          /* WM_TOOL_ABANDON */
    uint32_t wait_seq;         /* WM_TOOL_REQ / WM_TOOL_STATE: the job's wait it belongs to */
    int64_t alarm_due;         /* WM_ALARM */
} wmsg_t;

wmsg_t *wmsg_new(wmsg_type_t type);
void wmsg_free(wmsg_t *m);

typedef enum {
    HM_REPLY = 1,    /* a complete response: status, content type, body; ends the request */
    HM_SSE_START,    /* status 200 text/event-stream; body = first bytes (may be empty) */
    HM_SSE_DATA,     /* more SSE bytes */
    HM_SSE_END,      /* end the stream (after any body bytes in the same message) */
} hmsg_type_t;

enum {
    HM_KEEPALIVE = 1u << 0, /* SSE_START: send ": keepalive" comments at the configured interval */
};

typedef struct hmsg {
    mq_node_t link;
    hmsg_type_t type;
    conn_ref_t conn;
    int status;
    unsigned flags;
    uint64_t stream;               /* which actor stream this connection now carries */
    const char *content_type;      /* static string */
    char session_id[SESSION_ID_LEN + 1]; /* Mcp-Session-Id response header when non-empty */
    const char *retry_after;       /* Retry-After header when non-NULL (static string) */
    char *body;                    /* owned, may be NULL */
    size_t len;
    char *req_id;                  /* SSE_START of a POST stream serving one request: its id
                                      (JSON text, owned), for an error that replaces the frame */
} hmsg_t;

hmsg_t *hmsg_new(hmsg_type_t type, conn_ref_t conn);
void hmsg_free(hmsg_t *m);

#endif
