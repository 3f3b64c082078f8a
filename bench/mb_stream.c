/* mcpbench scenarios streams, resume and mixed. Main thread only.
 *
 * streams: N sessions each hold a standalone GET stream on a connection of its own. An operation
 * picks a session with nothing pending, POSTs the notify tool on a slot connection, and ends when
 * both the POST is answered and the notification(s) came on that session's GET stream; its
 * latency is from the POST being written to the last expected event arriving.
 *
 * resume: an operation makes the server store K events on a stream with no connection attached,
 * then GETs it with Last-Event-ID and measures from that GET to the K-th event.
 *   via get (default): GET the standalone stream, keep its first event id (the priming event;
 *     a server that sends none is made to send one notification), drop it; call the notify tool
 *     with count K at the session (nothing attached: the server stores them); resume.
 *   via post: call the notify tool with count K on its own POST stream, read it to the end and
 *     keep its first event id; resume that finished stream (K notifications and the response).
 *   A 409 on a GET (the server still has the previous GET registered) is retried after 5 ms.
 *
 * mixed: a weighted mix of call, handshake, stream (open a GET, notify, wait, close) and resume
 * operations; each slot has a session of its own for the stream and resume operations, so those
 * never share a GET stream.
 */
#include "mb_scen.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_notification(const mb_sse_ev_t *ev)
{
    if (!ev->has_data || ev->data_len == 0)
        return false;
    int64_t id;
    return mb_msg_classify(ev->data, ev->data_len, &id, NULL) == MB_MSG_NOTIFICATION;
}

/* ---- streams ---- */

typedef struct trig_op trig_op_t;

typedef struct streams_ctx {
    mb_sess_t *sess;
    long n;
    mb_sess_t *qh, *qt; /* sessions with a live stream and nothing pending */
    mb_req_t *greq;     /* one GET per session */
    const char *tool;
    const char *args;
    int64_t expect;
    long opened, open_ok, open_fail, broken;
    int64_t late_events;
    mb_engine_t *e;
} streams_ctx_t;

struct trig_op {
    mb_op_t op;
    mb_rpc_t rpc;
    streams_ctx_t *x;
    mb_sess_t *sess;
    char *body;
    size_t blen;
    int64_t got, lat;
    bool post_done, events_done;
};

static void q_push(streams_ctx_t *x, mb_sess_t *s)
{
    s->qnext = NULL;
    if (x->qt)
        x->qt->qnext = s;
    else
        x->qh = s;
    x->qt = s;
}

static mb_sess_t *q_pop(streams_ctx_t *x)
{
    mb_sess_t *s = x->qh;
    if (s) {
        x->qh = s->qnext;
        if (!x->qh)
            x->qt = NULL;
        s->qnext = NULL;
    }
    return s;
}

static void trig_finish(trig_op_t *o, mb_err_t err)
{
    mb_sess_t *s = o->sess;
    s->pending = NULL;
    if (!s->dead)
        q_push(o->x, s);
    mb_engine_op_done(&o->op, err, err == MB_OK ? o->lat : -1);
}

static streams_ctx_t *g_streams; /* the running streams scenario (one at a time) */

static void streams_get_headers(mb_req_t *q, const mb_resp_t *resp)
{
    mb_sess_t *s = q->ud;
    streams_ctx_t *x = g_streams;
    x->opened++;
    if (resp->status == 200 && resp->ctype == MB_CT_SSE) {
        x->open_ok++;
        s->ready = true;
    } else {
        x->open_fail++;
        s->dead = true;
    }
}

static int streams_get_event(mb_req_t *q, const mb_sse_ev_t *ev)
{
    mb_sess_t *s = q->ud;
    if (!s->ready || !is_notification(ev))
        return MB_SSE_CONTINUE;
    trig_op_t *o = s->pending;
    if (!o) {
        g_streams->late_events++; /* nobody asked for it (a call that timed out, or unsolicited) */
        return MB_SSE_CONTINUE;
    }
    o->got++;
    if (o->got >= o->x->expect && !o->events_done) {
        o->events_done = true;
        o->lat = mb_now_us() - o->rpc.req.t_sent;
        if (o->post_done)
            trig_finish(o, MB_OK);
    }
    return MB_SSE_CONTINUE;
}

