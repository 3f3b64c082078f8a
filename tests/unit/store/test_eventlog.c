/* Unit tests: the event log (src/store/eventlog.c) on a real RocksDB in a temporary directory:
 * append with cap eviction, replay after an id, gaps, stream records, the expiry index, the
 * in-flight index, deleting a stream and a session. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <unistd.h>

#include "store/eventlog.h"
#include "store/keys.h"
#include "store/sessionrec.h"

static const char SID_A[] = "0123456789abcdef0123456789abcdef";
static const char SID_B[] = "0123456789abcdef0123456789abcdf0"; /* the next sid after A */

typedef struct fixture {
    char dir[64];
    store_t *s;
    store_batch_t *b;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/mcpd-eventlog-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    char err[256];
    f->s = store_open(f->dir, false, 0, err, sizeof err);
    if (!f->s) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    f->b = store_batch_new(f->s);
    *state = f;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    store_batch_free(f->b);
    store_close(f->s);
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static void commit(fixture_t *f)
{
    assert_int_equal(store_commit(f->s, f->b), 0);
}

/* Appends "e<seq>" events 1..n to a stream with the given cap. */
static void append_n(fixture_t *f, const char *sid, uint64_t stream, uint64_t n, uint64_t cap)
{
    for (uint64_t seq = 1; seq <= n; seq++) {
        char data[32];
        int len = snprintf(data, sizeof data, "e%llu", (unsigned long long)seq);
        uint64_t evicted;
        eventlog_append(f->s, f->b, sid, stream, seq, data, (size_t)len, cap, &evicted);
        commit(f); /* the eviction reads what earlier appends stored */
    }
}

typedef struct seen {
    uint64_t seqs[64];
    char data[64][16];
    int n;
} seen_t;

static void collect(void *arg, uint64_t seq, const char *data, size_t len)
{
    seen_t *s = arg;
    s->seqs[s->n] = seq;
    snprintf(s->data[s->n], sizeof s->data[0], "%.*s", (int)len, data);
    s->n++;
}

static void a_replay_after_an_id_returns_the_later_events_in_order(void **state)
{
    fixture_t *f = *state;
    append_n(f, SID_A, 1, 5, 0);
    seen_t s = {0};
    uint64_t first;
    assert_int_equal(eventlog_replay_after(f->s, SID_A, 1, 2, collect, &s, &first), 3);
    assert_int_equal(first, 3);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.seqs[0], 3);
    assert_int_equal(s.seqs[2], 5);
    assert_string_equal(s.data[0], "e3");
    assert_string_equal(s.data[2], "e5");
}

static void a_replay_stays_within_its_stream_and_session(void **state)
{
    fixture_t *f = *state;
    append_n(f, SID_A, 1, 3, 0);
    append_n(f, SID_A, 2, 4, 0);
    append_n(f, SID_B, 1, 6, 0);
    seen_t s = {0};
    uint64_t first;
    assert_int_equal(eventlog_replay_after(f->s, SID_A, 1, 0, collect, &s, &first), 3);
    assert_int_equal(s.seqs[2], 3);
    assert_int_equal(eventlog_newest_seq(f->s, SID_A, 2), 4);
    assert_int_equal(eventlog_newest_seq(f->s, SID_B, 1), 6);
    assert_int_equal(eventlog_newest_seq(f->s, SID_B, 2), 0);
}

static void nothing_follows_the_last_event_or_the_largest_seq(void **state)
{
    fixture_t *f = *state;
    append_n(f, SID_A, 1, 3, 0);
    seen_t s = {0};
    uint64_t first = 9;
    assert_int_equal(eventlog_replay_after(f->s, SID_A, 1, 3, collect, &s, &first), 0);
    assert_int_equal(first, 0);
    assert_int_equal(eventlog_replay_after(f->s, SID_A, 1, UINT64_MAX, collect, &s, &first), 0);
    assert_int_equal(s.n, 0);
}

