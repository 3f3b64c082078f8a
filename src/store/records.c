/* Threads: any thread (pure functions). */
/* Value encodings of store records. Pure functions, any thread. */
#include "store/records.h"

#include "core/jsondump.h"
#include "core/jsonparse.h"
#include "core/util.h"
#include "store/keys.h"

#include <stdlib.h>
#include <string.h>

#define STREAMREC_HDR_S 18 /* 'S': no bytes field */
#define STREAMREC_HDR 26

char *streamrec_encode(const streamrec_t *r, size_t *len)
{
    size_t idlen = 0;
    char *ids = r->req_ids && json_array_size(r->req_ids) ? json_dump_compact(r->req_ids, &idlen)
                                                          : NULL;
    unsigned char *v = xmalloc(STREAMREC_HDR + idlen);
    v[0] = 'T';
    v[1] = (unsigned char)((r->finished ? 1 : 0) | (r->is_get ? 2 : 0) | (r->delivered ? 4 : 0));
    key_put_u64(v + 2, r->seq);
    key_put_u64(v + 10, (uint64_t)r->last_write_ms);
    key_put_u64(v + 18, r->bytes);
    if (ids)
        memcpy(v + STREAMREC_HDR, ids, idlen);
    free(ids);
    *len = STREAMREC_HDR + idlen;
    return (char *)v;
}

int streamrec_decode(const char *v, size_t len, streamrec_t *r)
{
    const unsigned char *u = (const unsigned char *)v;
    memset(r, 0, sizeof *r);
    size_t hdr = u && len && u[0] == 'S' ? STREAMREC_HDR_S : STREAMREC_HDR;
    if (len < hdr || (u[0] != 'S' && u[0] != 'T'))
        return -1;
    r->finished = u[1] & 1;
    r->is_get = (u[1] & 2) != 0;
    r->delivered = (u[1] & 4) != 0;
    r->seq = key_get_u64(u + 2);
    r->last_write_ms = (int64_t)key_get_u64(u + 10);
    if (hdr == STREAMREC_HDR)
        r->bytes = key_get_u64(u + 18);
    if (len > hdr) {
        r->req_ids = json_parse_buf(v + hdr, len - hdr, NULL, 0, NULL); /* ids may hold U+0000 */
        if (!json_is_array(r->req_ids)) {
            json_decref(r->req_ids);
            r->req_ids = NULL;
            return -1;
        }
    }
    return 0;
}

int streamrec_bytes(const char *v, size_t len, uint64_t *bytes, bool *known)
{
    const unsigned char *u = (const unsigned char *)v;
    *bytes = 0;
    *known = false;
    if (len >= STREAMREC_HDR_S && u[0] == 'S')
        return 0;
    if (len < STREAMREC_HDR || u[0] != 'T')
        return -1;
    *bytes = key_get_u64(u + 18);
    *known = true;
    return 0;
}
