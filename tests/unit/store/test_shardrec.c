/* Unit tests: shard ownership records (src/store/shardrec.c) and the export manifest
 * (src/store/manifest.c), on a real RocksDB in a temporary directory; a shard's export, its
 * key counts and its ingestion (src/store/store.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_damage.h"
#include "store_fixture.h"
#include "store/manifest.h"
#include "store/shardrec.h"

static int setup(void **state)
{
    return store_fixture_setup(state, "/tmp/mcpd-shardrec-XXXXXX");
}

static int teardown(void **state)
{
    store_fixture_free(*state);
    return 0;
}

/* ---- records ---- */

static void a_record_round_trips_through_its_text(void **state)
{
    shardrec_t in = {.state = SHARDREC_RELEASED, .epoch = 7, .declined = 3, .export_kept = true};
    strcpy(in.peer, "node-2.b_x");
    char text[256];
    size_t n = shardrec_encode(&in, text, sizeof text);
    assert_true(n > 0);
    shardrec_t out;
    assert_int_equal(shardrec_decode(text, n, &out), 0);
    assert_int_equal(out.state, SHARDREC_RELEASED);
    assert_int_equal(out.epoch, 7);
    assert_int_equal(out.declined, 3);
    assert_true(out.export_kept);
    assert_string_equal(out.peer, "node-2.b_x");
}

static void values_that_are_not_records_do_not_decode(void **state)
{
    static const char *const bad[] = {
        "",
        "[]",
        "{}",
        "{\"s\":\"owned\",\"e\":0,\"d\":0,\"x\":false,\"p\":\"\"}", /* no epoch */
        "{\"s\":\"gone\",\"e\":1,\"d\":0,\"x\":false,\"p\":\"\"}",
        "{\"s\":\"owned\",\"e\":-1,\"d\":0,\"x\":false,\"p\":\"\"}",
        "{\"s\":\"owned\",\"e\":1,\"d\":0,\"x\":1,\"p\":\"\"}",
        "{\"s\":\"owned\",\"e\":1,\"d\":0,\"x\":false,\"p\":\"a b\"}",
        "{\"s\":\"owned\",\"e\":1,\"d\":0,\"x\":false,\"p\":\"a\\u0000b\"}",
        "{\"s\":\"owned\",\"e\":1,\"e\":2,\"d\":0,\"x\":false,\"p\":\"\"}",
        "{\"s\":\"owned\",\"e\":3000000000,\"d\":0,\"x\":false,\"p\":\"\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        shardrec_t out;
        assert_int_equal(shardrec_decode(bad[i], strlen(bad[i]), &out), -EINVAL);
        assert_int_equal(out.state, SHARDREC_NONE);
    }
}

static void records_are_stored_read_back_and_survive_a_reopen(void **state)
{
    fixture_t *f = *state;
    shardrec_t r;
    assert_int_equal(shardrec_get(f->s, 0xabc, &r), 1);
    int shards[2] = {0xabc, 0x001};
    shardrec_t recs[2] = {{.state = SHARDREC_OWNED, .epoch = 1},
                          {.state = SHARDREC_RELEASED, .epoch = 4, .export_kept = true}};
    strcpy(recs[1].peer, "n2");
    assert_int_equal(shardrec_put_many(f->s, shards, recs, 2), 0);
    store_close(f->s);
    f->s = open_in(f->dir);
    assert_non_null(f->s);
    static shardrec_t all[SHARD_COUNT];
    static bool bad[SHARD_COUNT];
    assert_int_equal(shardrec_load_all(f->s, all, bad), 0);
    assert_int_equal(all[0xabc].state, SHARDREC_OWNED);
    assert_int_equal(all[0xabc].epoch, 1);
    assert_int_equal(all[0x001].state, SHARDREC_RELEASED);
    assert_string_equal(all[0x001].peer, "n2");
    assert_int_equal(all[0x002].state, SHARDREC_NONE);
    assert_int_equal(shardrec_get(f->s, 0x001, &r), 0);
    assert_int_equal(r.epoch, 4);
    /* a record that does not decode marks its shard only */
    store_batch_t *b = store_batch_new(f->s);
    store_batch_put(b, CF_NODE, "shard/00f", 9, "garbage", 7);
    assert_int_equal(store_commit(f->s, b), 0);
    store_batch_free(b);
    assert_int_equal(shardrec_load_all(f->s, all, bad), -EINVAL);
    assert_true(bad[0x00f]);
    assert_false(bad[0xabc]);
    assert_int_equal(all[0xabc].state, SHARDREC_OWNED);
}

