/* A fake worker for unit tests of the actor's stream logic: one worker, its batch on a real
 * RocksDB store in a temporary directory, and the frames it would send kept in a list for the
 * test to read. Everything in actor/worker.h the actor files call, and nothing more; the
 * functions the tests never reach fail loudly. */
#include "fake_worker.h"

#include "core/principal.h"

#include "core/jshare.h"
#include "core/slab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct worker {
    store_t *store;
    store_batch_t *batch;
    struct event_base *base;
    hmsg_t *sent[256];
    int nsent;
    struct actor *actors[16];
    int nactors;
    jshare_t shared;
    slab_t slab;
    const actor_ops_t *ops;
};

static worker_t FW;
static _Thread_local worker_t *t_current;

static void unreachable(const char *fn)
{
    fprintf(stderr, "fake worker: %s is not expected in this test\n", fn);
    abort();
}

worker_t *fake_worker_new(store_t *store, struct event_base *base)
{
    memset(&FW, 0, sizeof FW);
    FW.store = store;
    FW.batch = store_batch_new(store);
    FW.base = base;
    slab_init(&FW.slab, sizeof(actor_t));
    t_current = &FW;
    return &FW;
}

void fake_worker_set_ops(worker_t *w, const actor_ops_t *ops)
{
    w->ops = ops;
}

void fake_worker_free(worker_t *w)
{
    fake_worker_clear_sent(w);
    store_batch_free(w->batch);
    jshare_clear(&w->shared);
    slab_destroy(&w->slab);
    t_current = NULL;
}

int fake_worker_nsent(const worker_t *w)
{
    return w->nsent;
}

hmsg_t *fake_worker_sent(worker_t *w, int i)
{
    return i < w->nsent ? w->sent[i] : NULL;
}

void fake_worker_clear_sent(worker_t *w)
{
    for (int i = 0; i < w->nsent; i++)
        hmsg_free(w->sent[i]);
    w->nsent = 0;
}

/* ---- worker.h ---- */

int workers_start(int n, store_t *store, const actor_ops_t *ops, frame_sink_fn sink,
                  int n_http_threads, struct event_base **host_bases)
{
    unreachable(__func__);
    return -1;
}
void workers_drain_now(void)
{
    unreachable(__func__);
}
void workers_cancel_all(void)
{
    unreachable(__func__);
}
bool workers_stopping(void)
{
    return false;
}
void workers_stop(void)
{
    unreachable(__func__);
}
worker_t *worker_for_session(const char *sid)
{
    return &FW;
}
void worker_push(worker_t *w, wmsg_t *m)
{
    unreachable(__func__);
}
void worker_deliver(worker_t *w, wmsg_t *m, bool now)
{
    unreachable(__func__);
}
admit_t worker_admit(worker_t *w, wmsg_t *m)
{
    return ADMIT_OK;
}
worker_t *worker_current(void)
{
    return t_current;
}
worker_t *worker_enter(worker_t *w)
{
    worker_t *prev = t_current;
    t_current = w;
    return prev;
}
void worker_leave(worker_t *prev)
{
    t_current = prev;
}
const actor_ops_t *worker_ops(const worker_t *w)
{
    if (!w->ops)
        unreachable(__func__);
    return w->ops;
}
store_t *worker_store(worker_t *w)
{
    return w->store;
}
store_batch_t *worker_batch(worker_t *w)
{
    return w->batch;
}
int worker_commit(worker_t *w)
{
    actor_flush_dirty(w); /* as the real one: a commit carries the turn's dirty streams */
    return store_commit(w->store, w->batch);
}
void worker_touch(worker_t *w, struct actor *a)
{
}
void worker_fail_turn(worker_t *w, struct actor *a)
{
    unreachable(__func__); /* the tests' stores read what they wrote */
}
void worker_defer_reply(worker_t *w, struct mcpd_ctx *j, uint32_t wait_seq, json_t *value)
{
    unreachable(__func__);
}
void worker_stat_add(worker_t *w, dstat_t which, long long n)
{
}
void worker_give_at_commit(worker_t *w, struct principal *p, int r, give_mode_t mode)
{
    /* the fake worker's commits always succeed */
    if (mode == GIVE_BOTH)
        principal_give(p, (pres_t)r);
    else
        principal_give_global((pres_t)r);
}
void worker_mark_recover(worker_t *w, const char *sid, const char *why)
{
}
const char *worker_take_recover_mark(worker_t *w, const char *sid)
{
    return NULL;
}
void worker_send_http(worker_t *w, hmsg_t *m)
{
    if (w->nsent == (int)(sizeof w->sent / sizeof w->sent[0]))
        unreachable("more than 256 frames");
    w->sent[w->nsent++] = m;
}
struct event_base *worker_base(worker_t *w)
{
    return w->base;
}
void worker_turn_end(worker_t *w)
{
    actor_flush_dirty(w);
    worker_commit(w);
}
struct actor *worker_find_actor(worker_t *w, const char *sid)
{
    for (int i = 0; i < w->nactors; i++)
        if (strcmp(w->actors[i]->sid, sid) == 0)
            return w->actors[i];
    return NULL;
}
json_t *worker_share_json(worker_t *w, json_t *v)
{
    return jshare_get(&w->shared, v);
}

slab_t *worker_actor_slab(worker_t *w)
{
    return &w->slab;
}
void worker_add_actor(worker_t *w, struct actor *a)
{
    w->actors[w->nactors++] = a;
}
void worker_remove_actor(worker_t *w, struct actor *a)
{
    for (int i = 0; i < w->nactors; i++) {
        if (w->actors[i] == a) {
            w->actors[i] = w->actors[--w->nactors];
            return;
        }
    }
}
void worker_note_activity(worker_t *w, struct actor *a)
{
}
void worker_note_alarm(worker_t *w, int64_t due)
{
}
void worker_foreach_actor(worker_t *w, void (*fn)(struct actor *, void *), void *arg)
{
    for (int i = w->nactors - 1; i >= 0; i--)
        fn(w->actors[i], arg);
}

/* The handler context (ctx.c, linked for job_reply) announces changes through this. */
void workers_broadcast(json_t *note, int what)
{
    (void)what;
    json_decref(note);
}
