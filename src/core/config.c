/* Threads: main thread, before any other thread starts. */
/* Command-line flags: main thread, before any other thread starts.
 *
 * One table drives both parsing and --help, so a flag cannot exist without its help line. */
#include "core/config.h"
#include "core/cluster.h"
#include "core/cors.h"

#include "core/log.h"
#include "core/principal.h"
#include "core/util.h"

#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MCPD_VERSION
#define MCPD_VERSION "unknown"
#endif

config_t g_cfg;

typedef enum { K_HOSTPORT, K_ADMIN, K_STR, K_INT, K_LIST, K_BOOL, K_LEVEL, K_MODE } kind_t;

typedef struct flag {
    const char *name;
    const char *arg; /* NULL: no argument */
    kind_t kind;
    size_t off; /* offset in config_t */
    int64_t min, max;
    const char *help;
} flag_t;

#define OFF(f) offsetof(config_t, f)

static const flag_t FLAGS[] = {
    {"listen", "HOST:PORT", K_HOSTPORT, OFF(listen_host), 0, 0,
     "MCP endpoint address (default 127.0.0.1:8080); the endpoint path is /mcp"},
    {"admin-listen", "HOST:PORT", K_ADMIN, OFF(admin_host), 0, 0,
     "admin listener for /healthz, /stats, /metrics and /shards (default 127.0.0.1:8081; 'off' disables)"},
    {"data-dir", "DIR", K_STR, OFF(data_dir), 0, 0,
     "RocksDB data directory, created if missing (default ./mcpactord-data)"},
    {"auth-tokens", "FILE", K_STR, OFF(auth_tokens), 0, 0,
     "require Authorization: Bearer on /mcp; FILE has name:token lines, mode 600"},
    {"admin-token", "FILE", K_STR, OFF(admin_token), 0, 0,
     "require Authorization: Bearer on the admin listener; FILE as for --auth-tokens"},
    {"auth-issuer", "URL", K_STR, OFF(auth_issuer), 0, 0,
     "accept OAuth access tokens (JWT, RFC 9068) from this authorization server (https:// or http://); its "
     "keys come from its metadata's jwks_uri; /.well-known/oauth-protected-resource is served"},
    {"auth-resource", "URL", K_STR, OFF(auth_resource), 0, 0,
     "this server's canonical resource URI: the audience every token must carry (default "
     "http://<listen address>/mcp; behind a TLS proxy, the public URL)"},
    {"auth-scopes", "\"S1 S2\"", K_STR, OFF(auth_scopes), 0, 0,
     "the scopes_supported advertised (default: every scope a flag or a tool names)"},
    {"auth-required-scope", "SCOPE", K_STR, OFF(auth_required_scope), 0, 0,
     "every request's token must carry this scope (else 403 insufficient_scope)"},
    {"auth-tool-scope", "TOOL=S1[,S2]", K_LIST, OFF(auth_tool_scopes), 0, 0,
     "calling TOOL needs these scopes (repeatable; replaces the scopes the tool declares)"},
    {"auth-leeway", "SECS", K_INT, OFF(auth_leeway), 0, 3600,
     "clock skew allowed for a token's exp, nbf and iat (default 30)"},
    {"auth-introspect", "FILE", K_STR, OFF(auth_introspect), 0, 0,
     "check opaque (non-JWT) tokens by RFC 7662 introspection at the issuer's "
     "introspection_endpoint; FILE holds client_id:client_secret, mode 600"},
    {"auth-introspection-cache", "SECS", K_INT, OFF(auth_introspection_cache), 0, 86400,
     "how long an introspection answer is kept, never past the token's exp (default 60)"},
    {"auth-fetch-timeout", "SECS", K_INT, OFF(auth_fetch_timeout), 1, 300,
     "how long one fetch at the issuer (metadata, keys, an introspection) may take in all, and "
     "a request may wait for the issuer, before it counts as no answer (default 5)"},
    {"auth-dpop-jti-max", "N", K_INT, OFF(auth_dpop_jti_max), 1, 100000000,
     "DPoP proofs remembered at most, to refuse a replay (default 1000000), one principal at most "
     "--principal-share percent of it; a new proof beyond either gets 503"},
    {"cluster", "FILE", K_STR, OFF(cluster_file), 0, 0,
     "run as one node of a cluster: FILE (JSON) lists the nodes and which of the 4096 shards each "
     "owns; this node serves and mints ids only in its shards (docs/usage/cluster.md)"},
    {"node", "NAME", K_STR, OFF(node_name), 0, 0,
     "this node's name in --cluster FILE (its listen, admin and data_dir there are the defaults)"},
    {"move-dir", "DIR", K_STR, OFF(move_dir), 0, 0,
     "where this node writes the exports of the shards it releases and the files of those it "
     "adopts (default <data-dir>/moves; the cluster file's move_dir for the node)"},
    {"http-threads", "N", K_INT, OFF(http_threads), 1, 64,
     "HTTP threads (default: one per CPU the process may use, by its affinity and its cgroup's "
     "CPU quota, at most 64)"},
    {"workers", "N", K_INT, OFF(workers), 0, 64,
     "actor worker threads of their own; 0 runs each HTTP thread's actors on that thread "
     "(default 0)"},
    {"tool-threads", "N", K_INT, OFF(tool_threads), 1, 1024, "tool handler threads (default 4)"},
    {"session-jobs", "N", K_INT, OFF(session_jobs), 1, 1024,
     "tool handlers one session may run at once; its other calls wait their turn, so one "
     "session cannot take the whole pool (default half of --tool-threads, at least 1)"},
    {"toolset", "NAME[,NAME]", K_LIST, OFF(toolsets), 0, 0,
     "built-in toolsets to serve (default demo; '' for none: plugins only)"},
    {"plugin", "PATH.so", K_LIST, OFF(plugins), 0, 0,
     "load tools from a shared object (repeatable)"},
    {"upstream", "NAME=COMMAND", K_LIST, OFF(upstream_names), 0, 0,
     "serve the stdio MCP server COMMAND on /mcp/NAME, one process per session (NAME: "
     "[a-z0-9_-], 1-32; COMMAND split as a shell would, without running one; repeatable)"},
    {"upstream-max", "N", K_INT, OFF(upstream_max), 0, 1 << 20,
     "upstream processes running at once, all --upstream together; past it initialize (or the "
     "restart of a session's process) gets 503 + Retry-After; 0: no bound (default 100)"},
    {"upstream-pool", "N", K_INT, OFF(upstream_pool), 0, 64,
     "2026-07-28 (stateless) requests on /mcp/NAME are served by up to N warm upstream "
     "processes per name, started at the first such request and kept; 0: /mcp/NAME serves the "
     "session era only (default 2)"},
    {"upstream-init-timeout", "SECS", K_INT, OFF(upstream_init_timeout_s), 1, 3600,
     "how long an upstream process may take to answer initialize (at a session's start, or "
     "when its process is started again); past it the process is stopped and the requests "
     "that wait get an error (default 30)"},
    {"upstream-call-timeout", "SECS", K_INT, OFF(upstream_call_timeout_s), 0, 604800,
     "a request the upstream has not answered, nor reported progress on, within SECS gets an "
     "error and the upstream a notifications/cancelled; 0: no timeout (default 300)"},
    {"upstream-idle", "SECS", K_INT, OFF(upstream_idle_s), 0, 604800,
     "stop a session's upstream process after SECS with no request or answer either way and no "
     "request open (the session stays; its next request starts the process again), and a "
     "--upstream-pool process free for SECS; 0: only when the session hibernates, a pool's "
     "never (default 0)"},
    {"allowed-host", "HOST[:PORT]", K_LIST, OFF(allowed_hosts), 0, 0,
     "accept this Host header besides the --listen address (repeatable)"},
    {"trusted-proxy", "ADDR", K_LIST, OFF(trusted_proxies), 0, 0,
     "a reverse proxy (HAProxy, nginx) at ADDR: its requests' client is the last address of "
     "their X-Forwarded-For, for the per-client shares; its connections take no share "
     "(repeatable)"},
    {"allowed-origin", "ORIGIN", K_LIST, OFF(allowed_origins), 0, 0,
     "accept this Origin besides http(s)://<listen address> (repeatable)"},
    {"cors-origin", "ORIGIN", K_LIST, OFF(cors_origins), 0, 0,
     "let browser pages of ORIGIN (scheme://host[:port], exactly as the browser sends it in "
     "Origin) call /mcp: preflights are answered and every answer carries "
     "Access-Control-Allow-Origin; ORIGIN also passes the Origin check (repeatable). '*' lets "
     "any page call, with no Origin check: use it with tokens only"},
    {"log-level", "LEVEL", K_LEVEL, OFF(log_level), 0, 0,
     "error, warn, info or debug (default info)"},
    {"max-body", "BYTES", K_INT, OFF(max_body), 1024, 1LL << 30,
     "largest request body: its Content-Length, or its chunk sizes together (default 4194304); "
     "larger gets 413"},
    {"max-json-nodes", "N", K_INT, OFF(max_json_nodes), 64, 1LL << 30,
     "JSON values (objects, arrays, strings, numbers, literals) one request body may hold; "
     "more gets 413 (default 100000)"},
    {"max-headers", "BYTES", K_INT, OFF(max_headers), 1024, 1LL << 20,
     "largest request head: request line, header lines and the empty line, line ends included "
     "(default 16384); larger gets 431"},
    {"mailbox", "N", K_INT, OFF(mailbox), 1, 1 << 20,
     "messages queued per session before 503 + Retry-After (default 1024)"},
    {"max-connections", "N", K_INT, OFF(max_connections), 1, 1 << 24,
     "open client connections before new ones get 503 (default 10000); lowered at start when "
     "twice it and the process's other descriptors do not fit in RLIMIT_NOFILE (whose soft "
     "limit is raised to the hard one)"},
    {"max-sessions", "N", K_INT, OFF(max_sessions), 1, 1LL << 40,
     "stored sessions (live or hibernated) before initialize gets 503 (default 1000000)"},
    {"max-streams", "N", K_INT, OFF(max_streams), 1, 1 << 20,
     "requests in flight per session (every request of a batch counts) before 429 (default 64)"},
    {"sse-buffer", "BYTES", K_INT, OFF(sse_buffer), 4096, 1LL << 32,
     "unsent bytes on one SSE connection before it is closed and they are dropped; the client "
     "resumes with Last-Event-ID (default 8388608)"},
    {"sse-backlog", "BYTES", K_INT, OFF(sse_backlog), 4096, 1LL << 44,
     "unsent SSE bytes all slow readers together may hold: a connection more than 64 KiB "
     "behind its reader holds one of --sse-backlog / --sse-buffer places (at least 1; a client "
     "at most its --principal-share of them) until it is 16 KiB behind; one that finds none is "
     "closed as for --sse-buffer (default 268435456)"},
    {"session-log-bytes", "BYTES", K_INT, OFF(session_log_bytes), 4096, 1LL << 40,
     "event-log bytes per session; past it the oldest finished streams go (default 67108864)"},
    {"page-size", "N", K_INT, OFF(page_size), 1, 10000,
     "items per tools/list, resources/list and prompts/list page (default 100)"},
    {"response-mode", "MODE", K_MODE, OFF(response_mode), 0, 0,
     "auto (JSON unless the call streams), sse or json (default auto)"},
    {"json-window", "MS", K_INT, OFF(json_window_ms), 0, 3600000,
     "auto mode: a silent call switches to SSE after this long (default 1000)"},
    {"keepalive", "SECS", K_INT, OFF(keepalive_s), 1, 86400,
     "keepalive comment interval on POST streams (default 25)"},
    {"retry-ms", "MS", K_INT, OFF(retry_ms), 0, 3600000,
     "SSE retry: hint for 2025-11-25 sessions (default 1000)"},
    {"stream-cap", "N", K_INT, OFF(stream_cap), 1, 1 << 24,
     "notifications and requests kept per stream, oldest evicted; a POST stream keeps its priming event and responses besides (default 256)"},
    {"no-event-store", NULL, K_BOOL, OFF(event_store), 0, 0,
     "turn resumability off: no event log, keepalive on GET streams too"},
    {"request-timeout", "MS", K_INT, OFF(request_timeout_ms), 1, 86400000,
     "default wait for a client's answer to elicitation/sampling (default 300000)"},
    {"idle-timeout", "SECS", K_INT, OFF(idle_timeout_s), 1, 86400 * 365,
     "hibernate a session idle this long: its memory is freed, it wakes on demand (default 60)"},
    {"event-ttl", "SECS", K_INT, OFF(event_ttl_s), 1, 86400LL * 3650,
     "delete a stream's events this long after its last write (default 86400)"},
    {"finished-stream-ttl", "SECS", K_INT, OFF(finished_stream_ttl_s), 1, 86400LL * 3650,
     "delete a POST stream this long after its last response (default 600)"},
    {"get-idle-timeout", "SECS", K_INT, OFF(get_idle_timeout_s), 1, 86400LL * 365,
     "end a standalone GET stream that sent nothing this long; the client resumes it with "
     "Last-Event-ID (default 300; with --no-event-store its keepalive keeps it busy)"},
    {"session-ttl", "SECS", K_INT, OFF(session_ttl_s), 1, 86400LL * 3650,
     "delete a session untouched this long; it answers 404 afterwards (default 604800)"},
    {"unused-session-ttl", "SECS", K_INT, OFF(unused_session_ttl_s), 1, 86400LL * 3650,
     "delete a session that got no request after initialize (only notifications) this long "
     "after its creation (default 600)"},
    {"min-free-space", "BYTES", K_INT, OFF(min_free_space), 0, 1LL << 50,
     "refuse writes (503) while the data directory's filesystem has less free (default "
     "67108864; 0 leaves it to RocksDB's own error)"},
    {"store-partitions", "N", K_INT, OFF(store_partitions), 1, 64,
     "a new data directory's RocksDB databases, each shard's records in one, each with its own "
     "write path (default 1; set at creation, kept after)"},
    {"sync", NULL, K_BOOL, OFF(sync), 0, 0,
     "fsync the write-ahead log (group commit): survives a machine crash"},
    {"read-timeout", "SECS", K_INT, OFF(read_timeout_s), 1, 3600,
     "drop a connection whose request has not arrived whole SECS after its start (accept, or "
     "the first byte after the answer before), or again each SECS while it comes at 4 KiB/s "
     "or more, however it trickles in, or that stays silent this long between requests "
     "(default 30)"},
    {"modern", NULL, K_BOOL, OFF(modern), 0, 0,
     "serve MCP 2026-07-28 (stateless: per-request _meta, server/discover) on /mcp beside the "
     "session era (the default)"},
    {"no-modern", NULL, K_BOOL, OFF(modern), 0, 0,
     "serve the session era only: a 2026-07-28 request gets the session era's 400, so clients "
     "in auto mode fall back to initialize"},
    {"cache-ttl-ms", "MS", K_INT, OFF(cache_ttl_ms), 0, 86400000LL * 365,
     "2026-07-28: ttlMs on server/discover, list and resources/read results (default 60000)"},
    {"cache-private", NULL, K_BOOL, OFF(cache_private), 0, 0,
     "2026-07-28: mark those results cacheScope private (per authorization) instead of public"},
    {"request-state-key", "FILE", K_STR, OFF(request_state_key), 0, 0,
     "2026-07-28: the 32-byte HMAC key of requestState tokens (default <data-dir>/request-state.key, "
     "created at first start, mode 600)"},
    {"request-state-ttl", "SECS", K_INT, OFF(request_state_ttl_s), 1, 86400 * 30,
     "2026-07-28: how long a requestState (and its record) stays good (default 900)"},
    {"max-input-records", "N", K_INT, OFF(max_input_records), 1, 1LL << 40,
     "2026-07-28: pending input-request exchanges stored (each until its retry or "
     "--request-state-ttl); past it a call that asks for input gets -32003 (default 100000)"},
    {"task-ttl", "SECS", K_INT, OFF(task_ttl_s), 1, 86400LL * 365,
     "2026-07-28 tasks extension: a task (its status and result) is deleted this long after it "
     "was created; its ttlMs (default 3600)"},
    {"task-poll-ms", "MS", K_INT, OFF(task_poll_ms), 1, 3600000,
     "2026-07-28 tasks extension: the pollIntervalMs a task suggests to its client (default 1000)"},
    {"max-tasks", "N", K_INT, OFF(max_tasks), 1, 1LL << 40,
     "2026-07-28 tasks extension: tasks stored; past it a tool that may run as a task runs "
     "synchronously and one that must gets -32003 (default 100000)"},
    {"principal-share", "PERCENT", K_INT, OFF(principal_share), 1, 100,
     "the most one principal (the token's name or OAuth subject; without tokens the client's "
     "address, an IPv6 /64 as one) "
     "may hold of the tool threads and of --max-sessions, --max-connections, --max-handles, "
     "--max-tasks, --max-input-records, --auth-dpop-jti-max, --upstream-max and --sse-backlog, "
     "and of each --upstream-pool and its queue, in percent, at least 1 of each (default 50)"},
    {"max-handles", "N", K_INT, OFF(max_handles), 1, 1LL << 40,
     "state handles stored; past it (or past a principal's share) mcpd_ctx_handle_new fails "
     "(the demo's new_counter: a tool error) (default 100000)"},
    {"handle-ttl", "SECS", K_INT, OFF(handle_ttl_s), 1, 86400LL * 3650,
     "delete a state handle (mcpd_ctx_handle_new) unused this long (default 604800)"},
    {"help", NULL, K_BOOL, 0, 0, 0, "print this help and exit"},
    {"version", NULL, K_BOOL, 0, 0, 0, "print the version and exit"},
};
#define NFLAGS (sizeof FLAGS / sizeof FLAGS[0])

