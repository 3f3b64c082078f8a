/* Threads: the admin thread (its loop); the shard-move thread (a step); main thread starts it. */
/* The admin listener: its own thread. See admin.h. */
#include "admin/admin.h"
#include "admin/conns.h"

#include "core/acceptguard.h"
#include "core/config.h"
#include "core/log.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"
#include "core/auth.h"
#include "core/cluster.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <event2/keyvalq_struct.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static struct {
    struct event_base *base;
    struct evhttp *http;
    accept_guard_t guard; /* the listener pauses when accept() fails */
    pthread_t thread;
    store_t *store;
    bool running;
    char host[256]; /* the address it is bound to (--admin-listen's host) */
    char addr[64];  /* the address it bound, numeric */
    bool loopback;  /* and it is a loopback one (admin_host_ok) */
} A;

/* Sends what the output buffer holds, with no read timeout until it is written (conns.c: an
 * export file to a peer on a slow link takes as long as it takes). A HEAD gets the length a GET
 * would and no body: evhttp (2.1.12) writes the output buffer after the head whatever the
 * method, and a body after a HEAD reply is read as the start of the next response on the
 * connection. */
static void send_reply(struct evhttp_request *req, int status, const char *reason)
{
    struct evbuffer *b = evhttp_request_get_output_buffer(req);
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        char n[24];
        snprintf(n, sizeof n, "%zu", evbuffer_get_length(b));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Length", n);
        evbuffer_drain(b, evbuffer_get_length(b));
    }
    admin_conns_answer_unhurried(req);
    evhttp_send_reply(req, status, reason, NULL);
}

static void send_text(struct evhttp_request *req, int status, const char *ctype, const char *body)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    send_reply(req, status,
               status == 200   ? "OK"
               : status == 202 ? "Accepted"
               : status == 401 ? "Unauthorized"
               : status == 403 ? "Forbidden"
               : status == 404 ? "Not Found"
               : status == 503 ? "Service Unavailable"
                               : "Error");
}

/* A field of the snapshot taken for one /stats or /metrics answer (stats_snapshot: one walk
 * over the threads' blocks, so the fields of one answer are read together). */
#define SNAP(f) atomic_load_explicit(&snap->f, memory_order_relaxed)

/* RocksDB's work still to do: flushes and compactions running or pending (in every column
 * family), immutable memtables. 0: the store's files change only with the next write. */
static uint64_t background_work(void)
{
    return store_background_work(A.store) +
           store_property_sum(A.store, "rocksdb.compaction-pending");
}

static json_t *stats_json(void)
{
    stats_t *snap = xmalloc(sizeof *snap);
    stats_snapshot(snap);
    json_t *o = json_object();
    json_object_set_new(o, "uptime_s", json_integer((now_mono_ms() - g_stats_started_ms) / 1000));
#define X(name, type, help) json_object_set_new(o, #name, json_integer(SNAP(name)));
    STATS_SCALARS(X)
#undef X
    json_t *req = json_object();
    for (int i = 0; i < SM__COUNT; i++) {
        long long v = SNAP(requests_total[i]);
        if (v)
            json_object_set_new(req, stats_method_name((stats_method_t)i), json_integer(v));
    }
    json_object_set_new(o, "requests_total", req);
    json_t *st = json_object();
    for (int s = 100; s < 600; s++) {
        long long v = SNAP(http_responses[s]);
        if (v) {
            char k[8];
            snprintf(k, sizeof k, "%d", s);
            json_object_set_new(st, k, json_integer(v));
        }
    }
    json_object_set_new(o, "http_responses_total", st);
    json_object_set_new(o, "streams_open",
                        json_pack("{s:I,s:I}", "post", (json_int_t)SNAP(streams_open_post), "get",
                                  (json_int_t)SNAP(streams_open_get)));
    json_object_set_new(o, "store_writable", json_boolean(store_writable(A.store)));
    json_object_set_new(o, "rss_bytes", json_integer(stats_rss_bytes()));
    json_t *rdb = json_object();
    json_object_set_new(
        rdb, "estimate_live_data_size_bytes",
        json_integer((json_int_t)store_property_sum(A.store, "rocksdb.estimate-live-data-size")));
    json_object_set_new(
        rdb, "memtable_bytes",
        json_integer((json_int_t)store_property_sum(A.store, "rocksdb.cur-size-all-mem-tables")));
    json_object_set_new(rdb, "estimate_num_keys",
                        json_integer(
                            (json_int_t)store_property_sum(A.store, "rocksdb.estimate-num-keys")));
    json_object_set_new(rdb, "block_cache_budget_bytes",
                        json_integer((json_int_t)store_cache_budget(A.store)));
    json_object_set_new(rdb, "block_cache_bytes",
                        json_integer((json_int_t)store_cache_usage(A.store)));
    json_object_set_new(rdb, "memtable_budget_bytes",
                        json_integer((json_int_t)store_memtable_budget(A.store)));
    json_object_set_new(rdb, "partitions", json_integer(store_partitions(A.store)));
    json_object_set_new(rdb, "background_work", json_integer((json_int_t)background_work()));
    json_object_set_new(o, "rocksdb", rdb);
    free(snap);
    return o;
}

