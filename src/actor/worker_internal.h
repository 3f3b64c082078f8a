/* What worker.c (the turn, the mailboxes, the commit, the lifecycle), worker_table.c (the
 * actor table and the idle list that hibernates) and worker_trim.c (memory handed back) share:
 * the worker itself. Worker threads; nothing outside these three files includes it. */
#ifndef MCPD_ACTOR_WORKER_INTERNAL_H
#define MCPD_ACTOR_WORKER_INTERNAL_H

#include "actor/worker.h"

#include "actor/job.h"
#include "actor/mbox.h"
#include "core/jshare.h"
#include "core/mq.h"
#include "core/principal.h"
#include "core/ptrmap.h"
#include "core/slab.h"
#include "core/stats.h"
#include "store/store.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct outq {
    mq_node_t *first, *last;
    size_t n;
    mq_node_t *safe; /* the last frame queued before the turn's last good commit, or NULL */
} outq_t;

typedef struct deferred {
    job_t *job;
    uint32_t wait_seq;
    json_t *value;
} deferred_t;

struct worker {
    int idx;
    pthread_t thread;
    struct event_base *base;
    mq_t inbox;
    struct event *inbox_ev;
    store_batch_t *batch;
    outq_t *out; /* one per HTTP thread */
    int n_http;
    mbox_t *mbox; /* its sessions' mailbox counts (mbox.h) */
    /* actor table: chained hash on the session id, chains through actor->hnext */
    struct actor **buckets;
    size_t nbuckets, nactors;
    bool stop;
    /* hibernation: idle actors, oldest first, and one timer for the oldest */
    struct actor *lru_head, *lru_tail;
    struct event *idle_timer;
    int64_t idle_armed_ms; /* monotonic deadline the timer is armed for, 0 = none */
    int64_t alarm_hint;    /* lowest alarm set this turn, 0 = none */
    long hibernated_since_trim;
    struct event *trim_timer;   /* one-shot, armed only after a burst */
    struct event *settle_timer; /* one-shot: the trim after the store's work (worker_trim.c) */
    int settle_tries;
    long turn_messages;
    long burst_messages; /* since the last trim */
    size_t burst_bytes;
    bool colocated; /* runs on an HTTP thread's event_base, no thread of its own */
    /* a failed turn (see worker_commit): what it must undo */
    bool turn_failed;
    bool fail_message; /* worker_fail_turn's: the failure ends with the message (on_message) */
    bool fail_read;    /* worker_fail_turn's, first: a read failed the turn (READ_FAILED_TURN) */
    uint64_t epoch;    /* advances at every good commit: actors' touch marks expire */
    char (*touched)[SESSION_ID_LEN + 1]; /* actors touched since the last good commit */
    size_t ntouched, cap_touched;
    deferred_t *deferred; /* state answers waiting for the commit */
    size_t ndeferred, cap_deferred;
    struct after {
        after_commit_fn fn;
        void *arg;
    } * afters; /* worker_after_commit's, in order */
    size_t nafters, cap_afters;
    long long dstats[DS__COUNT]; /* store-backed counters of the uncommitted writes */
    struct give {
        principal_t *p;
        int r;
        give_mode_t mode;
    } * gives; /* at the commit */
    size_t ngives, cap_gives;
    ptrmap_t recover; /* hash(sid) of sessions reset by a failed turn */
    jshare_t shared;  /* clientInfo and capabilities its sessions share */
    slab_t actors;    /* its actors' memory (core/slab.h) */
};

/* worker_table.c: an empty actor table for a new worker. */
void worker_table_init(worker_t *w);
/* worker_table.c: the idle timer's callback (hibernates the oldest idle actors). */
void worker_on_idle_timer(evutil_socket_t fd, short what, void *arg);
/* worker_trim.c: a new worker's trim timers, and freeing them. */
void worker_trim_init(worker_t *w);
void worker_trim_free(worker_t *w);
/* worker_trim.c: counts a turn toward a burst (its messages, its batch's bytes); a burst arms
 * the trim timer, pushed back by every further turn of it. */
void worker_note_burst(worker_t *w, size_t batch_bytes);

#endif
