/* Threads: the shard-move thread (export, ingest); main thread at start (counts). */
/* Shard moves at the store: a prefix of ids written out as one SST file per column family
 * (fsynced), counted, deleted, and ingested by the node that adopts it. Any thread (the
 * cluster's move jobs: actor/shardmove.c). */
#include "store/internal.h"

#include "core/log.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Whether key k of family cf belongs to an id starting with prefix: the id starts every key
 * except an alarm's, where it follows the 8-byte due time. */
static bool key_has_prefix(store_cf_t cf, const unsigned char *k, size_t kl, const char *prefix,
                           size_t plen)
{
    size_t off = cf == CF_ALARMS ? 8 : 0;
    return kl >= off + plen && memcmp(k + off, prefix, plen) == 0;
}

/* The exclusive upper bound of keys starting with prefix (its last byte plus one). */
static void prefix_upper(char *out, const char *prefix, size_t plen)
{
    memcpy(out, prefix, plen);
    out[plen - 1]++;
}

const char *store_cf_name(store_cf_t cf)
{
    return store_cf_names[cf + 1];
}

int store_export_prefix(store_t *s, const char *prefix, size_t plen, const char *dir,
                        uint64_t keys[CF__COUNT], char *why, size_t whylen)
{
    memset(keys, 0, sizeof(uint64_t) * CF__COUNT);
    /* a shard's keys, the alarms' too, are all in its partition: a prefix shorter than a
     * shard may span several, and is not exported from a partitioned store */
    if (plen == 0 || plen > 32 || (plen < SHARD_HEX && s->nparts > 1))
        return -EINVAL;
    char upper[32];
    prefix_upper(upper, prefix, plen);
    store_part_t *part = &s->part[store_part_of_id(prefix, plen, s->nparts)];
    rocksdb_envoptions_t *env = rocksdb_envoptions_create();
    const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(part->db);
    int rc = 0;
    for (int cf = 0; cf < CF__COUNT && rc == 0; cf++) {
        rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
        rocksdb_readoptions_set_snapshot(ro, snap);
        rocksdb_readoptions_set_fill_cache(ro, 0);
        if (cf != CF_ALARMS) { /* the alarms are read whole: due time first */
            rocksdb_readoptions_set_iterate_lower_bound(ro, prefix, plen);
            rocksdb_readoptions_set_iterate_upper_bound(ro, upper, plen);
        }
        rocksdb_iterator_t *it = rocksdb_create_iterator_cf(part->db, ro, part->cf[cf + 1]);
        rocksdb_sstfilewriter_t *w = NULL;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.sst", dir, store_cf_names[cf + 1]);
        unlink(path); /* an older export's file would be ingested with this one */
        char *err = NULL;
        for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it) && !err;
             rocksdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = rocksdb_iter_key(it, &kl);
            if (!key_has_prefix((store_cf_t)cf, (const unsigned char *)k, kl, prefix, plen))
                continue;
            const char *v = rocksdb_iter_value(it, &vl);
            if (!w) { /* a family with no key gets no file (a writer cannot finish empty) */
                w = rocksdb_sstfilewriter_create(env, s->cf_opts);
                rocksdb_sstfilewriter_open(w, path, &err);
                if (err)
                    break;
            }
            rocksdb_sstfilewriter_put(w, k, kl, v, vl, &err);
            keys[cf]++;
        }
        if (!err)
            rocksdb_iter_get_error(it, &err);
        if (w && !err)
            rocksdb_sstfilewriter_finish(w, &err);
        if (err) {
            snprintf(why, whylen, "exporting %s: %s", store_cf_names[cf + 1], err);
            rocksdb_free(err);
            rc = -EIO;
        } else if (w) {
            /* the export may be the shard's only copy once the release is recorded */
            int e = store_fsync_path(path, O_RDONLY);
            if (e != 0) {
                snprintf(why, whylen, "fsync %s: %s", path, strerror(-e));
                rc = -EIO;
            }
        }
        if (w)
            rocksdb_sstfilewriter_destroy(w);
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
    }
    rocksdb_release_snapshot(part->db, snap);
    rocksdb_envoptions_destroy(env);
    return rc;
}

/* The keys of every family that belong to ids starting with prefix: counted, and with bytes
 * their keys' and values' sizes summed. 0, or -EIO when a read error stopped a scan (the counts
 * are short). */
static int scan_prefix(store_t *s, const char *prefix, size_t plen, uint64_t keys[CF__COUNT],
                       uint64_t *bytes)
{
    memset(keys, 0, sizeof(uint64_t) * CF__COUNT);
    if (plen == 0 || plen > 32)
        return 0;
    int rc = 0;
    char upper[32];
    prefix_upper(upper, prefix, plen);
    for (int cf = 0; cf < CF__COUNT && rc == 0; cf++) {
        bool all = cf == CF_ALARMS;
        store_iter_t *it = store_iter_new(s, (store_cf_t)cf, all ? NULL : prefix, plen,
                                          all ? NULL : upper, plen);
        for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
            size_t kl;
            const unsigned char *k = store_iter_key(it, &kl);
            if (!key_has_prefix((store_cf_t)cf, k, kl, prefix, plen))
                continue;
            keys[cf]++;
            if (bytes) {
                size_t vl;
                store_iter_value(it, &vl);
                *bytes += kl + vl;
            }
        }
        rc = store_iter_error(it);
        store_iter_free(it);
    }
    return rc;
}