/* ---- Prometheus text exposition (version 0.0.4) ---- */

static void metric_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP mcpactord_%s %s\n# TYPE mcpactord_%s %s\n", name, help, name,
                        type);
}

static void metric_value(struct evbuffer *b, const char *name, const char *type, const char *help,
                         long long v)
{
    metric_head(b, name, type, help);
    evbuffer_add_printf(b, "mcpactord_%s %lld\n", name, v);
}

static void metrics_latency(struct evbuffer *b, const stats_t *snap)
{
    metric_head(b, "request_duration_seconds", "histogram",
                "Time from receipt of a JSON-RPC request to its answer, by method.");
    for (int m = 0; m < SM__COUNT; m++) {
        if (m == SM_notification || m == SM_response)
            continue; /* not requests: nothing is answered */
        const char *name = stats_method_name((stats_method_t)m);
        long long cum = 0;
        for (int i = 0; i <= STATS_LATENCY_BUCKETS; i++) {
            cum += SNAP(latency_buckets[m][i]);
            if (i < STATS_LATENCY_BUCKETS)
                evbuffer_add_printf(
                    b, "mcpactord_request_duration_seconds_bucket{method=\"%s\",le=\"%g\"} %lld\n",
                    name, stats_latency_bounds[i], cum);
            else
                evbuffer_add_printf(
                    b,
                    "mcpactord_request_duration_seconds_bucket{method=\"%s\",le=\"+Inf\"} %lld\n",
                    name, cum);
        }
        long long sum = SNAP(latency_sum_us[m]);
        evbuffer_add_printf(b, "mcpactord_request_duration_seconds_sum{method=\"%s\"} %.6f\n", name,
                            (double)sum / 1e6);
        evbuffer_add_printf(b, "mcpactord_request_duration_seconds_count{method=\"%s\"} %lld\n",
                            name, SNAP(latency_count[m]));
    }
}

