/* Threads: one, libFuzzer's. */
/* libFuzzer harness: the loaders of the stored session metadata that the start-up count (and a
 * shard that moves) reads from RocksDB, record by record, mostly without a parse
 * (src/actor/account.c: actor_meta_unit, fast_owner; src/actor/actor.c: actor_meta_kind,
 * actor_owner_of), and the writer of those records (src/core/jsondump.c: jobj_*).
 *
 * Input: a flags byte, 8 bytes of numbers, then NUL-separated fields: the protocol version,
 * the token name ("a"), the owner ("p"), then JSON texts for clientInfo ("ci"), capabilities
 * ("cc"), subscriptions ("sub") and a record's or a task's state ("rec", "task"). Flags: bits
 * 0..1 the kind (session, record, handle, task), bit 2 an owner, bit 3 "hs": false, bit 4
 * "lx": true, bit 5 a gateway session's head ("gw", "gi", "gl" for "ci", "cc", "ll"), bit 6
 * "u": false; bit 7: the bytes after the flags are a stored value as is (not written here).
 *   - a record is written as actor.c's write_meta writes it (the same members in the same
 *     order): its text is byte for byte json_dump_compact's of a jansson object with those
 *     members, and it parses back to that object;
 *   - actor_meta_kind and actor_meta_unit give the kind written; actor_meta_unit gives the
 *     owner actor_owner_of reads from the parsed record (the "p" written, cut to
 *     PRINCIPAL_NAME_MAX - 1 bytes; else "t:" and the token name; else "a:"), whether or not
 *     it took the path without a parse, and holds unless "hs": false was written;
 *   - any stored bytes: both give the kind "k" gives on the parse when the text holds "k":"
 *     (as the writer writes it, without spaces); otherwise actor_meta_kind gives a session's
 *     and actor_meta_unit a session's or, where it parsed, that kind; an owner is a string of
 *     at most PRINCIPAL_NAME_MAX - 1 bytes, actor_owner_of's of the parse where the text holds
 *     no "p":" at all. */
#include "fuzz.h"

#include "actor/actor.h"
#include "core/buf.h"
#include "core/jsondump.h"
#include "core/jsonparse.h"
#include "core/principal.h"
#include "wire/jsonrpc.h"

#include <jansson.h>

/* The kind a parsed record's "k" gives (actor_meta_kind's rule, written again). */
static int kind_of(const json_t *m)
{
    const json_t *k = json_object_get(m, "k");
    if (!json_is_string(k) || json_string_length(k) != 1)
        return STORED_SESSION;
    switch (json_string_value(k)[0]) {
    case 'r':
        return STORED_RECORD;
    case 'h':
        return STORED_HANDLE;
    case 't':
        return STORED_TASK;
    default:
        return STORED_SESSION;
    }
}

static void check_raw(const char *v, size_t len)
{
    char owner[PRINCIPAL_NAME_MAX];
    memset(owner, 0x5a, sizeof owner);
    bool holds;
    int kind = actor_meta_unit(v, len, owner, sizeof owner, &holds);
    int quick = actor_meta_kind(v, len);
    FUZZ_CHECK(kind >= 0 && kind < STORED__KINDS);
    FUZZ_CHECK(memchr(owner, '\0', sizeof owner) != NULL);
    json_t *m = json_parse_buf(v, len, NULL, 0, NULL);
    if (memmem(v, len, "\"k\":\"", 5)) {
        FUZZ_CHECK(kind == kind_of(m) && quick == kind);
    } else {
        /* a "k" the writer would not write so ("k": "r") is read where a parse is made */
        FUZZ_CHECK(quick == STORED_SESSION);
        FUZZ_CHECK(kind == STORED_SESSION || kind == kind_of(m));
    }
    if (!memmem(v, len, "\"p\":\"", 5)) {
        char ref[PRINCIPAL_NAME_MAX];
        actor_owner_of(m, ref, sizeof ref);
        FUZZ_CHECK(strcmp(owner, ref) == 0);
        FUZZ_CHECK(holds == !json_is_false(json_object_get(m, "hs")));
    }
    json_decref(m);
}

/* A member of both the record being written (jobj) and the reference object; a string
 * json_string refuses (not UTF-8) is left out of both, as jobj_str leaves it out. */
typedef struct {
    jobj_t w;
    json_t *ref;
} twin_t;

static void put_str(twin_t *t, const char *k, const char *s)
{
    jobj_str(&t->w, k, s);
    json_t *v = json_string(s);
    if (v)
        json_object_set_new(t->ref, k, v);
}

static void put_int(twin_t *t, const char *k, json_int_t v)
{
    jobj_int(&t->w, k, v);
    json_object_set_new(t->ref, k, json_integer(v));
}

static void put_bool(twin_t *t, const char *k, bool v)
{
    jobj_bool(&t->w, k, v);
    json_object_set_new(t->ref, k, json_boolean(v));
}

static void put_json(twin_t *t, const char *k, json_t *v)
{
    jobj_json(&t->w, k, v);
    json_object_set(t->ref, k, v);
}

