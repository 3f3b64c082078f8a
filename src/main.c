/* Threads: main thread (and the shutdown watchdog thread it starts). */
/* mcpactord: flags, start and stop order. Main thread.
 *
 * Start: registry (toolsets, plugins) -> store -> workers -> tool pool -> HTTP -> admin.
 * Stop (SIGTERM/SIGINT): HTTP stops accepting and ends its streams -> every job is cancelled
 * -> the tool pool drains -> workers drain (results reach the store) -> store flushed and
 * closed. A watchdog ends the process if a handler ignores cancellation past the deadline:
 * everything committed is in RocksDB's write-ahead log by then.
 */
#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/jti.h"
#include "actor/shardmove.h"
#include "actor/worker.h"
#include "core/config.h"
#include "core/blockcache.h"
#include "core/log.h"
#include "core/principal.h"
#include "core/stats.h"
#include "core/util.h"
#include "admin/admin.h"
#include "gateway/gateway.h"
#include "gateway/upstream.h"
#include "mcp/mcp.h"
#include "toolsets/toolsets.h"
#include "core/auth.h"
#include "core/authz.h"
#include "core/dpop.h"
#include "core/issuer.h"
#include "http/oauth.h"
#include "http/server.h"
#include "store/sessionrec.h"
#include "store/store.h"
#include "actor/job.h"
#include "mcp/registry.h"

#include <errno.h>
#include <event2/thread.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#define SHUTDOWN_DEADLINE_S 4

static void *watchdog(void *arg)
{
    (void)arg;
    sleep(SHUTDOWN_DEADLINE_S);
    log_error("shutdown did not finish in %d s (a tool handler ignores cancellation); exiting now",
              SHUTDOWN_DEADLINE_S);
    _exit(0);
    return NULL;
}

/* The built-in toolsets by name (--toolset). */
static const struct {
    const char *name;
    int (*fn)(mcpd_registry_t *);
} TOOLSETS[] = {
    {"demo", toolset_demo_register},
    {"conformance", toolset_conformance_register},
};

static int toolset_register(mcpd_registry_t *reg, const char *name)
{
    for (size_t i = 0; i < sizeof TOOLSETS / sizeof TOOLSETS[0]; i++) {
        if (strcmp(TOOLSETS[i].name, name) == 0) {
            int rc = TOOLSETS[i].fn(reg);
            if (rc != 0)
                log_error("toolset %s failed to register (%d)", name, rc);
            return rc == 0 ? 0 : -1;
        }
    }
    log_error("unknown toolset '%s' (available: demo, conformance)", name);
    return -1;
}

/* The OAuth resource server (--auth-issuer): the scopes each tool needs (its own, then
 * --auth-tool-scope), the resource and its metadata, and the auth thread's first key fetch
 * (not waited for: requests with a JWT get 503 until it lands). port: the bound port, for the
 * default resource. 0, or -1 after logging why. */
static int oauth_setup(const mcpd_registry_t *reg, int port)
{
    for (size_t i = 0; i < reg->n_tools; i++)
        if (reg->tools[i].scopes &&
            authz_set_tool_scopes(reg->tools[i].name, reg->tools[i].scopes) != 0) {
            log_error("tool %s declares malformed scopes '%s' (RFC 6749 scope characters, %d "
                      "at most each)",
                      reg->tools[i].name, reg->tools[i].scopes, AUTHZ_SCOPE_MAX);
            return -1;
        }
    for (int i = 0; i < g_cfg.n_auth_tool_scopes; i++) {
        const char *v = g_cfg.auth_tool_scopes[i], *eq = strchr(v, '=');
        char tool[256];
        snprintf(tool, sizeof tool, "%.*s", (int)(eq - v), v);
        if (!registry_find_tool(reg, tool))
            log_warn("--auth-tool-scope %s: no tool %s is registered", v, tool);
        if (authz_set_tool_scopes(tool, eq + 1) != 0) {
            log_error("--auth-tool-scope %s: malformed scopes (RFC 6749 scope characters, %d at "
                      "most each)",
                      v, AUTHZ_SCOPE_MAX);
            return -1;
        }
    }
    char why[600];
    if (authz_configure(g_cfg.auth_issuer, g_cfg.auth_resource, g_cfg.auth_scopes,
                        g_cfg.auth_required_scope, g_cfg.auth_leeway, g_cfg.listen_host, port, why,
                        sizeof why) != 0) {
        log_error("authorization: %s", why);
        return -1;
    }
    g_authz.introspection_cache = g_cfg.auth_introspection_cache;
    g_authz.fetch_timeout = g_cfg.auth_fetch_timeout; /* before issuer_start's first fetch */
    if ((g_cfg.auth_introspect[0] &&
         issuer_introspect_setup(g_cfg.auth_introspect, why, sizeof why) != 0) ||
        (g_authz.on && issuer_start(g_authz.issuer, why, sizeof why) != 0)) {
        log_error("authorization: %s", why);
        return -1;
    }
    if (g_authz.on) {
        log_info("authorization: access tokens of %s for %s (metadata at %s)", g_authz.issuer,
                 g_authz.resource, g_authz.prm_url);
        if (!issuer_wait(3000))
            log_warn("authorization: no signing keys from %s yet; requests with a JWT get 503 "
                     "until a fetch succeeds (each such request asks for one, at most every "
                     "%d s)",
                     g_authz.issuer, ISSUER_COOLDOWN_EMPTY_MS / 1000);
    }
    return 0;
}

