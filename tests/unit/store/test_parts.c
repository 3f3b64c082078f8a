/* Unit tests: a partitioned store (store_open_parts) on real RocksDB databases in a temporary
 * directory: each record lands in its id's partition (checked by opening each partition's
 * database directly afterwards), the node's records in partition 0; reads and merged iterators
 * see every partition in key order; the count recorded at creation wins over a later request,
 * and a directory made before partitions stays one; a shard exported from a partitioned store
 * is ingested into a store with another count; every partition keeps one store's memtable
 * arena blocks and small file buffers. */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ftw.h>
#include <glob.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_damage.h"

#include "core/util.h"
#include "store/keys.h"
#include "store/sessionrec.h"
#include "store/store.h"

#define NPARTS 4
#define NIDS 48

/* A session id in shard `shard` (3 hex), the rest from i. */
static void make_id(char *out, int shard, int i)
{
    snprintf(out, SESSION_ID_LEN + 1, "%03x%029d", shard, i);
}

static store_t *open_parts(const char *dir, int *n)
{
    char err[256];
    store_t *s = store_open_parts(dir, false, 0, n, err, sizeof err);
    if (!s)
        fprintf(stderr, "%s\n", err);
    return s;
}

static char *mkdir_tmp(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/mcpd-parts-XXXXXX");
    return mkdtemp(buf);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void rm_tree(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *const plain_families[CF__COUNT + 1] = {"default", "sessions", "streams",
                                                          "events",  "reqmap",   "state",
                                                          "alarms",  "expiry"};

/* The database at path opened directly with one store's families (as a binary from before
 * partitions would), read-only or not: NULL with *err set when RocksDB refuses. */
static rocksdb_t *open_plain(const char *path, bool read_only, rocksdb_options_t *o,
                             rocksdb_column_family_handle_t *h[CF__COUNT + 1], char **err)
{
    const rocksdb_options_t *cfo[CF__COUNT + 1];
    for (int i = 0; i <= CF__COUNT; i++)
        cfo[i] = o;
    if (read_only)
        return rocksdb_open_for_read_only_column_families(o, path, CF__COUNT + 1, plain_families,
                                                          cfo, h, 0, err);
    return rocksdb_open_column_families(o, path, CF__COUNT + 1, plain_families, cfo, h, err);
}

/* Partition p's database directory in the store at dir (partition 0 is dir itself). */
static void part_path(char *path, size_t len, const char *dir, int p)
{
    if (p == 0)
        snprintf(path, len, "%s", dir);
    else
        snprintf(path, len, "%s/part-%d", dir, p);
}

/* Whether partition p's database (opened directly, read-only) holds key k in family cf. */
static bool part_has(const char *dir, int p, store_cf_t cf, const void *k, size_t kl)
{
    char path[256];
    part_path(path, sizeof path, dir, p);
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_column_family_handle_t *h[CF__COUNT + 1];
    char *err = NULL;
    rocksdb_t *db = open_plain(path, true, o, h, &err);
    assert_null(err);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    size_t vl = 0;
    char *v = rocksdb_get_cf(db, ro, h[cf + 1], k, kl, &vl, &err);
    assert_null(err);
    bool found = v != NULL;
    rocksdb_free(v);
    rocksdb_readoptions_destroy(ro);
    for (int i = 0; i <= CF__COUNT; i++)
        rocksdb_column_family_handle_destroy(h[i]);
    rocksdb_close(db);
    rocksdb_options_destroy(o);
    return found;
}

/* A fresh directory (from mkdir_tmp) with a store of *n partitions in it. */
static store_t *fresh_store(char *dir, size_t len, int *n)
{
    int want = *n;
    assert_non_null(mkdir_tmp(dir, len));
    store_t *s = open_parts(dir, n);
    assert_non_null(s);
    assert_int_equal(*n, want);
    return s;
}

/* NIDS sessions over shards 0..NIDS-1 (each partition gets some), each with a session record
 * and an alarm due at 1000 + (NIDS - i) (so due order is not partition order), and one node
 * record; all in one batch. */
static void put_all(store_t *s)
{
    store_batch_t *b = store_batch_new(s);
    for (int i = 0; i < NIDS; i++) {
        char sid[SESSION_ID_LEN + 1];
        make_id(sid, i * 37 % 4096, i);
        store_batch_put(b, CF_SESSIONS, sid, SESSION_ID_LEN, "{}", 2);
        sessionrec_put_alarm(b, 1000 + (NIDS - i), sid);
    }
    store_batch_put(b, CF_NODE, "node-key", 8, "n", 1);
    assert_int_equal(store_batch_count(b), 2 * NIDS + 1);
    assert_int_equal(store_commit(s, b), 0);
    assert_int_equal(store_batch_count(b), 0);
    store_batch_free(b);
}

static void records_land_in_their_partition(void **state)
{
    (void)state;
    char dir[64];
    int n = NPARTS;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    assert_int_equal(n, NPARTS);
    assert_int_equal(store_partitions(s), NPARTS);
    put_all(s);
    /* every record reads back through the store */
    for (int i = 0; i < NIDS; i++) {
        char sid[SESSION_ID_LEN + 1];
        make_id(sid, i * 37 % 4096, i);
        assert_int_equal(store_exists(s, CF_SESSIONS, sid, SESSION_ID_LEN), 1);
    }
    assert_int_equal(store_exists(s, CF_NODE, "node-key", 8), 1);
    store_close(s);
    /* and is in its partition's database, and in no other */
    int per_part[NPARTS] = {0};
    for (int i = 0; i < NIDS; i++) {
        char sid[SESSION_ID_LEN + 1];
        make_id(sid, i * 37 % 4096, i);
        int want = (i * 37 % 4096) % NPARTS;
        assert_int_equal(store_part_of_id(sid, SESSION_ID_LEN, NPARTS), want);
        unsigned char ak[KEY_ALARM_LEN];
        key_alarm(ak, 1000 + (NIDS - i), sid);
        for (int p = 0; p < NPARTS; p++) {
            assert_int_equal(part_has(dir, p, CF_SESSIONS, sid, SESSION_ID_LEN), p == want);
            assert_int_equal(part_has(dir, p, CF_ALARMS, ak, sizeof ak), p == want);
        }
        per_part[want]++;
    }
    for (int p = 0; p < NPARTS; p++) {
        assert_true(per_part[p] > 0);
        assert_int_equal(part_has(dir, p, CF_NODE, "node-key", 8), p == 0);
    }
    rm_tree(dir);
}

static void collect_alarm(void *arg, int64_t due, const char *sid)
{
    (void)sid;
    int64_t *seen = arg;
    assert_true(due > seen[1]); /* ascending over every partition */
    seen[1] = due;
    seen[0]++;
}

/* A merged scan ends at the first partition that fails a read, as one partition's scan does:
 * every key it returned sorts before what that partition left unread. The alarm scheduler
 * retries from the last due it dispatched; before, the merge went on with the other partitions,
 * so that due lay past the failed partition's alarms, and the retry never ran them (a CI run:
 * 86 sessions left past their TTL with --store-partitions 3). */
static void a_merged_scan_ends_at_a_partitions_read_error(void **state)
{
    (void)state;
    char dir[64], p1[256];
    int n = NPARTS;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    put_all(s);
    assert_int_equal(store_flush(s), 0);
    store_close(s);
    part_path(p1, sizeof p1, dir, 1);
    damage_family(p1, "alarms");
    s = open_parts(dir, &n);
    assert_non_null(s);
    int64_t first_unread = INT64_MAX; /* partition 1's earliest alarm */
    for (int i = 0; i < NIDS; i++)
        if ((i * 37 % 4096) % NPARTS == 1 && 1000 + (NIDS - i) < first_unread)
            first_unread = 1000 + (NIDS - i);
    int64_t seen[2] = {0, 0};
    assert_int_equal(sessionrec_scan_alarms(s, 0, 5000, collect_alarm, seen), -EIO);
    assert_true(seen[1] < first_unread); /* before: 1048, the last of all */
    /* a wide scan of the damaged family ends there too */
    store_iter_t *it = store_iter_new_scan(s, CF_ALARMS);
    int count = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
        count++;
    assert_int_equal(store_iter_error(it), -EIO);
    store_iter_free(it);
    assert_true(count < NIDS);
    store_close(s);
    rm_tree(dir);
}

static void collect_due(void *arg, int64_t due, const char *sid)
{
    (void)sid;
    int64_t *got = arg; /* got[0]: how many; then the dues */
    got[1 + got[0]++] = due;
}

/* The same when the failed partition had returned keys first (a block in the middle of its
 * file): the merge ends before any key past the first that partition could not read. */
static void a_merged_scan_ends_where_a_partition_fails_mid_way(void **state)
{
    (void)state;
    enum { PER = 1500 };
    char dir[64], p1[256];
    int n = 2;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    store_batch_t *b = store_batch_new(s);
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < PER; i++) {
            char sid[SESSION_ID_LEN + 1];
            make_id(sid, p, i); /* shard p: partition p; dues interleaved */
            sessionrec_put_alarm(b, 1000 + 2 * i + p, sid);
        }
    }
    assert_int_equal(store_commit(s, b), 0);
    store_batch_free(b);
    assert_int_equal(store_flush(s), 0);
    store_close(s);
    part_path(p1, sizeof p1, dir, 1);
    damage_family_at(p1, "alarms", true);
    s = open_parts(dir, &n);
    assert_non_null(s);
    static int64_t got[1 + 2 * PER];
    got[0] = 0;
    assert_int_equal(sessionrec_scan_alarms(s, 0, 1000000, collect_due, got), -EIO);
    int64_t from1 = 0;
    for (int64_t i = 0; i < got[0]; i++)
        from1 += got[1 + i] % 2 == 1;
    assert_true(from1 > 0);                      /* partition 1 failed mid-way, not at the seek */
    int64_t first_unread = 1000 + 2 * from1 + 1; /* partition 1's next due */
    assert_true(got[got[0]] < first_unread);     /* before: 3998, the last of all */
    store_close(s);
    rm_tree(dir);
}

