/* Server configuration from the command line. Parsed once on the main thread, then read-only
 * (every thread may read g_cfg after startup). */
#ifndef MCPD_CORE_CONFIG_H
#define MCPD_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CFG_MAX_LIST 16

typedef enum { RESPONSE_AUTO = 0, RESPONSE_SSE, RESPONSE_JSON } response_mode_t;

typedef struct config {
    char listen_host[256];
    int listen_port;
    bool admin_enabled;
    char admin_host[256];
    int admin_port;
    char data_dir[1024];
    char auth_tokens[1024];   /* --auth-tokens FILE ("" = no authentication) */
    char admin_token[1024];   /* --admin-token FILE ("" = admin listener open) */
    char auth_issuer[1024];   /* --auth-issuer URL ("" = no OAuth: static tokens or open) */
    char auth_resource[1024]; /* --auth-resource URL ("" = http://<listen address>/mcp) */
    char auth_scopes[1024];   /* --auth-scopes "S1 S2" ("" = every scope a flag or tool names) */
    char auth_required_scope[1024]; /* --auth-required-scope S ("" = none) */
    int64_t auth_leeway;            /* --auth-leeway SECS: clock skew for exp, nbf, iat */
    char auth_introspect[1024];     /* --auth-introspect FILE: client_id:client_secret ("" = off) */
    int64_t auth_introspection_cache; /* --auth-introspection-cache SECS */
    int64_t auth_fetch_timeout;       /* --auth-fetch-timeout SECS */
    int64_t auth_dpop_jti_max;        /* --auth-dpop-jti-max N: DPoP proofs recorded at most */
#define CFG_MAX_TOOL_SCOPES 256
    char *auth_tool_scopes[CFG_MAX_TOOL_SCOPES]; /* --auth-tool-scope TOOL=S1[,S2], as given */
    int n_auth_tool_scopes;
    char cluster_file[1024]; /* --cluster FILE ("" = a single node owning every shard) */
    char node_name[1024];    /* --node NAME: this node in the cluster file */
    char move_dir[1024];     /* --move-dir DIR: shard exports ("" = <data-dir>/moves) */
    int http_threads;
    int workers;
    int tool_threads;
    int64_t session_jobs;     /* handlers one session runs at once; the rest wait on the actor */
    int64_t store_partitions; /* a new data directory's partitions (0: not given, 1) */
    int64_t min_free_space;   /* bytes kept free on the data directory's filesystem (0: off) */
    char *toolsets[CFG_MAX_LIST];
    int n_toolsets;
    char *plugins[CFG_MAX_LIST];
    int n_plugins;
    char *allowed_hosts[CFG_MAX_LIST];
    int n_allowed_hosts;
    char *allowed_origins[CFG_MAX_LIST];
    int n_allowed_origins;
    char *cors_origins[CFG_MAX_LIST]; /* --cors-origin: normalized (core/cors.h), or "*" */
    int n_cors_origins;
    /* --trusted-proxy ADDR: X-Forwarded-For names the client */
    char *trusted_proxies[CFG_MAX_LIST];
    int n_trusted_proxies;
#define CFG_MAX_UPSTREAMS 64
#define CFG_UPSTREAM_NAME_MAX 32
    /* --upstream NAME=COMMAND: served on /mcp/NAME (src/gateway/); the command is split by
     * main at start (upstream_split), here it is kept as given */
    char *upstream_names[CFG_MAX_UPSTREAMS];
    char *upstream_cmds[CFG_MAX_UPSTREAMS];
    int n_upstreams;
    int64_t upstream_max;            /* --upstream-max N: processes running at once (0: no bound) */
    int64_t upstream_init_timeout_s; /* --upstream-init-timeout SECS */
    int64_t upstream_idle_s;         /* --upstream-idle SECS (0: off) */
    int64_t upstream_call_timeout_s; /* --upstream-call-timeout SECS (0: off) */
    int64_t upstream_pool;           /* --upstream-pool N: processes per name for 2026-07-28 */
    int log_level;
    int64_t max_body;          /* bytes */
    int64_t max_headers;       /* bytes */
    int64_t max_json_nodes;    /* JSON values one request body may hold */
    int64_t mailbox;           /* messages queued per session */
    int64_t max_connections;   /* open client connections across HTTP threads */
    int64_t max_sessions;      /* stored sessions (live or hibernated) */
    int64_t max_streams;       /* requests in flight per session */
    int64_t sse_buffer;        /* unsent bytes on one SSE connection before it is cut */
    int64_t sse_backlog;       /* unsent SSE bytes of every slow reader together: its places */
    int64_t session_log_bytes; /* event-log bytes per session before old streams are trimmed */
    int64_t page_size;         /* items per tools/list page */
    response_mode_t response_mode;
    int64_t json_window_ms;     /* auto mode: silent calls switch to SSE after this */
    int64_t keepalive_s;        /* POST stream keepalive comment interval */
    int64_t retry_ms;           /* SSE retry: hint for 2025-11-25 sessions */
    int64_t stream_cap;         /* events kept per stream */
    bool event_store;           /* resumability on */
    int64_t request_timeout_ms; /* default wait for a server->client request */
    int64_t idle_timeout_s;
    int64_t event_ttl_s;
    int64_t finished_stream_ttl_s;
    int64_t session_ttl_s;
    int64_t unused_session_ttl_s; /* a session with no request after initialize is deleted
                                     this long after its creation */
    bool sync;
    int64_t read_timeout_s; /* a request that does not finish sending in time is dropped */
    bool modern;            /* --modern: serve 2026-07-28 (stateless) beside the session era */
    int64_t cache_ttl_ms;   /* ttlMs on discover, list and read results (modern) */
    bool cache_private;     /* cacheScope "private" instead of "public" */
    char request_state_key
        [1024]; /* requestState HMAC key file ("" = <data-dir>/request-state.key) */
    int64_t request_state_ttl_s; /* lifetime of a requestState and its record */
    int64_t handle_ttl_s;        /* a state handle is deleted this long after its last use */
    int64_t max_handles;         /* state handles stored */
    int64_t get_idle_timeout_s;  /* a standalone GET stream that sent nothing this long ends */
    int64_t max_input_records;   /* pending 2026-07-28 input-request exchanges stored */
    int64_t task_ttl_s;          /* a task's ttlMs: it is deleted this long after its creation */
    int64_t task_poll_ms;        /* a task's pollIntervalMs */
    int64_t max_tasks;           /* tasks stored (the tasks extension) */
    int64_t principal_share;     /* percent of each global cap (tool threads, sessions,
                                     connections, handles, tasks) one principal may hold */
} config_t;

extern config_t g_cfg;

void config_defaults(config_t *c);
/* Parses argv into c. Returns 0 to run, 1 when --help/--version was printed (exit 0), or 2
 * after printing a one-line error to stderr (exit 2). */
int config_parse(config_t *c, int argc, char **argv);
void config_free(config_t *c);
/* The index of --upstream NAME (name: len bytes, not terminated), or -1. */
int config_upstream_find(const config_t *c, const char *name, size_t len);

#endif