/* The store accepts writes again after refusing them: alarms whose handling was refused in
 * the meantime are below the scheduler's floor; an early hint makes it look at them again. */
static void on_store_writable(void)
{
    alarms_hint(1);
}

/* Stops everything that runs, in the order that loses nothing: open streams end and requests
 * are answered first; the HTTP loops keep running until the tool pool has drained, since
 * co-located workers live on them. */
static void stop_runtime(bool colocated)
{
    /* first: a shard move in progress (on the admin thread) finishes while the workers run */
    admin_stop();
    workers_end_listens(); /* their closing results go out before the streams end */
    http_quiesce();
    issuer_stop(); /* requests parked for it end with their connections (http_free) */
    alarms_stop();
    workers_cancel_all();
    pool_stop();
    if (!colocated)
        workers_stop();
    http_stop();
    if (colocated)
        workers_stop();
    alarms_free();
    http_free();
}

/* The admin listener's shard steps (admin cannot reach the actor layer: main wires them). */
static void shard_req_of(const admin_shard_req_t *in, shard_req_t *out)
{
    *out = (shard_req_t){.shard = in->shard, .epoch = (uint32_t)in->epoch, .force = in->force};
    snprintf(out->peer, sizeof out->peer, "%s", in->peer);
}

/* POST /shards/release: its actors get up to 10 s to finish their turns */
static int step_release(const admin_shard_req_t *in, json_t **report, char *why, size_t whylen)
{
    shard_req_t rq;
    shard_req_of(in, &rq);
    return shard_release(&rq, 10000, report, why, whylen);
}

#define STEP(name)                                                                                 \
    static int step_##name(const admin_shard_req_t *in, json_t **report, char *why, size_t whylen) \
    {                                                                                              \
        shard_req_t rq;                                                                            \
        shard_req_of(in, &rq);                                                                     \
        return shard_##name(&rq, report, why, whylen);                                             \
    }
STEP(adopt)
STEP(reclaim)
STEP(decline)
STEP(finish)
STEP(bootstrap)
#undef STEP

/* What start-up made, for the steps after it and the teardown. */
typedef struct {
    mcpd_registry_t *reg;
    store_t *store;
    bool http_bound; /* http_init ran: a failed start frees its loops */
    bool colocated;  /* --workers 0: the actors run on the HTTP threads */
    int nworkers;
    int port, admin_port;
} node_t;

/* The connections that may be far behind their SSE reader at once (http/backlog.c): each may
 * hold up to --sse-buffer unsent, so --sse-backlog bounds what they hold together. */
static int64_t sse_backlog_places(void)
{
    int64_t n = g_cfg.sse_backlog / g_cfg.sse_buffer;
    return n < 1 ? 1 : n;
}

/* The global caps the principals' shares are taken of (core/principal.h). */
static void configure_caps(void)
{
    const int64_t caps[PR__COUNT] = {[PR_SESSIONS] = g_cfg.max_sessions,
                                     [PR_HANDLES] = g_cfg.max_handles,
                                     [PR_TASKS] = g_cfg.max_tasks,
                                     [PR_RECORDS] = g_cfg.max_input_records,
                                     [PR_CONNECTIONS] = g_cfg.max_connections,
                                     [PR_UPSTREAMS] = g_cfg.upstream_max,
                                     [PR_SSE_BACKLOG] = sse_backlog_places(),
                                     [PR_AUTH_WAITS] = OAUTH_PARKED_MAX * g_cfg.http_threads <
                                                               ISSUER_WAITS_MAX
                                                           ? OAUTH_PARKED_MAX * g_cfg.http_threads
                                                           : ISSUER_WAITS_MAX};
    principals_configure(caps, (int)g_cfg.principal_share);
}

