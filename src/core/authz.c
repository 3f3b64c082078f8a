/* Threads: main thread builds the configuration; any thread reads it afterwards. */
/* The resource server's configuration (see authz.h). Main thread builds it; any thread reads
 * it afterwards. */
#include "core/authz.h"

#include "core/jwt.h"
#include "core/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

authz_t g_authz;

typedef struct tool_scope {
    char *tool;
    char *scopes;
} tool_scope_t;

/* Sorted by tool name once authz_configure runs (bsearch afterwards). */
static tool_scope_t *g_tools;
static size_t g_ntools;

static bool scope_char(char c)
{
    return c >= 0x21 && c <= 0x7e && c != '"' && c != '\\'; /* RFC 6749 3.3 */
}

/* Whether the first used bytes of list hold the scope w (n bytes): spans compared, no copy. */
static bool list_has(const char *list, size_t used, const char *w, size_t n)
{
    const char *q = list, *end = list + used;
    while (q < end) {
        while (q < end && *q == ' ')
            q++;
        const char *sp = memchr(q, ' ', (size_t)(end - q));
        size_t m = sp ? (size_t)(sp - q) : (size_t)(end - q);
        if (m == n && memcmp(q, w, n) == 0)
            return true;
        q += m;
    }
    return false;
}

bool authz_scope_union(char *list, size_t n, const char *add)
{
    size_t used = strlen(list), before = used;
    const char *p = add;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (!w)
            break;
        if (!list_has(list, used, p, w)) {
            if (used + (used ? 1 : 0) + w + 1 > n) {
                list[before] = '\0';
                return false;
            }
            if (used)
                list[used++] = ' ';
            memcpy(list + used, p, w);
            used += w;
            list[used] = '\0';
        }
        p += w;
    }
    return true;
}

/* "a,b c" -> "a b c"; NULL when a character is not a scope's or a scope is longer than
 * AUTHZ_SCOPE_MAX (the matchers compare spans of any length; the bound keeps challenges and
 * the metadata of a sane size). */
