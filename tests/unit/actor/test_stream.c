/* Unit tests: a session's streams and calls (src/actor/stream.c) over a fake worker
 * (fake_worker.c) and a real event log in a temporary directory: how a POST exchange settles,
 * when a stream becomes SSE, what is stored before it is sent, the cap. */
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

#include "actor/refuse.h"
#include "core/config.h"
#include "core/principal.h"
#include "fake_worker.h"
#include "mcp/mcp.h"
#include "mcp/state.h"
#include "store/eventlog.h"
#include "store/sessionrec.h"
#include "wire/eventid.h"
#include "wire/jsonrpc.h"

static const char SID[] = "0123456789abcdef0123456789abcdef";
static const conn_ref_t CONN = {0, 1, 1};

typedef struct fixture {
    char dir[64];
    store_t *store;
    worker_t *w;
    actor_t *a;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/mcpd-stream-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    config_defaults(&g_cfg);
    g_cfg.workers = 1;
    char err[256];
    f->store = store_open(f->dir, false, 0, err, sizeof err);
    if (!f->store)
        return -1;
    f->w = fake_worker_new(f->store, NULL);
    fake_worker_set_ops(f->w, mcp_actor_ops());
    f->a = actor_create(f->w, SID);
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
    worker_turn_end(f->w);
    actor_destroy_all(f->w);
    worker_turn_end(f->w);
    fake_worker_free(f->w);
    store_close(f->store);
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* A POST stream carrying one request with this id, dispatching. */
static call_t *post_one(fixture_t *f, json_t *id, stream_t **out)
{
    stream_t *s = actor_new_post_stream(f->a, CONN);
    s->outstanding = 1;
    s->dispatching = true;
    call_t *c = actor_add_call(f->a, s, id, SM_tools_call);
    *out = s;
    return c;
}

static json_t *note(int n)
{
    return jsonrpc_notification("notifications/message",
                                json_pack("{s:s,s:{s:i}}", "level", "info", "data", "n", n));
}

/* The seqs stored for a stream, in order. */
typedef struct stored {
    uint64_t seq[64];
    size_t len[64];
    int n;
} stored_t;

static void collect(void *arg, uint64_t seq, const char *data, size_t len)
{
    stored_t *s = arg;
    s->seq[s->n] = seq;
    s->len[s->n] = len;
    s->n++;
}

static stored_t stored_of(fixture_t *f, uint64_t stream)
{
    stored_t s = {0};
    uint64_t first;
    eventlog_replay_after(f->store, SID, stream, 0, collect, &s, &first);
    return s;
}

static size_t inflight_count(fixture_t *f)
{
    int err;
    json_t *inflight = eventlog_inflight_list(f->store, SID, &err);
    assert_int_equal(err, 0);
    size_t n = json_array_size(inflight);
    json_decref(inflight);
    return n;
}

static void a_call_answered_at_once_is_one_json_reply_and_stores_no_event(void **state)
{
    fixture_t *f = *state;
    stream_t *s;
    json_t *id = json_integer(7);
    call_t *c = post_one(f, id, &s);
    actor_complete_call(f->a, c, jsonrpc_result(id, json_object()));
    s->dispatching = false;
    assert_true(actor_stream_settle(f->a, s)); /* settled and freed */
    worker_turn_end(f->w);
    assert_int_equal(fake_worker_nsent(f->w), 1);
    hmsg_t *h = fake_worker_sent(f->w, 0);
    assert_int_equal(h->type, HM_REPLY);
    assert_int_equal(h->status, 200);
    assert_string_equal(h->content_type, "application/json");
    assert_non_null(strstr(h->body, "\"id\":7"));
    assert_int_equal(stored_of(f, 1).n, 0);
    assert_null(actor_find_stream(f->a, 1));
    json_decref(id);
}

static void a_call_that_sends_first_becomes_sse_and_every_frame_is_stored_with_its_id(void **state)
{
    fixture_t *f = *state;
    stream_t *s;
    json_t *id = json_string("r1");
    call_t *c = post_one(f, id, &s);
    s->dispatching = false;
    actor_stream_send(f->a, s, note(1));
    assert_true(s->sse);
    actor_complete_call(f->a, c, jsonrpc_result(id, json_object()));
    worker_turn_end(f->w);
    /* SSE start (retry + priming event), the notification, the response, the end */
    assert_int_equal(fake_worker_nsent(f->w), 4);
    assert_int_equal(fake_worker_sent(f->w, 0)->type, HM_SSE_START);
    assert_non_null(strstr(fake_worker_sent(f->w, 0)->body, "retry:"));
    hmsg_t *n1 = fake_worker_sent(f->w, 1), *r = fake_worker_sent(f->w, 2);
    assert_int_equal(n1->type, HM_SSE_DATA);
    char want[EVENT_ID_MAX + 8];
    event_id_format(want, session_tag(SID), 1, 2);
    assert_non_null(strstr(n1->body, want));
    assert_non_null(strstr(r->body, "\"id\":\"r1\""));
    assert_int_equal(fake_worker_sent(f->w, 3)->type, HM_SSE_END);
    /* stored: the priming event (empty), the notification, the response */
    stored_t st = stored_of(f, 1);
    assert_int_equal(st.n, 3);
    assert_int_equal(st.len[0], 0);
    streamrec_t rec;
    assert_int_equal(eventlog_get_stream(f->store, SID, 1, &rec), 0);
    assert_true(rec.finished);
    assert_int_equal(rec.seq, 3);
    json_decref(rec.req_ids);
    /* answered: nothing left in the in-flight index; finished: indexed for expiry */
    assert_int_equal(inflight_count(f), 0);
    assert_true(eventlog_first_expiry(f->store, SID) > 0);
    json_decref(id);
}

/* A call whose stream turns SSE (the JSON window expired) is in the in-flight index from the
 * commit that sends the stream's head until the one of its answer. */
static void sse_call_is_indexed_until_answered(fixture_t *f, json_int_t n)
{
    stream_t *s;
    json_t *id = json_integer(n);
    call_t *c = post_one(f, id, &s);
    s->dispatching = false;
    actor_stream_start_sse(f->a, s);
    worker_turn_end(f->w);
    assert_int_equal(fake_worker_sent(f->w, 0)->type, HM_SSE_START);
    assert_int_equal(inflight_count(f), 1); /* a crash now would answer it at restart */
    actor_complete_call(f->a, c, jsonrpc_result(id, json_object()));
    worker_turn_end(f->w);
    assert_int_equal(inflight_count(f), 0);
    json_decref(id);
}

static void a_running_sse_call_is_in_the_in_flight_index_until_answered(void **state)
{
    sse_call_is_indexed_until_answered(*state, 3);
}

static void an_sse_call_answered_in_the_turn_it_started_writes_no_in_flight_key(void **state)
{
    fixture_t *f = *state;
    stream_t *s;
    json_t *id = json_integer(4);
    long before = eventlog_inflight_writes();
    call_t *c = post_one(f, id, &s);
    s->dispatching = false;
    actor_stream_send(f->a, s, note(1)); /* SSE now */
    assert_true(s->sse);
    actor_complete_call(f->a, c, jsonrpc_result(id, json_object()));
    worker_turn_end(f->w);
    /* the key would have been put and deleted in one batch: neither is written */
    assert_int_equal(eventlog_inflight_writes(), before);
    assert_int_equal(inflight_count(f), 0);
    /* the stream and its events are stored as ever */
    assert_int_equal(stored_of(f, 1).n, 3);
    json_decref(id);
}

static void a_post_whose_requests_were_all_cancelled_ends_as_an_event_stream_not_202(void **state)
{
    fixture_t *f = *state;
    stream_t *s;
    json_t *id = json_integer(1);
    call_t *c = post_one(f, id, &s);
    s->dispatching = false;
    actor_drop_call(f->a, c);
    worker_turn_end(f->w);
    assert_int_equal(fake_worker_nsent(f->w), 2);
    assert_int_equal(fake_worker_sent(f->w, 0)->type, HM_SSE_START);
    assert_int_equal(fake_worker_sent(f->w, 1)->type, HM_SSE_END);
    json_decref(id);
}

static void a_post_without_requests_is_answered_202(void **state)
{
    fixture_t *f = *state;
    stream_t *s = actor_new_post_stream(f->a, CONN);
    assert_true(actor_stream_settle(f->a, s));
    assert_int_equal(fake_worker_nsent(f->w), 1);
    assert_int_equal(fake_worker_sent(f->w, 0)->status, 202);
    assert_null(fake_worker_sent(f->w, 0)->body);
}

static void a_stream_still_dispatching_or_with_requests_open_does_not_settle(void **state)
{
    fixture_t *f = *state;
    stream_t *s;
    json_t *id = json_integer(1);
    call_t *c = post_one(f, id, &s);
    assert_false(actor_stream_settle(f->a, s)); /* dispatching */
    s->dispatching = false;
    assert_false(actor_stream_settle(f->a, s)); /* its request is open */
    assert_int_equal(fake_worker_nsent(f->w), 0);
    actor_complete_call(f->a, c, jsonrpc_result(id, json_object()));
    assert_int_equal(fake_worker_nsent(f->w), 1);
    json_decref(id);
}

static void the_cap_keeps_the_newest_events_and_their_bytes(void **state)
{
    fixture_t *f = *state;
    g_cfg.stream_cap = 3;
    stream_t *s;
    json_t *id = json_integer(1);
    call_t *c = post_one(f, id, &s);
    s->dispatching = false;
    for (int i = 1; i <= 5; i++) {
        actor_stream_send(f->a, s, note(i));
        worker_turn_end(f->w); /* an eviction reads what was stored */
    }
    stored_t st = stored_of(f, 1);
    /* priming + 5 notifications: the priming event is not counted and stays; of the
     * notifications the newest 3 */
    assert_int_equal(st.n, 4);
    assert_int_equal(st.seq[0], 1);
    assert_int_equal(st.len[0], 0);
    assert_int_equal(st.seq[1], 4);
    assert_int_equal(st.seq[3], 6);
    assert_int_equal(s->bytes, st.len[0] + st.len[1] + st.len[2] + st.len[3]);
    actor_complete_call(f->a, c, jsonrpc_result(id, json_object()));
    worker_turn_end(f->w);
    st = stored_of(f, 1);
    assert_int_equal(st.n, 5); /* the response is not counted either: nothing is evicted */
    assert_int_equal(st.seq[4], 7);
    json_decref(id);
}

static void in_json_mode_a_message_for_a_pending_post_goes_to_the_standalone_stream(void **state)
{
    fixture_t *f = *state;
    g_cfg.response_mode = RESPONSE_JSON;
    stream_t *s;
    json_t *id = json_integer(1);
    call_t *c = post_one(f, id, &s);
    s->dispatching = false;
    actor_stream_send(f->a, s, note(1));
    assert_false(s->sse);
    worker_turn_end(f->w);
    assert_int_equal(stored_of(f, STREAM_GET).n, 1);
    assert_int_equal(stored_of(f, 1).n, 0);
    actor_complete_call(f->a, c, jsonrpc_result(id, json_object()));
    assert_int_equal(fake_worker_sent(f->w, fake_worker_nsent(f->w) - 1)->type, HM_REPLY);
    json_decref(id);
}

/* A task (ACTOR_TASK) keeps its status in its protocol state (mcp/state.h): its metadata carries it through a
 * hibernation (or a restart) and back; its kind is counted apart; deleting it deletes its two
 * state keys with it. */
static void a_task_round_trips_through_its_metadata_and_goes_whole(void **state)
{
    fixture_t *f = *state;
    static const char TID[] = "fedcba9876543210fedcba9876543210";
    actor_t *t = actor_create_kind(f->w, TID, ACTOR_TASK);
    t->proto = proto_modern();
    t->client_caps = json_pack("{s:{s:{}}}", "extensions", "io.modelcontextprotocol/tasks");
    snprintf(t->auth_name, sizeof t->auth_name, "alice");
    json_t *st = json_pack("{s:s,s:I,s:I,s:I,s:{s:{s:s}},s:{s:b}}", "st", "input_required", "ca",
                           (json_int_t)1000, "ua", (json_int_t)2000, "ttl", (json_int_t)3600000,
                           "ir", "k", "method", "elicitation/create", "ans", "j", 1);
    mcp_state_set(&mcp_state(t)->task.status, json_deep_copy(st));
    mcp_state_set(&mcp_state(t)->task.result, json_string("cached, never stored"));
    sessionrec_put_state(actor_batch(t), TID, TASK_STATE_ARGS, "{}", 2);
    sessionrec_put_state(actor_batch(t), TID, TASK_STATE_RESULT, "{}", 2);
    actor_alarm_set(t, 3601000);
    worker_turn_end(f->w);
    actor_hibernate(t);
    worker_turn_end(f->w);
    assert_null(worker_find_actor(f->w, TID));

    char *meta;
    size_t len;
    assert_int_equal(sessionrec_get_meta(f->store, TID, &meta, &len), 0);
    assert_int_equal(actor_meta_kind(meta, len), STORED_TASK);
    free(meta);

    int err;
    t = actor_find_or_load(f->w, TID, &err);
    assert_non_null(t);
    assert_int_equal(err, 0);
    assert_int_equal(t->kind, ACTOR_TASK);
    assert_false(actor_one_request(t));
    assert_ptr_equal(t->proto, proto_modern());
    assert_string_equal(t->auth_name, "alice");
    assert_int_equal(t->alarm_due, 3601000);
    assert_non_null(json_object_get(json_object_get(t->client_caps, "extensions"),
                                    "io.modelcontextprotocol/tasks"));
    assert_true(json_equal(mcp_task_status(t), st));
    assert_null(mcp_task_result(t));

    actor_delete(t);
    worker_turn_end(f->w);
    char *v;
    size_t vl;
    assert_int_equal(sessionrec_get_meta(f->store, TID, &v, &vl), 1);
    assert_int_equal(sessionrec_get_state(f->store, TID, TASK_STATE_ARGS, &v, &vl), 1);
    assert_int_equal(sessionrec_get_state(f->store, TID, TASK_STATE_RESULT, &v, &vl), 1);
    assert_int_equal(sessionrec_first_alarm(f->store, 0), 0);
    json_decref(st);
}

/* The stored metadata of SID, checked: it ends with the owner (the start-up count reads it
 * without a parse only then: actor.c fast_owner), and says it was written at rest ("lx") or
 * not; its "lb" is returned. */
static json_int_t check_meta(fixture_t *f, bool at_rest)
{
    char *v;
    size_t vl;
    assert_int_equal(sessionrec_get_meta(f->store, SID, &v, &vl), 0);
    static const char tail[] = ",\"p\":\"a:192.0.2.7\"}";
    assert_true(vl > sizeof tail);
    assert_memory_equal(v + vl - (sizeof tail - 1), tail, sizeof tail - 1);
    json_t *m = json_loadb(v, vl, 0, NULL);
    assert_non_null(m);
    assert_int_equal(json_is_true(json_object_get(m, "lx")), at_rest);
    assert_non_null(json_object_get(m, "sub")); /* written between "lx" and "p" */
    json_int_t lb = json_integer_value(json_object_get(m, "lb"));
    json_decref(m);
    free(v);
    return lb;
}

/* The bytes the session's stream records say they keep. */
static uint64_t records_bytes(fixture_t *f)
{
    uint64_t bytes;
    bool known;
    eventlog_stream_totals(f->store, SID, &bytes, &known);
    assert_true(known);
    return bytes;
}

/* A session's record ends with its owner whether it was written while the actor lived or at
 * rest, with "lx" (at rest only) before it; the first change of the event log's byte count
 * after a wake writes it again without the mark in the same commit; a reload that finds no
 * mark takes the count from the stream records; the start-up count finds the owner. */
static void a_session_record_ends_with_its_owner_and_says_when_it_was_written_at_rest(void **state)
{
    fixture_t *f = *state;
    principal_t *owner = principal_get("a:192.0.2.7");
    f->a->owner = principal_ref(owner);
    /* what a client sent may hold a "p" member of its own */
    f->a->client_info = json_pack("{s:s,s:{s:s}}", "name", "x", "inner", "p", "mallory");
    mcp_state_set(&mcp_state(f->a)->subscriptions, json_pack("{s:{}}", "file:///p"));
    actor_write_meta(f->a);
    worker_turn_end(f->w);
    check_meta(f, false);

    actor_hibernate(f->a);
    worker_turn_end(f->w);
    assert_int_equal(check_meta(f, true), 0);

    int err;
    f->a = actor_find_or_load(f->w, SID, &err);
    assert_non_null(f->a);
    assert_true(f->a->meta_at_rest);
    stream_t *s;
    json_t *id = json_integer(1);
    call_t *c = post_one(f, id, &s);
    actor_stream_send(f->a, s, note(1)); /* SSE: stored */
    s->dispatching = false;
    worker_turn_end(f->w);
    assert_false(f->a->meta_at_rest);
    uint64_t kept = f->a->log_bytes;
    assert_true(kept > 0);
    check_meta(f, false); /* "lb" stale from here on: events come without a metadata write */
    actor_stream_send(f->a, s, note(2));
    actor_complete_call(f->a, c, jsonrpc_result(id, json_object()));
    worker_turn_end(f->w);
    kept = f->a->log_bytes;
    assert_int_equal(records_bytes(f), kept);

    /* a crash (or a refused turn) drops the actor without a metadata write */
    actor_reset(f->a, REFUSE_MESSAGE);
    worker_turn_end(f->w);
    f->a = actor_find_or_load(f->w, SID, &err);
    assert_non_null(f->a);
    assert_false(f->a->meta_at_rest);
    assert_int_equal(f->a->log_bytes, kept);
    actor_hibernate(f->a);
    worker_turn_end(f->w);
    assert_int_equal(check_meta(f, true), (json_int_t)kept);
    f->a = actor_find_or_load(f->w, SID, &err);
    assert_int_equal(f->a->log_bytes, kept);

    long long held = principal_held(owner, PR_SESSIONS);
    actors_account_stored(f->store, NULL, 0, 1, NULL);
    assert_int_equal(principal_held(owner, PR_SESSIONS), held + 1);
    actors_account_stored(f->store, NULL, 0, -1, NULL);
    principal_unref(owner);
    json_decref(id);
}

static void a_stream_without_priming_that_turns_sse_indexes_its_call(void **state)
{
    fixture_t *f = *state;
    f->a->proto = proto_find("2025-06-18"); /* no priming event: nothing else dirties it */
    sse_call_is_indexed_until_answered(f, 5);
}

static void a_batch_stream_indexes_only_its_unanswered_call(void **state)
{
    fixture_t *f = *state;
    stream_t *s = actor_new_post_stream(f->a, CONN);
    s->outstanding = 2;
    s->dispatching = true;
    json_t *i1 = json_integer(1), *i2 = json_integer(2);
    call_t *c1 = actor_add_call(f->a, s, i1, SM_tools_call);
    call_t *c2 = actor_add_call(f->a, s, i2, SM_tools_call);
    actor_stream_send(f->a, s, note(1)); /* SSE now */
    actor_complete_call(f->a, c1, jsonrpc_result(i1, json_object()));
    s->dispatching = false;
    worker_turn_end(f->w);
    int err;
    json_t *inflight = eventlog_inflight_list(f->store, SID, &err);
    assert_int_equal(err, 0);
    assert_int_equal(json_array_size(inflight), 1);
    assert_true(json_equal(json_array_get(json_array_get(inflight, 0), 1), i2));
    json_decref(inflight);
    actor_complete_call(f->a, c2, jsonrpc_result(i2, json_object()));
    worker_turn_end(f->w);
    assert_int_equal(inflight_count(f), 0);
    json_decref(i1);
    json_decref(i2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(a_call_answered_at_once_is_one_json_reply_and_stores_no_event),
        T(a_call_that_sends_first_becomes_sse_and_every_frame_is_stored_with_its_id),
        T(a_running_sse_call_is_in_the_in_flight_index_until_answered),
        T(an_sse_call_answered_in_the_turn_it_started_writes_no_in_flight_key),
        T(a_stream_without_priming_that_turns_sse_indexes_its_call),
        T(a_batch_stream_indexes_only_its_unanswered_call),
        T(a_post_whose_requests_were_all_cancelled_ends_as_an_event_stream_not_202),
        T(a_post_without_requests_is_answered_202),
        T(a_stream_still_dispatching_or_with_requests_open_does_not_settle),
        T(the_cap_keeps_the_newest_events_and_their_bytes),
        T(in_json_mode_a_message_for_a_pending_post_goes_to_the_standalone_stream),
        T(a_task_round_trips_through_its_metadata_and_goes_whole),
        T(a_session_record_ends_with_its_owner_and_says_when_it_was_written_at_rest),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
