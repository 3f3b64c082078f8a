/* Threads: main thread (setup, free); worker threads read the argv table. */
/* The --upstream table: each COMMAND split once at start (wordexp is not thread-safe), read
 * by the workers that start the processes. */
#include "gateway/gateway.h"

#include "core/config.h"
#include "core/log.h"
#include "gateway/upstream.h"

#include <stdlib.h>

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
