/* libFuzzer harness: stream record encoding (src/store/records.c). One thread: libFuzzer's.
 *
 * 1. streamrec_decode of the raw input (any bytes: a damaged or foreign value in the store) must
 *    not crash; when it accepts, encoding the result and decoding that gives the same record.
 * 2. The input read as a record laid out like a 'T' value (any first byte, flags byte, seq, last
 *    write time and bytes, 8 bytes each, then the request ids as JSON text), the ids parsed the
 *    way the HTTP thread parses request bodies (where ids come from); when they are an array,
 *    encode then decode must give the record back.
 */
#include "fuzz.h"

#include "store/records.h"

static bool ids_equal(const json_t *a, const json_t *b)
{
    /* an empty array is not written: it comes back as NULL */
    size_t na = a ? json_array_size(a) : 0, nb = b ? json_array_size(b) : 0;
    if (na == 0 || nb == 0)
        return na == nb;
    return json_equal((json_t *)a, (json_t *)b);
}

static bool same_record(const streamrec_t *a, const streamrec_t *b)
{
    return a->finished == b->finished && a->is_get == b->is_get && a->delivered == b->delivered &&
           a->seq == b->seq && a->last_write_ms == b->last_write_ms && a->bytes == b->bytes &&
           ids_equal(a->req_ids, b->req_ids);
}

static void check_round_trip(const streamrec_t *r)
{
    size_t len = 0;
    char *v = streamrec_encode(r, &len);
    FUZZ_CHECK(v != NULL && len >= 26);
    /* copied to exactly len bytes so that ASan sees a read past the value */
    char *exact = malloc(len);
    FUZZ_CHECK(exact != NULL);
    memcpy(exact, v, len);
    free(v);
    streamrec_t back;
    memset(&back, 0x5a, sizeof back);
    FUZZ_CHECK(streamrec_decode(exact, len, &back) == 0);
    FUZZ_CHECK(same_record(r, &back));
    json_decref(back.req_ids);
    free(exact);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* 1: arbitrary bytes as a stored value */
    char *raw = malloc(size ? size : 1);
    FUZZ_CHECK(raw != NULL);
    if (size)
        memcpy(raw, data, size);
    streamrec_t r;
    memset(&r, 0x5a, sizeof r);
    if (streamrec_decode(size ? raw : NULL, size, &r) == 0) {
        FUZZ_CHECK(r.req_ids == NULL || json_is_array(r.req_ids));
        check_round_trip(&r);
        json_decref(r.req_ids);
    } else {
        FUZZ_CHECK(r.req_ids == NULL);
    }
    free(raw);

    /* 2: a record built from the input */
    fuzz_in_t in = {data, size};
    streamrec_t w = {0};
    (void)fuzz_u8(&in); /* the magic byte's place: a stored 'T' value reads as the same record */
    uint8_t flags = fuzz_u8(&in);
    w.finished = flags & 1;
    w.is_get = (flags & 2) != 0;
    w.delivered = (flags & 4) != 0;
    w.seq = fuzz_u64(&in);
    w.last_write_ms = (int64_t)fuzz_u64(&in);
    w.bytes = fuzz_u64(&in);
    size_t n;
    char *ids = fuzz_rest(&in, &n);
    json_error_t e;
    json_t *v = json_loadb(ids, n, JSON_ALLOW_NUL, &e);
    if (json_is_array(v)) {
        w.req_ids = v;
        check_round_trip(&w);
    }
    json_decref(v);
    free(ids);
    return 0;
}