static void streams_get_done(mb_req_t *q, mb_err_t err, const mb_resp_t *resp)
{
    mb_sess_t *s = q->ud;
    streams_ctx_t *x = g_streams;
    if (!s->ready) {
        if (!s->dead) { /* failed before its headers */
            x->opened++;
            x->open_fail++;
        }
        s->dead = true;
        return;
    }
    /* a live stream ended or broke */
    s->dead = true;
    s->ready = false;
    x->broken++;
    trig_op_t *o = s->pending;
    if (o) {
        s->pending = NULL;
        mb_engine_op_done(&o->op, MB_E_IO, -1);
    }
}

static void trig_rpc_done(mb_rpc_t *r, mb_err_t err)
{
    trig_op_t *o = r->ud;
    if (err == MB_OK) {
        err = mb_rpc_verdict(r);
        o->op.status = r->status;
    }
    if (err != MB_OK) {
        trig_finish(o, err);
        return;
    }
    o->post_done = true;
    if (o->events_done)
        trig_finish(o, MB_OK);
}

static void trig_start(mb_op_t *op)
{
    trig_op_t *o = (trig_op_t *)op;
    int64_t id = o->sess->next_id++;
    o->body = mb_body_call(id, o->x->tool, o->x->args, &o->blen);
    o->rpc.id = id;
    o->rpc.done = trig_rpc_done;
    o->rpc.ud = o;
    o->sess->pending = o;
    mb_rpc_post(&o->rpc, op->slot->conn, o->sess, o->body, o->blen);
}

static void trig_destroy(mb_op_t *op)
{
    trig_op_t *o = (trig_op_t *)op;
    if (o->sess->pending == o) {
        /* timed out: a late event would be taken for the next call's; retire the session */
        o->sess->pending = NULL;
        o->sess->dead = true;
    }
    mb_rpc_clear(&o->rpc);
    free(o->body);
    free(o);
}

static mb_op_t *trig_next(mb_engine_t *e, mb_slot_t *slot)
{
    streams_ctx_t *x = e->cfg.ud;
    mb_sess_t *s = q_pop(x);
    if (!s) {
        long live = 0;
        for (long i = 0; i < x->n; i++)
            live += !x->sess[i].dead;
        if (live == 0)
            mb_engine_finish(e);
        return NULL;
    }
    trig_op_t *o = mb_xcalloc(1, sizeof *o);
    mb_op_init(&o->op, trig_start, trig_destroy);
    o->x = x;
    o->sess = s;
    return &o->op;
}

int mb_scen_streams(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r)
{
    mb_target_t t;
    if (mb_scen_target(&t, c, p, r) != 0)
        return -1;
    r->unit = "notifications/s";
    long n = c->sessions;
    mb_sess_t *sess = mb_xcalloc((size_t)n, sizeof *sess);
    streams_ctx_t x = {.sess = sess, .n = n, .tool = p->notify_tool, .args = p->notify_args};
    x.expect = mb_args_count(p->notify_args);
    x.greq = mb_xcalloc((size_t)n, sizeof *x.greq);
    g_streams = &x;
    int rc = -1;
    if (mb_scen_setup(c, &t, sess, n, r) != 0)
        goto out;

    /* open the streams, 64 connecting at a time */
    int64_t deadline = mb_now_us() + mb_cfg_timeout_us(c) + (int64_t)n * 2000;
    long next = 0;
    while (x.opened < n && mb_now_us() < deadline) {
        while (next < n && next - x.opened < 64) {
            mb_sess_t *s = &sess[next];
            mb_req_t *q = &x.greq[next++];
            s->ready = false;
            s->get = mb_conn_new(&t);
            q->method = "GET";
            q->headers = s->hdr;
            q->headers_len = s->hdr_len;
            q->on_headers = streams_get_headers;
            q->on_event = streams_get_event;
            q->on_done = streams_get_done;
            q->ud = s;
            mb_conn_send(s->get, q);
        }
        mb_sleep_loop(c->base, 2000);
    }
    for (long i = 0; i < n; i++) {
        sess[i].pending = NULL;
        if (sess[i].ready && !sess[i].dead)
            q_push(&x, &sess[i]);
        else
            sess[i].dead = true;
    }
    if (x.open_ok == 0) {
        mb_result_fail(r, "no GET stream could be opened (%ld failed)", x.open_fail + (n - x.opened));
        goto out;
    }
    mb_sleep_loop(c->base, 100000); /* priming events and anything else the open sent */

    mb_engine_cfg_t ec = {
        .label = "streams",
        .slots = c->connections,
        .duration_us = mb_cfg_duration_us(c),
        .max_ops = c->requests,
        .rate = c->rate,
        .timeout_us = mb_cfg_timeout_us(c),
        .progress = mb_cfg_progress(c),
        .next_op = trig_next,
        .ud = &x,
    };
    mb_engine_t e;
    int64_t cpu0 = mb_cpu_us();
    mb_engine_init(&e, &t, &ec);
    x.e = &e;
    mb_engine_run(&e);
    int64_t cpu = mb_cpu_us() - cpu0;
    mb_result_from_engine(r, &e, -1);
    r->cpu_pct = 100.0 * (double)cpu / 1e6 / r->elapsed_s;
    r->throughput *= (double)x.expect;
    r->sessions = (int)n;
    mb_result_num(r, "streams_open", (double)x.open_ok);
    mb_result_num(r, "stream_open_failures", (double)(x.open_fail + (n - x.opened)));
    mb_result_num(r, "streams_broken", (double)x.broken);
    mb_result_num(r, "events_per_call", (double)x.expect);
    mb_result_num(r, "unexpected_events", (double)x.late_events);
    mb_result_str(r, "notify", p->notify_tool);
    mb_engine_free(&e);
    rc = 0;
out:
    for (long i = 0; i < n; i++)
        mb_conn_free(sess[i].get);
    g_streams = NULL;
    free(x.greq);
    free(sess);
    return rc;
}

