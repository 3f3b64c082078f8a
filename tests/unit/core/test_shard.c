/* Unit tests: shard numbers in ids, ranges, and picking only owned shards (src/core/shard.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/shard.h"
#include "core/util.h"

static void an_ids_shard_is_its_first_three_hex_digits(void **state)
{
    (void)state;
    assert_int_equal(shard_of("000abc"), 0);
    assert_int_equal(shard_of("fff0"), 4095);
    assert_int_equal(shard_of("1a3ffffff"), 0x1a3);
    assert_int_equal(shard_of("1A3"), -1); /* ids are lowercase */
    assert_int_equal(shard_of("1a"), -1);
    assert_int_equal(shard_of(NULL), -1);
    char out[4] = {0};
    shard_put(out, 0x0b7);
    assert_string_equal(out, "0b7");
}

static void ranges_are_three_hex_digits_inclusive(void **state)
{
    (void)state;
    int a, b;
    assert_int_equal(shard_parse_range("abc", &a, &b), 0);
    assert_int_equal(a, 0xabc);
    assert_int_equal(b, 0xabc);
    assert_int_equal(shard_parse_range("000-7ff", &a, &b), 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, 0x7ff);
    assert_int_equal(shard_parse_range("7ff-000", &a, &b), -1);
    assert_int_equal(shard_parse_range("00-7ff", &a, &b), -1);
    assert_int_equal(shard_parse_range("000:7ff", &a, &b), -1);
}

/* Before a cluster is loaded every shard is served; after, only the owned ones, and every id
 * minted (both generators) carries one, spread over them. */
static void ids_are_minted_only_in_owned_shards(void **state)
{
    (void)state;
    assert_true(shard_owned(0) && shard_owned(4095) && !shard_owned(4096) && !shard_owned(-1));
    assert_int_equal(shard_owned_count(), SHARD_COUNT);
    static bool mine[SHARD_COUNT];
    for (int s = 0x100; s <= 0x1ff; s++)
        mine[s] = true;
    mine[0xabc] = true;
    shard_begin_cluster(mine);
    assert_int_equal(shard_owned_count(), 257);
    assert_false(shard_owned(0));
    assert_true(shard_owned(0xabc));
    static int seen[SHARD_COUNT];
    for (int i = 0; i < 4000; i++) {
        char id[SESSION_ID_LEN + 1];
        if (i % 2)
            session_id_fast(id);
        else
            assert_int_equal(session_id_new(id), 0);
        int s = shard_of(id);
        assert_true(shard_owned(s));
        seen[s]++;
    }
    int distinct = 0;
    for (int s = 0; s < SHARD_COUNT; s++)
        distinct += seen[s] > 0;
    assert_true(distinct > 200);    /* spread, not piled on the shard after a gap */
    assert_true(seen[0x100] < 100); /* the first owned shard after the gap is not favoured */
    char r[64];
    shard_ranges(r, sizeof r);
    assert_string_equal(r, "100-1ff,abc");
    shard_set_owned(0xabc, false);
    assert_int_equal(shard_owned_count(), 256);
    for (int i = 0; i < 2000; i++)
        assert_int_not_equal(shard_pick((uint64_t)i * 2654435761u), 0xabc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_ids_shard_is_its_first_three_hex_digits),
        cmocka_unit_test(ranges_are_three_hex_digits_inclusive),
        cmocka_unit_test(ids_are_minted_only_in_owned_shards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
