/* Threads: any thread (pure functions). */
/* Store key encoding and event ids. Pure functions, any thread. */
#include "store/keys.h"

#include <stdio.h>
#include <string.h>

void key_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (unsigned char)(v & 0xff);
        v >>= 8;
    }
}

uint64_t key_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

size_t key_stream(unsigned char *out, const char *sid, uint64_t stream)
{
    memcpy(out, sid, SESSION_ID_LEN);
    key_put_u64(out + SESSION_ID_LEN, stream);
    return KEY_STREAM_LEN;
}

size_t key_event(unsigned char *out, const char *sid, uint64_t stream, uint64_t seq)
{
    memcpy(out, sid, SESSION_ID_LEN);
    key_put_u64(out + SESSION_ID_LEN, stream);
    key_put_u64(out + SESSION_ID_LEN + 8, seq);
    return KEY_EVENT_LEN;
}

size_t key_alarm(unsigned char *out, int64_t due_ms, const char *sid)
{
    key_put_u64(out, (uint64_t)(due_ms < 0 ? 0 : due_ms));
    memcpy(out + 8, sid, SESSION_ID_LEN);
    return KEY_ALARM_LEN;
}

size_t key_expiry(unsigned char *out, const char *sid, int64_t expiry_ms, uint64_t stream)
{
    memcpy(out, sid, SESSION_ID_LEN);
    key_put_u64(out + SESSION_ID_LEN, (uint64_t)(expiry_ms < 0 ? 0 : expiry_ms));
    key_put_u64(out + SESSION_ID_LEN + 8, stream);
    return KEY_EXPIRY_LEN;
}

long key_state(unsigned char *out, const char *sid, const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 200)
        return -1;
    memcpy(out, sid, SESSION_ID_LEN);
    memcpy(out + SESSION_ID_LEN, name, n);
    return (long)(SESSION_ID_LEN + n);
}

size_t key_reqmap(unsigned char *out, const char *sid, const char *reqid_json, size_t idlen,
                  uint64_t stream)
{
    memcpy(out, sid, SESSION_ID_LEN);
    memcpy(out + SESSION_ID_LEN, reqid_json, idlen);
    out[SESSION_ID_LEN + idlen] = 0;
    key_put_u64(out + SESSION_ID_LEN + idlen + 1, stream);
    return SESSION_ID_LEN + idlen + 9;
}

void key_session_upper(unsigned char *out, const char *sid)
{
    memcpy(out, sid, SESSION_ID_LEN);
    out[SESSION_ID_LEN - 1]++;
}

int key_event_decode(const unsigned char *k, size_t len, uint64_t *stream, uint64_t *seq)
{
    if (len != KEY_EVENT_LEN)
        return -1;
    *stream = key_get_u64(k + SESSION_ID_LEN);
    *seq = key_get_u64(k + SESSION_ID_LEN + 8);
    return 0;
}

int key_stream_decode(const unsigned char *k, size_t len, uint64_t *stream)
{
    if (len != KEY_STREAM_LEN)
        return -1;
    *stream = key_get_u64(k + SESSION_ID_LEN);
    return 0;
}

int key_alarm_decode(const unsigned char *k, size_t len, int64_t *due_ms, char *sid_out)
{
    if (len != KEY_ALARM_LEN)
        return -1;
    *due_ms = (int64_t)key_get_u64(k);
    memcpy(sid_out, k + 8, SESSION_ID_LEN);
    sid_out[SESSION_ID_LEN] = '\0';
    return 0;
}

int key_expiry_decode(const unsigned char *k, size_t len, int64_t *expiry_ms, uint64_t *stream)
{
    if (len != KEY_EXPIRY_LEN)
        return -1;
    *expiry_ms = (int64_t)key_get_u64(k + SESSION_ID_LEN);
    *stream = key_get_u64(k + SESSION_ID_LEN + 8);
    return 0;
}
