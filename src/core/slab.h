/* Threads: one thread at a time per slab (its owner: a worker). */
/* A pool of equal blocks for the long-lived objects of one owner (a worker's actors), on pages of
 * their own (64 KiB, mmap'd), apart from malloc's arenas.
 *
 * Why: with the actors on the HTTP threads (--workers 0), a session's actor came from the same
 * malloc arena as every request's short-lived blocks; the holes those left between live actors
 * cost about 80 bytes a live session (+12 %). On pages of their own, actors pack as they did on
 * a worker thread of their own. A page that empties goes back to the kernel (one empty page is
 * kept, resident, so a session made and ended in a loop does not map and unmap each time), and
 * slab_trim gives back the free spans of pages still in use, so hibernation gives the memory
 * back when a few sessions on each page stay live too.
 *
 * Under ASan and TSan every block is its own calloc, so the sanitizers see every use. */
#ifndef MCPD_CORE_SLAB_H
#define MCPD_CORE_SLAB_H

#include <stdbool.h>
#include <stddef.h>

struct slab_page;

typedef struct slab {
    size_t size;               /* a block's size: the object's, rounded up to 16 */
    unsigned per_page;         /* blocks on a page */
    struct slab_page *partial; /* pages with a free block, most recently freed into first */
    struct slab_page *spare;   /* an empty page kept for the next block, or NULL */
    size_t pages;              /* pages mapped, the spare included */
    size_t live;               /* blocks handed out and not freed */
} slab_t;

/* A slab of blocks of `size` bytes (at most a quarter of a page). */
void slab_init(slab_t *s, size_t size);
/* A zeroed block; aborts when the kernel has no memory to map. */
void *slab_alloc(slab_t *s);
/* Gives back a block of this slab (NULL: nothing). */
void slab_free(slab_t *s, void *p);
/* Gives the kernel back every 4 KiB span of a partly used page that no block in use overlaps
 * (MADV_DONTNEED: it reads as zero pages when used again), in the pages that had a block freed
 * since they were last looked at; returns how many spans. Blocks in use gather at each page's
 * start (the lowest free block is handed out first). The worker calls it where it trims malloc:
 * after a burst, and after many hibernations. */
size_t slab_trim(slab_t *s);
/* False under ASan and TSan: blocks are then callocs and no page is mapped. */
bool slab_on_pages(void);
/* Unmaps the spare page. Pages with blocks still handed out stay (s->live says how many). */
void slab_destroy(slab_t *s);

#endif
