/* Micro-benchmark of the event log (store): append and replay. Thread: main only.
 *
 * append: a worker turn puts a batch of events (each an event key and ~200 bytes of message,
 * plus the cap's eviction delete once a stream is past --stream-cap 256), then its stream records,
 * and commits once. Turns of 1, 8 and 64 events over 16 sessions; prints events/s and µs/commit.
 * replay: one stream of 20,000 events; each replay seeks to a random id and reads the next 256
 * events with their values and formatted ids (what actor.c's replay_after does); prints µs per
 * replay (mean, p50, p99). The database lives in a fresh temporary directory, removed at the end.
 * Figures only: nothing here asserts on time.
 *
 * usage: micro-store [EVENTS]   (events appended per turn size; default 200,000)
 */
#define _XOPEN_SOURCE 700
#include "store/keys.h"
#include "wire/eventid.h"
#include "store/store.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSESS 16
#define CAP 256
#define REPLAY_LEN 256

static volatile unsigned sink;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char message[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\","
    "\"logger\":\"notify\",\"data\":{\"n\":12345,\"of\":99999,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}}";

static void append(store_t *s, char sids[][SESSION_ID_LEN + 1], long events, int per_turn,
                   uint64_t *seq)
{
    store_batch_t *b = store_batch_new(s);
    long turns = events / per_turn;
    double t0 = now_s();
    for (long t = 0; t < turns; t++) {
        int si = (int)(t % NSESS);
        for (int e = 0; e < per_turn; e++) {
            unsigned char k[KEY_EVENT_LEN];
            seq[si]++;
            key_event(k, sids[si], 1, seq[si]);
            store_batch_put(b, CF_EVENTS, k, sizeof k, message, sizeof message - 1);
            if (seq[si] > CAP) {
                key_event(k, sids[si], 1, seq[si] - CAP);
                store_batch_delete(b, CF_EVENTS, k, sizeof k);
            }
        }
        unsigned char sk[KEY_STREAM_LEN];
        key_stream(sk, sids[si], 1);
        char rec[64];
        int rl = snprintf(rec, sizeof rec, "S%llu", (unsigned long long)seq[si]);
        store_batch_put(b, CF_STREAMS, sk, sizeof sk, rec, (size_t)rl);
        store_commit(s, b);
    }
    double dt = now_s() - t0;
    store_batch_free(b);
    long n = turns * per_turn;
    printf("store append  %3d events/turn  %8ld events  %10.0f events/s  %8.1f us/commit\n", per_turn,
           n, (double)n / dt, dt * 1e6 / (double)turns);
}

static void replay(store_t *s, const char *sid, long stored, int reps)
{
    store_batch_t *b = store_batch_new(s);
    for (long i = 1; i <= stored; i++) {
        unsigned char k[KEY_EVENT_LEN];
        key_event(k, sid, 2, (uint64_t)i);
        store_batch_put(b, CF_EVENTS, k, sizeof k, message, sizeof message - 1);
        if (i % 256 == 0)
            store_commit(s, b);
    }
    store_commit(s, b);
    store_batch_free(b);

    double *us = calloc((size_t)reps, sizeof *us);
    uint32_t tag = session_tag(sid);
    unsigned long long bytes = 0;
    long short_reads = 0;
    srand(42);
    for (int r = 0; r < reps; r++) {
        uint64_t after = 1 + (uint64_t)(rand() % (int)(stored - REPLAY_LEN - 1));
        double t0 = now_s();
        unsigned char lo[KEY_EVENT_LEN], hi[KEY_EVENT_LEN];
        key_event(lo, sid, 2, after + 1);
        key_event(hi, sid, 3, 0);
        store_iter_t *it = store_iter_new(s, CF_EVENTS, lo, sizeof lo, hi, sizeof hi);
        int got = 0;
        for (store_iter_seek_first(it); store_iter_valid(it) && got < REPLAY_LEN; store_iter_next(it)) {
            size_t kl, vl;
            uint64_t st, seq;
            const unsigned char *k = store_iter_key(it, &kl);
            if (key_event_decode(k, kl, &st, &seq) != 0)
                break;
            const char *v = store_iter_value(it, &vl);
            char eid[EVENT_ID_MAX];
            event_id_format(eid, tag, st, seq);
            bytes += vl;
            sink ^= vl ? (unsigned char)v[vl - 1] : 0; /* the value is read, as a replay sends it */
            got++;
        }
        store_iter_free(it);
        us[r] = (now_s() - t0) * 1e6;
        short_reads += got != REPLAY_LEN;
    }
    double sum = 0;
    for (int r = 0; r < reps; r++)
        sum += us[r];
    qsort(us, (size_t)reps, sizeof *us, cmp_d);
    printf("store replay  %d events after a random id, %d replays of a %ld-event stream: "
           "mean %.1f us  p50 %.1f us  p99 %.1f us  (%.0f events/s, %.1f MB read; %ld short)\n",
           REPLAY_LEN, reps, stored, sum / reps, us[reps / 2], us[(reps * 99) / 100],
           (double)REPLAY_LEN * reps / (sum / 1e6), (double)bytes / 1e6, short_reads);
    free(us);
}

int main(int argc, char **argv)
{
    long events = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
    if (events < 64)
        events = 64;
    char dir[] = "/tmp/mcpd-micro-store.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char err[256];
    store_t *s = store_open(dir, false, 0, err, sizeof err);
    if (!s) {
        fprintf(stderr, "micro-store: %s\n", err);
        return 1;
    }
    char sids[NSESS][SESSION_ID_LEN + 1];
    for (int i = 0; i < NSESS; i++)
        snprintf(sids[i], sizeof sids[i], "%08x%024x", 0x5e55u + (unsigned)i, 0u);
    uint64_t seq[NSESS] = {0};
    append(s, sids, events, 1, seq);
    append(s, sids, events, 8, seq);
    append(s, sids, events, 64, seq);
    replay(s, sids[0], 20000, 2000);
    store_close(s);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