static void metrics_text(struct evbuffer *b)
{
    stats_t *snap = xmalloc(sizeof *snap);
    stats_snapshot(snap);
    metric_value(b, "uptime_seconds", "gauge", "Seconds since the server started.",
                 (now_mono_ms() - g_stats_started_ms) / 1000);
    metric_head(b, "requests_total", "counter",
                "JSON-RPC messages served, by method (not those refused before their session or "
                "request took them: an unknown session, an HTTP check, a limit).");
    for (int m = 0; m < SM__COUNT; m++)
        evbuffer_add_printf(b, "mcpactord_requests_total{method=\"%s\"} %lld\n",
                            stats_method_name((stats_method_t)m), SNAP(requests_total[m]));
    metrics_latency(b, snap);
    metric_head(b, "http_responses_total", "counter", "HTTP responses sent, by status code.");
    for (int code = 100; code < 600; code++) {
        long long v = SNAP(http_responses[code]);
        if (v)
            evbuffer_add_printf(b, "mcpactord_http_responses_total{code=\"%d\"} %lld\n", code, v);
    }
    metric_head(b, "streams_open", "gauge", "Open SSE connections, by stream kind.");
    evbuffer_add_printf(b, "mcpactord_streams_open{kind=\"post\"} %lld\n", SNAP(streams_open_post));
    evbuffer_add_printf(b, "mcpactord_streams_open{kind=\"get\"} %lld\n", SNAP(streams_open_get));
#define X(name, type, help) metric_value(b, #name, STATS_PROM_##type, help, SNAP(name));
    STATS_SCALARS(X)
#undef X
    free(snap);
    metric_value(
        b, "store_writable", "gauge",
        "1 while the store accepts writes, 0 while it refuses them (disk full, I/O error).",
        store_writable(A.store) ? 1 : 0);
    metric_value(b, "resident_memory_bytes", "gauge", "Resident set size of the process.",
                 stats_rss_bytes());
    metric_value(b, "rocksdb_live_data_bytes", "gauge", "RocksDB estimated live data size.",
                 (long long)store_property_sum(A.store, "rocksdb.estimate-live-data-size"));
    metric_value(b, "rocksdb_memtable_bytes", "gauge", "RocksDB memtable bytes in use.",
                 (long long)store_property_sum(A.store, "rocksdb.cur-size-all-mem-tables"));
    metric_value(b, "rocksdb_block_cache_bytes", "gauge", "RocksDB block cache bytes in use.",
                 (long long)store_cache_usage(A.store));
    metric_value(b, "rocksdb_keys", "gauge", "RocksDB estimated number of keys.",
                 (long long)store_property_sum(A.store, "rocksdb.estimate-num-keys"));
    metric_value(b, "rocksdb_sst_bytes", "gauge", "RocksDB total size of SST files.",
                 (long long)store_property_sum(A.store, "rocksdb.total-sst-files-size"));
    metric_value(b, "rocksdb_background_work", "gauge",
                 "RocksDB flushes and compactions running or pending, and memtables waiting for "
                 "a flush.",
                 (long long)background_work());
}

static admin_shard_ops_t OPS;

void admin_set_shard_ops(const admin_shard_ops_t *ops)
{
    OPS = *ops;
}

static void send_json(struct evhttp_request *req, int status, json_t *o)
{
    char *s = json_dumps(o, JSON_INDENT(1));
    json_decref(o);
    send_text(req, status, "application/json", s);
    free(s);
}

/* A step runs on a thread of its own, so that the admin listener keeps answering /healthz
 * (HAProxy's check) while a release waits for its actors: POST answers 202 at once and
 * GET /shards/move tells how the last step went. One step at a time. */
static struct {
    pthread_mutex_t mu;
    bool running;
    admin_shard_step step;
    const char *name;
    admin_shard_req_t rq;
    char run[17];      /* this process's id (random): a step is (run, seq), so an answer of
                           another process (a restart between the POST and the poll) never
                           passes for it */
    bool stopping;     /* admin_stop: no new step */
    unsigned long seq; /* steps started */
    int status;        /* of the last finished one (HTTP status), 0 before any */
    json_t *body;      /* its answer */
} MV = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The HTTP status of a step's -errno (see actor/shardmove.h). */
static int step_status(int rc)
{
    switch (rc) {
    case 0:
        return 200;
    case -EINVAL:
        return 400;
    case -ENOENT:
        return 404;
    case -EALREADY:
        return 409;
    case -EBADMSG:
        return 502; /* the export (a peer's, or its own reclaimed) is incomplete or damaged */
    case -ENOSPC:
        return 507; /* its files would take the node below --min-free-space */
    case -EBUSY:
    case -EAGAIN:
        return 503; /* retry: actors still busy, the other node unreachable */
    default:
        return 500;
    }
}

