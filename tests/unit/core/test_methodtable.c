/* Unit tests: the method table (src/core/methodtable.c): names unique, the counters' names and
 * order as /stats and /metrics print them, the name lookup, and the columns agreeing with each
 * other (a removed method is not in 2026-07-28, a target is what 2026-07-28 mirrors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/methodtable.h"
#include "core/stats.h"

static void every_slot_has_a_name_and_no_two_names_are_the_same(void **state)
{
    (void)state;
    for (int i = 0; i < SM__COUNT; i++) {
        const char *a = stats_method_name((stats_method_t)i);
        if (!a || !*a)
            fail_msg("slot %d has no name", i);
        for (int j = i + 1; j < SM__COUNT; j++)
            if (strcmp(a, stats_method_name((stats_method_t)j)) == 0)
                fail_msg("slots %d and %d are both named %s", i, j, a);
    }
}

/* /stats keys and the method label of /metrics, in this order: the integration tests and the
 * dashboards read them; a row added to the table goes before "notification". */
static void the_counters_are_named_and_ordered_as_stats_prints_them(void **state)
{
    (void)state;
    static const char *const EXPECTED[] = {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "logging/setLevel",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "server/discover",
        "subscriptions/listen",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
        "notification",
        "response",
        "other",
    };
    assert_int_equal(SM__COUNT, sizeof EXPECTED / sizeof EXPECTED[0]);
    for (int i = 0; i < SM__COUNT; i++)
        assert_string_equal(stats_method_name((stats_method_t)i), EXPECTED[i]);
    /* the numbers requestState tokens carry stay what they were */
    assert_int_equal(SM_tools_call, 3);
    assert_int_equal(SM_resources_read, 6);
    assert_int_equal(SM_prompts_get, 11);
}

static void every_method_name_finds_its_own_slot(void **state)
{
    (void)state;
    for (int i = 0; i < SM_notification; i++) {
        const char *name = method_table[i].name;
        if (stats_method_of(name) != (stats_method_t)i)
            fail_msg("%s found slot %d, expected %d", name, (int)stats_method_of(name), i);
    }
}

static void names_not_in_the_table_are_other_and_notifications_count_together(void **state)
{
    (void)state;
    assert_int_equal(stats_method_of(NULL), SM_other);
    assert_int_equal(stats_method_of(""), SM_other);
    assert_int_equal(stats_method_of("tools/lis"), SM_other);
    assert_int_equal(stats_method_of("tools/listx"), SM_other);
    assert_int_equal(stats_method_of("Tools/list"), SM_other);
    assert_int_equal(stats_method_of("tasks/result"), SM_other);
    /* the slots that are not methods are not found by their names */
    assert_int_equal(stats_method_of("notification"), SM_other);
    assert_int_equal(stats_method_of("response"), SM_other);
    assert_int_equal(stats_method_of("other"), SM_other);
    assert_int_equal(stats_method_of("notifications/initialized"), SM_notification);
    assert_int_equal(stats_method_of("notifications/"), SM_notification);
    assert_int_equal(stats_method_of("notifications"), SM_other);
}

static void every_method_exists_in_an_era_and_the_others_in_none(void **state)
{
    (void)state;
    for (int i = 0; i < SM__COUNT; i++) {
        const method_rule_t *r = method_rule((stats_method_t)i);
        if (i < SM_notification && !(r->eras & (METHOD_ERA_SESSION | METHOD_ERA_MODERN)))
            fail_msg("%s exists in no era", r->name);
        if (i >= SM_notification && (r->eras || r->flags || r->target || r->removed_in))
            fail_msg("the %s slot is not a method but has method columns", r->name);
    }
}

/* 2026-07-28 tells a client that a session-era method is gone (REMOVED) rather than unknown:
 * every session-only method says when it went, and no method of the revision says it went. */
static void removed_methods_are_exactly_the_session_only_ones(void **state)
{
    (void)state;
    for (int i = 0; i < SM_notification; i++) {
        const method_rule_t *r = &method_table[i];
        bool session_only = r->eras == METHOD_ERA_SESSION;
        if (session_only != (r->removed_in != NULL))
            fail_msg("%s: session only %d but removed_in %s", r->name, session_only,
                     r->removed_in ? r->removed_in : "NULL");
        if (r->removed_in)
            assert_string_equal(r->removed_in, "2026-07-28");
    }
}

/* A target is what Mcp-Name mirrors and what a requestState binds: both 2026-07-28 only. An
 * input_required call needs a target to bind; cache hints decorate 2026-07-28 results. */
static void targets_and_flags_belong_to_methods_of_2026(void **state)
{
    (void)state;
    for (int i = 0; i < SM_notification; i++) {
        const method_rule_t *r = &method_table[i];
        bool modern = (r->eras & METHOD_ERA_MODERN) != 0;
        if ((r->target || r->flags) && !modern)
            fail_msg("%s has a target or flags but is not a 2026-07-28 method", r->name);
        if ((r->flags & METHOD_INPUT) && !r->target)
            fail_msg("%s may answer input_required but names no target to bind", r->name);
    }
    static const struct {
        stats_method_t m;
        const char *target;
    } WANT[] = {{SM_tools_call, "name"},  {SM_prompts_get, "name"},    {SM_resources_read, "uri"},
                {SM_tasks_get, "taskId"}, {SM_tasks_update, "taskId"}, {SM_tasks_cancel, "taskId"}};
    for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) {
        const char *t = method_rule(WANT[i].m)->target;
        if (!t || strcmp(t, WANT[i].target) != 0)
            fail_msg("%s: target %s, expected %s", method_rule(WANT[i].m)->name, t ? t : "NULL",
                     WANT[i].target);
    }
    assert_null(method_rule(SM_tools_list)->target);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_slot_has_a_name_and_no_two_names_are_the_same),
        cmocka_unit_test(the_counters_are_named_and_ordered_as_stats_prints_them),
        cmocka_unit_test(every_method_name_finds_its_own_slot),
        cmocka_unit_test(names_not_in_the_table_are_other_and_notifications_count_together),
        cmocka_unit_test(every_method_exists_in_an_era_and_the_others_in_none),
        cmocka_unit_test(removed_methods_are_exactly_the_session_only_ones),
        cmocka_unit_test(targets_and_flags_belong_to_methods_of_2026),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