static void iterators_merge_the_partitions(void **state)
{
    (void)state;
    char dir[64];
    int n = NPARTS;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    put_all(s);
    /* the alarms by due time: the earliest, then every one in order */
    assert_int_equal(sessionrec_first_alarm(s, 0), 1001);
    assert_int_equal(sessionrec_first_alarm(s, 1010), 1010);
    int64_t seen[2] = {0, 0};
    assert_int_equal(sessionrec_scan_alarms(s, 0, 5000, collect_alarm, seen), NIDS);
    assert_int_equal(seen[0], NIDS);
    assert_int_equal(sessionrec_count_alarms(s, NULL), NIDS);
    /* a whole family, scanned: every key once, in key order */
    store_iter_t *it = store_iter_new_scan(s, CF_SESSIONS);
    int count = 0;
    char prev[SESSION_ID_LEN + 1] = "";
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
        size_t kl;
        const unsigned char *k = store_iter_key(it, &kl);
        assert_int_equal(kl, SESSION_ID_LEN);
        assert_true(memcmp(prev, k, kl) < 0);
        memcpy(prev, k, kl);
        count++;
    }
    assert_int_equal(count, NIDS);
    /* the last of all, and nothing after it */
    store_iter_seek_last(it);
    assert_true(store_iter_valid(it));
    size_t kl;
    assert_memory_equal(store_iter_key(it, &kl), prev, SESSION_ID_LEN);
    store_iter_next(it);
    assert_false(store_iter_valid(it));
    store_iter_free(it);
    /* a range that starts with a shard reads that shard's partition: shard 025 (i = 1) */
    char sid[SESSION_ID_LEN + 1];
    make_id(sid, 37, 1);
    it = store_iter_new(s, CF_SESSIONS, "025", 3, "026", 3);
    store_iter_seek_first(it);
    assert_true(store_iter_valid(it));
    assert_memory_equal(store_iter_key(it, &kl), sid, SESSION_ID_LEN);
    store_iter_next(it);
    assert_false(store_iter_valid(it));
    store_iter_free(it);
    assert_int_equal(store_count_keys(s, CF_SESSIONS), NIDS);
    store_close(s);
    rm_tree(dir);
}

