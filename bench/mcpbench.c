/* mcpbench: a load generator for MCP Streamable HTTP servers. Main thread only (one event loop).
 *
 * usage: mcpbench SCENARIO [options] URL
 * See --help, and bench/README.md for what each scenario measures and how to read the figures.
 */
#include "mb_scen.h"

#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: mcpbench SCENARIO [options] URL\n"
    "\n"
    "Load generator for MCP Streamable HTTP servers (HTTP/1.1 keep-alive, JSON or SSE responses).\n"
    "\n"
    "scenarios:\n"
    "  call        tools/call echo {text} on S sessions over C connections; OK = 200 + echoed text,\n"
    "              no isError\n"
    "  call-modern the same call in the stateless 2026-07-28 era: no initialize, no session; each\n"
    "              request with params._meta and MCP-Protocol-Version, Mcp-Method, Mcp-Name\n"
    "  handshake   initialize + notifications/initialized + DELETE per session, C in parallel\n"
    "  sessions    create N sessions (no DELETE); server RSS before/after -> bytes per session\n"
    "  streams     N standalone GET streams; a notify call per session; call -> event latency\n"
    "  resume      store K events with no stream attached, GET with Last-Event-ID, time to K-th\n"
    "  wake        N sessions, idle --settle s (server hibernates them), then one ping each\n"
    "  mixed       weighted mix of call/handshake/stream/resume operations at --rate\n"
    "\n"
    "bounds and load:\n"
    "  --duration SECS        measured time (default 10; with --requests alone: no time bound)\n"
    "  --requests N           stop after N operations (calls, handshakes, resumes...)\n"
    "  --connections C        parallel connections (default: call 32, resume 1, others 8, mixed 16)\n"
    "  --sessions S           sessions (call 1, sessions/wake 1000, streams 100, mixed 4 + C)\n"
    "  --rate R               open loop: R operations/s, latency counted from when each was due\n"
    "  --timeout SECS         per operation (default 10)\n"
    "  --warmup SECS          call: unmeasured load before the measured run (default 0)\n"
    "  --settle SECS          sessions: read RSS again after SECS; wake: idle time (default 3)\n"
    "  --save-sessions FILE   wake: create --sessions sessions, write their ids to FILE, stop\n"
    "                         (no settle, no pings): the first half of a wake after a restart\n"
    "  --load-sessions FILE   wake: no setup; wake --sessions ids drawn at random (--seed) from\n"
    "                         FILE, each once, then ping them again warm\n"
    "  --seed N               --load-sessions: the random draw (default 1)\n"
    "  --sticky               call: each connection keeps to its own sessions (session i is set\n"
    "                         up and called on connection i % C, as one client per session\n"
    "                         would); needs S >= C. Default: any session on any connection\n"
    "scenario settings:\n"
    "  --text TEXT            echo text (default hello-bench)\n"
    "  --call-tool NAME       call: the tool (default echo); --call-arg NAME: the argument that\n"
    "                         carries TEXT (default text). OK = the answer holds TEXT (e.g.\n"
    "                         server-everything: --call-tool echo --call-arg message)\n"
    "  --stats-url URL        JSON with rss_bytes (mcpactord admin /stats) or rss (Node)\n"
    "  --pid PID              read the server's RSS from /proc/PID/status instead\n"
    "  --notify-tool NAME     tool that makes session-level notifications (default notify)\n"
    "  --notify-args JSON     its arguments (default {\"count\":1,\"target\":\"session\"});\n"
    "                         for the SDK peer: --notify-tool emit --notify-args\n"
    "                         '{\"count\":1,\"standalone\":true}'\n"
    "  --events K             resume: events per resume (default 256; mixed 16); sessions:\n"
    "                         store K events on each new session with the notify tool (default 0)\n"
    "  --resume-via get|post  resume the standalone GET stream (default) or a finished POST stream\n"
    "  --resume-first MODE    auto|priming|notify: how the first event id is obtained (default auto)\n"
    "  --resume-args JSON     arguments of the producing call (default: notify args with count K)\n"
    "  --mix SPEC             mixed weights (default call=70,handshake=10,stream=10,resume=10)\n"
    "  --protocol-version V   MCP protocol version (default 2025-11-25; call-modern 2026-07-28)\n"
    "  --header 'NAME: VALUE' a header on every request, repeatable (e.g. 'Authorization: Bearer\n"
    "                         TOKEN' against a server with --auth-tokens or --auth-issuer)\n";
