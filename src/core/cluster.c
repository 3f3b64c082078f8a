/* Threads: main thread (cluster_load at start); then the shard-move thread reads what it loaded. */
/* What the file must hold is tested on one table of cases with tools/mcpd-cluster's check
 * (tests/unit/core/cluster_cases.json): a rule added here or there goes into the table. */
#include "core/cluster.h"

#include "core/shard.h"
#include "core/util.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int bad(const char *file, const char *what);

/* The file's view, kept for the shard-move code (start-up reconciliation, peer addresses). */
static bool FILE_MINE[SHARD_COUNT];
static uint32_t FILE_EPOCH[SHARD_COUNT];
#define MAX_NODES 4096
static struct node_addr {
    char name[65];
    char host[256];
    int port; /* admin; 0: the node has no admin address */
} * NODES;
static int N_NODES;

bool cluster_file_mine(int s)
{
    return s >= 0 && s < SHARD_COUNT && FILE_MINE[s];
}

uint32_t cluster_file_epoch(int s)
{
    return s >= 0 && s < SHARD_COUNT && FILE_EPOCH[s] ? FILE_EPOCH[s] : 1;
}

int cluster_node_count(void)
{
    return N_NODES;
}

const char *cluster_node_name(int i)
{
    return i >= 0 && i < N_NODES ? NODES[i].name : NULL;
}

int cluster_node_admin(const char *name, char *host, size_t hostlen, int *port)
{
    for (int i = 0; i < N_NODES; i++) {
        if (strcmp(NODES[i].name, name) == 0) {
            if (!NODES[i].port)
                return -1;
            snprintf(host, hostlen, "%s", NODES[i].host);
            *port = NODES[i].port;
            return 0;
        }
    }
    return -1;
}

bool cluster_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/* "epochs": {"abc": N, ...} (written by tools/mcpd-cluster as shards move) */
static int read_epochs(const char *file, json_t *epochs)
{
    memset(FILE_EPOCH, 0, sizeof FILE_EPOCH);
    if (!epochs)
        return 0;
    if (!json_is_object(epochs))
        return bad(file, "epochs must be an object {\"abc\": epoch}");
    const char *k;
    json_t *v;
    json_object_foreach(epochs, k, v) {
        int s = strlen(k) == SHARD_HEX ? shard_of(k) : -1;
        if (s < 0)
            return bad(file, "epochs: each key is a shard (3 lowercase hex digits)");
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 2000000000)
            return bad(file, "epochs: each value is an integer 1..2000000000");
        FILE_EPOCH[s] = (uint32_t)json_integer_value(v);
    }
    return 0;
}

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
            return bad(
                file,
                "assign: each node's value must be an array of \"abc\" or \"abc-def\" shard ranges");
        size_t i;
        json_t *r;
        json_array_foreach(ranges, i, r) {
            int from, to;
            if (!json_is_string(r) || shard_parse_range(json_string_value(r), &from, &to) != 0) {
                snprintf(msg, sizeof msg,
                         "assign.%.100s: a range must be \"abc\" or \"abc-def\" "
                         "(3 lowercase hex digits, 000..fff, from <= to)",
                         name);
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
            snprintf(msg, sizeof msg, "shard %03x is assigned to no node (all of 000..fff must be)",
                     s);
            return bad(file, msg);
        }
    }
    return 0;
}

/* nodes: a non-empty array of uniquely and well named nodes, one of them this node (*me, its
 * index *my). 0, or -1 after saying why. */
static int read_nodes(const char *file, json_t *nodes, const char *node_name, json_t **me, int *my)
{
    if (!json_is_array(nodes) || json_array_size(nodes) == 0)
        return bad(file, "nodes must be a non-empty array of {name, listen, admin, data_dir}");
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        const char *name = json_string_value(json_object_get(n, "name"));
        if (!name || !cluster_name_ok(name))
            return bad(file, "every node needs a name of 1..64 letters, digits, '_', '.' or '-' "
                             "(not starting with '.' or '-')");
        for (size_t k = 0; k < i; k++)
            if (strcmp(name,
                       json_string_value(json_object_get(json_array_get(nodes, k), "name"))) == 0)
                return bad(file, "node names must be unique");
        if (strcmp(name, node_name) == 0) {
            *me = n;
            *my = (int)i;
        }
    }
    if (!*me) {
        char msg[300];
        snprintf(msg, sizeof msg, "no node named '%.100s' in nodes", node_name);
        return bad(file, msg);
    }
    return 0;
}