static void *move_main(void *arg)
{
    (void)arg;
    log_set_thread_name("move");
    char why[1024] = "";
    json_t *report = NULL;
    int rc = MV.step(&MV.rq, &report, why, sizeof why);
    int status = step_status(rc);
    json_t *body = rc == 0 ? report : json_pack("{s:s,s:s}", "error", why, "op", MV.name);
    pthread_mutex_lock(&MV.mu);
    json_object_set_new(body, "seq", json_integer((json_int_t)MV.seq));
    json_object_set_new(body, "run", json_string(MV.run));
    json_object_set_new(body, "status", json_integer(status));
    json_decref(MV.body);
    MV.body = body;
    MV.status = status;
    MV.running = false;
    pthread_mutex_unlock(&MV.mu);
    return NULL;
}

typedef struct query {
    struct evkeyvalq q;
    int shard;
    bool ok;
} query_t;

/* The query string of req, and its shard= (3 lowercase hex). */
static void query_read(struct evhttp_request *req, query_t *qs)
{
    qs->q.tqh_first = NULL; /* an empty list */
    qs->q.tqh_last = &qs->q.tqh_first;
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    qs->ok = query && evhttp_parse_query_str(query, &qs->q) == 0;
    const char *sh = qs->ok ? evhttp_find_header(&qs->q, "shard") : NULL;
    qs->shard = sh && strlen(sh) == SHARD_HEX ? shard_of(sh) : -1;
}

static const char *query_get(query_t *qs, const char *key)
{
    return qs->ok ? evhttp_find_header(&qs->q, key) : NULL;
}

static void bad_request(struct evhttp_request *req, query_t *qs, const char *what)
{
    evhttp_clear_headers(&qs->q);
    send_json(req, 400, json_pack("{s:s}", "error", what));
}

