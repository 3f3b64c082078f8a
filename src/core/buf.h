/* Growable byte buffer. Owned by one thread at a time; buf_steal hands the bytes on. */
#ifndef MCPD_CORE_BUF_H
#define MCPD_CORE_BUF_H

#include <stddef.h>

typedef struct buf {
    char *p;
    size_t len, cap;
} buf_t;

void buf_reserve(buf_t *b, size_t extra);
void buf_add(buf_t *b, const void *data, size_t n);
void buf_adds(buf_t *b, const char *s);
void buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the bytes (NUL-terminated, caller frees) and resets b to empty. */
char *buf_steal(buf_t *b, size_t *len);
void buf_free(buf_t *b);

#endif
