/* Threads: any thread (pure functions). */
/* A value's depth and its release without recursion. See jsondeep.h. */
#include "core/jsondeep.h"

#include "core/util.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const json_t *v;
    void *iter; /* an object's next member (NULL: none left) */
    size_t i;   /* an array's next index */
} open_level_t;

/* The container's next member, or NULL when none is left (the iterator moves on). */
static const json_t *next_member(open_level_t *o)
{
    if (json_is_array(o->v))
        return o->i < json_array_size(o->v) ? json_array_get(o->v, o->i++) : NULL;
    if (!o->iter)
        return NULL;
    const json_t *m = json_object_iter_value(o->iter);
    o->iter = json_object_iter_next((json_t *)o->v, o->iter);
    return m;
}

bool json_depth_within(const json_t *v, int max)
{
    if (!json_is_object(v) && !json_is_array(v))
        return true;
    if (max < 1)
        return false;
    /* on the C stack for the usual result (a call's: no allocation), the heap past 64 levels */
    open_level_t local[64], *st = local;
    size_t cap = sizeof local / sizeof local[0], n = 0;
    st[n++] = (open_level_t){v, json_is_object(v) ? json_object_iter((json_t *)v) : NULL, 0};
    bool within = true;
    while (n) {
        const json_t *m = next_member(&st[n - 1]);
        if (!m) {
            n--;
            continue;
        }
        if (!json_is_object(m) && !json_is_array(m))
            continue;
        if (n == (size_t)max) { /* m opens level max + 1 */
            within = false;
            break;
        }
        if (n == cap) {
            open_level_t *grown = xmalloc(cap * 2 * sizeof *st);
            memcpy(grown, st, cap * sizeof *st);
            if (st != local)
                free(st);
            st = grown;
            cap *= 2;
        }
        st[n++] = (open_level_t){m, json_is_object(m) ? json_object_iter((json_t *)m) : NULL, 0};
    }
    if (st != local)
        free(st);
    return within;
}

void json_decref_deep(json_t *v)
{
    size_t cap = 64, n = 0;
    json_t **st = xmalloc(cap * sizeof *st);
    while (v) {
        /* a shared container (or a scalar) is only counted down here: no recursion */
        if ((json_is_object(v) || json_is_array(v)) && v->refcount == 1) {
            /* its members, each held once more, go on the stack; the clear then only counts
             * them down, and v is freed empty */
            size_t members = json_is_array(v) ? json_array_size(v) : json_object_size(v);
            while (n + members > cap)
                st = xrealloc(st, (cap *= 2) * sizeof *st);
            if (json_is_array(v)) {
                for (size_t i = 0; i < members; i++)
                    st[n++] = json_incref(json_array_get(v, i));
                json_array_clear(v);
            } else {
                for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it))
                    st[n++] = json_incref(json_object_iter_value(it));
                json_object_clear(v);
            }
        }
        json_decref(v);
        v = n ? st[--n] : NULL;
    }
    free(st);
}

bool json_drop_if_deeper(json_t *v, int max)
{
    if (json_depth_within(v, max))
        return false;
    json_decref_deep(v);
    return true;
}