static void the_bootstrap_marker_is_written_with_the_first_claims(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(shardrec_bootstrapped(f->s), SHARDREC_BOOT_NONE);
    /* a new data directory waits for its bootstrap, and says so after a restart */
    assert_int_equal(shardrec_mark_pending(f->s), 0);
    assert_int_equal(shardrec_bootstrapped(f->s), SHARDREC_BOOT_PENDING);
    int shards[1] = {0x123};
    shardrec_t recs[1] = {{.state = SHARDREC_OWNED, .epoch = 1}};
    assert_int_equal(shardrec_bootstrap(f->s, shards, recs, 1), 0);
    assert_int_equal(shardrec_bootstrapped(f->s), SHARDREC_BOOT_DONE);
    shardrec_t r;
    assert_int_equal(shardrec_get(f->s, 0x123, &r), 0);
    assert_int_equal(r.state, SHARDREC_OWNED);
}

/* ---- manifest ---- */

static manifest_t a_manifest(void)
{
    manifest_t m = {.shard = 0x2a7, .epoch = 3, .keys = 5};
    strcpy(m.from, "n1");
    strcpy(m.to, "n2");
    m.moved = json_pack("{s:i}", "sessions", 1);
    m.fam[CF_SESSIONS] = (manifest_family_t){.keys = 2, .file = true, .bytes = 1000};
    m.fam[CF_STATE] = (manifest_family_t){.keys = 3, .file = true, .bytes = 20};
    memset(m.fam[CF_SESSIONS].sha256, 0xab, SHA256_LEN);
    return m;
}

static void a_manifest_lists_every_family_and_round_trips(void **state)
{
    manifest_t m = a_manifest();
    json_t *j = manifest_build(&m);
    assert_int_equal(json_array_size(json_object_get(j, "families")), CF__COUNT);
    char *text = json_dumps(j, JSON_COMPACT);
    manifest_t back;
    char why[300];
    assert_int_equal(manifest_parse(text, strlen(text), &back, why, sizeof why), 0);
    assert_int_equal(back.shard, 0x2a7);
    assert_int_equal(back.epoch, 3);
    assert_string_equal(back.to, "n2");
    assert_true(back.fam[CF_SESSIONS].file);
    assert_int_equal(back.fam[CF_SESSIONS].bytes, 1000);
    assert_memory_equal(back.fam[CF_SESSIONS].sha256, m.fam[CF_SESSIONS].sha256, SHA256_LEN);
    assert_false(back.fam[CF_EVENTS].file);
    assert_true(json_equal(back.moved, m.moved));
    free(text);
    json_decref(j);
    manifest_clear(&back);
    manifest_clear(&m);
}

/* The manifest's text with one change made by edit. */
static int parse_edited(void (*edit)(json_t *), char *why)
{
    manifest_t m = a_manifest();
    json_t *j = manifest_build(&m);
    edit(j);
    char *text = json_dumps(j, JSON_COMPACT);
    manifest_t back;
    int rc = manifest_parse(text, strlen(text), &back, why, 300);
    free(text);
    json_decref(j);
    manifest_clear(&m);
    manifest_clear(&back);
    return rc;
}

