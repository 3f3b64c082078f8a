/* Threads: main and T committing threads (micro-benchmark of the store's write path). */
/* Micro-benchmark of concurrent commits: what the store's one write path costs when T loops
 * commit at once, against one store per thread (issue 25's "one RocksDB per worker", measured
 * before it is built). Each of T threads makes N operations of one of two shapes and commits
 * every K of them, the way a loop commits once a turn (a loaded loop's turn holds several
 * requests: at 1 loop and 32 connections a turn commits about 6.5 handshakes):
 *
 * - session: a handshake's records: the new session's metadata (about 280 bytes, under a random
 *   id) and its idle alarm are put, and the session made 64 operations earlier is deleted (its
 *   metadata and alarm, as DELETE does): four memtable entries an operation.
 * - event: a tools/call answered on an SSE stream: the event (about 200 bytes), the stream's
 *   record and its expiry index entry are put, for one of 16 sessions of the thread's own.
 *
 * For each shape: 1 thread into one store, T threads into one store (RocksDB groups concurrent
 * writers: one leader writes the group's WAL record, each writer inserts its own entries into
 * the memtables), T threads each into a store of its own (its own directory, WAL and memtables,
 * each with the full memtable budget), and 1 thread again; the T-thread runs are compared with
 * the mean of the two 1-thread runs. Prints operations/s and the process's CPU per operation
 * (getrusage: RocksDB's flush threads included, as far as their flushes end within the run; N
 * large enough that every run flushes keeps that even: the default does, at 16 MiB memtables).
 * MCPD_STORE_PIPELINED_WRITE=1 and MCPD_STORE_WRITE_YIELD=0 in the environment apply, as in the
 * server. Figures only: nothing here asserts on time.
 *
 * usage: micro-commit [N [T [K [sync]]]]   (default 100,000 operations a thread, T = 2, K = 1;
 * "sync": each commit fsyncs its WAL, as --sync)
 */
#define _XOPEN_SOURCE 700
#include "store/keys.h"
#include "store/store.h"

#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define RING 64  /* sessions a thread keeps before it deletes the oldest */
#define NSESS 16 /* sessions a thread's events go to */

typedef enum { SHAPE_SESSION, SHAPE_EVENT } shape_t;

typedef struct runner {
    pthread_t th;
    store_t *store;
    shape_t shape;
    uint64_t rng;
    int failed;
} runner_t;

static pthread_barrier_t start;
static long n_ops;
static long per_commit; /* operations a commit (a loop's turn) */

static const char meta[] =
    "{\"v\":3,\"proto\":\"2025-06-18\",\"created\":1765000000000,\"last\":1765000000000,"
    "\"client\":{\"name\":\"mcpbench\",\"version\":\"1.0.0\"},\"caps\":{\"roots\":{}},"
    "\"principal\":null,\"log_level\":\"info\",\"next_stream\":1,\"idle_ms\":1800000,"
    "\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}";
static const char event[] =
    "{\"jsonrpc\":\"2.0\",\"id\":12345,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
    "\"hello from the echo tool, padded to a typical answer's size xxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxx\"}],\"isError\":false}}";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void random_sid(char *sid, uint64_t *rng)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < SESSION_ID_LEN; i += 16) {
        uint64_t r = next_rand(rng);
        for (int j = 0; j < 16 && i + j < SESSION_ID_LEN; j++, r >>= 4)
            sid[i + j] = hex[r & 15];
    }
    sid[SESSION_ID_LEN] = '\0';
}

static void commit(runner_t *r, store_batch_t *b)
{
    if (store_commit(r->store, b) != 0) /* it empties the batch either way */
        r->failed++;
}

static void run_sessions(runner_t *r, store_batch_t *b)
{
    char ring[RING][SESSION_ID_LEN + 1];
    int64_t due[RING];
    const int64_t base_ms = 1765000000000;
    for (long i = 0; i < n_ops; i++) {
        int slot = (int)(i % RING);
        unsigned char ak[KEY_ALARM_LEN];
        if (i >= RING) { /* the session made RING operations ago ends (DELETE) */
            store_batch_delete(b, CF_SESSIONS, ring[slot], SESSION_ID_LEN);
            key_alarm(ak, due[slot], ring[slot]);
            store_batch_delete(b, CF_ALARMS, ak, sizeof ak);
        }
        random_sid(ring[slot], &r->rng);
        due[slot] = base_ms + i; /* alarms come due in the order sessions were made */
        store_batch_put(b, CF_SESSIONS, ring[slot], SESSION_ID_LEN, meta, sizeof meta - 1);
        key_alarm(ak, due[slot], ring[slot]);
        store_batch_put(b, CF_ALARMS, ak, sizeof ak, "", 0);
        if ((i + 1) % per_commit == 0 || i + 1 == n_ops)
            commit(r, b);
    }
}

static void run_events(runner_t *r, store_batch_t *b)
{
    char sids[NSESS][SESSION_ID_LEN + 1];
    for (int s = 0; s < NSESS; s++)
        random_sid(sids[s], &r->rng);
    for (long i = 0; i < n_ops; i++) {
        const char *sid = sids[i % NSESS];
        uint64_t stream = 1 + (uint64_t)(i / NSESS); /* a new POST stream per call */
        unsigned char k[KEY_EVENT_LEN > KEY_EXPIRY_LEN ? KEY_EVENT_LEN : KEY_EXPIRY_LEN];
        key_event(k, sid, stream, 1);
        store_batch_put(b, CF_EVENTS, k, KEY_EVENT_LEN, event, sizeof event - 1);
        key_stream(k, sid, stream);
        static const char rec[] = "{\"f\":1,\"d\":1,\"s\":1,\"w\":1765000000000,\"b\":214}";
        store_batch_put(b, CF_STREAMS, k, KEY_STREAM_LEN, rec, sizeof rec - 1);
        key_expiry(k, sid, 1765000000000 + (int64_t)i, stream);
        store_batch_put(b, CF_EXPIRY, k, KEY_EXPIRY_LEN, "", 0);
        if ((i + 1) % per_commit == 0 || i + 1 == n_ops)
            commit(r, b);
    }
}

