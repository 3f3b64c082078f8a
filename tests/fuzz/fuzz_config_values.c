/* libFuzzer harness: the small values read from flags, the cluster file and the admin API's
 * query (src/core/shard.c: shard_parse_range, shard_of; src/core/util.c: parse_host_port,
 * session_id_valid; src/core/log.c: log_level_parse). One thread: libFuzzer's.
 *
 * Input: a byte sizing the host buffer (1..64, or 256 as the configuration's), then the value
 * (cut at its first NUL, as a flag or a JSON string read with json_string_value is).
 *   - a shard range is "abc" or "abc-def" in lowercase hex with from <= to < SHARD_COUNT, and
 *     writing the shards back gives the very text (one spelling per range);
 *   - a host:port is accepted only when its host is non-empty, fits the buffer with its NUL,
 *     and its port is 0..65535; written back ("[host]:port" when it came bracketed) it parses
 *     to the same host and port;
 *   - session_id_valid and shard_of agree with references of their own;
 *   - a log level is one of error, warn, warning, info, debug. */
#include "fuzz.h"

#include "core/log.h"
#include "core/shard.h"
#include "core/util.h"

static bool lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void check_range(const char *s)
{
    int from = -7, to = -7;
    if (shard_parse_range(s, &from, &to) != 0)
        return;
    FUZZ_CHECK(from >= 0 && from <= to && to < SHARD_COUNT);
    char back[2 * SHARD_HEX + 2];
    shard_put(back, from);
    size_t n = SHARD_HEX;
    if (strlen(s) != SHARD_HEX) {
        back[n++] = '-';
        shard_put(back + n, to);
        n += SHARD_HEX;
    } else {
        FUZZ_CHECK(from == to);
    }
    back[n] = '\0';
    FUZZ_CHECK(strcmp(back, s) == 0);
}

static void check_host_port(const char *s, size_t hostlen)
{
    char *host = malloc(hostlen);
    if (!host)
        abort();
    int port = -1;
    if (parse_host_port(s, host, hostlen, &port) != 0) {
        free(host);
        return;
    }
    size_t hl = strlen(host);
    FUZZ_CHECK(hl > 0 && hl < hostlen && port >= 0 && port <= 65535);
    const char *colon = strrchr(s, ':');
    FUZZ_CHECK(colon && colon[1] != '\0' && strspn(colon + 1, "0123456789") == strlen(colon + 1));
    char back[600];
    snprintf(back, sizeof back, s[0] == '[' ? "[%s]:%d" : "%s:%d", host, port);
    char *again = malloc(hostlen);
    if (!again)
        abort();
    int p2 = -1;
    FUZZ_CHECK(parse_host_port(back, again, hostlen, &p2) == 0);
    FUZZ_CHECK(strcmp(again, host) == 0 && p2 == port);
    free(again);
    free(host);
}

static void check_ids(const char *s)
{
    size_t n = strlen(s);
    bool ref = n == SESSION_ID_LEN;
    for (size_t i = 0; ref && i < n; i++)
        ref = lower_hex(s[i]);
    FUZZ_CHECK(session_id_valid(s) == ref);
    int sh = shard_of(s);
    bool head = n >= SHARD_HEX;
    for (size_t i = 0; head && i < SHARD_HEX; i++)
        head = lower_hex(s[i]);
    FUZZ_CHECK((sh >= 0) == head);
    if (sh >= 0) {
        FUZZ_CHECK(sh < SHARD_COUNT);
        char back[SHARD_HEX];
        shard_put(back, sh);
        FUZZ_CHECK(memcmp(back, s, SHARD_HEX) == 0);
    }
}

static void check_level(const char *s)
{
    log_level_t l;
    if (log_level_parse(s, &l) != 0)
        return;
    static const char *const ok[] = {"error", "warn", "warning", "info", "debug"};
    bool known = false;
    for (size_t i = 0; i < 5; i++)
        known |= strcmp(s, ok[i]) == 0;
    FUZZ_CHECK(known && (int)l >= 0 && (int)l <= 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t b = fuzz_u8(&in);
    size_t hostlen = b & 0x80 ? 256 : (size_t)(b & 0x3f) + 1;
    size_t len;
    char *s = fuzz_rest(&in, &len); /* its first NUL ends it */
    check_range(s);
    check_host_port(s, hostlen);
    check_ids(s);
    check_level(s);
    free(s);
    return 0;
}
