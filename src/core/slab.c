/* Threads: one thread at a time per slab (see slab.h). */
/* Fixed-size blocks on 64 KiB pages of their own. See slab.h. */
#include "core/slab.h"

#include "core/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SLAB_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SLAB_SANITIZED 1
#endif
#endif
#ifndef SLAB_SANITIZED
#define SLAB_SANITIZED 0
#endif

#define PAGE ((size_t)64 << 10) /* aligned to its size: a block finds its page by masking */

typedef struct free_block {
    struct free_block *next;
} free_block_t;

typedef struct slab_page {
    struct slab_page *next, *prev; /* in the slab's partial list */
    free_block_t *free;            /* blocks given back */
    size_t fresh;                  /* offset of the first block never handed out */
    unsigned used;                 /* blocks handed out */
    char pad[12];
} slab_page_t;

_Static_assert(sizeof(slab_page_t) % 16 == 0, "blocks after the header stay 16-aligned");

static slab_page_t *page_of(const void *p)
{
    return (slab_page_t *)((uintptr_t)p & ~(uintptr_t)(PAGE - 1));
}

static slab_page_t *page_map(void)
{
    /* twice the size, then the unaligned ends go back: an aligned page */
    char *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m != MAP_FAILED); /* out of memory is not recoverable here (xcalloc) */
    uintptr_t start = ((uintptr_t)m + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    size_t head = start - (uintptr_t)m;
    if (head)
        munmap(m, head);
    munmap((char *)start + PAGE, PAGE - head);
    slab_page_t *pg = (slab_page_t *)start; /* fresh anonymous memory: a zero header */
    pg->fresh = sizeof *pg;
    return pg;
}

static void unlink_page(slab_t *s, slab_page_t *pg)
{
    if (pg->prev)
        pg->prev->next = pg->next;
    else
        s->partial = pg->next;
    if (pg->next)
        pg->next->prev = pg->prev;
    pg->next = pg->prev = NULL;
}

static void push_page(slab_t *s, slab_page_t *pg)
{
    pg->prev = NULL;
    pg->next = s->partial;
    if (s->partial)
        s->partial->prev = pg;
    s->partial = pg;
}

void slab_init(slab_t *s, size_t size)
{
    memset(s, 0, sizeof *s);
    s->size = (size + 15) & ~(size_t)15;
    REQUIRE(s->size <= PAGE / 4);
    s->per_page = (unsigned)((PAGE - sizeof(slab_page_t)) / s->size);
}

void *slab_alloc(slab_t *s)
{
    s->live++;
    if (SLAB_SANITIZED)
        return xcalloc(1, s->size);
    slab_page_t *pg = s->partial;
    if (!pg) {
        if (s->spare) {
            pg = s->spare;
            s->spare = NULL;
        } else {
            pg = page_map();
            s->pages++;
        }
        push_page(s, pg);
    }
    void *p;
    if (pg->free) {
        p = pg->free;
        pg->free = pg->free->next;
    } else {
        p = (char *)pg + pg->fresh;
        pg->fresh += s->size;
    }
    memset(p, 0, s->size); /* a spare page's blocks were used before */
    if (++pg->used == s->per_page)
        unlink_page(s, pg);
    return p;
}

void slab_free(slab_t *s, void *p)
{
    if (!p)
        return;
    REQUIRE(s->live > 0);
    s->live--;
    if (SLAB_SANITIZED) {
        free(p);
        return;
    }
    slab_page_t *pg = page_of(p);
    free_block_t *b = p;
    b->next = pg->free;
    pg->free = b;
    if (pg->used-- == s->per_page)
        push_page(s, pg); /* it was full: it has a free block again */
    if (pg->used)
        return;
    unlink_page(s, pg);
    if (!s->spare) { /* kept, resident: no map and unmap per session made and ended */
        pg->free = NULL;
        pg->fresh = sizeof *pg;
        s->spare = pg;
        return;
    }
    munmap(pg, PAGE);
    s->pages--;
}

bool slab_on_pages(void)
{
    return !SLAB_SANITIZED;
}

void slab_destroy(slab_t *s)
{
    if (s->spare) {
        munmap(s->spare, PAGE);
        s->pages--;
        s->spare = NULL;
    }
}
