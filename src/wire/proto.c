/* Protocol versions table. Pure, any thread. */
#include "wire/proto.h"

#include <stddef.h>
#include <string.h>

static const proto_t VERSIONS[] = {
    {"2025-11-25", 2, false, true, true, true},
    {"2025-06-18", 1, false, false, false, true},
    {"2025-03-26", 0, true, false, false, false},
};
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

const proto_t *proto_default(void)
{
    return &VERSIONS[NVERSIONS - 1];
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
