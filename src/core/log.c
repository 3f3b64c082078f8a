/* Threads: any thread. */
/* Logging: any thread. */
#include "core/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

log_level_t g_log_level = LOG_INFO;
static _Thread_local char t_name[16] = "main";

int log_level_parse(const char *name, log_level_t *out)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (log_level_t)i;
            return 0;
        }
    }
    if (strcmp(name, "warning") == 0) {
        *out = LOG_WARN;
        return 0;
    }
    return -1;
}

void log_set_thread_name(const char *name)
{
    snprintf(t_name, sizeof t_name, "%s", name);
}

void log_write(log_level_t level, const char *fmt, ...)
{
    static const char *const tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    if (level > g_log_level)
        return;
    char line[2048];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s [%s] ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, tags[level], t_name);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

bool log_due(_Atomic long long *last_us, long long period_us)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long now = (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + period_us; /* > 0 */
    long long last = atomic_load_explicit(last_us, memory_order_relaxed);
    return now - last >= period_us &&
           atomic_compare_exchange_strong_explicit(last_us, &last, now, memory_order_relaxed,
                                                   memory_order_relaxed);
}