void config_defaults(config_t *c)
{
    memset(c, 0, sizeof *c);
    strcpy(c->listen_host, "127.0.0.1");
    c->listen_port = 8080;
    c->admin_enabled = true;
    strcpy(c->admin_host, "127.0.0.1");
    c->admin_port = 8081;
    strcpy(c->data_dir, "./mcpactord-data");
    c->http_threads = -1; /* decided after parsing: see config_parse */
    c->workers = 0;
    c->tool_threads = 4;
    c->min_free_space = 64 * 1024 * 1024;
    c->session_jobs = -1; /* decided after parsing: half of --tool-threads */
    c->log_level = LOG_INFO;
    c->max_body = 4 * 1024 * 1024;
    c->max_headers = 16 * 1024;
    c->max_json_nodes = 100000;
    c->mailbox = 1024;
    c->max_connections = 10000;
    c->max_sessions = 1000000;
    c->max_streams = 64;
    c->upstream_max = 100;
    c->upstream_init_timeout_s = 30;
    c->upstream_call_timeout_s = 300;
    c->upstream_pool = 2;
    c->sse_buffer = 8 * 1024 * 1024;
    c->sse_backlog = 256 * 1024 * 1024;
    c->session_log_bytes = 64 * 1024 * 1024;
    c->page_size = 100;
    c->cache_ttl_ms = 60000;
    c->modern = true;
    c->request_state_ttl_s = 900;
    c->handle_ttl_s = 604800;
    c->max_input_records = 100000;
    c->task_ttl_s = 3600;
    c->task_poll_ms = 1000;
    c->max_tasks = 100000;
    c->principal_share = 50;
    c->auth_leeway = 30;
    c->auth_introspection_cache = 60;
    c->auth_fetch_timeout = 5;
    c->auth_dpop_jti_max = 1000000;
    c->max_handles = 100000;
    c->get_idle_timeout_s = 300;
    c->response_mode = RESPONSE_AUTO;
    c->json_window_ms = 1000;
    c->keepalive_s = 25;
    c->retry_ms = 1000;
    c->stream_cap = 256;
    c->event_store = true;
    c->request_timeout_ms = 300000;
    c->idle_timeout_s = 60;
    c->event_ttl_s = 86400;
    c->finished_stream_ttl_s = 600;
    c->session_ttl_s = 604800;
    c->unused_session_ttl_s = 600;
    c->sync = false;
    c->read_timeout_s = 30;
}

