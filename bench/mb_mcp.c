/* mcpbench MCP client pieces. Main thread only (see mb_mcp.h).
 *
 * JSON bodies are checked with a substring search (the call check is on the hot path; the
 * server's serializer decides the spacing, and none of them put a space after the colon), and
 * parsed with jansson only when a field is needed: SSE events (to find the response by id),
 * initialize (the negotiated version) and ping.
 */
#include "mb_mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mb_hs_requests = 2;

void mb_sess_init(mb_sess_t *s, const char *pv)
{
    memset(s, 0, sizeof *s);
    snprintf(s->pv, sizeof s->pv, "%s", pv);
    s->next_id = 1;
    mb_sess_set(s, "", pv);
}

void mb_sess_set(mb_sess_t *s, const char *sid, const char *pv)
{
    snprintf(s->sid, sizeof s->sid, "%s", sid);
    snprintf(s->pv, sizeof s->pv, "%s", pv);
    int n;
    if (s->sid[0])
        n = snprintf(s->hdr, sizeof s->hdr, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n",
                     s->sid, s->pv);
    else
        n = snprintf(s->hdr, sizeof s->hdr, "MCP-Protocol-Version: %s\r\n", s->pv);
    s->hdr_len = n > 0 && (size_t)n < sizeof s->hdr ? (size_t)n : 0;
}

void mb_sess_set_modern(mb_sess_t *s, const char *pv, const char *method, const char *name)
{
    s->sid[0] = '\0';
    snprintf(s->pv, sizeof s->pv, "%s", pv);
    int n = snprintf(s->hdr, sizeof s->hdr, "MCP-Protocol-Version: %s\r\nMcp-Method: %s\r\n%s%s%s",
                     s->pv, method, name ? "Mcp-Name: " : "", name ? name : "", name ? "\r\n" : "");
    if (n <= 0 || (size_t)n >= sizeof s->hdr) {
        fprintf(stderr, "mcpbench: method or name too long for the request headers\n");
        abort();
    }
    s->hdr_len = (size_t)n;
}

const char mb_body_initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

static char *dump_take(json_t *o, size_t *len)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s) {
        fprintf(stderr, "mcpbench: cannot serialize a request\n");
        abort();
    }
    *len = strlen(s);
    return s;
}

char *mb_body_initialize(int64_t id, const char *pv, size_t *len)
{
    json_t *o = json_pack("{s:s, s:I, s:s, s:{s:s, s:{}, s:{s:s, s:s}}}", "jsonrpc", "2.0", "id",
                          (json_int_t)id, "method", "initialize", "params", "protocolVersion", pv,
                          "capabilities", "clientInfo", "name", "mcpbench", "version", MB_VERSION);
    return dump_take(o, len);
}

char *mb_body_call(int64_t id, const char *tool, const char *args_json, size_t *len)
{
    json_t *args = json_loads(args_json, 0, NULL);
    if (!args)
        args = json_object();
    json_t *o = json_pack("{s:s, s:I, s:s, s:{s:s, s:o}}", "jsonrpc", "2.0", "id", (json_int_t)id,
                          "method", "tools/call", "params", "name", tool, "arguments", args);
    return dump_take(o, len);
}

char *mb_body_call_modern(int64_t id, const char *tool, const char *args_json, const char *pv,
                          size_t *len)
{
    json_t *args = json_loads(args_json, 0, NULL);
    if (!args)
        args = json_object();
    json_t *o = json_pack("{s:s, s:I, s:s, s:{s:s, s:o, s:{s:s, s:{s:s, s:s}, s:{}}}}", "jsonrpc",
                          "2.0", "id", (json_int_t)id, "method", "tools/call", "params", "name",
                          tool, "arguments", args, "_meta",
                          "io.modelcontextprotocol/protocolVersion", pv,
                          "io.modelcontextprotocol/clientInfo", "name", "mcpbench", "version",
                          MB_VERSION, "io.modelcontextprotocol/clientCapabilities");
    return dump_take(o, len);
}

char *mb_body_ping(int64_t id, size_t *len)
{
    json_t *o = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)id, "method",
                          "ping");
    return dump_take(o, len);
}

