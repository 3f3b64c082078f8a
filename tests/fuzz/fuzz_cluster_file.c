/* Threads: one, libFuzzer's. */
/* libFuzzer harness: the server's reader of the cluster file (src/core/cluster.c: cluster_load,
 * with read_nodes, read_assign, read_epochs, keep_node_addrs and apply_my_node; the values in it
 * are parsed by shard_parse_range and parse_host_port, fuzzed on their own by config_values).
 *
 * Input: a flags byte, then the file's bytes (written to a temporary file that cluster_load
 * reads). Flags: bit 0..2 the --listen, --admin-listen and --data-dir flags were given (the
 * file's values must not replace them), bit 3 an --admin-token was given, bits 4..5 this node's
 * name (n1, n2, node-a, or none: refused).
 * cluster_load's messages on stderr are muted (FUZZ_VERBOSE=1 keeps them).
 *   - cluster_load accepts exactly the files a plain reference accepts (the rules of README
 *     "Run a cluster", written again here on jansson's parse of the same bytes): an object;
 *     "shards" absent or 4096; "nodes" a non-empty array of objects with unique names of 1..64
 *     letters, digits, '_', '.', '-' (not starting with '.' or '-'), one of them this node;
 *     "assign" an object of known node names to arrays of "abc" / "abc-def" ranges that cover
 *     000..fff exactly once; "epochs" absent or an object of shards to integers
 *     1..2000000000; this node's move_dir, data_dir and the request_state_key non-empty paths
 *     under 1024 bytes, its listen and admin HOST:PORT; an admin listener off loopback only
 *     with a token;
 *   - an accepted file: this node owns exactly the shards assign gives it (cluster_file_mine,
 *     shard_owned, shard_owned_count), each shard's epoch is the file's (1 where it names
 *     none), the nodes are the file's in order with the admin addresses the file gives them,
 *     and the configuration holds the file's values where no flag was given and the flags'
 *     where one was;
 *   - an admin listener accepted without a token is on loopback: localhost or a numeric
 *     loopback address, never a DNS name that starts with "127.";
 *   - a refused file changes no shard's ownership. */
#include "fuzz.h"

#include "core/cluster.h"
#include "core/config.h"
#include "core/shard.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <strings.h>
#include <unistd.h>

static char PATH[64];
static int FD = -1;
static int NULLFD = -1;
static bool VERBOSE;
static config_t C;

static const char *const NAMES[4] = {"n1", "n2", "node-a", ""};

