/* Unit tests: the methods both eras share and their dispatch (src/mcp/methods.c), called as a
 * worker calls them (mcp_dispatch_request) on a session actor over the fake worker
 * (tests/unit/actor/fake_worker.c), with a small catalogue; the answer is read from the frame
 * the actor queues for the HTTP thread. Also: each method table row has a handler in exactly
 * the eras the row names. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <ftw.h>

#include "../actor/fake_worker.h"
#include "core/config.h"
#include "core/principal.h"
#include "core/stats.h"
#include "core/util.h"
#include "mcp/internal.h"
#include "store/sessionrec.h"
#include "mcp/registry.h"
#include "wire/jsonrpc.h"
#include "wire/proto.h"

static const char SID[] = "0123456789abcdef0123456789abcdef";
static const conn_ref_t CONN = {0, 1, 1};

typedef struct fixture {
    char dir[64];
    store_t *store;
    worker_t *w;
    actor_t *a;
    mcpd_registry_t *reg;
} fixture_t;

/* ---- the catalogue ---- */

static json_t *echo(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx;
    (void)ud;
    return json_pack("{s:[{s:s,s:O}]}", "content", "type", "text", "text",
                     json_object_get(args, "text"));
}

static json_t *read_fixed(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *ud)
{
    (void)ctx;
    (void)uri;
    (void)vars;
    (void)ud;
    return NULL;
}

static json_t *get_prompt(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    (void)ctx;
    (void)args;
    (void)ud;
    return NULL;
}

static json_t *complete(mcpd_ctx_t *ctx, json_t *ref, const char *arg_name, const char *arg_value,
                        json_t *context_args, void *ud)
{
    (void)ctx;
    (void)ref;
    (void)arg_name;
    (void)arg_value;
    (void)context_args;
    (void)ud;
    return NULL;
}

