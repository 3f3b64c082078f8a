/* Threads: main thread at start (the sweep); the shard-move thread (steps); the admin thread
 * (shardmove_export_path, for a peer fetching an export). */
/* Shard moves: the move directory. Only files this code writes, in directories it names: an
 * export's directory per shard and epoch, its manifest (written and fsynced before anything
 * refers to it) and the checks of the files against it. The move thread (shardmove.c). */
#include "actor/shardmove_internal.h"

#include "actor/actor.h"
#include "actor/alarm.h"
#include "actor/worker.h"
#include "core/auth.h"
#include "core/cluster.h"
#include "core/log.h"
#include "core/peer.h"
#include "core/shard.h"
#include "core/stats.h"
#include "core/util.h"
#include "store/manifest.h"
#include "store/sessionrec.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* ---- the move directory: only files this code writes, in directories it names ---- */

void sm_dir_of(char *out, size_t len, bool out_dir, int shard, uint32_t epoch)
{
    char sh[SHARD_HEX + 1];
    sm_shard_hex(shard, sh);
    snprintf(out, len, "%s/%s-%s.%u", SM_MOVE_DIR, out_dir ? "out" : "in", sh, epoch);
}

/* Removes what this code writes into a move directory, then the directory: 0, -ENOTEMPTY when
 * something else is in it (left alone), or -errno. */
int sm_remove_dir(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTEMPTY; /* a link or a file in its place: not this code's, left alone */
    char path[2048];
    for (int cf = 0; cf < CF__COUNT; cf++) {
        snprintf(path, sizeof path, "%s/%s.sst", dir, store_cf_name((store_cf_t)cf));
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/" MANIFEST_NAME, dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/" MANIFEST_NAME ".tmp", dir);
    unlink(path);
    if (rmdir(dir) != 0 && errno != ENOENT)
        return -errno;
    return 0;
}

/* A fresh, empty directory for an export or a fetch: a leftover of this code's is cleared; a
 * directory holding anything else is refused. */
int sm_fresh_dir(const char *dir, char *why, size_t whylen)
{
    int rc = sm_remove_dir(dir);
    if (rc == 0 && mkdir(dir, 0700) != 0)
        rc = -errno;
    if (rc == 0 && sm_fsync_dir(SM_MOVE_DIR) != 0)
        rc = -EIO; /* the directory's entry is on disk before anything is written into it */
    if (rc == -ENOTEMPTY || rc == -EEXIST) {
        snprintf(why, whylen, "%s holds files this node did not write: remove them first", dir);
        return -EALREADY;
    }
    if (rc != 0) {
        snprintf(why, whylen, "cannot create %s: %s", dir, strerror(-rc));
        return -EIO;
    }
    return 0;
}

/* At start: fetches that a crash interrupted, and exports no record keeps (a crash between a
 * record and the delete of a directory), are deleted; anything else is left alone. */
void sm_sweep_move_dir(void)
{
    DIR *d = opendir(SM_MOVE_DIR);
    if (!d)
        return;
    struct dirent *e;
    int removed = 0;
    while ((e = readdir(d)) != NULL) {
        char kind[4] = "", sh[SHARD_HEX + 1] = "";
        unsigned epoch = 0;
        int n = 0;
        if (sscanf(e->d_name, "%3[a-z]-%3[0-9a-f].%u%n", kind, sh, &epoch, &n) != 3 ||
            e->d_name[n] != '\0' || (strcmp(kind, "in") != 0 && strcmp(kind, "out") != 0))
            continue;
        int s = shard_of(sh);
        if (s < 0)
            continue;
        bool kept = strcmp(kind, "out") == 0 && SM_REC[s].state == SHARDREC_RELEASED &&
                    SM_REC[s].export_kept && SM_REC[s].epoch == epoch;
        if (kept)
            continue;
        char dir[DIR_MAX];
        sm_dir_of(dir, sizeof dir, strcmp(kind, "out") == 0, s, epoch);
        if (sm_remove_dir(dir) == 0)
            removed++;
    }
    closedir(d);
    if (removed)
        log_info("cluster: deleted %d move directories no record keeps (interrupted moves)",
                 removed);
}

