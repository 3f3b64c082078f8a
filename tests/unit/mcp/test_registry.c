/* Unit tests: URI templates, list pagination and registration (src/mcp/registry.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>

#include "mcp/registry.h"

static json_t *dummy_tool(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    return NULL;
}

static json_t *dummy_read(mcpd_ctx_t *ctx, const char *uri, json_t *vars, void *ud)
{
    return NULL;
}

static json_t *dummy_prompt(mcpd_ctx_t *ctx, json_t *args, void *ud)
{
    return NULL;
}

static json_t *dummy_complete(mcpd_ctx_t *ctx, json_t *ref, const char *arg_name,
                              const char *arg_value, json_t *context_args, void *ud)
{
    return NULL;
}

static int add_tool(mcpd_registry_t *reg, const char *name, const char *schema)
{
    mcpd_tool_def_t def = {.name = name, .input_schema = schema, .handler = dummy_tool};
    return mcpd_register_tool(reg, &def);
}

/* ---- uri_template_match ---- */

static void a_template_variable_is_extracted(void **state)
{
    json_t *vars = json_object();
    assert_true(uri_template_match("test://item/{id}", "test://item/42", vars));
    assert_string_equal(json_string_value(json_object_get(vars, "id")), "42");
    assert_int_equal(json_object_size(vars), 1);
    json_decref(vars);
}

static void several_variables_are_extracted(void **state)
{
    json_t *vars = json_object();
    assert_true(uri_template_match("file:///{dir}/{name}.txt", "file:///docs/readme.txt", vars));
    assert_string_equal(json_string_value(json_object_get(vars, "dir")), "docs");
    assert_string_equal(json_string_value(json_object_get(vars, "name")), "readme");
    json_decref(vars);

    vars = json_object();
    assert_true(uri_template_match("x://{a}-{b}/end", "x://1-22/end", vars));
    assert_string_equal(json_string_value(json_object_get(vars, "a")), "1");
    assert_string_equal(json_string_value(json_object_get(vars, "b")), "22");
    json_decref(vars);
}

static void a_template_without_variables_matches_only_itself(void **state)
{
    assert_true(uri_template_match("test://fixed", "test://fixed", NULL));
    assert_false(uri_template_match("test://fixed", "test://fixed2", NULL));
    assert_false(uri_template_match("test://fixed", "test://fixe", NULL));
}

static void a_differing_literal_does_not_match(void **state)
{
    assert_false(uri_template_match("test://item/{id}", "test://items/42", NULL));
    assert_false(uri_template_match("test://item/{id}", "other://item/42", NULL));
    assert_false(uri_template_match("x/{a}/y", "x/1/z", NULL));
    assert_false(uri_template_match("file:///{name}.txt", "file:///readme.md", NULL));
}

static void an_empty_variable_does_not_match(void **state)
{
    assert_false(uri_template_match("test://item/{id}", "test://item/", NULL));
    assert_false(uri_template_match("x/{a}/y", "x//y", NULL));
    assert_false(uri_template_match("file:///{name}.txt", "file:///.txt", NULL));
}

static void a_variable_does_not_cross_a_slash(void **state)
{
    json_t *vars = json_object();
    assert_false(uri_template_match("test://item/{id}", "test://item/a/b", vars));
    json_decref(vars);
    assert_false(uri_template_match("test://{a}/x", "test://p/q/x", NULL));
}

static void a_template_with_an_unclosed_brace_matches_nothing(void **state)
{
    assert_false(uri_template_match("test://item/{id", "test://item/{id", NULL));
    assert_false(uri_template_match("test://item/{id", "test://item/1", NULL));
}

static void a_matching_uri_is_found_through_its_template(void **state)
{
    mcpd_registry_t *reg = registry_new();
    mcpd_resource_def_t fixed = {.uri = "test://static", .name = "s", .read = dummy_read};
    mcpd_resource_def_t tmpl = {.uri_template = "test://item/{id}", .name = "t", .read = dummy_read};
    assert_int_equal(mcpd_register_resource(reg, &fixed), 0);
    assert_int_equal(mcpd_register_resource(reg, &tmpl), 0);
    json_t *vars = json_null(); /* overwritten by every lookup */
    const resource_t *r = registry_find_resource(reg, "test://static", &vars);
    assert_non_null(r);
    assert_string_equal(r->uri, "test://static");
    assert_null(vars);
    r = registry_find_resource(reg, "test://item/9", &vars);
    assert_non_null(r);
    assert_string_equal(r->uri_template, "test://item/{id}");
    assert_string_equal(json_string_value(json_object_get(vars, "id")), "9");
    json_decref(vars);
    assert_null(registry_find_resource(reg, "test://nothing", &vars));
    assert_null(vars);
    registry_free(reg);
}