/* Descriptors the process needs besides its client connections: those open once its threads
 * and store have started (its loops and their eventfds, the listeners, the logs, the store's
 * logs and the table files open so far), FD_RESERVE_MORE for what opens later (the admin
 * listener, cluster peers, key fetches, a shard move's files), the store's table files (its
 * budget, counted whole though some are open already) and the gateway's processes (three pipes
 * and a pidfd each). Past that, fewer than FD_FIT_FLOOR connections is no server: it does not
 * start. */
#define FD_RESERVE_MORE 64
#define FD_PER_UPSTREAM 4
#define FD_FIT_FLOOR 16

/* Descriptors open now, or -1. */
static int64_t fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int64_t n = -1; /* the directory's own */
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* The soft RLIMIT_NOFILE (Debian's default: 1024) goes up to the hard limit: every client
 * connection holds a descriptor from its accept. The store's table files may then take a
 * quarter of it (the rest is the connections' and the process's own). */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (was != rl.rlim_max && setrlimit(RLIMIT_NOFILE, &rl) != 0)
        log_warn("cannot raise RLIMIT_NOFILE from %llu to its hard limit: %s",
                 (unsigned long long)was, strerror(errno));
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        store_set_open_files_budget((int64_t)(rl.rlim_cur / 4));
}

/* Up to twice --max-connections are open at once (there the listeners stop accepting:
 * http/gate.c; threads accepting at the same moment may each take one past it: the reserve
 * counts one per HTTP thread for those), so they and the reserve must fit in RLIMIT_NOFILE, raised to
 * its hard limit already: when they do not, --max-connections is lowered until they do. Else a
 * client holding idle connections could use up the descriptors, and accept() would fail for
 * every client. Run once the threads and the store have started, before the listeners serve.
 * parts: the store's partitions. Returns -1 when too few connections would fit. */
static int fit_connections_to_fds(int parts)
{
    struct rlimit rl;
    int64_t open_now = fds_open();
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || open_now < 0)
        return 0;
    int64_t have = (int64_t)rl.rlim_cur;
    int64_t gateway = g_cfg.n_upstreams > 0 ? FD_PER_UPSTREAM * g_cfg.upstream_max : 0;
    int64_t store = (int64_t)parts * store_open_files_per_part(parts);
    int64_t reserve = open_now + FD_RESERVE_MORE + g_cfg.http_threads + store + gateway;
    if (2 * g_cfg.max_connections + reserve <= have)
        return 0;
    int64_t fit = (have - reserve) / 2;
    if (fit < FD_FIT_FLOOR) {
        log_error("RLIMIT_NOFILE is %lld: with %lld descriptors open already and %lld for the "
                  "store's table files and the gateway, fewer than %d client connections fit. "
                  "Raise the hard limit (`ulimit -Hn`, systemd's LimitNOFILE=) or run fewer "
                  "threads or --upstream-max (or fewer --store-partitions for a new data "
                  "directory: an existing one keeps its count)",
                  (long long)have, (long long)open_now, (long long)(store + gateway), FD_FIT_FLOOR);
        return -1;
    }
    log_warn("RLIMIT_NOFILE is %lld (raised to its hard limit at start; raise that with "
             "`ulimit -Hn` or systemd's LimitNOFILE=): twice --max-connections and %lld "
             "descriptors for the rest of the "
             "process (%d for the store's %d partition(s), %lld for the gateway's processes) do "
             "not fit. --max-connections %lld is lowered to %lld, so that client connections "
             "cannot use up the descriptors",
             (long long)have, (long long)reserve, (int)store, parts, (long long)gateway,
             (long long)g_cfg.max_connections, (long long)fit);
    g_cfg.max_connections = fit;
    configure_caps();
    return 0;
}

/* Process-wide settings before any thread starts. The stop signals are blocked in every thread
 * (each inherits the mask); the main thread alone takes them, in sigwait. */
