/* The built-in toolsets: each registers its tools, resources and prompts through the public API
 * alone (include/mcpactord/tool.h). Main thread, before the server starts. 0, or the first
 * negative errno from mcpd_register_*. */
#ifndef MCPD_TOOLS_TOOLSETS_H
#define MCPD_TOOLS_TOOLSETS_H

#include <mcpactord/tool.h>

int toolset_demo_register(mcpd_registry_t *reg);        /* demo.c */
int toolset_conformance_register(mcpd_registry_t *reg); /* conformance.c */
/* conformance_modern.c: the 2026-07-28 fixtures, registered by the one above */
int toolset_conformance_modern_register(mcpd_registry_t *reg);
/* conformance_tasks.c: the tasks-extension fixtures, registered by the same */
int toolset_conformance_tasks_register(mcpd_registry_t *reg);

#endif