static void the_recorded_count_wins(void **state)
{
    (void)state;
    char dir[64];
    int n = 3;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    put_all(s);
    store_close(s);
    n = 8; /* asked again with another count: the records stay where they are */
    s = open_parts(dir, &n);
    assert_non_null(s);
    assert_int_equal(n, 3);
    assert_int_equal(store_count_keys(s, CF_SESSIONS), NIDS);
    store_close(s);
    n = 0;
    s = open_parts(dir, &n);
    assert_int_equal(n, 3);
    store_close(s);
    rm_tree(dir);

    /* a directory made with one stays one */
    assert_non_null(mkdir_tmp(dir, sizeof dir));
    n = 1;
    s = open_parts(dir, &n);
    put_all(s);
    store_close(s);
    n = 4;
    s = open_parts(dir, &n);
    assert_int_equal(n, 1);
    assert_int_equal(store_count_keys(s, CF_SESSIONS), NIDS);
    store_close(s);
    /* so does one made before partitions (a database, no record) */
    char rec[128];
    snprintf(rec, sizeof rec, "%s/PARTITIONS", dir);
    assert_int_equal(unlink(rec), 0);
    n = 4;
    s = open_parts(dir, &n);
    assert_int_equal(n, 1);
    assert_int_equal(store_count_keys(s, CF_SESSIONS), NIDS);
    store_close(s);
    assert_int_equal(access(rec, F_OK), 0); /* recorded now */
    rm_tree(dir);

    /* partitions without their record: refused, not opened as one */
    assert_non_null(mkdir_tmp(dir, sizeof dir));
    n = 2;
    s = open_parts(dir, &n);
    store_close(s);
    snprintf(rec, sizeof rec, "%s/PARTITIONS", dir);
    assert_int_equal(unlink(rec), 0);
    n = 0;
    char err[256];
    assert_null(store_open_parts(dir, false, 0, &n, err, sizeof err));
    assert_non_null(strstr(err, "PARTITIONS"));
    rm_tree(dir);
}