int store_count_prefix(store_t *s, const char *prefix, size_t plen, uint64_t keys[CF__COUNT])
{
    return scan_prefix(s, prefix, plen, keys, NULL);
}

/* An SST file's own blocks (index, filter, properties, footer) past its data: a few KiB for a
 * small file; a margin, not a measure. */
#define SST_FILE_OVERHEAD (64u << 10)

int store_export_estimate(store_t *s, const char *prefix, size_t plen, uint64_t *bytes)
{
    uint64_t keys[CF__COUNT];
    *bytes = 0;
    int rc = scan_prefix(s, prefix, plen, keys, bytes);
    if (rc != 0) { /* short: an estimate that would let an export past the space it needs */
        *bytes = 0;
        return rc;
    }
    for (int cf = 0; cf < CF__COUNT; cf++)
        if (keys[cf])
            *bytes += SST_FILE_OVERHEAD;
    return 0;
}

int store_prefix_any(store_t *s, store_cf_t cf, const char *prefix, size_t plen)
{
    if (plen == 0 || plen > 32 || cf == CF_ALARMS)
        return 0;
    char upper[32];
    prefix_upper(upper, prefix, plen);
    store_iter_t *it = store_iter_new(s, cf, prefix, plen, upper, plen);
    store_iter_seek_first(it);
    int any = store_iter_valid(it) ? 1 : store_iter_error(it);
    store_iter_free(it);
    return any;
}

int store_delete_prefix(store_t *s, const char *prefix, size_t plen)
{
    if (plen == 0 || plen > 32)
        return -EINVAL;
    char upper[32];
    prefix_upper(upper, prefix, plen);
    store_batch_t *b = store_batch_new(s);
    bool unread = false;
    for (int cf = 0; cf < CF__COUNT; cf++) {
        if (cf != CF_ALARMS) {
            store_batch_delete_range(b, (store_cf_t)cf, prefix, plen, upper, plen);
            continue;
        }
        store_iter_t *it = store_iter_new(s, CF_ALARMS, NULL, 0, NULL, 0);
        for (store_iter_seek_first(it); store_iter_valid(it); store_iter_next(it)) {
            size_t kl;
            const unsigned char *k = store_iter_key(it, &kl);
            if (key_has_prefix(CF_ALARMS, k, kl, prefix, plen))
                store_batch_delete(b, CF_ALARMS, k, kl);
        }
        unread = store_iter_error(it) != 0;
        store_iter_free(it);
    }
    /* all or nothing: the ranges without the alarm keys the scan did not reach would leave
     * alarms of ids that are gone, which no start looks for (it finds a leftover copy by the
     * id-keyed families) */
    int rc = unread ? -EIO : store_commit(s, b);
    store_batch_free(b);
    return rc;
}

/* RocksDB's ingest can answer TryAgain, nothing ingested, when the family's memtable still
 * overlaps the file after the flush the ingest made for it (Debian's build keeps that check,
 * ExternalSstFileIngestionJob::Run: CI's partitioned cluster suite met it once in many runs).
 * The move thread then tries again, a few times 10 ms apart, before the adopt fails (which
 * loses nothing either: the move stays in transit and can be run again). */
#define INGEST_TRIES 5
#define TRY_AGAIN "Operation failed. Try again."

int store_ingest_dir(store_t *s, const char *prefix, size_t plen, const char *dir,
                     const bool present[CF__COUNT], bool move, char *why, size_t whylen)
{
    if (plen < SHARD_HEX && s->nparts > 1) {
        snprintf(why, whylen, "a prefix shorter than a shard names no one partition");
        return -EINVAL;
    }
    store_part_t *part = &s->part[store_part_of_id(prefix, plen, s->nparts)];
    rocksdb_ingestexternalfileoptions_t *io = rocksdb_ingestexternalfileoptions_create();
    rocksdb_ingestexternalfileoptions_set_move_files(io, move ? 1 : 0);
    int rc = 0;
    for (int cf = 0; cf < CF__COUNT && rc == 0; cf++) {
        if (!present[cf])
            continue; /* the family had no key of the shard */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.sst", dir, store_cf_names[cf + 1]);
        const char *list[1] = {path};
        char *err = NULL;
        for (int tries = 1;; tries++) {
            rocksdb_ingest_external_file_cf(part->db, part->cf[cf + 1], list, 1, io, &err);
            if (!err || tries == INGEST_TRIES || strncmp(err, TRY_AGAIN, strlen(TRY_AGAIN)) != 0)
                break;
            rocksdb_free(err); /* nothing was ingested; the file is where it was */
            err = NULL;
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
        if (err) {
            snprintf(why, whylen, "ingesting %s: %s", path, err);
            rocksdb_free(err);
            rc = -EIO;
        }
    }
    rocksdb_ingestexternalfileoptions_destroy(io);
    return rc;
}