static void process_setup(sigset_t *stopset)
{
    g_log_level = (log_level_t)g_cfg.log_level;
    configure_caps();
    raise_fd_limit();
    /* Blocks of 512 KiB and more (RocksDB's memtable arena blocks, up to 8 store partitions)
     * stay mmapped, so a flushed memtable goes back to the kernel. Left alone, glibc raises
     * this threshold after the first large free and later memtables stay resident after their
     * flush (seen in the soak). The trims after a burst (blockcache_give_back) rely on blocks
     * of 128 KiB staying in the arenas. */
    mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD);
    g_stats_started_ms = now_mono_ms();
    evthread_use_pthreads();
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(stopset);
    sigaddset(stopset, SIGTERM);
    sigaddset(stopset, SIGINT);
    pthread_sigmask(SIG_BLOCK, stopset, NULL);
}

/* --auth-tokens and --admin-token. 0, or 2 (a file named by a flag that cannot be used is a
 * bad flag). */
static int load_tokens(void)
{
    char aerr[512];
    if ((g_cfg.auth_tokens[0] && auth_load(&g_auth, g_cfg.auth_tokens, aerr, sizeof aerr) != 0) ||
        (g_cfg.admin_token[0] &&
         auth_load(&g_admin_auth, g_cfg.admin_token, aerr, sizeof aerr) != 0)) {
        log_error("authentication: %s", aerr);
        return 2;
    }
    if (g_auth.n)
        log_info("authentication on: %zu tokens from %s", g_auth.n, g_cfg.auth_tokens);
    return 0;
}

/* The tools: --toolset (exit 2 when unknown) and --plugin (exit 1 when it fails to load). */
static int load_tools(node_t *n)
{
    n->reg = registry_new();
    for (int i = 0; i < g_cfg.n_toolsets; i++)
        if (toolset_register(n->reg, g_cfg.toolsets[i]) != 0)
            return 2;
    for (int i = 0; i < g_cfg.n_plugins; i++)
        if (plugin_load(n->reg, g_cfg.plugins[i]) != 0)
            return 1;
    return 0;
}

/* The store, and which shards this node serves: its durable records against the cluster file. */
static int open_store(node_t *n)
{
    char err[512];
    int parts = (int)g_cfg.store_partitions;
    n->store = store_open_parts(g_cfg.data_dir, g_cfg.sync, g_cfg.min_free_space, &parts, err,
                                sizeof err);
    if (!n->store) {
        log_error("%s", err);
        struct rlimit rl;
        if (strstr(err, "Too many open files") && getrlimit(RLIMIT_NOFILE, &rl) == 0)
            log_error("RLIMIT_NOFILE is %lld: too few descriptors for the store alone (each "
                      "partition holds about 13 besides its table files). Raise the hard limit "
                      "(`ulimit -Hn`, systemd's LimitNOFILE=)",
                      rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur);
        return 1;
    }
    if (g_cfg.store_partitions && parts != g_cfg.store_partitions)
        log_warn("store: %s holds %d partition(s), set when it was created; "
                 "--store-partitions %d applies to a new data directory only",
                 g_cfg.data_dir, parts, (int)g_cfg.store_partitions);
    else if (parts > 1)
        log_info("store: %d partitions, each with its own write path", parts);
    store_on_writable(n->store, on_store_writable); /* before any thread may write */
    char move_dir[1100];
    if (g_cfg.move_dir[0])
        snprintf(move_dir, sizeof move_dir, "%s", g_cfg.move_dir);
    else
        snprintf(move_dir, sizeof move_dir, "%s/moves", g_cfg.data_dir);
    return shardmove_init(n->store, move_dir) != 0 ? 1 : 0;
}

/* The HTTP loops, bound but not running (co-located workers run on them), and the OAuth
 * resource server, whose default resource names the bound port. */
static int bind_http(node_t *n)
{
    if (http_init(g_cfg.http_threads, g_cfg.listen_host, g_cfg.listen_port, &n->port) != 0)
        return 1;
    return oauth_setup(n->reg, n->port) != 0 ? 2 : 0;
}

