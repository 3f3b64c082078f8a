/* Damage to a store's table files, as a failing disk does, for the unit tests that read
 * through it (store/). Include after cmocka.h. */
#ifndef MCPD_TESTS_UNIT_STORE_DAMAGE_H
#define MCPD_TESTS_UNIT_STORE_DAMAGE_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Damages a data block of each table file (.sst) of family `name` in dir, or of every table
 * file when name is NULL (4 bytes, in place, as a failing disk would): the first (at the file's
 * start), or one in the middle of the file (middle: a scan reads blocks before it first). The
 * next read of that block fails its checksum. A file is known by its family's name in its
 * properties block (rocksdb.column.family.name). */
static inline void damage_family_at(const char *dir, const char *name, bool middle)
{
    char tag[64] = "";
    int tl = name ? snprintf(tag, sizeof tag, "\x16\x04%cname%s", (char)strlen(name), name) : 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int damaged = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".sst") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *fp = fopen(path, "r+b");
        assert_non_null(fp);
        static char buf[4 << 20];
        size_t len = fread(buf, 1, sizeof buf, fp);
        if (len >= 4 && (!name || memmem(buf, len, tag, (size_t)tl))) {
            long at = middle ? (long)len / 2 : 0;
            for (int i = 0; i < 4; i++)
                buf[at + i] ^= (char)0xFF;
            assert_int_equal(fseek(fp, at, SEEK_SET), 0);
            assert_int_equal(fwrite(buf + at, 1, 4, fp), 4);
            damaged++;
        }
        assert_int_equal(fclose(fp), 0);
    }
    closedir(d);
    assert_true(damaged > 0);
}

/* The first data block of each table file of family `name` (damage_family_at). */
static inline void damage_family(const char *dir, const char *name)
{
    damage_family_at(dir, name, false);
}

#endif
