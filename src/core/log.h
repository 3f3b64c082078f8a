/* Logging: any thread. One line per call, written with a single write(2) to stderr so lines from
 * different threads never interleave. Never log secrets (tokens, Authorization headers). */
#ifndef MCPD_CORE_LOG_H
#define MCPD_CORE_LOG_H

#include <stdbool.h>

typedef enum { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 } log_level_t;

extern log_level_t g_log_level;

/* "error", "warn", "info", "debug" -> 0; -1 when the name is unknown. */
int log_level_parse(const char *name, log_level_t *out);
void log_set_thread_name(const char *name);
void log_write(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when period_us has passed since the last true for *last_us (the caller's static, 0 at
 * first): a warning that each request could repeat is written once per period. */
bool log_due(_Atomic long long *last_us, long long period_us);

#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_write(LOG_WARN, __VA_ARGS__)
#define log_info(...)                         \
    do {                                      \
        if (g_log_level >= LOG_INFO)          \
            log_write(LOG_INFO, __VA_ARGS__); \
    } while (0)
#define log_debug(...)                         \
    do {                                       \
        if (g_log_level >= LOG_DEBUG)          \
            log_write(LOG_DEBUG, __VA_ARGS__); \
    } while (0)

#endif