/* ---- pagination ---- */

#define NTOOLS 23

static mcpd_registry_t *registry_with_tools(size_t n)
{
    mcpd_registry_t *reg = registry_new();
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "tool_%02zu", i);
        assert_int_equal(add_tool(reg, name, NULL), 0);
    }
    return reg;
}

/* Lists every page with page size k; returns the number of pages. */
static size_t list_all(const mcpd_registry_t *reg, size_t k, int *seen, size_t n)
{
    size_t pages = 0;
    char cursor[32];
    const char *cur = NULL;
    for (;;) {
        json_t *page = registry_list(reg, LIST_TOOLS, cur, k);
        assert_non_null(page);
        pages++;
        json_t *tools = json_object_get(page, "tools");
        assert_true(json_is_array(tools));
        assert_true(json_array_size(tools) <= k);
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            const char *name = json_string_value(json_object_get(t, "name"));
            assert_non_null(name);
            unsigned idx;
            assert_int_equal(sscanf(name, "tool_%u", &idx), 1);
            assert_true(idx < n);
            seen[idx]++;
        }
        json_t *next = json_object_get(page, "nextCursor");
        if (!next) {
            json_decref(page);
            break;
        }
        assert_int_equal(json_array_size(tools), k);
        assert_true(json_is_string(next));
        snprintf(cursor, sizeof cursor, "%s", json_string_value(next));
        cur = cursor;
        json_decref(page);
        assert_true(pages <= n + 1);
    }
    return pages;
}

static void following_next_cursor_lists_every_tool_exactly_once(void **state)
{
    mcpd_registry_t *reg = registry_with_tools(NTOOLS);
    const size_t sizes[] = {1, 2, 5, 22, 23, 24, 100};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int seen[NTOOLS] = {0};
        size_t k = sizes[s];
        size_t pages = list_all(reg, k, seen, NTOOLS);
        assert_int_equal(pages, (NTOOLS + k - 1) / k);
        for (size_t i = 0; i < NTOOLS; i++) {
            if (seen[i] != 1)
                fail_msg("page size %zu: tool %zu seen %d times", k, i, seen[i]);
        }
    }
    registry_free(reg);
}

static void a_page_lists_tools_in_registration_order(void **state)
{
    mcpd_registry_t *reg = registry_with_tools(NTOOLS);
    json_t *page = registry_list(reg, LIST_TOOLS, "5", 3);
    assert_non_null(page);
    json_t *tools = json_object_get(page, "tools");
    assert_int_equal(json_array_size(tools), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")), "tool_05");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 2), "name")), "tool_07");
    assert_string_equal(json_string_value(json_object_get(page, "nextCursor")), "8");
    json_decref(page);
    registry_free(reg);
}

static void a_listing_is_a_copy_the_caller_may_modify(void **state)
{
    mcpd_registry_t *reg = registry_with_tools(1);
    json_t *page = registry_list(reg, LIST_TOOLS, NULL, 10);
    json_t *t0 = json_array_get(json_object_get(page, "tools"), 0);
    json_object_set_new(t0, "name", json_string("changed"));
    json_decref(page);
    page = registry_list(reg, LIST_TOOLS, NULL, 10);
    t0 = json_array_get(json_object_get(page, "tools"), 0);
    assert_string_equal(json_string_value(json_object_get(t0, "name")), "tool_00");
    json_decref(page);
    registry_free(reg);
}

static void an_empty_registry_lists_an_empty_page_without_a_cursor(void **state)
{
    mcpd_registry_t *reg = registry_new();
    const list_kind_t kinds[] = {LIST_TOOLS, LIST_RESOURCES, LIST_TEMPLATES, LIST_PROMPTS};
    const char *keys[] = {"tools", "resources", "resourceTemplates", "prompts"};
    for (int i = 0; i < 4; i++) {
        json_t *page = registry_list(reg, kinds[i], NULL, 10);
        assert_non_null(page);
        json_t *items = json_object_get(page, keys[i]);
        assert_true(json_is_array(items));
        assert_int_equal(json_array_size(items), 0);
        assert_null(json_object_get(page, "nextCursor"));
        json_decref(page);
    }
    registry_free(reg);
}

static void bad_cursors_are_refused(void **state)
{
    mcpd_registry_t *reg = registry_with_tools(NTOOLS);
    const char *bad[] = {"abc", "-1", "0", "23", "24", "1000", "", "5x", " 5", "+5",
                         "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *page = registry_list(reg, LIST_TOOLS, bad[i], 5);
        if (page) {
            json_decref(page);
            fail_msg("cursor '%s' was accepted", bad[i]);
        }
    }
    /* the last valid offset is accepted */
    json_t *page = registry_list(reg, LIST_TOOLS, "22", 5);
    assert_non_null(page);
    assert_int_equal(json_array_size(json_object_get(page, "tools")), 1);
    assert_null(json_object_get(page, "nextCursor"));
    json_decref(page);
    registry_free(reg);
}

static void any_cursor_is_refused_by_an_empty_registry(void **state)
{
    mcpd_registry_t *reg = registry_new();
    assert_null(registry_list(reg, LIST_TOOLS, "0", 5));
    assert_null(registry_list(reg, LIST_TOOLS, "1", 5));
    registry_free(reg);
}

static void other_lists_paginate_under_their_own_key(void **state)
{
    mcpd_registry_t *reg = registry_new();
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        mcpd_prompt_def_t def = {.name = name, .get = dummy_prompt};
        assert_int_equal(mcpd_register_prompt(reg, &def), 0);
    }
    json_t *page = registry_list(reg, LIST_PROMPTS, NULL, 2);
    assert_int_equal(json_array_size(json_object_get(page, "prompts")), 2);
    assert_string_equal(json_string_value(json_object_get(page, "nextCursor")), "2");
    json_decref(page);
    page = registry_list(reg, LIST_PROMPTS, "2", 2);
    assert_int_equal(json_array_size(json_object_get(page, "prompts")), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(
                            json_object_get(page, "prompts"), 0), "name")), "p2");
    assert_null(json_object_get(page, "nextCursor"));
    json_decref(page);
    registry_free(reg);
}

