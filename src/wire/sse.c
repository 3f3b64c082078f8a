/* Threads: any thread (pure functions). */
/* Server-sent events framing. Pure functions, any thread. */
#include "wire/sse.h"

#include <string.h>

void sse_frame_event(buf_t *out, const char *id, const char *data, size_t len)
{
    if (id) {
        /* a line break inside the id would end the field and start another one: drop it */
        buf_adds(out, "id: ");
        for (const char *p = id; *p; p++)
            if (*p != '\n' && *p != '\r')
                buf_add(out, p, 1);
        buf_add(out, "\n", 1);
    }
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || data[i] == '\n' || data[i] == '\r') {
            buf_adds(out, "data: ");
            buf_add(out, data + start, i - start);
            buf_add(out, "\n", 1);
            if (i < len && data[i] == '\r' && i + 1 < len && data[i + 1] == '\n')
                i++;
            start = i + 1;
        }
    }
    buf_add(out, "\n", 1);
}

void sse_frame_retry(buf_t *out, long long ms)
{
    buf_printf(out, "retry: %lld\n", ms);
}