static void the_cap_evicts_the_oldest_and_a_replay_from_before_shows_the_gap(void **state)
{
    fixture_t *f = *state;
    uint64_t evicted_total = 0;
    for (uint64_t seq = 1; seq <= 5; seq++) {
        char data[8];
        int len = snprintf(data, sizeof data, "e%llu", (unsigned long long)seq);
        uint64_t evicted;
        eventlog_append(f->s, f->b, SID_A, 1, seq, data, (size_t)len, 3, &evicted);
        commit(f);
        if (seq > 3)
            assert_int_equal(evicted, 2); /* "e1", "e2": their sizes, for the byte budget */
        else
            assert_int_equal(evicted, 0);
        evicted_total += evicted;
    }
    assert_int_equal(evicted_total, 4);
    seen_t s = {0};
    uint64_t first;
    assert_int_equal(eventlog_replay_after(f->s, SID_A, 1, 0, collect, &s, &first), 3);
    assert_int_equal(first, 3); /* not 1: the caller counts a gap */
    assert_string_equal(s.data[0], "e3");
}

static void an_empty_event_is_replayed_to_the_caller_who_skips_it(void **state)
{
    fixture_t *f = *state;
    uint64_t ev;
    eventlog_append(f->s, f->b, SID_A, 0, 1, "", 0, 0, &ev); /* a priming event */
    eventlog_append(f->s, f->b, SID_A, 0, 2, "x", 1, 0, &ev);
    commit(f);
    seen_t s = {0};
    uint64_t first;
    assert_int_equal(eventlog_replay_after(f->s, SID_A, 0, 0, collect, &s, &first), 2);
    assert_string_equal(s.data[0], "");
    assert_string_equal(s.data[1], "x");
}

static void a_stream_record_round_trips_and_numbers_continue_after_the_newest(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(eventlog_next_stream(f->s, SID_A), 1);
    json_t *ids = json_pack("[i,s]", 7, "x");
    streamrec_t r = {.finished = true,
                     .delivered = false,
                     .seq = 9,
                     .last_write_ms = 1234,
                     .bytes = 77,
                     .req_ids = ids};
    eventlog_put_stream(f->b, SID_A, 5, &r);
    eventlog_put_stream(f->b, SID_A, 2, &r);
    commit(f);
    streamrec_t back;
    assert_int_equal(eventlog_get_stream(f->s, SID_A, 5, &back), 0);
    assert_true(back.finished);
    assert_int_equal(back.seq, 9);
    assert_int_equal(back.bytes, 77);
    assert_true(json_equal(back.req_ids, ids));
    json_decref(back.req_ids);
    json_decref(ids);
    assert_int_equal(eventlog_get_stream(f->s, SID_A, 3, &back), 1);
    assert_int_equal(eventlog_next_stream(f->s, SID_A), 6);
    assert_int_equal(eventlog_next_stream(f->s, SID_B), 1);
}

static void the_stream_totals_are_the_next_number_and_the_bytes_the_records_keep(void **state)
{
    fixture_t *f = *state;
    uint64_t bytes = 1;
    bool known = false;
    assert_int_equal(eventlog_stream_totals(f->s, SID_A, &bytes, &known), 1);
    assert_int_equal(bytes, 0);
    assert_true(known);
    streamrec_t r = {.finished = true, .seq = 3, .bytes = 100};
    eventlog_put_stream(f->b, SID_A, 0, &r); /* the standalone stream counts too */
    r.bytes = 20;
    eventlog_put_stream(f->b, SID_A, 4, &r);
    r.bytes = 3;
    eventlog_put_stream(f->b, SID_A, 9, &r);
    r.bytes = 5000;
    eventlog_put_stream(f->b, SID_B, 1, &r); /* the next session's */
    commit(f);
    assert_int_equal(eventlog_stream_totals(f->s, SID_A, &bytes, &known), 10);
    assert_int_equal(bytes, 123);
    assert_true(known);
    /* a record of an older server ('S': no bytes field) counts 0 and says so */
    unsigned char k[KEY_STREAM_LEN], old[18] = {'S', 1};
    key_stream(k, SID_A, 11);
    store_batch_put(f->b, CF_STREAMS, k, sizeof k, old, sizeof old);
    commit(f);
    assert_int_equal(eventlog_stream_totals(f->s, SID_A, &bytes, &known), 12);
    assert_int_equal(bytes, 123);
    assert_false(known);
}

