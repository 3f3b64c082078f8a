/* Unit tests: request routing (src/wire/route.c), driven by the table of cases in
 * tests/unit/wire/route_cases.json (its path is the first argument), the table that
 * test_route_table.py holds tools/mcpd-cluster's HAProxy rules to. Each case builds the inputs
 * the way http/endpoint.c does (the body parsed and classified once, is_init as its body check
 * finds it) and compares the route with the case's expectation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "core/shard.h"
#include "wire/jsonrpc.h"
#include "wire/route.h"

static const char *CASES_PATH;

static const char *const KIND_NAME[] = {
    [ROUTE_REFUSED] = "refused",
    [ROUTE_SESSION] = "session",
    [ROUTE_NEW_SESSION] = "new-session",
    [ROUTE_STATELESS] = "stateless",
    [ROUTE_TASK] = "task",
    [ROUTE_RECORD] = "record",
};
static const char *const ERR_NAME[] = {
    [ROUTE_OK] = "",
    [ROUTE_ERR_NO_SESSION] = "no-session",
    [ROUTE_ERR_BAD_SESSION] = "bad-session",
    [ROUTE_ERR_UNKNOWN_SESSION] = "unknown-session",
    [ROUTE_ERR_INIT_IN_SESSION] = "init-in-session",
    [ROUTE_ERR_SESSIONLESS] = "sessionless",
};

/* A header of the case, by name in any case (as HTTP reads it); NULL when absent. */
static const char *header(const json_t *headers, const char *name)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)headers, k, v)
        if (strcasecmp(k, name) == 0)
            return json_string_value(v);
    return NULL;
}

/* The route of one case, computed as http/endpoint.c does. */
static void route_case(const json_t *c, route_t *r)
{
    const json_t *h = json_object_get(c, "headers");
    const char *verb = json_string_value(json_object_get(c, "verb"));
    const json_t *body = json_object_get(c, "body");
    jr_view_t v = {0};
    jr_kind_t kind = JR_INVALID;
    const char *why;
    if (body && !json_is_array(body))
        kind = jsonrpc_classify_view(body, &why, &v);
    route_in_t in = {
        .verb = !verb || strcmp(verb, "POST") == 0 ? ROUTE_POST
                : strcmp(verb, "GET") == 0         ? ROUTE_GET
                                                   : ROUTE_DELETE,
        .stateless_on = !json_is_false(json_object_get(c, "stateless")),
        .session_id = header(h, "Mcp-Session-Id"),
        .version = header(h, "MCP-Protocol-Version"),
        .body = body,
        .view = &v,
        .is_init = kind == JR_REQUEST && jsonrpc_str_is(v.method, "initialize"),
    };
    route_request(&in, r);
    if (r->kind == ROUTE_STATELESS)
        route_stateless(&v, header(h, "Mcp-Param-Handle"), r);
}

/* Compares one case; returns the number of mismatches, each printed with what was expected. */
static int check_case(const json_t *c)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    const json_t *want = json_object_get(c, "expect");
    route_t r;
    route_case(c, &r);
    int bad = 0;
    const char *w_route = json_string_value(json_object_get(want, "route"));
    if (!w_route || strcmp(KIND_NAME[r.kind], w_route) != 0) {
        printf("FAIL %s: expected route %s, got %s\n", name, w_route, KIND_NAME[r.kind]);
        bad++;
    }
    const char *w_err = json_string_value(json_object_get(want, "error"));
    if (strcmp(ERR_NAME[r.err], w_err ? w_err : "") != 0) {
        printf("FAIL %s: expected error '%s', got '%s'\n", name, w_err ? w_err : "",
               ERR_NAME[r.err]);
        bad++;
    }
    if (r.kind == ROUTE_REFUSED)
        return bad;
    const char *w_key = json_string_value(json_object_get(want, "key"));
    if (!w_key || strcmp(r.key, w_key) != 0) {
        printf("FAIL %s: expected key '%s', got '%s'\n", name, w_key ? w_key : "(none)", r.key);
        bad++;
    }
    const char *w_handle = json_string_value(json_object_get(want, "handle"));
    if ((w_handle == NULL) != (r.handle == NULL) || (w_handle && strcmp(w_handle, r.handle) != 0)) {
        printf("FAIL %s: expected handle '%s', got '%s'\n", name, w_handle ? w_handle : "(none)",
               r.handle ? r.handle : "(none)");
        bad++;
    }
    const char *w_node = json_string_value(json_object_get(want, "node"));
    const char *node_id = route_node_id(&r);
    int got = shard_of(node_id), exp = w_node ? shard_of(w_node) : -1;
    if (got != exp) {
        printf("FAIL %s: expected the node of shard %s, got %s (%d)\n", name,
               w_node ? w_node : "(any)", node_id ? node_id : "(any)", got);
        bad++;
    }
    return bad;
}

static void every_case_of_the_table_routes_as_it_says(void **state)
{
    (void)state;
    json_error_t e;
    json_t *doc = json_load_file(CASES_PATH, 0, &e);
    if (!doc)
        fail_msg("cannot read %s: %s (line %d)", CASES_PATH, e.text, e.line);
    const json_t *cases = json_object_get(doc, "cases");
    assert_true(json_array_size(cases) >= 30); /* the table is there, not an empty file */
    int bad = 0;
    size_t i;
    const json_t *c;
    json_array_foreach(cases, i, c)
        bad += check_case(c);
    json_decref(doc);
    assert_int_equal(bad, 0); /* each mismatch is printed above with what it expected */
}

/* The kinds the table names in its own words, so that a renamed kind fails here and not as a
 * silent mismatch of names. */
static void every_route_kind_and_refusal_has_a_name_in_the_table(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof KIND_NAME / sizeof KIND_NAME[0]; k++)
        assert_non_null(KIND_NAME[k]);
    for (size_t k = 0; k < sizeof ERR_NAME / sizeof ERR_NAME[0]; k++)
        assert_non_null(ERR_NAME[k]);
    assert_string_equal(route_key_name(ROUTE_SESSION), "session");
    assert_string_equal(route_key_name(ROUTE_TASK), "task");
    assert_string_equal(route_key_name(ROUTE_RECORD), "input request");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s tests/unit/wire/route_cases.json\n", argv[0]);
        return 2;
    }
    CASES_PATH = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_case_of_the_table_routes_as_it_says),
        cmocka_unit_test(every_route_kind_and_refusal_has_a_name_in_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
