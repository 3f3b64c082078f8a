/* A small synchronous HTTP/1.1 client for node-to-node admin calls (shard moves: an adopting
 * node fetches the export from the releasing node; a node taking back its export asks the
 * other to decline it). libevent's evhttp client on a private event_base, so it runs on
 * whichever thread calls it (the shard-move thread) and blocks it, never a loop of the server.
 * Plain HTTP on the admin listener, with the admin token; integrity comes from the manifest's
 * SHA-256 of every file, checked by the caller. */
#ifndef MCPD_CORE_PEER_H
#define MCPD_CORE_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "core/crypto.h"

typedef struct peer {
    char host[256];
    int port;
    const char *token; /* bearer token, or NULL */
    int timeout_s;     /* per request: connect and each read */
} peer_t;

/* method "GET" or "POST" (no request body). 0 with *status and the body (malloc'd, NUL-ended,
 * at most max bytes: longer is -EMSGSIZE), or -errno (-ECONNREFUSED, -ETIMEDOUT, -EIO) with
 * why. */
int peer_call(const peer_t *p, const char *method, const char *path, size_t max, int *status,
              char **body, size_t *len, char *why, size_t whylen);

/* GET path into fd, hashing what it writes: 0 with *status, *bytes and the SHA-256 in
 * digest (only a 200's body is written), or -errno with why. More than max bytes: -EMSGSIZE. */
int peer_fetch(const peer_t *p, const char *path, int fd, uint64_t max, int *status,
               uint64_t *bytes, unsigned char digest[SHA256_LEN], char *why, size_t whylen);

#endif