/* Skips one JSON value at *p (no validation beyond structure); false on malformed input. */
static bool skip_value(const char **pp, const char *end)
{
    const char *p = *pp;
    int depth = 0;
    do {
        while (p < end &&
               (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',' || *p == ':'))
            p++;
        if (p >= end)
            return false;
        char c = *p;
        if (c == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
            if (p >= end)
                return false;
            p++;
        } else if (c == '{' || c == '[') {
            depth++;
            p++;
        } else if (c == '}' || c == ']') {
            depth--;
            p++;
        } else {
            while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != ':')
                p++;
        }
    } while (depth > 0);
    *pp = p;
    return true;
}

/* Classifies a JSON-RPC message by its top-level keys without building it: the load generator
 * reads every event of a stream and must not be the bottleneck (jansson took ~23k
 * instructions per event). NULL-free, allocation-free; MB_MSG_BAD when it is not an object. */
static mb_msg_t scan_classify(const char *s, size_t len, int64_t *id)
{
    const char *p = s, *end = s + len;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    if (p >= end || *p != '{')
        return MB_MSG_BAD;
    p++;
    bool method = false, has_id = false, result = false, error = false;
    int64_t num = -1;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (p < end && *p == '}')
            break;
        if (p >= end || *p != '"')
            return MB_MSG_BAD;
        const char *k = ++p;
        while (p < end && *p != '"')
            p += *p == '\\' ? 2 : 1;
        if (p >= end)
            return MB_MSG_BAD;
        size_t kl = (size_t)(p - k);
        p++;
        while (p < end && (*p == ' ' || *p == ':'))
            p++;
        const char *v = p;
        if (!skip_value(&p, end))
            return MB_MSG_BAD;
        if (kl == 6 && memcmp(k, "method", 6) == 0)
            method = true;
        else if (kl == 6 && memcmp(k, "result", 6) == 0)
            result = true;
        else if (kl == 5 && memcmp(k, "error", 5) == 0)
            error = true;
        else if (kl == 2 && memcmp(k, "id", 2) == 0) {
            has_id = v < end && *v != 'n'; /* null is no id */
            char *e;
            long long n = strtoll(v, &e, 10);
            if (e != v && (e >= end || *e == ',' || *e == '}' || *e == ' '))
                num = n;
        }
    }
    if (method)
        return has_id ? MB_MSG_REQUEST : MB_MSG_NOTIFICATION;
    if (!result && !error)
        return MB_MSG_BAD;
    *id = num; /* responses only, as before; a string id stays -1: not one of ours */
    return result ? MB_MSG_RESPONSE : MB_MSG_ERROR;
}

mb_msg_t mb_msg_classify(const char *data, size_t len, int64_t *id, json_t **keep)
{
    *id = -1;
    if (!keep)
        return scan_classify(data, len, id);
    *keep = NULL;
    json_t *o = json_loadb(data, len, 0, NULL);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return MB_MSG_BAD;
    }
    mb_msg_t kind;
    json_t *jid = json_object_get(o, "id");
    if (json_object_get(o, "method"))
        kind = jid ? MB_MSG_REQUEST : MB_MSG_NOTIFICATION;
    else if (json_object_get(o, "result"))
        kind = MB_MSG_RESPONSE;
    else if (json_object_get(o, "error"))
        kind = MB_MSG_ERROR;
    else
        kind = MB_MSG_BAD;
    if ((kind == MB_MSG_RESPONSE || kind == MB_MSG_ERROR) && json_is_integer(jid))
        *id = (int64_t)json_integer_value(jid);
    if (keep)
        *keep = o;
    else
        json_decref(o);
    return kind;
}

/* ---- JSON-RPC over POST ---- */

void mb_rpc_clear(mb_rpc_t *r)
{
    json_decref(r->response);
    r->response = NULL;
    r->status = 0;
    r->ctype = MB_CT_NONE;
    r->sid[0] = '\0';
    r->got_response = r->is_error = r->check_ok = r->tool_error = false;
    r->first_id[0] = '\0';
    r->has_first_id = false;
    r->notes = 0;
}

static bool contains(const char *p, size_t n, const char *s, size_t sl)
{
    if (sl == 0)
        return true;
    if (!p || !s || n < sl)
        return false;
    return memmem(p, n, s, sl) != NULL;
}

