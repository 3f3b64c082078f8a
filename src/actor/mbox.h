/* A worker's mailbox counts: how many requests of each session are queued for it, admitted
 * and not yet handled, counted by the session's full id (--mailbox bounds each). HTTP threads
 * count a request in (mbox_add), the session's worker counts it out once handled (mbox_done).
 *
 * A table of MBOX_BUCKETS buckets, each one cache line with a lock of its own (a few
 * instructions are held under it, nothing blocks there): a bucket keeps one session's count in
 * place and, for other sessions of the bucket with requests queued at the same time, a list
 * made for them. A session's count exists only while it has requests queued: the table holds
 * the sessions with requests queued, no more, and nothing per session otherwise. */
#ifndef MCPD_ACTOR_MBOX_H
#define MCPD_ACTOR_MBOX_H

#include "core/util.h"

#define MBOX_BUCKETS 1024

typedef struct mbox mbox_t;

/* Main thread: an empty table; mbox_free frees it, with the entries of what is still counted. */
mbox_t *mbox_new(void);
void mbox_free(mbox_t *mb);

/* The bucket of a session id (SESSION_ID_LEN characters) in mb: what mbox_add and mbox_done
 * take. Hashed with the table's own random seed (read at mbox_new; the environment's
 * MCPD_MBOX_SEED, 16 hex digits, for tests): a client that sends ids of its choosing cannot
 * put them all in one bucket, whose list every count would walk. */
unsigned mbox_bucket(const mbox_t *mb, const char *sid);

/* Any thread: counts one more request of sid (in its bucket b, mbox_bucket's) unless that
 * would pass limit. The session's count with it, or 0 when refused (nothing counted). */
int mbox_add(mbox_t *mb, unsigned b, const char *sid, int limit);

/* Any thread (the session's worker): counts out one request mbox_add counted in. */
void mbox_done(mbox_t *mb, unsigned b, const char *sid);

/* Any thread, for tests: sid's count now (0: nothing queued), and the sessions with a count. */
int mbox_count(mbox_t *mb, const char *sid);
long mbox_sessions(mbox_t *mb);

#endif
