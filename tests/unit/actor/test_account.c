/* Unit tests: a moving shard's stored records counted into the gauges and their owners' shares
 * (src/actor/account.c), on a real store whose sessions' table block can be damaged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>

#include "../store/store_damage.h"
#include "../store/store_fixture.h"
#include "actor/actor.h"
#include "core/principal.h"
#include "store/sessionrec.h"

static int setup(void **state)
{
    int64_t caps[PR__COUNT] = {0};
    principals_configure(caps, 100);
    return store_fixture_setup(state, "/tmp/mcpd-account-XXXXXX");
}

static int teardown(void **state)
{
    store_fixture_free(*state);
    return 0;
}

/* Three sessions of shard 2a7, two of alice's and one of bob's, and one of another shard. */
static void put_sessions(store_t *s)
{
    static const char *const recs[][2] = {
        {"2a7aaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "{\"v\":1,\"p\":\"t:alice\"}"},
        {"2a7bbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "{\"v\":1,\"p\":\"t:alice\"}"},
        {"2a7ccccccccccccccccccccccccccccc", "{\"v\":1,\"p\":\"t:bob\"}"},
        {"2a8ddddddddddddddddddddddddddddd", "{\"v\":1,\"p\":\"t:bob\"}"},
    };
    store_batch_t *b = store_batch_new(s);
    for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++)
        sessionrec_put_meta(b, recs[i][0], recs[i][1], strlen(recs[i][1]));
    assert_int_equal(store_commit(s, b), 0);
    store_batch_free(b);
}

static long long held(const char *name)
{
    principal_t *p = principal_get(name);
    long long n = principal_held(p, PR_SESSIONS);
    principal_unref(p);
    return n;
}

static void a_shards_tally_is_added_only_when_applied(void **state)
{
    fixture_t *f = *state;
    put_sessions(f->s);
    uint64_t by[STORED__KINDS] = {0};
    actors_tally_t *t = actors_tally_stored(f->s, "2a7", 3, by);
    assert_non_null(t);
    assert_int_equal(by[STORED_SESSION], 3);
    assert_int_equal(principal_total(PR_SESSIONS), 0); /* read, not added */
    actors_tally_apply(t, 1);
    assert_int_equal(held("t:alice"), 2);
    assert_int_equal(held("t:bob"), 1);
    t = actors_tally_stored(f->s, "2a7", 3, by);
    actors_tally_apply(t, -1); /* the shard leaves */
    assert_int_equal(principal_total(PR_SESSIONS), 0);
}

/* An adopt's (or a release's) recount of the gauges and shares used to add what it read as it
 * walked and to go on past a read error: short until a restart. A tally that a read error
 * stopped is no tally: NULL, and nothing is added (the move fails before its record). */
static void a_tally_that_a_read_error_stopped_adds_nothing(void **state)
{
    fixture_t *f = *state;
    put_sessions(f->s);
    assert_int_equal(store_flush(f->s), 0);
    store_close(f->s);
    damage_family_at(f->dir, NULL, false);
    f->s = open_in(f->dir);
    assert_non_null(f->s);
    uint64_t by[STORED__KINDS] = {0};
    assert_null(actors_tally_stored(f->s, "2a7", 3, by));
    assert_int_equal(principal_total(PR_SESSIONS), 0);
    assert_int_equal(held("t:alice"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_shards_tally_is_added_only_when_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(a_tally_that_a_read_error_stopped_adds_nothing, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
