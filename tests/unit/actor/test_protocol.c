/* Unit test: the actor layer serves a protocol it knows nothing of. src/actor/ and the folders
 * below it are linked without src/mcp/ (layer_deps['actor']): real worker threads
 * (workers_start), a store on disk, messages through the mailboxes, frames out through the sink.
 * The protocol is a fake, "counter": a session answers each POST with how many POSTs it has had,
 * a number it keeps in its own state behind actor_t.ps and stores in the actor's metadata
 * through meta_put/meta_load. What is checked: an actor made by the protocol, messages routed to
 * it, 404 from the actor layer for a session it does not know, a restart of the workers on the
 * same store (the session is woken from the store with the protocol's state), the state freed
 * through state_free, DELETE, and worker_after_commit (each POST's call runs once, committed,
 * with its own argument, before the answer leaves). */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "actor/actor.h"
#include "core/config.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"
#include "wire/jsonrpc.h"

static const char SID[] = "00112233445566778899aabbccddeeff";

/* ---- the frames the workers hand to "the HTTP threads" ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static hmsg_t *frames[64];
static int nframes;

static void sink(uint32_t http_thread, mq_node_t *first, mq_node_t *last, size_t n)
{
    pthread_mutex_lock(&mu);
    for (mq_node_t *p = first; p;) {
        mq_node_t *next = p == last ? NULL : p->next;
        hmsg_t *h = (hmsg_t *)p;
        if (nframes < 64)
            frames[nframes++] = h;
        else
            hmsg_free(h);
        p = next;
    }
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* The next frame, waiting at most 5 s (NULL: none came). */
static hmsg_t *next_frame(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&mu);
    while (nframes == 0 && pthread_cond_timedwait(&cv, &mu, &until) == 0)
        ;
    hmsg_t *h = NULL;
    if (nframes > 0) {
        h = frames[0];
        memmove(frames, frames + 1, (size_t)(nframes - 1) * sizeof frames[0]);
        nframes--;
    }
    pthread_mutex_unlock(&mu);
    return h;
}

/* ---- the fake protocol ---- */

/* What it keeps per actor (the actor layer sees only the pointer). */
struct proto_state {
    long long count;
};

static int initialized, posts, modern, jobs_done, states_freed, loaded, unexpected;
static atomic_bool give_back_on_post;              /* the next POSTs call worker_give_back */
static int afters_committed, afters_before_answer; /* worker_after_commit's calls */

static struct proto_state *state_of(actor_t *a)
{
    if (!a->ps)
        a->ps = calloc(1, sizeof *a->ps);
    return a->ps;
}

/* Its answer: {"n": count}. */
static void answer(worker_t *w, conn_ref_t conn, long long n, const char *sid_header)
{
    actor_reply(w, conn, 200, json_pack("{s:I}", "n", n), sid_header);
}

static void fake_initialize(worker_t *w, wmsg_t *m)
{
    initialized++;
    actor_t *a = actor_create(w, m->sid);
    a->used = true;
    state_of(a)->count = 0;
    actor_persist_meta(a);
    answer(w, m->u.client.conn, 0, a->sid);
}

/* Runs at the commit of the POST's turn, before its answer goes to the sink. */
static void after_post(worker_t *w, void *arg, bool committed)
{
    pthread_mutex_lock(&mu);
    afters_committed += committed && *(int *)arg == posts;
    afters_before_answer += nframes == 0;
    pthread_mutex_unlock(&mu);
    free(arg);
}

static void fake_post(actor_t *a, wmsg_t *m)
{
    posts++;
    int *arg = malloc(sizeof *arg);
    *arg = posts;
    worker_after_commit(a->w, after_post, arg);
    long long n = ++state_of(a)->count;
    actor_persist_meta(a);
    if (atomic_load(&give_back_on_post))
        worker_give_back(a->w);
    answer(a->w, m->u.client.conn, n, NULL);
}

static void fake_modern(worker_t *w, wmsg_t *m)
{
    modern++;
    actor_reply(w, m->u.client.conn, 400, NULL, NULL);
}