/* A tools/call result that reports the tool's failure. An echoed text cannot fake it: inside a JSON
 * string its quotes are escaped. */
static bool has_tool_error(const char *p, size_t n)
{
    return contains(p, n, "\"isError\":true", 14) || contains(p, n, "\"isError\": true", 15);
}

static int rpc_on_event(mb_req_t *q, const mb_sse_ev_t *ev)
{
    mb_rpc_t *r = q->ud;
    if (ev->has_id && !r->has_first_id && ev->id_len < sizeof r->first_id) {
        memcpy(r->first_id, ev->id, ev->id_len);
        r->first_id[ev->id_len] = '\0';
        r->has_first_id = true;
    }
    if (!ev->has_data || ev->data_len == 0)
        return MB_SSE_CONTINUE; /* a priming event */
    int64_t id;
    json_t *msg = NULL;
    mb_msg_t kind = mb_msg_classify(ev->data, ev->data_len, &id, r->want_response ? &msg : NULL);
    if (kind == MB_MSG_NOTIFICATION) {
        r->notes++;
    } else if ((kind == MB_MSG_RESPONSE || kind == MB_MSG_ERROR) && id == r->id) {
        r->got_response = true;
        r->is_error = kind == MB_MSG_ERROR;
        r->tool_error = !r->is_error && has_tool_error(ev->data, ev->data_len);
        r->check_ok = contains(ev->data, ev->data_len, r->check, r->check_len);
        if (msg) {
            json_decref(r->response);
            r->response = msg;
            msg = NULL;
        }
        json_decref(msg);
        return r->stop_on_response ? MB_SSE_STOP : MB_SSE_CONTINUE;
    }
    json_decref(msg);
    return MB_SSE_CONTINUE;
}

static void rpc_on_done(mb_req_t *q, mb_err_t err, const mb_resp_t *resp)
{
    mb_rpc_t *r = q->ud;
    if (err != MB_OK) {
        r->done(r, err);
        return;
    }
    r->status = resp->status;
    r->ctype = resp->ctype;
    snprintf(r->sid, sizeof r->sid, "%s", resp->session_id);
    if (resp->ctype != MB_CT_SSE && resp->body_len > 0) {
        const char *b = resp->body;
        size_t n = resp->body_len;
        if (r->want_response) {
            int64_t id;
            json_t *msg = NULL;
            mb_msg_t kind = mb_msg_classify(b, n, &id, &msg);
            r->got_response = kind == MB_MSG_RESPONSE || kind == MB_MSG_ERROR;
            r->is_error = kind == MB_MSG_ERROR;
            json_decref(r->response);
            r->response = msg;
        } else {
            /* hot path: no parse. A result carries "result"; an error "error" */
            r->got_response = contains(b, n, "\"result\"", 8) || contains(b, n, "\"error\"", 7);
            r->is_error = !contains(b, n, "\"result\"", 8);
        }
        r->tool_error = !r->is_error && has_tool_error(b, n);
        r->check_ok = contains(b, n, r->check, r->check_len);
    }
    r->done(r, MB_OK);
}

void mb_rpc_post(mb_rpc_t *r, mb_conn_t *c, const mb_sess_t *s, const char *body, size_t len)
{
    mb_rpc_clear(r);
    memset(&r->req, 0, sizeof r->req);
    r->req.method = "POST";
    r->req.headers = s ? s->hdr : NULL;
    r->req.headers_len = s ? s->hdr_len : 0;
    r->req.body = body;
    r->req.body_len = len;
    r->req.on_event = rpc_on_event;
    r->req.on_done = rpc_on_done;
    r->req.ud = r;
    mb_conn_send(c, &r->req);
}

mb_err_t mb_rpc_verdict(const mb_rpc_t *r)
{
    if (r->status != 200)
        return MB_E_STATUS;
    if (!r->got_response || r->is_error)
        return MB_E_PROTO;
    if (r->tool_error)
        return MB_E_BODY;
    if (r->check_len && !r->check_ok)
        return MB_E_BODY;
    return MB_OK;
}

/* ---- the handshake operation ---- */