/* ---- registration ---- */

static void a_registered_tool_is_listed_with_its_definition(void **state)
{
    mcpd_registry_t *reg = registry_new();
    mcpd_tool_def_t def = {.name = "echo", .title = "Echo", .description = "says it back",
                           .input_schema = "{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"string\"}}}",
                           .annotations = "{\"readOnlyHint\":true}",
                           .handler = dummy_tool, .flags = MCPD_TOOL_NONBLOCKING};
    assert_int_equal(mcpd_register_tool(reg, &def), 0);
    const tool_t *t = registry_find_tool(reg, "echo");
    assert_non_null(t);
    assert_true(t->fn == dummy_tool);
    assert_int_equal(t->flags, MCPD_TOOL_NONBLOCKING);
    assert_true(json_is_object(t->input_schema));
    assert_string_equal(json_string_value(json_object_get(t->listing, "title")), "Echo");
    assert_string_equal(json_string_value(json_object_get(t->listing, "description")), "says it back");
    assert_true(json_equal(json_object_get(t->listing, "inputSchema"), t->input_schema));
    assert_true(json_is_true(json_object_get(json_object_get(t->listing, "annotations"), "readOnlyHint")));
    assert_null(json_object_get(t->listing, "outputSchema"));
    assert_null(registry_find_tool(reg, "echo2"));
    registry_free(reg);
}

static void a_tool_keeps_the_scopes_it_declares_out_of_its_listing(void **state)
{
    mcpd_registry_t *reg = registry_new();
    mcpd_tool_def_t def = {.name = "write", .handler = dummy_tool, .scopes = "files:write files:read"};
    assert_int_equal(mcpd_register_tool(reg, &def), 0);
    assert_int_equal(add_tool(reg, "plain", NULL), 0);
    assert_string_equal(registry_find_tool(reg, "write")->scopes, "files:write files:read");
    assert_null(registry_find_tool(reg, "plain")->scopes);
    /* scopes are the server's business: the Tool object a client lists does not carry them */
    assert_null(json_object_get(registry_find_tool(reg, "write")->listing, "scopes"));
    registry_free(reg);
}

static void a_tool_without_a_schema_gets_an_object_schema(void **state)
{
    mcpd_registry_t *reg = registry_new();
    assert_int_equal(add_tool(reg, "plain", NULL), 0);
    const tool_t *t = registry_find_tool(reg, "plain");
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t->input_schema, "type")), "object");
    registry_free(reg);
}