static mcpd_registry_t *catalogue(void)
{
    mcpd_registry_t *reg = registry_new();
    mcpd_tool_def_t t = {.name = "echo",
                         .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":"
                                         "{\"type\":\"string\"}},\"required\":[\"text\"]}",
                         .handler = echo,
                         .flags = MCPD_TOOL_NONBLOCKING};
    assert_int_equal(mcpd_register_tool(reg, &t), 0);
    mcpd_resource_def_t fixed = {.uri = "test://fixed",
                                 .name = "fixed",
                                 .subscribable = true,
                                 .read = read_fixed};
    assert_int_equal(mcpd_register_resource(reg, &fixed), 0);
    mcpd_resource_def_t still = {.uri = "test://still", .name = "still", .read = read_fixed};
    assert_int_equal(mcpd_register_resource(reg, &still), 0);
    mcpd_resource_def_t item = {.uri_template = "test://item/{id}",
                                .name = "item",
                                .read = read_fixed};
    assert_int_equal(mcpd_register_resource(reg, &item), 0);
    mcpd_prompt_def_t p = {.name = "greet",
                           .arguments = "[{\"name\":\"who\",\"required\":true}]",
                           .get = get_prompt};
    assert_int_equal(mcpd_register_prompt(reg, &p), 0);
    assert_int_equal(mcpd_set_completion(reg, complete, NULL), 0);
    return reg;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/mcpd-methods-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    config_defaults(&g_cfg);
    g_cfg.workers = 1;
    char err[256];
    f->store = store_open(f->dir, false, 0, err, sizeof err);
    if (!f->store)
        return -1;
    f->reg = catalogue();
    mcp_init(f->reg);
    f->w = fake_worker_new(f->store, NULL);
    fake_worker_set_ops(f->w, mcp_actor_ops());
    f->a = actor_create(f->w, SID);
    f->a->proto = proto_find("2025-11-25");
    *state = f;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    worker_turn_end(f->w);
    actor_destroy_all(f->w);
    worker_turn_end(f->w);
    fake_worker_free(f->w);
    store_close(f->store);
    registry_free(f->reg);
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* Sends one request (params taken; NULL for none) to actor a through the dispatch as a POST
 * does, and returns the JSON-RPC answer the actor sent (new reference); *status gets its HTTP
 * status when status is not NULL. */
static json_t *request_to(fixture_t *f, actor_t *a, const char *method, json_t *params, int *status)
{
    json_t *msg = json_pack("{s:s,s:i,s:s}", "jsonrpc", "2.0", "id", 1, "method", method);
    if (params)
        json_object_set_new(msg, "params", params);
    jr_view_t v;
    jsonrpc_view(msg, &v);
    stream_t *s = actor_new_post_stream(a, CONN);
    s->outstanding = 1;
    s->dispatching = true;
    call_t *c = actor_add_call(a, s, v.id, stats_method_of(jsonrpc_cstr(v.method)));
    mcp_dispatch_request(a, c, &v);
    s->dispatching = false;
    if (!actor_stream_settle(a, s))
        fail_msg("%s was not answered in the turn it came in", method);
    worker_turn_end(f->w);
    if (fake_worker_nsent(f->w) != 1)
        fail_msg("%s: %d frames sent, expected one reply", method, fake_worker_nsent(f->w));
    hmsg_t *h = fake_worker_sent(f->w, 0);
    assert_int_equal(h->type, HM_REPLY);
    if (status)
        *status = h->status;
    json_t *answer = json_loadb(h->body, h->len, 0, NULL);
    assert_non_null(answer);
    fake_worker_clear_sent(f->w);
    json_decref(msg);
    return answer;
}

/* The same to the fixture's session. */
static json_t *request(fixture_t *f, const char *method, json_t *params)
{
    return request_to(f, f->a, method, params, NULL);
}

/* A 2026-07-28 request's one-request actor (as mcp_handle_modern makes it). */
static actor_t *modern_actor(fixture_t *f)
{
    actor_t *a = actor_create_kind(f->w, "fedcba9876543210fedcba9876543210", ACTOR_REQUEST);
    a->proto = proto_modern();
    return a;
}

/* The error code of an answer (0 for a result), and its message in *msg. */
static int error_of(const json_t *answer, const char **msg)
{
    const json_t *e = json_object_get(answer, "error");
    *msg = json_string_value(json_object_get(e, "message"));
    return e ? (int)json_integer_value(json_object_get(e, "code")) : 0;
}

static void expect_error(fixture_t *f, const char *method, json_t *params, int code,
                         const char *msg)
{
    json_t *answer = request(f, method, params);
    const char *got;
    int c = error_of(answer, &got);
    if (c != code || !got || strcmp(got, msg) != 0)
        fail_msg("%s: got %d '%s', expected %d '%s'", method, c, got ? got : "(none)", code, msg);
    json_decref(answer);
}

/* ---- the tests ---- */

static void ping_answers_an_empty_result(void **state)
{
    json_t *answer = request(*state, "ping", NULL);
    json_t *r = json_object_get(answer, "result");
    assert_true(json_is_object(r));
    assert_int_equal(json_object_size(r), 0);
    json_decref(answer);
}

static void tools_list_lists_the_catalogue_and_refuses_a_bad_cursor(void **state)
{
    json_t *answer = request(*state, "tools/list", NULL);
    json_t *tools = json_object_get(json_object_get(answer, "result"), "tools");
    assert_int_equal(json_array_size(tools), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
                        "echo");
    json_decref(answer);
    expect_error(*state, "tools/list", json_pack("{s:i}", "cursor", 3), JSONRPC_INVALID_PARAMS,
                 "Invalid cursor");
    expect_error(*state, "resources/list", json_pack("{s:s}", "cursor", "not-a-cursor"),
                 JSONRPC_INVALID_PARAMS, "Invalid cursor");
}

static void an_inline_tool_call_answers_with_the_handlers_result(void **state)
{
    long long before = STAT_GET(tool_calls_total);
    json_t *answer = request(*state, "tools/call",
                             json_pack("{s:s,s:{s:s}}", "name", "echo", "arguments", "text", "hi"));
    json_t *content = json_object_get(json_object_get(answer, "result"), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")),
                        "hi");
    assert_int_equal(STAT_GET(tool_calls_total), before + 1);
    json_decref(answer);
}

static void tools_call_refuses_what_it_cannot_run(void **state)
{
    expect_error(*state, "tools/call", NULL, JSONRPC_INVALID_PARAMS,
                 "tools/call needs params.name (a string)");
    expect_error(*state, "tools/call", json_pack("{s:s}", "name", "nope"), JSONRPC_INVALID_PARAMS,
                 "Unknown tool: nope");
    expect_error(*state, "tools/call", json_pack("{s:s,s:i}", "name", "echo", "arguments", 1),
                 JSONRPC_INVALID_PARAMS, "params.arguments must be an object");
}

static void arguments_that_fail_the_schema_are_a_tool_error_in_2025_11_25(void **state)
{
    /* 2025-11-25 answers input errors as a tool result the model can read (isError) */
    json_t *answer = request(*state, "tools/call",
                             json_pack("{s:s,s:{}}", "name", "echo", "arguments"));
    json_t *r = json_object_get(answer, "result");
    assert_true(json_is_true(json_object_get(r, "isError")));
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
    assert_non_null(text);
    assert_non_null(strstr(text, "Invalid arguments for tool echo"));
    json_decref(answer);
}

static void logging_set_level_keeps_a_valid_level_and_refuses_others(void **state)
{
    fixture_t *f = *state;
    json_t *answer = request(f, "logging/setLevel", json_pack("{s:s}", "level", "error"));
    assert_int_equal(error_of(answer, &(const char *){NULL}), 0);
    assert_int_equal(mcp_log_level(f->a), log_level_index("error"));
    json_decref(answer);
    expect_error(f, "logging/setLevel", json_pack("{s:s}", "level", "loud"), JSONRPC_INVALID_PARAMS,
                 "params.level must be one of debug, info, notice, warning, error, critical, "
                 "alert, emergency");
    assert_int_equal(mcp_log_level(f->a), log_level_index("error"));
}

static void subscribe_and_unsubscribe_keep_the_sessions_set(void **state)
{
    fixture_t *f = *state;
    json_t *answer = request(f, "resources/subscribe", json_pack("{s:s}", "uri", "test://fixed"));
    assert_int_equal(error_of(answer, &(const char *){NULL}), 0);
    json_decref(answer);
    assert_non_null(json_object_get(mcp_subscriptions(f->a), "test://fixed"));
    answer = request(f, "resources/unsubscribe", json_pack("{s:s}", "uri", "test://fixed"));
    assert_int_equal(error_of(answer, &(const char *){NULL}), 0);
    json_decref(answer);
    assert_null(json_object_get(mcp_subscriptions(f->a), "test://fixed"));
    expect_error(f, "resources/subscribe", json_pack("{s:s}", "uri", "test://none"),
                 MCP_ERR_RESOURCE_NOT_FOUND, "Resource not found");
    expect_error(f, "resources/subscribe", json_pack("{s:s}", "uri", "test://still"),
                 JSONRPC_INVALID_PARAMS, "this resource does not support subscriptions");
    expect_error(f, "resources/subscribe", json_pack("{s:i}", "uri", 1), JSONRPC_INVALID_PARAMS,
                 "params.uri must be a string");
}

/* What the protocol keeps of a session in its state (log level, subscriptions) is stored in the
 * session's metadata (meta_put) and comes back when the session is woken (meta_load). */
static void a_sessions_level_and_subscriptions_survive_hibernation(void **state)
{
    fixture_t *f = *state;
    json_decref(request(f, "logging/setLevel", json_pack("{s:s}", "level", "error")));
    json_decref(request(f, "resources/subscribe", json_pack("{s:s}", "uri", "test://fixed")));
    actor_persist_meta(f->a);
    worker_turn_end(f->w);
    actor_hibernate(f->a);
    worker_turn_end(f->w);
    f->a = NULL;
    assert_null(worker_find_actor(f->w, SID));
    int err;
    f->a = actor_find_or_load(f->w, SID, &err);
    assert_non_null(f->a);
    assert_int_equal(mcp_log_level(f->a), log_level_index("error"));
    assert_non_null(json_object_get(mcp_subscriptions(f->a), "test://fixed"));
    assert_int_equal(json_object_size(mcp_subscriptions(f->a)), 1);
}

static void resources_read_of_an_unknown_uri_is_not_found_in_2025_11_25(void **state)
{
    json_t *answer = request(*state, "resources/read", json_pack("{s:s}", "uri", "test://none"));
    const char *msg;
    assert_int_equal(error_of(answer, &msg), MCP_ERR_RESOURCE_NOT_FOUND);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(answer, "error"), "data"), "uri")),
                        "test://none");
    json_decref(answer);
}