/* Every node's name and admin address, for the shard moves (cluster_node_admin). */
static void keep_node_addrs(json_t *nodes)
{
    free(NODES);
    N_NODES = 0;
    NODES = xcalloc(json_array_size(nodes), sizeof *NODES);
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        struct node_addr *na = &NODES[N_NODES++];
        snprintf(na->name, sizeof na->name, "%s", json_string_value(json_object_get(n, "name")));
        const char *a = json_string_value(json_object_get(n, "admin"));
        if (a && parse_host_port(a, na->host, sizeof na->host, &na->port) != 0)
            na->port = 0;
    }
}

/* A path from the cluster file into a config field, unless a flag gave it: 0, or -1 after
 * saying what (an empty or too long path). */
static int take_path(const char *file, const char *v, char *field, size_t size, bool given,
                     const char *what)
{
    if (!v || given)
        return 0;
    if (!*v || strlen(v) >= size)
        return bad(file, what);
    strcpy(field, v);
    return 0;
}

/* This node's entry (and the cluster's request_state_key) as defaults of the flags not given. */
static int apply_my_node(config_t *c, const char *file, json_t *root, json_t *me, bool given_listen,
                         bool given_admin, bool given_data)
{
    if (take_path(file, json_string_value(json_object_get(me, "move_dir")), c->move_dir,
                  sizeof c->move_dir, c->move_dir[0] != '\0',
                  "this node's move_dir is empty or too long") != 0)
        return -1;
    const char *listen = json_string_value(json_object_get(me, "listen"));
    const char *admin = json_string_value(json_object_get(me, "admin"));
    if (!given_listen && listen &&
        parse_host_port(listen, c->listen_host, sizeof c->listen_host, &c->listen_port) != 0)
        return bad(file, "this node's listen must be HOST:PORT");
    if (!given_admin && admin) {
        c->admin_enabled = true;
        if (parse_host_port(admin, c->admin_host, sizeof c->admin_host, &c->admin_port) != 0)
            return bad(file, "this node's admin must be HOST:PORT");
    }
    if (take_path(file, json_string_value(json_object_get(me, "data_dir")), c->data_dir,
                  sizeof c->data_dir, given_data, "this node's data_dir is empty or too long") != 0)
        return -1;
    /* the admin listener serves whole shards (exports) and moves them: off loopback, only with
     * a token */
    if (c->admin_enabled && !host_is_loopback(c->admin_host) && !c->admin_token[0]) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "this node's admin listener %.200s is not on loopback: give "
                 "it --admin-token FILE (the shard API serves and moves whole shards)",
                 c->admin_host);
        return bad(file, msg);
    }
    /* one requestState key for the cluster: a retry verifies on whichever node holds its
     * record after a move (unless --request-state-key names another) */
    return take_path(file, json_string_value(json_object_get(root, "request_state_key")),
                     c->request_state_key, sizeof c->request_state_key,
                     c->request_state_key[0] != '\0', "request_state_key must be a file path");
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
    if (read_nodes(file, nodes, c->node_name, &me, &my) != 0)
        goto out;
    if (!json_is_object(assign)) {
        bad(file, "assign must be an object {node name: [shard ranges]}");
        goto out;
    }
    if (read_assign(file, assign, nodes, owner) != 0 ||
        read_epochs(file, json_object_get(root, "epochs")) != 0)
        goto out;
    keep_node_addrs(nodes);
    if (apply_my_node(c, file, root, me, given_listen, given_admin, given_data) != 0)
        goto out;
    static bool mine[SHARD_COUNT];
    for (int s = 0; s < SHARD_COUNT; s++)
        FILE_MINE[s] = mine[s] = owner[s] == my;
    shard_begin_cluster(mine);
    shard_set_node_name(c->node_name);
    rc = 0;
out:
    json_decref(root);
    return rc;
}
