/* mcpbench scenarios, their configuration and their results. Main thread only.
 *
 * A scenario runs against one peer (URL plus where to read its RSS and how to make it notify) and
 * fills one mb_result_t; --compare runs it again against a second peer. Phases run one after the
 * other, each in the event loop until it is done: setup (sessions), the measured phase, and for
 * some scenarios a settle time or a second measured pass.
 */
#ifndef MCPBENCH_MB_SCEN_H
#define MCPBENCH_MB_SCEN_H

#include "mb.h"
#include "mb_engine.h"
#include "mb_mcp.h"

#include <jansson.h>

struct event_base;

typedef struct mb_peer {
    const char *url;
    const char *label;
    const char *stats_url;
    int pid;
    const char *notify_tool;
    const char *notify_args;
} mb_peer_t;

typedef struct mb_cfg {
    const char *scenario;
    struct event_base *base;
    double duration_s; /* 0 with requests > 0: bounded by count only */
    int64_t requests;
    int connections;
    int sessions;
    double rate;
    double timeout_s;
    double settle_s;
    double warmup_s;
    int events;               /* resume: K */
    const char *resume_via;   /* get | post */
    const char *resume_first; /* auto | priming | notify */
    const char *resume_args;  /* override of the producing call's arguments */
    const char *mix;
    const char *text;
    const char *call_tool; /* call: the tool and the argument that carries text */
    const char *call_arg;
    const char *pv;
    bool modern; /* call-modern: stateless 2026-07-28 (no initialize, _meta + headers) */
    const char *save_sessions; /* wake: write the created ids here and stop */
    const char *load_sessions; /* wake: ids from here (a restarted server), no setup */
    unsigned seed;             /* --load-sessions: the random draw */
    bool sticky;               /* call: session i set up and called on connection i % C only */
    double max_error_pct;
    bool json, quiet, allow_remote;
    mb_peer_t peer[2];
    int npeers;
} mb_cfg_t;

#define MB_MAX_EXTRA 48

typedef struct mb_extra {
    char key[48];
    bool is_str;
    double num;
    char str[160];
} mb_extra_t;

typedef struct mb_result {
    char scenario[16];
    char url[1400];
    char label[128];
    const char *unit; /* "calls/s", "sessions/s", ... */
    bool failed;      /* could not start: setup failed */
    char fail_msg[512];
    double elapsed_s;
    double throughput;
    uint64_t ok;
    uint64_t err[MB_E__COUNT];
    uint64_t status[600];
    double p50, p90, p99, max, mean; /* ms */
    int connections, sessions;
    double cpu_pct; /* mcpbench's own CPU over the measured phase, % of one core */
    mb_extra_t extra[MB_MAX_EXTRA];
    int nextra;
} mb_result_t;

void mb_result_init(mb_result_t *r, const mb_cfg_t *cfg, const mb_peer_t *p);
void mb_result_num(mb_result_t *r, const char *key, double v);
void mb_result_str(mb_result_t *r, const char *key, const char *v);
/* Copies counts and latency percentiles from an engine's stats (class -1: total). */
void mb_result_from_engine(mb_result_t *r, const mb_engine_t *e, int cls);
void mb_result_fail(mb_result_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t mb_result_errors(const mb_result_t *r);

/* CPU time of this process, µs. */
int64_t mb_cpu_us(void);

int mb_scen_call(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r);
int mb_scen_handshake(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r);
int mb_scen_sessions(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r);
int mb_scen_wake(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r);
int mb_scen_streams(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r);
int mb_scen_resume(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r);
int mb_scen_mixed(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r);

/* Shared by the scenario files. */
int64_t mb_cfg_duration_us(const mb_cfg_t *c);
int64_t mb_cfg_timeout_us(const mb_cfg_t *c);
bool mb_cfg_progress(const mb_cfg_t *c);
/* The number a notify-args object asks for ("count"), default 1. */
int64_t mb_args_count(const char *args_json);
/* args_json with "count" set to k; for_request also turns target/standalone to the call's own
 * stream ("target":"request", "standalone":false) when those keys are present. malloc'd. */
char *mb_args_with_count(const char *args_json, int64_t k, bool for_request);

/* Session setup for a scenario: on failure fills r's failure message and returns -1. */
int mb_scen_setup(const mb_cfg_t *c, mb_target_t *t, mb_sess_t *sess, long n, mb_result_t *r);
/* The same on the caller's connections: session i on conns[i % c->connections]. */
int mb_scen_setup_on(const mb_cfg_t *c, mb_target_t *t, mb_sess_t *sess, long n, mb_conn_t **conns,
                     mb_result_t *r);

/* The tools/call echo operation (shared by call and mixed). */
typedef struct mb_call_ctx mb_call_ctx_t;
mb_call_ctx_t *mb_call_ctx_new(const mb_cfg_t *c, mb_sess_t *sess, long n);
void mb_call_ctx_free(mb_call_ctx_t *x);
mb_op_t *mb_call_op_new(mb_call_ctx_t *x);
/* "json", "sse", "json+sse", or "none" */
const char *mb_call_ctx_ctype(const mb_call_ctx_t *x);

/* Resume operation (shared by resume and mixed). */
typedef struct mb_resume_cfg {
    int k;
    bool via_post;
    int first_mode;          /* 0 auto, 1 priming, 2 notify */
    char *produce_body_args; /* the producing call's arguments */
    const char *tool;
    char *one_args; /* arguments that produce one session-level event (auto/notify) */
    /* results shared across iterations */
    int64_t retries_409;
    int64_t first_from_priming, first_from_notify;
    int64_t short_replays;
    int64_t short_last; /* notifications the last short replay delivered */
} mb_resume_cfg_t;
mb_op_t *mb_resume_op_new(mb_resume_cfg_t *rc, mb_sess_t *sess);

/* A scenario's target from the peer's URL; on failure the result says why and it returns -1. */
int mb_scen_target(mb_target_t *t, const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r);

/* The report: a human table or one JSON line per result, and the A/B ratio. */
void mb_report(const mb_cfg_t *c, const mb_result_t *r);
void mb_report_compare(const mb_cfg_t *c, const mb_result_t *a, const mb_result_t *b);

#endif