/* POST /shards/{release,adopt,reclaim,decline,finish}?shard=abc&..., POST /shards/bootstrap */
static void shard_step(struct evhttp_request *req, const char *op)
{
    static const struct {
        const char *name, *peer_key, *usage;
    } STEPS[] = {
        {"release", "to", "?shard=<3 hex>&to=<node>"},
        {"adopt", "from", "?shard=<3 hex>&from=<node>[&force=1]"},
        {"reclaim", NULL, "?shard=<3 hex>[&force=1]"},
        {"decline", "from", "?shard=<3 hex>&epoch=<n>[&from=<node>]"},
        {"finish", "holder", "?shard=<3 hex>[&holder=<node>]"},
        {"bootstrap", NULL, ""},
    };
    admin_shard_step steps[] = {OPS.release, OPS.adopt,  OPS.reclaim,
                                OPS.decline, OPS.finish, OPS.bootstrap};
    enum { NSTEPS = sizeof STEPS / sizeof STEPS[0] };
    int i = 0;
    while (i < NSTEPS && strcmp(STEPS[i].name, op) != 0)
        i++;
    query_t qs;
    query_read(req, &qs);
    char usage[200];
    snprintf(usage, sizeof usage, "expected POST /shards/%s%s", op,
             i < NSTEPS ? STEPS[i].usage : "");
    if (i == NSTEPS || !steps[i]) {
        evhttp_clear_headers(&qs.q);
        send_text(req, 404, "text/plain",
                  "not found: POST /shards/release, adopt, reclaim, "
                  "decline, finish or bootstrap\n");
        return;
    }
    if (query_get(&qs, "dir")) {
        bad_request(req, &qs,
                    "dir= is not taken: exports are written to and read from this "
                    "node's --move-dir, and the adopting node fetches them over this listener");
        return;
    }
    admin_shard_req_t rq = {.shard = qs.shard};
    const char *peer = STEPS[i].peer_key ? query_get(&qs, STEPS[i].peer_key) : NULL;
    const char *epoch = query_get(&qs, "epoch"), *force = query_get(&qs, "force");
    int64_t ep = 0;
    bool peer_needed = STEPS[i].peer_key && strcmp(op, "decline") != 0 && strcmp(op, "finish") != 0;
    bool shard_needed = strcmp(op, "bootstrap") != 0;
    if ((shard_needed && qs.shard < 0) || (peer_needed && !peer) ||
        (peer && !cluster_name_ok(peer)) ||
        (strcmp(op, "decline") == 0 && (!epoch || parse_int64(epoch, 1, 2000000000, &ep) != 0)) ||
        (force && strcmp(force, "1") != 0 && strcmp(force, "0") != 0)) {
        bad_request(req, &qs, usage);
        return;
    }
    snprintf(rq.peer, sizeof rq.peer, "%s", peer ? peer : "");
    rq.epoch = (long)ep;
    rq.force = force && strcmp(force, "1") == 0;
    evhttp_clear_headers(&qs.q);
    pthread_mutex_lock(&MV.mu);
    if (MV.running || MV.stopping) {
        bool stopping = MV.stopping; /* read under the lock: admin_stop writes it */
        pthread_mutex_unlock(&MV.mu);
        send_json(req, 409,
                  json_pack("{s:s,s:b}", "error",
                            stopping ? "the node is stopping"
                                     : "a move step is running: see GET /shards/move",
                            "busy", 1));
        return;
    }
    MV.running = true;
    MV.step = steps[i];
    MV.name = STEPS[i].name;
    MV.rq = rq;
    unsigned long seq = ++MV.seq;
    pthread_t t;
    bool started = pthread_create(&t, NULL, move_main, NULL) == 0;
    if (started)
        pthread_detach(t);
    else
        MV.running = false;
    pthread_mutex_unlock(&MV.mu);
    if (!started) {
        send_json(req, 500, json_pack("{s:s}", "error", "cannot start the move's thread"));
        return;
    }
    send_json(req, 202,
              json_pack("{s:s,s:s,s:I,s:s}", "state", "running", "op", STEPS[i].name, "seq",
                        (json_int_t)seq, "run", MV.run));
}

/* GET /shards/move: {"state":"running","seq"} or the last step's answer with "status" */
static void shard_move_state(struct evhttp_request *req)
{
    pthread_mutex_lock(&MV.mu);
    json_t *o = MV.running ? json_pack("{s:s,s:I,s:s}", "state", "running", "seq",
                                       (json_int_t)MV.seq, "run", MV.run)
                : MV.body  ? json_deep_copy(MV.body)
                           : json_pack("{s:s,s:s}", "state", "none", "run", MV.run);
    if (!MV.running && MV.body)
        json_object_set_new(o, "state", json_string("done"));
    pthread_mutex_unlock(&MV.mu);
    send_json(req, 200, o);
}

/* GET /shards: which shards this node serves, refuses, and has in transit */
static void shard_summary(struct evhttp_request *req)
{
    char *ranges = xmalloc(SHARD_COUNT * 8);
    shard_ranges(ranges, SHARD_COUNT * 8);
    json_t *list = json_array();
    for (char *save = NULL, *r = strtok_r(ranges, ",", &save); r; r = strtok_r(NULL, ",", &save))
        json_array_append_new(list, json_string(r));
    free(ranges);
    json_t *o = json_pack("{s:s,s:i,s:b,s:o}", "node", shard_node_name(), "owned",
                          shard_owned_count(), "cluster", shard_in_cluster(), "shards", list);
    if (OPS.summary) {
        json_t *more = OPS.summary();
        json_object_update(o, more);
        json_decref(more);
    }
    send_json(req, 200, o);
}

