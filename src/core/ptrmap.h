/* A pointer-keyed hash map (open addressing, linear probing, backward-shift deletion).
 * Single-threaded: the owner's thread only. Keys are non-NULL pointers; values are not owned. */
#ifndef MCPD_CORE_PTRMAP_H
#define MCPD_CORE_PTRMAP_H

#include <stddef.h>

typedef struct ptrmap {
    void **keys;
    void **vals;
    size_t cap; /* a power of two, or 0 */
    size_t n;
} ptrmap_t;

void *ptrmap_get(const ptrmap_t *m, const void *key);
void ptrmap_put(ptrmap_t *m, void *key, void *val);
/* Removes key; returns its value or NULL. */
void *ptrmap_del(ptrmap_t *m, const void *key);
void ptrmap_free(ptrmap_t *m);

#endif
