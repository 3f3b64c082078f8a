/* Durable one-shot alarms: the process-wide timer. Its own thread.
 *
 * Each session has at most one alarm, a key (due_ms, sid) in the `alarms` column family that
 * its actor writes in its turn batch (and notes in its metadata). This scheduler arms one timer
 * for the earliest due key; when it fires it sends WM_ALARM {sid, due} to the session's worker
 * for every key due by then (the actor wakes from the store if it hibernates), and re-arms at
 * the next key, or not at all. It never writes a session's keys: the actor deletes or moves its
 * key when it handles the alarm, in the same batch as the work the alarm did.
 *
 * Keys it has dispatched are not dispatched again (a floor moves past them), unless an actor
 * hints a due time below the floor; the actor ignores a WM_ALARM whose due time is not its
 * current alarm, so a duplicate is harmless. A read error is not the end of the keys: a scan
 * it stopped, a next key it hid, or an actor whose wake it failed (alarms_retry) leaves the
 * keys from there to be read and dispatched again 5 s later (the timer fires then), and again
 * until they read.
 *
 * Beside the sessions' alarms the same timer serves one node alarm: a function (the DPoP replay
 * cache's sweep, actor/jti.h, which writes its own deletes) that runs on this thread when its
 * due time comes and returns the next one (0: none). Its due time is not stored here: its owner finds it again from its own
 * records at start and hints it. The timer is armed at the earlier of the two, and not at all
 * when neither has one: no periodic work. */
#ifndef MCPD_ACTOR_ALARM_H
#define MCPD_ACTOR_ALARM_H

#include <stdint.h>

#include "store/store.h"

/* Main thread, after the workers started: counts the stored alarms and arms the timer. 0; -EIO
 * when a read error stopped the count (nothing is started); -1 when the thread cannot start. */
int alarms_start(store_t *store);
/* Main thread, before the workers stop: no more dispatches; hints are ignored from then on. */
void alarms_stop(void);
/* Main thread, after the workers stopped (a late hint may still touch the events until then). */
void alarms_free(void);
/* Any thread, after the key is committed: an alarm was set at due_ms. Lock-free and without a
 * wake-up when due_ms is at or after the armed time (the common case). */
void alarms_hint(int64_t due_ms);
/* Main thread, before alarms_start: the node alarm's function (on the alarm thread; returns its
 * next due time, wall ms, or 0). */
void alarms_node_fn(int64_t (*fn)(int64_t now_ms));
/* Any thread: the node alarm is due at due_ms (kept when later than one already armed). */
void alarms_node_hint(int64_t due_ms);
/* A worker: the actor of an alarm due at due_ms could not be read (a read error): the keys from
 * due_ms on are dispatched again READ_RETRY_MS later. */
void alarms_retry(int64_t due_ms);

#endif