static void fake_job_done(actor_t *a, struct mcpd_ctx *j)
{
    jobs_done++;
}

static void fake_state_free(actor_t *a)
{
    states_freed++;
    free(a->ps);
    a->ps = NULL;
}

/* Its member of the stored metadata: "counter" (in the middle: a session's record ends with
 * its owner, worker.h). */
static void fake_meta_put(const actor_t *a, jobj_t *meta, int at)
{
    if (at == ACTOR_META_MIDDLE && a->ps)
        jobj_int(meta, "counter", a->ps->count);
}

static void fake_meta_load(actor_t *a, const json_t *meta)
{
    const json_t *n = json_object_get(meta, "counter");
    if (json_is_integer(n)) {
        loaded++;
        state_of(a)->count = json_integer_value(n);
    }
}

static bool fake_log_enabled(const actor_t *a, const char *level)
{
    return false;
}

/* What this test never causes: counted, and the count must stay 0. */
static void fake_tool_request(actor_t *a, struct mcpd_ctx *j, wmsg_t *m)
{
    unexpected++;
}

static void fake_broadcast(actor_t *a, wmsg_t *m)
{
    unexpected++;
}

static void fake_end_listen(actor_t *a)
{
    unexpected++;
}

static void fake_call_dropped(actor_t *a, const call_t *c)
{
    unexpected++;
}

static const actor_ops_t FAKE = {
    .on_initialize = fake_initialize,
    .on_post = fake_post,
    .on_modern = fake_modern,
    .on_job_done = fake_job_done,
    .state_free = fake_state_free,
    .meta_put = fake_meta_put,
    .meta_load = fake_meta_load,
    .log_enabled = fake_log_enabled,
    .on_tool_request = fake_tool_request,
    .on_broadcast = fake_broadcast,
    .end_listen = fake_end_listen,
    .on_call_dropped = fake_call_dropped,
};

/* ---- the test's side of the HTTP threads ---- */

static uint32_t next_gen = 1;

static wmsg_t *post(const char *sid, bool create)
{
    wmsg_t *m = wmsg_new(WM_POST);
    str_copy(m->sid, sizeof m->sid, sid);
    m->u.post.c.conn = (conn_ref_t){0, 1, next_gen++};
    m->u.post.body = json_pack("{s:s,s:i,s:s}", "jsonrpc", "2.0", "id", 1, "method", "count");
    m->u.post.n = 1;
    m->u.post.kinds = m->u.post.kinds_inline;
    m->u.post.kinds[0] = JR_REQUEST;
    m->u.post.create = create;
    return m;
}

/* Sends m to its session's worker; returns the frame that answers it (taken by the caller). */
static hmsg_t *send_and_wait(wmsg_t *m)
{
    worker_push(worker_for_session(m->sid), m);
    hmsg_t *h = next_frame();
    assert_non_null(h);
    return h;
}

/* The "n" of a counter answer, -1 when the frame is not one. */
static long long answer_n(const hmsg_t *h)
{
    json_t *v = h->body ? json_loadb(h->body, h->len, 0, NULL) : NULL;
    long long n = json_is_integer(json_object_get(v, "n"))
                      ? json_integer_value(json_object_get(v, "n"))
                      : -1;
    json_decref(v);
    return n;
}

static char dir[64];
static store_t *store;

static void start(void)
{
    char err[256];
    store = store_open(dir, false, 0, err, sizeof err);
    assert_non_null(store);
    assert_int_equal(workers_start(1, store, &FAKE, sink, 1, NULL), 0);
}

