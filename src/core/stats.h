/* Process-wide counters for /stats. A counter here is a fact about the whole process;
 * per-session facts live in the actor.
 *
 * Counters (the "counter" rows, and the per-method, per-status and latency tables) are kept per
 * thread: each thread that counts gets its own block (cache-line aligned, registered once in a
 * list the first time the thread counts) and writes only that block, with a relaxed load and
 * store (no read-modify-write, no cache line shared with another writer). A reader sums the
 * field over all blocks; a counter never goes back between two reads. Blocks are never freed:
 * when a thread exits its block goes on a free list with its counts in it, and the next thread
 * to start counting takes it over and adds to it, so nothing a thread counted is lost and there
 * are never more blocks than threads alive at once (one block: sizeof(stats_t), about 8.6 KB).
 * Gauges (the "gauge" rows and streams_open_get) are one shared atomic each (g_stats_gauges,
 * below): mailbox_depth_max is their maximum. The gauges that move with every request (the
 * "tgauge" rows and streams_open_post) are per thread like the counters (STATS_PROM_tgauge). */
#ifndef MCPD_CORE_STATS_H
#define MCPD_CORE_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/methodtable.h"

/* The per-method counters are indexed by the method table's slots (core/methodtable.h): every
 * method by name, then notifications, client responses and "other". */

/* Request latency histogram bucket bounds, seconds (Prometheus `le`); the last is +Inf. */
#define STATS_LATENCY_BUCKETS 16
extern const double stats_latency_bounds[STATS_LATENCY_BUCKETS];

/* Every scalar counter, once: its name, its Prometheus type and its help text. The list makes
 * the fields of stats_t, the keys of /stats (the same names) and the series of /metrics
 * (mcpactord_<name>), so a counter cannot be in one and missing from another. */
