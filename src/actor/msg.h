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
#include "core/principal.h"
#include "core/util.h"
#include "wire/jsonrpc.h"

typedef struct conn_ref {
    uint32_t thread; /* HTTP thread index */
    uint32_t slot;
    uint32_t gen; /* 0 = no connection */
} conn_ref_t;

static inline bool conn_ref_eq(conn_ref_t a, conn_ref_t b)
{
    return a.thread == b.thread && a.slot == b.slot && a.gen == b.gen;
}

struct mcpd_ctx;

typedef enum {
    WM_POST = 1,     /* a POST for a session (or an initialize that makes one) */
    WM_GET,          /* open or resume a stream */
    WM_DELETE,       /* end the session */
    WM_CONN_CLOSED,  /* the client closed the connection of an SSE stream */
    WM_TOOL_OUT,     /* a tool's notification */
    WM_TOOL_REQ,     /* a tool's server->client request, answered through the job */
    WM_TOOL_ABANDON, /* the tool stopped waiting for its server->client request */
    WM_TOOL_STATE,   /* a tool's state get/put/update, answered through the job */
    WM_TOOL_DONE,    /* the job finished: result or error in the job */
    WM_TOOL_CLOSE,   /* end the connection of the job's call stream; the call goes on */
    WM_ALARM,        /* the session's alarm is due */
    WM_RECOVER,      /* startup: these requests were in flight when the process died */
    WM_BROADCAST,    /* a notification for every listener on the worker (workers_broadcast) */
} wmsg_type_t;

/* What a broadcast announces (WM_BROADCAST). */
enum { BC_TOOLS_CHANGED = 1, BC_PROMPTS_CHANGED, BC_RESOURCES_CHANGED, BC_RESOURCE_UPDATED };

/* A batch of up to this many messages needs no allocation for its kinds. The figure also keeps
 * wmsg_t at 288 bytes: at 216 it shared glibc's 224-byte size class with libevent's
 * evhttp_request, allocated and freed in the same turns, and the per-thread cache for that class
 * overflowed (callgrind: +3,300 instructions per tools/call, all in malloc). */
#define WMSG_KINDS_INLINE 48

/* What every message from a client carries (POST, GET, DELETE). */
typedef struct wm_client {
    conn_ref_t conn;        /* the connection to answer on */
    int64_t recv_us;        /* when the HTTP thread received it (monotonic) */
    char auth_name[64];     /* the token name that sent it ("" without auth) */
    char proto_hdr[32];     /* MCP-Protocol-Version header ("" when absent) */
    principal_t *principal; /* owned reference, set for initialize and 2026-07-28 requests
                                  (NULL otherwise): who sent it (core/principal.h) */
} wm_client_t;

/* Messages to a worker. The sender fills the header and the member of the union its type
 * names, pushes it and keeps nothing: from then on the message and everything it owns belong
 * to the receiving worker, which frees it with wmsg_free. "owned" below: freed with the
 * message; "borrowed": it points into something that outlives the message. */
