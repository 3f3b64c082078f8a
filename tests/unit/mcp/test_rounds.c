/* Unit tests: what the last round of an input-request exchange asked (src/mcp/rounds.c): the
 * record's "k" as {key: method}, and one written before the methods were kept, a list of keys,
 * read the same way for the answers it takes and the round it completes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/internal.h"

#define ELICIT "elicitation/create"

/* A verified retry's one-request actor whose exchange's last round asked keys ("k") and has
 * the answers so far. */
static void retry_of(actor_t *a, json_t *keys, json_t *answers)
{
    memset(a, 0, sizeof *a);
    a->kind = ACTOR_REQUEST;
    json_t *mrtr = json_pack("{s:s,s:o,s:o}", "r", "0123456789abcdef0123456789abcdef", "k", keys,
                             "a", answers);
    mcp_state_set(&mcp_state(a)->modern.mrtr, mrtr);
}

static json_t *accept(void)
{
    return json_pack("{s:s,s:{s:s}}", "action", "accept", "content", "name", "Alice");
}

static void a_round_keeps_each_key_with_its_method(void **state)
{
    (void)state;
    json_t *ir = json_pack("{s:{s:s,s:{}},s:{s:s,s:{}}}", "user_name", "method", ELICIT, "params",
                           "roots", "method", "roots/list", "params");
    json_t *k = modern_round_asked(ir);
    assert_int_equal(json_object_size(k), 2);
    assert_string_equal(json_string_value(json_object_get(k, "user_name")), ELICIT);
    assert_string_equal(json_string_value(json_object_get(k, "roots")), "roots/list");
    json_decref(k);
    json_decref(ir);
}

static void a_retry_takes_only_the_asked_keys_in_either_form(void **state)
{
    (void)state;
    json_t *forms[] = {json_pack("{s:s}", "user_name", ELICIT), json_pack("[s]", "user_name")};
    for (size_t i = 0; i < 2; i++) {
        json_t *ir = json_pack("{s:o,s:{}}", "user_name", accept(), "never_asked");
        json_t *answers = json_object();
        modern_take_asked(answers, ir, forms[i]);
        assert_int_equal(json_object_size(answers), 1);
        assert_non_null(json_object_get(answers, "user_name"));
        json_decref(answers);
        json_decref(ir);
        json_decref(forms[i]);
    }
    /* a record from before keys were kept: every answer */
    json_t *ir = json_pack("{s:{},s:{}}", "one", "two");
    json_t *answers = json_object();
    modern_take_asked(answers, ir, NULL);
    assert_int_equal(json_object_size(answers), 2);
    json_decref(answers);
    json_decref(ir);
}

static void a_round_is_answered_when_every_key_is_in_either_form(void **state)
{
    (void)state;
    actor_t a;
    retry_of(&a, json_pack("{s:s,s:s}", "one", ELICIT, "two", ELICIT),
             json_pack("{s:o}", "one", accept()));
    assert_false(modern_round_answered(&a)); /* "two" is not */
    json_object_set_new(json_object_get(mcp_modern_mrtr(&a), "a"), "two", accept());
    assert_true(modern_round_answered(&a));
    mcp_state_free(&a);
    retry_of(&a, json_pack("[s]", "one"), json_pack("{s:o}", "one", accept()));
    assert_true(modern_round_answered(&a));
    json_object_del(mcp_modern_mrtr(&a), "r"); /* no verified requestState: never */
    assert_false(modern_round_answered(&a));
    mcp_state_free(&a);
}

static void a_malformed_answer_is_named_when_its_method_is_known(void **state)
{
    (void)state;
    actor_t a;
    char why[160];
    retry_of(&a, json_pack("{s:s}", "user_name", ELICIT),
             json_pack("{s:{s:b}}", "user_name", "nonsense", 1));
    const char *bad = modern_round_problem(&a, why, sizeof why);
    assert_non_null(bad);
    assert_non_null(strstr(bad, "Invalid params: inputResponses[\"user_name\"] is not an "
                                "ElicitResult"));
    json_object_set_new(json_object_get(mcp_modern_mrtr(&a), "a"), "user_name", accept());
    assert_null(modern_round_problem(&a, why, sizeof why));
    mcp_state_free(&a);
    /* an older record knows no methods: the run checks the answer */
    retry_of(&a, json_pack("[s]", "user_name"), json_pack("{s:{s:b}}", "user_name", "nonsense", 1));
    assert_null(modern_round_problem(&a, why, sizeof why));
    mcp_state_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_round_keeps_each_key_with_its_method),
        cmocka_unit_test(a_retry_takes_only_the_asked_keys_in_either_form),
        cmocka_unit_test(a_round_is_answered_when_every_key_is_in_either_form),
        cmocka_unit_test(a_malformed_answer_is_named_when_its_method_is_known),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
