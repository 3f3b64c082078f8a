/* Message allocation. Any thread. */
#include "actor/msg.h"

#include <stdlib.h>
#include <string.h>

wmsg_t *wmsg_new(wmsg_type_t type)
{
    wmsg_t *m = xcalloc(1, sizeof *m);
    m->type = type;
    return m;
}

void wmsg_free(wmsg_t *m)
{
    if (!m)
        return;
    json_decref(m->body);
    json_decref(m->payload);
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