typedef struct expiries {
    int64_t at[16];
    uint64_t stream[16];
    int n, stop_after;
} expiries_t;

static bool collect_expiry(void *arg, int64_t expiry, uint64_t stream)
{
    expiries_t *e = arg;
    e->at[e->n] = expiry;
    e->stream[e->n] = stream;
    e->n++;
    return e->stop_after == 0 || e->n < e->stop_after;
}

static void the_expiry_index_is_walked_in_expiry_order_up_to_a_bound(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(eventlog_first_expiry(f->s, SID_A), 0);
    eventlog_index_expiry(f->b, SID_A, 3000, 1);
    eventlog_index_expiry(f->b, SID_A, 1000, 4);
    eventlog_index_expiry(f->b, SID_A, 2000, 2);
    eventlog_index_expiry(f->b, SID_B, 500, 1);
    commit(f);
    assert_int_equal(eventlog_first_expiry(f->s, SID_A), 1000);
    expiries_t e = {0};
    eventlog_scan_expiry(f->s, SID_A, 2000, collect_expiry, &e);
    assert_int_equal(e.n, 2);
    assert_int_equal(e.at[0], 1000);
    assert_int_equal(e.stream[0], 4);
    assert_int_equal(e.at[1], 2000);
    expiries_t all = {0};
    eventlog_scan_expiry(f->s, SID_A, INT64_MAX, collect_expiry, &all);
    assert_int_equal(all.n, 3);
    expiries_t one = {.stop_after = 1};
    eventlog_scan_expiry(f->s, SID_A, INT64_MAX, collect_expiry, &one);
    assert_int_equal(one.n, 1);
}

static void deleting_a_stream_takes_its_events_record_and_index_key(void **state)
{
    fixture_t *f = *state;
    append_n(f, SID_A, 1, 4, 0);
    append_n(f, SID_A, 2, 2, 0);
    streamrec_t r = {.finished = true, .seq = 4, .bytes = 8};
    eventlog_put_stream(f->b, SID_A, 1, &r);
    eventlog_index_expiry(f->b, SID_A, 1000, 1);
    commit(f);
    assert_int_equal(eventlog_delete_stream(f->s, f->b, SID_A, 1, 1000), 8);
    commit(f);
    assert_int_equal(eventlog_newest_seq(f->s, SID_A, 1), 0);
    streamrec_t back;
    assert_int_equal(eventlog_get_stream(f->s, SID_A, 1, &back), 1);
    assert_int_equal(eventlog_first_expiry(f->s, SID_A), 0);
    assert_int_equal(eventlog_newest_seq(f->s, SID_A, 2), 2); /* the other stream stays */
}

static void the_in_flight_index_lists_a_session_and_groups_them_all_at_startup(void **state)
{
    fixture_t *f = *state;
    json_t *i7 = json_integer(7), *ix = json_string("x");
    eventlog_inflight_put(f->b, SID_A, i7, 1);
    eventlog_inflight_put(f->b, SID_A, ix, 2);
    eventlog_inflight_put(f->b, SID_B, i7, 3);
    commit(f);
    int err = -1;
    json_t *list = eventlog_inflight_list(f->s, SID_A, &err);
    assert_int_equal(err, 0);
    assert_int_equal(json_array_size(list), 2);
    json_decref(list);
    eventlog_inflight_delete(f->b, SID_A, ix, 2);
    commit(f);
    list = eventlog_inflight_list(f->s, SID_A, &err);
    assert_int_equal(json_array_size(list), 1);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(list, 0), 0)), 1);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(list, 0), 1)), 7);
    json_decref(list);
    json_decref(i7);
    json_decref(ix);
}

