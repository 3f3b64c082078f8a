/* Threads: main thread while building (toolsets, plugins); read-only afterwards, any thread. */
/* The registry: main thread while building, read-only afterwards (any thread). */
#include "mcp/registry.h"

#include "core/jsonparse.h"
#include "core/log.h"
#include "core/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mcpd_registry_t *registry_new(void)
{
    return xcalloc(1, sizeof(mcpd_registry_t));
}

static void resource_free(resource_t *r)
{
    free(r->uri);
    free(r->uri_template);
    json_decref(r->listing);
}

void registry_free(mcpd_registry_t *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n_tools; i++) {
        free(reg->tools[i].name);
        free(reg->tools[i].scopes);
        json_decref(reg->tools[i].input_schema);
        json_decref(reg->tools[i].listing);
    }
    for (size_t i = 0; i < reg->n_resources; i++)
        resource_free(&reg->resources[i]);
    for (size_t i = 0; i < reg->n_templates; i++)
        resource_free(&reg->templates[i]);
    for (size_t i = 0; i < reg->n_prompts; i++) {
        free(reg->prompts[i].name);
        json_decref(reg->prompts[i].arguments);
        json_decref(reg->prompts[i].listing);
    }
    free(reg->tools);
    free(reg->resources);
    free(reg->templates);
    free(reg->prompts);
    free(reg);
}

#define GROW(arr, n, cap)                                   \
    do {                                                    \
        if ((n) == (cap)) {                                 \
            (cap) = (cap) ? (cap)*2 : 8;                    \
            (arr) = xrealloc((arr), (cap) * sizeof *(arr)); \
        }                                                   \
    } while (0)

static json_t *parse_json_text(const char *what, const char *name, const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    if (!v)
        log_error("registry: %s of %s is not valid JSON: %s (line %d)", what, name, e.text, e.line);
    return v;
}

static void set_opt_str(json_t *obj, const char *key, const char *v)
{
    if (v)
        json_object_set_new(obj, key, json_string(v));
}

/* True when a property reachable through "properties" (as modern_check_params walks them, to
 * the same depth) names a string x-mcp-header: a tool without one has nothing to compare with
 * the Mcp-Param-* headers, and its calls skip the walk. */
static bool names_param_header(const json_t *schema, int depth)
{
    const json_t *props = json_object_get(schema, "properties");
    if (!json_is_object(props) || depth > 16)
        return false;
    const char *name;
    const json_t *ps;
    json_object_foreach((json_t *)props, name, ps) {
        if (json_is_string(json_object_get(ps, "x-mcp-header")) ||
            (json_is_object(ps) && names_param_header(ps, depth + 1)))
            return true;
    }
    return false;
}

int mcpd_register_tool(mcpd_registry_t *reg, const mcpd_tool_def_t *def)
{
    if (!reg || !def || !def->name || !*def->name || !def->handler)
        return -EINVAL;
    unsigned flags = def->flags;
    if (flags & (MCPD_TOOL_TASK_REQUIRED | MCPD_TOOL_TASK_AFTER_INPUT))
        flags |= MCPD_TOOL_TASK;
    if ((flags & MCPD_TOOL_TASK) && (flags & MCPD_TOOL_NONBLOCKING)) {
        /* an inline handler runs within its worker's turn: it cannot outlive the call */
        log_error("registry: tool %s cannot be both a task and non-blocking", def->name);
        return -EINVAL;
    }
    if (registry_find_tool(reg, def->name)) {
        log_error("registry: tool %s is registered twice", def->name);
        return -EEXIST;
    }
    json_t *schema = def->input_schema
                         ? parse_json_text("input schema", def->name, def->input_schema)
                         : json_pack("{s:s}", "type", "object");
    if (!schema)
        return -EINVAL;
    if (!json_is_object(schema)) {
        log_error("registry: input schema of %s must be a JSON object", def->name);
        json_decref(schema);
        return -EINVAL;
    }
    json_t *listing = json_object();
    json_object_set_new(listing, "name", json_string(def->name));
    set_opt_str(listing, "title", def->title);
    set_opt_str(listing, "description", def->description);
    json_object_set_new(listing, "inputSchema", json_deep_copy(schema));
    const char *extra_keys[] = {"outputSchema", "annotations"};
    const char *extra_vals[] = {def->output_schema, def->annotations};
    for (int i = 0; i < 2; i++) {
        if (!extra_vals[i])
            continue;
        json_t *v = parse_json_text(extra_keys[i], def->name, extra_vals[i]);
        if (!v) {
            json_decref(listing);
            json_decref(schema);
            return -EINVAL;
        }
        json_object_set_new(listing, extra_keys[i], v);
    }
    GROW(reg->tools, reg->n_tools, reg->cap_tools);
    reg->tools[reg->n_tools++] = (tool_t){xstrdup(def->name),
                                          schema,
                                          listing,
                                          def->handler,
                                          def->userdata,
                                          flags,
                                          names_param_header(schema, 0),
                                          def->scopes && *def->scopes ? xstrdup(def->scopes)
                                                                      : NULL};
    return 0;
}

