/* Threads: the thread running the listener's loop (HTTP threads, the admin thread). */
/* A listener that fails to accept pauses instead of spinning: see acceptguard.h. */
#include "core/acceptguard.h"

#include "core/log.h"
#include "core/stats.h"
#include "core/util.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>

/* when the last failure of any listener was (now_mono_ms), 0: none yet */
static _Atomic int64_t g_last_failure_ms;

/* Every guard set, for the error callback: libevent passes it the listener's own argument
 * (evhttp's), so the guard is found by its listener. Looked up only on a failure. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static accept_guard_t *g_guards;

static accept_guard_t *guard_of(struct evconnlistener *lev)
{
    pthread_mutex_lock(&g_mu);
    accept_guard_t *g = g_guards;
    while (g && g->lev != lev)
        g = g->next;
    pthread_mutex_unlock(&g_mu);
    return g;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    accept_guard_t *g = arg;
    STAT_INC(timer_wakeups_total);
    if (!g->held)
        evconnlistener_enable(g->lev);
}

static void log_episode(const accept_guard_t *g, int err)
{
    struct rlimit rl = {0};
    getrlimit(RLIMIT_NOFILE, &rl);
    const char *what = err == EMFILE   ? "the process has no free file descriptor"
                       : err == ENFILE ? "the system has no free file descriptor"
                                       : "a failure accept() does not retry";
    log_warn("the %s listener cannot accept: %s (%s; RLIMIT_NOFILE %lld). It stops accepting "
             "for %d ms at a time until a connection can be accepted; new connections wait in "
             "the kernel's backlog meanwhile. Logged once until %d s pass without a failure; "
             "accept_pauses_total counts the pauses",
             g->name, strerror(err), what,
             rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur, ACCEPT_PAUSE_MS,
             ACCEPT_QUIET_MS / 1000);
}

/* libevent calls it for an accept() error it does not retry (not EAGAIN, EINTR or
 * ECONNABORTED), with errno still the accept's. */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    int err = EVUTIL_SOCKET_ERROR();
    accept_guard_t *g = guard_of(lev);
    evconnlistener_disable(lev);
    if (!g)
        return; /* never: its callback goes with it */
    struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
    evtimer_add(g->resume, &tv);
    STAT_INC(accept_pauses_total);
    int64_t now = now_mono_ms();
    int64_t last = atomic_exchange(&g_last_failure_ms, now);
    if (last == 0 || now - last >= ACCEPT_QUIET_MS)
        log_episode(g, err);
}

int accept_guard_init(accept_guard_t *g, struct evconnlistener *lev, const char *name)
{
    *g = (accept_guard_t){0};
    g->resume = evtimer_new(evconnlistener_get_base(lev), on_resume, g);
    if (!g->resume)
        return -1;
    g->lev = lev;
    g->name = name;
    pthread_mutex_lock(&g_mu);
    g->next = g_guards;
    g_guards = g;
    pthread_mutex_unlock(&g_mu);
    evconnlistener_set_error_cb(lev, on_accept_error);
    return 0;
}

void accept_guard_hold(accept_guard_t *g)
{
    if (!g->lev)
        return;
    g->held = true;
    evconnlistener_disable(g->lev);
}

void accept_guard_release(accept_guard_t *g)
{
    if (!g->lev || !g->held)
        return;
    g->held = false;
    if (!evtimer_pending(g->resume, NULL)) /* else the pause's end enables it */
        evconnlistener_enable(g->lev);
}

void accept_guard_free(accept_guard_t *g)
{
    if (g->resume)
        event_free(g->resume);
    g->resume = NULL;
    if (!g->lev)
        return;
    evconnlistener_set_error_cb(g->lev, NULL);
    pthread_mutex_lock(&g_mu);
    accept_guard_t **pp = &g_guards;
    while (*pp && *pp != g)
        pp = &(*pp)->next;
    if (*pp)
        *pp = g->next;
    pthread_mutex_unlock(&g_mu);
    g->lev = NULL;
}