static void a_duplicate_tool_name_is_refused(void **state)
{
    mcpd_registry_t *reg = registry_new();
    assert_int_equal(add_tool(reg, "dup", NULL), 0);
    assert_int_equal(add_tool(reg, "dup", "{\"type\":\"object\"}"), -EEXIST);
    assert_int_equal(reg->n_tools, 1);
    registry_free(reg);
}

static void task_flags_imply_task_and_exclude_inline(void **state)
{
    mcpd_registry_t *reg = registry_new();
    assert_false(registry_has_task_tools(reg));
    mcpd_tool_def_t d = {.name = "inline_task", .handler = dummy_tool,
                         .flags = MCPD_TOOL_TASK | MCPD_TOOL_NONBLOCKING};
    assert_int_equal(mcpd_register_tool(reg, &d), -EINVAL);
    d.flags = MCPD_TOOL_TASK_REQUIRED | MCPD_TOOL_NONBLOCKING;
    assert_int_equal(mcpd_register_tool(reg, &d), -EINVAL);
    assert_false(registry_has_task_tools(reg));
    d.name = "required";
    d.flags = MCPD_TOOL_TASK_REQUIRED;
    assert_int_equal(mcpd_register_tool(reg, &d), 0);
    assert_true(registry_find_tool(reg, "required")->flags & MCPD_TOOL_TASK);
    d.name = "after_input";
    d.flags = MCPD_TOOL_TASK_AFTER_INPUT;
    assert_int_equal(mcpd_register_tool(reg, &d), 0);
    assert_true(registry_find_tool(reg, "after_input")->flags & MCPD_TOOL_TASK);
    assert_true(registry_has_task_tools(reg));
    registry_free(reg);
}

static void an_unparsable_schema_is_refused(void **state)
{
    mcpd_registry_t *reg = registry_new();
    assert_int_equal(add_tool(reg, "t1", "{\"type\":"), -EINVAL);
    assert_int_equal(add_tool(reg, "t2", "not json"), -EINVAL);
    assert_int_equal(add_tool(reg, "t3", "{\"type\":\"object\",\"type\":\"string\"}"), -EINVAL);
    assert_int_equal(reg->n_tools, 0);
    assert_null(registry_find_tool(reg, "t1"));
    registry_free(reg);
}

static void a_schema_that_is_not_an_object_is_refused(void **state)
{
    mcpd_registry_t *reg = registry_new();
    assert_int_equal(add_tool(reg, "t1", "[]"), -EINVAL);
    assert_int_equal(add_tool(reg, "t2", "[{\"type\":\"object\"}]"), -EINVAL);
    assert_int_equal(add_tool(reg, "t3", "\"object\""), -EINVAL);
    assert_int_equal(add_tool(reg, "t4", "true"), -EINVAL);
    assert_int_equal(reg->n_tools, 0);
    registry_free(reg);
}

static void an_unparsable_output_schema_or_annotations_is_refused(void **state)
{
    mcpd_registry_t *reg = registry_new();
    mcpd_tool_def_t def = {.name = "t", .output_schema = "{", .handler = dummy_tool};
    assert_int_equal(mcpd_register_tool(reg, &def), -EINVAL);
    def.output_schema = NULL;
    def.annotations = "{\"a\":";
    assert_int_equal(mcpd_register_tool(reg, &def), -EINVAL);
    assert_int_equal(reg->n_tools, 0);
    def.annotations = NULL;
    assert_int_equal(mcpd_register_tool(reg, &def), 0);
    registry_free(reg);
}

static void a_tool_without_a_name_or_handler_is_refused(void **state)
{
    mcpd_registry_t *reg = registry_new();
    mcpd_tool_def_t def = {.name = "", .handler = dummy_tool};
    assert_int_equal(mcpd_register_tool(reg, &def), -EINVAL);
    def.name = NULL;
    assert_int_equal(mcpd_register_tool(reg, &def), -EINVAL);
    def.name = "ok";
    def.handler = NULL;
    assert_int_equal(mcpd_register_tool(reg, &def), -EINVAL);
    assert_int_equal(mcpd_register_tool(reg, NULL), -EINVAL);
    def.handler = dummy_tool;
    assert_int_equal(mcpd_register_tool(NULL, &def), -EINVAL);
    assert_int_equal(reg->n_tools, 0);
    registry_free(reg);
}

/* ---- capabilities ---- */

static void capabilities_of_an_empty_registry_are_logging_only(void **state)
{
    mcpd_registry_t *reg = registry_new();
    json_t *caps = registry_capabilities(reg);
    assert_non_null(json_object_get(caps, "logging"));
    assert_int_equal(json_object_size(caps), 1);
    json_decref(caps);
    registry_free(reg);
}

