/* Unit tests: the DPoP replay cache (src/actor/jti.c) on a real RocksDB in a temporary
 * directory: a proof's jti is refused a second time, also after the store is closed and opened
 * again; the sweep frees what expired; the bound, and each principal's share of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <event2/thread.h>
#include <ftw.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../store/store_fixture.h"
#include "actor/alarm.h"
#include "actor/jti.h"
#include "core/dpop.h"
#include "core/util.h"

#define WINDOW 330
#define JKT "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
#define JKT2 "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
#define JKT3 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

static int setup(void **state)
{
    return store_fixture_setup(state, "/tmp/mcpd-jti-XXXXXX");
}

static int teardown(void **state)
{
    jti_close();
    store_fixture_free(*state);
    return 0;
}

#define WHO "o:0123456789abcdef0123456789abcdef"
#define WHO2 "o:fedcba9876543210fedcba9876543210"

static jti_result_t check_as(const char *who, const char *jkt, const char *jti, int64_t iat)
{
    return jti_check(who, jkt, jti, strlen(jti), iat);
}

static jti_result_t check(const char *jkt, const char *jti, int64_t iat)
{
    return check_as(WHO, jkt, jti, iat);
}

/* A record as jti.c laid it out before its value named the principal: "dpop/" | iat u64
 * big-endian | jkt | jti -> (empty). */
static void put_raw(store_t *s, const char *jkt, const char *jti, int64_t iat)
{
    unsigned char k[128];
    memcpy(k, "dpop/", 5);
    for (int i = 0; i < 8; i++)
        k[5 + i] = (unsigned char)((uint64_t)iat >> (56 - 8 * i));
    memcpy(k + 13, jkt, DPOP_JKT_LEN);
    memcpy(k + 13 + DPOP_JKT_LEN, jti, strlen(jti));
    store_batch_t *b = store_batch_new(s);
    store_batch_put(b, CF_NODE, k, 13 + DPOP_JKT_LEN + strlen(jti), "", 0);
    assert_int_equal(store_commit(s, b), 0);
    store_batch_free(b);
}

static void a_jti_is_refused_the_second_time_also_after_a_restart(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0);
    assert_int_equal(check(JKT, "a", now), JTI_FRESH);
    assert_int_equal(check(JKT, "a", now), JTI_REPLAY);
    assert_int_equal(check(JKT, "b", now), JTI_FRESH);
    assert_int_equal(check(JKT2, "a", now), JTI_FRESH); /* another key's proof */
    assert_int_equal(jti_count(), 3);
    /* the server stops and starts again on the same data */
    jti_close();
    store_close(f->s);
    f->s = open_in(f->dir);
    assert_non_null(f->s);
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0);
    assert_int_equal(jti_count(), 3);
    assert_int_equal(check(JKT, "a", now), JTI_REPLAY);
    assert_int_equal(check(JKT, "b", now), JTI_REPLAY);
    assert_int_equal(check(JKT2, "a", now), JTI_REPLAY);
    assert_int_equal(check(JKT, "c", now), JTI_FRESH);
}

static void the_sweep_frees_what_expired_and_nothing_else(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0);
    assert_int_equal(check(JKT, "old", now - 200), JTI_FRESH);
    assert_int_equal(check(JKT, "new", now), JTI_FRESH);
    assert_int_equal(jti_count(), 2);
    /* before the first expiry (and its margin): nothing goes, the next sweep is after it */
    int64_t next = jti_sweep(now_wall_ms());
    assert_int_equal(jti_count(), 2);
    assert_true(next >= (now - 200 + WINDOW + JTI_SWEEP_MARGIN_S) * 1000);
    /* past the old one's expiry: it goes, the new one stays and names the next sweep */
    int64_t t = (now - 200 + WINDOW + JTI_SWEEP_MARGIN_S + 1) * 1000;
    next = jti_sweep(t);
    assert_int_equal(jti_count(), 1);
    assert_int_equal(next, (now + WINDOW + JTI_SWEEP_MARGIN_S + JTI_SWEEP_GRANULE_S) * 1000);
    assert_int_equal(check(JKT, "new", now), JTI_REPLAY);
    /* past every expiry: the cache is empty and no sweep is armed */
    next = jti_sweep((now + WINDOW + JTI_SWEEP_MARGIN_S + 1) * 1000);
    assert_int_equal(jti_count(), 0);
    assert_int_equal(next, 0);
    /* what expired while the server was down goes at the start (written as a server that
     * stopped long ago would have left it: jti_check now refuses a proof that old) */
    put_raw(f->s, JKT, "gone", now - WINDOW - JTI_SWEEP_MARGIN_S - 10);
    assert_int_equal(check(JKT, "kept", now + 10), JTI_FRESH);
    jti_close();
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0);
    assert_int_equal(jti_count(), 1);
}