/* ---- resume ---- */

enum { RS_FIRST, RS_PRODUCE, RS_RESUME };

typedef struct resume_op {
    mb_op_t op;
    mb_resume_cfg_t *rc;
    mb_sess_t *sess;
    int step;
    mb_conn_t *g;
    mb_req_t greq;
    char ghdr[MB_SID_MAX + 400];
    size_t ghdr_len;
    mb_rpc_t rpc;
    char *body;
    size_t blen;
    char first_id[256];
    bool have_first, post_busy, get_busy, fallback_sent, got_resp;
    int64_t prod_id, n, lat;
    int retries;
    struct event *timer;
    int timer_why; /* 0 fallback, 1 retry the GET */
} resume_op_t;

static void resume_get(resume_op_t *o);
static void resume_post(resume_op_t *o, const char *args, bool session_level_one);

static void resume_fail(resume_op_t *o, mb_err_t err, int status)
{
    o->op.status = status;
    mb_engine_op_done(&o->op, err, -1);
}

static void arm(resume_op_t *o, int why, int64_t us)
{
    o->timer_why = why;
    struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
    evtimer_add(o->timer, &tv);
}

/* RS_FIRST is over when the first id is known and no fallback POST is in flight. */
static void first_maybe_done(resume_op_t *o)
{
    if (o->step != RS_FIRST || !o->have_first || o->post_busy || o->get_busy)
        return;
    o->step = RS_PRODUCE;
    resume_post(o, o->rc->produce_body_args, false);
}

static void resume_rpc_done(mb_rpc_t *r, mb_err_t err)
{
    resume_op_t *o = r->ud;
    o->post_busy = false;
    if (err == MB_OK)
        err = mb_rpc_verdict(r);
    if (err != MB_OK) {
        resume_fail(o, err, r->status);
        return;
    }
    if (o->step == RS_FIRST) {
        first_maybe_done(o);
        return;
    }
    /* RS_PRODUCE done */
    if (o->rc->via_post) {
        if (r->ctype != MB_CT_SSE || !r->has_first_id) {
            resume_fail(o, MB_E_PROTO, r->status); /* no SSE stream, nothing to resume */
            return;
        }
        snprintf(o->first_id, sizeof o->first_id, "%s", r->first_id);
    }
    o->step = RS_RESUME;
    o->n = 0;
    o->got_resp = false;
    resume_get(o);
}

static void resume_post(resume_op_t *o, const char *args, bool one)
{
    free(o->body);
    int64_t id = o->sess->next_id++;
    o->prod_id = id;
    o->body = mb_body_call(id, o->rc->tool, args, &o->blen);
    o->rpc.id = id;
    o->rpc.done = resume_rpc_done;
    o->rpc.ud = o;
    o->post_busy = true;
    (void)one;
    mb_rpc_post(&o->rpc, o->op.slot->conn, o->sess, o->body, o->blen);
}

