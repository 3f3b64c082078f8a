/* Threads: any thread. */
/* Message allocation. Any thread. */
#include "actor/msg.h"

#include "core/blockcache.h"
#include "core/config.h"
#include "core/jsonparse.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

wmsg_t *wmsg_new(wmsg_type_t type)
{
    /* from the thread's block cache: a message is made on one thread and freed on another */
    wmsg_t *m = blockcache_zalloc(sizeof *m);
    m->type = type;
    if (type == WM_POST)
        m->u.post.kinds = m->u.post.kinds_inline;
    return m;
}

void wmsg_free(wmsg_t *m)
{
    if (!m)
        return;
    switch (m->type) {
    case WM_POST:
    case WM_GET:
    case WM_DELETE:
        if (m->type == WM_POST && m->u.post.holds_session)
            principal_give(m->u.client.principal, PR_SESSIONS); /* no session was made */
        principal_unref(m->u.client.principal);
        if (m->type != WM_POST)
            break;
        json_decref(m->u.post.body);
        if (m->u.post.as_text)
            blockcache_free(m->u.post.raw);
        json_decref(m->u.post.param_hdrs);
        if (m->u.post.kinds != m->u.post.kinds_inline)
            free(m->u.post.kinds);
        break;
    case WM_TOOL_OUT:
    case WM_TOOL_REQ:
        json_decref(m->u.tool.payload);
        break;
    case WM_RECOVER:
        json_decref(m->u.recover.list);
        break;
    case WM_BROADCAST:
        json_decref(m->u.bcast.note);
        break;
    default:
        break;
    }
    blockcache_free(m);
}

hmsg_t *hmsg_new(hmsg_type_t type, conn_ref_t conn)
{
    hmsg_t *m = blockcache_zalloc(sizeof *m);
    m->type = type;
    m->conn = conn;
    return m;
}

hmsg_t *hmsg_reply(conn_ref_t conn, int status, char *body, size_t len, const char *sid_header,
                   const char *retry_after)
{
    if (!conn.gen) {
        free(body);
        return NULL;
    }
    hmsg_t *h = hmsg_new(HM_REPLY, conn);
    h->status = status;
    if (status == 503)
        h->retry_after = retry_after ? retry_after : "1"; /* a shard moving: ask again soon */
    if (body) {
        h->content_type = "application/json";
        h->body = body;
        h->len = len;
    }
    if (sid_header)
        memcpy(h->session_id, sid_header, SESSION_ID_LEN + 1);
    return h;
}

void hmsg_free(hmsg_t *m)
{
    if (!m)
        return;
    blockcache_free(m->body); /* json_dumps' text: jansson's allocator is the cache */
    free(m->req_id);
    blockcache_free(m);
}

void wmsg_classify(wmsg_t *m, jr_kind_t kind, const jr_view_t *v, size_t nodes)
{
    json_t *body = m->u.post.body;
    m->u.post.nodes = nodes > UINT32_MAX ? UINT32_MAX : (uint32_t)nodes;
    if (!json_is_array(body)) {
        m->u.post.v = *v;
        m->u.post.n = 1;
        m->u.post.kinds[0] = (signed char)kind;
        return;
    }
    m->u.post.v = (jr_view_t){0}; /* (where the text was, for one that came as text) */
    size_t n = json_array_size(body);
    m->u.post.n = n;
    if (n > sizeof m->u.post.kinds_inline)
        m->u.post.kinds = xmalloc(n);
    for (size_t i = 0; i < n; i++) {
        const char *why;
        m->u.post.kinds[i] = (signed char)jsonrpc_classify(json_array_get(body, i), &why);
    }
    /* a request repeating an earlier one's id is answered as invalid: one stream's calls are
     * keyed by id in the in-flight index (stream.c) */
    jsonrpc_batch_repeats(body, m->u.post.kinds);
}

void wmsg_parse_raw(wmsg_t *m)
{
    if (m->type != WM_POST || !m->u.post.as_text)
        return;
    json_parse_info_t info;
    m->u.post.body = json_parse_buf_bounded(m->u.post.raw, m->u.post.raw_len,
                                            (size_t)g_cfg.max_json_nodes, &info, NULL, 0, NULL);
    REQUIRE(m->u.post.body != NULL);
    blockcache_free(m->u.post.raw);
    m->u.post.as_text = false; /* (raw shares its place with v, set below) */
    jr_view_t v = {0};
    jr_kind_t kind = JR_INVALID;
    if (!json_is_array(m->u.post.body)) {
        const char *why;
        kind = jsonrpc_classify_view(m->u.post.body, &why, &v);
    }
    wmsg_classify(m, kind, &v, info.nodes);
}