static void stop(void)
{
    workers_stop();
    store_close(store);
    store = NULL;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void the_protocol_owns_the_meaning(void **state)
{
    strcpy(dir, "/tmp/mcpd-fakeproto-XXXXXX");
    assert_non_null(mkdtemp(dir));
    config_defaults(&g_cfg);
    g_cfg.workers = 1;
    start();

    /* a session the actor layer has never seen: its 404, the protocol never called */
    hmsg_t *h = send_and_wait(post(SID, false));
    assert_int_equal(h->status, 404);
    assert_int_equal(posts, 0);
    hmsg_free(h);

    /* the protocol makes the actor; the next POSTs reach it */
    h = send_and_wait(post(SID, true));
    assert_int_equal(h->status, 200);
    assert_string_equal(h->session_id, SID);
    assert_int_equal(initialized, 1);
    hmsg_free(h);
    for (int i = 1; i <= 3; i++) {
        h = send_and_wait(post(SID, false));
        assert_int_equal(h->status, 200);
        assert_int_equal(answer_n(h), i);
        hmsg_free(h);
    }

    /* the workers stop (the actor and its state are freed) and start again on the same store:
     * the session is woken from it, with the count the protocol stored */
    stop();
    assert_int_equal(states_freed, 1);
    assert_int_equal(loaded, 0);
    start();
    h = send_and_wait(post(SID, false));
    assert_int_equal(h->status, 200);
    assert_int_equal(loaded, 1);
    assert_int_equal(answer_n(h), 4);
    hmsg_free(h);

    /* DELETE is the actor layer's: 200, then the session is unknown */
    wmsg_t *d = wmsg_new(WM_DELETE);
    str_copy(d->sid, sizeof d->sid, SID);
    d->u.del.c.conn = (conn_ref_t){0, 1, next_gen++};
    h = send_and_wait(d);
    assert_int_equal(h->status, 200);
    hmsg_free(h);
    h = send_and_wait(post(SID, false));
    assert_int_equal(h->status, 404);
    hmsg_free(h);
    assert_int_equal(posts, 4);
    assert_int_equal(afters_committed, 4);
    assert_int_equal(afters_before_answer, 4);
    assert_int_equal(states_freed, 2);
    assert_int_equal(modern, 0);
    assert_int_equal(jobs_done, 0);
    assert_int_equal(unexpected, 0);

    stop();
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* --workers 0: an id minted on HTTP thread i is placed on worker i (worker_place_on_thread),
 * keeping its shard and its last 24 characters; with separate workers it is left alone. */
static void an_id_minted_on_an_http_thread_lands_on_its_worker(void **state)
{
    strcpy(dir, "/tmp/mcpd-fakeproto-XXXXXX");
    assert_non_null(mkdtemp(dir));
    config_defaults(&g_cfg);
    char err[256];
    store = store_open(dir, false, 0, err, sizeof err);
    assert_non_null(store);
    enum { N = 3, IDS = 200 };
    struct event_base *bases[N];
    for (int i = 0; i < N; i++)
        assert_non_null(bases[i] = event_base_new());
    assert_int_equal(workers_start(N, store, &FAKE, sink, N, bases), 0);
    worker_t *of[N] = {0};
    int moved = 0;
    for (int k = 0; k < IDS; k++) {
        uint32_t th = (uint32_t)(k % N);
        char sid[SESSION_ID_LEN + 1], before[SESSION_ID_LEN + 1];
        assert_int_equal(session_id_new(sid), 0);
        memcpy(before, sid, sizeof sid);
        worker_place_on_thread(sid, th);
        assert_true(session_id_valid(sid));
        assert_int_equal(shard_of(sid), shard_of(before));
        assert_memory_equal(sid + SESSION_ROUTE_LEN, before + SESSION_ROUTE_LEN,
                            SESSION_ID_LEN - SESSION_ROUTE_LEN);
        moved += strcmp(sid, before) != 0;
        worker_t *w = worker_for_session(sid);
        if (!of[th])
            of[th] = w;
        assert_ptr_equal(w, of[th]); /* every id of thread th: one worker */
    }
    assert_true(of[0] != of[1] && of[1] != of[2] && of[0] != of[2]); /* each thread its own */
    assert_true(moved > IDS / 2); /* about 2 in 3 start elsewhere */
    workers_stop();
    for (int i = 0; i < N; i++)
        event_base_free(bases[i]);

    /* separate worker threads: an id stays as minted */
    assert_int_equal(workers_start(N, store, &FAKE, sink, N, NULL), 0);
    char sid[SESSION_ID_LEN + 1], before[SESSION_ID_LEN + 1];
    for (int k = 0; k < IDS; k++) {
        assert_int_equal(session_id_new(sid), 0);
        memcpy(before, sid, sizeof sid);
        worker_place_on_thread(sid, (uint32_t)(k % N));
        assert_string_equal(sid, before);
    }
    workers_stop();
    store_close(store);
    store = NULL;
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- memory handed back after the store's background work ---- */

static atomic_ullong fake_work; /* what the store "has running", for worker_trim.c */

static uint64_t fake_store_work(store_t *s)
{
    return atomic_load(&fake_work);
}

static long long stat_now(size_t off)
{
    return stats_read(off);
}

/* Waits up to `secs` for counter `off` to reach `want`; its value then. */
static long long wait_stat(size_t off, long long want, int secs)
{
    for (int i = 0; i < secs * 20 && stat_now(off) < want; i++)
        usleep(50 * 1000);
    return stat_now(off);
}

/* worker_give_back trims at once and, while the store has flushes or compactions running (they
 * free memtables into malloc's arenas after that trim), once more when they have ended; work
 * that does not end stops the follow-up after its five checks (0.25 + 0.5 + 1 + 2 + 4 s), so
 * the process is quiet again; and the next trim can follow the store again. */
static void memory_goes_back_once_the_stores_work_ends(void **state)
{
    const size_t TRIMS = offsetof(stats_t, memory_trims_total);
    const size_t WAKEUPS = offsetof(stats_t, timer_wakeups_total);
    strcpy(dir, "/tmp/mcpd-fakeproto-XXXXXX");
    assert_non_null(mkdtemp(dir));
    config_defaults(&g_cfg);
    g_cfg.workers = 1;
    worker_set_store_work_source(fake_store_work); /* before the worker thread starts */
    start();
    hmsg_free(send_and_wait(post(SID, true)));

    /* work running: one trim now, none while it runs, one when it has ended */
    atomic_store(&fake_work, 2);
    atomic_store(&give_back_on_post, true);
    long long trims = stat_now(TRIMS);
    hmsg_free(send_and_wait(post(SID, false)));
    assert_int_equal(stat_now(TRIMS), trims + 1);
    usleep(600 * 1000); /* the checks at 0.25 and 0.75 s find it running */
    assert_int_equal(stat_now(TRIMS), trims + 1);
    atomic_store(&fake_work, 0);
    assert_int_equal(wait_stat(TRIMS, trims + 2, 10), trims + 2);

    /* no work: the trim, and no timer after it */
    long long wakeups = stat_now(WAKEUPS);
    hmsg_free(send_and_wait(post(SID, false)));
    assert_int_equal(stat_now(TRIMS), trims + 3);
    usleep(600 * 1000);
    assert_int_equal(stat_now(WAKEUPS), wakeups);

    /* work that never ends: five checks, no trim, then quiet */
    atomic_store(&fake_work, 1);
    hmsg_free(send_and_wait(post(SID, false)));
    assert_int_equal(stat_now(TRIMS), trims + 4);
    assert_int_equal(wait_stat(WAKEUPS, wakeups + 5, 12), wakeups + 5);
    usleep(1500 * 1000);
    assert_int_equal(stat_now(WAKEUPS), wakeups + 5);
    assert_int_equal(stat_now(TRIMS), trims + 4);

    /* the follow-up was given up, not left claimed: the next trim follows the store again */
    hmsg_free(send_and_wait(post(SID, false)));
    atomic_store(&fake_work, 0);
    assert_int_equal(wait_stat(TRIMS, trims + 6, 10), trims + 6);

    atomic_store(&give_back_on_post, false);
    stop();
    worker_set_store_work_source(NULL);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    evthread_use_pthreads(); /* as main.c: other threads wake a worker's loop */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_protocol_owns_the_meaning),
        cmocka_unit_test(an_id_minted_on_an_http_thread_lands_on_its_worker),
        cmocka_unit_test(memory_goes_back_once_the_stores_work_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