#define STATS_SCALARS(X)                                                                            \
    X(sessions_live, gauge, "Sessions in memory (not hibernated).")                                 \
    X(sessions_created_total, counter, "Sessions created by initialize.")                           \
    X(sessions_deleted_total, counter,                                                              \
      "Sessions deleted (DELETE, --session-ttl or --unused-session-ttl).")                          \
    X(sessions_stored, gauge, "Sessions stored (live or hibernated).")                              \
    X(sessions_unused_expired_total, counter,                                                       \
      "Sessions deleted because no request came after initialize (--unused-session-ttl).")          \
    X(events_stored_total, counter, "SSE events written to the event log.")                         \
    X(events_replayed_total, counter, "Events replayed to resuming clients.")                       \
    X(events_evicted_total, counter, "Events evicted by the per-stream cap.")                       \
    X(replay_gaps_total, counter, "Resumes from an id older than the oldest kept event.")           \
    X(hibernations_total, counter,                                                                  \
      "Actors hibernated (freed from memory): sessions, and the state handles, tasks and "          \
      "2026-07-28 input records that are kept as actors.")                                          \
    X(wakes_total, counter,                                                                         \
      "Actors woken from the store: sessions, state handles, tasks and input records.")             \
    X(alarms_pending, gauge,                                                                        \
      "Durable alarms stored: each session, state handle, task and 2026-07-28 input record "        \
      "holds one.")                                                                                 \
    X(sweeps_total, counter, "Sweep alarms run.")                                                   \
    X(alarm_rearms_total, counter,                                                                  \
      "Wake-ups of the alarm scheduler by a hint (a new alarm due before the armed one, or set "    \
      "while it read the store, or the node alarm's).")                                             \
    X(streams_expired_total, counter, "Streams deleted by the sweep.")                              \
    X(timer_wakeups_total, counter,                                                                 \
      "Timer callbacks run (hibernation, alarms, keepalive, JSON window, trim).")                   \
    X(mailbox_depth_max, gauge, "Deepest session mailbox seen since start.")                        \
    X(mailbox_full_total, counter,                                                                  \
      "Requests refused with 503: a session mailbox, or a worker's inbox, was full.")               \
    X(connections_open, gauge, "Client connections open on the MCP endpoint.")                      \
    X(read_timeouts_total, counter,                                                                 \
      "Connections dropped because a request had begun and not arrived whole --read-timeout "       \
      "after its start (a client that sends slowly).")                                              \
    X(accept_pauses_total, counter,                                                                 \
      "Times a listener (MCP or admin) stopped accepting for 100 ms because accept() failed "       \
      "(out of file descriptors: EMFILE, ENFILE).")                                                 \
    X(accept_holds_total, counter,                                                                  \
      "Times the MCP listeners were stopped: an accept brought the client connections open "        \
      "(counted from accept) to twice --max-connections (they accept again once one "               \
      "closes). One per stop, however many listeners it holds.")                                    \
    X(admin_accept_holds_total, counter,                                                            \
      "Times the admin listener stopped accepting: 32 connections were open on it (it accepts "     \
      "again once one closes).")                                                                    \
    X(admin_share_closes_total, counter,                                                            \
      "Admin connections closed at once because their address held 16 of the admin listener's "     \
      "32 places already.")                                                                         \
    X(get_streams_idle_ended_total, counter,                                                        \
      "Standalone GET streams ended after --get-idle-timeout without a write (clients resume).")    \
    X(misdirected_total, counter, "Requests for a shard this node does not serve (503, -32010).")   \
    X(limit_refusals_total, counter,                                                                \
      "Requests refused by a limit (--max-connections, --max-sessions, --max-streams, "             \
      "--max-handles, --max-tasks, --max-body, --max-headers, --max-json-nodes, "                   \
      "--auth-dpop-jti-max, a principal's share...), connections closed at accept past twice "      \
      "--max-connections, and SSE streams cut for want of an --sse-backlog place.")                 \
    X(share_refusals_total, counter,                                                                \
      "Of those, refused because the principal held its share (--principal-share) of a cap.")       \
    X(sse_slow_reader_cuts_total, counter,                                                          \
      "SSE streams cut because their reader fell behind: --sse-buffer bytes unsent, or more than "  \
      "64 KiB with no --sse-backlog place for it (the client resumes with Last-Event-ID).")         \
    X(sse_backlog_cuts_total, counter,                                                              \
      "Of those, cut because --sse-backlog's places were all held or its client held its share "    \
      "(also counted in limit_refusals_total).")                                                    \
    X(sse_backlogged, tgauge,                                                                       \
      "SSE connections more than 64 KiB behind their reader, each holding one of --sse-backlog's "  \
      "places.")                                                                                    \
    X(principals_live, gauge, "Principals that hold or reference something (core/principal.c).")    \
    X(log_trims_total, counter,                                                                     \
      "Finished streams deleted early to keep a session under --session-log-bytes.")                \
    X(memory_trims_total, counter,                                                                  \
      "Free heap pages handed back to the kernel (after a burst, after many hibernations, and "     \
      "once the store's flushes running at such a trim have ended).")                               \
    X(tool_calls_total, counter, "Tool calls started.")                                             \
    X(tool_threads_busy, gauge, "Tool pool threads running a handler.")                             \
    X(tool_jobs_waiting, gauge,                                                                     \
      "Handlers waiting for a tool thread: their principal holds its share (--principal-share) "    \
      "or the pool is full.")                                                                       \
    X(requests_handed_total, counter,                                                               \
      "Requests (POST, GET, DELETE) the HTTP threads handed to an actor's loop.")                   \
    X(requests_crossed_total, counter,                                                              \
      "Of those, the ones read on one HTTP thread for an actor that runs on another "               \
      "loop: handed to it, answered from it.")                                                      \
    X(requests_crossed_as_text_total, counter,                                                      \
      "Of those, POSTs whose body went as its text (at most 16 KiB) and was parsed again on the "   \
      "actor's loop.")                                                                              \
    X(modern_requests_total, counter, "2026-07-28 (stateless) requests served by a worker.")        \
    X(modern_requests_live, tgauge,                                                                 \
      "2026-07-28 requests in progress (each has a one-request actor).")                            \
    X(handles_created_total, counter, "State handles created (mcpd_ctx_handle_new).")               \
    X(handles_stored, gauge, "State handles stored.")                                               \
    X(input_records_stored, gauge,                                                                  \
      "Records of 2026-07-28 input-request exchanges stored (bounded by --max-input-records).")     \
    X(input_required_total, counter, "2026-07-28 calls answered input_required (MRTR rounds).")     \
    X(request_state_refused_total, counter,                                                         \
      "2026-07-28 retries refused because their requestState was replayed or its record expired.")  \
    X(tasks_stored, gauge, "Tasks stored (the tasks extension; bounded by --max-tasks).")           \
    X(tasks_created_total, counter,                                                                 \
      "Tasks created (tools/call answered with a CreateTaskResult).")                               \
    X(tasks_completed_total, counter, "Tasks that completed (a tool error included).")              \
    X(tasks_failed_total, counter, "Tasks that failed (a JSON-RPC error while they ran).")          \
    X(tasks_cancelled_total, counter, "Tasks cancelled by tasks/cancel.")                           \
    X(client_responses_unknown_total, counter, "Client responses to unknown server requests.")      \
    X(store_write_batches_total, counter, "RocksDB write batches committed.")                       \
    X(store_errors_total, counter, "RocksDB read or write errors, and writes refused for space.")   \
    X(store_probes_total, counter,                                                                  \
      "Probe writes made to a store that refuses writes, to see whether it heals.")                 \
    X(turns_refused_total, counter,                                                                 \
      "Worker turns whose writes the store refused (their replies became errors).")                 \
    X(auth_jwt_verified_total, counter,                                                             \
      "JWT access tokens whose signature and claims were checked and passed (cache misses).")       \
    X(auth_dpop_verified_total, counter, "Requests whose DPoP proof was checked and recorded.")     \
    X(auth_dpop_replays_total, counter, "DPoP proofs refused because their jti was used before.")   \
    X(auth_cache_hits_total, counter, "Requests whose JWT was found in the verified-token cache.")  \
    X(auth_rejected_total, counter,                                                                 \
      "Requests refused by authorization: 401 (no or invalid token) and 403 (insufficient scope).") \
    X(auth_unavailable_total, counter,                                                              \
      "Requests answered 503 by authorization: no signing key for their JWT could be had yet, "     \
      "their opaque token's introspection got no answer, or their DPoP proof could not be "         \
      "recorded or checked (--auth-dpop-jti-max or the client's share of it, the store).")          \
    X(jwks_fetches_total, counter, "Key set fetches from the issuer that succeeded.")               \
    X(jwks_fetch_failures_total, counter,                                                           \
      "Key set fetches (the issuer's metadata, then its jwks_uri) that failed.")                    \
    X(upstreams_started_total, counter, "Upstream processes started (the gateway).")                \
    X(upstreams_running, gauge, "Upstream processes running (started, not yet reaped).")            \
    X(upstreams_exited_total, counter,                                                              \
      "Upstream processes that exited with status 0, or after the gateway stopped them.")           \
    X(upstreams_crashed_total, counter,                                                             \
      "Upstream processes that exited non-zero or were killed by a signal the gateway did not "     \
      "send.")                                                                                      \
    X(upstream_pool_waiting, tgauge,                                                                \
      "2026-07-28 requests on /mcp/NAME waiting for a pool process (--upstream-pool).")

