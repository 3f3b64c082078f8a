/* Threads: the owner thread of a jshare_t (a worker thread); the references it hands out are
 * dropped on any thread. */
/* Sharing of equal JSON values. See jshare.h. */
#include "core/jshare.h"

/* Counts v's values down from budget; below 0 means "more than budget". */
static long count_nodes(json_t *v, long budget)
{
    budget--;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            if (budget < 0)
                break;
            budget = count_nodes(x, budget);
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (budget < 0)
                break;
            budget = count_nodes(x, budget);
        }
    }
    return budget;
}

json_t *jshare_get(jshare_t *s, json_t *v)
{
    if (!v)
        return NULL;
    /* a large value is kept as it is: comparing it with every slot would cost each session
     * start that much (a client could send 64 KiB values that differ in their last key) */
    if (count_nodes(v, JSHARE_MAX_NODES) < 0)
        return json_incref(v);
    for (unsigned i = 0; i < JSHARE_SLOTS; i++)
        if (s->v[i] == v || (s->v[i] && json_equal(s->v[i], v)))
            return json_incref(s->v[i]);
    unsigned slot = s->next++ % JSHARE_SLOTS;
    json_decref(s->v[slot]);
    s->v[slot] = json_incref(v);
    return json_incref(v);
}

void jshare_clear(jshare_t *s)
{
    for (unsigned i = 0; i < JSHARE_SLOTS; i++) {
        json_decref(s->v[i]);
        s->v[i] = NULL;
    }
    s->next = 0;
}
