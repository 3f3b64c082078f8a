/* mcpbench load engine. Main thread only (see mb_engine.h for the model).
 *
 * The active list is in start order. With one timeout for every operation that is also deadline
 * order, so the timeout check looks at the head only. Reentrancy: an operation may end inside
 * its own start (a send that failed); slot_fill then sees the slot free again and loops instead
 * of recursing.
 */
#include "mb_engine.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool mb_progress_tty;

void mb_op_init(mb_op_t *op, void (*start)(mb_op_t *), void (*destroy)(mb_op_t *))
{
    memset(op, 0, sizeof *op);
    op->start = start;
    op->destroy = destroy;
}

static void stats_init(mb_stats_t *s)
{
    memset(s, 0, sizeof *s);
    mb_hist_init(&s->hist);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg);

void mb_engine_init(mb_engine_t *e, mb_target_t *t, const mb_engine_cfg_t *cfg)
{
    memset(e, 0, sizeof *e);
    e->cfg = *cfg;
    if (e->cfg.slots < 1)
        e->cfg.slots = 1;
    if (e->cfg.nclasses < 1)
        e->cfg.nclasses = 1;
    e->t = t;
    stats_init(&e->total);
    for (int i = 0; i < MB_MAX_CLASSES; i++)
        stats_init(&e->cls[i]);
    e->slots = mb_xcalloc((size_t)e->cfg.slots, sizeof *e->slots);
    for (int i = 0; i < e->cfg.slots; i++) {
        e->slots[i].e = e;
        e->slots[i].idx = i;
        e->slots[i].conn = e->cfg.conns ? e->cfg.conns[i] : mb_conn_new(t);
    }
}

void mb_engine_free(mb_engine_t *e)
{
    for (int i = 0; i < e->cfg.slots && !e->cfg.conns; i++)
        mb_conn_free(e->slots[i].conn);
    free(e->slots);
    e->slots = NULL;
    if (e->tick)
        event_free(e->tick);
    e->tick = NULL;
    if (e->due)
        event_free(e->due);
    e->due = NULL;
}

static bool can_start(mb_engine_t *e, int64_t now)
{
    if (e->no_more)
        return false;
    if (e->cfg.max_ops > 0 && e->started >= e->cfg.max_ops)
        return false;
    if (e->cfg.duration_us > 0 && now - e->t_begin >= e->cfg.duration_us)
        return false;
    return true;
}

static void check_done(mb_engine_t *e)
{
    if (e->active == 0 && !can_start(e, mb_now_us()) && !e->done) {
        e->done = true;
        event_base_loopbreak(e->t->base);
    }
}

static void active_add(mb_engine_t *e, mb_op_t *op)
{
    op->next = NULL;
    op->prev = e->active_tail;
    if (e->active_tail)
        e->active_tail->next = op;
    else
        e->active_head = op;
    e->active_tail = op;
    e->active++;
}

static void active_del(mb_engine_t *e, mb_op_t *op)
{
    if (op->prev)
        op->prev->next = op->next;
    else
        e->active_head = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        e->active_tail = op->prev;
    op->prev = op->next = NULL;
    e->active--;
}

static void due_cb(evutil_socket_t fd, short what, void *arg);

/* Wakes the engine when the next operation is due. A timer of its own rather than the tick: an
 * operation's latency counts from when it was due, so every microsecond it starts late is
 * charged to the server (a 1 ms tick made an idle server's p50 about 2 ms). */
static void arm_due(mb_engine_t *e, int64_t us)
{
    if (!e->due)
        e->due = evtimer_new(e->t->base, due_cb, e);
    if (evtimer_pending(e->due, NULL))
        return; /* set for an earlier due time: it fills and arms again */
    struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
    evtimer_add(e->due, &tv);
}

/* Starts operations on s while it is free and one may start. */
static void slot_fill(mb_slot_t *s)
{
    mb_engine_t *e = s->e;
    while (!s->op) {
        int64_t now = mb_now_us();
        if (!can_start(e, now))
            return;
        if (e->cfg.rate > 0 && e->next_due > now) {
            arm_due(e, e->next_due - now);
            return;
        }
        mb_op_t *op = e->cfg.next_op(e, s);
        if (!op) {
            if (!s->waiting) {
                s->waiting = true;
                e->waiting++;
            }
            return;
        }
        if (s->waiting) {
            s->waiting = false;
            e->waiting--;
        }
        op->e = e;
        op->slot = s;
        if (e->cfg.rate > 0) {
            op->t_start = e->next_due;
            e->next_due += (int64_t)(1e6 / e->cfg.rate);
        } else {
            op->t_start = now;
        }
        op->t_began = now;
        op->deadline = now + e->cfg.timeout_us;
        s->op = op;
        e->started++;
        active_add(e, op);
        e->in_fill = true;
        op->start(op);
        e->in_fill = false;
    }
}

static void fill_all(mb_engine_t *e)
{
    for (int i = 0; i < e->cfg.slots; i++)
        if (!e->slots[i].op)
            slot_fill(&e->slots[i]);
}

void mb_engine_kick(mb_engine_t *e)
{
    if (e->waiting && !e->in_fill)
        fill_all(e);
}

void mb_engine_finish(mb_engine_t *e)
{
    e->no_more = true;
}

