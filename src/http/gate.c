/* Threads: HTTP threads (each holds, releases and settles its own; the count is shared,
 * atomic); the main thread at the stop (http_free). */
/* The accept gate: the MCP listeners stop accepting while twice --max-connections client
 * connections are open, and start again once one closes.
 *
 * Why. At start main.c fits --max-connections so that twice it, and the descriptors the rest of
 * the process needs (the store's table files and logs, the gateway's pipes, the admin
 * listener), fit in RLIMIT_NOFILE; a connection accepted past twice the limit is closed at once
 * (conn.c). But that close comes after the accept loop: libevent's listener accepts until the
 * backlog is empty (or accept fails), and the connections it took are tracked, and the excess
 * closed, later in the same loop iteration (http_on_fresh). A burst waiting in the backlog was
 * thus accepted until EMFILE, taking for a moment every descriptor the store was promised: a
 * write-ahead log or table file RocksDB opened then failed (a store error, and RocksDB stops
 * writing after a failed log switch). core/acceptguard.c only keeps the listener from
 * spinning once that has happened.
 *
 * How. A connection counts from its accept (http_on_new_bev, inside libevent's accept loop;
 * one evhttp made without our bufferevent, at its request) until its descriptor is surely
 * closed: g_conns. The accept that brings it to the mark holds that thread's listener
 * (accept_guard_hold): libevent's loop stops at once when its callback disabled the listener.
 * It activates every other thread's gate event, and each holds its own listener on its own
 * loop (a listener's thread alone touches it), so a new connection waits in the backlog
 * whichever SO_REUSEPORT socket the kernel gives it. Threads accepting at the same moment may
 * take one connection each past the mark (FD_RESERVE_MORE in main.c has room for them), and
 * conn.c closes those at once.
 *
 * A close does not free the descriptor at once: libevent closes it in the bufferevent's
 * finalizer, which runs later in the same turn of the loop. Released on the close, a listener
 * on another thread could accept in the meantime: in a test's flood the descriptors then went
 * 300 past the mark, up to EMFILE. So a close is tallied on its thread
 * (http_gate_closed), and a zero timer, which runs in the loop's next turn after the
 * finalizers, takes the tally off g_conns; below the mark, while some listener is held, it
 * activates the gate event of every held thread, which releases its listener on its own loop.
 * A hold activates its own thread's event too: a settle on another thread between this
 * thread's count and its flag saw no holder (both are sequentially consistent atomics, so the
 * event's look sees that settle, and releases). New connections wait in the kernel's backlog while the
 * listeners are held, and are accepted in their order once one closes.
 *
 * Every stop (an accept that reached the mark) counts in accept_holds_total; the log says it
 * once per episode (a stop after ACCEPT_QUIET_MS without one). The timer costs an event_add per loop turn that closed a
 * connection (not per request). */
#include "http/internal.h"

#include "core/config.h"
#include "core/log.h"
#include "core/stats.h"

#include <event2/event.h>

static atomic_llong g_conns;           /* see the file comment */
static atomic_int g_held;              /* threads whose listener is held */
static _Atomic int64_t g_last_hold_ms; /* the last hold (now_mono_ms), 0: none yet */

static long long mark(void)
{
    return 2 * (long long)g_cfg.max_connections;
}

static void log_episode(void)
{
    log_warn("the MCP listeners stop accepting while %lld client connections are open (twice "
             "--max-connections %lld, counted from accept): new connections wait in the "
             "kernel's backlog until one closes, so that a burst cannot take the descriptors "
             "the store and the rest of the process need. Logged once until %d s pass without "
             "a hold; accept_holds_total counts the holds",
             mark(), (long long)g_cfg.max_connections, ACCEPT_QUIET_MS / 1000);
}

static void hold(http_thread_t *t)
{
    atomic_store(&t->gate_held, true);
    atomic_fetch_add(&g_held, 1);
    accept_guard_hold(&t->guard);
    event_active(t->gate_ev, EV_TIMEOUT, 1); /* looks again: see the file comment */
}

static void release(http_thread_t *t)
{
    atomic_store(&t->gate_held, false);
    atomic_fetch_sub(&g_held, 1);
    accept_guard_release(&t->guard); /* nothing once the listener is closed (the stop) */
}

/* The gate event of every HTTP thread but `but` (NULL: all), or of the held ones only. */
static void poke(const http_thread_t *but, bool held_only)
{
    for (int i = 0; i < g_http_n; i++)
        if (&g_http[i] != but && (!held_only || atomic_load(&g_http[i].gate_held)))
            event_active(g_http[i].gate_ev, EV_TIMEOUT, 1);
}

/* t's listener held or released by the count now, on t's own loop. */
static void on_gate(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    bool over = atomic_load(&g_conns) >= mark();
    if (over && !atomic_load(&t->gate_held) && t->bound)
        hold(t);
    else if (!over && atomic_load(&t->gate_held))
        release(t);
}

/* The loop's next turn after closes: their descriptors are closed now. */
static void on_settle(evutil_socket_t fd, short what, void *arg)
{
    http_thread_t *t = arg;
    atomic_fetch_sub(&g_conns, (long long)t->gate_closed);
    t->gate_closed = 0;
    if (atomic_load(&g_held) > 0 && atomic_load(&g_conns) < mark())
        poke(NULL, true);
}

int http_gate_init(http_thread_t *t)
{
    t->gate_ev = event_new(t->base, -1, 0, on_gate, t);
    t->settle_ev = evtimer_new(t->base, on_settle, t);
    return t->gate_ev && t->settle_ev ? 0 : -1;
}

void http_gate_free(http_thread_t *t)
{
    if (t->gate_ev)
        event_free(t->gate_ev);
    if (t->settle_ev)
        event_free(t->settle_ev);
    t->gate_ev = t->settle_ev = NULL;
}

void http_gate_accepted(http_thread_t *t)
{
    if (atomic_fetch_add(&g_conns, 1) + 1 < mark() || atomic_load(&t->gate_held) || !t->bound)
        return;
    hold(t);
    poke(t, false); /* every listener stops, not only those that accept again */
    STAT_INC(accept_holds_total);
    int64_t now = now_mono_ms();
    int64_t last = atomic_exchange(&g_last_hold_ms, now);
    if (last == 0 || now - last >= ACCEPT_QUIET_MS)
        log_episode();
}

void http_gate_counted(void)
{
    atomic_fetch_add(&g_conns, 1);
}

void http_gate_closed(http_thread_t *t)
{
    static const struct timeval now = {0, 0};
    if (t->gate_closed++ == 0 && t->settle_ev)
        evtimer_add(t->settle_ev, &now);
}