/* GET /shards/record?shard=abc and /shards/export?shard=abc[&file=NAME] */
static void shard_query(struct evhttp_request *req, bool export)
{
    query_t qs;
    query_read(req, &qs);
    if (qs.shard < 0 || !OPS.record) {
        bad_request(req, &qs,
                    export ? "expected ?shard=<3 hex>[&file=<family>.sst]"
                           : "expected ?shard=<3 hex>");
        return;
    }
    if (!export) {
        evhttp_clear_headers(&qs.q);
        send_json(req, 200, OPS.record(qs.shard));
        return;
    }
    char path[4096];
    const char *file = query_get(&qs, "file");
    int fd = -1;
    struct stat st;
    if (OPS.export_path(qs.shard, file, path, sizeof path) != 0 ||
        (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        evhttp_clear_headers(&qs.q);
        send_json(req, 404,
                  json_pack("{s:s}", "error",
                            "no such export here: the shard is not "
                            "released by this node, or its move is finished"));
        return;
    }
    evhttp_clear_headers(&qs.q);
    if (evbuffer_add_file(evhttp_request_get_output_buffer(req), fd, 0, st.st_size) != 0) {
        close(fd); /* owned by the buffer only on success */
        send_json(req, 500, json_pack("{s:s}", "error", "cannot send the file"));
        return;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      file ? "application/octet-stream" : "application/json");
    send_reply(req, 200, "OK");
}

/* GET /healthz: 503 while the store refuses writes. /healthz/mint also 503 while this node owns
 * no shard: it could mint no session id (HAProxy's be_any checks it, so new sessions and
 * stateless requests go only to nodes that can take them). */
static void healthz(struct evhttp_request *req, bool mint)
{
    char why[256], text[400];
    int64_t since = 0;
    if (store_write_error(A.store, why, sizeof why, &since)) {
        /* the process runs, but requests that write are refused: a balancer should send
         * new sessions elsewhere */
        snprintf(text, sizeof text, "unhealthy: the store refuses writes for %lld s: %s\n",
                 (long long)((now_wall_ms() - since) / 1000), why);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "5");
        send_text(req, 503, "text/plain", text);
    } else if (mint && shard_owned_count() == 0) {
        send_text(req, 503, "text/plain", "unhealthy for new sessions: this node owns no shard\n");
    } else {
        send_text(req, 200, "text/plain", "ok\n");
    }
}

static void on_request(struct evhttp_request *req, void *arg)
{
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    bool get = cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD; /* HEAD: GET's head */
    /* a load balancer's health check is not a secret: /healthz answers without the token, so
     * HAProxy's checks need none (it tells whether the node takes requests, nothing more) */
    if (path && get && (strcmp(path, "/healthz") == 0 || strcmp(path, "/healthz/mint") == 0)) {
        healthz(req, strcmp(path, "/healthz/mint") == 0);
        return;
    }
    const char *refusal = admin_browser_refusal(req, A.host, A.addr, A.loopback);
    if (refusal) {
        send_text(req, 403, "text/plain", refusal);
        return;
    }
    if (g_admin_auth.n &&
        !auth_check(&g_admin_auth,
                    evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization"))) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                          "Bearer realm=\"mcpactord-admin\"");
        send_text(req, 401, "text/plain",
                  "unauthorized: send Authorization: Bearer <admin token>\n");
        return;
    }
    if (path && cmd == EVHTTP_REQ_POST && strncmp(path, "/shards/", 8) == 0) {
        shard_step(req, path + 8);
        return;
    }
    if (!get || !path) {
        send_text(req, 404, "text/plain", "not found: GET /healthz, /stats, /metrics or /shards\n");
        return;
    }
    if (strcmp(path, "/stats") == 0) {
        json_t *o = stats_json();
        char *s = json_dumps(o, JSON_INDENT(1) | JSON_SORT_KEYS);
        json_decref(o);
        send_text(req, 200, "application/json", s);
        free(s);
    } else if (strcmp(path, "/shards/move") == 0) {
        shard_move_state(req);
    } else if (strcmp(path, "/shards") == 0) {
        shard_summary(req);
    } else if (strcmp(path, "/shards/record") == 0 || strcmp(path, "/shards/export") == 0) {
        shard_query(req, strcmp(path, "/shards/export") == 0);
    } else if (strcmp(path, "/metrics") == 0) {
        struct evbuffer *b = evhttp_request_get_output_buffer(req);
        metrics_text(b);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          "text/plain; version=0.0.4; charset=utf-8");
        send_reply(req, 200, "OK");
    } else {
        send_text(req, 404, "text/plain", "not found: GET /healthz, /stats, /metrics or /shards\n");
    }
}