static void record(mb_stats_t *s, mb_err_t err, int status, int64_t lat)
{
    if (err == MB_OK) {
        s->ok++;
        mb_hist_add(&s->hist, lat);
    } else {
        s->err[err]++;
        if (err == MB_E_STATUS && status > 0 && status < 600)
            s->status[status]++;
    }
}

void mb_engine_op_done(mb_op_t *op, mb_err_t err, int64_t latency_us)
{
    mb_engine_t *e = op->e;
    mb_slot_t *s = op->slot;
    int64_t now = mb_now_us();
    int64_t lat = latency_us >= 0 ? latency_us + (op->t_began - op->t_start) : now - op->t_start;
    record(&e->total, err, op->status, lat);
    if (op->cls >= 0 && op->cls < MB_MAX_CLASSES)
        record(&e->cls[op->cls], err, op->status, lat);
    e->t_last_done = now;
    active_del(e, op);
    s->op = NULL;
    op->destroy(op);
    if (mb_conn_busy(s->conn))
        mb_conn_reset(s->conn); /* a timed-out request must not answer the next operation */
    if (!e->in_fill) {
        slot_fill(s);
        mb_engine_kick(e);
    }
    check_done(e);
}

static void progress_line(mb_engine_t *e, int64_t now, bool final)
{
    if (!e->cfg.progress || !mb_progress_tty)
        return;
    if (final) {
        fputs("\r\033[K", stdout);
        fflush(stdout);
        return;
    }
    if (now - e->last_progress < 1000000)
        return;
    double dt = (double)(now - e->last_progress) / 1e6;
    uint64_t errs = 0;
    for (int i = 1; i < MB_E__COUNT; i++)
        errs += e->total.err[i];
    double rate = e->last_progress ? (double)(e->total.ok - e->last_progress_ok) / dt : 0;
    printf("\r\033[K  %-10s %6.1f s  %10.0f/s  ok %-10llu errors %-6llu in flight %ld",
           e->cfg.label ? e->cfg.label : "", (double)(now - e->t_begin) / 1e6, rate,
           (unsigned long long)e->total.ok, (unsigned long long)errs, e->active);
    fflush(stdout);
    e->last_progress = now;
    e->last_progress_ok = e->total.ok;
}

static void due_cb(evutil_socket_t fd, short what, void *arg)
{
    mb_engine_t *e = arg;
    if (e->done)
        return;
    fill_all(e);
    check_done(e);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    mb_engine_t *e = arg;
    int64_t now = mb_now_us();
    while (e->active_head && e->active_head->deadline <= now)
        mb_engine_op_done(e->active_head, MB_E_TIMEOUT, -1);
    if (e->done)
        return;
    if (e->cfg.rate > 0 || e->waiting)
        fill_all(e);
    progress_line(e, now, false);
    check_done(e);
}

/* Operations due within the duration (one every 1/rate s from t_begin, at most max_ops) that
 * the run never started. 0 in a closed loop, a run bounded by count only, or one whose scenario
 * ran out of work. */
static int64_t due_not_started(const mb_engine_t *e)
{
    int64_t period = e->cfg.rate > 0 ? (int64_t)(1e6 / e->cfg.rate) : 0;
    if (period <= 0 || e->cfg.duration_us <= 0 || e->no_more)
        return 0;
    int64_t due = (e->cfg.duration_us + period - 1) / period;
    if (e->cfg.max_ops > 0 && due > e->cfg.max_ops)
        due = e->cfg.max_ops;
    return due > e->started ? due - e->started : 0;
}

void mb_engine_run(mb_engine_t *e)
{
    e->t_begin = mb_now_us();
    e->t_last_done = e->t_begin;
    e->next_due = e->t_begin;
    e->last_progress = e->t_begin;
    e->tick = event_new(e->t->base, -1, EV_PERSIST, tick_cb, e);
    struct timeval tv = {0, 20000};
    event_add(e->tick, &tv);
    fill_all(e);
    check_done(e);
    if (!e->done)
        event_base_dispatch(e->t->base);
    e->t_stop = e->t_last_done;
    e->due_not_started = due_not_started(e);
    event_del(e->tick);
    if (e->due)
        event_del(e->due);
    progress_line(e, 0, true);
}

double mb_engine_elapsed_s(const mb_engine_t *e)
{
    double s = (double)(e->t_stop - e->t_begin) / 1e6;
    return s > 0 ? s : 1e-9;
}

struct event_base *mb_event_base_new(bool precise_timers)
{
    struct event_config *cfg = event_config_new();
    if (!cfg)
        return NULL;
    if (precise_timers)
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

static void noop_cb(evutil_socket_t fd, short what, void *arg)
{
}

bool mb_loop_until(struct event_base *base, const bool *flag, int64_t us)
{
    int64_t end = mb_now_us() + us;
    struct event *ev = event_new(base, -1, EV_PERSIST, noop_cb, NULL);
    struct timeval tv = {0, 5000};
    event_add(ev, &tv);
    while ((!flag || !*flag) && mb_now_us() < end)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(ev);
    return flag ? *flag : true;
}

void mb_sleep_loop(struct event_base *base, int64_t us)
{
    mb_loop_until(base, NULL, us);
}
