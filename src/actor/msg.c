/* Threads: any thread. */
/* Message allocation. Any thread. */
#include "actor/msg.h"

#include <stdlib.h>
#include <string.h>

wmsg_t *wmsg_new(wmsg_type_t type)
{
    wmsg_t *m = xcalloc(1, sizeof *m);
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
    free(m);
}

hmsg_t *hmsg_new(hmsg_type_t type, conn_ref_t conn)
{
    hmsg_t *m = xcalloc(1, sizeof *m);
    m->type = type;
    m->conn = conn;
    return m;
}

void hmsg_free(hmsg_t *m)
{
    if (!m)
        return;
    free(m->body);
    free(m->req_id);
    free(m);
}