static void a_full_cache_records_nothing_more(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    assert_int_equal(jti_open(f->s, WINDOW, 2, 100), 0);
    assert_int_equal(check(JKT, "1", now), JTI_FRESH);
    assert_int_equal(check(JKT, "2", now), JTI_FRESH);
    assert_int_equal(check(JKT, "3", now), JTI_FULL);
    assert_int_equal(check(JKT, "1", now), JTI_REPLAY); /* a replay is still told as one */
    int64_t retry = jti_retry_after();
    assert_true(retry >= WINDOW && retry <= WINDOW + JTI_SWEEP_MARGIN_S + 1);
    jti_sweep((now + WINDOW + JTI_SWEEP_MARGIN_S + 1) * 1000);
    assert_int_equal(check(JKT, "3", now + WINDOW), JTI_FRESH); /* room again */
}

static void a_principal_past_its_share_does_not_lock_out_another_whatever_its_keys(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    char jti[8];
    assert_int_equal(jti_open(f->s, WINDOW, 10, 50), 0); /* a principal's share: 5 */
    for (int i = 0; i < 5; i++) {
        snprintf(jti, sizeof jti, "%d", i);
        assert_int_equal(check_as(WHO, i < 3 ? JKT : JKT2, jti, now), JTI_FRESH);
    }
    /* past its share with the keys it used, and with a key it never used */
    assert_int_equal(check_as(WHO, JKT, "more", now), JTI_SHARE);
    assert_int_equal(check_as(WHO, JKT3, "more", now), JTI_SHARE);
    assert_int_equal(check_as(WHO2, JKT3, "a", now), JTI_FRESH); /* another still gets in */
    assert_int_equal(check_as(WHO2, JKT, "a", now), JTI_FRESH);  /* even with the same key */
    assert_int_equal(jti_count(), 7);
    assert_int_equal(check_as("", JKT, "x", now), JTI_ERROR); /* a proof counts for someone */
    /* the per-principal counts are rebuilt at a start */
    jti_close();
    assert_int_equal(jti_open(f->s, WINDOW, 10, 50), 0);
    assert_int_equal(check_as(WHO, JKT3, "more", now), JTI_SHARE);
    assert_int_equal(check_as(WHO2, JKT2, "b", now), JTI_FRESH);
    /* the sweep gives the principal its share back */
    jti_sweep((now + WINDOW + JTI_SWEEP_MARGIN_S + 1) * 1000);
    assert_int_equal(jti_count(), 0);
    assert_int_equal(check_as(WHO, JKT3, "more", now + WINDOW), JTI_FRESH);
}

static void a_record_that_names_no_principal_counts_in_the_global_bound_alone(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    for (int i = 0; i < 3; i++)
        put_raw(f->s, JKT, (const char[]){(char)('a' + i), 0}, now);
    assert_int_equal(jti_open(f->s, WINDOW, 6, 50), 0); /* a principal's share: 3 */
    assert_int_equal(jti_count(), 3);
    assert_int_equal(check(JKT, "a", now), JTI_REPLAY); /* still refused as a replay */
    for (int i = 0; i < 3; i++)
        assert_int_equal(check(JKT, (const char[]){(char)('x' + i), 0}, now), JTI_FRESH);
    assert_int_equal(check_as(WHO2, JKT2, "a", now), JTI_FULL); /* 6: the global maximum */
    jti_sweep((now + WINDOW + JTI_SWEEP_MARGIN_S + 1) * 1000);
    assert_int_equal(jti_count(), 0);
}

