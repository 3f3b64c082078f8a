/* Threads: main and T threads taking and dropping references (micro-benchmark of
 * core/principal). */
/* Micro-benchmark of what every request does to its connection's principal: its message takes a
 * reference and drops it (principal_ref, principal_unref), done N times by each of T threads on
 * one principal (every client of the run behind one address, as in mcpbench).
 *
 * "locked": the way before references were atomic: one process-wide mutex around each change,
 * as the counts still are. "atomic": core/principal.c as it is. Prints ns per request and the
 * ratio, for 1 thread and for T. Figures only: nothing here asserts on time.
 *
 * usage: micro-principal [N [T]]   (default 5,000,000 and 2)
 */
#include "core/principal.h"

#include "threads.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t old_mu = PTHREAD_MUTEX_INITIALIZER;
static long old_refs; /* the old entry's count, under old_mu */
static principal_t *shared;
static long n_ops;

static void *refs_locked(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&micro_start);
    for (long i = 0; i < n_ops; i++) {
        pthread_mutex_lock(&old_mu);
        old_refs++;
        pthread_mutex_unlock(&old_mu);
        pthread_mutex_lock(&old_mu);
        old_refs--;
        pthread_mutex_unlock(&old_mu);
    }
    return NULL;
}

static void *refs_atomic(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&micro_start);
    for (long i = 0; i < n_ops; i++)
        principal_unref(principal_ref(shared));
    return NULL;
}

int main(int argc, char **argv)
{
    n_ops = argc > 1 ? atol(argv[1]) : 5000000;
    int nthreads = argc > 2 ? atoi(argv[2]) : 2;
    if (n_ops <= 0 || nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "usage: micro-principal [N [T]]\n");
        return 2;
    }
    shared = principal_get("a:127.0.0.1"); /* the connection's reference */
    old_refs = 1;
    int ts[2] = {1, nthreads};
    for (int k = 0; k < (nthreads > 1 ? 2 : 1); k++) {
        double a = micro_run(refs_locked, ts[k], n_ops), b = micro_run(refs_atomic, ts[k], n_ops);
        printf("%d thread(s), %ld requests each: locked %.1f ns/request, atomic %.1f ns/request "
               "(%.2fx)\n",
               ts[k], n_ops, a, b, a / b);
    }
    if (old_refs != 1 || principals_live() != 1)
        printf("counts drifted: locked %ld, live entries %lld\n", old_refs, principals_live());
    principal_unref(shared);
    if (principals_live() != 0)
        printf("the entry was not freed at its last reference\n");
    return 0;
}
