/* Threads: any thread (a constant table and pure lookups). */
/* The method table's rows and the name lookup (core/methodtable.h). Any thread: read-only. */
#include "core/methodtable.h"

#include <string.h>

const method_rule_t method_table[SM__COUNT] = {
#define X(id, name_, eras_, removed_in_, target_, flags_) \
    [SM_##id] = {.name = name_,                           \
                 .removed_in = removed_in_,               \
                 .target = target_,                       \
                 .eras = METHOD_ERAS_##eras_,             \
                 .flags = flags_},
    MCP_METHODS(X)
#undef X
        [SM_notification] = {.name = "notification"},
    [SM_response] = {.name = "response"},
    [SM_other] = {.name = "other"},
};

stats_method_t stats_method_of(const char *method)
{
    return method ? stats_method_of_n(method, strlen(method)) : SM_other;
}

stats_method_t stats_method_of_n(const char *method, size_t n)
{
    if (n >= 14 && memcmp(method, "notifications/", 14) == 0)
        return SM_notification;
        /* the compiler keeps the lengths as immediates and inlines each fixed-size compare */
#define X(id, name, eras, removed_in, target, flags)                        \
    if (n == sizeof name - 1 && memcmp(method, name, sizeof name - 1) == 0) \
        return SM_##id;
    MCP_METHODS(X)
#undef X
    return SM_other;
}

const char *stats_method_name(stats_method_t m)
{
    return method_table[m].name;
}
