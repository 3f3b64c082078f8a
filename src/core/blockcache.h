/* jansson's and libevent's allocations through a per-thread cache of small blocks.
 *
 * A request makes some 25-40 small jansson blocks (its parsed tree, the result) and about 30
 * libevent ones (the evhttp_request, each header's evkeyval and two strdups, evbuffers, the
 * reply's headers), and frees them all within the request. glibc's own per-thread cache keeps
 * 7 blocks of a size, so most of such a burst took glibc's slower paths (_int_malloc, _int_free,
 * malloc_consolidate). Here each thread keeps up to 16 KiB of freed blocks of each glibc chunk
 * size up to 320 bytes (512 of the smallest, 51 of the largest; at most ~303 KiB a thread), and
 * hands them out again on that thread.
 *
 * Every block is an ordinary malloc block of the size malloc would give: free() of a block
 * jansson or libevent allocated stays correct (json_dumps' text), a block may be freed on
 * another thread (that thread keeps it), and a long-lived value costs no byte more.
 *
 * Off under ASan and TSan, which must see every malloc and free. MCPD_BLOCK_CACHE in the
 * environment, for A/B runs: "off" (plain malloc), "json" (jansson only), unset or anything
 * else: both.
 */
#ifndef MCPD_CORE_BLOCKCACHE_H
#define MCPD_CORE_BLOCKCACHE_H

#include <stdbool.h>
#include <stddef.h>

/* Installs the cache as jansson's and libevent's allocator. Call first in main: before any
 * jansson value exists and before any other libevent call. */
void blockcache_init(void);
/* A block of n bytes from the calling thread's cache (malloc when the cache is off); aborts when
 * memory is out, as xmalloc. Free it with blockcache_free (or free(): it is malloc's own).
 * For what crosses threads many times a second (the messages between HTTP threads and
 * workers): the thread that frees one keeps it, for its own next allocation of that size,
 * where glibc would hand it back to the arena of the thread that made it, under that arena's
 * lock. That holds while the flows balance (each loop of the default mode both makes and frees
 * messages) and for bursts up to a size's bound; a one-way flow (worker threads of their own:
 * --workers N) fills the freeing thread's bound, and the rest goes to glibc as before. */
void *blockcache_alloc(size_t n);
/* The same, zeroed. */
void *blockcache_zalloc(size_t n);
void blockcache_free(void *p);
/* True once blockcache_init installed the cache (false under the sanitizers or when off). */
bool blockcache_active(void);
/* How many blocks the calling thread keeps now (tests). */
unsigned blockcache_kept(void);
/* How many kept blocks ending threads gave back to malloc so far (tests). */
unsigned long blockcache_freed_at_thread_end(void);
/* Gives the calling thread's kept blocks back to malloc. */
void blockcache_trim(void);
/* Gives memory back to the system after a burst: the calling thread's kept blocks, every
 * arena's free pages (malloc_trim), and the calling thread's arena's free top. */
void blockcache_give_back(void);

#endif
