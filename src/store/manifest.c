/* Threads: any thread. */
/* The manifest of a shard export (see manifest.h). Any thread. */
#include "store/manifest.h"

#include "core/cluster.h"
#include "core/shard.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void hex_of(const unsigned char *b, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = '\0';
}

json_t *manifest_build(const manifest_t *m)
{
    char sh[SHARD_HEX + 1] = {0};
    shard_put(sh, m->shard);
    json_t *fams = json_array();
    for (int cf = 0; cf < CF__COUNT; cf++) {
        const manifest_family_t *f = &m->fam[cf];
        json_t *o = json_pack("{s:s,s:I}", "cf", store_cf_name((store_cf_t)cf), "keys",
                              (json_int_t)f->keys);
        if (f->file) {
            char name[64], hex[2 * SHA256_LEN + 1];
            snprintf(name, sizeof name, "%s.sst", store_cf_name((store_cf_t)cf));
            hex_of(f->sha256, SHA256_LEN, hex);
            json_object_set_new(o, "file", json_string(name));
            json_object_set_new(o, "bytes", json_integer((json_int_t)f->bytes));
            json_object_set_new(o, "sha256", json_string(hex));
        }
        json_array_append_new(fams, o);
    }
    return json_pack("{s:i,s:s,s:I,s:s,s:s,s:I,s:O,s:o}", "format", MANIFEST_FORMAT, "shard", sh,
                     "epoch", (json_int_t)m->epoch, "from", m->from, "to", m->to, "keys",
                     (json_int_t)m->keys, "moved", m->moved ? m->moved : json_object(), "families",
                     fams);
}

static int fail(manifest_t *m, char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "the export's manifest is not valid: %s", what);
    manifest_clear(m);
    return -EBADMSG;
}

static bool count_ok(const json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0;
}

static int read_name(const json_t *v, char *out)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != json_string_length(v) || !cluster_name_ok(s))
        return -1;
    strcpy(out, s);
    return 0;
}

int manifest_parse(const char *text, size_t len, manifest_t *m, char *why, size_t whylen)
{
    memset(m, 0, sizeof *m);
    json_error_t e;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
    if (!json_is_object(o)) {
        json_decref(o);
        return fail(m, why, whylen, "not a JSON object");
    }
    int rc = 0;
    const char *sh = json_string_value(json_object_get(o, "shard"));
    json_t *ep = json_object_get(o, "epoch"), *keys = json_object_get(o, "keys");
    json_t *moved = json_object_get(o, "moved"), *fams = json_object_get(o, "families");
    if (json_integer_value(json_object_get(o, "format")) != MANIFEST_FORMAT ||
        !json_is_integer(json_object_get(o, "format"))) {
        rc = fail(m, why, whylen, "format is not 2");
        goto out;
    }
    m->shard = sh && strlen(sh) == SHARD_HEX ? shard_of(sh) : -1;
    if (m->shard < 0 || !json_is_integer(ep) || json_integer_value(ep) < 1 ||
        json_integer_value(ep) > SHARDREC_EPOCH_MAX || !count_ok(keys) || !json_is_object(moved) ||
        !json_is_array(fams) || read_name(json_object_get(o, "from"), m->from) != 0 ||
        read_name(json_object_get(o, "to"), m->to) != 0) {
        rc = fail(m, why, whylen,
                  "shard, epoch, from, to, keys, moved or families missing or wrong");
        goto out;
    }
    m->epoch = (uint32_t)json_integer_value(ep);
    m->keys = (uint64_t)json_integer_value(keys);
    bool seen[CF__COUNT] = {0};
    uint64_t sum = 0;
    size_t i;
    json_t *f;
    json_array_foreach(fams, i, f) {
        const char *cf = json_string_value(json_object_get(f, "cf"));
        int idx = -1;
        for (int c = 0; cf && c < CF__COUNT; c++)
            if (strcmp(cf, store_cf_name((store_cf_t)c)) == 0)
                idx = c;
        json_t *k = json_object_get(f, "keys");
        if (idx < 0 || seen[idx] || !count_ok(k)) {
            rc = fail(m, why, whylen, "a family is unknown, listed twice or has no key count");
            goto out;
        }
        seen[idx] = true;
        manifest_family_t *mf = &m->fam[idx];
        mf->keys = (uint64_t)json_integer_value(k);
        sum += mf->keys;
        json_t *file = json_object_get(f, "file");
        if (mf->keys == 0) {
            if (file) {
                rc = fail(m, why, whylen, "a family without keys names a file");
                goto out;
            }
            continue;
        }
        char want[64];
        snprintf(want, sizeof want, "%s.sst", cf);
        const char *hex = json_string_value(json_object_get(f, "sha256"));
        json_t *bytes = json_object_get(f, "bytes");
        if (!json_is_string(file) || strcmp(json_string_value(file), want) != 0 ||
            !count_ok(bytes) || !hex || strlen(hex) != 2 * SHA256_LEN) {
            rc = fail(m, why, whylen, "a family with keys lacks its file, bytes or sha256");
            goto out;
        }
        for (int b = 0; b < SHA256_LEN; b++) {
            int hi = hex_digit(hex[2 * b]), lo = hex_digit(hex[2 * b + 1]);
            if (hi < 0 || lo < 0) {
                rc = fail(m, why, whylen, "a sha256 is not lowercase hex");
                goto out;
            }
            mf->sha256[b] = (unsigned char)(hi << 4 | lo);
        }
        mf->file = true;
        mf->bytes = (uint64_t)json_integer_value(bytes);
    }
    for (int c = 0; c < CF__COUNT; c++) {
        if (!seen[c]) {
            char msg[80];
            snprintf(msg, sizeof msg, "the family %s is not listed", store_cf_name((store_cf_t)c));
            rc = fail(m, why, whylen, msg);
            goto out;
        }
    }
    if (sum != m->keys) {
        rc = fail(m, why, whylen, "the families' keys do not add up to keys");
        goto out;
    }
    m->moved = json_incref(moved);
out:
    json_decref(o);
    return rc;
}

uint64_t manifest_bytes(const manifest_t *m)
{
    uint64_t bytes = 0;
    for (int cf = 0; cf < CF__COUNT; cf++)
        bytes += m->fam[cf].bytes;
    return bytes;
}

void manifest_clear(manifest_t *m)
{
    json_decref(m->moved);
    memset(m, 0, sizeof *m);
    m->shard = -1;
}

int manifest_file_digest(const char *path, uint64_t *bytes, unsigned char sha[SHA256_LEN])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    sha256_t c;
    sha256_init(&c);
    *bytes = 0;
    enum { BUF = 1 << 16 };
    unsigned char *buf = xmalloc(BUF);
    for (;;) {
        ssize_t n = read(fd, buf, BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = -errno;
            sha256_discard(&c);
            free(buf);
            close(fd);
            return e;
        }
        if (n == 0)
            break;
        sha256_update(&c, buf, (size_t)n);
        *bytes += (uint64_t)n;
    }
    free(buf);
    close(fd);
    sha256_final(&c, sha);
    return 0;
}
