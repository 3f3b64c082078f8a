/* Threads: main thread (setup, free); worker threads read the argv table (and format errors). */
/* The --upstream table: each COMMAND split once at start (wordexp is not thread-safe), read
 * by the workers that start the processes; and the one message that sessions and pools share
 * (an answer with an id never sent). */
#include "gateway/gateway.h"

#include "core/config.h"
#include "core/log.h"
#include "gateway/upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **g_argv[CFG_MAX_UPSTREAMS];

int gateway_setup(void)
{
    for (int i = 0; i < g_cfg.n_upstreams; i++) {
        char err[256];
        g_argv[i] = upstream_split(g_cfg.upstream_cmds[i], err, sizeof err);
        if (!g_argv[i]) {
            log_error("--upstream %s=%s: %s", g_cfg.upstream_names[i], g_cfg.upstream_cmds[i], err);
            return 2;
        }
        log_info("upstream %s: /mcp/%s serves %s", g_cfg.upstream_names[i], g_cfg.upstream_names[i],
                 g_cfg.upstream_cmds[i]);
    }
    return 0;
}

void gateway_free(void)
{
    for (int i = 0; i < CFG_MAX_UPSTREAMS; i++) {
        upstream_argv_free(g_argv[i]);
        g_argv[i] = NULL;
    }
}

char *const *gateway_argv(int i)
{
    return g_argv[i];
}

void gateway_bad_id_why(const char *name, const json_t *msg, char *out, size_t n)
{
    char *id = json_dumps(json_object_get(msg, "id"), JSON_ENCODE_ANY | JSON_COMPACT);
    const char *err = json_string_value(json_object_get(json_object_get(msg, "error"), "message"));
    snprintf(out, n, "the upstream %s answered with an id it was never sent (%.40s%s)%s%.120s",
             name, id ? id : "?", id && strlen(id) > 40 ? "..." : "", err ? ": " : "",
             err ? err : "");
    free(id);
}
