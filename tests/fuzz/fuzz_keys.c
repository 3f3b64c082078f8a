/* libFuzzer harness: store key encoding and decoding (src/store/keys.c). One thread: libFuzzer's.
 *
 * Input: a flags byte, two session ids (32 bytes each, mapped onto lowercase hex as every real
 * id is), six 64-bit integers, then NUL-separated fields: two request ids as JSON text and a
 * state name. Checks, for the two inputs side by side:
 *   - every key decodes to what was encoded (events, streams, alarms, expiry; reqmap by its
 *     layout sid | id JSON | 0 | stream, the way actors_recover_all reads it);
 *   - RocksDB's bytewise order (memcmp, then the shorter first) of two keys equals the order of
 *     the tuples they encode (negative times are stored as 0);
 *   - reqmap keys of two different ids compare the same way whatever their streams (each id's
 *     keys are one contiguous range);
 *   - every key of a session sorts below key_session_upper, and the bound sorts at or below
 *     every key of any later session.
 */
#include "fuzz.h"

#include "store/keys.h"

#include <jansson.h>

static int sign(int c)
{
    return (c > 0) - (c < 0);
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

/* RocksDB's bytewise comparator. */
static int bytecmp(const unsigned char *a, size_t al, const unsigned char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c != 0)
        return sign(c);
    return (al > bl) - (al < bl);
}

static uint64_t clamp(int64_t t)
{
    return t < 0 ? 0 : (uint64_t)t;
}

static void take_sid(fuzz_in_t *in, char *sid)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < SESSION_ID_LEN; i++)
        sid[i] = hex[fuzz_u8(in) & 15];
    sid[SESSION_ID_LEN] = '\0';
}

