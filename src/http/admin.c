/* The admin listener: its own thread. See admin.h. */
#include "http/admin.h"

#include "actor/worker.h"
#include "core/config.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct {
    struct event_base *base;
    struct evhttp *http;
    pthread_t thread;
    store_t *store;
    bool running;
} A;

static void send_text(struct evhttp_request *req, int status, const char *ctype, const char *body)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    evhttp_send_reply(req, status, status == 200 ? "OK" : "Not Found", NULL);
}

static json_t *stats_json(void)
{
    json_t *o = json_object();
    json_object_set_new(o, "uptime_s", json_integer((now_mono_ms() - g_stats.started_ms) / 1000));
    json_object_set_new(o, "sessions_live", json_integer(STAT_GET(sessions_live)));
    json_object_set_new(o, "sessions_created_total", json_integer(STAT_GET(sessions_created_total)));
    json_object_set_new(o, "sessions_deleted_total", json_integer(STAT_GET(sessions_deleted_total)));
    json_t *req = json_object();
    for (int i = 0; i < SM__COUNT; i++) {
        long long v = atomic_load_explicit(&g_stats.requests_total[i], memory_order_relaxed);
        if (v)
            json_object_set_new(req, stats_method_name((stats_method_t)i), json_integer(v));
    }
    json_object_set_new(o, "requests_total", req);
    json_t *st = json_object();
    for (int s = 100; s < 600; s++) {
        long long v = atomic_load_explicit(&g_stats.http_responses[s], memory_order_relaxed);
        if (v) {
            char k[8];
            snprintf(k, sizeof k, "%d", s);
            json_object_set_new(st, k, json_integer(v));
        }
    }
    json_object_set_new(o, "http_responses_total", st);
    json_object_set_new(o, "streams_open", json_pack("{s:I,s:I}", "post",
                                                     (json_int_t)STAT_GET(streams_open_post), "get",
                                                     (json_int_t)STAT_GET(streams_open_get)));
#define NUM(name) json_object_set_new(o, #name, json_integer(STAT_GET(name)))
    NUM(events_stored_total);
    NUM(events_replayed_total);
    NUM(events_evicted_total);
    NUM(replay_gaps_total);
    NUM(mailbox_depth_max);
    NUM(mailbox_full_total);
    NUM(tool_calls_total);
    NUM(client_responses_unknown_total);
    NUM(hibernations_total);
    NUM(wakes_total);
    NUM(alarms_pending);
    NUM(sweeps_total);
    NUM(streams_expired_total);
    NUM(timer_wakeups_total);
    NUM(store_write_batches_total);
    NUM(store_errors_total);
#undef NUM
    json_object_set_new(o, "rss_bytes", json_integer(stats_rss_bytes()));
    json_t *rdb = json_object();
    json_object_set_new(rdb, "estimate_live_data_size_bytes",
                        json_integer((json_int_t)store_property_sum(A.store, "rocksdb.estimate-live-data-size")));
    json_object_set_new(rdb, "memtable_bytes",
                        json_integer((json_int_t)store_property_sum(A.store, "rocksdb.cur-size-all-mem-tables")));
    json_object_set_new(rdb, "estimate_num_keys",
                        json_integer((json_int_t)store_property_sum(A.store, "rocksdb.estimate-num-keys")));
    json_object_set_new(rdb, "block_cache_budget_bytes", json_integer((json_int_t)store_cache_budget(A.store)));
    json_object_set_new(rdb, "memtable_budget_bytes", json_integer((json_int_t)store_memtable_budget(A.store)));
    json_object_set_new(o, "rocksdb", rdb);
    return o;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET || !path) {
        send_text(req, 404, "text/plain", "not found: GET /healthz or /stats\n");
        return;
    }
    if (strcmp(path, "/healthz") == 0) {
        send_text(req, 200, "text/plain", "ok\n");
    } else if (strcmp(path, "/stats") == 0) {
        json_t *o = stats_json();
        char *s = json_dumps(o, JSON_INDENT(1) | JSON_SORT_KEYS);
        json_decref(o);
        send_text(req, 200, "application/json", s);
        free(s);
    } else {
        send_text(req, 404, "text/plain", "not found: GET /healthz or /stats\n");
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
    A.base = event_base_new();
    A.http = evhttp_new(A.base);
    evhttp_set_gencb(A.http, on_request, NULL);
    evhttp_set_timeout(A.http, 30);
    struct evhttp_bound_socket *b = evhttp_bind_socket_with_handle(A.http, host, (ev_uint16_t)port);
    if (!b) {
        log_error("cannot listen for admin on %s:%d", host, port);
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(evhttp_bound_socket_get_fd(b), (struct sockaddr *)&ss, &sl);
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
    event_base_once(A.base, -1, EV_TIMEOUT, on_stop, NULL, NULL);
    pthread_join(A.thread, NULL);
    evhttp_free(A.http);
    event_base_free(A.base);
    A.running = false;
}
