/* Unit tests: protocol version table and negotiation (src/wire/proto.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/proto.h"

static const char *const SUPPORTED[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

static void every_supported_version_is_found(void **state)
{
    for (int i = 0; i < 3; i++) {
        const proto_t *p = proto_find(SUPPORTED[i]);
        assert_non_null(p);
        assert_string_equal(p->version, SUPPORTED[i]);
    }
}

static void unknown_versions_are_not_found(void **state)
{
    assert_null(proto_find("2024-11-05"));
    assert_null(proto_find("2025-11-25 "));
    assert_null(proto_find("2025-11-2"));
    assert_null(proto_find(""));
    assert_null(proto_find(NULL));
}

static void negotiation_echoes_a_supported_version(void **state)
{
    for (int i = 0; i < 3; i++)
        assert_string_equal(proto_negotiate(SUPPORTED[i])->version, SUPPORTED[i]);
}

static void negotiation_answers_an_unknown_version_with_the_latest(void **state)
{
    assert_ptr_equal(proto_negotiate("2024-11-05"), proto_latest());
    assert_ptr_equal(proto_negotiate("2099-01-01"), proto_latest());
    assert_ptr_equal(proto_negotiate(""), proto_latest());
    assert_ptr_equal(proto_negotiate(NULL), proto_latest());
    assert_string_equal(proto_latest()->version, "2025-11-25");
}

static void ranks_order_versions_by_date(void **state)
{
    const proto_t *a = proto_find("2025-03-26"), *b = proto_find("2025-06-18"),
                  *c = proto_find("2025-11-25");
    assert_true(a->rank < b->rank);
    assert_true(b->rank < c->rank);
    assert_int_equal(proto_latest()->rank, c->rank);
}

static void only_2025_03_26_allows_batches(void **state)
{
    assert_true(proto_find("2025-03-26")->batches);
    assert_false(proto_find("2025-06-18")->batches);
    assert_false(proto_find("2025-11-25")->batches);
}

static void only_2025_11_25_sends_priming_events(void **state)
{
    assert_false(proto_find("2025-03-26")->priming);
    assert_false(proto_find("2025-06-18")->priming);
    assert_true(proto_find("2025-11-25")->priming);
}

static void only_2025_11_25_reports_input_errors_as_results(void **state)
{
    assert_false(proto_find("2025-03-26")->tool_input_errors_as_results);
    assert_false(proto_find("2025-06-18")->tool_input_errors_as_results);
    assert_true(proto_find("2025-11-25")->tool_input_errors_as_results);
}

static void elicitation_exists_from_2025_06_18(void **state)
{
    assert_false(proto_find("2025-03-26")->elicitation);
    assert_true(proto_find("2025-06-18")->elicitation);
    assert_true(proto_find("2025-11-25")->elicitation);
}

static void the_supported_list_names_every_version(void **state)
{
    const char *list = proto_supported_list();
    for (int i = 0; i < 3; i++)
        assert_non_null(strstr(list, SUPPORTED[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_supported_version_is_found),
        cmocka_unit_test(unknown_versions_are_not_found),
        cmocka_unit_test(negotiation_echoes_a_supported_version),
        cmocka_unit_test(negotiation_answers_an_unknown_version_with_the_latest),
        cmocka_unit_test(ranks_order_versions_by_date),
        cmocka_unit_test(only_2025_03_26_allows_batches),
        cmocka_unit_test(only_2025_11_25_sends_priming_events),
        cmocka_unit_test(only_2025_11_25_reports_input_errors_as_results),
        cmocka_unit_test(elicitation_exists_from_2025_06_18),
        cmocka_unit_test(the_supported_list_names_every_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