static void resume_timer(evutil_socket_t fd, short what, void *arg)
{
    resume_op_t *o = arg;
    if (o->timer_why == 1) {
        resume_get(o);
        return;
    }
    if (o->step == RS_FIRST && !o->have_first && !o->fallback_sent) {
        o->fallback_sent = true;
        resume_post(o, o->rc->one_args, true);
    }
}

static void resume_get_headers(mb_req_t *q, const mb_resp_t *resp)
{
    resume_op_t *o = q->ud;
    if (o->step == RS_FIRST && resp->status == 200 && o->rc->first_mode != 1)
        arm(o, 0, o->rc->first_mode == 2 ? 0 : 100000);
}

static int resume_get_event(mb_req_t *q, const mb_sse_ev_t *ev)
{
    resume_op_t *o = q->ud;
    if (o->step == RS_FIRST) {
        if (ev->has_id && ev->id_len < sizeof o->first_id) {
            memcpy(o->first_id, ev->id, ev->id_len);
            o->first_id[ev->id_len] = '\0';
            o->have_first = true;
            if (o->fallback_sent)
                o->rc->first_from_notify++;
            else
                o->rc->first_from_priming++;
            return MB_SSE_STOP;
        }
        return MB_SSE_CONTINUE;
    }
    if (!ev->has_data || ev->data_len == 0)
        return MB_SSE_CONTINUE;
    int64_t id;
    mb_msg_t kind = mb_msg_classify(ev->data, ev->data_len, &id, NULL);
    if (kind == MB_MSG_NOTIFICATION)
        o->n++;
    else if ((kind == MB_MSG_RESPONSE || kind == MB_MSG_ERROR) && id == o->prod_id)
        o->got_resp = true;
    bool complete = o->n >= o->rc->k && (!o->rc->via_post || o->got_resp);
    if (complete) {
        o->lat = mb_now_us() - q->t_sent;
        return MB_SSE_STOP;
    }
    return MB_SSE_CONTINUE;
}

static void resume_get_done(mb_req_t *q, mb_err_t err, const mb_resp_t *resp)
{
    resume_op_t *o = q->ud;
    o->get_busy = false;
    if (err != MB_OK) {
        resume_fail(o, err, 0);
        return;
    }
    if (resp->status == 409 && o->retries < 200) {
        o->retries++;
        o->rc->retries_409++;
        arm(o, 1, 5000);
        return;
    }
    if (resp->status != 200) {
        resume_fail(o, MB_E_STATUS, resp->status);
        return;
    }
    if (o->step == RS_FIRST) {
        if (!o->have_first) {
            resume_fail(o, MB_E_PROTO, 200); /* the stream ended without an event id */
            return;
        }
        evtimer_del(o->timer);
        first_maybe_done(o);
        return;
    }
    if (resp->stopped) {
        mb_engine_op_done(&o->op, MB_OK, o->lat);
        return;
    }
    o->rc->short_replays++;
    o->rc->short_last = o->n;
    resume_fail(o, MB_E_BODY, 200); /* the stream ended before all K events */
}

static void resume_get(resume_op_t *o)
{
    if (!o->g)
        o->g = mb_conn_new(o->op.e->t);
    memcpy(o->ghdr, o->sess->hdr, o->sess->hdr_len);
    size_t k = o->sess->hdr_len;
    if (o->step == RS_RESUME)
        k += (size_t)snprintf(o->ghdr + k, sizeof o->ghdr - k, "Last-Event-ID: %s\r\n", o->first_id);
    o->ghdr_len = k < sizeof o->ghdr ? k : sizeof o->ghdr - 1;
    memset(&o->greq, 0, sizeof o->greq);
    o->greq.method = "GET";
    o->greq.headers = o->ghdr;
    o->greq.headers_len = o->ghdr_len;
    o->greq.on_headers = resume_get_headers;
    o->greq.on_event = resume_get_event;
    o->greq.on_done = resume_get_done;
    o->greq.ud = o;
    o->get_busy = true;
    mb_conn_send(o->g, &o->greq);
}

static void resume_start(mb_op_t *op)
{
    resume_op_t *o = (resume_op_t *)op;
    o->timer = evtimer_new(op->e->t->base, resume_timer, o);
    if (o->rc->via_post) {
        o->step = RS_PRODUCE;
        resume_post(o, o->rc->produce_body_args, false);
    } else {
        o->step = RS_FIRST;
        resume_get(o);
    }
}

