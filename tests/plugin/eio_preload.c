/* Threads: any thread of the process it is preloaded into (tests only). */
/* A disk that fails reads for a while, for tests: preloaded into mcpactord (LD_PRELOAD), it
 * makes every pread of a table file (.sst) fail with EIO while the file named by $MCPD_EIO_FLAG
 * exists, and passes reads through otherwise. A test creates the file, lets the server read,
 * and removes it: the disk heals (blocks already in RocksDB's cache are not read again). */
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
static pread_fn real_pread64; /* set at load, before any thread runs */

__attribute__((constructor)) static void find_real(void)
{
    void *sym = dlsym(RTLD_NEXT, "pread64");
    memcpy(&real_pread64, &sym, sizeof real_pread64);
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