static void *runner_main(void *arg)
{
    runner_t *r = arg;
    store_batch_t *b = store_batch_new(r->store);
    pthread_barrier_wait(&start);
    if (r->shape == SHAPE_SESSION)
        run_sessions(r, b);
    else
        run_events(r, b);
    store_batch_free(b);
    return NULL;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

typedef struct result {
    double ops_per_s, cpu_us_per_op;
} result_t;

static void close_all(store_t **stores, int n, const char *dir)
{
    for (int i = 0; i < n; i++)
        if (stores[i])
            store_close(stores[i]);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* One run: T threads, one store or one each, in a fresh directory removed after. */
static int run(int nthreads, bool each, shape_t shape, bool sync, result_t *out)
{
    char dir[] = "/tmp/mcpd-micro-commit.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    store_t *stores[MAX_THREADS] = {0};
    int nstores = each ? nthreads : 1;
    for (int i = 0; i < nstores; i++) {
        char path[64], err[256];
        snprintf(path, sizeof path, "%s/%d", dir, i);
        stores[i] = store_open(path, sync, 0, err, sizeof err);
        if (!stores[i]) {
            fprintf(stderr, "micro-commit: %s\n", err);
            close_all(stores, nstores, dir);
            return -1;
        }
    }
    runner_t rs[MAX_THREADS];
    pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++) {
        rs[i] = (runner_t){.store = stores[each ? i : 0],
                           .shape = shape,
                           .rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1)};
        if (pthread_create(&rs[i].th, NULL, runner_main, &rs[i]) != 0) {
            perror("micro-commit: pthread_create");
            fflush(stdout);
            _exit(1); /* the started ones wait at the barrier: no exit handlers under them */
        }
    }
    double c0 = cpu_s(), t0 = now_s();
    pthread_barrier_wait(&start);
    int failed = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(rs[i].th, NULL);
        failed += rs[i].failed;
    }
    double dt = now_s() - t0, dc = cpu_s() - c0;
    pthread_barrier_destroy(&start);
    close_all(stores, nstores, dir);
    if (failed) {
        fprintf(stderr, "micro-commit: %d commits failed\n", failed);
        return -1;
    }
    double ops = (double)n_ops * nthreads;
    out->ops_per_s = ops / dt;
    out->cpu_us_per_op = dc * 1e6 / ops;
    return 0;
}

static void print_many(const char *shape, int t, const char *mode, const result_t *r,
                       const result_t *one)
{
    printf("commit %-8s %2d threads, %-13s %9.0f ops/s %7.2f us CPU/op  (x%.2f the rate, x%.2f "
           "the CPU)\n",
           shape, t, mode, r->ops_per_s, r->cpu_us_per_op, r->ops_per_s / one->ops_per_s,
           r->cpu_us_per_op / one->cpu_us_per_op);
}

int main(int argc, char **argv)
{
    n_ops = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    int t = argc > 2 ? atoi(argv[2]) : 2;
    per_commit = argc > 3 ? strtol(argv[3], NULL, 10) : 1;
    bool sync = argc > 4 && strcmp(argv[4], "sync") == 0;
    if (n_ops < RING + 1 || t < 2 || t > MAX_THREADS || per_commit < 1 || per_commit > n_ops) {
        fprintf(stderr, "usage: micro-commit [N >= %d [T (2..%d) [K (1..N) [sync]]]]\n", RING + 1,
                MAX_THREADS);
        return 2;
    }
    const char *pipelined = getenv("MCPD_STORE_PIPELINED_WRITE");
    const char *yield = getenv("MCPD_STORE_WRITE_YIELD");
    printf("micro-commit: %ld operations a thread, %ld a commit, WAL %s, pipelined write %s, "
           "adaptive yield %s\n",
           n_ops, per_commit, sync ? "fsync'd each commit" : "not fsync'd",
           pipelined && strcmp(pipelined, "1") == 0 ? "on" : "off",
           yield && strcmp(yield, "0") == 0 ? "off" : "on");
    static const char *shapes[] = {"session", "event"};
    for (int sh = 0; sh < 2; sh++) {
        result_t before, shared, each, after;
        if (run(1, false, (shape_t)sh, sync, &before) != 0 ||
            run(t, false, (shape_t)sh, sync, &shared) != 0 ||
            run(t, true, (shape_t)sh, sync, &each) != 0 ||
            run(1, false, (shape_t)sh, sync, &after) != 0)
            return 1;
        result_t one = {(before.ops_per_s + after.ops_per_s) / 2,
                        (before.cpu_us_per_op + after.cpu_us_per_op) / 2};
        printf("commit %-8s  1 thread  (before, after)  %9.0f ops/s %7.2f us CPU/op  (%.0f, %.0f "
               "ops/s; %.2f, %.2f us)\n",
               shapes[sh], one.ops_per_s, one.cpu_us_per_op, before.ops_per_s, after.ops_per_s,
               before.cpu_us_per_op, after.cpu_us_per_op);
        print_many(shapes[sh], t, "one store", &shared, &one);
        print_many(shapes[sh], t, "a store each", &each, &one);
        fflush(stdout);
    }
    return 0;
}
