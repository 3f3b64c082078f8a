/* A session's own records: its metadata, its one alarm key, its tools' state. Any thread for
 * reads; writes go into the caller's batch. The layout is keys.h's; the meaning of the metadata
 * (a JSON object) is the actor's.
 *
 *   sessions  sid              -> metadata (JSON)
 *   alarms    due u64 | sid    -> (empty) one per session, by due time: the scheduler's index
 *   state     sid | name       -> tool state value (JSON)
 */
#ifndef MCPD_STORE_SESSIONREC_H
#define MCPD_STORE_SESSIONREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

void sessionrec_put_meta(store_batch_t *b, const char *sid, const char *text, size_t len);
/* 0 found (*text malloc'd), 1 absent, negative errno. */
int sessionrec_get_meta(store_t *s, const char *sid, char **text, size_t *len);
/* Counts the stored metadata records (startup only: O(records)); with kind, also by the kind
 * it gives each one (0..nkinds-1, into by_kind; the meaning of the metadata is the actor's). */
typedef int (*sessionrec_kind_fn)(const char *meta, size_t len);
uint64_t sessionrec_count(store_t *s, sessionrec_kind_fn kind, uint64_t *by_kind, int nkinds);
/* The same for the ids starting with prefix (a shard), by kind only: 0, or -EIO when a read
 * error stopped the count (by_kind short). */
int sessionrec_count_prefix(store_t *s, const char *prefix, size_t plen, sessionrec_kind_fn kind,
                            uint64_t *by_kind, int nkinds);
/* Calls fn for every stored metadata record whose id starts with prefix (plen 0: every
 * record): startup and shard moves only, O(records). 0, or -EIO when a read error stopped the
 * walk (fn saw only part of them). */
typedef void (*sessionrec_meta_fn)(void *arg, const char *sid, const char *meta, size_t len);
int sessionrec_scan_meta(store_t *s, const char *prefix, size_t plen, sessionrec_meta_fn fn,
                         void *arg);
/* The alarms of ids starting with prefix: how many (*count), and the earliest due (0: none). 0,
 * or -EIO when a read error stopped the scan (both short). */
int sessionrec_alarms_of_prefix(store_t *s, const char *prefix, size_t plen, uint64_t *count,
                                int64_t *earliest);

void sessionrec_put_alarm(store_batch_t *b, int64_t due_ms, const char *sid);
void sessionrec_delete_alarm(store_batch_t *b, int64_t due_ms, const char *sid);
/* The first alarm key due at or after floor_ms; 0 when none, -EIO when a read error hid it. */
int64_t sessionrec_first_alarm(store_t *s, int64_t floor_ms);
/* Called for each alarm due in [from_ms, until_ms], in due order. Returns how many, or -EIO when
 * a read error stopped the scan (fn saw the ones before it). */
typedef void (*sessionrec_alarm_fn)(void *arg, int64_t due_ms, const char *sid);
long sessionrec_scan_alarms(store_t *s, int64_t from_ms, int64_t until_ms, sessionrec_alarm_fn fn,
                            void *arg);
/* Counts the stored alarms (startup only): those whose id keep() accepts (NULL: all); -EIO
 * when a read error stopped the count. */
int64_t sessionrec_count_alarms(store_t *s, bool (*keep)(const char *sid));

/* State names are 1..200 bytes: -EINVAL otherwise. get: 0 found (*text malloc'd), 1 absent,
 * negative errno. */
int sessionrec_get_state(store_t *s, const char *sid, const char *name, char **text, size_t *len);
int sessionrec_put_state(store_batch_t *b, const char *sid, const char *name, const char *text,
                         size_t len);
int sessionrec_delete_state(store_batch_t *b, const char *sid, const char *name);

#endif