bool registry_has_task_tools(const mcpd_registry_t *reg)
{
    for (size_t i = 0; i < reg->n_tools; i++)
        if (reg->tools[i].flags & MCPD_TOOL_TASK)
            return true;
    return false;
}

int mcpd_register_resource(mcpd_registry_t *reg, const mcpd_resource_def_t *def)
{
    if (!reg || !def || !def->name || !def->read || (!def->uri == !def->uri_template))
        return -EINVAL;
    json_t *listing = json_object();
    if (def->uri)
        json_object_set_new(listing, "uri", json_string(def->uri));
    else
        json_object_set_new(listing, "uriTemplate", json_string(def->uri_template));
    json_object_set_new(listing, "name", json_string(def->name));
    set_opt_str(listing, "title", def->title);
    set_opt_str(listing, "description", def->description);
    set_opt_str(listing, "mimeType", def->mime_type);
    resource_t r = {def->uri ? xstrdup(def->uri) : NULL,
                    def->uri_template ? xstrdup(def->uri_template) : NULL,
                    def->subscribable,
                    listing,
                    def->read,
                    def->userdata};
    if (def->uri) {
        GROW(reg->resources, reg->n_resources, reg->cap_resources);
        reg->resources[reg->n_resources++] = r;
    } else {
        GROW(reg->templates, reg->n_templates, reg->cap_templates);
        reg->templates[reg->n_templates++] = r;
    }
    return 0;
}

int mcpd_register_prompt(mcpd_registry_t *reg, const mcpd_prompt_def_t *def)
{
    if (!reg || !def || !def->name || !def->get)
        return -EINVAL;
    if (registry_find_prompt(reg, def->name))
        return -EEXIST;
    json_t *args = NULL;
    if (def->arguments) {
        args = parse_json_text("arguments", def->name, def->arguments);
        if (!json_is_array(args)) {
            json_decref(args);
            return -EINVAL;
        }
    }
    json_t *listing = json_object();
    json_object_set_new(listing, "name", json_string(def->name));
    set_opt_str(listing, "title", def->title);
    set_opt_str(listing, "description", def->description);
    if (args)
        json_object_set(listing, "arguments", args);
    GROW(reg->prompts, reg->n_prompts, reg->cap_prompts);
    reg->prompts[reg->n_prompts++] = (prompt_t){xstrdup(def->name), args, listing, def->get,
                                                def->userdata};
    return 0;
}

int mcpd_set_completion(mcpd_registry_t *reg, mcpd_complete_fn fn, void *userdata)
{
    if (!reg || !fn)
        return -EINVAL;
    reg->complete = fn;
    reg->complete_ud = userdata;
    return 0;
}

const tool_t *registry_find_tool(const mcpd_registry_t *reg, const char *name)
{
    for (size_t i = 0; i < reg->n_tools; i++) {
        if (strcmp(reg->tools[i].name, name) == 0)
            return &reg->tools[i];
    }
    return NULL;
}

const prompt_t *registry_find_prompt(const mcpd_registry_t *reg, const char *name)
{
    for (size_t i = 0; i < reg->n_prompts; i++) {
        if (strcmp(reg->prompts[i].name, name) == 0)
            return &reg->prompts[i];
    }
    return NULL;
}

bool uri_template_match(const char *tmpl, const char *uri, json_t *vars)
{
    const char *t = tmpl, *u = uri;
    while (*t) {
        if (*t == '{') {
            const char *close = strchr(t, '}');
            if (!close)
                return false;
            size_t vlen = 0;
            /* a variable takes a non-empty run up to the next literal character or '/' */
            char stop = close[1];
            while (u[vlen] && u[vlen] != '/' && u[vlen] != stop)
                vlen++;
            if (vlen == 0)
                return false;
            if (vars) {
                char name[128];
                size_t nlen = (size_t)(close - t - 1);
                if (nlen == 0 || nlen >= sizeof name)
                    return false;
                memcpy(name, t + 1, nlen);
                name[nlen] = '\0';
                json_object_set_new(vars, name, json_stringn(u, vlen));
            }
            u += vlen;
            t = close + 1;
        } else {
            if (*t != *u)
                return false;
            t++;
            u++;
        }
    }
    return *u == '\0';
}

const resource_t *registry_find_resource(const mcpd_registry_t *reg, const char *uri, json_t **vars)
{
    *vars = NULL;
    for (size_t i = 0; i < reg->n_resources; i++) {
        if (strcmp(reg->resources[i].uri, uri) == 0)
            return &reg->resources[i];
    }
    for (size_t i = 0; i < reg->n_templates; i++) {
        json_t *v = json_object();
        if (uri_template_match(reg->templates[i].uri_template, uri, v)) {
            *vars = v;
            return &reg->templates[i];
        }
        json_decref(v);
    }
    return NULL;
}

