/* mcpbench scenarios call, handshake, sessions and wake. Main thread only.
 *
 * call: sessions are set up first (not measured), then every operation is one tools/call echo on
 * the next session round-robin; it counts only with a 200, a JSON-RPC result for its id and the
 * echoed text in it. The request body is a prebuilt prefix, the id, and a prebuilt suffix.
 * call-modern: the same call in the stateless 2026-07-28 era: no setup, no session; every request
 * carries params._meta (protocol version, client info, client capabilities) and the headers
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name; ids are unique over the run.
 * handshake: initialize + initialized + DELETE, each operation on a session of its own.
 * sessions: RSS before and after creating N sessions (and after --settle), from the stats URL.
 * wake: N sessions, --settle idle seconds (the server hibernates them), then one ping each; a
 * second ping round gives the same server's warm latency for contrast. A wake after a restart is
 * two runs: --save-sessions creates the sessions and writes their ids to a file; the server is
 * stopped and started again on the same data directory; --load-sessions wakes a random draw of
 * them (no setup, no settle: after a restart every stored session is hibernated).
 */
#include "mb_scen.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t mb_cfg_duration_us(const mb_cfg_t *c)
{
    return (int64_t)(c->duration_s * 1e6);
}

int64_t mb_cfg_timeout_us(const mb_cfg_t *c)
{
    return (int64_t)(c->timeout_s * 1e6);
}

bool mb_cfg_progress(const mb_cfg_t *c)
{
    return !c->quiet;
}

int64_t mb_args_count(const char *args_json)
{
    json_t *o = json_loads(args_json, 0, NULL);
    int64_t n = 1;
    json_t *v = json_object_get(o, "count");
    if (json_is_integer(v))
        n = (int64_t)json_integer_value(v);
    json_decref(o);
    return n > 0 ? n : 1;
}

