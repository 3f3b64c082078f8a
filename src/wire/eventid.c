/* Threads: any thread (pure functions). */
/* Event ids: format and parse. Pure functions, any thread. See eventid.h. */
#include "wire/eventid.h"

#include "core/util.h"

#include <stdio.h>
#include <string.h>

uint32_t session_tag(const char *sid)
{
    return (uint32_t)(hash_bytes(sid, SESSION_ID_LEN) >> 32);
}

size_t stream_id_format(char *out, uint32_t tag, uint64_t stream)
{
    size_t n = hex_put(out, tag, 8);
    if (stream == STREAM_GET) {
        memcpy(out + n, "-get", 5);
        return n + 4;
    }
    out[n++] = '-';
    out[n++] = 'p';
    return n + hex_put(out + n, stream, 0);
}

size_t event_id_format(char *out, uint32_t tag, uint64_t stream, uint64_t seq)
{
    size_t n = stream_id_format(out, tag, stream);
    out[n++] = ':';
    return n + hex_put(out + n, seq, 16);
}

/* Parses exactly n lowercase hex digits at s (n <= 16). */
static int parse_hex(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hex_digit(s[i]);
        if (d < 0)
            return -1;
        v = (v << 4) | (uint64_t)d;
    }
    *out = v;
    return 0;
}

int event_id_parse(const char *s, uint32_t *tag, uint64_t *stream, uint64_t *seq)
{
    uint64_t t;
    if (strlen(s) > EVENT_ID_MAX || parse_hex(s, 8, &t) != 0 || s[8] != '-')
        return -1;
    const char *sp = s + 9;
    const char *colon = strchr(sp, ':');
    if (!colon)
        return -1;
    size_t slen = (size_t)(colon - sp);
    uint64_t st;
    if (slen == 3 && memcmp(sp, "get", 3) == 0) {
        st = STREAM_GET;
    } else {
        if (slen < 2 || slen > 17 || sp[0] != 'p' || sp[1] == '0' ||
            parse_hex(sp + 1, slen - 1, &st) != 0)
            return -1;
    }
    const char *q = colon + 1;
    uint64_t sq;
    if (strlen(q) != 16 || parse_hex(q, 16, &sq) != 0 || sq == 0)
        return -1;
    *tag = (uint32_t)t;
    *stream = st;
    *seq = sq;
    return 0;
}
