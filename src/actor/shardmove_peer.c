/* Threads: the shard-move thread (steps that ask another node). */
/* Shard moves: asking another node's admin listener (its address from the cluster file, its
 * token) for a step or a record, with a deadline, and reclaim's fencing, which asks the node an
 * export was released to. The move thread (shardmove.c). */
#include "actor/shardmove_internal.h"

#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/worker.h"
#include "core/auth.h"
#include "core/cluster.h"
#include "core/log.h"
#include "core/peer.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"
#include "store/manifest.h"
#include "store/sessionrec.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- another node's admin listener ---- */

int sm_peer_of(const char *node, peer_t *p, char *why, size_t whylen)
{
    memset(p, 0, sizeof *p);
    if (!node[0] || strcmp(node, shard_node_name()) == 0 ||
        cluster_node_admin(node, p->host, sizeof p->host, &p->port) != 0) {
        snprintf(why, whylen,
                 "'%s' is not another node with an admin address in the cluster "
                 "file",
                 node);
        return -EINVAL;
    }
    p->token = g_admin_auth.n ? (const char *)g_admin_auth.entries[0].token : NULL;
    p->timeout_s = PEER_TIMEOUT_S;
    return 0;
}

/* GET path on a peer, a JSON answer: 0 with *status and *out (new), or -EAGAIN with why. */
int sm_peer_json(const peer_t *p, const char *method, const char *path, int *status, json_t **out,
                 char *why, size_t whylen)
{
    char *body = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = peer_call(p, method, path, 1 << 20, status, &body, &len, why, whylen);
    if (rc != 0) {
        free(body);
        return -EAGAIN;
    }
    *out = json_loadb(body, len, 0, NULL);
    free(body);
    if (!*out)
        *out = json_object();
    return 0;
}

/* A step on a peer (POST answers 202, then GET /shards/move until it is done): 0 with the
 * step's HTTP status and answer; -EAGAIN when the POST got no answer (the peer cannot be
 * reached); -EBUSY when it answered but the step's answer is not known: busy with another
 * step, restarted while the step ran, no answer while it ran, or the step outlasted
 * PEER_STEP_WAIT_MS. The peer is alive then (it may still run the step): retry. */
int sm_peer_step(const peer_t *p, const char *path, int *status, json_t **out, char *why,
                 size_t whylen)
{
    json_t *o = NULL;
    int rc = sm_peer_json(p, "POST", path, status, &o, why, whylen);
    if (rc != 0)
        return rc;
    if (*status != 202) {
        if (json_is_true(json_object_get(o, "busy"))) {
            snprintf(why, whylen, "%s:%d is running another move step", p->host, p->port);
            json_decref(o);
            return -EBUSY;
        }
        *out = o;
        return 0;
    }
    json_int_t seq = json_integer_value(json_object_get(o, "seq"));
    char run[40];
    const char *r0 = json_string_value(json_object_get(o, "run"));
    snprintf(run, sizeof run, "%s", r0 ? r0 : "");
    json_decref(o);
    int64_t deadline = now_mono_ms() + PEER_STEP_WAIT_MS;
    while (now_mono_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        rc = sm_peer_json(p, "GET", "/shards/move", status, &o, why, whylen);
        if (rc != 0)
            return -EBUSY; /* it took the step: it may have run it */
        const char *st = json_string_value(json_object_get(o, "state"));
        const char *r = json_string_value(json_object_get(o, "run"));
        if (*status == 200 && r && strcmp(r, run) != 0) {
            /* another process answers: the peer restarted, and this step's answer is lost */
            snprintf(why, whylen, "%s:%d restarted while the step ran", p->host, p->port);
            json_decref(o);
            return -EBUSY;
        }
        if (*status == 200 && st && strcmp(st, "done") == 0 &&
            json_integer_value(json_object_get(o, "seq")) == seq) {
            *status = (int)json_integer_value(json_object_get(o, "status"));
            *out = o;
            return 0;
        }
        json_decref(o);
    }
    snprintf(why, whylen, "the step on %s:%d did not finish in time", p->host, p->port);
    return -EBUSY;
}

/* ---- reclaim's fencing ---- */

/* Reclaim's fencing: the node the shard was released to records that it will never adopt
 * rec->epoch (decline), and its record says so. force: without its word, but only when it
 * does not answer (a node that answers is alive: busy, or restarted while it declined, it may
 * still adopt the export). 0, or an error with why. */
int sm_fence_peer(const shardrec_t *rec, const char *prefix, bool force, char *why, size_t whylen)
{
    peer_t to;
    char url[160];
    snprintf(url, sizeof url, "/shards/decline?shard=%s&epoch=%u&from=%s", prefix, rec->epoch,
             shard_node_name());
    int status = 0;
    json_t *ans = NULL;
    int rc = sm_peer_of(rec->peer, &to, why, whylen);
    if (rc == 0)
        rc = sm_peer_step(&to, url, &status, &ans, why, whylen);
    char cause[300];
    snprintf(cause, sizeof cause, "%s", why);
    if (rc == -EBUSY) {
        snprintf(why, whylen,
                 "%s answers but did not decline epoch %u of shard %s (%s): it is alive and "
                 "may still adopt it, so force=1 does not apply; retry when it is free",
                 rec->peer, rec->epoch, prefix, cause);
        return -EBUSY;
    }
    if (rc != 0 && !force) {
        snprintf(why, whylen,
                 "cannot ask %s to decline epoch %u of shard %s (%s); retry when "
                 "it answers, or force=1 if it is gone for good and will never start on its "
                 "data again",
                 rec->peer, rec->epoch, prefix, cause);
        return -EAGAIN;
    }
    if (rc != 0) {
        log_warn("shard %s: taking back epoch %u without %s's word (force: %s)", prefix, rec->epoch,
                 rec->peer, cause);
        return 0;
    }
    if (status != 200) {
        const char *err = json_string_value(json_object_get(ans, "error"));
        snprintf(why, whylen,
                 "%s did not decline epoch %u of shard %s (%d: %s): it holds "
                 "it; finish the move instead",
                 rec->peer, rec->epoch, prefix, status, err ? err : "");
        json_decref(ans);
        return -EALREADY;
    }
    json_decref(ans);
    /* and its record says so (whatever answered that step): declined E, not holding it */
    snprintf(url, sizeof url, "/shards/record?shard=%s", prefix);
    json_t *r = NULL;
    bool fenced = false;
    if (sm_peer_json(&to, "GET", url, &status, &r, why, whylen) == 0 && status == 200) {
        const char *st = json_string_value(json_object_get(r, "state"));
        json_int_t ep = json_integer_value(json_object_get(r, "epoch"));
        fenced = json_integer_value(json_object_get(r, "declined")) >= rec->epoch &&
                 !(st && strcmp(st, "owned") == 0 && ep >= rec->epoch);
    }
    json_decref(r);
    if (!fenced) {
        snprintf(why, whylen,
                 "%s's record of shard %s does not show epoch %u declined: "
                 "the export stays",
                 rec->peer, prefix, rec->epoch);
        return -EAGAIN;
    }
    return 0;
}
