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
#define SPAN ((size_t)4 << 10)  /* the kernel's page: what slab_trim gives back */
#define WORDS 4                 /* the bitmap: up to 256 blocks a page */

/* Which blocks are handed out is a bitmap in the page's header, not a list threaded through
 * the free blocks: a span of free blocks can then go back to the kernel (slab_trim) and come
 * back as zero pages without breaking anything. */
typedef struct slab_page {
    struct slab_page *next, *prev; /* in the slab's partial list */
    uint64_t live[WORDS];          /* bit i: block i is handed out */
    unsigned used;                 /* blocks handed out */
    bool trimmed;                  /* slab_trim looked at it, and no block was freed since */
    char pad[11];
} slab_page_t;

_Static_assert(sizeof(slab_page_t) % 16 == 0, "blocks after the header stay 16-aligned");

static slab_page_t *page_of(const void *p)
{
    return (slab_page_t *)((uintptr_t)p & ~(uintptr_t)(PAGE - 1));
}

static char *block_at(slab_page_t *pg, const slab_t *s, unsigned i)
{
    return (char *)pg + sizeof *pg + (size_t)i * s->size;
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
    return (slab_page_t *)start; /* fresh anonymous memory: an empty header */
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
    REQUIRE(s->size >= 64 && s->size <= PAGE / 4);
    size_t n = (PAGE - sizeof(slab_page_t)) / s->size;
    s->per_page = (unsigned)(n < WORDS * 64 ? n : WORDS * 64);
}

/* The lowest free block: blocks in use gather at the page's start, so its end's spans empty. */
static unsigned first_free(const slab_t *s, const slab_page_t *pg)
{
    for (unsigned w = 0; w < WORDS; w++)
        if (~pg->live[w]) {
            unsigned i = w * 64 + (unsigned)__builtin_ctzll(~pg->live[w]);
            if (i < s->per_page)
                return i;
        }
    REQUIRE(!"a partial page has a free block");
    return 0;
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
    unsigned i = first_free(s, pg);
    pg->live[i / 64] |= (uint64_t)1 << (i % 64);
    void *p = block_at(pg, s, i);
    memset(p, 0, s->size); /* a block used before, or on a span given back (zero already) */
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
    size_t off = (size_t)((char *)p - block_at(pg, s, 0));
    unsigned i = (unsigned)(off / s->size);
    uint64_t bit = (uint64_t)1 << (i % 64);
    REQUIRE(off % s->size == 0 && i < s->per_page && (pg->live[i / 64] & bit)); /* a double free */
    pg->live[i / 64] &= ~bit;
    pg->trimmed = false; /* a span of it may be free now */
    if (pg->used-- == s->per_page)
        push_page(s, pg); /* it was full: it has a free block again */
    if (pg->used)
        return;
    unlink_page(s, pg);
    if (!s->spare) { /* kept, resident: no map and unmap per session made and ended */
        s->spare = pg;
        return;
    }
    munmap(pg, PAGE);
    s->pages--;
}

/* Whether any block in use overlaps [from, to) of its page. */
static bool span_live(const slab_t *s, const slab_page_t *pg, size_t from, size_t to)
{
    size_t base = sizeof *pg;
    size_t first = from > base ? (from - base) / s->size : 0;
    for (size_t i = first; i < s->per_page && base + i * s->size < to; i++)
        if (pg->live[i / 64] & ((uint64_t)1 << (i % 64)))
            return true;
    return false;
}

size_t slab_trim(slab_t *s)
{
    size_t spans = 0;
    if (SLAB_SANITIZED)
        return 0;
    for (slab_page_t *pg = s->partial; pg; pg = pg->next) {
        if (pg->trimmed)
            continue;
        pg->trimmed = true;
        /* the first span holds the header */
        for (size_t from = SPAN; from < PAGE; from += SPAN) {
            if (span_live(s, pg, from, from + SPAN))
                continue;
            madvise((char *)pg + from, SPAN, MADV_DONTNEED);
            spans++;
        }
    }
    return spans;
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