static void drop_a_family(json_t *j)
{
    json_array_remove(json_object_get(j, "families"), 2);
}
static void drop_a_file(json_t *j)
{
    json_object_del(json_array_get(json_object_get(j, "families"), CF_STATE), "file");
}
static void bad_sha(json_t *j)
{
    json_object_set_new(json_array_get(json_object_get(j, "families"), CF_SESSIONS), "sha256",
                        json_string("xyz"));
}
static void wrong_total(json_t *j)
{
    json_object_set_new(j, "keys", json_integer(6));
}
static void path_in_file(json_t *j)
{
    json_object_set_new(json_array_get(json_object_get(j, "families"), CF_STATE), "file",
                        json_string("../state.sst"));
}
static void bad_peer(json_t *j)
{
    json_object_set_new(j, "to", json_string("n2/../x"));
}
static void family_twice(json_t *j)
{
    json_t *f = json_object_get(j, "families");
    json_array_set(f, 1, json_array_get(f, 0));
}

static void an_incomplete_or_altered_manifest_is_refused_with_the_reason(void **state)
{
    char why[300];
    assert_int_equal(parse_edited(drop_a_family, why), -EBADMSG);
    assert_non_null(strstr(why, "is not listed"));
    assert_int_equal(parse_edited(drop_a_file, why), -EBADMSG);
    assert_non_null(strstr(why, "lacks its file"));
    assert_int_equal(parse_edited(bad_sha, why), -EBADMSG);
    assert_int_equal(parse_edited(wrong_total, why), -EBADMSG);
    assert_non_null(strstr(why, "add up"));
    assert_int_equal(parse_edited(path_in_file, why), -EBADMSG);
    assert_int_equal(parse_edited(bad_peer, why), -EBADMSG);
    assert_int_equal(parse_edited(family_twice, why), -EBADMSG);
    manifest_t m;
    assert_int_equal(manifest_parse("{", 1, &m, why, sizeof why), -EBADMSG);
}

/* ---- export, counts, ingestion ---- */

static void put(store_t *s, store_cf_t cf, const char *k, const char *v)
{
    store_batch_t *b = store_batch_new(s);
    store_batch_put(b, cf, k, strlen(k), v, strlen(v));
    assert_int_equal(store_commit(s, b), 0);
    store_batch_free(b);
}

static void a_shards_export_holds_exactly_its_keys_and_ingests_elsewhere(void **state)
{
    fixture_t *f = *state;
    put(f->s, CF_SESSIONS, "2a7aaaaa", "meta-a");
    put(f->s, CF_STATE, "2a7aaaaa|x", "1");
    put(f->s, CF_STATE, "2a7bbbbb|y", "2");
    put(f->s, CF_SESSIONS, "2a8ccccc", "another shard");
    char alarm[8 + 8];
    memset(alarm, 0, 8);
    memcpy(alarm + 8, "2a7aaaaa", 8);
    store_batch_t *b = store_batch_new(f->s);
    store_batch_put(b, CF_ALARMS, alarm, sizeof alarm, "", 0);
    assert_int_equal(store_commit(f->s, b), 0);
    store_batch_free(b);
    uint64_t keys[CF__COUNT], counted[CF__COUNT];
    char why[300], out[128];
    snprintf(out, sizeof out, "%s/out", f->dir);
    assert_int_equal(mkdir(out, 0700), 0);
    assert_int_equal(store_export_prefix(f->s, "2a7", 3, out, keys, why, sizeof why), 0);
    assert_int_equal(keys[CF_SESSIONS], 1);
    assert_int_equal(keys[CF_STATE], 2);
    assert_int_equal(keys[CF_ALARMS], 1);
    assert_int_equal(keys[CF_EVENTS], 0);
    store_count_prefix(f->s, "2a7", 3, counted);
    assert_memory_equal(keys, counted, sizeof keys);
    assert_true(store_prefix_any(f->s, CF_SESSIONS, "2a7", 3));
    assert_false(store_prefix_any(f->s, CF_SESSIONS, "2a9", 3));
    char path[200];
    snprintf(path, sizeof path, "%s/events.sst", out);
    assert_int_not_equal(access(path, F_OK), 0); /* no keys, no file */
    /* another database takes them */
    char other[128];
    snprintf(other, sizeof other, "%s/other", f->dir);
    store_t *s2 = open_in(other);
    assert_non_null(s2);
    bool present[CF__COUNT] = {0};
    present[CF_SESSIONS] = present[CF_STATE] = present[CF_ALARMS] = true;
    assert_int_equal(store_ingest_dir(s2, "2a7", 3, out, present, false, why, sizeof why), 0);
    store_count_prefix(s2, "2a7", 3, counted);
    assert_memory_equal(keys, counted, sizeof keys);
    store_count_prefix(s2, "2a8", 3, counted);
    assert_int_equal(counted[CF_SESSIONS], 0);
    store_close(s2);
    /* the files' digests are what a reader computes */
    uint64_t bytes;
    unsigned char sha[SHA256_LEN], again[SHA256_LEN];
    snprintf(path, sizeof path, "%s/state.sst", out);
    assert_int_equal(manifest_file_digest(path, &bytes, sha), 0);
    assert_true(bytes > 0);
    assert_int_equal(manifest_file_digest(path, &bytes, again), 0);
    assert_memory_equal(sha, again, SHA256_LEN);
    assert_int_equal(manifest_file_digest("/nonexistent/x", &bytes, sha), -ENOENT);
}

