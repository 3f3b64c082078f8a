/* Sharing of equal JSON values. See jshare.h. */
#include "core/jshare.h"

json_t *jshare_get(jshare_t *s, json_t *v)
{
    if (!v)
        return NULL;
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