static void print_help(const char *prog)
{
    printf(
        "usage: %s [FLAGS]\n\n"
        "mcpactord %s: a Model Context Protocol server on Streamable HTTP, both eras on one\n"
        "endpoint: sessions (2025-03-26, 2025-06-18, 2025-11-25) that are durable actors stored\n"
        "in RocksDB, and the stateless 2026-07-28 (per-request _meta, input requests, state\n"
        "handles, subscriptions/listen, the tasks extension).\n\n"
        "flags:\n",
        prog, MCPD_VERSION);
    for (size_t i = 0; i < NFLAGS; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", FLAGS[i].name, FLAGS[i].arg ? " " : "",
                 FLAGS[i].arg ? FLAGS[i].arg : "");
        printf("  %-28s %s\n", left, FLAGS[i].help);
    }
    printf("\nexample: %s --listen 127.0.0.1:8080 --data-dir ./mcpactord-data\n", prog);
}

static int add_list(char **list, int *n, const char *value, const char *flag)
{
    /* comma-separated values append; each is one entry */
    const char *p = value;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            fprintf(stderr, "mcpactord: --%s: empty value\n", flag);
            return -1;
        }
        if (*n >= CFG_MAX_LIST) {
            fprintf(stderr, "mcpactord: --%s: at most %d values\n", flag, CFG_MAX_LIST);
            return -1;
        }
        list[(*n)++] = xstrndup(p, len);
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

