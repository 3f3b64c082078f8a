#include "core/cluster.h"

#include "core/shard.h"
#include "core/util.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int bad(const char *file, const char *what)
{
    fprintf(stderr, "mcpactord: --cluster %s: %s\n", file, what);
    return -1;
}

/* The owner of every shard from "assign" ({node: ["abc-def", ...]}), checked: each shard
 * exactly once, only known nodes. owner[s] = index into nodes. */
static int read_assign(const char *file, json_t *assign, json_t *nodes, int owner[SHARD_COUNT])
{
    char msg[300];
    for (int s = 0; s < SHARD_COUNT; s++)
        owner[s] = -1;
    const char *name;
    json_t *ranges;
    json_object_foreach(assign, name, ranges) {
        int idx = -1;
        for (size_t i = 0; i < json_array_size(nodes); i++) {
            const char *n = json_string_value(json_object_get(json_array_get(nodes, i), "name"));
            if (n && strcmp(n, name) == 0)
                idx = (int)i;
        }
        if (idx < 0) {
            snprintf(msg, sizeof msg, "assign names node '%.100s', which is not in nodes", name);
            return bad(file, msg);
        }
        if (!json_is_array(ranges))
            return bad(file, "assign: each node's value must be an array of \"abc\" or \"abc-def\" shard ranges");
        size_t i;
        json_t *r;
        json_array_foreach(ranges, i, r) {
            int from, to;
            if (!json_is_string(r) || shard_parse_range(json_string_value(r), &from, &to) != 0) {
                snprintf(msg, sizeof msg, "assign.%.100s: a range must be \"abc\" or \"abc-def\" "
                         "(3 lowercase hex digits, 000..fff, from <= to)", name);
                return bad(file, msg);
            }
            for (int s = from; s <= to; s++) {
                if (owner[s] >= 0) {
                    snprintf(msg, sizeof msg, "shard %03x is assigned twice", s);
                    return bad(file, msg);
                }
                owner[s] = idx;
            }
        }
    }
    for (int s = 0; s < SHARD_COUNT; s++) {
        if (owner[s] < 0) {
            snprintf(msg, sizeof msg, "shard %03x is assigned to no node (all of 000..fff must be)", s);
            return bad(file, msg);
        }
    }
    return 0;
}

int cluster_load(config_t *c, bool given_listen, bool given_admin, bool given_data)
{
    const char *file = c->cluster_file;
    if (!c->node_name[0])
        return bad(file, "--node NAME is needed with --cluster (which of its nodes this is)");
    json_error_t e;
    json_t *root = json_load_file(file, JSON_REJECT_DUPLICATES, &e);
    if (!root) {
        char msg[300];
        snprintf(msg, sizeof msg, "cannot read it: %s (line %d)", e.text, e.line);
        return bad(file, msg);
    }
    int rc = -1;
    json_t *shards = json_object_get(root, "shards");
    json_t *nodes = json_object_get(root, "nodes");
    json_t *assign = json_object_get(root, "assign");
    json_t *me = NULL;
    static int owner[SHARD_COUNT];
    int my = -1;
    if (shards && json_integer_value(shards) != SHARD_COUNT) {
        bad(file, "shards must be 4096 (the shard count is fixed: 3 hex digits of every id)");
        goto out;
    }
    if (!json_is_array(nodes) || json_array_size(nodes) == 0) {
        bad(file, "nodes must be a non-empty array of {name, listen, admin, data_dir}");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        const char *name = json_string_value(json_object_get(n, "name"));
        if (!name || !*name || strlen(name) > 64) {
            bad(file, "every node needs a name (1..64 characters)");
            goto out;
        }
        for (size_t k = 0; k < i; k++) {
            if (strcmp(name, json_string_value(json_object_get(json_array_get(nodes, k), "name"))) == 0) {
                bad(file, "node names must be unique");
                goto out;
            }
        }
        if (strcmp(name, c->node_name) == 0) {
            me = n;
            my = (int)i;
        }
    }
    if (!me) {
        char msg[300];
        snprintf(msg, sizeof msg, "no node named '%.100s' in nodes", c->node_name);
        bad(file, msg);
        goto out;
    }
    if (!json_is_object(assign)) {
        bad(file, "assign must be an object {node name: [shard ranges]}");
        goto out;
    }
    if (read_assign(file, assign, nodes, owner) != 0)
        goto out;
    const char *listen = json_string_value(json_object_get(me, "listen"));
    const char *admin = json_string_value(json_object_get(me, "admin"));
    const char *data = json_string_value(json_object_get(me, "data_dir"));
    if (!given_listen && listen &&
        parse_host_port(listen, c->listen_host, sizeof c->listen_host, &c->listen_port) != 0) {
        bad(file, "this node's listen must be HOST:PORT");
        goto out;
    }
    if (!given_admin && admin) {
        c->admin_enabled = true;
        if (parse_host_port(admin, c->admin_host, sizeof c->admin_host, &c->admin_port) != 0) {
            bad(file, "this node's admin must be HOST:PORT");
            goto out;
        }
    }
    if (!given_data && data) {
        if (!*data || strlen(data) >= sizeof c->data_dir) {
            bad(file, "this node's data_dir is empty or too long");
            goto out;
        }
        strcpy(c->data_dir, data);
    }
    /* one requestState key for the cluster: a retry verifies on whichever node holds its
     * record after a move (unless --request-state-key names another) */
    const char *key = json_string_value(json_object_get(root, "request_state_key"));
    if (key && !c->request_state_key[0]) {
        if (!*key || strlen(key) >= sizeof c->request_state_key) {
            bad(file, "request_state_key must be a file path");
            goto out;
        }
        strcpy(c->request_state_key, key);
    }
    static bool mine[SHARD_COUNT];
    for (int s = 0; s < SHARD_COUNT; s++)
        mine[s] = owner[s] == my;
    shard_begin_cluster(mine);
    shard_set_node_name(c->node_name);
    rc = 0;
out:
    json_decref(root);
    return rc;
}
