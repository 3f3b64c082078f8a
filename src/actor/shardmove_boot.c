/* Threads: the shard-move thread (the bootstrap step, under sm_move_mu). */
/* Shard moves: the bootstrap of a new data directory. A node's first start on a store that
 * holds no id cannot tell a new cluster's node from a node whose data directory was wiped, or
 * from a node that a hand-edited cluster file gives another node's shards: in all three the
 * file gives it never-moved shards (epoch 1) and it has no record of them. So it claims none of
 * them at start (shardmove_init refuses them with SM_NOT_BOOTSTRAPPED) and waits for an
 * operator's word: POST /shards/bootstrap (tools/mcpd-cluster bootstrap, run once when a
 * cluster is created). Even then it asks every other node of the file that answers (GET
 * /shards) and claims nothing when one of them serves, refuses or keeps in transit a shard it
 * would claim: that node holds (or held) its data. A node that does not answer cannot be asked;
 * the answer names it, since a shard it holds would be claimed (its own start then refuses its
 * copy: same epoch, another node). The move thread (shardmove.c). */
#include "actor/shardmove_internal.h"

#include "core/cluster.h"
#include "core/log.h"
#include "core/shard.h"
#include "core/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Marks in seen[] (with the node's index + 1) a shard or range "abc" / "abc-def". */
static void mark_range(const char *r, int node, int seen[SHARD_COUNT])
{
    int from, to;
    if (r && shard_parse_range(r, &from, &to) == 0)
        for (int s = from; s <= to; s++)
            seen[s] = node + 1;
}

/* Every shard another node's GET /shards names: served, refused or in transit. */
static void mark_summary(const json_t *o, int node, int seen[SHARD_COUNT])
{
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(o, "shards"), i, v)
        mark_range(json_string_value(v), node, seen);
    json_array_foreach(json_object_get(o, "refused"), i, v)
        mark_range(json_string_value(json_object_get(v, "shards")), node, seen);
    json_array_foreach(json_object_get(o, "in_transit"), i, v)
        mark_range(json_string_value(json_object_get(v, "shard")), node, seen);
}

/* Asks every other node of the file for its shards (seen[s]: the index + 1 of a node that names
 * s); *asked and *missed (new) list who answered and who did not, and why. */
static void ask_peers(int seen[SHARD_COUNT], json_t **asked, json_t **missed)
{
    *asked = json_array();
    *missed = json_array();
    for (int i = 0; i < cluster_node_count(); i++) {
        const char *name = cluster_node_name(i);
        if (strcmp(name, shard_node_name()) == 0)
            continue;
        char why[300] = "";
        peer_t p;
        int status = 0;
        json_t *o = NULL;
        if (sm_peer_of(name, &p, why, sizeof why) == 0 &&
            sm_peer_json(&p, "GET", "/shards", &status, &o, why, sizeof why) == 0 &&
            status == 200) {
            mark_summary(o, i, seen);
            json_array_append_new(*asked, json_string(name));
        } else {
            if (status && status != 200)
                snprintf(why, sizeof why, "GET /shards answered %d", status);
            json_array_append_new(*missed, json_pack("{s:s,s:s}", "node", name, "why", why));
        }
        json_decref(o);
    }
}

/* The shards of claim[] that another node named, as "abc (n1), def (n2), ..." (the first few). */
static void conflicts_text(const int *claim, int n, const int seen[SHARD_COUNT], char *out,
                           size_t len)
{
    size_t used = 0;
    int shown = 0, total = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        int s = claim[i];
        if (!seen[s])
            continue;
        total++;
        if (shown == 8 || used >= len)
            continue;
        char sh[SHARD_HEX + 1];
        sm_shard_hex(s, sh);
        int w = snprintf(out + used, len - used, "%s%s (%s)", shown ? ", " : "", sh,
                         cluster_node_name(seen[s] - 1));
        used += w > 0 ? (size_t)w : 0;
        shown++;
    }
    if (total > shown && used < len)
        snprintf(out + used, len - used, " and %d more", total - shown);
}

int shard_bootstrap(const shard_req_t *rq, json_t **report, char *why, size_t whylen)
{
    (void)rq;
    pthread_mutex_lock(&sm_move_mu);
    int rc = 0;
    json_t *asked = NULL, *missed = NULL;
    if (!shard_in_cluster()) {
        snprintf(why, whylen, "this node runs without --cluster: it serves every shard");
        rc = -EINVAL;
        goto out;
    }
    if (SM_BOOT != SHARDREC_BOOT_PENDING) {
        snprintf(why, whylen,
                 "this node is bootstrapped already: it serves what its records say (a shard "
                 "it never held comes to it by a move)");
        rc = -EALREADY;
        goto out;
    }
    static int claim[SHARD_COUNT], seen[SHARD_COUNT];
    static shardrec_t recs[SHARD_COUNT];
    int n = 0;
    pthread_mutex_lock(&sm_rec_mu);
    for (int s = 0; s < SHARD_COUNT; s++) {
        seen[s] = 0;
        if (SM_REFUSED[s] && strcmp(SM_REFUSED[s], SM_NOT_BOOTSTRAPPED) == 0) {
            recs[n] = (shardrec_t){.state = SHARDREC_OWNED,
                                   .epoch = 1,
                                   .declined = SM_REC[s].declined};
            claim[n++] = s;
        }
    }
    pthread_mutex_unlock(&sm_rec_mu);
    ask_peers(seen, &asked, &missed);
    char which[600];
    conflicts_text(claim, n, seen, which, sizeof which);
    if (which[0]) {
        snprintf(why, whylen,
                 "bootstrap refused, nothing claimed: the cluster file gives this node shards "
                 "that other nodes hold or know of: %s; this node never held them: correct the "
                 "cluster file (read at start) or move those shards",
                 which);
        rc = -EALREADY;
        goto out;
    }
    if (shardrec_bootstrap(SM_STORE, claim, recs, n) != 0) {
        snprintf(why, whylen, "cannot record the claims (the store refuses writes)");
        rc = -EIO;
        goto out;
    }
    pthread_mutex_lock(&sm_rec_mu);
    for (int i = 0; i < n; i++) {
        SM_REC[claim[i]] = recs[i];
        free(SM_REFUSED[claim[i]]);
        SM_REFUSED[claim[i]] = NULL;
    }
    SM_BOOT = SHARDREC_BOOT_DONE;
    pthread_mutex_unlock(&sm_rec_mu);
    for (int i = 0; i < n; i++)
        shard_set_owned(claim[i], true);
    log_info("cluster: bootstrapped: %d shards of the cluster file recorded as held here at "
             "epoch 1 (%zu other nodes asked, %zu did not answer)",
             n, json_array_size(asked), json_array_size(missed));
    *report = json_pack("{s:s,s:i,s:O,s:O}", "node", shard_node_name(), "claimed", n, "asked",
                        asked, "not_asked", missed);
out:
    json_decref(asked);
    json_decref(missed);
    pthread_mutex_unlock(&sm_move_mu);
    return rc;
}