/* --upstream NAME=COMMAND: the name checked here (it is a path segment), the command kept
 * whole (main splits it: upstream_split, src/gateway/). */
static int add_upstream(config_t *c, const char *val)
{
    const char *eq = strchr(val, '=');
    size_t nlen = eq ? (size_t)(eq - val) : 0;
    if (!eq || nlen == 0 || nlen > CFG_UPSTREAM_NAME_MAX ||
        strspn(val, "abcdefghijklmnopqrstuvwxyz0123456789_-") != nlen) {
        fprintf(stderr,
                "mcpactord: --upstream %s: expected NAME=COMMAND, NAME 1 to %d of a-z 0-9 _ -\n",
                val, CFG_UPSTREAM_NAME_MAX);
        return -1;
    }
    if (!eq[1 + strspn(eq + 1, " \t")]) {
        fprintf(stderr, "mcpactord: --upstream %.*s: the command is empty\n", (int)nlen, val);
        return -1;
    }
    if (config_upstream_find(c, val, nlen) >= 0) {
        fprintf(stderr, "mcpactord: --upstream %.*s: given twice\n", (int)nlen, val);
        return -1;
    }
    if (c->n_upstreams >= CFG_MAX_UPSTREAMS) {
        fprintf(stderr, "mcpactord: --upstream: at most %d\n", CFG_MAX_UPSTREAMS);
        return -1;
    }
    c->upstream_names[c->n_upstreams] = xstrndup(val, nlen);
    c->upstream_cmds[c->n_upstreams++] = xstrdup(eq + 1);
    return 0;
}