static void prompts_get_checks_the_name_and_the_required_arguments(void **state)
{
    expect_error(*state, "prompts/get", NULL, JSONRPC_INVALID_PARAMS,
                 "prompts/get needs params.name");
    expect_error(*state, "prompts/get", json_pack("{s:s}", "name", "nope"), JSONRPC_INVALID_PARAMS,
                 "Unknown prompt");
    expect_error(*state, "prompts/get", json_pack("{s:s,s:{}}", "name", "greet", "arguments"),
                 JSONRPC_INVALID_PARAMS, "Missing required argument: who");
}

static void completion_needs_a_reference_that_exists(void **state)
{
    expect_error(*state, "completion/complete", json_pack("{s:{s:s}}", "ref", "type", "ref/prompt"),
                 JSONRPC_INVALID_PARAMS,
                 "completion/complete needs params.ref and params.argument {name, value}");
    expect_error(*state, "completion/complete",
                 json_pack("{s:{s:s},s:{s:s,s:s}}", "ref", "type", "ref/other", "argument", "name",
                           "who", "value", "a"),
                 JSONRPC_INVALID_PARAMS, "ref.type must be ref/prompt or ref/resource");
    expect_error(*state, "completion/complete",
                 json_pack("{s:{s:s,s:s},s:{s:s,s:s}}", "ref", "type", "ref/prompt", "name",
                           "greet", "argument", "name", "whom", "value", "a"),
                 JSONRPC_INVALID_PARAMS, "The prompt has no argument of that name");
    expect_error(*state, "completion/complete",
                 json_pack("{s:{s:s,s:s},s:{s:s,s:s}}", "ref", "type", "ref/resource", "uri",
                           "test://item/{id}", "argument", "name", "key", "value", "a"),
                 JSONRPC_INVALID_PARAMS, "The resource template has no variable of that name");
}

