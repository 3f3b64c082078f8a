/* A listener that cannot accept (the process or the system is out of file descriptors:
 * EMFILE, ENFILE; or any other error accept() does not retry) stops accepting for
 * ACCEPT_PAUSE_MS and tries again, instead of spinning. libevent's listener, left without an
 * error callback, logs the failure and returns to the loop, and the listening socket is
 * readable again at once (the connection is still in the backlog): a loop at full speed and a
 * log line per turn, until a descriptor is freed.
 *
 * The guard disables the listener, re-enables it on a timer on the listener's own loop, and
 * logs once per episode: an episode starts with a failure after ACCEPT_QUIET_MS without any,
 * on any listener of the process. Every pause counts in accept_pauses_total. New connections
 * wait in the kernel's backlog meanwhile. Only the thread running the listener's loop touches
 * a guard (the HTTP threads, the admin thread); the episode's clock is shared (atomic). It does
 * not know what the listener serves.
 *
 * Its owner may also hold the listener (a limit of its own reached: http/gate.c): it accepts
 * nothing until released, whatever a pause does meanwhile; a release during a pause leaves the
 * enable to the pause's end. */
#ifndef MCPD_CORE_ACCEPTGUARD_H
#define MCPD_CORE_ACCEPTGUARD_H

#include <stdbool.h>
#include <stdint.h>

struct evconnlistener;
struct event;

#define ACCEPT_PAUSE_MS 100
#define ACCEPT_QUIET_MS 10000

typedef struct accept_guard {
    struct evconnlistener *lev; /* not owned; NULL: not set */
    struct event *resume;       /* owned: re-enables lev */
    const char *name;           /* the listener, in the log ("MCP", "admin"); static */
    bool held;                  /* accept_guard_hold: disabled until accept_guard_release */
    struct accept_guard *next;  /* the guards set (acceptguard.c) */
} accept_guard_t;

/* Sets lev's error callback. 0, or -1 (out of memory: the guard is not set). */
int accept_guard_init(accept_guard_t *g, struct evconnlistener *lev, const char *name);
/* The listener stops accepting until accept_guard_release (the thread running its loop; a
 * guard not set or freed: nothing). */
void accept_guard_hold(accept_guard_t *g);
void accept_guard_release(accept_guard_t *g);
/* Before lev is freed (a pause in progress is dropped; lev is left as it is). Idempotent. */
void accept_guard_free(accept_guard_t *g);

#endif
