/* Threads: any thread (a buffer has one owner at a time). */
/* Growable byte buffer. */
#include "core/buf.h"

#include "core/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_reserve(buf_t *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

void buf_add(buf_t *b, const void *data, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void buf_adds(buf_t *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

void buf_printf(buf_t *b, const char *fmt, ...)
{
    /* format into a stack buffer first: most calls fit, and no NULL-buffer sizing pass */
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    if ((size_t)n < sizeof small) {
        buf_add(b, small, (size_t)n);
        return;
    }
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *buf_steal(buf_t *b, size_t *len)
{
    char *p = b->p;
    if (len)
        *len = b->len;
    if (!p) {
        p = xmalloc(1);
        p[0] = '\0';
    }
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

void buf_free(buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