int config_upstream_find(const config_t *c, const char *name, size_t len)
{
    for (int i = 0; i < c->n_upstreams; i++)
        if (strlen(c->upstream_names[i]) == len && memcmp(c->upstream_names[i], name, len) == 0)
            return i;
    return -1;
}

/* --cors-origin: each value kept in the form a browser sends (core/cors.h), so that the
 * request's Origin is compared as it comes */
static int add_cors_origins(config_t *c, const char *val, const char *flag)
{
    int first = c->n_cors_origins;
    if (!*val) {
        fprintf(stderr, "mcpactord: --%s: empty value\n", flag);
        return -1;
    }
    if (add_list(c->cors_origins, &c->n_cors_origins, val, flag) != 0)
        return -1;
    for (int i = first; i < c->n_cors_origins; i++) {
        char norm[320];
        if (cors_origin_norm(c->cors_origins[i], norm, sizeof norm) != 0) {
            fprintf(stderr,
                    "mcpactord: --cors-origin %s: expected an origin, scheme://host[:port] "
                    "as a browser sends it in Origin (no path), or *\n",
                    c->cors_origins[i]);
            return -1;
        }
        free(c->cors_origins[i]);
        c->cors_origins[i] = xstrdup(norm);
    }
    return 0;
}

static int apply(config_t *c, const flag_t *f, const char *val)
{
    char *base = (char *)c + f->off;
    switch (f->kind) {
    case K_HOSTPORT:
        if (parse_host_port(val, c->listen_host, sizeof c->listen_host, &c->listen_port) != 0)
            goto bad;
        return 0;
    case K_ADMIN:
        if (strcmp(val, "off") == 0) {
            c->admin_enabled = false;
            return 0;
        }
        c->admin_enabled = true;
        if (parse_host_port(val, c->admin_host, sizeof c->admin_host, &c->admin_port) != 0)
            goto bad;
        return 0;
    case K_STR:
        /* every K_STR field is a 1024-byte path */
        if (!*val || strlen(val) >= sizeof c->data_dir)
            goto bad;
        strcpy(base, val);
        return 0;
    case K_INT: {
        int64_t v;
        if (parse_int64(val, f->min, f->max, &v) != 0) {
            fprintf(stderr, "mcpactord: --%s: expected an integer in %lld..%lld, got '%s'\n",
                    f->name, (long long)f->min, (long long)f->max, val);
            return -1;
        }
        if (f->off == OFF(http_threads) || f->off == OFF(workers) || f->off == OFF(tool_threads))
            *(int *)base = (int)v;
        else
            *(int64_t *)base = v;
        return 0;
    }
    case K_LIST:
        if (f->off == OFF(toolsets)) {
            /* an explicit --toolset replaces the default */
            return add_list(c->toolsets, &c->n_toolsets, val, f->name);
        }
        if (f->off == OFF(plugins))
            return add_list(c->plugins, &c->n_plugins, val, f->name);
        if (f->off == OFF(auth_tool_scopes)) {
            /* TOOL=S1[,S2]: the commas belong to the value, so it is kept whole */
            const char *eq = strchr(val, '=');
            if (!eq || eq == val || !eq[1]) {
                fprintf(stderr, "mcpactord: --auth-tool-scope %s: expected TOOL=SCOPE[,SCOPE]\n",
                        val);
                return -1;
            }
            if (c->n_auth_tool_scopes >= CFG_MAX_TOOL_SCOPES) {
                fprintf(stderr, "mcpactord: --auth-tool-scope: at most %d\n", CFG_MAX_TOOL_SCOPES);
                return -1;
            }
            c->auth_tool_scopes[c->n_auth_tool_scopes++] = xstrdup(val);
            return 0;
        }
        if (f->off == OFF(upstream_names))
            return add_upstream(c, val);
        if (f->off == OFF(cors_origins))
            return add_cors_origins(c, val, f->name);
        if (f->off == OFF(allowed_hosts))
            return add_list(c->allowed_hosts, &c->n_allowed_hosts, val, f->name);
        if (f->off == OFF(trusted_proxies)) {
            char norm[64];
            if (principal_address(val, norm, sizeof norm) != 0 || strchr(norm, '/')) {
                fprintf(stderr,
                        "mcpactord: --trusted-proxy %s: expected an IPv4 or IPv6 "
                        "address\n",
                        val);
                return -1;
            }
            return add_list(c->trusted_proxies, &c->n_trusted_proxies, norm, f->name);
        }
        return add_list(c->allowed_origins, &c->n_allowed_origins, val, f->name);
    case K_LEVEL: {
        log_level_t lv;
        if (log_level_parse(val, &lv) != 0) {
            fprintf(stderr,
                    "mcpactord: --log-level: expected error, warn, info or debug, got '%s'\n", val);
            return -1;
        }
        c->log_level = (int)lv;
        return 0;
    }
    case K_MODE:
        if (strcmp(val, "auto") == 0)
            c->response_mode = RESPONSE_AUTO;
        else if (strcmp(val, "sse") == 0)
            c->response_mode = RESPONSE_SSE;
        else if (strcmp(val, "json") == 0)
            c->response_mode = RESPONSE_JSON;
        else {
            fprintf(stderr, "mcpactord: --response-mode: expected auto, sse or json, got '%s'\n",
                    val);
            return -1;
        }
        return 0;
    case K_BOOL:
        return 0;
    }
bad:
    fprintf(stderr, "mcpactord: --%s: malformed value '%s' (expected %s)\n", f->name, val, f->arg);
    return -1;
}