char *mb_args_with_count(const char *args_json, int64_t k, bool for_request)
{
    json_t *o = json_loads(args_json, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    json_object_set_new(o, "count", json_integer((json_int_t)k));
    if (for_request) {
        if (json_object_get(o, "target"))
            json_object_set_new(o, "target", json_string("request"));
        if (json_object_get(o, "standalone"))
            json_object_set_new(o, "standalone", json_false());
    }
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static void describe_errors(const mb_stats_t *s, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 1; i < MB_E__COUNT && k < cap; i++) {
        if (!s->err[i])
            continue;
        k += (size_t)snprintf(out + k, cap - k, "%s%s %llu", k ? ", " : "", mb_err_names[i],
                              (unsigned long long)s->err[i]);
        if (i == MB_E_STATUS)
            for (int st = 0; st < 600 && k < cap; st++)
                if (s->status[st])
                    k += (size_t)snprintf(out + k, cap - k, " [HTTP %d x%llu]", st,
                                          (unsigned long long)s->status[st]);
    }
}

int mb_scen_setup_on(const mb_cfg_t *c, mb_target_t *t, mb_sess_t *sess, long n, mb_conn_t **conns,
                     mb_result_t *r)
{
    mb_stats_t st;
    long failed = mb_setup_sessions(t, sess, n, c->connections, conns, mb_cfg_timeout_us(c), c->pv,
                                    "setup", mb_cfg_progress(c), &st);
    if (failed > 0) {
        char why[256];
        describe_errors(&st, why, sizeof why);
        mb_result_fail(r, "%ld of %ld sessions could not be initialized (%s)", failed, n, why);
        return -1;
    }
    return 0;
}

int mb_scen_setup(const mb_cfg_t *c, mb_target_t *t, mb_sess_t *sess, long n, mb_result_t *r)
{
    return mb_scen_setup_on(c, t, sess, n, NULL, r);
}

int mb_scen_target(mb_target_t *t, const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r)
{
    char err[512];
    if (mb_target_parse(t, c->base, p->url, c->allow_remote, err, sizeof err) != 0) {
        mb_result_fail(r, "%s", err);
        return -1;
    }
    return 0;
}

/* ---- call ---- */

struct mb_call_ctx {
    mb_sess_t *sess;
    long nsess, rr;
    int nslots; /* sticky: slot k calls sessions k, k + nslots, ... */
    long *slot_rr;
    char *prefix, *suffix;
    size_t plen, slen;
    char *check;
    size_t check_len;
    uint64_t n_json, n_sse, n_other;
};

typedef struct call_op {
    mb_op_t op;
    mb_rpc_t rpc;
    mb_call_ctx_t *x;
    size_t blen;
    char body[]; /* prefix, id, suffix */
} call_op_t;

mb_call_ctx_t *mb_call_ctx_new(const mb_cfg_t *c, mb_sess_t *sess, long n)
{
    mb_call_ctx_t *x = mb_xcalloc(1, sizeof *x);
    x->sess = sess;
    x->nsess = n;
    json_t *args = json_pack("{s:s}", c->call_arg, c->text);
    char *a = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    size_t len;
    char *body = c->modern ? mb_body_call_modern(0, c->call_tool, a, c->pv, &len)
                           : mb_body_call(0, c->call_tool, a, &len);
    free(a);
    static const char idk[] = "\"id\":0";
    char *at = strstr(body, idk);
    if (!at) {
        fprintf(stderr, "mcpbench: internal error: no id in %s\n", body);
        abort();
    }
    x->plen = (size_t)(at - body) + 5; /* through "id": */
    x->prefix = mb_xmalloc(x->plen + 1);
    memcpy(x->prefix, body, x->plen);
    x->prefix[x->plen] = '\0';
    x->suffix = strdup(at + 6);
    x->slen = strlen(x->suffix);
    free(body);
    json_t *t = json_string(c->text);
    /* the text and its closing quote: an echo that adds a prefix ("Echo: TEXT") passes too */
    char *quoted = json_dumps(t, JSON_ENCODE_ANY);
    x->check = strdup(quoted + 1);
    free(quoted);
    json_decref(t);
    x->check_len = strlen(x->check);
    return x;
}

void mb_call_ctx_free(mb_call_ctx_t *x)
{
    if (!x)
        return;
    free(x->prefix);
    free(x->suffix);
    free(x->check);
    free(x->slot_rr);
    free(x);
}

const char *mb_call_ctx_ctype(const mb_call_ctx_t *x)
{
    if (x->n_json && x->n_sse)
        return "json+sse";
    if (x->n_sse)
        return "sse";
    if (x->n_json)
        return "json";
    return x->n_other ? "other" : "none";
}

static void call_done(mb_rpc_t *r, mb_err_t err)
{
    call_op_t *o = r->ud;
    if (err == MB_OK) {
        if (r->ctype == MB_CT_JSON)
            o->x->n_json++;
        else if (r->ctype == MB_CT_SSE)
            o->x->n_sse++;
        else
            o->x->n_other++;
        err = mb_rpc_verdict(r);
        o->op.status = r->status;
    }
    mb_engine_op_done(&o->op, err, -1);
}

static void call_start(mb_op_t *op)
{
    call_op_t *o = (call_op_t *)op;
    mb_call_ctx_t *x = o->x;
    long i = x->rr++ % x->nsess;
    if (x->slot_rr) {
        long k = op->slot->idx, per = (x->nsess - k + x->nslots - 1) / x->nslots;
        i = k + x->slot_rr[k]++ % per * x->nslots;
    }
    mb_sess_t *s = &x->sess[i];
    int64_t id = s->next_id++;
    size_t k = x->plen;
    k += mb_fmt_i64(o->body + k, id);
    memcpy(o->body + k, x->suffix, x->slen);
    k += x->slen;
    o->blen = k;
    o->rpc.id = id;
    o->rpc.check = x->check;
    o->rpc.check_len = x->check_len;
    o->rpc.done = call_done;
    o->rpc.ud = o;
    mb_rpc_post(&o->rpc, op->slot->conn, s, o->body, o->blen);
}

static void call_destroy(mb_op_t *op)
{
    call_op_t *o = (call_op_t *)op;
    mb_rpc_clear(&o->rpc);
    free(o);
}

mb_op_t *mb_call_op_new(mb_call_ctx_t *x)
{
    call_op_t *o = mb_xmalloc(sizeof *o + x->plen + x->slen + 24);
    memset(o, 0, sizeof *o);
    mb_op_init(&o->op, call_start, call_destroy);
    o->x = x;
    memcpy(o->body, x->prefix, x->plen);
    return &o->op;
}

static mb_op_t *call_next(mb_engine_t *e, mb_slot_t *s)
{
    return mb_call_op_new(e->cfg.ud);
}

int mb_scen_call(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r)
{
    mb_target_t t;
    if (mb_scen_target(&t, c, p, r) != 0)
        return -1;
    r->unit = "calls/s";
    /* modern: one sessionless header set and one id counter shared by every request */
    long nsess = c->modern ? 1 : c->sessions;
    mb_sess_t *sess = mb_xcalloc((size_t)nsess, sizeof *sess);
    mb_conn_t **conns = NULL; /* sticky: setup, warm-up and the run share them */
    int rc = -1;
    if (c->modern) {
        mb_sess_init(sess, c->pv);
        mb_sess_set_modern(sess, c->pv, "tools/call", c->call_tool);
        r->sessions = 0;
        mb_result_str(r, "protocol_version", c->pv);
    } else {
        if (c->sticky) {
            conns = mb_xcalloc((size_t)c->connections, sizeof *conns);
            for (int i = 0; i < c->connections; i++)
                conns[i] = mb_conn_new(&t);
        }
        if (mb_scen_setup_on(c, &t, sess, nsess, conns, r) != 0)
            goto out;
    }
    mb_call_ctx_t *x = mb_call_ctx_new(c, sess, nsess);
    if (conns) {
        x->nslots = c->connections;
        x->slot_rr = mb_xcalloc((size_t)c->connections, sizeof *x->slot_rr);
    }
    mb_engine_cfg_t ec = {
        .label = "call",
        .slots = c->connections,
        .conns = conns,
        .duration_us = mb_cfg_duration_us(c),
        .max_ops = c->requests,
        .rate = c->rate,
        .timeout_us = mb_cfg_timeout_us(c),
        .progress = mb_cfg_progress(c),
        .next_op = call_next,
        .ud = x,
    };
    mb_engine_t e;
    if (c->warmup_s > 0) {
        mb_engine_cfg_t wc = ec;
        wc.label = "warmup";
        wc.duration_us = (int64_t)(c->warmup_s * 1e6);
        wc.max_ops = 0;
        mb_engine_init(&e, &t, &wc);
        mb_engine_run(&e);
        mb_engine_free(&e);
        x->n_json = x->n_sse = x->n_other = 0;
    }
    int64_t cpu0 = mb_cpu_us();
    mb_engine_init(&e, &t, &ec);
    mb_engine_run(&e);
    int64_t cpu = mb_cpu_us() - cpu0;
    mb_result_from_engine(r, &e, -1);
    r->cpu_pct = 100.0 * (double)cpu / 1e6 / r->elapsed_s;
    mb_result_str(r, "content_type", mb_call_ctx_ctype(x));
    if (r->ok)
        mb_result_num(r, "client_cpu_us_per_call",
                      (double)cpu / (double)(r->ok + mb_result_errors(r)));
    if (c->rate > 0)
        mb_result_num(r, "target_rate", c->rate);
    mb_engine_free(&e);
    mb_call_ctx_free(x);
    rc = 0;
out:
    for (int i = 0; conns && i < c->connections; i++)
        mb_conn_free(conns[i]);
    free(conns);
    free(sess);
    return rc;
}

/* ---- handshake ---- */

static mb_op_t *hs_next(mb_engine_t *e, mb_slot_t *s)
{
    const mb_cfg_t *c = e->cfg.ud;
    return mb_hs_op_new(NULL, true, c->pv);
}

int mb_scen_handshake(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r)
{
    mb_target_t t;
    if (mb_scen_target(&t, c, p, r) != 0)
        return -1;
    r->unit = "sessions/s";
    r->sessions = 0;
    mb_engine_cfg_t ec = {
        .label = "handshake",
        .slots = c->connections,
        .duration_us = mb_cfg_duration_us(c),
        .max_ops = c->requests,
        .rate = c->rate,
        .timeout_us = mb_cfg_timeout_us(c),
        .progress = mb_cfg_progress(c),
        .next_op = hs_next,
        .ud = (void *)c,
    };
    mb_engine_t e;
    int64_t cpu0 = mb_cpu_us();
    mb_engine_init(&e, &t, &ec);
    mb_engine_run(&e);
    int64_t cpu = mb_cpu_us() - cpu0;
    mb_result_from_engine(r, &e, -1);
    r->cpu_pct = 100.0 * (double)cpu / 1e6 / r->elapsed_s;
    mb_result_num(r, "requests_per_handshake", mb_hs_requests);
    mb_result_num(r, "http_requests_per_s", r->throughput * mb_hs_requests);
    if (r->ok == 0 && mb_result_errors(r))
        mb_result_fail(r, "no handshake succeeded");
    mb_engine_free(&e);
    return 0;
}

/* ---- one request per session (wake pings, sessions --events) ---- */

typedef struct ping_ctx {
    mb_sess_t *sess;
    long n, next;
    const char *tool; /* NULL: ping; else tools/call tool with args */
    const char *args;
} ping_ctx_t;

typedef struct ping_op {
    mb_op_t op;
    mb_rpc_t rpc;
    char *body;
    size_t blen;
    mb_sess_t *sess;
    struct ping_ctx *x;
} ping_op_t;

static void ping_done(mb_rpc_t *r, mb_err_t err)
{
    ping_op_t *o = r->ud;
    if (err == MB_OK) {
        err = mb_rpc_verdict(r);
        o->op.status = r->status;
    }
    mb_engine_op_done(&o->op, err, -1);
}

static void ping_start(mb_op_t *op)
{
    ping_op_t *o = (ping_op_t *)op;
    int64_t id = o->sess->next_id++;
    o->body = o->x->tool ? mb_body_call(id, o->x->tool, o->x->args, &o->blen)
                         : mb_body_ping(id, &o->blen);
    o->rpc.id = id;
    o->rpc.done = ping_done;
    o->rpc.ud = o;
    mb_rpc_post(&o->rpc, op->slot->conn, o->sess, o->body, o->blen);
}

static void ping_destroy(mb_op_t *op)
{
    ping_op_t *o = (ping_op_t *)op;
    mb_rpc_clear(&o->rpc);
    free(o->body);
    free(o);
}

static mb_op_t *ping_next(mb_engine_t *e, mb_slot_t *s)
{
    ping_ctx_t *x = e->cfg.ud;
    while (x->next < x->n && !x->sess[x->next].ready)
        x->next++;
    if (x->next >= x->n) {
        mb_engine_finish(e);
        return NULL;
    }
    ping_op_t *o = mb_xcalloc(1, sizeof *o);
    mb_op_init(&o->op, ping_start, ping_destroy);
    o->sess = &x->sess[x->next++];
    o->x = x;
    return &o->op;
}

/* ---- sessions ---- */

int mb_scen_sessions(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r)
{
    mb_target_t t;
    if (mb_scen_target(&t, c, p, r) != 0)
        return -1;
    r->unit = "sessions/s";
    long n = c->sessions;
    bool have_rss = p->stats_url || p->pid > 0;
    if (!have_rss && !c->quiet)
        fprintf(stderr, "mcpbench: no --stats-url or --pid: RSS is not measured\n");

    /* warm-up: the server's code paths and allocator pools, then gone again (DELETE) */
    long warm = n / 10 < 200 ? n / 10 : 200;
    if (warm > 0) {
        mb_engine_cfg_t wc = {
            .label = "warmup",
            .slots = c->connections,
            .max_ops = warm,
            .timeout_us = mb_cfg_timeout_us(c),
            .progress = mb_cfg_progress(c),
            .next_op = hs_next,
            .ud = (void *)c,
        };
        mb_engine_t w;
        mb_engine_init(&w, &t, &wc);
        mb_engine_run(&w);
        mb_engine_free(&w);
        mb_sleep_loop(c->base, 200000);
    }
    json_t *st0 = NULL, *st1 = NULL;
    int64_t rss0 = have_rss ? mb_read_rss(c->base, p->stats_url, p->pid, c->allow_remote, &st0)
                            : -1;

    mb_sess_t *sess = mb_xcalloc((size_t)n, sizeof *sess);
    mb_stats_t st;
    int64_t cpu0 = mb_cpu_us();
    int64_t t0 = mb_now_us();
    long failed = mb_setup_sessions(&t, sess, n, c->connections, NULL, mb_cfg_timeout_us(c), c->pv,
                                    "sessions", mb_cfg_progress(c), &st);
    int64_t t1 = mb_now_us();
    int64_t cpu = mb_cpu_us() - cpu0;
    r->ok = st.ok;
    memcpy(r->err, st.err, sizeof r->err);
    memcpy(r->status, st.status, sizeof r->status);
    r->elapsed_s = (double)(t1 - t0) / 1e6;
    r->throughput = (double)st.ok / r->elapsed_s;
    r->p50 = mb_hist_pct(&st.hist, 50) / 1000.0;
    r->p90 = mb_hist_pct(&st.hist, 90) / 1000.0;
    r->p99 = mb_hist_pct(&st.hist, 99) / 1000.0;
    r->max = (double)(st.hist.count ? st.hist.max_us : 0) / 1000.0;
    r->mean = mb_hist_mean(&st.hist) / 1000.0;
    r->cpu_pct = 100.0 * (double)cpu / 1e6 / r->elapsed_s;
    r->sessions = (int)n;
    if (failed == n)
        mb_result_fail(r, "no session could be initialized");

    if (c->events > 0 && failed < n) {
        /* each session stores c->events session-level events (no GET is open: they are kept
         * for a later resume), so hibernation has real streams to leave on disk */
        char *args = mb_args_with_count(p->notify_args, c->events, false);
        ping_ctx_t ex = {.sess = sess, .n = n, .tool = p->notify_tool, .args = args};
        mb_engine_cfg_t ec = {
            .label = "events",
            .slots = c->connections,
            .max_ops = n,
            .timeout_us = mb_cfg_timeout_us(c),
            .progress = mb_cfg_progress(c),
            .next_op = ping_next,
            .ud = &ex,
        };
        mb_engine_t e;
        mb_engine_init(&e, &t, &ec);
        mb_engine_run(&e);
        mb_result_num(r, "events_per_session", (double)c->events);
        mb_result_num(r, "event_calls_ok", (double)e.total.ok);
        mb_engine_free(&e);
        free(args);
    }
    mb_sleep_loop(c->base, 500000); /* let the server finish what the last responses started */
    int64_t rss1 = have_rss ? mb_read_rss(c->base, p->stats_url, p->pid, c->allow_remote, &st1)
                            : -1;
    mb_result_num(r, "sessions_created", (double)st.ok);
    if (rss0 > 0 && rss1 > 0 && st.ok > 0) {
        mb_result_num(r, "rss_before_bytes", (double)rss0);
        mb_result_num(r, "rss_after_bytes", (double)rss1);
        mb_result_num(r, "bytes_per_session", (double)(rss1 - rss0) / (double)st.ok);
    }
    int64_t live = mb_json_int(st1, "sessions_live");
    if (live < 0)
        live = mb_json_int(st1, "sessions");
    if (live >= 0)
        mb_result_num(r, "server_sessions", (double)live);
    if (c->settle_s > 0 && have_rss) {
        mb_sleep_loop(c->base, (int64_t)(c->settle_s * 1e6));
        json_t *st2 = NULL;
        int64_t rss2 = mb_read_rss(c->base, p->stats_url, p->pid, c->allow_remote, &st2);
        if (rss0 > 0 && rss2 > 0 && st.ok > 0) {
            mb_result_num(r, "settle_s", c->settle_s);
            mb_result_num(r, "rss_settled_bytes", (double)rss2);
            mb_result_num(r, "bytes_per_session_settled", (double)(rss2 - rss0) / (double)st.ok);
        }
        int64_t h0 = mb_json_int(st1, "hibernations_total"),
                h1 = mb_json_int(st2, "hibernations_total");
        if (h0 >= 0 && h1 >= 0)
            mb_result_num(r, "hibernated", (double)(h1 - h0));
        json_decref(st2);
    }
    json_decref(st0);
    json_decref(st1);
    free(sess);
    return 0;
}

/* ---- wake after a restart: the session ids kept in a file between two runs ---- */

static int save_sessions(const char *path, const mb_sess_t *sess, long n, mb_result_t *r)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        mb_result_fail(r, "cannot write %s", path);
        return -1;
    }
    long saved = 0;
    for (long i = 0; i < n; i++)
        if (sess[i].ready && sess[i].sid[0]) {
            fprintf(f, "%s %s\n", sess[i].sid, sess[i].pv);
            saved++;
        }
    if (fclose(f) != 0) {
        mb_result_fail(r, "cannot write %s", path);
        return -1;
    }
    r->ok = (uint64_t)saved;
    r->sessions = (int)saved;
    mb_result_num(r, "sessions_saved", (double)saved);
    return 0;
}

