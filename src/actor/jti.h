/* The DPoP proof replay cache (RFC 9449 11.1): each proof's jti is accepted once, and the
 * record of it is durable, so a proof captured before a restart is refused after it too (a
 * stateless server can only bound a replay by the proof's age; this one refuses it outright).
 *
 * Where: the node's own column family (CF_NODE: never exported with a shard, so the cache is
 * per node; in a cluster a proof could be replayed once at each other node within its window),
 * one key per proof:
 *     "dpop/" | iat u64 (big-endian) | jkt (43 bytes) | jti   ->  who (the principal)
 * The proof's iat leads the key, so what has expired is one contiguous range at the front: a
 * proof older than the window (DPOP_MAX_AGE_S + --auth-leeway) is refused by its age before the
 * cache is asked, so its key is no longer needed. The HTTP thread that checks a proof does one
 * Get and one Put (a write like the others: fsynced only with --sync), under one of 64 stripe
 * locks, so two copies of a proof on two connections cannot both pass.
 *
 * No periodic work: the sweep is a node alarm (actor/alarm.h) armed at the first key's expiry
 * (plus JTI_SWEEP_GRANULE_S, so a steady stream of proofs costs one sweep per granule, not one
 * per second); it single-deletes the expired keys (each was put once), counts them out, and
 * re-arms at the next key, or not at all when the cache is empty. At start the keys left from
 * before are counted and the sweep armed from the first of them.
 *
 * Bounded per principal: the token a proof came with names one (its issuer and subject, the
 * `who` every other share of the server counts by), and it holds at most --principal-share
 * percent of --auth-dpop-jti-max records, whatever proof keys it uses (a client makes its own
 * keys, RFC 9449, so a bound per key would not bound a client). Counted in memory per
 * principal: rebuilt by the scan at start, decremented by the sweep, both from the record's
 * value; a record whose value is empty (as an older server wrote it) counts in the global
 * bound alone. So one client filling the cache with fresh jtis locks out only itself; the
 * global maximum (expired keys not yet swept included) stays as the last resort. A fresh
 * proof past either bound is not accepted (JTI_SHARE, JTI_FULL: the caller answers 503 with
 * Retry-After, computed from the earliest iat held, an atomic the sweep and jti_check keep, so
 * a refusal reads no store), since accepting it unrecorded would let it be replayed.
 *
 * Monotonic: the highest cutoff any sweep used is kept (in memory, and stored under
 * "dpop-cutoff" with each sweep's deletes; at start the larger of it and the start's own
 * cutoff); a proof issued before it is refused (JTI_STALE), so a wall clock stepped back
 * cannot make a swept proof acceptable again. */
#ifndef MCPD_ACTOR_JTI_H
#define MCPD_ACTOR_JTI_H

#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

#define JTI_DEFAULT_MAX 1000000
#define JTI_SWEEP_GRANULE_S 30
#define JTI_SWEEP_MARGIN_S \
    5                       /* an expired key is kept this much longer: a proof checked
                                 just before its expiry is recorded before it is swept */
#define JTI_SWEEP_MAX 65536 /* keys deleted per sweep run; more are swept 100 ms later */
#define JTI_WHO_MAX 63      /* a principal's name (http/oauth.h: "o:" + 32 hex digits) */

typedef enum {
    JTI_FRESH = 0, /* not seen before: now recorded */
    JTI_REPLAY,    /* seen before: refuse the proof */
    JTI_SHARE,     /* the proof's principal holds its share: not recorded */
    JTI_FULL,      /* the cache holds its maximum: not recorded */
    JTI_STALE,     /* issued before the last sweep's cutoff: its record may be gone */
    JTI_ERROR,     /* the store refused the write (or the check was malformed): not recorded */
    JTI_UNREAD,    /* the store failed to read whether it was seen (a read error): not
                      recorded, neither fresh nor a replay */
} jti_result_t;

/* Main thread, after store_open and before alarms_start: window_s is how long a proof stays
 * acceptable after its iat; max the bound; share_pct the percent of max one principal may
 * hold. Sweeps what expired while the server was down, counts the rest (per principal too), and
 * hints the node alarm at the next expiry. 0, or -EIO when a read error stopped the count or
 * hid the stored cutoff (a cutoff taken as absent could readmit a swept proof). */
int jti_open(store_t *s, int64_t window_s, int64_t max, int share_pct);
/* Main thread, after the HTTP threads and the alarm thread stopped. */
void jti_close(void);
/* HTTP threads: records the proof of key jkt (DPOP_JKT_LEN bytes) with this jti and iat, in
 * the share of principal who (1..JTI_WHO_MAX bytes; JTI_ERROR otherwise). */
jti_result_t jti_check(const char *who, const char *jkt, const char *jti, size_t jti_len,
                       int64_t iat);
/* The alarm thread (alarms_node_fn): deletes what expired by now_ms; returns the due time of
 * the next sweep (0: the cache is empty). */
int64_t jti_sweep(int64_t now_ms);
/* Keys held now (swept ones not counted). */
int64_t jti_count(void);
/* Seconds until the first key expires (a Retry-After for JTI_FULL; a lower bound for
 * JTI_SHARE), at least 1; reads an atomic, not the store. */
int64_t jti_retry_after(void);

#endif
