/* Threads: any thread of the process it is preloaded into (tests only). */
/* A disk that fails reads for a while, for tests: preloaded into mcpactord (LD_PRELOAD), it
 * makes every pread and read of a .sst file fail with EIO while the file named by
 * $MCPD_EIO_FLAG exists, and passes reads through otherwise. A test creates the file, lets the
 * server read, and removes it: the disk heals (blocks already in RocksDB's cache are not read
 * again). RocksDB reads its table files with pread; read is the server's own reads of an
 * export's files (their SHA-256, store/manifest.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT, off64_t */
#endif
#undef _FILE_OFFSET_BITS /* pread and pread64 are two symbols here, both replaced */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int fd, void *buf, size_t count, off64_t off);
typedef ssize_t (*read_fn)(int fd, void *buf, size_t count);
static pread_fn real_pread64; /* set at load, before any thread runs */
static read_fn real_read;     /* also found at the first read, should one come before the load's */

__attribute__((constructor)) static void find_real(void)
{
    void *sym = dlsym(RTLD_NEXT, "pread64");
    memcpy(&real_pread64, &sym, sizeof real_pread64);
    sym = dlsym(RTLD_NEXT, "read");
    memcpy(&real_read, &sym, sizeof real_read);
}

static bool failing(int fd)
{
    const char *flag = getenv("MCPD_EIO_FLAG");
    struct stat st;
    if (!flag || stat(flag, &st) != 0)
        return false;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    return n >= 4 && memcmp(path + n - 4, ".sst", 4) == 0;
}

ssize_t pread64(int fd, void *buf, size_t count, off64_t off)
{
    if (failing(fd)) {
        errno = EIO;
        return -1;
    }
    return real_pread64(fd, buf, count, off);
}

ssize_t pread(int fd, void *buf, size_t count, off_t off)
{
    return pread64(fd, buf, count, (off64_t)off);
}

ssize_t read(int fd, void *buf, size_t count)
{
    if (failing(fd)) {
        errno = EIO;
        return -1;
    }
    if (!real_read) {
        void *sym = dlsym(RTLD_NEXT, "read");
        memcpy(&real_read, &sym, sizeof real_read);
    }
    return real_read(fd, buf, count);
}