/* xorshift64*: a reproducible draw, independent of libc's rand */
static uint64_t draw_next(uint64_t *st)
{
    *st ^= *st >> 12;
    *st ^= *st << 25;
    *st ^= *st >> 27;
    return *st * 2685821657736338717ULL;
}

/* Reads every id of the file and keeps *n of them drawn at random (all when fewer), ready. */
typedef struct saved_id {
    char sid[72];
    char pv[24];
} saved_id_t;

static mb_sess_t *load_sessions(const mb_cfg_t *c, long *n, mb_result_t *r)
{
    FILE *f = fopen(c->load_sessions, "r");
    if (!f) {
        mb_result_fail(r, "cannot read %s", c->load_sessions);
        return NULL;
    }
    long cap = 1024, total = 0;
    saved_id_t *all = mb_xcalloc((size_t)cap, sizeof *all);
    saved_id_t one;
    while (fscanf(f, "%71s %23s", one.sid, one.pv) == 2) {
        if (total == cap) {
            cap *= 2;
            all = realloc(all, (size_t)cap * sizeof *all);
            if (!all)
                abort();
        }
        all[total++] = one;
    }
    fclose(f);
    if (total == 0) {
        free(all);
        mb_result_fail(r, "no session ids in %s", c->load_sessions);
        return NULL;
    }
    uint64_t st = 0x9E3779B97F4A7C15ULL ^ c->seed;
    long keep = *n < total ? *n : total;
    mb_sess_t *sess = mb_xcalloc((size_t)keep, sizeof *sess);
    for (long i = 0; i < keep; i++) { /* partial Fisher-Yates */
        long j = i + (long)(draw_next(&st) % (uint64_t)(total - i));
        one = all[i];
        all[i] = all[j];
        all[j] = one;
        mb_sess_set(&sess[i], all[i].sid, all[i].pv);
        sess[i].next_id = 1000000; /* past the ids the saving run used */
        sess[i].ready = true;
    }
    free(all);
    *n = keep;
    mb_result_num(r, "sessions_in_file", (double)total);
    return sess;
}

