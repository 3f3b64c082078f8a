/* Threads: one, libFuzzer's. */
/* libFuzzer harness: the admin listener's Host check against DNS rebinding (src/admin/admin.c:
 * admin_host_ok, the check browser_refusal applies to every request but /healthz) and what it
 * takes as a loopback listener (src/core/util.c: host_is_loopback, which the cluster file's
 * token rule uses too).
 *
 * Input: a selector byte, then the Host value (cut at its first NUL, as evhttp hands a header
 * over). The selector's low 3 bits pick the bound address (--admin-listen's host) from a list of
 * loopback and other addresses; with its high bit the bound address is the input's first
 * NUL-separated field instead (under 256 bytes, as parse_host_port leaves it in the
 * configuration), and the Host what follows. Bit 0x40: the listener's socket is on loopback
 * whatever its name says (a name /etc/hosts maps to 127.0.1.1); otherwise its name decides.
 *   - host_is_loopback agrees with a plain reference: "localhost" (any case), a dotted-quad
 *     IPv4 address in 127/8 or ::1 (inet_pton) is loopback; what it takes as loopback is one of
 *     those, or an IPv4 address in the short or hex forms inet_aton reads (127.1), or ::1 or
 *     ::ffff:127.x.y.z with a scope; never a name that only starts with "127.";
 *   - a request without Host, and any request to a listener that is not on loopback, passes;
 *   - on loopback, a Host passes exactly when it is localhost, 127.0.0.1, [::1], the bound
 *     address or the bound address bracketed, in any case, alone or followed by ':' and
 *     anything (a reference that cuts the Host at each ':');
 *   - the answer does not change with the letters' case; a Host that passes still passes with
 *     ":8080" after it; a Host without ':' that passes is refused once ".evil.example" follows
 *     it (a page's own DNS name that starts with a loopback name). */
#include "fuzz.h"

#include "admin/admin.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <strings.h>

static const char *const BOUND[8] = {
    "127.0.0.1", "::1",      "localhost",        "127.0.0.2",
    "0.0.0.0",   "10.1.2.3", "127.evil.example", "::ffff:127.0.0.1",
};

/* An IPv4 address as inet_aton reads it (1 to 4 parts, decimal, octal or hex), nothing else. */
static bool aton_exact(const char *s, struct in_addr *a)
{
    if (!*s || strspn(s, "0123456789abcdefABCDEFxX.") != strlen(s))
        return false;
    return inet_aton(s, a) != 0;
}

/* The strict reference: loopback for sure. */
static bool surely_loopback(const char *b)
{
    unsigned char a4[4];
    struct in6_addr a6;
    if (strcasecmp(b, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, b, a4) == 1)
        return a4[0] == 127;
    return inet_pton(AF_INET6, b, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

/* The wide reference: what host_is_loopback may take as loopback. */
static bool maybe_loopback(const char *b)
{
    if (strcasecmp(b, "localhost") == 0)
        return true;
    struct in_addr a;
    if (aton_exact(b, &a))
        return (ntohl(a.s_addr) >> 24) == 127;
    char v6[256];
    snprintf(v6, sizeof v6, "%s", b);
    char *pct = strchr(v6, '%'); /* a scope id */
    if (pct)
        *pct = '\0';
    struct in6_addr a6;
    if (inet_pton(AF_INET6, v6, &a6) != 1)
        return false;
    return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
}

/* The reference Host check on a loopback listener: the Host, cut at each ':' (and whole), is
 * one of the names (the bound one only when it is not empty). */
static bool ref_names(const char *bound, const char *host)
{
    char br[300];
    snprintf(br, sizeof br, "[%s]", bound);
    const char *names[5] = {"localhost", "127.0.0.1", "[::1]", bound, br};
    int count = bound[0] ? 5 : 3; /* an empty name names nothing (admin_host_ok) */
    size_t n = strlen(host);
    for (size_t cut = 0; cut <= n; cut++) {
        if (cut < n && host[cut] != ':')
            continue;
        for (int i = 0; i < count; i++)
            if (strlen(names[i]) == cut && strncasecmp(host, names[i], cut) == 0)
                return true;
    }
    return false;
}

static char *with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    char *r = malloc(a + b + 1);
    if (!r)
        abort();
    memcpy(r, s, a);
    memcpy(r + a, tail, b + 1);
    return r;
}

static void check(const char *bound, bool socket_lo, const char *host)
{
    bool lo = host_is_loopback(bound);
    if (surely_loopback(bound))
        FUZZ_CHECK(lo);
    if (lo)
        FUZZ_CHECK(maybe_loopback(bound));
    lo = lo || socket_lo; /* what the bound socket says (admin_start): a numeric name agrees */
    FUZZ_CHECK(admin_host_ok(bound, NULL, lo, NULL));
    bool ok = admin_host_ok(bound, NULL, lo, host);
    if (!lo) {
        FUZZ_CHECK(ok);
        return;
    }
    FUZZ_CHECK(ok == ref_names(bound, host));
    char *flipped = with(host, "");
    for (char *p = flipped; *p; p++)
        if (isalpha((unsigned char)*p))
            *p = (char)(islower((unsigned char)*p) ? toupper((unsigned char)*p)
                                                   : tolower((unsigned char)*p));
    FUZZ_CHECK(admin_host_ok(bound, NULL, lo, flipped) == ok);
    free(flipped);
    if (!ok)
        return;
    char *port = with(host, ":8080");
    FUZZ_CHECK(admin_host_ok(bound, NULL, lo, port));
    free(port);
    if (!strchr(host, ':')) {
        char *rebound = with(host, ".evil.example");
        FUZZ_CHECK(!admin_host_ok(bound, NULL, lo, rebound));
        free(rebound);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t sel = fuzz_u8(&in);
    char *bound = NULL;
    if (sel & 0x80) {
        size_t bl;
        bound = fuzz_field(&in, 0, &bl);
        if (!bound)
            return 0;
        if (bl >= 256) { /* --admin-listen's host fits 256 bytes with its NUL */
            free(bound);
            return 0;
        }
    }
    size_t len;
    char *host = fuzz_rest(&in, &len); /* its first NUL ends it */
    check(bound ? bound : BOUND[sel & 7], (sel & 0x40) != 0, host);
    free(host);
    free(bound);
    return 0;
}
