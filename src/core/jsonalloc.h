/* jansson's allocations through a per-thread cache of small blocks.
 *
 * A request's jansson tree is some 25-40 small blocks made and freed in one burst; glibc's
 * per-thread cache holds 7 blocks of a size, so most of the burst took glibc's slower paths
 * (_int_malloc, _int_free, malloc_consolidate). Here each thread keeps up to 64 freed blocks of
 * each 16-byte size class up to 256 bytes (at most ~136 KiB a thread), handed out again to
 * jansson on that thread. Off under ASan and TSan, which must see every malloc and free, and
 * with MCPD_JSON_CACHE=off in the environment (for A/B runs).
 */
#ifndef MCPD_CORE_JSONALLOC_H
#define MCPD_CORE_JSONALLOC_H

#include <stdbool.h>

/* Installs the cache as jansson's allocator. Call once, before any jansson value exists. */
void jsonalloc_init(void);
/* True once jsonalloc_init installed the cache (false under the sanitizers or when off). */
bool jsonalloc_active(void);
/* How many blocks the calling thread keeps now (tests). */
unsigned jsonalloc_kept(void);
/* Gives the calling thread's kept blocks back to malloc. */
void jsonalloc_trim(void);

#endif