static void resume_destroy(mb_op_t *op)
{
    resume_op_t *o = (resume_op_t *)op;
    if (o->timer)
        event_free(o->timer);
    mb_conn_free(o->g);
    mb_rpc_clear(&o->rpc);
    free(o->body);
    free(o);
}

mb_op_t *mb_resume_op_new(mb_resume_cfg_t *rc, mb_sess_t *sess)
{
    resume_op_t *o = mb_xcalloc(1, sizeof *o);
    mb_op_init(&o->op, resume_start, resume_destroy);
    o->rc = rc;
    o->sess = sess;
    return &o->op;
}

static int resume_cfg_init(mb_resume_cfg_t *rc, const mb_cfg_t *c, const mb_peer_t *p, int k)
{
    memset(rc, 0, sizeof *rc);
    rc->k = k;
    rc->via_post = strcmp(c->resume_via, "post") == 0;
    rc->first_mode = strcmp(c->resume_first, "priming") == 0 ? 1 : strcmp(c->resume_first, "notify") == 0 ? 2 : 0;
    rc->tool = p->notify_tool;
    rc->produce_body_args = c->resume_args ? mb_args_with_count(c->resume_args, k, false)
                                           : mb_args_with_count(p->notify_args, k, rc->via_post);
    rc->one_args = mb_args_with_count(p->notify_args, 1, false);
    return 0;
}

static void resume_cfg_free(mb_resume_cfg_t *rc)
{
    free(rc->produce_body_args);
    free(rc->one_args);
}

typedef struct resume_ctx {
    mb_resume_cfg_t rc;
    mb_sess_t *sess; /* one per slot */
} resume_ctx_t;

static mb_op_t *resume_next(mb_engine_t *e, mb_slot_t *s)
{
    resume_ctx_t *x = e->cfg.ud;
    return mb_resume_op_new(&x->rc, &x->sess[s->idx]);
}

int mb_scen_resume(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r)
{
    mb_target_t t;
    if (mb_scen_target(&t, c, p, r) != 0)
        return -1;
    r->unit = "resumes/s";
    int n = c->connections;
    resume_ctx_t x;
    resume_cfg_init(&x.rc, c, p, c->events);
    x.sess = mb_xcalloc((size_t)n, sizeof *x.sess);
    int rc = -1;
    r->sessions = n;
    if (mb_scen_setup(c, &t, x.sess, n, r) != 0)
        goto out;
    mb_engine_cfg_t ec = {
        .label = "resume",
        .slots = n,
        .duration_us = mb_cfg_duration_us(c),
        .max_ops = c->requests,
        .rate = c->rate,
        .timeout_us = mb_cfg_timeout_us(c),
        .progress = mb_cfg_progress(c),
        .next_op = resume_next,
        .ud = &x,
    };
    mb_engine_t e;
    int64_t cpu0 = mb_cpu_us();
    mb_engine_init(&e, &t, &ec);
    mb_engine_run(&e);
    int64_t cpu = mb_cpu_us() - cpu0;
    mb_result_from_engine(r, &e, -1);
    r->cpu_pct = 100.0 * (double)cpu / 1e6 / r->elapsed_s;
    mb_result_num(r, "events", c->events);
    mb_result_str(r, "via", x.rc.via_post ? "post" : "get");
    if (r->mean > 0)
        mb_result_num(r, "events_per_s", (double)c->events / (r->mean / 1000.0));
    if (!x.rc.via_post) {
        mb_result_num(r, "first_id_from_priming", (double)x.rc.first_from_priming);
        mb_result_num(r, "first_id_from_notify", (double)x.rc.first_from_notify);
    }
    mb_result_num(r, "get_409_retries", (double)x.rc.retries_409);
    mb_result_num(r, "short_replays", (double)x.rc.short_replays);
    if (x.rc.short_replays)
        mb_result_num(r, "short_replay_events", (double)x.rc.short_last);
    mb_result_str(r, "produce_args", x.rc.produce_body_args);
    mb_engine_free(&e);
    rc = 0;
out:
    resume_cfg_free(&x.rc);
    free(x.sess);
    return rc;
}

/* ---- mixed ---- */

enum { MX_CALL, MX_HANDSHAKE, MX_STREAM, MX_RESUME, MX__COUNT };
static const char *const mx_names[MX__COUNT] = {"call", "handshake", "stream", "resume"};

