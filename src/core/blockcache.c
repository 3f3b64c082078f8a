/* Threads: every thread, each on its own cache (a block freed on another thread stays there). */
/* A per-thread cache of small malloc blocks for jansson and libevent. See blockcache.h. */
#include "core/blockcache.h"

#include "core/util.h"

#include <event2/event.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* the sanitizers must see every malloc and free (use after free, races on reuse) */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define GRAIN 16
#define CLASSES 20 /* chunks of 32..320 bytes: requests of up to 312 (a wmsg_t is 288) */
/* Kept per class and thread: 16 KiB of blocks (512 of the smallest, 51 of the largest), at most
 * 303 KiB a thread. A loop turn that reads 30 requests holds some 600 small blocks (each header's
 * name and value, the parsed body) until their answers go, and a request answered on another
 * thread holds them across turns: what does not fit here goes through glibc's slow paths. */
#define CLASS_BYTES (16 * 1024)
/* Blocks kept at most, by class: CLASS_BYTES / (class * GRAIN), a table so that a free makes no
 * division (the hot path of every jansson and libevent free). */
#define KEEP(c) ((unsigned)(CLASS_BYTES / ((c)*GRAIN)))
static const unsigned KEEP_MAX[CLASSES + 1] = {
    0,        0,        KEEP(2),  KEEP(3),  KEEP(4),  KEEP(5),  KEEP(6),
    KEEP(7),  KEEP(8),  KEEP(9),  KEEP(10), KEEP(11), KEEP(12), KEEP(13),
    KEEP(14), KEEP(15), KEEP(16), KEEP(17), KEEP(18), KEEP(19), KEEP(20),
};
_Static_assert(CLASSES == 20, "KEEP_MAX lists one entry a class");

typedef struct block {
    struct block *next;
} block_t;

typedef struct {
    block_t *head[CLASSES + 1]; /* [0] and [1] unused */
    unsigned count[CLASSES + 1];
} cache_t;

enum { T_NEW, T_REGISTERED, T_ENDING };

static __thread cache_t t_cache;
static __thread int t_state; /* T_REGISTERED: flush() is set to run at the thread's end */
static pthread_key_t g_key;
static int g_on;

static atomic_ulong g_freed_at_thread_end;

static unsigned long flush(cache_t *c)
{
    unsigned long n = 0;
    for (int i = 2; i <= CLASSES; i++) {
        while (c->head[i]) {
            block_t *b = c->head[i];
            c->head[i] = b->next;
            free(b);
            n++;
        }
        c->count[i] = 0;
    }
    return n;
}

static void on_thread_end(void *arg)
{
    t_state = T_ENDING; /* frees by later destructors go straight to malloc */
    atomic_fetch_add(&g_freed_at_thread_end, flush(arg));
}

/* A class is glibc's chunk size over 16: a request of n bytes takes a chunk of (n + 8) rounded
 * up to 16, at least 32, and usable size is the chunk less 8. So a kept block has exactly the
 * size malloc would have given the request. */
static size_t class_of_request(size_t n)
{
    size_t c = (n + 8 + GRAIN - 1) / GRAIN;
    return c < 2 ? 2 : c;
}

static void *block_alloc(size_t n)
{
    if (n > CLASSES * GRAIN - 8)
        return malloc(n); /* also keeps class_of_request from wrapping */
    size_t cls = class_of_request(n);
    cache_t *c = &t_cache;
    block_t *b = c->head[cls];
    if (b) {
        c->head[cls] = b->next;
        c->count[cls]--;
        return b;
    }
    return malloc(cls * GRAIN - 8);
}

static void block_free(void *p)
{
    if (!p)
        return;
    size_t cls = (malloc_usable_size(p) + 8) / GRAIN;
    cache_t *c = &t_cache;
    if (cls >= 2 && cls <= CLASSES && c->count[cls] < KEEP_MAX[cls] && t_state != T_ENDING) {
        if (t_state == T_NEW) {
            t_state = T_REGISTERED;
            pthread_setspecific(g_key, c);
        }
        block_t *b = p;
        b->next = c->head[cls];
        c->head[cls] = b;
        c->count[cls]++;
        return;
    }
    free(p);
}

void *blockcache_alloc(size_t n)
{
    void *p = g_on ? block_alloc(n) : malloc(n);
    REQUIRE(p != NULL);
    return p;
}

void *blockcache_zalloc(size_t n)
{
    void *p = blockcache_alloc(n);
    explicit_bzero(p, n); /* not memset: malloc and a clear are not folded into calloc (xcalloc) */
    return p;
}

void blockcache_free(void *p)
{
    if (g_on)
        block_free(p);
    else
        free(p);
}

static void *block_realloc(void *p, size_t n)
{
    return p ? realloc(p, n) : block_alloc(n); /* every block is malloc's own */
}

void blockcache_init(void)
{
    const char *env = getenv("MCPD_BLOCK_CACHE");
    if (SANITIZED || g_on || (env && strcmp(env, "off") == 0) ||
        pthread_key_create(&g_key, on_thread_end) != 0)
        return;
    g_on = 1;
    json_set_alloc_funcs(block_alloc, block_free);
    if (!env || strcmp(env, "json") != 0)
        event_set_mem_functions(block_alloc, block_realloc, block_free);
}

bool blockcache_active(void)
{
    return g_on != 0;
}

unsigned blockcache_kept(void)
{
    unsigned n = 0;
    for (int i = 2; i <= CLASSES; i++)
        n += t_cache.count[i];
    return n;
}

unsigned long blockcache_freed_at_thread_end(void)
{
    return atomic_load(&g_freed_at_thread_end);
}

void blockcache_trim(void)
{
    if (g_on)
        flush(&t_cache);
}

/* malloc_trim hands back the free pages inside every arena's bins, but the top chunk of a
 * thread's arena (a non-main arena) only shrinks when a free of 64 KiB or more ends in that
 * arena (glibc's heap_trim, in _int_free): malloc_trim merges the freed small blocks into that
 * top chunk and leaves it resident (~10 MB after a big parse, measured). One free of a block of
 * that size, under the mmap threshold main() sets, shrinks it. Only the calling thread's arena:
 * callers trim on the thread that did the allocating. */
#define TOP_NUDGE (128 * 1024)

void blockcache_give_back(void)
{
    blockcache_trim();
    malloc_trim(0);
    void *volatile nudge = malloc(TOP_NUDGE); /* volatile: the pair is not optimised away */
    free(nudge);
}
