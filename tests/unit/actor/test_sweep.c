/* Unit tests: sweep planning (sweep_next_due) and the expiry index key (src/actor/sweep.c,
 * src/store/keys.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "actor/actor.h"
#include "store/keys.h"

#define NOW 1000000
#define SOON 100 /* SWEEP_SOON_MS */

static void with_nothing_but_the_session_the_alarm_is_the_session_expiry(void **state)
{
    assert_int_equal(sweep_next_due(NOW, false, NOW + 5000, 0, 0), NOW + 5000);
}

static void the_earliest_finished_stream_expiry_wins(void **state)
{
    assert_int_equal(sweep_next_due(NOW, false, NOW + 5000, NOW + 300, NOW + 900), NOW + 300);
}

static void the_standalone_stream_expiry_wins_when_earliest(void **state)
{
    assert_int_equal(sweep_next_due(NOW, false, NOW + 5000, NOW + 3000, NOW + 700), NOW + 700);
}

static void the_session_expiry_caps_every_other_expiry(void **state)
{
    assert_int_equal(sweep_next_due(NOW, false, NOW + 200, NOW + 300, NOW + 900), NOW + 200);
}

static void a_run_that_hit_its_limit_comes_back_soon(void **state)
{
    assert_int_equal(sweep_next_due(NOW, true, NOW + 5000, NOW + 3000, 0), NOW + SOON);
}

static void a_run_that_hit_its_limit_never_passes_the_session_expiry(void **state)
{
    assert_int_equal(sweep_next_due(NOW, true, NOW + 50, 0, 0), NOW + 50);
}

static void something_already_due_but_left_comes_back_soon(void **state)
{
    /* a finished stream that was being resumed is skipped; its key is still <= now */
    assert_int_equal(sweep_next_due(NOW, false, NOW + 5000, NOW - 10, 0), NOW + SOON);
}

static void expiry_keys_sort_by_time_within_a_session(void **state)
{
    const char *sid = "0123456789abcdef0123456789abcdef";
    unsigned char a[KEY_EXPIRY_LEN], b[KEY_EXPIRY_LEN], c[KEY_EXPIRY_LEN];
    key_expiry(a, sid, 1000, 9);
    key_expiry(b, sid, 1001, 1);
    key_expiry(c, sid, 70000, 0);
    assert_true(memcmp(a, b, sizeof a) < 0);
    assert_true(memcmp(b, c, sizeof b) < 0);
    unsigned char hi[SESSION_ID_LEN];
    key_session_upper(hi, sid);
    assert_true(memcmp(c, hi, SESSION_ID_LEN) < 0);
}

static void an_expiry_key_round_trips(void **state)
{
    const char *sid = "ffffffffffffffffffffffffffffffff";
    unsigned char k[KEY_EXPIRY_LEN];
    key_expiry(k, sid, 1767225600123LL, 0x1234);
    int64_t when;
    uint64_t num;
    assert_int_equal(key_expiry_decode(k, sizeof k, &when, &num), 0);
    assert_int_equal(when, 1767225600123LL);
    assert_int_equal(num, 0x1234);
    assert_int_equal(key_expiry_decode(k, sizeof k - 1, &when, &num), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(with_nothing_but_the_session_the_alarm_is_the_session_expiry),
        cmocka_unit_test(the_earliest_finished_stream_expiry_wins),
        cmocka_unit_test(the_standalone_stream_expiry_wins_when_earliest),
        cmocka_unit_test(the_session_expiry_caps_every_other_expiry),
        cmocka_unit_test(a_run_that_hit_its_limit_comes_back_soon),
        cmocka_unit_test(a_run_that_hit_its_limit_never_passes_the_session_expiry),
        cmocka_unit_test(something_already_due_but_left_comes_back_soon),
        cmocka_unit_test(expiry_keys_sort_by_time_within_a_session),
        cmocka_unit_test(an_expiry_key_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