/* in two parts: C11 compilers need not take a string of more than 4095 characters */
static const char usage_more[] =
    "comparison and output:\n"
    "  --compare URL2         run the same scenario against URL2 afterwards; print URL/URL2 ratios\n"
    "  --label NAME, --label2 NAME            names in the report (default: the URLs)\n"
    "  --stats-url2, --pid2, --notify-tool2, --notify-args2   the same, for URL2\n"
    "  --json                 one JSON line per result (and one per comparison)\n"
    "  --quiet                no progress line, no notes on stderr\n"
    "  --max-errors PCT       exit 1 when errors exceed PCT%% of operations (default 1)\n"
    "  --allow-remote         allow targets other than 127.0.0.1, localhost, ::1\n"
    "  --help, --version\n"
    "\n"
    "exit status: 0 success; 1 errors above --max-errors, or the run could not start; 2 bad usage\n";

enum {
    O_DURATION = 256,
    O_REQUESTS,
    O_CONNECTIONS,
    O_SESSIONS,
    O_RATE,
    O_TIMEOUT,
    O_WARMUP,
    O_SETTLE,
    O_TEXT,
    O_CTOOL,
    O_CARG,
    O_STATS,
    O_STATS2,
    O_PID,
    O_PID2,
    O_NTOOL,
    O_NTOOL2,
    O_NARGS,
    O_NARGS2,
    O_EVENTS,
    O_RVIA,
    O_RFIRST,
    O_RARGS,
    O_MIX,
    O_PV,
    O_COMPARE,
    O_LABEL,
    O_LABEL2,
    O_JSON,
    O_QUIET,
    O_MAXERR,
    O_REMOTE,
    O_HELP,
    O_VERSION,
    O_SAVESESS,
    O_LOADSESS,
    O_SEED,
    O_HEADER,
    O_STICKY,
};

static const struct option long_opts[] = {
    {"duration", required_argument, NULL, O_DURATION},
    {"header", required_argument, NULL, O_HEADER},
    {"requests", required_argument, NULL, O_REQUESTS},
    {"connections", required_argument, NULL, O_CONNECTIONS},
    {"sessions", required_argument, NULL, O_SESSIONS},
    {"rate", required_argument, NULL, O_RATE},
    {"timeout", required_argument, NULL, O_TIMEOUT},
    {"warmup", required_argument, NULL, O_WARMUP},
    {"settle", required_argument, NULL, O_SETTLE},
    {"text", required_argument, NULL, O_TEXT},
    {"call-tool", required_argument, NULL, O_CTOOL},
    {"call-arg", required_argument, NULL, O_CARG},
    {"stats-url", required_argument, NULL, O_STATS},
    {"stats-url2", required_argument, NULL, O_STATS2},
    {"pid", required_argument, NULL, O_PID},
    {"pid2", required_argument, NULL, O_PID2},
    {"notify-tool", required_argument, NULL, O_NTOOL},
    {"notify-tool2", required_argument, NULL, O_NTOOL2},
    {"notify-args", required_argument, NULL, O_NARGS},
    {"notify-args2", required_argument, NULL, O_NARGS2},
    {"events", required_argument, NULL, O_EVENTS},
    {"resume-via", required_argument, NULL, O_RVIA},
    {"resume-first", required_argument, NULL, O_RFIRST},
    {"resume-args", required_argument, NULL, O_RARGS},
    {"mix", required_argument, NULL, O_MIX},
    {"protocol-version", required_argument, NULL, O_PV},
    {"compare", required_argument, NULL, O_COMPARE},
    {"label", required_argument, NULL, O_LABEL},
    {"label2", required_argument, NULL, O_LABEL2},
    {"json", no_argument, NULL, O_JSON},
    {"quiet", no_argument, NULL, O_QUIET},
    {"max-errors", required_argument, NULL, O_MAXERR},
    {"allow-remote", no_argument, NULL, O_REMOTE},
    {"save-sessions", required_argument, NULL, O_SAVESESS},
    {"load-sessions", required_argument, NULL, O_LOADSESS},
    {"seed", required_argument, NULL, O_SEED},
    {"sticky", no_argument, NULL, O_STICKY},
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {NULL, 0, NULL, 0},
};