/* An id as the actor writes it (json_dumps of the parsed request id). */
static json_t *take_id(fuzz_in_t *in)
{
    size_t n;
    char *t = fuzz_field(in, 0, &n);
    json_t *id = NULL;
    if (t) {
        json_error_t e;
        id = json_loadb(t, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
        free(t);
    }
    return id ? id : json_integer((json_int_t)n);
}

typedef struct reqkey {
    unsigned char *k;
    size_t len;
} reqkey_t;

static reqkey_t reqmap(const char *sid, const json_t *id, uint64_t stream)
{
    char *t = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
    FUZZ_CHECK(t != NULL);
    size_t tl = strlen(t);
    reqkey_t r;
    r.k = malloc(SESSION_ID_LEN + tl + 9);
    FUZZ_CHECK(r.k != NULL);
    r.len = key_reqmap(r.k, sid, t, tl, stream);
    FUZZ_CHECK(r.len == SESSION_ID_LEN + tl + 9);
    /* decode it the way actors_recover_all does */
    FUZZ_CHECK(memcmp(r.k, sid, SESSION_ID_LEN) == 0 && r.k[r.len - 9] == 0);
    FUZZ_CHECK(memchr(r.k + SESSION_ID_LEN, 0, tl) == NULL); /* the 0 separator is unambiguous */
    FUZZ_CHECK(key_get_u64(r.k + r.len - 8) == stream);
    json_error_t e;
    json_t *back = json_loadb((const char *)r.k + SESSION_ID_LEN, r.len - SESSION_ID_LEN - 9,
                              JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    FUZZ_CHECK(back != NULL && json_equal(back, (json_t *)id));
    json_decref(back);
    free(t);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t flags = fuzz_u8(&in);
    char sa[SESSION_ID_LEN + 1], sb[SESSION_ID_LEN + 1];
    take_sid(&in, sa);
    if (flags & 1)
        memcpy(sb, sa, sizeof sb);
    else
        take_sid(&in, sb);
    uint64_t s1 = fuzz_u64(&in), q1 = fuzz_u64(&in);
    uint64_t s2 = flags & 2 ? s1 : fuzz_u64(&in);
    uint64_t q2 = flags & 4 ? q1 : fuzz_u64(&in);
    int64_t t1 = (int64_t)fuzz_u64(&in);
    int64_t t2 = flags & 8 ? t1 : (int64_t)fuzz_u64(&in);
    json_t *id1 = take_id(&in);
    json_t *id2 = flags & 16 ? json_incref(id1) : take_id(&in);
    size_t name_len;
    char *name = fuzz_field(&in, 0, &name_len);
    if (!name)
        name = calloc(1, 1);

    int csid = sign(memcmp(sa, sb, SESSION_ID_LEN));

    /* events: sid | stream | seq */
    unsigned char ea[KEY_EVENT_LEN], eb[KEY_EVENT_LEN];
    FUZZ_CHECK(key_event(ea, sa, s1, q1) == KEY_EVENT_LEN);
    FUZZ_CHECK(key_event(eb, sb, s2, q2) == KEY_EVENT_LEN);
    uint64_t ds, dq;
    FUZZ_CHECK(key_event_decode(ea, KEY_EVENT_LEN, &ds, &dq) == 0 && ds == s1 && dq == q1);
    FUZZ_CHECK(key_event_decode(ea, KEY_EVENT_LEN - 1, &ds, &dq) == -1);
    FUZZ_CHECK(key_event_decode(ea, KEY_STREAM_LEN, &ds, &dq) == -1);
    int want = csid ? csid : cmp_u64(s1, s2) ? cmp_u64(s1, s2) : cmp_u64(q1, q2);
    FUZZ_CHECK(bytecmp(ea, KEY_EVENT_LEN, eb, KEY_EVENT_LEN) == want);

    /* streams: sid | stream */
    unsigned char ka[KEY_STREAM_LEN], kb[KEY_STREAM_LEN];
    FUZZ_CHECK(key_stream(ka, sa, s1) == KEY_STREAM_LEN);
    FUZZ_CHECK(key_stream(kb, sb, s2) == KEY_STREAM_LEN);
    FUZZ_CHECK(key_stream_decode(ka, KEY_STREAM_LEN, &ds) == 0 && ds == s1);
    FUZZ_CHECK(key_stream_decode(ea, KEY_EVENT_LEN, &ds) == -1);
    want = csid ? csid : cmp_u64(s1, s2);
    FUZZ_CHECK(bytecmp(ka, KEY_STREAM_LEN, kb, KEY_STREAM_LEN) == want);
    /* a stream's events sort after its stream key's prefix and before the next stream's */
    FUZZ_CHECK(bytecmp(ka, KEY_STREAM_LEN, ea, KEY_EVENT_LEN) < 0);

    /* alarms: due | sid */
    unsigned char aa[KEY_ALARM_LEN], ab[KEY_ALARM_LEN];
    FUZZ_CHECK(key_alarm(aa, t1, sa) == KEY_ALARM_LEN);
    FUZZ_CHECK(key_alarm(ab, t2, sb) == KEY_ALARM_LEN);
    int64_t dt;
    char dsid[SESSION_ID_LEN + 1];
    FUZZ_CHECK(key_alarm_decode(aa, KEY_ALARM_LEN, &dt, dsid) == 0);
    FUZZ_CHECK((uint64_t)dt == clamp(t1) && strcmp(dsid, sa) == 0);
    FUZZ_CHECK(key_alarm_decode(aa, KEY_ALARM_LEN + 1, &dt, dsid) == -1);
    want = cmp_u64(clamp(t1), clamp(t2)) ? cmp_u64(clamp(t1), clamp(t2)) : csid;
    FUZZ_CHECK(bytecmp(aa, KEY_ALARM_LEN, ab, KEY_ALARM_LEN) == want);

    /* expiry: sid | expiry | stream */
    unsigned char xa[KEY_EXPIRY_LEN], xb[KEY_EXPIRY_LEN];
    FUZZ_CHECK(key_expiry(xa, sa, t1, s1) == KEY_EXPIRY_LEN);
    FUZZ_CHECK(key_expiry(xb, sb, t2, s2) == KEY_EXPIRY_LEN);
    FUZZ_CHECK(key_expiry_decode(xa, KEY_EXPIRY_LEN, &dt, &ds) == 0);
    FUZZ_CHECK((uint64_t)dt == clamp(t1) && ds == s1);
    FUZZ_CHECK(key_expiry_decode(xa, KEY_EXPIRY_LEN - 1, &dt, &ds) == -1);
    want = csid                                 ? csid
           : cmp_u64(clamp(t1), clamp(t2)) != 0 ? cmp_u64(clamp(t1), clamp(t2))
                                                : cmp_u64(s1, s2);
    FUZZ_CHECK(bytecmp(xa, KEY_EXPIRY_LEN, xb, KEY_EXPIRY_LEN) == want);

    /* reqmap: sid | id JSON | 0 | stream */
    reqkey_t r11 = reqmap(sa, id1, s1), r12 = reqmap(sa, id1, s2);
    reqkey_t r21 = reqmap(sa, id2, s1), r22 = reqmap(sa, id2, s2);
    FUZZ_CHECK(bytecmp(r11.k, r11.len, r12.k, r12.len) == cmp_u64(s1, s2));
    if (!json_equal(id1, id2)) {
        int c = bytecmp(r11.k, r11.len, r22.k, r22.len);
        FUZZ_CHECK(c != 0 && bytecmp(r12.k, r12.len, r21.k, r21.len) == c);
    }

    /* state: sid | name, 1..200 bytes of name (a C string) */
    size_t nl = strlen(name);
    unsigned char st[KEY_STATE_MAX];
    long sl = key_state(st, sa, name);
    if (nl == 0 || nl > 200) {
        FUZZ_CHECK(sl == -1);
    } else {
        FUZZ_CHECK(sl == (long)(SESSION_ID_LEN + nl));
        FUZZ_CHECK(memcmp(st, sa, SESSION_ID_LEN) == 0);
        FUZZ_CHECK(memcmp(st + SESSION_ID_LEN, name, nl) == 0);
    }

    /* the session's upper bound */
    unsigned char up[SESSION_ID_LEN];
    key_session_upper(up, sa);
    FUZZ_CHECK(memcmp(up, sa, SESSION_ID_LEN - 1) == 0);
    FUZZ_CHECK(bytecmp(ea, KEY_EVENT_LEN, up, SESSION_ID_LEN) < 0);
    FUZZ_CHECK(bytecmp(ka, KEY_STREAM_LEN, up, SESSION_ID_LEN) < 0);
    FUZZ_CHECK(bytecmp(xa, KEY_EXPIRY_LEN, up, SESSION_ID_LEN) < 0);
    FUZZ_CHECK(bytecmp(r11.k, r11.len, up, SESSION_ID_LEN) < 0);
    FUZZ_CHECK(bytecmp((const unsigned char *)sa, SESSION_ID_LEN, up, SESSION_ID_LEN) < 0);
    if (sl > 0)
        FUZZ_CHECK(bytecmp(st, (size_t)sl, up, SESSION_ID_LEN) < 0);
    if (csid < 0) {
        FUZZ_CHECK(bytecmp(up, SESSION_ID_LEN, eb, KEY_EVENT_LEN) <= 0);
        FUZZ_CHECK(bytecmp(up, SESSION_ID_LEN, kb, KEY_STREAM_LEN) <= 0);
        FUZZ_CHECK(bytecmp(up, SESSION_ID_LEN, xb, KEY_EXPIRY_LEN) <= 0);
        FUZZ_CHECK(bytecmp(up, SESSION_ID_LEN, (const unsigned char *)sb, SESSION_ID_LEN) <= 0);
    }

    /* integers */
    unsigned char u[8];
    key_put_u64(u, s1);
    FUZZ_CHECK(key_get_u64(u) == s1);

    free(r11.k);
    free(r12.k);
    free(r21.k);
    free(r22.k);
    free(name);
    json_decref(id1);
    json_decref(id2);
    return 0;
}
