/* mcpbench results and their report (table or JSON lines). Main thread only.
 *
 * The table is for a person at a terminal: the throughput first, latency percentiles in ms,
 * errors by kind (with the HTTP statuses seen), then the scenario's own figures. --json prints
 * the same as one JSON object per line (tools/plot-bench.sh reads those).
 */
#include "mb_scen.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

int64_t mb_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

void mb_result_init(mb_result_t *r, const mb_cfg_t *cfg, const mb_peer_t *p)
{
    memset(r, 0, sizeof *r);
    snprintf(r->scenario, sizeof r->scenario, "%s", cfg->scenario);
    snprintf(r->url, sizeof r->url, "%s", p->url);
    snprintf(r->label, sizeof r->label, "%s", p->label ? p->label : p->url);
    r->unit = "ops/s";
    r->connections = cfg->connections;
    r->sessions = cfg->sessions;
}

static mb_extra_t *extra_slot(mb_result_t *r, const char *key)
{
    for (int i = 0; i < r->nextra; i++)
        if (strcmp(r->extra[i].key, key) == 0)
            return &r->extra[i];
    if (r->nextra >= MB_MAX_EXTRA)
        return NULL;
    mb_extra_t *x = &r->extra[r->nextra++];
    memset(x, 0, sizeof *x);
    snprintf(x->key, sizeof x->key, "%s", key);
    return x;
}

void mb_result_num(mb_result_t *r, const char *key, double v)
{
    mb_extra_t *x = extra_slot(r, key);
    if (x) {
        x->is_str = false;
        x->num = v;
    }
}

void mb_result_str(mb_result_t *r, const char *key, const char *v)
{
    mb_extra_t *x = extra_slot(r, key);
    if (x) {
        x->is_str = true;
        snprintf(x->str, sizeof x->str, "%s", v);
    }
}

void mb_result_from_engine(mb_result_t *r, const mb_engine_t *e, int cls)
{
    const mb_stats_t *s = cls < 0 ? &e->total : &e->cls[cls];
    r->ok = s->ok;
    memcpy(r->err, s->err, sizeof r->err);
    memcpy(r->status, s->status, sizeof r->status);
    r->elapsed_s = mb_engine_elapsed_s(e);
    r->throughput = (double)s->ok / r->elapsed_s;
    r->p50 = mb_hist_pct(&s->hist, 50) / 1000.0;
    r->p90 = mb_hist_pct(&s->hist, 90) / 1000.0;
    r->p99 = mb_hist_pct(&s->hist, 99) / 1000.0;
    r->max = (double)(s->hist.count ? s->hist.max_us : 0) / 1000.0;
    r->mean = mb_hist_mean(&s->hist) / 1000.0;
    if (e->cfg.rate > 0) {
        mb_result_num(r, "target_rate", e->cfg.rate);
        mb_result_num(r, "due_not_started", (double)e->due_not_started);
    }
}

void mb_result_fail(mb_result_t *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->fail_msg, sizeof r->fail_msg, fmt, ap);
    va_end(ap);
    r->failed = true;
}

uint64_t mb_result_errors(const mb_result_t *r)
{
    uint64_t n = 0;
    for (int i = 1; i < MB_E__COUNT; i++)
        n += r->err[i];
    return n;
}

/* 1234567.8 -> "1,234,567.8" */
static const char *fnum(char *out, size_t cap, double v, int decimals)
{
    char raw[64];
    snprintf(raw, sizeof raw, "%.*f", decimals, fabs(v));
    char *dot = strchr(raw, '.');
    size_t ilen = dot ? (size_t)(dot - raw) : strlen(raw);
    size_t k = 0;
    if (v < 0 && k + 1 < cap)
        out[k++] = '-';
    for (size_t i = 0; i < ilen && k + 2 < cap; i++) {
        out[k++] = raw[i];
        size_t left = ilen - i - 1;
        if (left && left % 3 == 0)
            out[k++] = ',';
    }
    if (dot)
        for (const char *p = dot; *p && k + 1 < cap; p++)
            out[k++] = *p;
    out[k] = '\0';
    return out;
}

