/* Threads: worker threads (each worker's own timers); the one follow-up at a time is claimed
 * through an atomic. */
/* A worker hands free memory back to the kernel: after a burst (debounced: every burst turn
 * pushes the timer back, so a long burst trims once, at its end, and a quiet process has no
 * timer armed), after many hibernations (worker_table.c), and once more when the store's
 * flushes and compactions that were running at such a trim have ended: they free memtables
 * (blocks under the mmap threshold when the store has more than 8 partitions) and their own
 * buffers into malloc's arenas after the trim, and glibc keeps those pages until the next
 * one (13 MB of 58 MB hibernated with 16 partitions, measured). See worker.h. */
#include "actor/worker_internal.h"

#include "core/blockcache.h"
#include "core/stats.h"

#include <event2/event.h>
#include <stdatomic.h>

/* Once the worker has handled this many messages, or committed this many bytes, since the
 * last trim, it was a burst: when it has been quiet for TRIM_QUIET_MS, free heap pages go back
 * to the kernel. Counted across turns: backpressure keeps a burst's turns small (a handler has
 * at most JOB_OUT_MAX messages in flight), and actors on the HTTP threads take many more,
 * smaller turns. */
#define BURST_MESSAGES 4096
#define BURST_BYTES (4u << 20)
#define TRIM_QUIET_MS 1000
/* The follow-up asks the store at 0.25 s after the trim, then at twice the last wait, at most
 * SETTLE_TRIES times (0.25 + 0.5 + 1 + 2 + 4 s): work still running after that (a long
 * compaction, or flushes that fail while the disk is full) is left to the next trim, so a
 * quiet process still arms no timer for long. */
#define SETTLE_FIRST_MS 250
#define SETTLE_TRIES 5

static uint64_t (*store_work)(store_t *) = store_background_work;
/* A worker's follow-up is armed: one at a time in the process (malloc_trim walks every arena,
 * whichever thread calls it). */
static atomic_bool g_settling;

void worker_set_store_work_source(uint64_t (*fn)(store_t *))
{
    store_work = fn ? fn : store_background_work;
}

static void arm(struct event *ev, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(ev, &tv);
}

static void trim_now(worker_t *w)
{
    slab_trim(&w->actors);  /* the actor pages' free spans */
    blockcache_give_back(); /* this thread's kept jansson and libevent blocks, every arena */
    STAT_INC(memory_trims_total);
}

static void on_settle_timer(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    STAT_INC(timer_wakeups_total);
    if (store_work(worker_store(w)) > 0 && ++w->settle_tries < SETTLE_TRIES) {
        arm(w->settle_timer, SETTLE_FIRST_MS << w->settle_tries);
        return;
    }
    if (w->settle_tries < SETTLE_TRIES)
        trim_now(w);
    atomic_store(&g_settling, false);
}

void worker_give_back(worker_t *w)
{
    trim_now(w);
    store_t *s = worker_store(w);
    bool idle = false;
    if (!s || store_work(s) == 0 || !atomic_compare_exchange_strong(&g_settling, &idle, true))
        return;
    w->settle_tries = 0;
    arm(w->settle_timer, SETTLE_FIRST_MS);
}

static void on_trim_timer(evutil_socket_t fd, short what, void *arg)
{
    worker_t *w = arg;
    STAT_INC(timer_wakeups_total);
    w->burst_messages = 0;
    w->burst_bytes = 0;
    worker_give_back(w);
}

void worker_note_burst(worker_t *w, size_t batch_bytes)
{
    w->burst_messages += w->turn_messages;
    w->burst_bytes += batch_bytes;
    if (w->burst_messages < BURST_MESSAGES && w->burst_bytes < BURST_BYTES)
        return;
    arm(w->trim_timer, TRIM_QUIET_MS); /* pushed back by every further turn of the burst */
}

void worker_trim_init(worker_t *w)
{
    w->trim_timer = evtimer_new(w->base, on_trim_timer, w);
    w->settle_timer = evtimer_new(w->base, on_settle_timer, w);
}

void worker_trim_free(worker_t *w)
{
    if (evtimer_pending(w->settle_timer, NULL))
        atomic_store(&g_settling, false);
    event_free(w->trim_timer);
    event_free(w->settle_timer);
}
