/* libFuzzer harness: client addresses as principals (src/core/principal.c): principal_address
 * (a peer address, a --trusted-proxy flag) and principal_forwarded (an X-Forwarded-For value a
 * proxy passes on, which a client may have filled). One thread: libFuzzer's.
 *
 * The input, cut at its first NUL, is the value. Neither may crash or write past its buffer;
 * what either accepts is an address in its principal form: IPv4 as inet_ntop writes it, or an
 * IPv6 /64 ending in "::/64" (or a full /64 prefix), whose address part parses again to itself
 * with the host bits zero; principal_forwarded of an address alone equals principal_address. */
#include "fuzz.h"

#include "core/principal.h"

#include <arpa/inet.h>

static void check_form(const char *out)
{
    size_t n = strlen(out);
    char addr[80];
    FUZZ_CHECK(n < sizeof addr);
    memcpy(addr, out, n + 1);
    char *slash = strchr(addr, '/');
    if (!slash) {
        struct in_addr v4;
        FUZZ_CHECK(inet_pton(AF_INET, addr, &v4) == 1);
        char again[INET_ADDRSTRLEN];
        FUZZ_CHECK(inet_ntop(AF_INET, &v4, again, sizeof again) && strcmp(again, addr) == 0);
        return;
    }
    FUZZ_CHECK(strcmp(slash, "/64") == 0);
    *slash = '\0';
    struct in6_addr v6;
    FUZZ_CHECK(inet_pton(AF_INET6, addr, &v6) == 1);
    for (int i = 8; i < 16; i++)
        FUZZ_CHECK(v6.s6_addr[i] == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    memcpy(in, data, size);
    in[size] = '\0';
    char a[64], b[64];
    int ra = principal_address(in, a, sizeof a);
    if (ra == 0)
        check_form(a);
    int rb = principal_forwarded(in, b, sizeof b);
    if (rb == 0)
        check_form(b);
    if (ra == 0 && !strchr(in, ',') && !strchr(in, ' ') && !strchr(in, '\t')) {
        FUZZ_CHECK(rb == 0);
        FUZZ_CHECK(strcmp(a, b) == 0);
    }
    /* a tiny buffer: refused or cut safely, never overrun (ASan watches) */
    char tiny[4];
    principal_address(in, tiny, sizeof tiny);
    free(in);
    return 0;
}