static void print_errors(const mb_result_t *r)
{
    uint64_t total = mb_result_errors(r);
    printf("  %-24s", "errors");
    if (!total) {
        printf("none\n");
        return;
    }
    char b[64];
    printf("%s (%.2f%%):", fnum(b, sizeof b, (double)total, 0),
           100.0 * (double)total / (double)(total + r->ok));
    for (int i = 1; i < MB_E__COUNT; i++) {
        if (!r->err[i])
            continue;
        printf(" %s %llu", mb_err_names[i], (unsigned long long)r->err[i]);
        if (i == MB_E_STATUS) {
            int shown = 0;
            for (int s = 0; s < 600; s++)
                if (r->status[s])
                    printf("%s%d x%llu", shown++ ? ", " : " [", s,
                           (unsigned long long)r->status[s]);
            if (shown)
                printf("]");
        }
        printf(";");
    }
    printf("\n");
}

static void print_table(const mb_result_t *r)
{
    char b1[64];
    printf("%s  %s", r->scenario, r->url);
    if (strcmp(r->label, r->url) != 0)
        printf("  [%s]", r->label);
    printf("\n");
    if (r->failed) {
        printf("  FAILED TO START: %s\n", r->fail_msg);
        if (!r->ok && !mb_result_errors(r))
            return;
    }
    printf("  %-24s%d connections, %d sessions, %.2f s\n", "run", r->connections, r->sessions,
           r->elapsed_s);
    printf("  %-24s%s %s  (%s ok)\n", "throughput", fnum(b1, sizeof b1, r->throughput, 1), r->unit,
           fnum((char[64]){0}, 64, (double)r->ok, 0));
    printf("  %-24sp50 %.3f   p90 %.3f   p99 %.3f   max %.3f   mean %.3f\n", "latency (ms)", r->p50,
           r->p90, r->p99, r->max, r->mean);
    print_errors(r);
    if (r->cpu_pct > 0)
        printf("  %-24s%.0f%% of one core\n", "mcpbench CPU", r->cpu_pct);
    for (int i = 0; i < r->nextra; i++) {
        const mb_extra_t *x = &r->extra[i];
        if (x->is_str)
            printf("  %-23s %s\n", x->key, x->str);
        else if (x->num == floor(x->num) && fabs(x->num) < 1e15)
            printf("  %-23s %s\n", x->key, fnum(b1, sizeof b1, x->num, 0));
        else
            printf("  %-23s %s\n", x->key, fnum(b1, sizeof b1, x->num, 3));
    }
}

static double round3(double v)
{
    return floor(v * 1000.0 + 0.5) / 1000.0;
}

static void print_json(const mb_result_t *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "scenario", json_string(r->scenario));
    json_object_set_new(o, "url", json_string(r->url));
    json_object_set_new(o, "label", json_string(r->label));
    json_object_set_new(o, "unit", json_string(r->unit));
    json_object_set_new(o, "throughput", json_real(round3(r->throughput)));
    json_object_set_new(o, "ok", json_integer((json_int_t)r->ok));
    json_object_set_new(o, "elapsed_s", json_real(round3(r->elapsed_s)));
    json_object_set_new(o, "p50_ms", json_real(round3(r->p50)));
    json_object_set_new(o, "p90_ms", json_real(round3(r->p90)));
    json_object_set_new(o, "p99_ms", json_real(round3(r->p99)));
    json_object_set_new(o, "max_ms", json_real(round3(r->max)));
    json_object_set_new(o, "mean_ms", json_real(round3(r->mean)));
    json_t *errs = json_object();
    for (int i = 1; i < MB_E__COUNT; i++)
        json_object_set_new(errs, mb_err_names[i], json_integer((json_int_t)r->err[i]));
    json_object_set_new(errs, "total", json_integer((json_int_t)mb_result_errors(r)));
    json_object_set_new(o, "errors", errs);
    json_t *st = json_object();
    for (int s = 0; s < 600; s++) {
        if (r->status[s]) {
            char k[8];
            snprintf(k, sizeof k, "%d", s);
            json_object_set_new(st, k, json_integer((json_int_t)r->status[s]));
        }
    }
    json_object_set_new(o, "http_status_errors", st);
    json_object_set_new(o, "connections", json_integer(r->connections));
    json_object_set_new(o, "sessions", json_integer(r->sessions));
    json_object_set_new(o, "client_cpu_pct", json_real(round3(r->cpu_pct)));
    for (int i = 0; i < r->nextra; i++) {
        const mb_extra_t *x = &r->extra[i];
        json_object_set_new(o, x->key, x->is_str ? json_string(x->str) : json_real(round3(x->num)));
    }
    if (r->failed) {
        json_object_set_new(o, "failed", json_true());
        json_object_set_new(o, "failure", json_string(r->fail_msg));
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(o);
    if (s)
        printf("%s\n", s);
    free(s);
}

