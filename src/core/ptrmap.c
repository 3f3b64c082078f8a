/* Threads: the map's owner thread. */
/* Pointer-keyed hash map. Owner thread only. */
#include "core/ptrmap.h"

#include "core/util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static size_t slot_of(const ptrmap_t *m, const void *key)
{
    return (size_t)hash_bytes(&key, sizeof key) & (m->cap - 1);
}

void *ptrmap_get(const ptrmap_t *m, const void *key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i])
            return NULL;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

static void grow(ptrmap_t *m)
{
    ptrmap_t bigger = {0};
    bigger.cap = m->cap ? m->cap * 2 : 64;
    bigger.keys = xcalloc(bigger.cap, sizeof(void *));
    bigger.vals = xcalloc(bigger.cap, sizeof(void *));
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            ptrmap_put(&bigger, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    *m = bigger;
}

void ptrmap_put(ptrmap_t *m, void *key, void *val)
{
    if ((m->n + 1) * 4 > m->cap * 3)
        grow(m);
    for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->n++;
            return;
        }
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return;
        }
    }
}

void *ptrmap_del(ptrmap_t *m, const void *key)
{
    if (!m->cap)
        return NULL;
    size_t i = slot_of(m, key);
    while (m->keys[i] != key) {
        if (!m->keys[i])
            return NULL;
        i = (i + 1) & (m->cap - 1);
    }
    void *val = m->vals[i];
    /* backward-shift: move later members of the probe run into the hole */
    size_t hole = i;
    for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        size_t home = slot_of(m, m->keys[j]);
        /* j can move to the hole when its home is not in (hole, j] (cyclically) */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->keys[hole] = NULL;
    m->vals[hole] = NULL;
    m->n--;
    return val;
}

void ptrmap_free(ptrmap_t *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = m->vals = NULL;
    m->cap = m->n = 0;
}