/* A shard's keys, its alarm among them, in table files whose alarms' block is damaged. */
static void shard_with_unreadable_alarms(fixture_t *f)
{
    put(f->s, CF_SESSIONS, "2a7aaaaa", "meta-a");
    put(f->s, CF_STATE, "2a7aaaaa|x", "1");
    char alarm[8 + 8];
    memset(alarm, 0, 8);
    memcpy(alarm + 8, "2a7aaaaa", 8);
    store_batch_t *b = store_batch_new(f->s);
    store_batch_put(b, CF_ALARMS, alarm, sizeof alarm, "", 0);
    assert_int_equal(store_commit(f->s, b), 0);
    store_batch_free(b);
    assert_int_equal(store_flush(f->s), 0);
    store_close(f->s);
    damage_family(f->dir, "alarms");
    f->s = open_in(f->dir);
    assert_non_null(f->s);
}

/* A prefix delete names the alarm keys by a scan of them all: a read error that stopped it is
 * not "no more alarm keys of the prefix". Before, it answered 0 having deleted the id-keyed
 * families and left the alarm keys (which no start looks for: a leftover copy is found by the
 * id-keyed families); now -EIO, and nothing is deleted. */
static void a_prefix_delete_that_cannot_read_the_alarms_deletes_nothing(void **state)
{
    fixture_t *f = *state;
    shard_with_unreadable_alarms(f);
    assert_int_equal(store_delete_prefix(f->s, "2a7", 3), -EIO);
    assert_int_equal(store_prefix_any(f->s, CF_SESSIONS, "2a7", 3), 1);
    assert_int_equal(store_prefix_any(f->s, CF_STATE, "2a7", 3), 1);
}

/* A count of a prefix's keys that a read error stopped is short: -EIO, never a count that an
 * adopt compares with its manifest (it blamed the other node's export). */
static void a_prefix_count_that_cannot_read_answers_eio(void **state)
{
    fixture_t *f = *state;
    shard_with_unreadable_alarms(f);
    uint64_t counted[CF__COUNT];
    assert_int_equal(store_count_prefix(f->s, "2a7", 3, counted), -EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_record_round_trips_through_its_text),
        cmocka_unit_test(values_that_are_not_records_do_not_decode),
        cmocka_unit_test_setup_teardown(records_are_stored_read_back_and_survive_a_reopen, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_bootstrap_marker_is_written_with_the_first_claims,
                                        setup, teardown),
        cmocka_unit_test(a_manifest_lists_every_family_and_round_trips),
        cmocka_unit_test(an_incomplete_or_altered_manifest_is_refused_with_the_reason),
        cmocka_unit_test_setup_teardown(
            a_shards_export_holds_exactly_its_keys_and_ingests_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(a_prefix_delete_that_cannot_read_the_alarms_deletes_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_prefix_count_that_cannot_read_answers_eio, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