typedef struct mixed_ctx {
    const mb_cfg_t *c;
    const mb_peer_t *p;
    int weight[MX__COUNT];
    int wsum;
    uint64_t rng;
    mb_call_ctx_t *call;
    mb_resume_cfg_t rc;
    mb_sess_t *slot_sess; /* one per slot for stream and resume operations */
    char *one_args;
} mixed_ctx_t;

/* stream operation: GET, notify once, wait for the event, close */
typedef struct mstream_op {
    mb_op_t op;
    mixed_ctx_t *x;
    mb_sess_t *sess;
    mb_conn_t *g;
    mb_req_t greq;
    mb_rpc_t rpc;
    char *body;
    size_t blen;
    bool post_sent, post_done, got_event, get_done;
} mstream_op_t;

static void mstream_maybe_done(mstream_op_t *o)
{
    if (o->post_done && o->got_event && o->get_done)
        mb_engine_op_done(&o->op, MB_OK, -1);
}

static void mstream_rpc_done(mb_rpc_t *r, mb_err_t err)
{
    mstream_op_t *o = r->ud;
    if (err == MB_OK)
        err = mb_rpc_verdict(r);
    if (err != MB_OK) {
        o->op.status = r->status;
        mb_engine_op_done(&o->op, err, -1);
        return;
    }
    o->post_done = true;
    mstream_maybe_done(o);
}

static void mstream_headers(mb_req_t *q, const mb_resp_t *resp)
{
    mstream_op_t *o = q->ud;
    if (resp->status != 200 || o->post_sent)
        return;
    o->post_sent = true;
    int64_t id = o->sess->next_id++;
    o->body = mb_body_call(id, o->x->p->notify_tool, o->x->one_args, &o->blen);
    o->rpc.id = id;
    o->rpc.done = mstream_rpc_done;
    o->rpc.ud = o;
    mb_rpc_post(&o->rpc, o->op.slot->conn, o->sess, o->body, o->blen);
}

static int mstream_event(mb_req_t *q, const mb_sse_ev_t *ev)
{
    mstream_op_t *o = q->ud;
    if (!o->post_sent || !is_notification(ev))
        return MB_SSE_CONTINUE;
    o->got_event = true;
    return MB_SSE_STOP;
}

static void mstream_get_done(mb_req_t *q, mb_err_t err, const mb_resp_t *resp)
{
    mstream_op_t *o = q->ud;
    if (err == MB_OK && resp->status != 200) {
        o->op.status = resp->status;
        err = MB_E_STATUS;
    } else if (err == MB_OK && !o->got_event) {
        err = MB_E_BODY;
    }
    if (err != MB_OK) {
        mb_engine_op_done(&o->op, err, -1);
        return;
    }
    o->get_done = true;
    mstream_maybe_done(o);
}

static void mstream_start(mb_op_t *op)
{
    mstream_op_t *o = (mstream_op_t *)op;
    o->g = mb_conn_new(op->e->t);
    o->greq.method = "GET";
    o->greq.headers = o->sess->hdr;
    o->greq.headers_len = o->sess->hdr_len;
    o->greq.on_headers = mstream_headers;
    o->greq.on_event = mstream_event;
    o->greq.on_done = mstream_get_done;
    o->greq.ud = o;
    mb_conn_send(o->g, &o->greq);
}

static void mstream_destroy(mb_op_t *op)
{
    mstream_op_t *o = (mstream_op_t *)op;
    mb_conn_free(o->g);
    mb_rpc_clear(&o->rpc);
    free(o->body);
    free(o);
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static mb_op_t *mixed_next(mb_engine_t *e, mb_slot_t *s)
{
    mixed_ctx_t *x = e->cfg.ud;
    int pick = (int)(xorshift(&x->rng) % (uint64_t)x->wsum), cls = 0;
    while (pick >= x->weight[cls])
        pick -= x->weight[cls++];
    mb_op_t *op;
    switch (cls) {
    case MX_CALL:
        op = mb_call_op_new(x->call);
        break;
    case MX_HANDSHAKE:
        op = mb_hs_op_new(NULL, true, x->c->pv);
        break;
    case MX_STREAM: {
        mstream_op_t *o = mb_xcalloc(1, sizeof *o);
        mb_op_init(&o->op, mstream_start, mstream_destroy);
        o->x = x;
        o->sess = &x->slot_sess[s->idx];
        op = &o->op;
        break;
    }
    default:
        op = mb_resume_op_new(&x->rc, &x->slot_sess[s->idx]);
        break;
    }
    op->cls = cls;
    return op;
}

static int parse_mix(const char *mix, int *w, char *err, size_t errlen)
{
    for (int i = 0; i < MX__COUNT; i++)
        w[i] = 0;
    char *dup = strdup(mix), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        int i = 0;
        if (eq)
            *eq = '\0';
        while (i < MX__COUNT && strcmp(tok, mx_names[i]) != 0)
            i++;
        long v = eq ? strtol(eq + 1, NULL, 10) : 1;
        if (i == MX__COUNT || v < 0 || v > 1000000) {
            snprintf(err, errlen, "bad --mix entry '%s' (call|handshake|stream|resume=WEIGHT)", tok);
            rc = -1;
            break;
        }
        w[i] = (int)v;
    }
    free(dup);
    return rc;
}

