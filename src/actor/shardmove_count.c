/* Threads: the shard-move thread (one step at a time, under sm_move_mu). */
/* Shard moves: what a shard holds, counted in this node's store (the manifest's "moved", the
 * stored gauges and shares). A count that a read error stopped is short, never a count to
 * compare with an export's or to add to the gauges: it is said as this node's read error, and
 * the step fails before its record (nothing added, nothing changed). */
#include "actor/shardmove_internal.h"

#include "actor/actor.h"
#include "core/shard.h"
#include "core/stats.h"
#include "store/sessionrec.h"

#include <errno.h>
#include <stdio.h>

int sm_read_gauges(const char *prefix, sm_gauges_t *g)
{
    *g = (sm_gauges_t){0};
    g->shares = actors_tally_stored(SM_STORE, prefix, SHARD_HEX, g->by);
    if (g->shares)
        return 0;
    *g = (sm_gauges_t){0};
    return -EIO;
}

void sm_apply_gauges(sm_gauges_t *g, int sign)
{
    STAT_ADD(sessions_stored, sign * (long long)g->by[STORED_SESSION]);
    STAT_ADD(input_records_stored, sign * (long long)g->by[STORED_RECORD]);
    STAT_ADD(handles_stored, sign * (long long)g->by[STORED_HANDLE]);
    STAT_ADD(tasks_stored, sign * (long long)g->by[STORED_TASK]);
    actors_tally_apply(g->shares, sign); /* the owners' shares */
    *g = (sm_gauges_t){0};
}

void sm_gauges_free(sm_gauges_t *g)
{
    actors_tally_free(g->shares);
    *g = (sm_gauges_t){0};
}

json_t *sm_counts(const char *prefix, int64_t *earliest)
{
    uint64_t by[STORED__KINDS] = {0}, alarms = 0;
    if (sessionrec_count_prefix(SM_STORE, prefix, SHARD_HEX, actor_meta_kind, by, STORED__KINDS) !=
            0 ||
        sessionrec_alarms_of_prefix(SM_STORE, prefix, SHARD_HEX, &alarms, earliest) != 0)
        return NULL;
    return json_pack("{s:I,s:I,s:I,s:I,s:I}", "sessions", (json_int_t)by[STORED_SESSION], "handles",
                     (json_int_t)by[STORED_HANDLE], "tasks", (json_int_t)by[STORED_TASK],
                     "input_records", (json_int_t)by[STORED_RECORD], "alarms", (json_int_t)alarms);
}

int sm_unreadable(char *why, size_t whylen, const char *doing)
{
    snprintf(why, whylen,
             "%s could not read its own store while %s (a read error, logged): this node's disk, "
             "not the other node's export; nothing of the shard changed here: retry the move once "
             "it reads",
             shard_node_name(), doing);
    return -EIO;
}
