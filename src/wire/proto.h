/* Protocol versions: the one place where version-specific behaviour is decided. Pure, any
 * thread. A new version (for example the stateless 2026-07-28) is a row here plus the code
 * paths that test its flags, not a change to the actor core. */
#ifndef MCPD_WIRE_PROTO_H
#define MCPD_WIRE_PROTO_H

#include <stdbool.h>

typedef struct proto {
    const char *version;
    int rank;                          /* ordering: higher is newer */
    bool batches;                      /* JSON-RPC batches in a POST body */
    bool priming;                      /* SSE priming event and retry: hint */
    bool tool_input_errors_as_results; /* schema failures are isError results, not -32602 */
    bool elicitation;                  /* elicitation/create exists */
    bool modern;                       /* stateless (2026-07-28): per-request _meta, no session */
    bool resource_not_found_invalid_params; /* SEP-2164: -32602 with data.uri, not -32002 */
} proto_t;

/* NULL when v is not supported. */
const proto_t *proto_find(const char *v);
const proto_t *proto_latest(void);
/* The next older session-era version, NULL after the oldest. */
const proto_t *proto_older(const proto_t *p);
/* The stateless revision (2026-07-28): never negotiated by initialize, never found by
 * proto_find (which names the session-era versions). */
const proto_t *proto_modern(void);
/* Negotiation: the requested version if supported, else the latest. */
const proto_t *proto_negotiate(const char *requested);
/* "2025-11-25, 2025-06-18, 2025-03-26" for error messages. */
const char *proto_supported_list(void);

#endif