/* The protocol layer, and with --modern the key of the requestState tokens. */
static int start_protocol(node_t *n)
{
    mcp_init(n->reg);
    if (!g_cfg.modern)
        return 0;
    char keyfile[1100];
    if (g_cfg.request_state_key[0])
        snprintf(keyfile, sizeof keyfile, "%s", g_cfg.request_state_key);
    else
        snprintf(keyfile, sizeof keyfile, "%s/request-state.key", g_cfg.data_dir);
    return modern_state_key_init(keyfile, g_cfg.request_state_ttl_s * 1000) != 0 ? 1 : 0;
}

/* What the store holds before the first request: the gauges, each principal's share of
 * --max-sessions, --max-handles and --max-tasks, the calls a crash interrupted (answered), the
 * DPoP replay cache, then the alarms. -EIO when a read error stopped one of their scans: a
 * partial result would be taken for the whole (counts and shares short, interrupted requests
 * never answered). A read error of one session's own records (its wake for the recovery) is
 * that session's, answered 503 at its requests: not this. */
static int recover_state(node_t *n)
{
    uint64_t stored[STORED__KINDS] = {0};
    if (actors_account_stored(n->store, NULL, 0, 1, stored) != 0)
        return -EIO;
    STAT_SET(sessions_stored, (long long)stored[STORED_SESSION]);
    STAT_SET(input_records_stored, (long long)stored[STORED_RECORD]);
    STAT_SET(handles_stored, (long long)stored[STORED_HANDLE]);
    STAT_SET(tasks_stored, (long long)stored[STORED_TASK]);
    log_info("store: %lld sessions in %s", (long long)STAT_GET(sessions_stored), g_cfg.data_dir);
    long interrupted = actors_recover_all(n->store);
    if (interrupted < 0)
        return -EIO;
    if (interrupted)
        log_info("recovery: %ld requests were in flight when the process stopped", interrupted);
    if (n->colocated)
        workers_drain_now(); /* their loops are not running yet: recovery goes first */
    if (g_authz.on) {        /* its keys from before a restart, its sweep on the alarm thread */
        if (jti_open(n->store, DPOP_MAX_AGE_S + g_authz.leeway, g_cfg.auth_dpop_jti_max,
                     (int)g_cfg.principal_share) != 0)
            return -EIO;
        alarms_node_fn(jti_sweep);
    }
    return alarms_start(n->store) == -EIO ? -EIO : 0;
}

/* The HTTP threads start. When one cannot, the process exits at once: co-located workers
 * live on the loops, and the stop waits for turns on every one (on a loop that never ran, for
 * ever); the threads that run leave no orderly teardown. */
static void run_http_loops(void)
{
    if (http_run() != 0) {
        log_error("cannot start the HTTP threads");
        _exit(1);
    }
}

/* The HTTP loops run and the admin listener opens (with the shard steps main wires in). */
static int start_serving(node_t *n)
{
    admin_shard_ops_t shard_ops = {.release = step_release,
                                   .adopt = step_adopt,
                                   .reclaim = step_reclaim,
                                   .decline = step_decline,
                                   .finish = step_finish,
                                   .bootstrap = step_bootstrap,
                                   .summary = shardmove_summary,
                                   .record = shardmove_record,
                                   .export_path = shardmove_export_path};
    admin_set_shard_ops(&shard_ops);
    run_http_loops();
    if (g_cfg.admin_enabled &&
        admin_start(g_cfg.admin_host, g_cfg.admin_port, n->store, &n->admin_port) != 0) {
        stop_runtime(n->colocated);
        return 1;
    }
    return 0;
}

static void log_ready(const node_t *n)
{
    char toolsets[256] = "";
    for (int i = 0; i < g_cfg.n_toolsets; i++)
        snprintf(toolsets + strlen(toolsets), sizeof toolsets - strlen(toolsets), "%s%s",
                 i ? "," : "", g_cfg.toolsets[i]);
    const char *h = g_cfg.listen_host;
    bool v6 = strchr(h, ':') != NULL;
    char workers[64];
    if (n->colocated)
        snprintf(workers, sizeof workers, "actors on the HTTP threads");
    else
        snprintf(workers, sizeof workers, "%d workers", n->nworkers);
    log_info("mcpactord %s listening on http://%s%s%s:%d/mcp (data %s, toolsets %s, %d http, %s, "
             "%d tool threads)",
             MCPD_VERSION, v6 ? "[" : "", h, v6 ? "]" : "", n->port, g_cfg.data_dir, toolsets,
             g_cfg.http_threads, workers, g_cfg.tool_threads);
    if (g_cfg.admin_enabled)
        log_info("admin listening on http://%s:%d (/healthz, /stats, /metrics)", g_cfg.admin_host,
                 n->admin_port);
    /* a machine-readable line for scripts and tests */
    printf("READY port=%d admin_port=%d\n", n->port, n->admin_port);
    fflush(stdout);
}

