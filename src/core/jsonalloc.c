/* jansson's allocations through a small per-thread cache of glibc blocks. See jsonalloc.h.
 *
 * Every block is an ordinary malloc block: one the cache keeps is not freed yet, one it hands
 * out is one it kept. So free() of a block jansson allocated (json_dumps' text, which callers
 * free with free()) stays correct, and a block freed on another thread than the one that
 * allocated it is simply kept by that other thread.
 */
#include "core/jsonalloc.h"

#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define JSONALLOC_OFF 1 /* the sanitizers must see every malloc and free (use after free) */
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define JSONALLOC_OFF 1
#endif
#endif

#define GRAIN 16
#define CLASSES 16        /* chunks of 32..256 bytes: requests of up to 248 */
#define PER_CLASS 64      /* kept per class and thread: at most ~136 KiB per thread */

typedef struct block { struct block *next; } block_t;

typedef struct {
    block_t *head[CLASSES + 1]; /* [0] and [1] unused */
    unsigned count[CLASSES + 1];
} cache_t;

static __thread cache_t t_cache;
static __thread int t_registered; /* the flush at thread exit is set up */
static pthread_key_t g_key;
static int g_on;

static void flush(void *arg)
{
    cache_t *c = arg;
    for (int i = 2; i <= CLASSES; i++) {
        while (c->head[i]) {
            block_t *b = c->head[i];
            c->head[i] = b->next;
            free(b);
        }
        c->count[i] = 0;
    }
}

/* A class is glibc's chunk size over 16: a request of n bytes takes a chunk of (n + 8) rounded
 * up to 16, at least 32, and usable size is the chunk less 8. So a kept block has exactly the
 * size malloc would have given the request: the cache wastes no byte on a long-lived value. */
static size_t class_of_request(size_t n)
{
    size_t c = (n + 8 + GRAIN - 1) / GRAIN;
    return c < 2 ? 2 : c;
}

static void *json_block_alloc(size_t n)
{
    size_t cls = class_of_request(n);
    if (cls <= CLASSES) {
        cache_t *c = &t_cache;
        block_t *b = c->head[cls];
        if (b) {
            c->head[cls] = b->next;
            c->count[cls]--;
            return b;
        }
        return malloc(cls * GRAIN - 8);
    }
    return malloc(n);
}

static void json_block_free(void *p)
{
    if (!p)
        return;
    size_t cls = (malloc_usable_size(p) + 8) / GRAIN;
    if (cls >= 2 && cls <= CLASSES) {
        cache_t *c = &t_cache;
        if (c->count[cls] < PER_CLASS) {
            if (!t_registered) {
                t_registered = 1;
                pthread_setspecific(g_key, c); /* flush() runs when the thread ends */
            }
            block_t *b = p;
            b->next = c->head[cls];
            c->head[cls] = b;
            c->count[cls]++;
            return;
        }
    }
    free(p);
}

void jsonalloc_init(void)
{
#ifndef JSONALLOC_OFF
    const char *env = getenv("MCPD_JSON_CACHE"); /* "off": plain malloc, for A/B runs */
    if (g_on || (env && strcmp(env, "off") == 0) || pthread_key_create(&g_key, flush) != 0)
        return;
    g_on = 1;
    json_set_alloc_funcs(json_block_alloc, json_block_free);
#endif
}

bool jsonalloc_active(void)
{
    return g_on != 0;
}

unsigned jsonalloc_kept(void)
{
    unsigned n = 0;
    for (int i = 2; i <= CLASSES; i++)
        n += t_cache.count[i];
    return n;
}

void jsonalloc_trim(void)
{
    if (g_on)
        flush(&t_cache);
}
