/* Threads: any thread. */
/* Frames of a refused turn: see refuse.h. Any thread. */
#include "actor/refuse.h"

#include "core/buf.h"
#include "core/jsonparse.h"
#include "wire/sse.h"
#include "wire/jsonrpc.h"

#include <stdlib.h>
#include <string.h>

json_t *refuse_error(const json_t *id, const char *msg)
{
    return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, msg, NULL);
}

static bool is_response(const json_t *msg)
{
    return json_is_object(msg) && jsonrpc_id_valid(json_object_get(msg, "id")) &&
           (json_object_get(msg, "result") || json_object_get(msg, "error"));
}

/* The id of a response as the server writes one (the id before the result or the error),
 * read without the rest: a handler's result may nest 50,000 levels (MCPD_RESULT_MAX_DEPTH),
 * past the 2048 that json_parse_buf reads. NULL when text is no such response (or its id is
 * not one a request may have, as is_response). */
static json_t *written_response_id(const char *text, size_t len)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    const size_t hl = sizeof head - 1;
    if (len <= hl || memcmp(text, head, hl) != 0)
        return NULL;
    /* the first `,"` ends the id: inside a JSON string a quote is escaped */
    const char *end = memmem(text + hl, len - hl, ",\"", 2);
    if (!end)
        return NULL;
    size_t rest = len - (size_t)(end - text);
    if (!(rest > 10 && !memcmp(end, ",\"result\":", 10)) &&
        !(rest > 9 && !memcmp(end, ",\"error\":", 9)))
        return NULL;
    return jsonrpc_id_parse(text + hl, (size_t)(end - (text + hl)));
}

/* collect_ids for data the parser refused: each response of it (a batch's, one by one, cut
 * apart by jsonrpc_text_len, which does not recurse) as the server writes them. */
static void collect_written_ids(json_t *ids, const char *data, size_t len)
{
    bool batch = data[0] == '[';
    for (size_t i = batch ? 1 : 0; i < len;) {
        size_t n = jsonrpc_text_len(data + i, len - i);
        json_t *id = written_response_id(data + i, n);
        if (id)
            json_array_append_new(ids, id);
        if (!batch)
            return;
        for (i += n; i < len && (data[i] == ',' || data[i] == ']');)
            i++;
    }
}

/* Appends the ids of the responses in one event's data to ids. */
static void collect_ids(json_t *ids, const char *data, size_t len)
{
    if (len == 0)
        return;
    json_t *msg = json_parse_buf(data, len, NULL, 0, NULL);
    if (!msg) {
        collect_written_ids(ids, data, len);
        return;
    }
    size_t n = json_is_array(msg) ? json_array_size(msg) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *one = json_is_array(msg) ? json_array_get(msg, i) : msg;
        if (is_response(one))
            json_array_append(ids, json_object_get(one, "id"));
    }
    json_decref(msg);
}

json_t *refuse_response_ids_in_sse(const char *text, size_t len)
{
    json_t *ids = json_array();
    buf_t data = {0};
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t ll = (size_t)(le - p);
        if (ll && p[ll - 1] == '\r')
            ll--;
        if (ll == 0) { /* the end of an event */
            collect_ids(ids, data.p ? data.p : "", data.len);
            data.len = 0;
        } else if (ll >= 5 && memcmp(p, "data:", 5) == 0) {
            size_t skip = ll > 5 && p[5] == ' ' ? 6 : 5;
            if (data.len)
                buf_add(&data, "\n", 1);
            buf_add(&data, p + skip, ll - skip);
        }
        p = nl ? nl + 1 : end;
    }
    collect_ids(ids, data.p ? data.p : "", data.len); /* an unterminated last event */
    buf_free(&data);
    return ids;
}

/* The one request id a replaced body answers, or NULL (none, several, or not JSON-RPC). */
static json_t *single_id(const hmsg_t *m)
{
    if (m->req_id)
        return json_parse_buf(m->req_id, strlen(m->req_id), NULL, 0, NULL);
    if (!m->body || !m->len)
        return NULL;
    json_t *ids;
    if (m->type == HM_REPLY) {
        ids = json_array();
        collect_ids(ids, m->body, m->len);
    } else {
        ids = refuse_response_ids_in_sse(m->body, m->len);
    }
    json_t *id = json_array_size(ids) == 1 ? json_incref(json_array_get(ids, 0)) : NULL;
    json_decref(ids);
    return id;
}

static hmsg_t *refused_reply(hmsg_t *m, const char *msg)
{
    json_t *id = single_id(m);
    json_t *err = refuse_error(id, msg);
    json_decref(id);
    hmsg_t *r = hmsg_new(HM_REPLY, m->conn);
    r->after = m->after; /* it stays in the queue it was taken from (fail_turn) */
    r->status = 503;
    r->content_type = "application/json";
    r->retry_after = REFUSE_RETRY_AFTER;
    r->body = jsonrpc_dump(err, &r->len);
    json_decref(err);
    hmsg_free(m);
    return r;
}

hmsg_t *refuse_read_failed(conn_ref_t conn, const json_t *id, const char *msg)
{
    json_t *err = jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, msg, NULL);
    hmsg_t *r = hmsg_new(HM_REPLY, conn);
    r->status = 503;
    r->content_type = "application/json";
    r->retry_after = REFUSE_RETRY_AFTER;
    r->body = jsonrpc_dump(err, &r->len);
    json_decref(err);
    return r;
}

/* An SSE continuation: an id-less error event per response it carried, nothing else. */
static hmsg_t *refused_sse_data(hmsg_t *m, const char *msg)
{
    json_t *ids = refuse_response_ids_in_sse(m->body ? m->body : "", m->len);
    buf_t out = {0};
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id) {
        json_t *err = refuse_error(id, msg);
        size_t len;
        char *text = jsonrpc_dump(err, &len);
        sse_frame_event(&out, NULL, text, len);
        free(text);
        json_decref(err);
    }
    json_decref(ids);
    if (!out.len) {
        buf_free(&out);
        hmsg_free(m);
        return NULL;
    }
    free(m->body);
    m->body = buf_steal(&out, &m->len);
    return m;
}

hmsg_t *refuse_frame(hmsg_t *m, const char *msg)
{
    switch (m->type) {
    case HM_REPLY:
    case HM_SSE_START:
        return refused_reply(m, msg);
    case HM_SSE_DATA:
        return refused_sse_data(m, msg);
    case HM_SSE_END:
        return m;
    }
    return m;
}
