/* A real RocksDB in a temporary directory, for the unit tests that need a store (store/,
 * actor/): the fixture, its setup and the directory's removal. Include after cmocka.h. */
#ifndef MCPD_TESTS_UNIT_STORE_FIXTURE_H
#define MCPD_TESTS_UNIT_STORE_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/store.h"

typedef struct fixture {
    char dir[64];
    store_t *s;
} fixture_t;

/* The store in dir (opened, or made), or NULL after printing why. */
static store_t *open_in(const char *dir)
{
    char err[256];
    store_t *s = store_open(dir, false, 0, err, sizeof err);
    if (!s)
        fprintf(stderr, "%s\n", err);
    return s;
}

/* A fresh directory from template (/tmp/...-XXXXXX) with a store in it, as the group state. */
static int store_fixture_setup(void **state, const char *template)
{
    fixture_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", template);
    if (!mkdtemp(f->dir) || !(f->s = open_in(f->dir)))
        return -1;
    *state = f;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

/* Closes the fixture's store, removes its directory and frees it. */
static void store_fixture_free(fixture_t *f)
{
    store_close(f->s);
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
}

#endif