typedef int (*scen_fn)(const mb_cfg_t *, const mb_peer_t *, mb_result_t *);

static const struct {
    const char *name;
    scen_fn fn;
    int connections, sessions;
} scenarios[] = {
    {"call", mb_scen_call, 32, 1},          {"call-modern", mb_scen_call, 32, 0},
    {"handshake", mb_scen_handshake, 8, 0}, {"sessions", mb_scen_sessions, 8, 1000},
    {"streams", mb_scen_streams, 8, 100},   {"resume", mb_scen_resume, 1, 1},
    {"wake", mb_scen_wake, 8, 1000},        {"mixed", mb_scen_mixed, 16, 4},
};

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "mcpbench: %s%s (mcpbench --help)\n", what, arg);
    return 2;
}

static int num_arg(const char *name, const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < min || v > max) {
        fprintf(stderr, "mcpbench: --%s: bad value '%s' (mcpbench --help)\n", name, s);
        return -1;
    }
    *out = v;
    return 0;
}

static bool valid_json_object(const char *s)
{
    json_t *o = json_loads(s, 0, NULL);
    bool ok = json_is_object(o);
    json_decref(o);
    return ok;
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        fputs(usage_more, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, stdout);
        fputs(usage_more, stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("mcpbench %s\n", MB_VERSION);
        return 0;
    }
    int si = -1;
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (strcmp(argv[1], scenarios[i].name) == 0)
            si = (int)i;
    if (si < 0)
        return usage_error("unknown scenario: ", argv[1]);

    mb_cfg_t c;
    memset(&c, 0, sizeof c);
    c.seed = 1;
    c.scenario = scenarios[si].name;
    c.duration_s = -1;
    c.connections = -1;
    c.sessions = -1;
    c.timeout_s = 10;
    c.settle_s = -1;
    c.events = -1;
    c.resume_via = "get";
    c.resume_first = "auto";
    c.mix = "call=70,handshake=10,stream=10,resume=10";
    c.text = "hello-bench";
    c.call_tool = "echo";
    c.call_arg = "text";
    c.modern = strcmp(c.scenario, "call-modern") == 0;
    c.pv = c.modern ? "2026-07-28" : "2025-11-25";
    c.max_error_pct = 1.0;
    c.rate = -1;
    const char *compare = NULL, *stats[2] = {NULL, NULL}, *ntool[2] = {NULL, NULL},
               *nargs[2] = {NULL, NULL}, *label[2] = {NULL, NULL};
    int pid[2] = {0, 0};

    optind = 2;
    int opt;
    double v;
    while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        const char *name = "";
        for (const struct option *o = long_opts; o->name; o++)
            if (o->val == opt)
                name = o->name;
        switch (opt) {
        case O_DURATION:
            if (num_arg(name, optarg, 0.001, 86400, &c.duration_s))
                return 2;
            break;
        case O_REQUESTS:
            if (num_arg(name, optarg, 1, 1e12, &v))
                return 2;
            c.requests = (int64_t)v;
            break;
        case O_CONNECTIONS:
            if (num_arg(name, optarg, 1, 100000, &v))
                return 2;
            c.connections = (int)v;
            break;
        case O_SESSIONS:
            if (num_arg(name, optarg, 1, 10000000, &v))
                return 2;
            c.sessions = (int)v;
            break;
        case O_RATE:
            if (num_arg(name, optarg, 0, 1e7, &c.rate))
                return 2;
            break;
        case O_TIMEOUT:
            if (num_arg(name, optarg, 0.001, 3600, &c.timeout_s))
                return 2;
            break;
        case O_WARMUP:
            if (num_arg(name, optarg, 0, 3600, &c.warmup_s))
                return 2;
            break;
        case O_SETTLE:
            if (num_arg(name, optarg, 0, 3600, &c.settle_s))
                return 2;
            break;
        case O_EVENTS:
            if (num_arg(name, optarg, 1, 1000000, &v))
                return 2;
            c.events = (int)v;
            break;
        case O_MAXERR:
            if (num_arg(name, optarg, 0, 100, &c.max_error_pct))
                return 2;
            break;
        case O_PID:
        case O_PID2:
            if (num_arg(name, optarg, 1, 1e9, &v))
                return 2;
            pid[opt == O_PID2] = (int)v;
            break;
        case O_TEXT:
            c.text = optarg;
            break;
        case O_CTOOL:
            c.call_tool = optarg;
            break;
        case O_CARG:
            c.call_arg = optarg;
            break;
        case O_STATS:
            stats[0] = optarg;
            break;
        case O_STATS2:
            stats[1] = optarg;
            break;
        case O_NTOOL:
            ntool[0] = optarg;
            break;
        case O_NTOOL2:
            ntool[1] = optarg;
            break;
        case O_NARGS:
        case O_NARGS2:
            if (!valid_json_object(optarg))
                return usage_error("--notify-args: not a JSON object: ", optarg);
            nargs[opt == O_NARGS2] = optarg;
            break;
        case O_RARGS:
            if (!valid_json_object(optarg))
                return usage_error("--resume-args: not a JSON object: ", optarg);
            c.resume_args = optarg;
            break;
        case O_RVIA:
            if (strcmp(optarg, "get") != 0 && strcmp(optarg, "post") != 0)
                return usage_error("--resume-via must be get or post: ", optarg);
            c.resume_via = optarg;
            break;
        case O_RFIRST:
            if (strcmp(optarg, "auto") != 0 && strcmp(optarg, "priming") != 0 &&
                strcmp(optarg, "notify") != 0)
                return usage_error("--resume-first must be auto, priming or notify: ", optarg);
            c.resume_first = optarg;
            break;
        case O_SEED:
            if (num_arg(name, optarg, 0, 4e9, &v))
                return 2;
            c.seed = (unsigned)v;
            break;
        case O_SAVESESS:
            c.save_sessions = optarg;
            break;
        case O_LOADSESS:
            c.load_sessions = optarg;
            break;
        case O_MIX:
            c.mix = optarg;
            break;
        case O_PV:
            c.pv = optarg;
            break;
        case O_HEADER: {
            size_t n = strlen(optarg);
            const char *colon = strchr(optarg, ':');
            if (!colon || colon == optarg || strpbrk(optarg, "\r\n") ||
                mb_extra_headers_len + n + 2 > sizeof mb_extra_headers) {
                fprintf(stderr,
                        "mcpbench: --header wants 'NAME: VALUE' (all of them under %zu "
                        "bytes)\n",
                        sizeof mb_extra_headers);
                return 2;
            }
            memcpy(mb_extra_headers + mb_extra_headers_len, optarg, n);
            memcpy(mb_extra_headers + mb_extra_headers_len + n, "\r\n", 2);
            mb_extra_headers_len += n + 2;
            break;
        }
        case O_COMPARE:
            compare = optarg;
            break;
        case O_LABEL:
            label[0] = optarg;
            break;
        case O_LABEL2:
            label[1] = optarg;
            break;
        case O_JSON:
            c.json = true;
            break;
        case O_QUIET:
            c.quiet = true;
            break;
        case O_REMOTE:
            c.allow_remote = true;
            break;
        case O_STICKY:
            c.sticky = true;
            break;
        case O_HELP:
            fputs(usage_text, stdout);
            fputs(usage_more, stdout);
            return 0;
        case O_VERSION:
            printf("mcpbench %s\n", MB_VERSION);
            return 0;
        default:
            return usage_error("bad option", "");
        }
    }
    if (optind != argc - 1)
        return usage_error(optind >= argc ? "missing URL" : "exactly one URL expected", "");

    if ((c.save_sessions || c.load_sessions) && strcmp(c.scenario, "wake") != 0)
        return usage_error("--save-sessions/--load-sessions: only with wake", "");
    if (c.save_sessions && c.load_sessions)
        return usage_error("--save-sessions and --load-sessions: one or the other", "");
    if (c.modern && c.sessions >= 0)
        return usage_error("--sessions: call-modern has no sessions", "");
    /* per-scenario defaults */
    bool is_mixed = strcmp(c.scenario, "mixed") == 0;
    if (c.connections < 0)
        c.connections = scenarios[si].connections;
    if (c.sessions < 0)
        c.sessions = scenarios[si].sessions;
    if (c.duration_s < 0)
        c.duration_s = c.requests > 0 ? 0 : 10;
    if (c.settle_s < 0)
        c.settle_s = strcmp(c.scenario, "wake") == 0 ? 3 : 0;
    if (c.events < 0)
        c.events = is_mixed ? 16 : strcmp(c.scenario, "sessions") == 0 ? 0 : 256;
    if (c.rate < 0)
        c.rate = is_mixed ? 200 : 0;
    if (c.sessions < 1)
        c.sessions = 1;
    if (c.sticky && (strcmp(c.scenario, "call") != 0 || c.sessions < c.connections))
        return usage_error("--sticky: only with call, and --sessions at least --connections", "");

    c.npeers = compare ? 2 : 1;
    const char *urls[2] = {argv[optind], compare};
    for (int i = 0; i < c.npeers; i++) {
        mb_peer_t *p = &c.peer[i];
        p->url = urls[i];
        p->label = label[i];
        p->stats_url = stats[i] ? stats[i] : (i ? NULL : NULL);
        p->pid = pid[i];
        p->notify_tool = ntool[i] ? ntool[i] : ntool[0] ? ntool[0] : "notify";
        p->notify_args = nargs[i]   ? nargs[i]
                         : nargs[0] ? nargs[0]
                                    : "{\"count\":1,\"target\":\"session\"}";
    }

    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    mb_progress_tty = isatty(STDOUT_FILENO) && !c.quiet && !c.json;
    c.base = mb_event_base_new(c.rate > 0); /* open loop: start each operation when due */
    if (!c.base) {
        fprintf(stderr, "mcpbench: cannot create an event loop\n");
        return 1;
    }
    /* refuse bad or remote URLs before sending anything anywhere */
    for (int i = 0; i < c.npeers; i++) {
        char err[512];
        mb_target_t t;
        if (mb_target_parse(&t, c.base, c.peer[i].url, c.allow_remote, err, sizeof err) != 0) {
            fprintf(stderr, "mcpbench: %s\n", err);
            event_base_free(c.base);
            return 2;
        }
        if (c.peer[i].stats_url && mb_target_parse(&t, c.base, c.peer[i].stats_url, c.allow_remote,
                                                   err, sizeof err) != 0) {
            fprintf(stderr, "mcpbench: --stats-url: %s\n", err);
            event_base_free(c.base);
            return 2;
        }
    }

    mb_result_t *res = mb_xcalloc(2, sizeof *res);
    int exit_code = 0;
    for (int i = 0; i < c.npeers; i++) {
        mb_result_init(&res[i], &c, &c.peer[i]);
        mb_http_counters_t h0 = mb_http_counters;
        scenarios[si].fn(&c, &c.peer[i], &res[i]);
        mb_result_num(&res[i], "tcp_connects", (double)(mb_http_counters.connects - h0.connects));
        mb_result_num(&res[i], "stale_keepalive_retries",
                      (double)(mb_http_counters.reconnect_retries - h0.reconnect_retries));
        mb_report(&c, &res[i]);
        uint64_t errs = mb_result_errors(&res[i]);
        double pct = res[i].ok + errs ? 100.0 * (double)errs / (double)(res[i].ok + errs) : 100.0;
        if (res[i].failed || res[i].ok == 0 || pct > c.max_error_pct)
            exit_code = 1;
        if (!c.json && i + 1 < c.npeers)
            printf("\n");
    }
    if (c.npeers == 2)
        mb_report_compare(&c, &res[0], &res[1]);
    free(res);
    event_base_free(c.base);
    libevent_global_shutdown();
    return exit_code;
}
