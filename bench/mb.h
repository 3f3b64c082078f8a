/* mcpbench common definitions. Single-threaded: everything in mcpbench runs on the main thread.
 *
 * mcpbench is one event loop (libevent) on one thread: no locks, no atomics. Time is CLOCK_MONOTONIC
 * in microseconds everywhere; latencies are recorded in microseconds and printed in milliseconds.
 */
#ifndef MCPBENCH_MB_H
#define MCPBENCH_MB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MB_VERSION "0.1.0"

/* What went wrong with an operation; each kind is counted separately in the report. */
typedef enum {
    MB_OK = 0,
    MB_E_CONNECT, /* TCP connect refused or failed */
    MB_E_TIMEOUT, /* the operation did not finish within --timeout */
    MB_E_STATUS,  /* an unexpected HTTP status */
    MB_E_PROTO,   /* malformed HTTP/SSE/JSON, a JSON-RPC error, a missing response */
    MB_E_BODY,    /* the response was well-formed but did not contain what was asked for */
    MB_E_IO,      /* the connection broke in the middle of a response */
    MB_E__COUNT
} mb_err_t;

extern const char *const mb_err_names[MB_E__COUNT];

int64_t mb_now_us(void);

/* A growable byte buffer (the caller zero-initializes it). */
typedef struct mb_buf {
    char *p;
    size_t len, cap;
} mb_buf_t;

void mb_buf_add(mb_buf_t *b, const void *data, size_t n);
void mb_buf_addc(mb_buf_t *b, char c);
void mb_buf_free(mb_buf_t *b);

void *mb_xmalloc(size_t n);
void *mb_xcalloc(size_t n, size_t size);
void *mb_xrealloc(void *p, size_t n);

/* Appends the decimal form of v to out; returns the number of characters written (no NUL). */
size_t mb_fmt_i64(char *out, int64_t v);

#endif
