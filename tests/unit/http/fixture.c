/* The HTTP layer's tests' server: see fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture.h"

#include "core/config.h"
#include "core/cors.h"
#include "core/principal.h"
#include "http/oauth.h"

#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fixture_config(void)
{
    config_defaults(&g_cfg);
    const int64_t caps[PR__COUNT] = {[PR_SESSIONS] = g_cfg.max_sessions,
                                     [PR_HANDLES] = g_cfg.max_handles,
                                     [PR_TASKS] = g_cfg.max_tasks,
                                     [PR_CONNECTIONS] = g_cfg.max_connections,
                                     [PR_AUTH_WAITS] = OAUTH_PARKED_MAX};
    principals_configure(caps, (int)g_cfg.principal_share);
}

int fixture_listen(fixture_t *f, void (*cb)(struct evhttp_request *, void *))
{
    memset(f, 0, sizeof *f);
    f->base = event_base_new();
    f->http = evhttp_new(f->base);
    f->t.base = f->base;
    f->t.http = f->http;
    /* as http/listener.c sets it up */
    evhttp_set_allowed_methods(f->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS |
                                            EVHTTP_REQ_HEAD | EVHTTP_REQ_CONNECT);
    evhttp_set_default_content_type(f->http, NULL);
    evhttp_set_max_body_size(f->http, g_cfg.max_body);
    evhttp_set_max_headers_size(f->http, g_cfg.max_headers);
    if (!cb) { /* the listener's routes */
        evhttp_set_cb(f->http, "/mcp", http_on_mcp, &f->t);
        cb = http_on_other;
    }
    f->port = lb_listen(f->http, cb, &f->t);
    if (f->port < 0)
        return -1;
    char *origins[2 * CFG_MAX_LIST];
    int n = 0;
    for (int i = 0; i < g_cfg.n_allowed_origins; i++)
        origins[n++] = g_cfg.allowed_origins[i];
    for (int i = 0; i < g_cfg.n_cors_origins; i++)
        if (strcmp(g_cfg.cors_origins[i], "*") != 0)
            origins[n++] = g_cfg.cors_origins[i];
    hostcheck_init(&g_hostcheck, "127.0.0.1", f->port, g_cfg.allowed_hosts, g_cfg.n_allowed_hosts,
                   origins, n);
    return 0;
}

void fixture_stop(fixture_t *f)
{
    evhttp_free(f->http);
    event_base_free(f->base);
    ptrmap_free(&f->t.links);
    hostcheck_free(&g_hostcheck);
    memset(&g_hostcheck, 0, sizeof g_hostcheck);
}

void fixture_send(fixture_t *f, const char *method, const char *path, const char *headers,
                  const char *body, lb_answer_t *a)
{
    if (!headers)
        headers = "";
    size_t blen = body ? strlen(body) : 0;
    size_t cap = strlen(method) + strlen(path) + strlen(headers) + blen + 256;
    char *raw = malloc(cap);
    int n = snprintf(raw, cap, "%s %s HTTP/1.1\r\n%s", method, path, headers);
    if (!strcasestr(headers, "host:"))
        n += snprintf(raw + n, cap - (size_t)n, "Host: 127.0.0.1:%d\r\n", f->port);
    if (body)
        n += snprintf(raw + n, cap - (size_t)n, "Content-Length: %zu\r\n", blen);
    snprintf(raw + n, cap - (size_t)n, "Connection: close\r\n\r\n%s", body ? body : "");
    int rc = lb_exchange(f->base, f->port, raw, a);
    free(raw);
    if (rc != 0 || a->status == 0)
        fail_msg("no complete answer to %s %s came back (read: '%s')", method, path,
                 a->raw ? a->raw : "");
}

void expect_error(const lb_answer_t *a, int status, int code, const char *says, const char *id)
{
    if (a->status != status)
        fail_msg("expected status %d, got %d: %s", status, a->status, a->raw);
    json_error_t err;
    json_t *j = json_loadb(a->body, a->body_len, 0, &err);
    if (!json_is_object(j))
        fail_msg("expected a JSON-RPC error body, got '%.*s'", (int)a->body_len, a->body);
    json_t *e = json_object_get(j, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (json_integer_value(json_object_get(e, "code")) != code)
        fail_msg("expected error code %d, got %lld (%s)", code,
                 (long long)json_integer_value(json_object_get(e, "code")), msg ? msg : "");
    if (!msg || !strstr(msg, says))
        fail_msg("expected the message to say '%s', got '%s'", says, msg ? msg : "(none)");
    char *idtext = json_dumps(json_object_get(j, "id"), JSON_ENCODE_ANY | JSON_COMPACT);
    if (!idtext || strcmp(idtext, id) != 0)
        fail_msg("expected id %s echoed, got %s", id, idtext ? idtext : "(none)");
    free(idtext);
    json_decref(j);
}

void expect_header(const lb_answer_t *a, const char *name, const char *value)
{
    char got[4096];
    const char *v = lb_header(a, name, got, sizeof got);
    if (!value && v)
        fail_msg("expected no %s header, got '%s'", name, v);
    if (value && !v)
        fail_msg("expected %s: %s, got no such header", name, value);
    if (value && strcmp(v, value) != 0)
        fail_msg("expected %s: %s, got '%s'", name, value, v);
}
