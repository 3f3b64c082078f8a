/* libFuzzer harness: an upstream's stdout cut into lines and parsed (uplines_feed,
 * src/gateway/upstream_lines.c). One thread: libFuzzer's.
 *
 * Input: a byte of piece size, a byte of line bound, then the stream. The stream is fed whole
 * and in pieces of that size, then EOF; both must give what a plain reference gives: the stream
 * cut at each newline (and its last bytes at EOF), a blank line (spaces, tabs, CRs) nothing, a
 * line past the bound one "too long", else json_parse_buf's value (an object or array: the
 * message, equal; a scalar: "bad shape") or its failure ("bad JSON"). The buffer is empty after
 * EOF.
 */
#include "fuzz.h"

#include "core/jsonparse.h"
#include "gateway/upstream.h"

#include <event2/buffer.h>

typedef struct got {
    json_t *events; /* [kind, value or null] */
} got_t;

static void on_msg(void *arg, json_t *msg)
{
    FUZZ_CHECK(json_is_object(msg) || json_is_array(msg));
    json_array_append_new(((got_t *)arg)->events, json_pack("[i,o]", -1, msg));
}

static void on_bad(void *arg, upstream_bad_t why, const char *detail)
{
    FUZZ_CHECK(detail != NULL);
    json_array_append_new(((got_t *)arg)->events, json_pack("[i,n]", (int)why));
}

static json_t *feed(const char *s, size_t n, size_t piece, size_t max_line)
{
    got_t g = {json_array()};
    uplines_t st = {.max_line = max_line, .on_msg = on_msg, .on_bad = on_bad, .arg = &g};
    struct evbuffer *b = evbuffer_new();
    for (size_t off = 0; off < n; off += piece) {
        evbuffer_add(b, s + off, n - off < piece ? n - off : piece);
        uplines_feed(&st, b, false);
    }
    uplines_feed(&st, b, true);
    FUZZ_CHECK(evbuffer_get_length(b) == 0);
    evbuffer_free(b);
    return g.events;
}

static json_t *reference(const char *s, size_t n, size_t max_line)
{
    json_t *ev = json_array();
    for (size_t at = 0; at < n;) {
        const char *nl = memchr(s + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (s + at)) : n - at;
        const char *line = s + at;
        at += len + 1;
        bool blank = true;
        for (size_t i = 0; i < len && blank; i++)
            blank = line[i] == ' ' || line[i] == '\t' || line[i] == '\r';
        if (len > max_line) {
            json_array_append_new(ev, json_pack("[i,n]", (int)UPSTREAM_LINE_TOO_LONG));
            continue;
        }
        if (blank)
            continue;
        json_t *v = json_parse_buf(line, len, NULL, 0, NULL);
        if (!v)
            json_array_append_new(ev, json_pack("[i,n]", (int)UPSTREAM_BAD_JSON));
        else if (!json_is_object(v) && !json_is_array(v)) {
            json_decref(v);
            json_array_append_new(ev, json_pack("[i,n]", (int)UPSTREAM_BAD_SHAPE));
        } else
            json_array_append_new(ev, json_pack("[i,o]", -1, v));
    }
    return ev;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    size_t piece = (size_t)fuzz_u8(&in) % 31 + 1;
    size_t max_line = (size_t)fuzz_u8(&in) % 64 + 1;
    size_t n;
    char *stream = fuzz_rest(&in, &n);

    json_t *want = reference(stream, n, max_line);
    json_t *whole = feed(stream, n, n ? n : 1, max_line);
    json_t *split = feed(stream, n, piece, max_line);
    FUZZ_CHECK(json_equal(whole, want));
    FUZZ_CHECK(json_equal(split, want));
    json_decref(want);
    json_decref(whole);
    json_decref(split);
    free(stream);
    return 0;
}