static void initialize_again_and_methods_of_other_eras_are_refused(void **state)
{
    expect_error(*state, "initialize", json_object(), JSONRPC_INVALID_REQUEST,
                 "Invalid Request: this session is already initialized");
    /* server/discover and the tasks methods are 2026-07-28's: unknown to a session */
    expect_error(*state, "server/discover", NULL, JSONRPC_METHOD_NOT_FOUND,
                 "Method not found: server/discover");
    expect_error(*state, "tasks/get", NULL, JSONRPC_METHOD_NOT_FOUND,
                 "Method not found: tasks/get");
    expect_error(*state, "tools/lists", NULL, JSONRPC_METHOD_NOT_FOUND,
                 "Method not found: tools/lists");
}

static void each_request_counts_once_in_its_methods_slot(void **state)
{
    long long ping = STAT_GET(requests_total[SM_ping]);
    long long other = STAT_GET(requests_total[SM_other]);
    long long discover = STAT_GET(requests_total[SM_server_discover]);
    json_decref(request(*state, "ping", NULL));
    json_decref(request(*state, "no/such", NULL));
    json_decref(request(*state, "server/discover", NULL));
    assert_int_equal(STAT_GET(requests_total[SM_ping]), ping + 1);
    assert_int_equal(STAT_GET(requests_total[SM_other]), other + 1);
    /* refused in a session, yet counted under its own name */
    assert_int_equal(STAT_GET(requests_total[SM_server_discover]), discover + 1);
}

