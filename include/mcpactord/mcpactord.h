/* Umbrella header for mcpactord's public API (tools, resources, prompts, plugins). */
#ifndef MCPACTORD_H
#define MCPACTORD_H

#include <mcpactord/tool.h>

#endif
