/* libFuzzer harness: what a node reads about shard moves from disk and from other nodes: its
 * ownership records (src/store/shardrec.c) and an export's manifest, fetched from the releasing
 * node (src/store/manifest.c). One thread: libFuzzer's.
 *
 * The first input byte chooses the parser; the rest is the value, any bytes (a damaged record,
 * a hostile or truncated manifest). Neither may crash; what either accepts encodes and parses
 * back to the same thing (a record's fields; a manifest's shard, epoch, nodes, keys and every
 * family's key count, file, size and SHA-256), and an accepted manifest names only the files
 * `<family>.sst` of its own families with keys. */
#include "fuzz.h"

#include "store/manifest.h"
#include "store/shardrec.h"

static void records(const uint8_t *data, size_t size)
{
    shardrec_t r;
    if (shardrec_decode((const char *)data, size, &r) != 0)
        return;
    char text[256];
    size_t n = shardrec_encode(&r, text, sizeof text);
    FUZZ_CHECK(n > 0);
    shardrec_t back;
    FUZZ_CHECK(shardrec_decode(text, n, &back) == 0);
    FUZZ_CHECK(back.state == r.state && back.epoch == r.epoch && back.declined == r.declined &&
               back.export_kept == r.export_kept && strcmp(back.peer, r.peer) == 0);
}

static void manifests(const uint8_t *data, size_t size)
{
    manifest_t m;
    char why[300];
    if (manifest_parse((const char *)data, size, &m, why, sizeof why) != 0) {
        FUZZ_CHECK(why[0] != '\0');
        return;
    }
    uint64_t sum = 0;
    for (int cf = 0; cf < CF__COUNT; cf++) {
        sum += m.fam[cf].keys;
        FUZZ_CHECK(m.fam[cf].file == (m.fam[cf].keys > 0));
    }
    FUZZ_CHECK(sum == m.keys);
    json_t *j = manifest_build(&m);
    char *text = json_dumps(j, JSON_COMPACT);
    manifest_t back;
    FUZZ_CHECK(manifest_parse(text, strlen(text), &back, why, sizeof why) == 0);
    FUZZ_CHECK(back.shard == m.shard && back.epoch == m.epoch && back.keys == m.keys &&
               strcmp(back.from, m.from) == 0 && strcmp(back.to, m.to) == 0 &&
               memcmp(back.fam, m.fam, sizeof m.fam) == 0 && json_equal(back.moved, m.moved));
    free(text);
    json_decref(j);
    manifest_clear(&back);
    manifest_clear(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        manifests(data + 1, size - 1);
    else
        records(data + 1, size - 1);
    return 0;
}