static void a_2026_list_answer_carries_the_server_and_the_cache_hints(void **state)
{
    fixture_t *f = *state;
    int status;
    json_t *answer = request_to(f, modern_actor(f), "tools/list", NULL, &status);
    json_t *r = json_object_get(answer, "result");
    assert_int_equal(status, 200);
    assert_int_equal(json_array_size(json_object_get(r, "tools")), 1);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    json_t *meta = json_object_get(r, "_meta");
    assert_non_null(json_object_get(meta, "io.modelcontextprotocol/serverInfo"));
    assert_int_equal(json_integer_value(json_object_get(r, "ttlMs")), g_cfg.cache_ttl_ms);
    assert_non_null(json_object_get(r, "cacheScope"));
    json_decref(answer);
}

static void server_discover_is_served_in_2026_with_the_versions(void **state)
{
    fixture_t *f = *state;
    json_t *answer = request_to(f, modern_actor(f), "server/discover", NULL, NULL);
    json_t *r = json_object_get(answer, "result");
    json_t *versions = json_object_get(r, "supportedVersions");
    assert_string_equal(json_string_value(json_array_get(versions, 0)), "2026-07-28");
    assert_non_null(json_object_get(r, "ttlMs")); /* discover carries the cache hints */
    json_decref(answer);
}

static void a_session_only_method_is_not_found_in_2026_with_404(void **state)
{
    fixture_t *f = *state;
    int status;
    json_t *answer = request_to(f, modern_actor(f), "ping", NULL, &status);
    const char *msg;
    assert_int_equal(error_of(answer, &msg), JSONRPC_METHOD_NOT_FOUND);
    assert_string_equal(msg, "Method not found: ping");
    assert_int_equal(status, 404);
    json_decref(answer);
}

/* An integer x-mcp-header against a body's integral real: equal (2.0 is 2). The headers are
 * compared before the schema check, which would turn 2.0 into 2, so the comparison takes it. */
static void an_integer_param_header_matches_an_integral_real_in_the_body(void **state)
{
    (void)state;
    json_t *schema = json_loads("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
                                "\"integer\",\"x-mcp-header\":\"N\"}}}",
                                0, NULL);
    json_t *hdrs = json_pack("{s:s}", "n", "2");
    char why[256];
    static const char *const same[] = {"{\"n\":2}", "{\"n\":2.0}", "{\"n\":2e0}"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        json_t *args = json_loads(same[i], JSON_DECODE_ANY, NULL);
        assert_null(modern_check_params(schema, args, hdrs, why, sizeof why));
        json_decref(args);
    }
    static const char *const other[] = {"{\"n\":2.5}", "{\"n\":3.0}", "{\"n\":1e300}"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        json_t *args = json_loads(other[i], JSON_DECODE_ANY, NULL);
        assert_non_null(modern_check_params(schema, args, hdrs, why, sizeof why));
        json_decref(args);
    }
    json_decref(hdrs);
    json_decref(schema);
}

static void every_method_has_a_handler_in_its_eras_and_none_elsewhere(void **state)
{
    (void)state;
    for (int i = 0; i < SM__COUNT; i++) {
        const method_rule_t *r = method_rule((stats_method_t)i);
        bool in_session = (r->eras & METHOD_ERA_SESSION) != 0;
        bool in_modern = (r->eras & METHOD_ERA_MODERN) != 0;
        if ((mcp_method_handler((stats_method_t)i, false) != NULL) != in_session)
            fail_msg("%s: a session-era handler %s", r->name, in_session ? "is missing" : "exists");
        if ((mcp_method_handler((stats_method_t)i, true) != NULL) != in_modern)
            fail_msg("%s: a 2026-07-28 handler %s", r->name, in_modern ? "is missing" : "exists");
    }
}

