/* Threads: any thread. */
/* Small helpers: clocks, ids, hashing. Any thread. */
#include "core/util.h"
#include "core/shard.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

void require_failed(const char *cond, const char *file, int line)
{
    fprintf(stderr, "mcpactord: invariant broken: %s at %s:%d\n", cond, file, line);
    abort();
}

int64_t now_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t now_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t now_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The id's first SHARD_HEX characters become a shard this node owns, chosen by r (random):
 * every id minted here is served here. */
static void put_shard(char *out, uint64_t r)
{
    int s = shard_pick(r);
    if (s >= 0)
        shard_put(out, s);
}

void session_id_fast(char *out)
{
    static _Thread_local uint64_t st[2];
    if (!st[0] && !st[1]) {
        while (getrandom(st, sizeof st, 0) != (ssize_t)sizeof st)
            ;
        st[0] |= 1;
    }
    static const char hex[] = "0123456789abcdef";
    uint64_t first = 0;
    for (int half = 0; half < 2; half++) {
        /* xorshift128+ */
        uint64_t x = st[0], y = st[1];
        st[0] = y;
        x ^= x << 23;
        st[1] = x ^ y ^ (x >> 17) ^ (y >> 26);
        uint64_t v = st[1] + y;
        if (!half)
            first = v;
        for (int i = 0; i < 16; i++)
            out[half * 16 + i] = hex[(v >> (60 - 4 * i)) & 15];
    }
    out[SESSION_ID_LEN] = '\0';
    put_shard(out, first);
}

int session_id_new_near(char *out, const char *peer)
{
    int rc = session_id_new(out);
    if (rc == 0)
        memcpy(out, peer, SESSION_ROUTE_LEN);
    return rc;
}