void mb_report(const mb_cfg_t *c, const mb_result_t *r)
{
    if (c->json)
        print_json(r);
    else
        print_table(r);
    fflush(stdout);
}

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

static const mb_extra_t *find_extra(const mb_result_t *r, const char *key)
{
    for (int i = 0; i < r->nextra; i++)
        if (strcmp(r->extra[i].key, key) == 0 && !r->extra[i].is_str)
            return &r->extra[i];
    return NULL;
}

/* Extra figures worth a ratio line when both results have them. */
static const char *const ratio_extras[] = {"bytes_per_session", "bytes_per_session_settled",
                                           "warm_p50_ms", "events_per_s", NULL};

void mb_report_compare(const mb_cfg_t *c, const mb_result_t *a, const mb_result_t *b)
{
    if (c->json) {
        json_t *o = json_object();
        json_object_set_new(o, "scenario", json_string(a->scenario));
        json_object_set_new(o, "compare", json_true());
        json_object_set_new(o, "url", json_string(a->url));
        json_object_set_new(o, "url2", json_string(b->url));
        json_object_set_new(o, "label", json_string(a->label));
        json_object_set_new(o, "label2", json_string(b->label));
        json_object_set_new(o, "throughput_ratio",
                            json_real(round3(ratio(a->throughput, b->throughput))));
        json_object_set_new(o, "p50_ratio", json_real(round3(ratio(a->p50, b->p50))));
        json_object_set_new(o, "p90_ratio", json_real(round3(ratio(a->p90, b->p90))));
        json_object_set_new(o, "p99_ratio", json_real(round3(ratio(a->p99, b->p99))));
        json_object_set_new(o, "max_ratio", json_real(round3(ratio(a->max, b->max))));
        for (int i = 0; ratio_extras[i]; i++) {
            const mb_extra_t *x = find_extra(a, ratio_extras[i]),
                             *y = find_extra(b, ratio_extras[i]);
            if (x && y) {
                char k[64];
                snprintf(k, sizeof k, "%s_ratio", ratio_extras[i]);
                json_object_set_new(o, k, json_real(round3(ratio(x->num, y->num))));
            }
        }
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
        json_decref(o);
        if (s)
            printf("%s\n", s);
        free(s);
        fflush(stdout);
        return;
    }
    char b1[64], b2[64];
    printf("\ncompare %s:  A = %s   B = %s\n", a->scenario, a->label, b->label);
    printf("  %-22s %18s %18s %10s\n", "", "A", "B", "A/B");
    printf("  %-22s %18s %18s %9.2fx\n", a->unit, fnum(b1, sizeof b1, a->throughput, 1),
           fnum(b2, sizeof b2, b->throughput, 1), ratio(a->throughput, b->throughput));
    const struct {
        const char *name;
        double x, y;
    } rows[] = {{"p50 (ms)", a->p50, b->p50},
                {"p90 (ms)", a->p90, b->p90},
                {"p99 (ms)", a->p99, b->p99},
                {"max (ms)", a->max, b->max}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        printf("  %-22s %18.3f %18.3f %10.3f\n", rows[i].name, rows[i].x, rows[i].y,
               ratio(rows[i].x, rows[i].y));
    printf("  %-22s %18llu %18llu\n", "errors", (unsigned long long)mb_result_errors(a),
           (unsigned long long)mb_result_errors(b));
    for (int i = 0; ratio_extras[i]; i++) {
        const mb_extra_t *x = find_extra(a, ratio_extras[i]), *y = find_extra(b, ratio_extras[i]);
        if (x && y)
            printf("  %-22s %18s %18s %10.3f\n", ratio_extras[i], fnum(b1, sizeof b1, x->num, 1),
                   fnum(b2, sizeof b2, y->num, 1), ratio(x->num, y->num));
    }
    fflush(stdout);
}