/* A start that failed before anything ran: what was made is freed. */
static int start_failed(node_t *n, int exit_code)
{
    if (n->http_bound)
        http_free();
    issuer_stop();
    authz_free();
    auth_free(&g_auth);
    auth_free(&g_admin_auth);
    store_close(n->store);
    registry_free(n->reg);
    gateway_free();
    config_free(&g_cfg);
    return exit_code;
}

/* A start refused once the threads run (too few descriptors): nothing was served. The HTTP
 * loops run, their listeners closed, for the stop in its usual order (stop_runtime), which
 * co-located workers need. */
static int refuse_start(node_t *n)
{
    http_unlisten();
    run_http_loops();
    stop_runtime(n->colocated);
    return start_failed(n, 1);
}

/* The workers' loops have stopped: no upstream process outlives them. */
static void kill_upstreams(void)
{
    int n = upstream_kill_all();
    gateway_free_detached();
    if (n)
        log_info("gateway: %d upstream processes killed at shutdown", n);
}

/* SIGTERM or SIGINT: everything stops in the order of the file comment. */
static int shut_down(node_t *n)
{
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, NULL);
    pthread_detach(wd);
    stop_runtime(n->colocated);
    jti_close();
    store_flush(n->store);
    store_close(n->store);
    registry_free(n->reg);
    issuer_stop();
    http_oauth_free();
    authz_free();
    auth_free(&g_auth);
    auth_free(&g_admin_auth);
    gateway_free();
    config_free(&g_cfg);
    log_info("stopped");
    return 0;
}

int main(int argc, char **argv)
{
    blockcache_init(); /* before any jansson value and any other libevent call */
    config_defaults(&g_cfg);
    int rc = config_parse(&g_cfg, argc, argv);
    if (rc != 0) {
        config_free(&g_cfg);
        return rc == 1 ? 0 : 2;
    }
    sigset_t stopset;
    process_setup(&stopset);
    if ((rc = load_tokens()) != 0 || (rc = gateway_setup()) != 0) {
        gateway_free();
        config_free(&g_cfg);
        return rc;
    }
    node_t n = {.colocated = g_cfg.workers == 0};
    n.nworkers = n.colocated ? g_cfg.http_threads : g_cfg.workers;
    if ((rc = load_tools(&n)) != 0 || (rc = open_store(&n)) != 0)
        return start_failed(&n, rc);
    n.http_bound = true; /* http_free is safe after a failed http_init too */
    if ((rc = bind_http(&n)) != 0 || (rc = start_protocol(&n)) != 0)
        return start_failed(&n, rc);
    struct event_base *hosts[64];
    for (int i = 0; n.colocated && i < g_cfg.http_threads; i++)
        hosts[i] = http_base(i);
    workers_on_stopped(kill_upstreams);
    if (workers_start(n.nworkers, n.store, gateway_actor_ops(mcp_actor_ops()), http_deliver,
                      g_cfg.http_threads, n.colocated ? hosts : NULL) != 0 ||
        pool_start(g_cfg.tool_threads) != 0) {
        log_error("cannot start threads");
        return 1; /* threads may be running: no orderly teardown from here */
    }
    rc = recover_state(&n);
    n.http_bound = false; /* from here stop_runtime frees the loops */
    if (rc != 0) {
        log_error("store: a startup scan stopped on a read error (above): the stored counts, "
                  "shares, in-flight requests or DPoP replay cutoff would be wrong, so the server "
                  "does not start. "
                  "The disk of --data-dir failed a read or a table file is damaged: check the "
                  "disk (dmesg, smartctl), then restore --data-dir from a backup, or move the "
                  "damaged directory aside (a new one starts empty)");
        return refuse_start(&n);
    }
    if (fit_connections_to_fds(store_partitions(n.store)) != 0)
        return refuse_start(&n);
    if ((rc = start_serving(&n)) != 0)
        return start_failed(&n, rc);
    log_ready(&n);
    int sig = 0;
    sigwait(&stopset, &sig);
    log_info("received %s: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    return shut_down(&n);
}