/* ---- the reference ---- */

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64 || s[0] == '.' || s[0] == '-')
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "abc" (3 lowercase hex digits): the shard, else -1 */
static int ref_shard(const char *s, size_t n)
{
    if (n != 3)
        return -1;
    int v = 0;
    for (size_t i = 0; i < 3; i++) {
        int h = hexval(s[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static bool ref_range(const json_t *r, int *from, int *to)
{
    if (!json_is_string(r))
        return false;
    const char *s = json_string_value(r);
    size_t n = strlen(s);
    if (n == 3) {
        *from = *to = ref_shard(s, 3);
        return *from >= 0;
    }
    if (n != 7 || s[3] != '-')
        return false;
    *from = ref_shard(s, 3);
    *to = ref_shard(s + 4, 3);
    return *from >= 0 && *to >= 0 && *from <= *to;
}

static bool surely_loopback(const char *h)
{
    unsigned char a[16];
    if (strcasecmp(h, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET6, h, a) == 1)
        return IN6_IS_ADDR_LOOPBACK((struct in6_addr *)(void *)a) ||
               (IN6_IS_ADDR_V4MAPPED((struct in6_addr *)(void *)a) && a[12] == 127);
    struct in_addr in;
    return strspn(h, "0123456789abcdefABCDEFxX.") == strlen(h) && inet_aton(h, &in) &&
           (ntohl(in.s_addr) >> 24) == 127;
}

/* A path member as take_path takes it: absent (or not a string) or given by a flag: nothing;
 * else a non-empty value under 1024 bytes. */
static bool ref_path(const json_t *v, bool given)
{
    if (!json_is_string(v) || given)
        return true;
    size_t n = strlen(json_string_value(v));
    return n > 0 && n < 1024;
}

typedef struct {
    int owner[SHARD_COUNT];
    uint32_t epoch[SHARD_COUNT];
    int me;
} ref_t;

/* Whether the reference accepts root for this node and these flags (r filled when it does). */
static bool ref_accepts(const json_t *root, const char *node, unsigned flags, ref_t *r)
{
    if (!*node || !json_is_object(root))
        return false;
    const json_t *shards = json_object_get(root, "shards");
    if (shards && !(json_is_integer(shards) && json_integer_value(shards) == SHARD_COUNT))
        return false;
    const json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes) || json_array_size(nodes) == 0)
        return false;
    r->me = -1;
    size_t nn = json_array_size(nodes);
    for (size_t i = 0; i < nn; i++) {
        const json_t *name = json_object_get(json_array_get(nodes, i), "name");
        if (!json_is_string(name) || !name_ok(json_string_value(name)))
            return false;
        for (size_t k = 0; k < i; k++)
            if (json_equal(name, json_object_get(json_array_get(nodes, k), "name")))
                return false;
        if (strcmp(json_string_value(name), node) == 0)
            r->me = (int)i;
    }
    if (r->me < 0)
        return false;
    const json_t *assign = json_object_get(root, "assign");
    if (!json_is_object(assign))
        return false;
    for (int s = 0; s < SHARD_COUNT; s++)
        r->owner[s] = -1;
    const char *key;
    json_t *ranges;
    json_object_foreach((json_t *)assign, key, ranges) {
        int idx = -1;
        for (size_t i = 0; i < nn; i++)
            if (strcmp(json_string_value(json_object_get(json_array_get(nodes, i), "name")), key) ==
                0)
                idx = (int)i;
        if (idx < 0 || !json_is_array(ranges))
            return false;
        for (size_t i = 0; i < json_array_size(ranges); i++) {
            int from, to;
            if (!ref_range(json_array_get(ranges, i), &from, &to))
                return false;
            for (int s = from; s <= to; s++) {
                if (r->owner[s] >= 0)
                    return false;
                r->owner[s] = idx;
            }
        }
    }
    for (int s = 0; s < SHARD_COUNT; s++)
        if (r->owner[s] < 0)
            return false;
    memset(r->epoch, 0, sizeof r->epoch);
    const json_t *epochs = json_object_get(root, "epochs");
    if (epochs) {
        if (!json_is_object(epochs))
            return false;
        json_t *v;
        json_object_foreach((json_t *)epochs, key, v) {
            int s = ref_shard(key, strlen(key));
            if (s < 0 || !json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > 2000000000)
                return false;
            r->epoch[s] = (uint32_t)json_integer_value(v);
        }
    }
    const json_t *me = json_array_get(nodes, (size_t)r->me);
    char host[256];
    int port;
    const json_t *listen = json_object_get(me, "listen"), *admin = json_object_get(me, "admin");
    if (!ref_path(json_object_get(me, "move_dir"), false))
        return false;
    if (!(flags & 1) && json_is_string(listen) &&
        parse_host_port(json_string_value(listen), host, sizeof host, &port) != 0)
        return false;
    const char *admin_host = flags & 2 ? "192.0.2.1" : "127.0.0.1"; /* the flag's, the default */
    if (!(flags & 2) && json_is_string(admin)) {
        if (parse_host_port(json_string_value(admin), host, sizeof host, &port) != 0)
            return false;
        admin_host = host;
    }
    if (!ref_path(json_object_get(me, "data_dir"), flags & 4))
        return false;
    if (!(flags & 8) && !host_is_loopback(admin_host)) /* the same rule, checked below */
        return false;
    return ref_path(json_object_get(root, "request_state_key"), false);
}

/* ---- the checks ---- */

/* The configuration field fl after the load: the file's value v (a path) where no flag gave
 * it, else what the flags had. */
static void check_path(const char *fl, const json_t *v, bool given, const char *before)
{
    if (json_is_string(v) && !given)
        FUZZ_CHECK(strcmp(fl, json_string_value(v)) == 0);
    else
        FUZZ_CHECK(strcmp(fl, before) == 0);
}

static void check_host(const json_t *v, bool given, const char *host, int port, const char *dh,
                       int dp)
{
    char h[256];
    int p;
    if (json_is_string(v) && !given) {
        FUZZ_CHECK(parse_host_port(json_string_value(v), h, sizeof h, &p) == 0);
        FUZZ_CHECK(strcmp(host, h) == 0 && port == p);
    } else {
        FUZZ_CHECK(strcmp(host, dh) == 0 && port == dp);
    }
}

static void check_accepted(const json_t *root, const ref_t *r, unsigned flags)
{
    int mine = 0;
    for (int s = 0; s < SHARD_COUNT; s++) {
        bool m = r->owner[s] == r->me;
        mine += m;
        FUZZ_CHECK(cluster_file_mine(s) == m && shard_owned(s) == m);
        FUZZ_CHECK(cluster_file_epoch(s) == (r->epoch[s] ? r->epoch[s] : 1));
    }
    FUZZ_CHECK(shard_owned_count() == mine && shard_in_cluster());
    const json_t *nodes = json_object_get(root, "nodes");
    FUZZ_CHECK(cluster_node_count() == (int)json_array_size(nodes));
    FUZZ_CHECK(cluster_node_name(cluster_node_count()) == NULL);
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        const json_t *n = json_array_get(nodes, i);
        const char *name = json_string_value(json_object_get(n, "name"));
        FUZZ_CHECK(strcmp(cluster_node_name((int)i), name) == 0);
        char h[256], want[256];
        int p = -1, wp;
        const char *a = json_string_value(json_object_get(n, "admin"));
        bool has = a && parse_host_port(a, want, sizeof want, &wp) == 0 && wp != 0;
        FUZZ_CHECK((cluster_node_admin(name, h, sizeof h, &p) == 0) == has);
        if (has)
            FUZZ_CHECK(strcmp(h, want) == 0 && p == wp);
    }
    FUZZ_CHECK(strcmp(shard_node_name(), C.node_name) == 0);
    const json_t *me = json_array_get(nodes, (size_t)r->me);
    check_host(json_object_get(me, "listen"), flags & 1, C.listen_host, C.listen_port,
               flags & 1 ? "192.0.2.1" : "127.0.0.1", flags & 1 ? 9000 : 8080);
    check_host(json_object_get(me, "admin"), flags & 2, C.admin_host, C.admin_port,
               flags & 2 ? "192.0.2.1" : "127.0.0.1", flags & 2 ? 9001 : 8081);
    check_path(C.data_dir, json_object_get(me, "data_dir"), flags & 4,
               flags & 4 ? "/flag/data" : "./mcpactord-data");
    check_path(C.move_dir, json_object_get(me, "move_dir"), false, "");
    check_path(C.request_state_key, json_object_get(root, "request_state_key"), false, "");
    FUZZ_CHECK(C.admin_enabled);
    if (!C.admin_token[0])
        FUZZ_CHECK(surely_loopback(C.admin_host));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (FD < 0) {
        snprintf(PATH, sizeof PATH, "/tmp/fuzz-cluster-XXXXXX");
        FD = mkstemp(PATH);
        NULLFD = open("/dev/null", O_WRONLY | O_CLOEXEC);
        VERBOSE = getenv("FUZZ_VERBOSE") != NULL;
        if (FD < 0 || NULLFD < 0)
            abort();
        unlink(PATH); /* read through /proc/self/fd: nothing is left behind */
        snprintf(PATH, sizeof PATH, "/proc/self/fd/%d", FD);
    }
    fuzz_in_t in = {data, size};
    unsigned flags = fuzz_u8(&in);
    const char *node = NAMES[(flags >> 4) & 3];
    if (ftruncate(FD, 0) != 0 || pwrite(FD, in.p, in.left, 0) != (ssize_t)in.left)
        abort();

    config_defaults(&C);
    snprintf(C.cluster_file, sizeof C.cluster_file, "%s", PATH);
    snprintf(C.node_name, sizeof C.node_name, "%s", node);
    if (flags & 1) {
        strcpy(C.listen_host, "192.0.2.1");
        C.listen_port = 9000;
    }
    if (flags & 2) {
        strcpy(C.admin_host, "192.0.2.1");
        C.admin_port = 9001;
    }
    if (flags & 4)
        strcpy(C.data_dir, "/flag/data");
    if (flags & 8)
        strcpy(C.admin_token, "/flag/admin-token");

    bool owned_before[SHARD_COUNT];
    for (int s = 0; s < SHARD_COUNT; s++)
        owned_before[s] = shard_owned(s);
    int saved = -1;
    if (!VERBOSE) {
        fflush(stderr);
        saved = dup(2);
        dup2(NULLFD, 2);
    }
    int rc = cluster_load(&C, flags & 1, flags & 2, flags & 4);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }

    json_t *root = json_loadb((const char *)in.p, in.left, JSON_REJECT_DUPLICATES, NULL);
    ref_t *r = malloc(sizeof *r);
    if (!r)
        abort();
    bool ref = ref_accepts(root, node, flags, r);
    FUZZ_CHECK((rc == 0) == ref);
    if (rc == 0) {
        check_accepted(root, r, flags);
    } else {
        FUZZ_CHECK(rc == -1);
        for (int s = 0; s < SHARD_COUNT; s++)
            FUZZ_CHECK(shard_owned(s) == owned_before[s]);
    }
    free(r);
    json_decref(root);
    config_free(&C);
    return 0;
}