static void the_global_maximum_still_bounds_every_principal_together(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    assert_int_equal(jti_open(f->s, WINDOW, 4, 50), 0);
    assert_int_equal(check_as(WHO, JKT, "1", now), JTI_FRESH);
    assert_int_equal(check_as(WHO, JKT, "2", now), JTI_FRESH);
    assert_int_equal(check_as(WHO2, JKT2, "1", now), JTI_FRESH);
    assert_int_equal(check_as(WHO2, JKT2, "2", now), JTI_FRESH);
    assert_int_equal(check_as("o:third", JKT3, "1", now), JTI_FULL);
    assert_int_equal(jti_count(), 4); /* the refused one was not counted */
}

static void retry_after_follows_the_earliest_proof_held_through_sweeps(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0);
    assert_int_equal(jti_retry_after(), 1); /* empty */
    assert_int_equal(check(JKT, "new", now), JTI_FRESH);
    assert_int_equal(check(JKT, "old", now - 200), JTI_FRESH);
    int64_t r = jti_retry_after();
    assert_true(r >= WINDOW - 200 && r <= WINDOW - 200 + JTI_SWEEP_MARGIN_S + 1);
    jti_sweep((now - 200 + WINDOW + JTI_SWEEP_MARGIN_S + 1) * 1000); /* "old" goes */
    r = jti_retry_after();
    assert_true(r >= WINDOW && r <= WINDOW + JTI_SWEEP_MARGIN_S + 1);
}

static void a_clock_stepped_back_does_not_readmit_a_swept_proof(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0);
    assert_int_equal(check(JKT, "a", now), JTI_FRESH);
    /* the clock ran an hour ahead when the sweep ran, and is now set back */
    jti_sweep((now + 3600) * 1000);
    assert_int_equal(jti_count(), 0);
    assert_int_not_equal(check(JKT, "a", now), JTI_FRESH); /* its record is gone: refused */
    /* and after a restart, the last cutoff is remembered */
    jti_close();
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0);
    assert_int_not_equal(check(JKT, "a", now), JTI_FRESH);
    assert_int_equal(check(JKT, "b", now + 3600), JTI_FRESH);
}

/* ---- read errors ---- */

static void damage_file(const char *path)
{
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    unsigned char head[4];
    assert_int_equal(fread(head, 1, sizeof head, fp), sizeof head);
    for (size_t i = 0; i < sizeof head; i++)
        head[i] ^= 0xFF;
    assert_int_equal(fseek(fp, 0, SEEK_SET), 0);
    assert_int_equal(fwrite(head, 1, sizeof head, fp), sizeof head);
    assert_int_equal(fclose(fp), 0);
}

/* Damages the first data block of the newest table file (.sst) in dir, or of every one (all):
 * its first 4 bytes, in place, as a failing disk would. The next read of that block fails its
 * checksum (a Corruption status); blocks already in the block cache are not read again. */
static void damage_tables(const char *dir, bool all)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char newest[300] = "";
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".sst") != 0)
            continue;
        if (all || strcmp(e->d_name, newest) > 0) /* same width: numbered with leading 0s */
            snprintf(newest, sizeof newest, "%s", e->d_name);
        if (!all)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        damage_file(path);
    }
    closedir(d);
    assert_true(newest[0]);
    if (!all) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, newest);
        damage_file(path);
    }
}

static void a_stored_cutoff_that_cannot_be_read_refuses_the_open(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0); /* stores the cutoff */
    assert_int_equal(check(JKT, "a", now), JTI_FRESH);
    /* keys that sort between the cutoff's ("dpop-cutoff") and the proofs' ("dpop/..."): the
     * first block holds the cutoff and none of the proofs, whose count reads on */
    store_batch_t *b = store_batch_new(f->s);
    char pad[200];
    memset(pad, 'x', sizeof pad);
    for (int i = 0; i < 400; i++) {
        char k[32];
        int kl = snprintf(k, sizeof k, "dpop.%04d", i);
        store_batch_put(b, CF_NODE, k, (size_t)kl, pad, sizeof pad);
    }
    assert_int_equal(store_commit(f->s, b), 0);
    store_batch_free(b);
    jti_close();
    assert_int_equal(store_flush(f->s), 0);
    store_close(f->s);
    damage_tables(f->dir, true);
    f->s = open_in(f->dir);
    assert_non_null(f->s);
    /* before: 0, the cutoff taken as absent (a clock stepped back would readmit swept proofs) */
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), -EIO);
}

