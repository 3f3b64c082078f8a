/* Unit tests: the start-up rule that settles a node's shard records against its cluster file
 * (shard_decide, src/actor/shardmove_start.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "actor/shardmove.h"

static shardrec_t rec(shardrec_state_t st, uint32_t epoch, const char *peer)
{
    shardrec_t r = {.state = st, .epoch = epoch};
    strcpy(r.peer, peer);
    return r;
}

static shard_verdict_t decide(bool mine, uint32_t file_epoch, shardrec_t r, bool *claim, char *why)
{
    return shard_decide(mine, file_epoch, &r, SHARDREC_BOOT_DONE, claim, why, 300);
}

static void
a_never_moved_shard_of_the_file_is_claimed_at_the_first_start_of_an_old_store(void **state)
{
    bool claim;
    char why[300];
    /* a store with ids and no records: older than the records, its data is the file's shards' */
    shardrec_t none = rec(SHARDREC_NONE, 0, "");
    assert_int_equal(shard_decide(true, 1, &none, SHARDREC_BOOT_NONE, &claim, why, sizeof why),
                     SHARD_SERVE);
    assert_true(claim);
    assert_string_equal(why, "");
}

static void a_new_data_directory_claims_nothing_until_it_is_bootstrapped(void **state)
{
    bool claim;
    char why[300];
    /* a new cluster's node, a wiped one, or one a hand-edited file gives another node's shard:
     * none of them holds data for it */
    shardrec_t none = rec(SHARDREC_NONE, 0, "");
    assert_int_equal(shard_decide(true, 1, &none, SHARDREC_BOOT_PENDING, &claim, why, sizeof why),
                     SHARD_REFUSE);
    assert_false(claim);
    assert_non_null(strstr(why, "not bootstrapped"));
    /* what it adopted is its own, bootstrapped or not */
    shardrec_t held = rec(SHARDREC_OWNED, 3, "n1");
    assert_int_equal(shard_decide(true, 3, &held, SHARDREC_BOOT_PENDING, &claim, why, sizeof why),
                     SHARD_SERVE);
    assert_int_equal(shard_decide(false, 1, &none, SHARDREC_BOOT_PENDING, &claim, why, sizeof why),
                     SHARD_NOT_MINE);
}

static void after_the_first_start_a_shard_without_a_record_is_never_claimed(void **state)
{
    bool claim;
    char why[300];
    /* a hand-edited map (set-shard) gives this node a shard another node holds: it must not
     * serve it empty and mint ids there */
    assert_int_equal(decide(true, 1, rec(SHARDREC_NONE, 0, ""), &claim, why), SHARD_REFUSE);
    assert_false(claim);
    assert_non_null(strstr(why, "never held it"));
}

static void another_nodes_shard_without_a_record_is_not_served_and_not_claimed(void **state)
{
    bool claim;
    char why[300];
    assert_int_equal(decide(false, 1, rec(SHARDREC_NONE, 0, ""), &claim, why), SHARD_NOT_MINE);
    assert_false(claim);
    assert_int_equal(decide(false, 7, rec(SHARDREC_NONE, 0, ""), &claim, why), SHARD_NOT_MINE);
}

static void a_shard_the_file_says_moved_here_without_a_record_is_refused(void **state)
{
    bool claim;
    char why[300];
    /* a stale data directory, or an adopt that never happened: no data here */
    assert_int_equal(decide(true, 3, rec(SHARDREC_NONE, 0, ""), &claim, why), SHARD_REFUSE);
    assert_false(claim);
    assert_non_null(strstr(why, "never adopted"));
}

static void a_released_shard_is_never_served_even_when_the_file_still_gives_it_here(void **state)
{
    bool claim;
    char why[300];
    /* the stale cluster file after a drain, or a kill -9 after the release */
    assert_int_equal(decide(true, 1, rec(SHARDREC_RELEASED, 2, "n2"), &claim, why), SHARD_REFUSE);
    assert_non_null(strstr(why, "released at epoch 2 to n2"));
    assert_false(claim);
    assert_int_equal(decide(false, 2, rec(SHARDREC_RELEASED, 2, "n2"), &claim, why),
                     SHARD_NOT_MINE);
}

static void a_held_shard_is_served_when_the_file_agrees_or_is_older(void **state)
{
    bool claim;
    char why[300];
    assert_int_equal(decide(true, 4, rec(SHARDREC_OWNED, 4, "n1"), &claim, why), SHARD_SERVE);
    assert_string_equal(why, "");
    assert_int_equal(decide(true, 1, rec(SHARDREC_OWNED, 4, "n1"), &claim, why), SHARD_SERVE);
    /* adopted, then killed before the map flipped: the file still names the old owner at an
     * older epoch; this node holds the newest */
    assert_int_equal(decide(false, 1, rec(SHARDREC_OWNED, 2, "n1"), &claim, why), SHARD_SERVE);
    assert_non_null(strstr(why, "is older"));
    assert_false(claim);
}

static void
a_held_shard_is_refused_when_the_file_names_a_later_or_the_same_epoch_elsewhere(void **state)
{
    bool claim;
    char why[300];
    /* a restored backup of the data directory: the file knows of a later move */
    assert_int_equal(decide(true, 5, rec(SHARDREC_OWNED, 4, "n1"), &claim, why), SHARD_REFUSE);
    assert_non_null(strstr(why, "may be stale"));
    assert_int_equal(decide(false, 5, rec(SHARDREC_OWNED, 4, "n1"), &claim, why), SHARD_REFUSE);
    /* the same epoch for two nodes: a hand-edited file */
    assert_int_equal(decide(false, 4, rec(SHARDREC_OWNED, 4, "n1"), &claim, why), SHARD_REFUSE);
    assert_non_null(strstr(why, "another node"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            a_never_moved_shard_of_the_file_is_claimed_at_the_first_start_of_an_old_store),
        cmocka_unit_test(a_new_data_directory_claims_nothing_until_it_is_bootstrapped),
        cmocka_unit_test(after_the_first_start_a_shard_without_a_record_is_never_claimed),
        cmocka_unit_test(another_nodes_shard_without_a_record_is_not_served_and_not_claimed),
        cmocka_unit_test(a_shard_the_file_says_moved_here_without_a_record_is_refused),
        cmocka_unit_test(a_released_shard_is_never_served_even_when_the_file_still_gives_it_here),
        cmocka_unit_test(a_held_shard_is_served_when_the_file_agrees_or_is_older),
        cmocka_unit_test(
            a_held_shard_is_refused_when_the_file_names_a_later_or_the_same_epoch_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