json_t *registry_list(const mcpd_registry_t *reg, list_kind_t kind, const char *cursor,
                      size_t page_size)
{
    size_t offset = 0, n = 0;
    const char *key = "tools";
    switch (kind) {
    case LIST_TOOLS:
        n = reg->n_tools;
        key = "tools";
        break;
    case LIST_RESOURCES:
        n = reg->n_resources;
        key = "resources";
        break;
    case LIST_TEMPLATES:
        n = reg->n_templates;
        key = "resourceTemplates";
        break;
    case LIST_PROMPTS:
        n = reg->n_prompts;
        key = "prompts";
        break;
    }
    if (cursor) {
        int64_t v;
        /* the cursor is the decimal offset of the next page: opaque to clients */
        if (parse_int64(cursor, 1, (int64_t)n - 1, &v) != 0)
            return NULL;
        offset = (size_t)v;
    }
    json_t *items = json_array();
    size_t end = offset + page_size < n ? offset + page_size : n;
    for (size_t i = offset; i < end; i++) {
        const json_t *item = NULL;
        switch (kind) {
        case LIST_TOOLS:
            item = reg->tools[i].listing;
            break;
        case LIST_RESOURCES:
            item = reg->resources[i].listing;
            break;
        case LIST_TEMPLATES:
            item = reg->templates[i].listing;
            break;
        case LIST_PROMPTS:
            item = reg->prompts[i].listing;
            break;
        }
        /* a deep copy: registry objects are never shared with another thread's tree */
        json_array_append_new(items, json_deep_copy(item));
    }
    json_t *res = json_object();
    json_object_set_new(res, key, items);
    if (end < n) {
        char next[32];
        snprintf(next, sizeof next, "%zu", end);
        json_object_set_new(res, "nextCursor", json_string(next));
    }
    return res;
}

json_t *registry_capabilities(const mcpd_registry_t *reg)
{
    json_t *caps = json_object();
    json_object_set_new(caps, "logging", json_object());
    if (reg->n_tools)
        json_object_set_new(caps, "tools", json_pack("{s:b}", "listChanged", 0));
    if (reg->n_resources || reg->n_templates) {
        bool sub = false;
        for (size_t i = 0; i < reg->n_resources; i++)
            sub = sub || reg->resources[i].subscribable;
        for (size_t i = 0; i < reg->n_templates; i++)
            sub = sub || reg->templates[i].subscribable;
        json_object_set_new(caps, "resources",
                            json_pack("{s:b,s:b}", "subscribe", sub, "listChanged", 0));
    }
    if (reg->n_prompts)
        json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", 0));
    if (reg->complete)
        json_object_set_new(caps, "completions", json_object());
    return caps;
}

/* ---- result helpers (public API) ---- */

json_t *mcpd_text_content(const char *text)
{
    /* built directly: json_pack parses its format string on every call (a hot path) */
    json_t *c = json_object();
    json_object_set_new_nocheck(c, "type", json_string_nocheck("text"));
    /* a text that is not UTF-8 (a message cut inside a character) keeps its member */
    json_object_set_new_nocheck(c, "text", json_string_lossy(text ? text : ""));
    return c;
}

json_t *mcpd_text_contentn(const char *text, size_t len)
{
    json_t *c = json_object();
    json_object_set_new_nocheck(c, "type", json_string_nocheck("text"));
    json_object_set_new_nocheck(c, "text", text ? json_stringn_lossy(text, len) : json_string(""));
    return c;
}

static json_t *result_of(json_t *content_item)
{
    json_t *content = json_array();
    json_array_append_new(content, content_item);
    json_t *r = json_object();
    json_object_set_new_nocheck(r, "content", content);
    return r;
}

json_t *mcpd_text_result(const char *text)
{
    return result_of(mcpd_text_content(text));
}

json_t *mcpd_text_resultn(const char *text, size_t len)
{
    return result_of(mcpd_text_contentn(text, len));
}

static char *vfmt(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

static char *vfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

json_t *mcpd_text_resultf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    json_t *r = mcpd_text_result(s ? s : "");
    free(s);
    return r;
}

json_t *mcpd_error_result(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    json_t *r = mcpd_text_result(s ? s : "error");
    free(s);
    json_object_set_new(r, "isError", json_true());
    return r;
}

/* ---- plugins ---- */

int plugin_load(mcpd_registry_t *reg, const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        log_error("plugin %s: cannot load: %s", path, dlerror());
        return -1;
    }
    int (*init)(mcpd_registry_t *, int);
    *(void **)&init = dlsym(h, "mcpd_plugin_init");
    if (!init) {
        log_error("plugin %s: no mcpd_plugin_init symbol", path);
        dlclose(h);
        return -1;
    }
    size_t before = reg->n_tools + reg->n_resources + reg->n_templates + reg->n_prompts;
    int rc = init(reg, MCPD_API_VERSION);
    if (rc != 0) {
        log_error("plugin %s: mcpd_plugin_init returned %d", path, rc);
        dlclose(h);
        return -1;
    }
    size_t after = reg->n_tools + reg->n_resources + reg->n_templates + reg->n_prompts;
    log_info("plugin %s: loaded, %zu definitions registered", path, after - before);
    /* the handle stays open for the life of the process: handlers live in it */
    return 0;
}