static int depth(const json_t *v)
{
    int d = 0;
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v)) {
        json_array_foreach(v, i, e) {
            int de = depth(e);
            d = d > de ? d : de;
        }
    } else if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, e) {
            int de = depth(e);
            d = d > de ? d : de;
        }
    }
    return json_is_array(v) || json_is_object(v) ? d + 1 : 0;
}

/* A value a client or a tool gave: it came nested at least two levels down in a message the
 * server parsed (params.clientInfo), so it nests at most 2046 levels itself. */
static json_t *parse_field(fuzz_in_t *in)
{
    size_t n;
    char *s = fuzz_field(in, 0, &n);
    json_t *v = s ? json_parse_buf(s, n, NULL, 0, NULL) : NULL;
    free(s);
    if (v && depth(v) > 2046) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

static void check_written(unsigned flags, fuzz_in_t *in)
{
    static const char *const K[4] = {NULL, "r", "h", "t"};
    int kind = (int)(flags & 3);
    bool owner = flags & 4, hs = flags & 8, lx = flags & 16, gw = flags & 32, unused = flags & 64;
    json_int_t c = (json_int_t)fuzz_u32(in), t = c + fuzz_u8(in), al = fuzz_u8(in) * 1000;
    json_int_t ns = fuzz_u8(in), rq = fuzz_u8(in);
    char *ver = fuzz_field(in, 0, NULL);
    char *auth = fuzz_field(in, 0, NULL);
    char *p = fuzz_field(in, 0, NULL);
    json_t *ci = parse_field(in), *cc = parse_field(in), *sub = parse_field(in);
    json_t *tail = parse_field(in);

    buf_t b = {0};
    twin_t tw = {.ref = json_object()};
    jobj_begin(&tw.w, &b);
    put_str(&tw, "v", ver ? ver : "2025-06-18");
    if (gw) {
        put_str(&tw, "gw", "upstream-a");
        put_json(&tw, "gi", ci ? ci : json_null());
        put_json(&tw, "gl", cc ? cc : json_null());
    } else {
        put_json(&tw, "ci", json_is_object(ci) ? ci : json_null());
        put_json(&tw, "cc", json_is_object(cc) ? cc : json_null());
        put_int(&tw, "ll", -1);
    }
    put_int(&tw, "c", c);
    put_int(&tw, "t", t);
    put_bool(&tw, "i", true);
    if (kind == STORED_SESSION && unused)
        put_bool(&tw, "u", false);
    put_str(&tw, "a", auth ? auth : "");
    put_int(&tw, "al", al);
    put_int(&tw, "ns", ns);
    put_int(&tw, "lb", 0);
    put_int(&tw, "rq", rq);
    if (lx)
        put_bool(&tw, "lx", true);
    if (!gw && json_is_object(sub) && json_object_size(sub))
        put_json(&tw, "sub", sub);
    if (owner)
        put_str(&tw, "p", p ? p : "");
    if (hs)
        put_bool(&tw, "hs", false);
    if (K[kind])
        put_str(&tw, "k", K[kind]);
    if (kind == STORED_RECORD || kind == STORED_TASK)
        put_json(&tw, kind == STORED_RECORD ? "rec" : "task",
                 json_is_object(tail) ? tail : json_null());
    jobj_end(&tw.w);

    /* the writer's text is jansson's object's, and reads back as it */
    size_t dl;
    char *dumped = json_dump_compact(tw.ref, &dl);
    FUZZ_CHECK(dl == b.len && memcmp(dumped, b.p, dl) == 0);
    free(dumped);
    json_t *back = json_parse_buf(b.p, b.len, NULL, 0, NULL);
    FUZZ_CHECK(back && json_equal(back, tw.ref));

    /* the loaders give what was written */
    FUZZ_CHECK(actor_meta_kind(b.p, b.len) == kind);
    char want[PRINCIPAL_NAME_MAX], got[PRINCIPAL_NAME_MAX];
    actor_owner_of(back, want, sizeof want);
    const char *wp = json_string_value(json_object_get(tw.ref, "p"));
    const char *wa = json_string_value(json_object_get(tw.ref, "a"));
    char expect[PRINCIPAL_NAME_MAX];
    if (wp)
        snprintf(expect, sizeof expect, "%s", wp);
    else if (wa && *wa)
        snprintf(expect, sizeof expect, "t:%s", wa);
    else
        snprintf(expect, sizeof expect, "a:");
    FUZZ_CHECK(strcmp(want, expect) == 0);
    bool holds;
    memset(got, 0x5a, sizeof got);
    FUZZ_CHECK(actor_meta_unit(b.p, b.len, got, sizeof got, &holds) == kind);
    FUZZ_CHECK(strcmp(got, want) == 0);
    FUZZ_CHECK(holds == !hs);
    check_raw(b.p, b.len);

    json_decref(back);
    json_decref(tw.ref);
    buf_free(&b);
    json_decref(ci);
    json_decref(cc);
    json_decref(sub);
    json_decref(tail);
    free(ver);
    free(auth);
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    unsigned flags = fuzz_u8(&in);
    if (flags & 0x80) {
        size_t len;
        char *v = fuzz_rest(&in, &len);
        check_raw(v, len);
        free(v);
        return 0;
    }
    check_written(flags, &in);
    return 0;
}
