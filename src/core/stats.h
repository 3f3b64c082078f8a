/* Process-wide counters for /stats. Any thread writes (relaxed atomics); the admin thread reads.
 * A counter here is a fact about the whole process; per-session facts live in the actor. */
#ifndef MCPD_CORE_STATS_H
#define MCPD_CORE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

/* The JSON-RPC methods counted by name in requests_total; the rest count as "other". */
#define STATS_METHODS(X)                                                                   \
    X(initialize) X(ping) X(tools_list) X(tools_call) X(logging_setLevel)                 \
    X(resources_list) X(resources_read) X(resources_templates_list)                      \
    X(resources_subscribe) X(resources_unsubscribe) X(prompts_list) X(prompts_get)       \
    X(completion_complete) X(notification) X(response) X(other)

typedef enum {
#define X(n) SM_##n,
    STATS_METHODS(X)
#undef X
    SM__COUNT
} stats_method_t;

/* Request latency histogram bucket bounds, seconds (Prometheus `le`); the last is +Inf. */
#define STATS_LATENCY_BUCKETS 16
extern const double stats_latency_bounds[STATS_LATENCY_BUCKETS];

typedef struct stats {
    int64_t started_ms;
    atomic_llong sessions_live;
    atomic_llong sessions_created_total;
    atomic_llong sessions_deleted_total;
    atomic_llong requests_total[SM__COUNT];
    atomic_llong http_responses[600];
    atomic_llong streams_open_post;
    atomic_llong streams_open_get;
    atomic_llong events_stored_total;
    atomic_llong events_replayed_total;
    atomic_llong replay_gaps_total;
    atomic_llong events_evicted_total;
    atomic_llong mailbox_depth_max;
    atomic_llong mailbox_full_total;
    atomic_llong sessions_stored;
    atomic_llong connections_open;
    atomic_llong limit_refusals_total; /* connections, sessions, streams refused */
    atomic_llong log_trims_total;      /* streams deleted early for --session-log-bytes */
    atomic_llong tool_calls_total;
    atomic_llong client_responses_unknown_total;
    atomic_llong hibernations_total;
    atomic_llong wakes_total;
    atomic_llong alarms_pending;
    atomic_llong sweeps_total;
    atomic_llong streams_expired_total;
    atomic_llong timer_wakeups_total;
    atomic_llong store_write_batches_total;
    atomic_llong store_errors_total;
    atomic_llong turns_refused_total; /* worker turns whose writes the store refused */
    /* per method: cumulative-free bucket counts (+1 overflow), sum of microseconds, count */
    atomic_llong latency_buckets[SM__COUNT][STATS_LATENCY_BUCKETS + 1];
    atomic_llong latency_sum_us[SM__COUNT];
    atomic_llong latency_count[SM__COUNT];
} stats_t;

extern stats_t g_stats;

#define STAT_INC(f) atomic_fetch_add_explicit(&g_stats.f, 1, memory_order_relaxed)
#define STAT_ADD(f, n) atomic_fetch_add_explicit(&g_stats.f, (n), memory_order_relaxed)
#define STAT_DEC(f) atomic_fetch_sub_explicit(&g_stats.f, 1, memory_order_relaxed)
#define STAT_GET(f) atomic_load_explicit(&g_stats.f, memory_order_relaxed)

/* Maps a method name to its counter slot; NULL (a name that holds U+0000, see jsonrpc_cstr)
 * is "other". */
stats_method_t stats_method_of(const char *method);
const char *stats_method_name(stats_method_t m);
void stats_count_status(int status);
void stats_note_mailbox_depth(long long depth);
/* A request of method m was answered after us microseconds. */
void stats_observe_latency(stats_method_t m, long long us);
/* Resident set size in bytes from /proc/self/statm, or -1. */
long long stats_rss_bytes(void);

#endif
