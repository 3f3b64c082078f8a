/* libFuzzer harness: SSE framing (src/wire/sse.c). One thread: libFuzzer's.
 *
 * Input: one flags byte (bit 0: the event has an id; bit 1: a retry line first), then the id up
 * to the first NUL byte, then the data (any bytes). The harness frames [retry] event(id, data),
 * a keepalive comment and event(no id, data) into one buffer, and parses that buffer back with
 * the event stream interpretation of the WHATWG HTML standard (9.2.6): lines end in CRLF, LF or
 * CR; "data" values are joined with LF and the last LF dropped; "id" sets the last event id,
 * which later events keep. Both events must carry the data with CR and CRLF turned into LF, and
 * the id must come back without its CR and LF bytes (the framer drops them so an id stays one
 * field).
 */
#include "fuzz.h"

#include "wire/sse.h"

#define MAX_EVENTS 4

typedef struct sse_event {
    char *data;
    size_t len;
    char *last_id;
} sse_event_t;

typedef struct sse_parser {
    buf_t data;       /* the data buffer */
    char *last_id;    /* the last event id buffer */
    long long retry;  /* -1 until a retry field */
    sse_event_t ev[MAX_EVENTS];
    int n_ev;
    int extra_events; /* events beyond MAX_EVENTS */
} sse_parser_t;

static char *dup_bytes(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static void dispatch(sse_parser_t *ps)
{
    if (ps->data.len == 0)
        return;
    size_t n = ps->data.len;
    if (ps->data.p[n - 1] == '\n')
        n--;
    if (ps->n_ev < MAX_EVENTS) {
        sse_event_t *e = &ps->ev[ps->n_ev++];
        e->data = dup_bytes(ps->data.p, n);
        e->len = n;
        e->last_id = dup_bytes(ps->last_id, strlen(ps->last_id));
    } else {
        ps->extra_events++;
    }
    ps->data.len = 0;
}

static bool field_is(const char *f, size_t n, const char *name)
{
    return strlen(name) == n && memcmp(f, name, n) == 0;
}

static void process_line(sse_parser_t *ps, const char *line, size_t n)
{
    if (n == 0) {
        dispatch(ps);
        return;
    }
    if (line[0] == ':')
        return; /* a comment */
    const char *colon = memchr(line, ':', n);
    size_t fl = colon ? (size_t)(colon - line) : n;
    const char *v = colon ? colon + 1 : line + n;
    size_t vl = (size_t)(line + n - v);
    if (vl > 0 && v[0] == ' ') {
        v++;
        vl--;
    }
    if (field_is(line, fl, "data")) {
        buf_add(&ps->data, v, vl);
        buf_add(&ps->data, "\n", 1);
    } else if (field_is(line, fl, "id")) {
        if (!memchr(v, '\0', vl)) {
            free(ps->last_id);
            ps->last_id = dup_bytes(v, vl);
        }
    } else if (field_is(line, fl, "retry")) {
        bool digits = vl > 0 && vl < 19;
        long long ms = 0;
        for (size_t i = 0; digits && i < vl; i++) {
            if (v[i] < '0' || v[i] > '9')
                digits = false;
            else
                ms = ms * 10 + (v[i] - '0');
        }
        if (digits)
            ps->retry = ms;
    }
}

/* Parses a whole stream; an event not ended by a blank line is dropped (as a client would). */
static void sse_parse(sse_parser_t *ps, const char *s, size_t len)
{
    memset(ps, 0, sizeof *ps);
    ps->last_id = dup_bytes("", 0);
    ps->retry = -1;
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\n' || s[i] == '\r') {
            process_line(ps, s + start, i - start);
            if (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')
                i++;
            start = i + 1;
        }
    }
}

static void sse_parser_free(sse_parser_t *ps)
{
    for (int i = 0; i < ps->n_ev; i++) {
        free(ps->ev[i].data);
        free(ps->ev[i].last_id);
    }
    free(ps->last_id);
    buf_free(&ps->data);
}

/* data with CRLF and lone CR turned into LF */
static char *normalise(const char *d, size_t len, size_t *out_len)
{
    char *o = malloc(len + 1);
    if (!o)
        abort();
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (d[i] == '\r') {
            o[n++] = '\n';
            if (i + 1 < len && d[i + 1] == '\n')
                i++;
        } else {
            o[n++] = d[i];
        }
    }
    o[n] = '\0';
    *out_len = n;
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t flags = fuzz_u8(&in);
    bool with_id = flags & 1, with_retry = flags & 2;
    long long retry_ms = (long long)(flags >> 2) * 500;
    char *id = fuzz_field(&in, 0, NULL);
    if (!id)
        id = dup_bytes("", 0);
    size_t dlen;
    char *d = fuzz_rest(&in, &dlen);

    buf_t out = {0};
    if (with_retry)
        sse_frame_retry(&out, retry_ms);
    sse_frame_event(&out, with_id ? id : NULL, d, dlen);
    size_t first_len = out.len;
    buf_adds(&out, SSE_KEEPALIVE);
    sse_frame_event(&out, NULL, d, dlen);
    FUZZ_CHECK(out.len > first_len && out.p[out.len - 1] == '\n' && out.p[out.len - 2] == '\n');

    /* the framer drops CR and LF from an id, so the parser must see exactly the rest */
    char *want_id = dup_bytes("", 0);
    if (with_id) {
        free(want_id);
        want_id = dup_bytes(id, strlen(id));
        size_t k = 0;
        for (size_t j = 0; id[j]; j++)
            if (id[j] != '\r' && id[j] != '\n')
                want_id[k++] = id[j];
        want_id[k] = '\0';
    }
    /* the frame itself uses LF alone; data lines and the id line carry no CR */
    FUZZ_CHECK(memchr(out.p, '\r', out.len) == NULL);
    sse_parser_t ps;
    sse_parse(&ps, out.p, out.len);
    size_t nlen;
    char *norm = normalise(d, dlen, &nlen);
    FUZZ_CHECK(ps.n_ev == 2 && ps.extra_events == 0);
    FUZZ_CHECK(ps.data.len == 0); /* nothing left over */
    for (int i = 0; i < 2; i++) {
        FUZZ_CHECK(ps.ev[i].len == nlen);
        FUZZ_CHECK(nlen == 0 || memcmp(ps.ev[i].data, norm, nlen) == 0);
        FUZZ_CHECK(strcmp(ps.ev[i].last_id, want_id) == 0);
    }
    FUZZ_CHECK(ps.retry == (with_retry ? retry_ms : -1));
    free(norm);
    free(want_id);
    sse_parser_free(&ps);
    buf_free(&out);
    free(d);
    free(id);
    return 0;
}
