/* The manifest of a shard export (issue 21): what a release wrote, file by file, so that the
 * node adopting it can check every byte before it serves a key of it. Every column family is
 * listed, even one without a key of the shard (no file then), with its key count; a family
 * with keys names its file, size and SHA-256. The format is JSON:
 *   {"format": 2, "shard": "abc", "epoch": 3, "from": "n1", "to": "n2", "keys": 42,
 *    "moved": {"sessions": 5, ...},
 *    "families": [{"cf": "sessions", "keys": 12, "file": "sessions.sst", "bytes": 2048,
 *                  "sha256": "<64 hex>"}, {"cf": "events", "keys": 0}, ...]}
 * Pure codec and a file digest: any thread. */
#ifndef MCPD_STORE_MANIFEST_H
#define MCPD_STORE_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/crypto.h"
#include "store/shardrec.h"
#include "store/store.h"

#define MANIFEST_FORMAT 2
#define MANIFEST_NAME "manifest.json"

typedef struct manifest_family {
    uint64_t keys;
    bool file; /* keys > 0: <cf name>.sst */
    uint64_t bytes;
    unsigned char sha256[SHA256_LEN];
} manifest_family_t;

typedef struct manifest {
    int shard;
    uint32_t epoch;
    char from[SHARDREC_PEER_MAX + 1], to[SHARDREC_PEER_MAX + 1];
    uint64_t keys; /* all families */
    json_t *moved; /* what went, by kind (owned: manifest_clear drops it) */
    manifest_family_t fam[CF__COUNT];
} manifest_t;

/* The manifest's JSON (new reference). */
json_t *manifest_build(const manifest_t *m);
/* Parses and checks a manifest: 0, or -EBADMSG with why (m is cleared then). */
int manifest_parse(const char *text, size_t len, manifest_t *m, char *why, size_t whylen);
void manifest_clear(manifest_t *m);
/* The bytes of the export's files, all together. */
uint64_t manifest_bytes(const manifest_t *m);
/* The size and SHA-256 of a file: 0, or -errno. */
int manifest_file_digest(const char *path, uint64_t *bytes, unsigned char sha[SHA256_LEN]);

#endif
