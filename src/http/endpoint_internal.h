/* What the /mcp endpoint's files share (endpoint.c: a request's checks, the session era's
 * POST/GET/DELETE and the hand-over to a worker; endpoint_modern.c: a 2026-07-28 request's
 * checks and routing; the 503 answers of both: reply.c's http_reply_not_here). Nothing outside these files includes it. Threads: HTTP threads. */
#ifndef MCPD_HTTP_ENDPOINT_INTERNAL_H
#define MCPD_HTTP_ENDPOINT_INTERNAL_H

#include "http/internal.h"

#include "actor/msg.h"
#include "core/jsonparse.h"
#include "wire/jsonrpc.h"
#include "wire/route.h"

#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The request headers this endpoint reads, found in one pass over the header list (seven
 * evhttp_find_header calls were seven case-insensitive scans per request). */
typedef struct rhdr {
    const char *origin, *host, *authorization, *accept, *content_type, *session_id, *version,
        *last_event_id, *content_length, *transfer_encoding, *mcp_method, *mcp_name;
    const char *coding; /* the first Content-Encoding that names a coding other than identity */
    bool mcp_param;     /* at least one Mcp-Param-* header came */
    const char *twice;  /* the first header that must come once and came again, or NULL */
    const char *twice_plain;  /* the same among those 2026-07-28 does not mirror, or NULL */
    const char *twice_mirror; /* the first of MCP-Protocol-Version, Mcp-Method, Mcp-Name that
                                 came again (a 2026-07-28 request: -32020), or NULL */
    bool twice_framing;       /* Content-Length or Transfer-Encoding came again */
    uint8_t upstream;         /* the path is /mcp/NAME of --upstream NAME: 1 + its index; 0: /mcp */
} rhdr_t;

/* A POST body, parsed once before any check so that every refusal can echo the request's id
 * (JSON-RPC asks for it whenever it can be read), and classified once. */
typedef struct pbody {
    json_t *json;     /* NULL: not a POST, or not JSON (err, pos say why); owned here until it
                         moves to the actor with the message */
    jr_kind_t kind;   /* of a single message; JR_INVALID for a batch */
    const char *why;  /* a single JR_INVALID message: what is wrong */
    const json_t *id; /* a single request's id, borrowed from json; NULL otherwise */
    jr_view_t v;      /* a single message's method, id and params (all NULL for a batch) */
    char err[160];
    size_t pos;
    json_parse_info_t info; /* how many values it held; too_many: past --max-json-nodes */
} pbody_t;

/* endpoint.c: queues m (its sid set) for its session's worker, or answers 503 when the
 * session's mailbox is full, echoing the request's id. A WM_POST gets its body from b (NULL for
 * GET and DELETE) first: the tree, which moves (b->json is then NULL), with each message's kind,
 * so the actor does not classify again; or, when m's actor runs on another loop, the body's
 * text (up to 16 KiB), which that loop parses (b->json stays here). */
void ep_submit(http_thread_t *t, struct evhttp_request *req, wmsg_t *m, pbody_t *b, const char *who,
               hlink_t *link);
/* endpoint_modern.c: a POST that claims 2026-07-28 (r: its route, filled here), checked, then
 * handed to a worker; every refusal answers and echoes the id. b->json moves to the message. */
void ep_handle_modern(http_thread_t *t, struct evhttp_request *req, const rhdr_t *h,
                      const char *who, hlink_t *link, pbody_t *b, route_t *r);

#endif
