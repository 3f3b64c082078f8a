/* The admin listener (--admin-listen, loopback by default): /healthz, /stats, /metrics and the
 * shard API.
 * One thread with its own event_base; it only reads process-wide counters and RocksDB
 * properties, never actor state. */
#ifndef MCPD_ADMIN_ADMIN_H
#define MCPD_ADMIN_ADMIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"

/* 0, or -1 after logging why. *bound_port gets the port (port 0 picks one). */
int admin_start(const char *host, int port, store_t *store, int *bound_port);
/* Shard ownership and moves, done by the actor layer (main registers them; admin cannot reach
 * it). A step (POST /shards/<op>?shard=abc&..., POST /shards/bootstrap) runs on a thread of
 * its own: 202 at once (409 with "busy" while another runs), then GET /shards/move tells how
 * it went. A step returns 0
 * with *report (new), or -errno with why (statuses in admin.c). The queries run on the admin
 * thread: GET /shards (summary merged into the answer), /shards/record?shard=abc, and
 * /shards/export?shard=abc[&file=NAME] (the manifest, or one file, of a kept export). */
typedef struct admin_shard_req {
    int shard;
    char peer[65]; /* to= (release), from= (adopt, decline) */
    long epoch;    /* epoch= (decline) */
    bool force;    /* force=1 (reclaim) */
} admin_shard_req_t;
typedef int (*admin_shard_step)(const admin_shard_req_t *rq, json_t **report, char *why,
                                size_t whylen);
typedef struct admin_shard_ops {
    admin_shard_step release, adopt, reclaim, decline, finish, bootstrap;
    json_t *(*summary)(void);     /* merged into GET /shards */
    json_t *(*record)(int shard); /* GET /shards/record */
    int (*export_path)(int shard, const char *file, char *path, size_t len);
} admin_shard_ops_t;
void admin_set_shard_ops(const admin_shard_ops_t *ops);
void admin_stop(void);
/* For tests: whether a request with this Host header (NULL: none) may reach a listener bound to
 * bound (--admin-listen's host) at addr (the address it bound, numeric; NULL: unknown);
 * loopback: addr is a loopback one (its socket's, whatever name bound it: "localhost", the
 * machine's own name in /etc/hosts). Only a loopback listener looks: its Host must name
 * localhost, 127.0.0.1, [::1], bound or addr (bracketed or not), with any port or none, in any
 * case, so a page that rebinds its own DNS name to 127.0.0.1 gets no answer. */
bool admin_host_ok(const char *bound, const char *addr, bool loopback, const char *host);
/* Why a request is refused as a browser's (NULL: it is not; browser.c). The admin API moves
 * shards and reads the node's state: no web page may reach it. Browsers send Origin on every
 * POST and cross-origin request, and Sec-Fetch-Site on every request (only "none" where the user
 * typed the address); curl, HAProxy, Prometheus and the nodes' own calls send neither. A page
 * that rebinds its DNS name to 127.0.0.1 sends its own name as Host: admin_host_ok, for a
 * listener on a wildcard address ("0.0.0.0", "::") by the connection's own address, with the
 * machine's names (gethostname, and the canonical name it resolves to) as its bound name. */
struct evhttp_request;
/* Notes whether the listener bound a wildcard address (addr, numeric) and, if so, reads the
 * machine's names (gethostname and its canonical name: a lookup, once) for its check; at the
 * start, before the admin thread runs. */
void admin_browser_init(const char *addr);
const char *admin_browser_refusal(struct evhttp_request *req, const char *bound, const char *addr,
                                  bool loopback);

#endif