/* initialize's result (mcp_initialize_result), written once per version by mcp_init: the same
 * text as the object the handler used to build and dump at every handshake, for every
 * session-era version. */
static void expect_initialize_results(const mcpd_registry_t *reg)
{
    for (const proto_t *p = proto_latest(); p; p = proto_older(p)) {
        json_t *want = json_object();
        json_object_set_new(want, "protocolVersion", json_string(p->version));
        json_object_set_new(want, "capabilities", registry_capabilities(reg));
        json_object_set_new(want, "serverInfo", mcp_server_info());
        json_object_set_new(want, "instructions",
                            json_string("mcpactord: durable MCP sessions. Tools are listed by "
                                        "tools/list."));
        char *want_text = json_dumps(want, JSON_COMPACT);
        size_t len = 0;
        const char *members = mcp_initialize_result(p, &len);
        char *got = malloc(len + 3);
        got[0] = '{';
        memcpy(got + 1, members, len);
        strcpy(got + len + 1, "}");
        assert_string_equal(got, want_text);
        free(got);
        free(want_text);
        json_decref(want);
    }
}

static void initialize_results_are_the_catalogues_for_each_version(void **state)
{
    fixture_t *f = *state;
    expect_initialize_results(f->reg); /* tools, resources (subscribable), prompts, completions */
    /* another catalogue (mcp_init again): written again, with its capabilities */
    mcpd_registry_t *empty = registry_new();
    mcp_init(empty);
    expect_initialize_results(empty); /* logging only */
    size_t len = 0;
    assert_null(strstr(mcp_initialize_result(proto_latest(), &len), "\"tools\""));
    mcp_init(f->reg);
    registry_free(empty);
    expect_initialize_results(f->reg);
}

/* Four bytes of a data block of a table file, damaged in place (where they were, and what). */
typedef struct damage {
    char path[300];
    long at;
    unsigned char orig[4];
} damage_t;

/* Damages the first data block (four bytes at the file's start) of the table file (.sst) of dir
 * of column family `family`, known by its name in its properties block: the next read of that
 * block fails its checksum (RocksDB's Corruption), as on a failing disk. The test's few keys
 * are in that block. 0, or -1 when there is no such file. */
static int damage_table(const char *dir, const char *family, damage_t *d)
{
    char name[64]; /* rocksdb.column.family.name's entry: 22 bytes shared, "name", the value */
    int nl = snprintf(name, sizeof name, "\x16\x04%cname%s", (char)strlen(family), family);
    DIR *dp = opendir(dir);
    struct dirent *e;
    int rc = -1;
    while (dp && rc != 0 && (e = readdir(dp))) {
        size_t fl = strlen(e->d_name);
        if (fl < 4 || strcmp(e->d_name + fl - 4, ".sst") != 0)
            continue;
        snprintf(d->path, sizeof d->path, "%s/%s", dir, e->d_name);
        FILE *fp = fopen(d->path, "r+b");
        assert_non_null(fp);
        fseek(fp, 0, SEEK_END);
        long len = ftell(fp);
        char *data = xmalloc((size_t)len);
        fseek(fp, 0, SEEK_SET);
        assert_int_equal(fread(data, 1, (size_t)len, fp), (size_t)len);
        if (len > 4 && memmem(data, (size_t)len, name, (size_t)nl)) {
            d->at = 0;
            unsigned char bad[4];
            for (int i = 0; i < 4; i++)
                bad[i] = (unsigned char)(d->orig[i] = (unsigned char)data[i]) ^ 0xff;
            fseek(fp, 0, SEEK_SET);
            assert_int_equal(fwrite(bad, 1, 4, fp), 4);
            rc = 0;
        }
        free(data);
        fclose(fp);
    }
    if (dp)
        closedir(dp);
    return rc;
}

/* The disk heals: the block reads again (a block whose read failed was not cached). */
static void put_back(const damage_t *d)
{
    FILE *fp = fopen(d->path, "r+b");
    assert_non_null(fp);
    fseek(fp, d->at, SEEK_SET);
    assert_int_equal(fwrite(d->orig, 1, 4, fp), 4);
    fclose(fp);
}