typedef struct hs_op {
    mb_op_t op;
    mb_rpc_t rpc;
    mb_req_t del;
    mb_sess_t own;
    mb_sess_t *sess;
    bool do_delete;
    int step;
    char *body;
    size_t blen;
} hs_op_t;

static void hs_finish(hs_op_t *h, mb_err_t err, int status)
{
    h->sess->ready = err == MB_OK; /* a session that setup could not initialize is never used */
    h->op.status = status;
    mb_engine_op_done(&h->op, err, -1);
}

static void hs_del_done(mb_req_t *q, mb_err_t err, const mb_resp_t *resp)
{
    hs_op_t *h = q->ud;
    if (err != MB_OK) {
        hs_finish(h, err, 0);
        return;
    }
    mb_hs_requests = 3;
    bool ok = (resp->status >= 200 && resp->status < 300) || resp->status == 405;
    hs_finish(h, ok ? MB_OK : MB_E_STATUS, resp->status);
}

static void hs_rpc_done(mb_rpc_t *r, mb_err_t err)
{
    hs_op_t *h = r->ud;
    if (err != MB_OK) {
        hs_finish(h, err, 0);
        return;
    }
    if (h->step == 0) {
        mb_err_t v = mb_rpc_verdict(r);
        if (v != MB_OK) {
            hs_finish(h, v, r->status);
            return;
        }
        const char *pv = h->sess->pv;
        json_t *res = json_object_get(r->response, "result");
        json_t *jpv = json_object_get(res, "protocolVersion");
        if (json_is_string(jpv))
            pv = json_string_value(jpv);
        char pvcopy[40];
        snprintf(pvcopy, sizeof pvcopy, "%s", pv);
        mb_sess_set(h->sess, r->sid, pvcopy);
        h->step = 1;
        r->want_response = false;
        mb_rpc_post(r, h->op.slot->conn, h->sess, mb_body_initialized, strlen(mb_body_initialized));
        return;
    }
    /* step 1: notifications/initialized gets 202 (a sessionless responder may say 200) */
    if (r->status < 200 || r->status >= 300) {
        hs_finish(h, MB_E_STATUS, r->status);
        return;
    }
    if (!h->do_delete || !h->sess->sid[0]) {
        mb_hs_requests = 2;
        hs_finish(h, MB_OK, 0);
        return;
    }
    h->step = 2;
    memset(&h->del, 0, sizeof h->del);
    h->del.method = "DELETE";
    h->del.headers = h->sess->hdr;
    h->del.headers_len = h->sess->hdr_len;
    h->del.on_done = hs_del_done;
    h->del.ud = h;
    mb_conn_send(h->op.slot->conn, &h->del);
}

static void hs_start(mb_op_t *op)
{
    hs_op_t *h = (hs_op_t *)op;
    h->step = 0;
    h->sess->next_id = 1;
    h->body = mb_body_initialize(h->sess->next_id++, h->sess->pv, &h->blen);
    h->rpc.id = 1;
    h->rpc.want_response = true;
    h->rpc.done = hs_rpc_done;
    h->rpc.ud = h;
    mb_rpc_post(&h->rpc, op->slot->conn, NULL, h->body, h->blen);
}

static void hs_destroy(mb_op_t *op)
{
    hs_op_t *h = (hs_op_t *)op;
    mb_rpc_clear(&h->rpc);
    free(h->body);
    free(h);
}

mb_op_t *mb_hs_op_new(mb_sess_t *sess, bool do_delete, const char *pv)
{
    hs_op_t *h = mb_xcalloc(1, sizeof *h);
    mb_op_init(&h->op, hs_start, hs_destroy);
    if (!sess) {
        mb_sess_init(&h->own, pv);
        sess = &h->own;
    }
    h->sess = sess;
    h->do_delete = do_delete;
    return &h->op;
}

typedef struct setup_ctx {
    mb_sess_t *sess;
    long n, next;
    long *slot_next; /* sticky: the next of each slot's own sessions (slot, slot + slots, ...) */
    const char *pv;
} setup_ctx_t;

