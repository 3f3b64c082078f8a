/* The registry of tools, resources, prompts and the completion provider.
 * Built on the main thread before the server starts (toolsets, plugins); read-only afterwards,
 * so workers and tool threads read it without locks. */
#ifndef MCPD_MCP_REGISTRY_H
#define MCPD_MCP_REGISTRY_H

#include <mcpactord/tool.h>

#include <stdbool.h>
#include <stddef.h>

typedef struct tool {
    char *name;
    json_t *input_schema; /* parsed, for validation */
    json_t *listing;      /* the Tool object of tools/list */
    mcpd_tool_fn fn;
    void *ud;
    unsigned flags;
    bool param_headers; /* its schema names an x-mcp-header (2026-07-28 calls check them) */
    char *scopes;       /* the OAuth scopes it declares (mcpd_tool_def_t.scopes), or NULL */
} tool_t;

typedef struct resource {
    char *uri;          /* fixed resources */
    char *uri_template; /* templates */
    bool subscribable;
    json_t *listing;
    mcpd_resource_fn read;
    void *ud;
} resource_t;

typedef struct prompt {
    char *name;
    json_t *arguments; /* PromptArgument array or NULL */
    json_t *listing;
    mcpd_prompt_fn get;
    void *ud;
} prompt_t;

struct mcpd_registry {
    tool_t *tools;
    size_t n_tools, cap_tools;
    resource_t *resources;
    size_t n_resources, cap_resources;
    resource_t *templates;
    size_t n_templates, cap_templates;
    prompt_t *prompts;
    size_t n_prompts, cap_prompts;
    mcpd_complete_fn complete;
    void *complete_ud;
};

typedef enum { LIST_TOOLS, LIST_RESOURCES, LIST_TEMPLATES, LIST_PROMPTS } list_kind_t;

mcpd_registry_t *registry_new(void);
void registry_free(mcpd_registry_t *reg);

const tool_t *registry_find_tool(const mcpd_registry_t *reg, const char *name);
const prompt_t *registry_find_prompt(const mcpd_registry_t *reg, const char *name);
/* A fixed resource with that URI, else the first template it matches (*vars gets the
 * variables as a new object). NULL when nothing matches. */
const resource_t *registry_find_resource(const mcpd_registry_t *reg, const char *uri,
                                         json_t **vars);
/* One page of a list result ({"tools":[...],"nextCursor":..}); NULL for a bad cursor. */
json_t *registry_list(const mcpd_registry_t *reg, list_kind_t kind, const char *cursor,
                      size_t page_size);
/* The server capabilities that match what is registered. */
json_t *registry_capabilities(const mcpd_registry_t *reg);

/* True when a tool may run as a task (MCPD_TOOL_TASK): the tasks extension is announced. */
bool registry_has_task_tools(const mcpd_registry_t *reg);

/* Matches uri against an RFC 6570 level-1 template; vars gets {name: value}. */
bool uri_template_match(const char *tmpl, const char *uri, json_t *vars);

/* A plugin (main thread): dlopen PATH and call its mcpd_plugin_init. 0, or -1 after logging
 * why. (The built-in toolsets are registered by main: src/toolsets/toolsets.h.) */
int plugin_load(mcpd_registry_t *reg, const char *path);

#endif
