/* libFuzzer harness: Last-Event-ID parsing (src/store/keys.c). One thread: libFuzzer's.
 *
 * The input is a Last-Event-ID header value (a NUL-terminated copy). When event_id_parse
 * accepts it, event_id_format of the result must give back an id that parses to the same
 * values, and since the grammar has one spelling per value, the very same text. The other way
 * round, the first 20 bytes as (tag, stream, seq) must format to an id that parses back.
 */
#include "fuzz.h"

#include "wire/eventid.h"

static void check_format_parses(uint32_t tag, uint64_t stream, uint64_t seq)
{
    char id[EVENT_ID_MAX + 1];
    memset(id, 0x7f, sizeof id);
    size_t n = event_id_format(id, tag, stream, seq);
    FUZZ_CHECK(n <= EVENT_ID_MAX && strlen(id) == n);
    FUZZ_CHECK(strchr(id, '\n') == NULL && strchr(id, '\r') == NULL); /* an SSE id line */
    uint32_t t2 = 0;
    uint64_t s2 = 0, q2 = 0;
    FUZZ_CHECK(event_id_parse(id, &t2, &s2, &q2) == 0);
    FUZZ_CHECK(t2 == tag && s2 == stream && q2 == seq);
    /* the stream id is the part before the colon and holds none */
    char sid[32];
    size_t sn = stream_id_format(sid, tag, stream);
    FUZZ_CHECK(sn < sizeof sid && memcmp(sid, id, sn) == 0 && id[sn] == ':');
    FUZZ_CHECK(memchr(sid, ':', sn) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    size_t len;
    char *s = fuzz_rest(&in, &len);
    uint32_t tag = 0x5a5a5a5a;
    uint64_t stream = 0x5a5a5a5a5a5a5a5aULL, seq = 0x5a5a5a5a5a5a5a5aULL;
    int rc = event_id_parse(s, &tag, &stream, &seq);
    if (rc == 0) {
        FUZZ_CHECK(seq != 0);
        char id[EVENT_ID_MAX + 1];
        size_t n = event_id_format(id, tag, stream, seq);
        FUZZ_CHECK(n == strlen(s) && strcmp(id, s) == 0);
        check_format_parses(tag, stream, seq);
    } else {
        /* a refused id leaves the outputs alone */
        FUZZ_CHECK(rc == -1 && tag == 0x5a5a5a5a && stream == 0x5a5a5a5a5a5a5a5aULL &&
                   seq == 0x5a5a5a5a5a5a5a5aULL);
    }
    free(s);

    in = (fuzz_in_t){data, size};
    uint32_t t = fuzz_u32(&in);
    uint64_t st = fuzz_u64(&in);
    uint64_t sq = fuzz_u64(&in);
    if (sq == 0)
        sq = 1; /* seq 0 is never issued */
    check_format_parses(t, st, sq);
    return 0;
}
