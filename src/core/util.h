/* Small helpers: clocks, ids, hashing. Any thread. */
#ifndef MCPD_CORE_UTIL_H
#define MCPD_CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Always-on invariant check: a broken invariant aborts with its location. */
#define REQUIRE(cond)                                  \
    do {                                               \
        if (!(cond))                                   \
            require_failed(#cond, __FILE__, __LINE__); \
    } while (0)
_Noreturn void require_failed(const char *cond, const char *file, int line);

int64_t now_mono_ms(void);
int64_t now_mono_us(void);
int64_t now_wall_ms(void);

#define SESSION_ID_LEN 32 /* 128 bits as lowercase hex */
/* glibc's mmap threshold, fixed by main (mallopt): blocks this size and larger are mapped, and
 * go back to the kernel when freed (docs/design/memory.md). */
#define MALLOC_MMAP_THRESHOLD (512 * 1024)

/* Fills out[SESSION_ID_LEN + 1] with a fresh id from the OS CSPRNG. 0 or -errno. */
int session_id_new(char *out);
/* The leading characters of an id that decide its worker (worker_for_session): ids that share
 * them are served by the same worker. */
#define SESSION_ROUTE_LEN 8
/* A fresh id in the session-id format from a per-thread generator seeded once from the OS:
 * unique and well spread for routing, but not a secret (a 2026-07-28 request's own actor). */
void session_id_fast(char *out);
/* A fresh id (as session_id_new) whose routing prefix is peer's: it lands on peer's worker. */
int session_id_new_near(char *out, const char *peer);
/* True when s is exactly SESSION_ID_LEN lowercase hex characters. */
bool session_id_valid(const char *s);

uint64_t hash_bytes(const void *data, size_t len);
/* A hash of an id's first n bytes (a session, handle or task id, n <= SESSION_ID_LEN) for the
 * in-memory tables and the choice of a worker: 8 bytes a step where hash_bytes takes one (a
 * call hashed its session's id about 4 times, some 200 instructions each). Never stored or
 * sent, so it may change between versions; what is (session_tag) stays on hash_bytes. */
uint64_t hash_id(const char *id, size_t n);
/* The same from another starting state: with a secret seed, where an id's bucket must not be
 * one a client can choose (actor/mbox.c). */
uint64_t hash_id_seeded(const char *id, size_t n, uint64_t seed);

/* Allocation that aborts on failure: out of memory is not a recoverable condition here. */
/* The value of a lowercase hex digit, -1 for any other character. */
int hex_digit(char c);
/* v in lowercase hex at out: width digits zero-padded (at most 16), or (width 0) as few as it
 * takes; a NUL after them (out >= 17 bytes). Returns the digits written. No printf: event ids
 * and SSE chunk sizes are written with it on the hot path. */
size_t hex_put(char *out, uint64_t v, int width);
/* Copies src into dst (size bytes, NUL-terminated, cut like snprintf "%s" but no printf). */
void str_copy(char *dst, size_t size, const char *src);
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* CPUs a cgroup CPU quota allows, rounded up: quota and period in microseconds, as cgroup v2's
 * cpu.max holds them ("150000 100000" -> 2) and v1's cpu.cfs_quota_us and cpu.cfs_period_us
 * (joined "QUOTA PERIOD"); 0 when there is no quota ("max ...", a quota of -1) or the text is
 * not one. */
int cpu_quota_cpus(const char *quota_period);
/* The CPUs this process may use: its affinity mask, lowered to its own cgroup's CPU quota
 * (a container limited to 2 CPUs on a 64-core host: 2); at least 1. */
int cpus_usable(void);

/* Parses a non-negative decimal integer that fits in [min, max]. 0 or -1. */
int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);
/* "HOST:PORT" (HOST may be "[v6]"), port 0..65535. Writes host into host[hostlen]. */
int parse_host_port(const char *s, char *host, size_t hostlen, int *port);
/* Whether a listener bound to host (as parse_host_port writes it: no brackets) is reachable from
 * this machine only: "localhost" (any case), or a numeric address (as getaddrinfo reads one
 * without DNS: "127.1" too) in 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. A name that only
 * starts with "127." is not: it resolves wherever its DNS says. */
bool host_is_loopback(const char *host);
struct sockaddr;
/* Whether sa (AF_INET or AF_INET6) is in 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. */
bool sockaddr_is_loopback(const struct sockaddr *sa);
/* sa's address as numbers ("127.0.1.1", "::1"), into out: 0, or -1. */
int sockaddr_numeric(const struct sockaddr *sa, unsigned len, char *out, size_t outlen);

#endif
