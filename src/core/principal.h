/* Principals: who a request is for, when the server shares out what one client could fill.
 * Any thread (one mutex for the counts and the table; references are atomic).
 *
 * A principal is a name:
 *   "t:<token name>"  with --auth-tokens: the bearer token's name, for everything;
 *   "a:<address>"     without: the client's peer address (IPv4 or IPv6 text), for the
 *                     resources it creates (sessions, handles, tasks, input-request
 *                     records) and its connections,
 *                     and for the tool pool share of its 2026-07-28 calls and tasks;
 *   "s:<session id>"  a session stored before owners were kept: its own pool principal;
 *   "p:<address>"     the connections of a --trusted-proxy (no share: they carry many
 *                     clients, whose own address comes from X-Forwarded-For);
 *   "g:<name>"        the 2026-07-28 pool of the gateway's --upstream NAME: its processes'
 *                     --upstream-max places (a share like any client's).
 * An IPv6 address counts by its /64 (one client may hold a whole /64), an IPv4-mapped one as
 * its IPv4 address.
 *
 * Each principal counts what it holds of the resources the server caps globally
 * (--max-sessions, --max-handles, --max-tasks, --max-input-records, --max-connections,
 * --upstream-max, the places of --sse-backlog):
 * principal_take takes one
 * unit when the global count is below the cap *and* the principal holds less than its share
 * (--principal-share percent of the cap, at least 1), under one lock, so the caps are exact
 * however many threads take at once. The entry lives while it is referenced (an actor, a job,
 * a connection, a message) or holds anything; the counts of stored things are rebuilt at
 * startup from the store (principal_add).
 *
 * The tool pool keeps its per-principal queue in the entry (principal_sched), under the
 * pool's own mutex: this module only keeps the entry alive for it. */
#ifndef MCPD_CORE_PRINCIPAL_H
#define MCPD_CORE_PRINCIPAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A principal's name: "t:" + a token name (at most 63 bytes), "a:" + an address, "s:" + a
 * session id, "p:" + a proxy's address, "g:" + an --upstream name. */
#define PRINCIPAL_NAME_MAX 72

typedef enum {
    PR_SESSIONS = 0, /* sessions stored (and initializes in flight) */
    PR_HANDLES,      /* state handles stored */
    PR_TASKS,        /* tasks stored (a cancelled one until it is deleted) */
    PR_CONNECTIONS,  /* client connections holding a --max-connections place */
    PR_OPEN,         /* client connections open, holding a place or not (no cap: counted) */
    PR_AUTH_WAITS,   /* requests parked for the auth thread (a key fetch, an introspection) */
    PR_UPSTREAMS,    /* gateway processes running for its sessions (--upstream-max) */
    PR_RECORDS,      /* 2026-07-28 input-request records stored (--max-input-records) */
    PR_SSE_BACKLOG,  /* SSE connections far behind their reader (--sse-backlog, http/backlog.c) */
    PR__COUNT
} pres_t;

typedef struct principal principal_t;
struct mcpd_ctx;

/* The tool pool's per-principal state (actor/pool.c; under the pool's mutex, never this
 * module's). */
typedef struct principal_sched {
    int running;                    /* its jobs on a pool thread now */
    struct mcpd_ctx *head, *tail;   /* its jobs waiting for a thread, oldest first */
    struct principal *next_waiting; /* the pool's list of principals with waiting jobs */
    bool waiting;                   /* on that list */
} principal_sched_t;

/* Main thread, before any other thread uses this module: the global caps (0: none) and the
 * share one principal may hold of each, in percent (1..100). */
void principals_configure(const int64_t caps[PR__COUNT], int share_pct);
/* The most of r one principal may hold: share_pct of the cap, at least 1 (0: no cap). */
int64_t principal_limit(pres_t r);
/* The same share of n things that are not counted here (a gateway pool's processes and its
 * queue, which their worker counts itself): share_pct of n, at least 1 (n <= 0: 0). */
int64_t principal_share_of(int64_t n);

/* The entry for name (a new reference; made when absent). Names longer than
 * PRINCIPAL_NAME_MAX - 1 bytes are cut. */
principal_t *principal_get(const char *name);
/* The same for kind ('t', 'a', 's', 'p' or 'g') and value: "<kind>:<value>". */
principal_t *principal_of(char kind, const char *value);
/* A client address as a principal counts it ("a:" + principal_address, or the text as given
 * when it is not an address). */
principal_t *principal_of_address(const char *addr);
/* An address in its principal form: IPv4 as is, IPv6 as its /64 ("2001:db8::/64"),
 * IPv4-mapped IPv6 as IPv4. 0, or -1 when addr is not an address. */
int principal_address(const char *addr, char *out, size_t n);
/* The client a proxy names in an X-Forwarded-For value: its last comma-separated entry (the one
 * the proxy appended), in principal_address form. 0, or -1 when that entry is not an address. */
int principal_forwarded(const char *xff, char *out, size_t n);
principal_t *principal_ref(principal_t *p);
/* Drops a reference (NULL: nothing). */
void principal_unref(principal_t *p);
const char *principal_name(const principal_t *p);
principal_sched_t *principal_sched(principal_t *p);

/* Takes one unit of r for p: 0, -ENOSPC when the global cap is reached, -EDQUOT when p holds
 * its share already. Nothing is taken on failure. */
int principal_take(principal_t *p, pres_t r);
/* principal_take, and a refusal counted (limit_refusals_total, and share_refusals_total for
 * -EDQUOT): for the stored resources whose refusal the caller answers itself. */
int principal_take_counted(principal_t *p, pres_t r);
/* principal_take, and also -EDQUOT when p holds `most` units of r already (most > 0): a check
 * and a take under one lock, so the bound is exact however many threads take at once. */
int principal_take_upto(principal_t *p, pres_t r, long long most);
/* Gives one unit of r back. */
void principal_give(principal_t *p, pres_t r);
/* One unit of r stops counting in p's share but still counts against the global cap (a
 * gateway process that outlives its session; a task cancelled by an older server, stored
 * "hs": false); principal_give_global ends it. */
void principal_give_share(principal_t *p, pres_t r);
void principal_give_global(pres_t r);
/* Adds n to the global count of r alone (the startup count of cancelled tasks). */
void principal_add_global(pres_t r, long long n);
/* Adds n (may be negative) to what name holds of r, with no limit: the startup count and
 * shard moves. */
void principal_add(const char *name, pres_t r, long long n);
/* What p holds of r, and what all principals hold together. */
long long principal_held(const principal_t *p, pres_t r);
long long principal_total(pres_t r);
/* Principals with an entry now (for /stats). */
long long principals_live(void);

#endif