/* One thread's block, every field an atomic_llong (stats.c reaches a field by its offset). */
typedef struct stats {
#define X(name, type, help) atomic_llong name;
    STATS_SCALARS(X)
#undef X
    atomic_llong requests_total[SM__COUNT];
    atomic_llong http_responses[600];
    atomic_llong streams_open_post;
    atomic_llong streams_open_get;
    /* per method: cumulative-free bucket counts (+1 overflow), sum of microseconds, count */
    atomic_llong latency_buckets[SM__COUNT][STATS_LATENCY_BUCKETS + 1];
    atomic_llong latency_sum_us[SM__COUNT];
    atomic_llong latency_count[SM__COUNT];
} stats_t;

/* When the process started (now_mono_ms), for uptime; set once by main before any thread. */
extern int64_t g_stats_started_ms;

/* Counters (monotonic, bumped per request) are per thread: this thread's block, NULL until it
 * first counts (stats_attach registers one); readers sum the blocks. Gauges (they go up on one
 * thread and down on another: a connection, a session, a job) are one shared atomic each, in
 * g_stats_gauges: a sum of per-thread parts read at different moments can show a value the
 * gauge never had, and the limit checks read them on hot paths. They change per connection,
 * session or job, not per request; the ones that change per request or stream (the "tgauge"
 * rows: modern_requests_live, sse_backlogged, upstream_pool_waiting; and streams_open_post) are
 * per thread (STATS_PROM_tgauge). */