/* A shard of a 4-partition store goes to a 1- and a 3-partition store: all its keys arrive. */
static void a_shard_moves_between_counts(void **state)
{
    (void)state;
    char dir[64], out[128], other[128];
    int n = NPARTS;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    put_all(s);
    const char *prefix = "025"; /* i = 1: shard 37, partition 1 of 4 */
    snprintf(out, sizeof out, "%s/export", dir);
    assert_int_equal(mkdir(out, 0700), 0);
    uint64_t keys[CF__COUNT], got[CF__COUNT];
    char why[256];
    assert_int_equal(store_export_prefix(s, prefix, 3, out, keys, why, sizeof why), 0);
    assert_int_equal(keys[CF_SESSIONS], 1);
    assert_int_equal(keys[CF_ALARMS], 1);
    store_count_prefix(s, prefix, 3, got);
    assert_memory_equal(keys, got, sizeof keys);
    bool present[CF__COUNT];
    for (int cf = 0; cf < CF__COUNT; cf++)
        present[cf] = keys[cf] > 0;
    for (int count = 1; count <= 3; count += 2) {
        snprintf(other, sizeof other, "%s/other%d", dir, count);
        int m = count;
        store_t *s2 = open_parts(other, &m);
        assert_non_null(s2);
        assert_int_equal(store_ingest_dir(s2, prefix, 3, out, present, false, why, sizeof why), 0);
        store_count_prefix(s2, prefix, 3, got);
        assert_memory_equal(keys, got, sizeof keys);
        char sid[SESSION_ID_LEN + 1];
        make_id(sid, 37, 1);
        assert_int_equal(store_exists(s2, CF_SESSIONS, sid, SESSION_ID_LEN), 1);
        assert_int_equal(sessionrec_first_alarm(s2, 0), 1000 + NIDS - 1);
        store_close(s2);
        if (count == 3)
            assert_true(part_has(other, 37 % 3, CF_SESSIONS, sid, SESSION_ID_LEN));
    }
    /* and leaves: deleted from its partition, the others untouched */
    assert_int_equal(store_delete_prefix(s, prefix, 3), 0);
    store_count_prefix(s, prefix, 3, got);
    for (int cf = 0; cf < CF__COUNT; cf++)
        assert_int_equal(got[cf], 0);
    assert_int_equal(store_count_keys(s, CF_SESSIONS), NIDS - 1);
    assert_int_equal(store_count_keys(s, CF_ALARMS), NIDS - 1);
    store_close(s);
    rm_tree(dir);
}

/* The free bytes the store's guard sees in the guard test (store_set_free_bytes_source). */
static _Atomic int64_t fake_free;

static int64_t fake_free_bytes(const char *dir)
{
    (void)dir;
    return fake_free;
}

#define FLOOR (100LL << 20)

/* The free-space guard asked once for a whole batch: one that writes to two partitions and
 * passes for the first partition's part but not for all of it stores nothing. The guard sees
 * 1 MiB above its floor: the first part is 16 KiB, the second 2 MiB. */