static void a_replay_check_that_cannot_read_is_neither_fresh_nor_a_write_refusal(void **state)
{
    fixture_t *f = *state;
    int64_t now = now_wall_ms() / 1000;
    assert_int_equal(jti_open(f->s, WINDOW, 1000, 100), 0);
    assert_int_equal(check(JKT, "a", now), JTI_FRESH);
    assert_int_equal(store_flush(f->s), 0); /* its record in a table file of its own */
    damage_tables(f->dir, false);
    assert_int_equal(check(JKT, "a", now), JTI_UNREAD); /* before: JTI_ERROR (refused write) */
    assert_int_equal(jti_count(), 1);
}

/* ---- the node alarm (actor/alarm.c) that runs the sweep ---- */

static atomic_int g_calls;
static atomic_llong g_called_at;
static atomic_llong g_next;

static int64_t count_call(int64_t now_ms)
{
    atomic_fetch_add(&g_calls, 1);
    atomic_store(&g_called_at, now_ms);
    return atomic_exchange(&g_next, 0);
}

static void wait_calls(int n, int ms)
{
    for (int i = 0; i < ms / 10 && atomic_load(&g_calls) < n; i++)
        usleep(10000);
}

static void the_node_alarm_runs_at_its_due_time_and_only_then(void **state)
{
    fixture_t *f = *state;
    alarms_node_fn(count_call);
    int64_t t0 = now_wall_ms();
    alarms_node_hint(t0 + 300); /* before the scheduler runs: kept, as at a start */
    assert_int_equal(alarms_start(f->s), 0);
    usleep(100000);
    int calls = atomic_load(&g_calls);
    if (now_wall_ms() < t0 + 300)   /* (a test thread held up past it proves nothing) */
        assert_int_equal(calls, 0); /* not before its time */
    wait_calls(1, 3000);
    assert_int_equal(atomic_load(&g_calls), 1);
    assert_true(atomic_load(&g_called_at) >= t0 + 300);
    /* it returned 0: nothing is armed, nothing runs while idle */
    usleep(400000);
    assert_int_equal(atomic_load(&g_calls), 1);
    /* a hint arms it again; the function's answer re-arms it once more, then it rests */
    atomic_store(&g_next, now_wall_ms() + 200);
    alarms_node_hint(now_wall_ms() + 100);
    wait_calls(3, 3000);
    assert_int_equal(atomic_load(&g_calls), 3);
    usleep(400000);
    assert_int_equal(atomic_load(&g_calls), 3);
    /* a later hint than the one armed does not delay it */
    int64_t t1 = now_wall_ms();
    alarms_node_hint(t1 + 150);
    alarms_node_hint(t1 + 5000);
    wait_calls(4, 2000);
    assert_int_equal(atomic_load(&g_calls), 4);
    assert_true(atomic_load(&g_called_at) < t1 + 2000);
    alarms_stop();
    alarms_free();
}

int main(void)
{
    evthread_use_pthreads(); /* as main.c: hints wake the alarm thread's loop */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_jti_is_refused_the_second_time_also_after_a_restart,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(the_sweep_frees_what_expired_and_nothing_else, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_full_cache_records_nothing_more, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_principal_past_its_share_does_not_lock_out_another_whatever_its_keys, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            a_record_that_names_no_principal_counts_in_the_global_bound_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(the_global_maximum_still_bounds_every_principal_together,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(retry_after_follows_the_earliest_proof_held_through_sweeps,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_clock_stepped_back_does_not_readmit_a_swept_proof, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_node_alarm_runs_at_its_due_time_and_only_then, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_stored_cutoff_that_cannot_be_read_refuses_the_open, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_replay_check_that_cannot_read_is_neither_fresh_nor_a_write_refusal, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