static int sessions_seen;
static void count_session(void *arg, const char *sid, json_t *list)
{
    sessions_seen++;
    *(size_t *)arg += json_array_size(list);
    json_decref(list); /* stolen */
}

static void a_startup_scan_gets_each_session_once_with_its_entries(void **state)
{
    fixture_t *f = *state;
    json_t *i7 = json_integer(7), *i8 = json_integer(8);
    eventlog_inflight_put(f->b, SID_A, i7, 1);
    eventlog_inflight_put(f->b, SID_A, i8, 1);
    eventlog_inflight_put(f->b, SID_B, i7, 3);
    commit(f);
    size_t entries = 0;
    sessions_seen = 0;
    assert_int_equal(eventlog_inflight_scan_all(f->s, count_session, &entries), 3);
    assert_int_equal(sessions_seen, 2);
    assert_int_equal(entries, 3);
    json_decref(i7);
    json_decref(i8);
}

static void deleting_a_session_leaves_nothing_of_it_and_everything_of_the_next(void **state)
{
    fixture_t *f = *state;
    append_n(f, SID_A, 1, 3, 0);
    append_n(f, SID_B, 1, 3, 0);
    sessionrec_put_meta(f->b, SID_A, "{}", 2);
    sessionrec_put_meta(f->b, SID_B, "{}", 2);
    assert_int_equal(sessionrec_put_state(f->b, SID_A, "counter", "1", 1), 0);
    eventlog_index_expiry(f->b, SID_A, 10, 1);
    json_t *id = json_integer(1);
    eventlog_inflight_put(f->b, SID_A, id, 1);
    commit(f);
    eventlog_delete_session(f->b, SID_A, false);
    commit(f);
    char *v;
    size_t vl;
    assert_int_equal(sessionrec_get_meta(f->s, SID_A, &v, &vl), 1);
    assert_int_equal(sessionrec_get_state(f->s, SID_A, "counter", &v, &vl), 1);
    assert_int_equal(eventlog_newest_seq(f->s, SID_A, 1), 0);
    assert_int_equal(eventlog_first_expiry(f->s, SID_A), 0);
    int err = -1;
    json_t *list = eventlog_inflight_list(f->s, SID_A, &err);
    assert_int_equal(err, 0);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    assert_int_equal(eventlog_newest_seq(f->s, SID_B, 1), 3);
    assert_int_equal(sessionrec_get_meta(f->s, SID_B, &v, &vl), 0);
    free(v);
    json_decref(id);
}

static void a_session_with_only_metadata_is_deleted_by_one_point_delete(void **state)
{
    fixture_t *f = *state;
    sessionrec_put_meta(f->b, SID_A, "{}", 2);
    commit(f);
    eventlog_delete_session(f->b, SID_A, true);
    assert_int_equal(store_batch_count(f->b), 1);
    commit(f);
    char *v;
    size_t vl;
    assert_int_equal(sessionrec_get_meta(f->s, SID_A, &v, &vl), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(a_replay_after_an_id_returns_the_later_events_in_order),
        T(a_replay_stays_within_its_stream_and_session),
        T(nothing_follows_the_last_event_or_the_largest_seq),
        T(the_cap_evicts_the_oldest_and_a_replay_from_before_shows_the_gap),
        T(an_empty_event_is_replayed_to_the_caller_who_skips_it),
        T(a_stream_record_round_trips_and_numbers_continue_after_the_newest),
        T(the_stream_totals_are_the_next_number_and_the_bytes_the_records_keep),
        T(the_expiry_index_is_walked_in_expiry_order_up_to_a_bound),
        T(deleting_a_stream_takes_its_events_record_and_index_key),
        T(the_in_flight_index_lists_a_session_and_groups_them_all_at_startup),
        T(a_startup_scan_gets_each_session_once_with_its_entries),
        T(deleting_a_session_leaves_nothing_of_it_and_everything_of_the_next),
        T(a_session_with_only_metadata_is_deleted_by_one_point_delete),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