typedef struct wmsg {
    mq_node_t link;
    wmsg_type_t type;
    uint16_t mbox;                /* counted in its session's mailbox count (worker_admit): 1 +
                                     the count's bucket (actor/mbox.h); 0: not counted */
    uint8_t upstream;             /* WM_POST, WM_GET, WM_DELETE: the request came on /mcp/NAME of
                                  --upstream NAME: 1 + its index (the gateway's); 0: /mcp */
    char sid[SESSION_ID_LEN + 1]; /* the session it is for */
    union {
        wm_client_t client; /* the common first member of post, get and del */
        struct {            /* WM_POST */
            wm_client_t c;
            json_t *body; /* owned: the parsed message or batch */
            union {
                jr_view_t v; /* a single message's method, id and params, found while it was
                                classified (borrowed from body); all NULL for a batch */
                struct {
                    char *raw; /* owned, while as_text: the body's text */
                    uint32_t raw_len;
                };
            };
            size_t n;           /* messages in it (1 unless a batch) */
            signed char *kinds; /* jr_kind_t of each, classified once (by the HTTP thread, or
                                   by wmsg_parse_raw): points at kinds_inline, or owned when it
                                   does not fit */
            signed char kinds_inline[WMSG_KINDS_INLINE];
            json_t *param_hdrs; /* owned, modern only: {lowercased Mcp-Param-* name: decoded
                                   value}, NULL when the request had none */
            uint32_t nodes;     /* JSON values in body (the worker trims after big ones) */
            bool create;        /* initialize: sid is the new session's fresh id */
            bool holds_session; /* initialize: it holds one unit of its principal's share of
                                   --max-sessions, which the new session takes over; freed
                                   with the message otherwise */
            bool modern;        /* a 2026-07-28 request (checked by the HTTP thread): no
                                  session; sid is a fresh id for its one-request actor */
            bool as_text;       /* raw holds the body's text and body, v, kinds, n and nodes
                                   are unset, until the receiving worker parses it
                                   (wmsg_parse_raw: a request read on another loop) */
        } post;
        struct { /* WM_GET */
            wm_client_t c;
            bool resume; /* Last-Event-ID was given: tag, stream, seq */
            uint32_t tag;
            uint64_t stream, seq;
        } get;
        struct { /* WM_DELETE */
            wm_client_t c;
        } del;
        struct { /* WM_CONN_CLOSED */
            conn_ref_t conn;
            uint64_t stream; /* the stream the connection carried */
            bool by_server;  /* the server ended it (idle, a slow reader), not the client */
        } closed;
        struct {                  /* WM_TOOL_* */
            struct mcpd_ctx *job; /* borrowed: the worker frees it at WM_TOOL_DONE */
            json_t *payload;      /* owned: TOOL_OUT the message, TOOL_REQ {method, params} */
            int target;           /* TOOL_OUT, TOOL_REQ: mcpd_target_t */
            uint32_t wait_seq;    /* TOOL_REQ, TOOL_STATE: the job's wait it answers */
        } tool;
        struct {         /* WM_ALARM */
            int64_t due; /* the due time the scheduler saw */
        } alarm;
        struct {             /* WM_RECOVER */
            json_t *list;    /* owned: [[stream, request id], ...] */
            const char *why; /* static: the error's message */
        } recover;
        struct {          /* WM_BROADCAST */
            json_t *note; /* owned: the notification {jsonrpc, method, params} */
            int what;     /* BC_* */
        } bcast;
    } u;
} wmsg_t;

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(wmsg_t) > 232,
               "wmsg_t back in the 224-byte malloc class (see WMSG_KINDS_INLINE)");
#endif

wmsg_t *wmsg_new(wmsg_type_t type);
void wmsg_free(wmsg_t *m);
/* Sets a WM_POST's kinds, view and node count for its body: kind and v are a single message's
 * (jsonrpc_classify_view); a batch's members are classified here, a request whose id an
 * earlier request of the batch has as JR_INVALID (jsonrpc_batch_repeats). */
void wmsg_classify(wmsg_t *m, jr_kind_t kind, const jr_view_t *v, size_t nodes);
/* A WM_POST that carries its body's text (raw): parses and classifies it on the receiving
 * thread, so the tree is made, read and freed by one thread. The HTTP thread parsed and
 * checked the same text, so it cannot fail. No-op without raw. */
void wmsg_parse_raw(wmsg_t *m);

typedef enum {
    HM_REPLY = 1, /* a complete response: status, content type, body; ends the request */
    HM_SSE_START, /* status 200 text/event-stream; body = first bytes (may be empty) */
    HM_SSE_DATA,  /* more SSE bytes */
    HM_SSE_END,   /* end the stream (after any body bytes in the same message) */
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
    uint64_t stream;                     /* which actor stream this connection now carries */
    const char *content_type;            /* static string */
    char session_id[SESSION_ID_LEN + 1]; /* Mcp-Session-Id response header when non-empty */
    const char *retry_after;             /* Retry-After header when non-NULL (static string) */
    char *body;                          /* owned, may be NULL */
    size_t len;
    char *req_id; /* SSE_START of a POST stream serving one request: its id
                                      (JSON text, owned), for an error that replaces the frame */
    /* gen != 0: the frame goes out only after what was queued before it on this other
     * connection (a session's standalone stream) has been written to its socket. It is queued
     * to that connection's HTTP thread, which holds it until then and passes it on to conn's
     * (http/fence.c). A JSON reply whose calls sent progress on the standalone stream. */
    conn_ref_t after;
    uint64_t until; /* HTTP thread, while held: `after`'s written-byte count to wait for */
} hmsg_t;

hmsg_t *hmsg_new(hmsg_type_t type, conn_ref_t conn);
/* A complete response (HM_REPLY) with a JSON body (malloc'd, taken; may be NULL) and the
 * Mcp-Session-Id and Retry-After headers (NULL: none; a 503 always gets one, "1" by default);
 * NULL when conn is gone (the body is freed). */
hmsg_t *hmsg_reply(conn_ref_t conn, int status, char *body, size_t len, const char *sid_header,
                   const char *retry_after);
void hmsg_free(hmsg_t *m);

#endif