static void a_batch_the_guard_refuses_stores_nothing(void **state)
{
    (void)state;
    char dir[64], err[256];
    assert_non_null(mkdir_tmp(dir, sizeof dir));
    fake_free = FLOOR + (1 << 20);
    store_set_free_bytes_source(fake_free_bytes);
    int n = 2;
    store_t *s = store_open_parts(dir, false, FLOOR, &n, err, sizeof err);
    assert_non_null(s);
    char a[SESSION_ID_LEN + 1], b[SESSION_ID_LEN + 1];
    make_id(a, 0x000, 1); /* partition 0 */
    make_id(b, 0x001, 2); /* partition 1 */
    size_t big = 2u << 20;
    char *value = calloc(1, big);
    store_batch_t *batch = store_batch_new(s);
    store_batch_put(batch, CF_SESSIONS, a, SESSION_ID_LEN, value, 16 << 10);
    store_batch_put(batch, CF_SESSIONS, b, SESSION_ID_LEN, value, big);
    int rc = store_commit(s, batch);
    assert_int_equal(store_batch_count(batch), 0);
    bool a_stored = store_exists(s, CF_SESSIONS, a, SESSION_ID_LEN) == 1;
    bool b_stored = store_exists(s, CF_SESSIONS, b, SESSION_ID_LEN) == 1;
    bool writable = store_writable(s);
    /* the space comes back: the probe heals the store (a refusing one is left unclosed) */
    fake_free = 1LL << 40;
    for (int i = 0; i < 100 && !store_writable(s); i++)
        usleep(100 * 1000);
    bool healed = store_writable(s);
    store_batch_free(batch);
    free(value);
    store_close(s);
    store_set_free_bytes_source(NULL);
    rm_tree(dir);
    assert_int_equal(rc, -ENOSPC);
    assert_false(a_stored);
    assert_false(b_stored);
    assert_false(writable);
    assert_true(healed);
}

/* A recorded partition that is gone is refused, not made again empty; one still being made
 * when the record says so is finished. */
static void a_missing_partition_is_refused(void **state)
{
    (void)state;
    char dir[64], part[128], rec[128], err[256];
    int n = 3;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    put_all(s);
    store_close(s);
    part_path(part, sizeof part, dir, 2);
    rm_tree(part);
    n = 0;
    assert_null(store_open_parts(dir, false, 0, &n, err, sizeof err));
    assert_non_null(strstr(err, "partition 2 of 3"));
    assert_int_not_equal(access(part, F_OK), 0);
    /* a crash while the partitions were being made: the record says so, and the next open
     * makes the rest */
    snprintf(rec, sizeof rec, "%s/PARTITIONS", dir);
    FILE *f = fopen(rec, "w");
    fputs("3 creating\n", f);
    fclose(f);
    n = 0;
    s = open_parts(dir, &n);
    assert_non_null(s);
    assert_int_equal(n, 3);
    store_close(s);
    f = fopen(rec, "r");
    char text[32] = "";
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    assert_string_equal(text, "3\n");
    /* a record that is not one */
    f = fopen(rec, "w");
    fputs("3x\n", f);
    fclose(f);
    assert_null(store_open_parts(dir, false, 0, &n, err, sizeof err));
    assert_non_null(strstr(err, "does not hold a partition count"));
    rm_tree(dir);
}

/* Partition 0 of a partitioned store cannot be opened by a binary that knows only the
 * families of one store (it would serve partition 0's shards alone). */
static void partition_zero_is_marked(void **state)
{
    (void)state;
    char dir[64];
    int n = 2;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    store_close(s);
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_column_family_handle_t *h[CF__COUNT + 1];
    char *err = NULL;
    rocksdb_t *db = open_plain(dir, false, o, h, &err);
    assert_null(db);
    assert_non_null(err);
    rocksdb_free(err);
    rocksdb_options_destroy(o);
    rm_tree(dir);
}

/* Ranges past one shard read and delete in every partition. */
static void wide_ranges_span_the_partitions(void **state)
{
    (void)state;
    char dir[64];
    int n = NPARTS;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    put_all(s);
    /* from shard 000 up: a bound of 3 bytes that starts in one shard and ends far past it */
    store_iter_t *it = store_iter_new(s, CF_SESSIONS, "000", 3, "fff", 3);
    int count = 0;
    for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it))
        count++;
    store_iter_free(it);
    assert_int_equal(count, NIDS);
    store_batch_t *b = store_batch_new(s);
    store_batch_delete_range(b, CF_SESSIONS, "000", 3, "fff", 3);
    assert_int_equal(store_commit(s, b), 0);
    store_batch_free(b);
    assert_int_equal(store_count_keys(s, CF_SESSIONS), 0);
    assert_int_equal(store_count_keys(s, CF_ALARMS), NIDS);
    store_close(s);
    rm_tree(dir);
}