static void *admin_main(void *arg)
{
    log_set_thread_name("admin");
    event_base_dispatch(A.base);
    return NULL;
}

int admin_start(const char *host, int port, store_t *store, int *bound_port)
{
    A.store = store;
    snprintf(A.host, sizeof A.host, "%s", host);
    char id[SESSION_ID_LEN + 1];
    if (session_id_new(id) != 0)
        session_id_fast(id);
    memcpy(MV.run, id, sizeof MV.run - 1);
    A.base = event_base_new();
    A.http = evhttp_new(A.base);
    evhttp_set_gencb(A.http, on_request, NULL);
    evhttp_set_timeout(A.http, admin_conns_timeout_s()); /* answers: conns.c */
    /* every admin request is a GET: a body is refused (413) before it is buffered, and the
     * header block is small, so nothing is read in bulk before the --admin-token check */
    evhttp_set_max_body_size(A.http, 1024);
    evhttp_set_max_headers_size(A.http, 8192);
    struct evhttp_bound_socket *b = evhttp_bind_socket_with_handle(A.http, host, (ev_uint16_t)port);
    if (!b) {
        log_error("cannot listen for admin on %s:%d", host, port);
        return -1;
    }
    if (accept_guard_init(&A.guard, evhttp_bound_socket_get_listener(b), "admin") != 0 ||
        admin_conns_init(A.http, A.base, &A.guard) != 0)
        return -1;
    struct sockaddr_storage ss = {0};
    socklen_t sl = sizeof ss;
    if (getsockname(evhttp_bound_socket_get_fd(b), (struct sockaddr *)&ss, &sl) != 0 ||
        sockaddr_numeric((struct sockaddr *)&ss, sl, A.addr, sizeof A.addr) != 0) {
        log_error("admin listener on %s:%d: cannot read the address it bound", host, port);
        return -1;
    }
    A.loopback = sockaddr_is_loopback((struct sockaddr *)&ss); /* not from the name: it resolved */
    admin_browser_init(A.addr);
    *bound_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                           : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    A.running = true;
    return pthread_create(&A.thread, NULL, admin_main, NULL) == 0 ? 0 : -1;
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopexit(A.base, NULL);
}

void admin_stop(void)
{
    if (!A.running)
        return;
    /* a shard step finishes first (it needs the workers, which stop after this), and none
     * starts from now on */
    pthread_mutex_lock(&MV.mu);
    MV.stopping = true;
    pthread_mutex_unlock(&MV.mu);
    for (;;) {
        pthread_mutex_lock(&MV.mu);
        bool running = MV.running;
        pthread_mutex_unlock(&MV.mu);
        if (!running)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    event_base_once(A.base, -1, EV_TIMEOUT, on_stop, NULL, NULL);
    pthread_join(A.thread, NULL);
    accept_guard_free(&A.guard); /* before its listener goes */
    admin_conns_free();
    evhttp_free(A.http);
    event_base_free(A.base);
    json_decref(MV.body); /* the loop that read it has ended */
    MV.body = NULL;
    A.running = false;
}