int sm_room_for(const char *what, uint64_t bytes, bool to_dir, bool to_store, char *why,
                size_t whylen)
{
    bool one_fs = store_on_fs_of(SM_STORE, SM_MOVE_DIR);
    if (to_dir && !one_fs) {
        struct statvfs v;
        uint64_t f = statvfs(SM_MOVE_DIR, &v) == 0 ? (uint64_t)v.f_bavail * v.f_frsize : bytes;
        if (f < bytes) {
            snprintf(why, whylen,
                     "not enough space: %s needs %llu bytes in the move directory %s, whose "
                     "filesystem has %llu free",
                     what, (unsigned long long)bytes, SM_MOVE_DIR, (unsigned long long)f);
            return -ENOSPC;
        }
    }
    if (!to_store && !one_fs)
        return 0;
    int64_t f, floor;
    if (store_space_for(SM_STORE, bytes, &f, &floor))
        return 0;
    snprintf(why, whylen,
             "not enough space: %s needs %llu bytes on the data directory's filesystem, which "
             "has %lld free: that would leave less than --min-free-space (%lld bytes); free "
             "space there first",
             what, (unsigned long long)bytes, (long long)f, (long long)floor);
    return -ENOSPC;
}

int sm_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* dir/manifest.json, written whole (temporary file, fsync, rename, fsync of the directory). */
int sm_write_manifest(const char *dir, const manifest_t *m, char *why, size_t whylen)
{
    char path[2048], tmp[2100];
    snprintf(path, sizeof path, "%s/" MANIFEST_NAME, dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    json_t *j = manifest_build(m);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t n = strlen(text);
    bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    free(text);
    if (!ok || rename(tmp, path) != 0 || sm_fsync_dir(dir) != 0) {
        snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
        return -EIO;
    }
    return 0;
}

/* A file of this node's own export that its disk failed to read (err: the errno): said as this
 * node's read error, naming it, never as the export's damage; logged. -EIO. */
static int own_file_unreadable(const char *path, int err, char *why, size_t whylen)
{
    log_error("shard moves: reading %s failed: %s (a read error of this node's disk)", path,
              strerror(err));
    snprintf(why, whylen,
             "%s could not read its own export (%s: %s): a read error of this node's disk, "
             "logged, not damage of the export; nothing of the shard changed here: retry once it "
             "reads",
             shard_node_name(), path, strerror(err));
    return -EIO;
}

int sm_read_manifest(const char *dir, manifest_t *m, char *why, size_t whylen)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/" MANIFEST_NAME, dir);
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        manifest_clear(m);
        if (e != ENOENT)
            return own_file_unreadable(path, e, why, whylen);
        snprintf(why, whylen, "the export is incomplete: %s: %s", path, strerror(e));
        return -EBADMSG;
    }
    char *text = xmalloc(1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    bool failed = ferror(f) != 0;
    int e = errno;
    fclose(f);
    int rc = failed ? own_file_unreadable(path, e ? e : EIO, why, whylen)
                    : manifest_parse(text, n, m, why, whylen);
    if (failed)
        manifest_clear(m);
    free(text);
    return rc;
}

int sm_check_files(const char *dir, const manifest_t *m, char *why, size_t whylen)
{
    for (int cf = 0; cf < CF__COUNT; cf++) {
        if (!m->fam[cf].file)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s.sst", dir, store_cf_name((store_cf_t)cf));
        uint64_t bytes;
        unsigned char sha[SHA256_LEN];
        int rc = manifest_file_digest(path, &bytes, sha);
        if (rc != 0 && rc != -ENOENT) /* there, and this node's disk fails to read it */
            return own_file_unreadable(path, -rc, why, whylen);
        if (rc != 0) {
            snprintf(why, whylen, "the export is incomplete: %s: %s", path, strerror(-rc));
            return -EBADMSG;
        }
        if (bytes != m->fam[cf].bytes || memcmp(sha, m->fam[cf].sha256, SHA256_LEN) != 0) {
            snprintf(why, whylen,
                     "the export is damaged: %s has %llu bytes and another "
                     "SHA-256 than its manifest says (%llu bytes)",
                     path, (unsigned long long)bytes, (unsigned long long)m->fam[cf].bytes);
            return -EBADMSG;
        }
    }
    return 0;
}

/* The admin thread, for a peer fetching an export: see shardmove.h. */
int shardmove_export_path(int shard, const char *file, char *path, size_t len)
{
    pthread_mutex_lock(&sm_rec_mu);
    shardrec_t r = SM_REC[shard];
    pthread_mutex_unlock(&sm_rec_mu);
    if (r.state != SHARDREC_RELEASED || !r.export_kept)
        return -ENOENT; /* a draft (not recorded yet) or a finished move is never served */
    bool known = file == NULL;
    for (int cf = 0; cf < CF__COUNT && !known; cf++) {
        char want[64];
        snprintf(want, sizeof want, "%s.sst", store_cf_name((store_cf_t)cf));
        known = strcmp(file, want) == 0;
    }
    if (!known)
        return -ENOENT;
    char dir[DIR_MAX];
    sm_dir_of(dir, sizeof dir, true, shard, r.epoch);
    int n = snprintf(path, len, "%s/%s", dir, file ? file : MANIFEST_NAME);
    return n < 0 || (size_t)n >= len ? -ENOENT : 0;
}