/* One store at a time in a directory: the partition record is read and written under its lock. */
static void a_directory_in_use_is_refused(void **state)
{
    (void)state;
    char dir[64], err[256];
    int n = 2;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    n = 3;
    assert_null(store_open_parts(dir, false, 0, &n, err, sizeof err));
    assert_non_null(strstr(err, "another process uses it"));
    store_close(s);
    n = 0;
    s = open_parts(dir, &n); /* free again once closed */
    assert_non_null(s);
    assert_int_equal(n, 2);
    store_close(s);
    rm_tree(dir);
}

/* In the newest OPTIONS file of a partition's database: how many "  key=..." lines it has, and
 * how many of them say value. */
static void options_lines(const char *path, const char *key, const char *value, int *lines,
                          int *matching)
{
    char pattern[256], line[512];
    snprintf(pattern, sizeof pattern, "%s/OPTIONS-*", path);
    glob_t g;
    assert_int_equal(glob(pattern, 0, NULL, &g), 0);
    size_t newest = 0;
    for (size_t i = 1; i < g.gl_pathc; i++)
        if (strtoul(strrchr(g.gl_pathv[i], '-') + 1, NULL, 10) >
            strtoul(strrchr(g.gl_pathv[newest], '-') + 1, NULL, 10))
            newest = i;
    FILE *f = fopen(g.gl_pathv[newest], "r");
    globfree(&g);
    assert_non_null(f);
    size_t kl = strlen(key);
    *lines = *matching = 0;
    while (fgets(line, sizeof line, f)) {
        const char *t = line + strspn(line, " ");
        if (strncmp(t, key, kl) != 0 || t[kl] != '=')
            continue;
        (*lines)++;
        *matching += strncmp(t + kl + 1, value, strlen(value)) == 0 &&
                     (t[kl + 1 + strlen(value)] == '\n' || t[kl + 1 + strlen(value)] == '\0');
    }
    fclose(f);
}

/* At 8 partitions every partition's memtables take arena blocks of 512 KiB, the mmap threshold
 * (store_arena_block_bytes; RocksDB's default there is 256 KiB), and its file writers' buffers
 * stay small: the memory a partition adds (docs/PERFORMANCE.md). */
static void partitions_keep_one_stores_buffers(void **state)
{
    (void)state;
    char dir[64], path[128];
    int n = 8;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    store_close(s);
    for (int p = 0; p < n; p++) {
        part_path(path, sizeof path, dir, p);
        int lines, matching;
        options_lines(path, "arena_block_size", "524288", &lines, &matching);
        assert_true(lines >= CF__COUNT + 1); /* one a family */
        assert_int_equal(matching, lines);
        options_lines(path, "writable_file_max_buffer_size", "65536", &lines, &matching);
        assert_int_equal(lines, 1);
        assert_int_equal(matching, 1);
        /* a MANIFEST is rewritten at 8 MiB, not RocksDB's 1 GiB */
        options_lines(path, "max_manifest_file_size", "8388608", &lines, &matching);
        assert_int_equal(lines, 1);
        assert_int_equal(matching, 1);
    }
    rm_tree(dir);
}

/* The most partitions a store may have open and take writes into every one of them (each
 * memtable's write buffer is smallest there: 256 KiB, its arena blocks RocksDB's 32 KiB; with
 * 1 MiB blocks an empty memtable was due for a flush, which Debian's RocksDB, built with its
 * assertions, stopped at the open). */
static void the_most_partitions_work(void **state)
{
    (void)state;
    char dir[64];
    int n = STORE_PARTITIONS_MAX;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    store_batch_t *b = store_batch_new(s);
    for (int i = 0; i < 4 * STORE_PARTITIONS_MAX; i++) {
        char sid[SESSION_ID_LEN + 1];
        make_id(sid, i % 4096, i);
        store_batch_put(b, CF_SESSIONS, sid, SESSION_ID_LEN, "{}", 2);
    }
    assert_int_equal(store_commit(s, b), 0);
    store_batch_free(b);
    assert_int_equal(store_count_keys(s, CF_SESSIONS), 4 * STORE_PARTITIONS_MAX);
    store_close(s);
    char path[128];
    part_path(path, sizeof path, dir, STORE_PARTITIONS_MAX - 1);
    int lines, matching;
    options_lines(path, "arena_block_size", "32768", &lines, &matching);
    assert_true(lines >= CF__COUNT + 1);
    assert_int_equal(matching, lines);
    rm_tree(dir);
}

