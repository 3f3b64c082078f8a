/* Threads: main thread at start (recover_state); the shard-move thread (a shard that leaves or
 * comes). */
/* What the stored records hold of their owners' shares (--max-sessions, --max-handles,
 * --max-tasks, --max-input-records) and of the gauges, counted from the store: at start for
 * every served shard, and for one shard when it leaves or comes. A walk that a read error
 * stopped is short: the start is refused then (recover_state), and a move reads its shard's
 * tally whole before it adds anything (actors_tally_stored), so that a read error fails the
 * move instead of leaving the shares short until a restart. */
#include "actor/actor.h"

#include "core/jsonparse.h"
#include "core/principal.h"
#include "core/shard.h"
#include "core/util.h"
#include "store/sessionrec.h"
#include "wire/jsonrpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The owner of a session's metadata without a parse: the value of its last "p" member, which
 * actor_write_meta writes after everything a client sent (clientInfo, capabilities,
 * subscriptions). false when there is none or it holds an escape (then the caller parses). */
static bool fast_owner(const char *meta, size_t len, char *out, size_t n)
{
    const char *hit = NULL;
    for (const char *p = meta; (p = memmem(p, len - (size_t)(p - meta), "\"p\":\"", 5)); p += 5)
        hit = p + 5;
    if (!hit)
        return false;
    const char *end = memchr(hit, '"', len - (size_t)(hit - meta));
    if (!end || memchr(hit, '\\', (size_t)(end - hit)) || (size_t)(end - hit) >= n)
        return false;
    /* actor_write_meta writes the owner last: the record ends with it. A "p" inside what a
     * client sent (a record written before owners were kept has no top-level one) is followed
     * by more than the record's closing brace */
    if (end + 2 != meta + len || end[1] != '}')
        return false;
    memcpy(out, hit, (size_t)(end - hit));
    out[end - hit] = '\0';
    return true;
}

int actor_meta_unit(const char *meta, size_t len, char *out, size_t n, bool *holds)
{
    *holds = true;
    if (!memmem(meta, len, "\"k\":\"", 5) && !memmem(meta, len, "\"hs\":", 5) &&
        fast_owner(meta, len, out, n))
        return STORED_SESSION;
    json_t *m = json_parse_buf(meta, len, NULL, 0, NULL);
    int kind = actor_kind_of(m);
    actor_owner_of(m, out, n);
    *holds = !json_is_false(json_object_get(m, "hs"));
    json_decref(m);
    return kind;
}

/* One record's unit of a share, read and not yet added (a shard's tally). */
typedef struct {
    char owner[PRINCIPAL_NAME_MAX];
    pres_t r;
    bool holds; /* false: the global count alone (an older server's cancelled task) */
} unit_t;

struct actors_tally {
    unit_t *u;
    size_t n, cap;
};

struct account {
    int sign;
    uint64_t *by_kind;
    bool served_only;      /* the startup count: shards not served here count for nothing */
    actors_tally_t *tally; /* a shard's: kept here, added by actors_tally_apply */
};

static void add_unit(const char *owner, pres_t r, bool holds, long long n)
{
    if (holds)
        principal_add(owner, r, n);
    else
        principal_add_global(r, n); /* an older server's cancelled task */
}

static void account_one(void *arg, const char *sid, const char *meta, size_t len)
{
    struct account *ac = arg;
    if (ac->served_only && !shard_owns_id(sid))
        return; /* a refused shard's copy, or a crashed adopt's leftover (deleted before any
                   adopt): counted when it is served */
    char owner[PRINCIPAL_NAME_MAX];
    bool holds;
    int kind = actor_meta_unit(meta, len, owner, sizeof owner, &holds);
    if (ac->by_kind)
        ac->by_kind[kind]++;
    int r = kind == STORED_SESSION  ? PR_SESSIONS
            : kind == STORED_HANDLE ? PR_HANDLES
            : kind == STORED_TASK   ? PR_TASKS
            : kind == STORED_RECORD ? PR_RECORDS
                                    : -1;
    if (r < 0)
        return;
    actors_tally_t *t = ac->tally;
    if (!t) {
        add_unit(owner, (pres_t)r, holds, ac->sign);
        return;
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->u = xrealloc(t->u, t->cap * sizeof *t->u);
    }
    unit_t *u = &t->u[t->n++];
    snprintf(u->owner, sizeof u->owner, "%s", owner);
    u->r = (pres_t)r;
    u->holds = holds;
}

int actors_account_stored(store_t *s, const char *prefix, size_t plen, int sign,
                          uint64_t by_kind[STORED__KINDS])
{
    struct account ac = {sign, by_kind, prefix == NULL, NULL};
    return sessionrec_scan_meta(s, prefix, plen, account_one, &ac);
}

actors_tally_t *actors_tally_stored(store_t *s, const char *prefix, size_t plen,
                                    uint64_t by_kind[STORED__KINDS])
{
    struct account ac = {0, by_kind, false, xcalloc(1, sizeof(actors_tally_t))};
    if (sessionrec_scan_meta(s, prefix, plen, account_one, &ac) == 0)
        return ac.tally;
    actors_tally_free(ac.tally);
    return NULL;
}

void actors_tally_apply(actors_tally_t *t, int sign)
{
    for (size_t i = 0; t && i < t->n; i++)
        add_unit(t->u[i].owner, t->u[i].r, t->u[i].holds, sign);
    actors_tally_free(t);
}

void actors_tally_free(actors_tally_t *t)
{
    if (!t)
        return;
    free(t->u);
    free(t);
}
