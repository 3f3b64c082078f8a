/* Threads: any thread (pure functions). */
/* Protocol versions table. Pure, any thread. */
#include "wire/proto.h"

#include <stddef.h>
#include <string.h>

static const proto_t VERSIONS[] = {
    {"2025-11-25", 2, false, true, true, true, false, false},
    {"2025-06-18", 1, false, false, false, true, false, false},
    {"2025-03-26", 0, true, false, false, false, false, false},
};
/* Not in VERSIONS: initialize never negotiates it and a session never speaks it. Its streams
 * are not resumable (no priming). */
static const proto_t MODERN = {"2026-07-28", 3, false, false, true, true, true, true};
#define NVERSIONS (sizeof VERSIONS / sizeof VERSIONS[0])

const proto_t *proto_find(const char *v)
{
    if (!v)
        return NULL;
    for (size_t i = 0; i < NVERSIONS; i++) {
        if (strcmp(VERSIONS[i].version, v) == 0)
            return &VERSIONS[i];
    }
    return NULL;
}

const proto_t *proto_latest(void)
{
    return &VERSIONS[0];
}

const proto_t *proto_older(const proto_t *p)
{
    return p >= VERSIONS && p + 1 < VERSIONS + NVERSIONS ? p + 1 : NULL;
}

const proto_t *proto_modern(void)
{
    return &MODERN;
}

const proto_t *proto_negotiate(const char *requested)
{
    const proto_t *p = proto_find(requested);
    return p ? p : proto_latest();
}

const char *proto_supported_list(void)
{
    return "2025-11-25, 2025-06-18, 2025-03-26";
}