int session_id_new(char *out)
{
    unsigned char raw[SESSION_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[SESSION_ID_LEN] = '\0';
    uint64_t r;
    memcpy(&r, raw, sizeof r);
    put_shard(out, r);
    return 0;
}

bool session_id_valid(const char *s)
{
    size_t i = 0;
    for (; s[i]; i++) {
        if (i >= SESSION_ID_LEN)
            return false;
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return i == SESSION_ID_LEN;
}

int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

size_t hex_put(char *out, uint64_t v, int width)
{
    static const char hex[] = "0123456789abcdef";
    int n = 1;
    while (n < 16 && (v >> (4 * n)))
        n++;
    if (n < width)
        n = width;
    for (int i = n - 1; i >= 0; i--, v >>= 4)
        out[i] = hex[v & 15];
    out[n] = '\0';
    return (size_t)n;
}

void str_copy(char *dst, size_t size, const char *src)
{
    if (!size)
        return;
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

uint64_t hash_bytes(const void *data, size_t len)
{
    /* FNV-1a then a final avalanche so that consecutive ids spread over workers. */
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

uint64_t hash_id(const char *id, size_t n)
{
    return hash_id_seeded(id, n, 0x9e3779b97f4a7c15ULL);
}

uint64_t hash_id_seeded(const char *id, size_t n, uint64_t seed)
{
    uint64_t h = seed ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, id + i, sizeof w);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    for (; i < n; i++)
        h = (h ^ (unsigned char)id[i]) * 1099511628211ULL;
    /* the avalanche: every bit of the id reaches the low bits a worker is chosen by */
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    REQUIRE(p != NULL);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    /* malloc and a clear, not calloc, for small blocks: glibc's calloc never takes a block
     * from the thread's cache (tcache), though free puts blocks there, so the small objects a
     * request makes and frees (its message, its stream, its replies) came from the arena's bins
     * each time (50,000 hibernated sessions, actors on the HTTP threads: 37.1 -> 34.6-36.0 MB).
     * explicit_bzero, so the compiler does not fold the pair back into calloc. Large blocks stay
     * calloc's: a fresh mapping is zero already and only its touched pages become resident. */
    size_t total;
    REQUIRE(!__builtin_mul_overflow(n ? n : 1, size ? size : 1, &total));
    void *p;
    if (total >= 4096) {
        p = calloc(1, total);
    } else {
        p = malloc(total);
        if (p)
            explicit_bzero(p, total);
    }
    REQUIRE(p != NULL);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    REQUIRE(q != NULL);
    return q;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    REQUIRE(p != NULL);
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    REQUIRE(p != NULL);
    return p;
}

int cpu_quota_cpus(const char *quota_period)
{
    long long quota, period;
    if (!quota_period || sscanf(quota_period, "%lld %lld", &quota, &period) != 2 || quota <= 0 ||
        period <= 0)
        return 0; /* "max 100000", "-1 100000", or not a quota */
    long long cpus = (quota + period - 1) / period;
    return cpus > 4096 ? 4096 : (int)cpus;
}

/* The first line of path, at most len - 1 bytes; false when it cannot be read. */
static bool read_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    return ok;
}

/* This process's cgroup CPU quota in CPUs (cgroup v2 cpu.max, else v1's cpu controller), read
 * from its own cgroup and, inside a cgroup namespace, from the root it sees; 0: none. */
static int cgroup_cpus(void)
{
    char line[512], v2[512] = "", v1[512] = "";
    FILE *f = fopen("/proc/self/cgroup", "re");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *path = strchr(line, ':') ? strchr(strchr(line, ':') + 1, ':') : NULL;
        if (!path)
            continue;
        if (strncmp(line, "0::", 3) == 0)
            str_copy(v2, sizeof v2, path + 1);
        else if (strstr(line, ":cpu,") || strstr(line, ",cpu:") || strstr(line, ":cpu:"))
            str_copy(v1, sizeof v1, path + 1);
    }
    if (f)
        fclose(f);
    char p[1200], a[64], b[64], both[130];
    const char *v2dirs[] = {v2, ""};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "/sys/fs/cgroup%s/cpu.max", strcmp(v2dirs[i], "/") ? v2dirs[i] : "");
        if (read_line(p, a, sizeof a))
            return cpu_quota_cpus(a);
    }
    const char *v1dirs[] = {v1, ""};
    for (int i = 0; i < 2; i++) {
        const char *d = strcmp(v1dirs[i], "/") ? v1dirs[i] : "";
        snprintf(p, sizeof p, "/sys/fs/cgroup/cpu%s/cpu.cfs_quota_us", d);
        if (!read_line(p, a, sizeof a))
            continue;
        snprintf(p, sizeof p, "/sys/fs/cgroup/cpu%s/cpu.cfs_period_us", d);
        if (!read_line(p, b, sizeof b))
            continue;
        a[strcspn(a, "\n")] = '\0';
        snprintf(both, sizeof both, "%s %s", a, b);
        return cpu_quota_cpus(both);
    }
    return 0;
}

int cpus_usable(void)
{
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    int quota = cgroup_cpus();
    if (quota > 0 && quota < cpus)
        cpus = quota;
    return cpus < 1 ? 1 : cpus;
}

int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s)
        return -1;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        if (v > (INT64_MAX - (*p - '0')) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_host_port(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon;
    const char *hs = s;
    size_t hl;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':')
            return -1;
        hs = s + 1;
        hl = (size_t)(end - hs);
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
        hl = (size_t)(colon - s);
    }
    if (hl == 0 || hl >= hostlen)
        return -1;
    int64_t p;
    if (parse_int64(colon + 1, 0, 65535, &p) != 0)
        return -1;
    memcpy(host, hs, hl);
    host[hl] = '\0';
    *port = (int)p;
    return 0;
}

bool host_is_loopback(const char *host)
{
    if (strcasecmp(host, "localhost") == 0)
        return true;
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *res = NULL;
    if (!*host || getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return false;
    bool lo = sockaddr_is_loopback(res->ai_addr);
    freeaddrinfo(res);
    return lo;
}

int sockaddr_numeric(const struct sockaddr *sa, unsigned len, char *out, size_t outlen)
{
    return getnameinfo(sa, (socklen_t)len, out, (socklen_t)outlen, NULL, 0, NI_NUMERICHOST) == 0
               ? 0
               : -1;
}

bool sockaddr_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}