int mb_scen_wake(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r)
{
    mb_target_t t;
    if (mb_scen_target(&t, c, p, r) != 0)
        return -1;
    r->unit = "wakes/s";
    long n = c->sessions;
    mb_sess_t *sess;
    int rc = -1;
    if (c->load_sessions) {
        sess = load_sessions(c, &n, r);
        if (!sess)
            return -1;
    } else {
        sess = mb_xcalloc((size_t)n, sizeof *sess);
        if (mb_scen_setup(c, &t, sess, n, r) != 0)
            goto out;
        if (c->save_sessions) {
            rc = save_sessions(c->save_sessions, sess, n, r);
            goto out;
        }
    }
    json_t *st0 = NULL, *st1 = NULL;
    if (p->stats_url)
        mb_read_rss(c->base, p->stats_url, 0, c->allow_remote, &st0);
    if (!c->load_sessions)
        mb_sleep_loop(c->base, (int64_t)(c->settle_s * 1e6));
    if (p->stats_url)
        mb_read_rss(c->base, p->stats_url, 0, c->allow_remote, &st1);
    int64_t h0 = mb_json_int(st0, "hibernations_total"),
            h1 = mb_json_int(st1, "hibernations_total");

    ping_ctx_t x = {.sess = sess, .n = n};
    mb_engine_cfg_t ec = {
        .label = "wake",
        .slots = c->connections,
        .max_ops = n,
        .timeout_us = mb_cfg_timeout_us(c),
        .progress = mb_cfg_progress(c),
        .next_op = ping_next,
        .ud = &x,
    };
    mb_engine_t e;
    int64_t cpu0 = mb_cpu_us();
    mb_engine_init(&e, &t, &ec);
    mb_engine_run(&e);
    int64_t cpu = mb_cpu_us() - cpu0;
    mb_result_from_engine(r, &e, -1);
    r->cpu_pct = 100.0 * (double)cpu / 1e6 / r->elapsed_s;
    r->sessions = (int)n;
    mb_engine_free(&e);
    mb_result_num(r, "settle_s", c->settle_s);
    if (h0 >= 0 && h1 >= 0)
        mb_result_num(r, "hibernated_during_settle", (double)(h1 - h0));
    json_t *st2 = NULL;
    if (p->stats_url)
        mb_read_rss(c->base, p->stats_url, 0, c->allow_remote, &st2);
    int64_t w1 = mb_json_int(st1, "wakes_total"), w2 = mb_json_int(st2, "wakes_total");
    if (w1 >= 0 && w2 >= 0)
        mb_result_num(r, "server_wakes", (double)(w2 - w1));

    /* the same pings again on awake sessions: the contrast that shows the cost of waking */
    x.next = 0;
    ec.label = "warm";
    mb_engine_init(&e, &t, &ec);
    mb_engine_run(&e);
    mb_result_num(r, "warm_p50_ms", mb_hist_pct(&e.total.hist, 50) / 1000.0);
    mb_result_num(r, "warm_p99_ms", mb_hist_pct(&e.total.hist, 99) / 1000.0);
    mb_result_num(r, "warm_errors",
                  (double)(e.total.ok < (uint64_t)n ? (uint64_t)n - e.total.ok : 0));
    mb_engine_free(&e);
    json_decref(st0);
    json_decref(st1);
    json_decref(st2);
    rc = 0;
out:
    free(sess);
    return rc;
}