extern _Thread_local stats_t *stats_tls;
extern stats_t g_stats_gauges;
stats_t *stats_attach(void);

static inline stats_t *stats_mine(void)
{
    stats_t *s = stats_tls;
    return s ? s : stats_attach();
}

/* Only this thread writes its block: a load and a store, atomic so that readers may load it. */
static inline void stats_bump(atomic_llong *c, long long n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

#define STATS_KIND_gauge 1
#define STATS_KIND_counter 0
#define STATS_KIND_tgauge 0 /* a gauge kept like a counter: see STATS_PROM_tgauge */
/* The Prometheus type of each kind. A "tgauge" goes up and down often (per request, per backlogged connection), while the
 * server runs always on the thread that raised it (modern_requests_live: the request's worker
 * adds and removes its actor; at shutdown the main thread may lower it), so it is kept per
 * thread like a counter and summed on read: no shared line per request. */
#define STATS_PROM_counter "counter"
#define STATS_PROM_gauge "gauge"
#define STATS_PROM_tgauge "gauge"
static const unsigned char STATS_IS_GAUGE[] = {
#define X(name, type, help) STATS_KIND_##type,
    STATS_SCALARS(X)
#undef X
};

/* Whether the field at offset off of stats_t is a gauge (a constant where off is). */
static inline bool stats_is_gauge(size_t off)
{
    size_t i = off / sizeof(atomic_llong);
    /* streams_open_post: per thread, like a tgauge (an SSE POST stream opens and ends on its
     * connection's HTTP thread, once per call) */
    return (i < sizeof STATS_IS_GAUGE && STATS_IS_GAUGE[i]) ||
           off == offsetof(stats_t, streams_open_get);
}

static inline atomic_llong *stats_field(stats_t *s, size_t off)
{
    return (atomic_llong *)(void *)((char *)s + off);
}

static inline void stats_add_at(size_t off, long long n)
{
    if (stats_is_gauge(off))
        atomic_fetch_add_explicit(stats_field(&g_stats_gauges, off), n, memory_order_relaxed);
    else
        stats_bump(stats_field(stats_mine(), off), n);
}

#define STAT_INC(f) stats_add_at(offsetof(stats_t, f), 1)
#define STAT_ADD(f, n) stats_add_at(offsetof(stats_t, f), (n))
#define STAT_DEC(f) stats_add_at(offsetof(stats_t, f), -1)
/* A gauge's value, or a counter summed over every thread's block. */
#define STAT_GET(f) stats_read(offsetof(stats_t, f))
/* Sets a gauge (only a gauge: REQUIRE'd). */
#define STAT_SET(f, v) stats_set(offsetof(stats_t, f), (v))
/* STAT_ADD by the field's offset in stats_t (for tables of counters and gauges). */
#define STAT_ADD_AT(off, n) stats_add_at((off), (n))

long long stats_read(size_t off);
void stats_set(size_t off, long long v);
/* Every field at once, in one walk over the blocks (what /stats and /metrics read): out's
 * counters summed, its gauges copied. */
void stats_snapshot(stats_t *out);
void stats_count_status(int status);
void stats_note_mailbox_depth(long long depth);
/* A request of method m was answered after us microseconds. */
void stats_observe_latency(stats_method_t m, long long us);
/* Resident set size in bytes from /proc/self/statm, or -1. */
long long stats_rss_bytes(void);

#endif