/* A live input-request exchange (2026-07-28) whose record the store cannot read when its call
 * ends: the record is deleted unread (a delete reads nothing), with its alarm key and the place
 * of its owner's share, so its requestState cannot be redeemed again until it expires. */
static void an_input_record_unreadable_at_the_calls_end_is_deleted_unread(void **state)
{
    fixture_t *f = *state;
    static const char RID[] = "5f3a9c7e1b2d48a6c0e9f7b3d1a5c8e2";
    principal_t *owner = principal_get("a:192.0.2.9");
    assert_int_equal(principal_take_counted(owner, PR_RECORDS), 0);
    long long held = principal_held(owner, PR_RECORDS);
    actor_t *rec = actor_create_kind(f->w, RID, ACTOR_RECORD); /* as record_new makes it */
    rec->proto = proto_modern();
    rec->owner = principal_ref(owner);
    mcp_state_set(&mcp_state(rec)->record.rec,
                  json_pack("{s:i,s:{},s:i,s:s,s:b,s:{}}", "n", 1, "a", "m", (int)SM_tools_call,
                            "d", "digest", "o", 0, "k"));
    int64_t due = now_wall_ms() + 600000;
    actor_alarm_set(rec, due);
    actor_persist_meta(rec);
    worker_turn_end(f->w);
    actor_hibernate(rec); /* out of memory meanwhile (its idle timeout) */
    worker_turn_end(f->w);
    assert_null(worker_find_actor(f->w, RID));
    assert_int_equal(store_flush(f->store), 0);
    damage_t d;
    assert_int_equal(damage_table(f->dir, "sessions", &d), 0);

    /* the retry read it (take_input: the exchange goes on, "live", and keeps its alarm's due
     * time and its owner) and now completes */
    actor_t *a = modern_actor(f);
    mcp_state_set(&mcp_state(a)->modern.mrtr,
                  json_pack("{s:s,s:b,s:I,s:s}", "r", RID, "live", 1, "e", (json_int_t)due, "po",
                            principal_name(owner)));
    modern_call_complete(a);
    worker_turn_end(f->w);
    put_back(&d);

    int err;
    assert_null(actor_find_or_load(f->w, RID, &err)); /* before: there, redeemable */
    assert_int_equal(err, 0);
    assert_int_equal(sessionrec_count_alarms(f->store, NULL), 0);
    assert_int_equal(principal_held(owner, PR_RECORDS), held - 1);
    principal_unref(owner);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(ping_answers_an_empty_result),
        T(tools_list_lists_the_catalogue_and_refuses_a_bad_cursor),
        T(an_inline_tool_call_answers_with_the_handlers_result),
        T(tools_call_refuses_what_it_cannot_run),
        T(arguments_that_fail_the_schema_are_a_tool_error_in_2025_11_25),
        T(logging_set_level_keeps_a_valid_level_and_refuses_others),
        T(subscribe_and_unsubscribe_keep_the_sessions_set),
        T(a_sessions_level_and_subscriptions_survive_hibernation),
        T(resources_read_of_an_unknown_uri_is_not_found_in_2025_11_25),
        T(prompts_get_checks_the_name_and_the_required_arguments),
        T(completion_needs_a_reference_that_exists),
        T(initialize_again_and_methods_of_other_eras_are_refused),
        T(initialize_results_are_the_catalogues_for_each_version),
        T(each_request_counts_once_in_its_methods_slot),
        T(a_2026_list_answer_carries_the_server_and_the_cache_hints),
        T(server_discover_is_served_in_2026_with_the_versions),
        T(a_session_only_method_is_not_found_in_2026_with_404),
        T(an_input_record_unreadable_at_the_calls_end_is_deleted_unread),
        cmocka_unit_test(every_method_has_a_handler_in_its_eras_and_none_elsewhere),
        cmocka_unit_test(an_integer_param_header_matches_an_integral_real_in_the_body),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