static mb_op_t *setup_next(mb_engine_t *e, mb_slot_t *s)
{
    setup_ctx_t *x = e->cfg.ud;
    long i = x->slot_next ? x->slot_next[s->idx] : x->next;
    if (i >= x->n) {
        if (!x->slot_next || x->next >= x->n)
            mb_engine_finish(e);
        return NULL;
    }
    if (x->slot_next)
        x->slot_next[s->idx] += e->cfg.slots;
    x->next++;
    mb_sess_t *sess = &x->sess[i];
    mb_sess_init(sess, x->pv);
    sess->idx = (int)i;
    return mb_hs_op_new(sess, false, x->pv);
}

long mb_setup_sessions(mb_target_t *t, mb_sess_t *sess, long n, int slots, mb_conn_t **conns,
                       int64_t timeout_us, const char *pv, const char *label, bool progress,
                       mb_stats_t *stats_out)
{
    setup_ctx_t x = {.sess = sess, .n = n, .next = 0, .pv = pv};
    if (!conns && slots > n)
        slots = (int)(n > 0 ? n : 1);
    if (conns) {
        x.slot_next = mb_xcalloc((size_t)slots, sizeof *x.slot_next);
        for (int i = 0; i < slots; i++)
            x.slot_next[i] = i;
    }
    mb_engine_cfg_t cfg = {
        .label = label,
        .slots = slots,
        .conns = conns,
        .max_ops = n,
        .timeout_us = timeout_us,
        .progress = progress,
        .next_op = setup_next,
        .ud = &x,
    };
    mb_engine_t e;
    mb_engine_init(&e, t, &cfg);
    mb_engine_run(&e);
    long failed = (long)(n - (long)e.total.ok);
    if (stats_out)
        *stats_out = e.total;
    mb_engine_free(&e);
    free(x.slot_next);
    return failed;
}

/* ---- stats ---- */

typedef struct get_ctx {
    bool done;
    mb_err_t err;
    int status;
    mb_buf_t body;
} get_ctx_t;

static void get_done(mb_req_t *q, mb_err_t err, const mb_resp_t *resp)
{
    get_ctx_t *g = q->ud;
    g->err = err;
    if (err == MB_OK) {
        g->status = resp->status;
        mb_buf_add(&g->body, resp->body, resp->body_len);
    }
    g->done = true;
}

json_t *mb_get_json(struct event_base *base, const char *url, bool allow_remote, int64_t timeout_us,
                    char *err, size_t errlen)
{
    mb_target_t t;
    if (mb_target_parse(&t, base, url, allow_remote, err, errlen) != 0)
        return NULL;
    mb_conn_t *c = mb_conn_new(&t);
    get_ctx_t g = {0};
    mb_req_t q = {.method = "GET", .on_done = get_done, .ud = &g};
    mb_conn_send(c, &q);
    mb_loop_until(base, &g.done, timeout_us);
    mb_conn_free(c);
    json_t *o = NULL;
    if (!g.done)
        snprintf(err, errlen, "%s: timed out", url);
    else if (g.err != MB_OK)
        snprintf(err, errlen, "%s: %s error", url, mb_err_names[g.err]);
    else if (g.status != 200)
        snprintf(err, errlen, "%s: HTTP %d", url, g.status);
    else if (!(o = json_loadb(g.body.p ? g.body.p : "", g.body.len, 0, NULL)))
        snprintf(err, errlen, "%s: not JSON", url);
    mb_buf_free(&g.body);
    return o;
}

int64_t mb_json_int(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_real(v))
        return (int64_t)json_real_value(v);
    return -1;
}

static int64_t proc_rss(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int64_t kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = strtoll(line + 6, NULL, 10);
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

int64_t mb_read_rss(struct event_base *base, const char *stats_url, int pid, bool allow_remote,
                    json_t **stats_out)
{
    if (stats_out)
        *stats_out = NULL;
    int64_t rss = -1;
    json_t *o = NULL;
    if (stats_url) {
        char err[512];
        o = mb_get_json(base, stats_url, allow_remote, 5000000, err, sizeof err);
        if (!o) {
            fprintf(stderr, "mcpbench: stats: %s\n", err);
        } else {
            rss = mb_json_int(o, "rss_bytes");
            if (rss < 0)
                rss = mb_json_int(o, "rss");
        }
    }
    if (pid > 0)
        rss = proc_rss(pid);
    if (stats_out)
        *stats_out = o;
    else
        json_decref(o);
    return rss;
}