static void capabilities_reflect_what_is_registered(void **state)
{
    mcpd_registry_t *reg = registry_new();
    assert_int_equal(add_tool(reg, "t", NULL), 0);
    json_t *caps = registry_capabilities(reg);
    assert_non_null(json_object_get(caps, "tools"));
    assert_null(json_object_get(caps, "resources"));
    assert_null(json_object_get(caps, "prompts"));
    assert_null(json_object_get(caps, "completions"));
    json_decref(caps);

    mcpd_resource_def_t r = {.uri = "test://a", .name = "a", .read = dummy_read};
    assert_int_equal(mcpd_register_resource(reg, &r), 0);
    caps = registry_capabilities(reg);
    json_t *res = json_object_get(caps, "resources");
    assert_non_null(res);
    assert_true(json_is_false(json_object_get(res, "subscribe")));
    json_decref(caps);

    mcpd_resource_def_t t = {.uri_template = "test://b/{x}", .name = "b", .read = dummy_read,
                             .subscribable = true};
    assert_int_equal(mcpd_register_resource(reg, &t), 0);
    caps = registry_capabilities(reg);
    assert_true(json_is_true(json_object_get(json_object_get(caps, "resources"), "subscribe")));
    json_decref(caps);

    mcpd_prompt_def_t p = {.name = "p", .get = dummy_prompt};
    assert_int_equal(mcpd_register_prompt(reg, &p), 0);
    assert_int_equal(mcpd_set_completion(reg, dummy_complete, NULL), 0);
    caps = registry_capabilities(reg);
    assert_non_null(json_object_get(caps, "prompts"));
    assert_non_null(json_object_get(caps, "completions"));
    assert_non_null(json_object_get(caps, "tools"));
    json_decref(caps);
    registry_free(reg);
}

static void templates_alone_announce_resources(void **state)
{
    mcpd_registry_t *reg = registry_new();
    mcpd_resource_def_t t = {.uri_template = "test://b/{x}", .name = "b", .read = dummy_read};
    assert_int_equal(mcpd_register_resource(reg, &t), 0);
    json_t *caps = registry_capabilities(reg);
    assert_non_null(json_object_get(caps, "resources"));
    assert_null(json_object_get(caps, "tools"));
    json_decref(caps);
    registry_free(reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_template_variable_is_extracted),
        cmocka_unit_test(several_variables_are_extracted),
        cmocka_unit_test(a_template_without_variables_matches_only_itself),
        cmocka_unit_test(a_differing_literal_does_not_match),
        cmocka_unit_test(an_empty_variable_does_not_match),
        cmocka_unit_test(a_variable_does_not_cross_a_slash),
        cmocka_unit_test(a_template_with_an_unclosed_brace_matches_nothing),
        cmocka_unit_test(a_matching_uri_is_found_through_its_template),
        cmocka_unit_test(following_next_cursor_lists_every_tool_exactly_once),
        cmocka_unit_test(a_page_lists_tools_in_registration_order),
        cmocka_unit_test(a_listing_is_a_copy_the_caller_may_modify),
        cmocka_unit_test(an_empty_registry_lists_an_empty_page_without_a_cursor),
        cmocka_unit_test(bad_cursors_are_refused),
        cmocka_unit_test(any_cursor_is_refused_by_an_empty_registry),
        cmocka_unit_test(other_lists_paginate_under_their_own_key),
        cmocka_unit_test(a_registered_tool_is_listed_with_its_definition),
        cmocka_unit_test(a_tool_without_a_schema_gets_an_object_schema),
        cmocka_unit_test(a_duplicate_tool_name_is_refused),
        cmocka_unit_test(task_flags_imply_task_and_exclude_inline),
        cmocka_unit_test(an_unparsable_schema_is_refused),
        cmocka_unit_test(a_schema_that_is_not_an_object_is_refused),
        cmocka_unit_test(an_unparsable_output_schema_or_annotations_is_refused),
        cmocka_unit_test(a_tool_without_a_name_or_handler_is_refused),
        cmocka_unit_test(capabilities_of_an_empty_registry_are_logging_only),
        cmocka_unit_test(capabilities_reflect_what_is_registered),
        cmocka_unit_test(templates_alone_announce_resources),
        cmocka_unit_test(a_tool_keeps_the_scopes_it_declares_out_of_its_listing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