int mb_scen_mixed(const mb_cfg_t *c, const mb_peer_t *p, mb_result_t *r)
{
    mb_target_t t;
    if (mb_scen_target(&t, c, p, r) != 0)
        return -1;
    r->unit = "ops/s";
    mixed_ctx_t x = {.c = c, .p = p, .rng = 0x9e3779b97f4a7c15ULL};
    char err[512];
    if (parse_mix(c->mix, x.weight, err, sizeof err) != 0) {
        mb_result_fail(r, "%s", err);
        return -1;
    }
    for (int i = 0; i < MX__COUNT; i++)
        x.wsum += x.weight[i];
    if (x.wsum <= 0) {
        mb_result_fail(r, "--mix has no positive weight");
        return -1;
    }
    long ncall = c->sessions, nslot = c->connections;
    mb_sess_t *all = mb_xcalloc((size_t)(ncall + nslot), sizeof *all);
    int rc = -1;
    resume_cfg_init(&x.rc, c, p, c->events);
    x.one_args = mb_args_with_count(p->notify_args, 1, false);
    if (mb_scen_setup(c, &t, all, ncall + nslot, r) != 0)
        goto out;
    x.call = mb_call_ctx_new(c, all, ncall);
    x.slot_sess = all + ncall;
    mb_engine_cfg_t ec = {
        .label = "mixed",
        .slots = c->connections,
        .duration_us = mb_cfg_duration_us(c),
        .max_ops = c->requests,
        .rate = c->rate,
        .timeout_us = mb_cfg_timeout_us(c),
        .progress = mb_cfg_progress(c),
        .nclasses = MX__COUNT,
        .next_op = mixed_next,
        .ud = &x,
    };
    mb_engine_t e;
    int64_t cpu0 = mb_cpu_us();
    mb_engine_init(&e, &t, &ec);
    mb_engine_run(&e);
    int64_t cpu = mb_cpu_us() - cpu0;
    mb_result_from_engine(r, &e, -1);
    r->cpu_pct = 100.0 * (double)cpu / 1e6 / r->elapsed_s;
    mb_result_str(r, "mix", c->mix);
    if (c->rate > 0)
        mb_result_num(r, "target_rate", c->rate);
    for (int i = 0; i < MX__COUNT; i++) {
        if (!x.weight[i])
            continue;
        const mb_stats_t *s = &e.cls[i];
        uint64_t errs = 0;
        for (int k = 1; k < MB_E__COUNT; k++)
            errs += s->err[k];
        char key[48];
        snprintf(key, sizeof key, "%s_ok", mx_names[i]);
        mb_result_num(r, key, (double)s->ok);
        snprintf(key, sizeof key, "%s_errors", mx_names[i]);
        mb_result_num(r, key, (double)errs);
        snprintf(key, sizeof key, "%s_p50_ms", mx_names[i]);
        mb_result_num(r, key, mb_hist_pct(&s->hist, 50) / 1000.0);
        snprintf(key, sizeof key, "%s_p99_ms", mx_names[i]);
        mb_result_num(r, key, mb_hist_pct(&s->hist, 99) / 1000.0);
    }
    mb_result_str(r, "call_content_type", mb_call_ctx_ctype(x.call));
    mb_engine_free(&e);
    rc = 0;
out:
    mb_call_ctx_free(x.call);
    resume_cfg_free(&x.rc);
    free(x.one_args);
    free(all);
    return rc;
}