/* store_background_work counts a flush while it runs, in any partition, and is 0 once the
 * flushes have ended (worker_trim.c hands memory back then). 2 MB a partition: the flush
 * writes a table of that size, milliseconds after the switch of its memtable that
 * store_flush_async makes before it returns. */
static void background_work_is_counted_until_it_ends(void **state)
{
    char dir[64], val[1024];
    int n = 3;
    store_t *s = fresh_store(dir, sizeof dir, &n);
    assert_int_equal(store_background_work(s), 0);
    memset(val, 'v', sizeof val);
    store_batch_t *b = store_batch_new(s);
    for (int i = 0; i < 6000; i++) {
        char sid[SESSION_ID_LEN + 1];
        make_id(sid, i * 37 % 4096, i);
        store_batch_put(b, CF_SESSIONS, sid, SESSION_ID_LEN, val, sizeof val);
    }
    assert_int_equal(store_commit(s, b), 0);
    store_batch_free(b);
    assert_int_equal(store_background_work(s), 0); /* written, not yet flushing */
    store_flush_async(s, CF_SESSIONS);
    assert_true(store_background_work(s) >= 1);
    for (int i = 0; i < 200 && store_background_work(s) > 0; i++)
        usleep(50 * 1000);
    assert_int_equal(store_background_work(s), 0);
    store_close(s);
    rm_tree(dir);
}

/* The memtable sizes at every partition count, against RocksDB 7.8's flush rules: an empty
 * memtable (2 KiB of inline block) is not due yet (due once what its arena holds plus 0.4
 * blocks reaches the write buffer); every family's first block (partition 0: the 7 store
 * families, "default" and the marker), each charged with a page of mmap overhead, stays below
 * seven eighths of the partition's budget (four write buffers), where RocksDB flushes its
 * oldest memtable; and where a quarter of the write buffer reaches the mmap threshold, the
 * blocks are mapped. */
static void memtable_sizes_hold_for_every_count(void **state)
{
    (void)state;
    for (int n = 1; n <= STORE_PARTITIONS_MAX; n++) {
        size_t wb = store_write_buffer_bytes(n);
        size_t block = store_arena_block_bytes(n);
        if (!block) { /* RocksDB's default, rounded up to 4 KiB */
            block = wb / 8 < (1u << 20) ? wb / 8 : (1u << 20);
            block = (block + 4095) / 4096 * 4096;
        }
        assert_true(2048 + block * 2 / 5 < wb);
        assert_true((CF__COUNT + 2) * (block + 4096 + 2048) < wb * 4 / 8 * 7);
        if (wb / 4 >= MALLOC_MMAP_THRESHOLD)
            assert_true(block >= MALLOC_MMAP_THRESHOLD);
        /* the MANIFESTs together stay within 64 MiB (1 MiB each at the most partitions) */
        assert_true(store_manifest_max_bytes(n) * (size_t)n <= (64u << 20));
        assert_true(store_manifest_max_bytes(n) >= (1u << 20));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(records_land_in_their_partition),
        cmocka_unit_test(iterators_merge_the_partitions),
        cmocka_unit_test(a_merged_scan_ends_at_a_partitions_read_error),
        cmocka_unit_test(a_merged_scan_ends_where_a_partition_fails_mid_way),
        cmocka_unit_test(the_recorded_count_wins),
        cmocka_unit_test(a_shard_moves_between_counts),
        cmocka_unit_test(a_batch_the_guard_refuses_stores_nothing),
        cmocka_unit_test(a_missing_partition_is_refused),
        cmocka_unit_test(partition_zero_is_marked),
        cmocka_unit_test(wide_ranges_span_the_partitions),
        cmocka_unit_test(a_directory_in_use_is_refused),
        cmocka_unit_test(partitions_keep_one_stores_buffers),
        cmocka_unit_test(the_most_partitions_work),
        cmocka_unit_test(memtable_sizes_hold_for_every_count),
        cmocka_unit_test(background_work_is_counted_until_it_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
