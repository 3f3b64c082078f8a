/* Unit tests: the DetailedTask a task's stored state gives (src/mcp/tasks.c, tasks_detailed):
 * the Task fields, and the one field each status adds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/internal.h"

static const char ID[] = "0123456789abcdef0123456789abcdef";

/* A task's state as tasks.c keeps it (created 2026-12-03T13:48:28.295Z, updated 1.5 s later). */
static json_t *state(const char *status)
{
    return json_pack("{s:s,s:I,s:I,s:I,s:I,s:s}", "st", status, "ca", (json_int_t)1796305708295LL,
                     "ua", (json_int_t)1796305709795LL, "ttl", (json_int_t)3600000, "pi",
                     (json_int_t)1000, "tool", "t");
}

static void assert_no_key(const json_t *o, const char *key)
{
    if (json_object_get(o, key))
        fail_msg("unexpected key %s", key);
}

static void the_task_fields_are_iso_times_and_integer_ms(void **state_)
{
    (void)state_;
    json_t *st = state("working");
    json_t *d = tasks_detailed(ID, st, NULL);
    assert_string_equal(json_string_value(json_object_get(d, "taskId")), ID);
    assert_string_equal(json_string_value(json_object_get(d, "status")), "working");
    assert_string_equal(json_string_value(json_object_get(d, "createdAt")), "2026-12-03T13:48:28.295Z");
    assert_string_equal(json_string_value(json_object_get(d, "lastUpdatedAt")),
                        "2026-12-03T13:48:29.795Z");
    assert_int_equal(json_integer_value(json_object_get(d, "ttlMs")), 3600000);
    assert_int_equal(json_integer_value(json_object_get(d, "pollIntervalMs")), 1000);
    /* working: nothing more; never the v1 names or the MRTR state; no private keys */
    const char *absent[] = {"result", "error", "inputRequests", "requestState", "ttl",
                            "pollInterval", "statusMessage", "st", "tool", "ans", "x"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        assert_no_key(d, absent[i]);
    assert_int_equal(json_object_size(d), 6); /* taskId, status, the two times, ttlMs, pollIntervalMs */
    json_decref(d);
    json_decref(st);
}

static void input_required_lists_the_outstanding_requests(void **state_)
{
    (void)state_;
    json_t *st = state("input_required");
    json_object_set_new(st, "ir", json_pack("{s:{s:s,s:{}}}", "confirm", "method",
                                            "elicitation/create", "params"));
    json_object_set_new(st, "ans", json_pack("{s:{s:s}}", "earlier", "action", "accept"));
    json_t *d = tasks_detailed(ID, st, NULL);
    json_t *ir = json_object_get(d, "inputRequests");
    assert_int_equal(json_object_size(ir), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ir, "confirm"), "method")),
                        "elicitation/create");
    assert_no_key(d, "result");
    assert_no_key(d, "error");
    /* a copy: the task's own state is not shared with the answer */
    assert_ptr_not_equal(ir, json_object_get(st, "ir"));
    json_decref(d);
    json_decref(st);
}

static void completed_carries_the_result(void **state_)
{
    (void)state_;
    json_t *st = state("completed");
    json_t *result = json_pack("{s:[{s:s,s:s}],s:b,s:s}", "content", "type", "text", "text", "done",
                               "isError", 1, "resultType", "complete");
    json_t *d = tasks_detailed(ID, st, result);
    assert_true(json_equal(json_object_get(d, "result"), result));
    assert_no_key(d, "error");
    assert_no_key(d, "inputRequests");
    json_decref(d);
    json_decref(st);
    json_decref(result);
}

static void failed_carries_the_error_and_its_message(void **state_)
{
    (void)state_;
    json_t *st = state("failed");
    json_object_set_new(st, "err", json_pack("{s:i,s:s}", "code", -32603, "message", "boom"));
    json_object_set_new(st, "sm", json_string("Tool execution failed: boom"));
    json_t *d = tasks_detailed(ID, st, NULL);
    json_t *err = json_object_get(d, "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32603);
    assert_string_equal(json_string_value(json_object_get(err, "message")), "boom");
    assert_string_equal(json_string_value(json_object_get(d, "statusMessage")),
                        "Tool execution failed: boom");
    assert_no_key(d, "result");
    json_decref(d);
    json_decref(st);
}

static void cancelled_adds_nothing_and_a_null_ttl_is_unlimited(void **state_)
{
    (void)state_;
    json_t *st = state("cancelled");
    json_object_set_new(st, "ttl", json_null());
    json_object_set_new(st, "x", json_true());
    json_object_del(st, "pi");
    json_t *d = tasks_detailed(ID, st, NULL);
    assert_true(json_is_null(json_object_get(d, "ttlMs")));
    assert_non_null(json_object_get(d, "ttlMs")); /* present, null */
    assert_no_key(d, "pollIntervalMs");
    assert_no_key(d, "result");
    assert_no_key(d, "error");
    assert_no_key(d, "inputRequests");
    json_decref(d);
    json_decref(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_task_fields_are_iso_times_and_integer_ms),
        cmocka_unit_test(input_required_lists_the_outstanding_requests),
        cmocka_unit_test(completed_carries_the_result),
        cmocka_unit_test(failed_carries_the_error_and_its_message),
        cmocka_unit_test(cancelled_adds_nothing_and_a_null_ttl_is_unlimited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