static char *normalize(const char *scopes)
{
    size_t len = strlen(scopes);
    char *out = xmalloc(len + 1);
    size_t o = 0, word = 0;
    for (size_t i = 0; i < len; i++) {
        char c = scopes[i] == ',' ? ' ' : scopes[i];
        word = c == ' ' ? 0 : word + 1;
        if ((c != ' ' && !scope_char(c)) || word > AUTHZ_SCOPE_MAX) {
            free(out);
            return NULL;
        }
        if (c == ' ' && (o == 0 || out[o - 1] == ' '))
            continue;
        out[o++] = c;
    }
    while (o && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
    return out;
}

int authz_set_tool_scopes(const char *tool, const char *scopes)
{
    char *norm = normalize(scopes);
    if (!norm)
        return -1;
    for (size_t i = 0; i < g_ntools; i++) {
        if (strcmp(g_tools[i].tool, tool) == 0) {
            free(g_tools[i].scopes);
            g_tools[i].scopes = norm;
            return 0;
        }
    }
    g_tools = xrealloc(g_tools, (g_ntools + 1) * sizeof *g_tools);
    g_tools[g_ntools++] = (tool_scope_t){xstrdup(tool), norm};
    return 0;
}

static int by_tool(const void *a, const void *b)
{
    return strcmp(((const tool_scope_t *)a)->tool, ((const tool_scope_t *)b)->tool);
}

const char *authz_tool_scopes(const char *tool)
{
    if (!tool || !g_ntools)
        return "";
    tool_scope_t key = {.tool = (char *)tool};
    const tool_scope_t *t = bsearch(&key, g_tools, g_ntools, sizeof *g_tools, by_tool);
    return t ? t->scopes : "";
}

int authz_prm_url(const char *resource, char *out, size_t n, char *path_out, size_t pn)
{
    const char *auth = strstr(resource, "://");
    if (!auth || strchr(resource, '#') || strchr(resource, '?') ||
        !(strncasecmp(resource, "http://", 7) == 0 || strncasecmp(resource, "https://", 8) == 0))
        return -1;
    auth += 3;
    const char *path = strchr(auth, '/');
    if (path == auth)
        return -1;
    size_t base = path ? (size_t)(path - resource) : strlen(resource);
    const char *p = path && strcmp(path, "/") != 0 ? path : "";
    int w = snprintf(out, n, "%.*s/.well-known/oauth-protected-resource%s", (int)base, resource, p);
    int w2 = snprintf(path_out, pn, "/.well-known/oauth-protected-resource%s", p);
    return w < 0 || (size_t)w >= n || w2 < 0 || (size_t)w2 >= pn ? -1 : 0;
}

int authz_configure(const char *issuer, const char *resource, const char *scopes,
                    const char *required, int64_t leeway, const char *listen_host, int port,
                    char *why, size_t whylen)
{
    authz_t *a = &g_authz;
    if (g_ntools) /* qsort wants a non-NULL array even for none */
        qsort(g_tools, g_ntools, sizeof *g_tools, by_tool);
    if (!issuer || !*issuer)
        return 0;
    a->on = true;
    str_copy(a->issuer, sizeof a->issuer, issuer);
    if (resource && *resource)
        str_copy(a->resource, sizeof a->resource, resource);
    else
        snprintf(a->resource, sizeof a->resource, strchr(listen_host, ':') ? "http://[%s]:%d/mcp"
                                                                         : "http://%s:%d/mcp",
                 listen_host, port);
    bool quotable = true; /* it goes inside a quoted challenge parameter */
    for (const char *c = a->resource; *c; c++)
        quotable = quotable && scope_char(*c);
    if (!quotable || authz_prm_url(a->resource, a->prm_url, sizeof a->prm_url, a->prm_path,
                                   sizeof a->prm_path) != 0) {
        snprintf(why, whylen, "--auth-resource %s: expected an absolute http(s) URL without "
                 "query, fragment, spaces, quotes or backslashes", a->resource);
        return -1;
    }
    if (required && *required) {
        char *norm = normalize(required);
        if (!norm || strchr(norm, ' ') || strlen(norm) >= sizeof a->required) {
            free(norm);
            snprintf(why, whylen, "--auth-required-scope %s: expected one scope (RFC 6749 scope "
                     "characters, %d at most)", required, AUTHZ_SCOPE_MAX);
            return -1;
        }
        strcpy(a->required, norm);
        free(norm);
    }
    a->leeway = leeway;
    /* scopes_supported: the operator's list, or every scope a flag or a tool names */
    char *all = NULL;
    if (scopes && *scopes) {
        all = normalize(scopes);
        if (!all) {
            snprintf(why, whylen, "--auth-scopes: expected scopes separated by spaces (RFC 6749 "
                     "scope characters, %d at most each)", AUTHZ_SCOPE_MAX);
            return -1;
        }
    } else {
        size_t cap = 4096;
        all = xcalloc(1, cap);
        authz_scope_union(all, cap, a->required);
        for (size_t i = 0; i < g_ntools; i++)
            authz_scope_union(all, cap, g_tools[i].scopes);
    }
    json_t *doc = json_object();
    json_object_set_new(doc, "resource", json_string(a->resource));
    json_object_set_new(doc, "authorization_servers", json_pack("[s]", a->issuer));
    if (*all) {
        json_t *arr = json_array();
        const char *p = all;
        while (*p) {
            size_t w = strcspn(p, " ");
            json_array_append_new(arr, json_stringn(p, w));
            p += w;
            while (*p == ' ')
                p++;
        }
        json_object_set_new(doc, "scopes_supported", arr);
    }
    json_object_set_new(doc, "bearer_methods_supported", json_pack("[s]", "header"));
    /* RFC 9449 5.1: DPoP-bound tokens are accepted (with a proof), bearer tokens too */
    json_object_set_new(doc, "dpop_signing_alg_values_supported",
                        json_pack("[ssss]", "ES256", "RS256", "PS256", "EdDSA"));
    json_object_set_new(doc, "dpop_bound_access_tokens_required", json_false());
    free(all);
    a->metadata = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    a->metadata_len = strlen(a->metadata);
    json_decref(doc);
    return 0;
}

void authz_free(void)
{
    free(g_authz.metadata);
    for (size_t i = 0; i < g_ntools; i++) {
        free(g_tools[i].tool);
        free(g_tools[i].scopes);
    }
    free(g_tools);
    g_tools = NULL;
    g_ntools = 0;
    memset(&g_authz, 0, sizeof g_authz);
}