int config_parse(config_t *c, int argc, char **argv)
{
    struct option longopts[NFLAGS + 1];
    for (size_t i = 0; i < NFLAGS; i++) {
        longopts[i] = (struct option){FLAGS[i].name, FLAGS[i].arg ? required_argument : no_argument,
                                      NULL, (int)(i + 1000)};
    }
    longopts[NFLAGS] = (struct option){0, 0, 0, 0};
    opterr = 0;
    optind = 0; /* 0, not 1: glibc then also resets its scan state (the previous argv) */
    bool toolset_given = false, listen_given = false, admin_given = false, data_given = false;
    for (;;) {
        int prev = optind ? optind : 1; /* optind is 0 before the first call */
        int opt = getopt_long(argc, argv, "", longopts, NULL);
        if (opt == -1)
            break;
        if (opt == '?' || opt == ':') {
            const char *bad = prev < argc ? argv[prev] : "?";
            bool known = optopt >= 1000 && optopt < (int)(1000 + NFLAGS);
            if (known && !FLAGS[optopt - 1000].arg)
                fprintf(stderr, "mcpactord: %s: --%s takes no value (see --help)\n", bad,
                        FLAGS[optopt - 1000].name);
            else if (opt == ':' || known)
                fprintf(stderr, "mcpactord: %s needs a value (see --help)\n", bad);
            else
                fprintf(stderr, "mcpactord: unknown flag %s (see --help)\n", bad);
            return 2;
        }
        const flag_t *f = &FLAGS[opt - 1000];
        if (strcmp(f->name, "help") == 0) {
            print_help(argv[0]);
            return 1;
        }
        if (strcmp(f->name, "version") == 0) {
            printf("mcpactord %s\n", MCPD_VERSION);
            return 1;
        }
        if (f->kind == K_BOOL) {
            if (strcmp(f->name, "no-event-store") == 0)
                c->event_store = false;
            else if (strcmp(f->name, "sync") == 0)
                c->sync = true;
            else if (strcmp(f->name, "modern") == 0)
                c->modern = true;
            else if (strcmp(f->name, "no-modern") == 0)
                c->modern = false;
            else if (strcmp(f->name, "cache-private") == 0)
                c->cache_private = true;
            continue;
        }
        if (f->off == OFF(toolsets) && !toolset_given) {
            toolset_given = true;
            for (int i = 0; i < c->n_toolsets; i++)
                free(c->toolsets[i]);
            c->n_toolsets = 0;
        }
        if (apply(c, f, optarg) != 0)
            return 2;
        listen_given = listen_given || f->off == OFF(listen_host);
        admin_given = admin_given || f->off == OFF(admin_host);
        data_given = data_given || f->off == OFF(data_dir);
    }
    if (optind < argc) {
        fprintf(stderr, "mcpactord: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    if (!c->auth_issuer[0] &&
        (c->auth_resource[0] || c->auth_scopes[0] || c->auth_required_scope[0] ||
         c->n_auth_tool_scopes || c->auth_introspect[0])) {
        fprintf(stderr, "mcpactord: --auth-resource, --auth-scopes, --auth-required-scope, "
                        "--auth-tool-scope and --auth-introspect need --auth-issuer URL\n");
        return 2;
    }
    if (cors_any_origin(c->cors_origins, c->n_cors_origins) && !c->auth_tokens[0] &&
        !c->auth_issuer[0]) {
        /* '*' turns the Origin check off: without authentication any page the user visits
         * could call the tools (the MCP spec's DNS-rebinding and Origin rules) */
        fprintf(stderr, "mcpactord: --cors-origin '*' lets a page of any site call this server: "
                        "it needs --auth-tokens FILE or --auth-issuer URL (or list the origins)\n");
        return 2;
    }
    if (c->node_name[0] && !c->cluster_file[0]) {
        fprintf(stderr, "mcpactord: --node needs --cluster FILE\n");
        return 2;
    }
    if (c->cluster_file[0] && cluster_load(c, listen_given, admin_given, data_given) != 0)
        return 2;
    if (c->n_toolsets == 0 && !toolset_given)
        c->toolsets[c->n_toolsets++] = xstrdup("demo");
    if (c->session_jobs < 0)
        c->session_jobs = c->tool_threads / 2 > 1 ? c->tool_threads / 2 : 1;
    if (c->http_threads < 0) {
        /* a loop per CPU, each with its actors (--workers 0): a request is read, served and
         * answered on one thread; docs/PERFORMANCE.md "Scaling across cores" */
        int cpus = cpus_usable();
        c->http_threads = cpus > 64 ? 64 : cpus;
    }
    return 0;
}

void config_free(config_t *c)
{
    for (int i = 0; i < c->n_toolsets; i++)
        free(c->toolsets[i]);
    for (int i = 0; i < c->n_plugins; i++)
        free(c->plugins[i]);
    for (int i = 0; i < c->n_allowed_hosts; i++)
        free(c->allowed_hosts[i]);
    for (int i = 0; i < c->n_allowed_origins; i++)
        free(c->allowed_origins[i]);
    for (int i = 0; i < c->n_cors_origins; i++)
        free(c->cors_origins[i]);
    for (int i = 0; i < c->n_trusted_proxies; i++)
        free(c->trusted_proxies[i]);
    c->n_trusted_proxies = c->n_cors_origins = 0;
    for (int i = 0; i < c->n_auth_tool_scopes; i++)
        free(c->auth_tool_scopes[i]);
    c->n_auth_tool_scopes = 0;
    for (int i = 0; i < c->n_upstreams; i++) {
        free(c->upstream_names[i]);
        free(c->upstream_cmds[i]);
    }
    c->n_upstreams = 0;
    c->n_toolsets = c->n_plugins = c->n_allowed_hosts = c->n_allowed_origins = 0;
}
