/* mcpbench latency histogram. Main thread only (see mb_hist.h). */
#include "mb_hist.h"

#include <string.h>

void mb_hist_init(mb_hist_t *h)
{
    memset(h, 0, sizeof *h);
    h->min_us = UINT64_MAX;
}

static unsigned bucket_of(uint64_t v)
{
    if (v < 128)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    if (msb > 40)
        return MB_HIST_BUCKETS - 1;
    unsigned shift = msb - MB_HIST_SUB_BITS;
    return 128u + (msb - 7u) * 64u + (unsigned)((v >> shift) - 64u);
}

/* The midpoint of bucket i, in µs. */
static double bucket_mid(unsigned i)
{
    if (i < 128)
        return (double)i;
    unsigned k = (i - 128u) / 64u, sub = (i - 128u) % 64u;
    unsigned msb = k + 7u, shift = msb - MB_HIST_SUB_BITS;
    double lo = (double)((uint64_t)(64u + sub) << shift);
    return lo + (double)((uint64_t)1 << shift) / 2.0;
}

void mb_hist_add(mb_hist_t *h, int64_t us)
{
    uint64_t v = us < 0 ? 0 : (uint64_t)us;
    h->b[bucket_of(v)]++;
    h->count++;
    h->sum_us += (double)v;
    if (v < h->min_us)
        h->min_us = v;
    if (v > h->max_us)
        h->max_us = v;
}

void mb_hist_merge(mb_hist_t *into, const mb_hist_t *from)
{
    for (unsigned i = 0; i < MB_HIST_BUCKETS; i++)
        into->b[i] += from->b[i];
    into->count += from->count;
    into->sum_us += from->sum_us;
    if (from->min_us < into->min_us)
        into->min_us = from->min_us;
    if (from->max_us > into->max_us)
        into->max_us = from->max_us;
}

double mb_hist_pct(const mb_hist_t *h, double p)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(p / 100.0 * (double)h->count + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    for (unsigned i = 0; i < MB_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            double v = bucket_mid(i);
            if (v > (double)h->max_us)
                v = (double)h->max_us;
            if (v < (double)h->min_us)
                v = (double)h->min_us;
            return v;
        }
    }
    return (double)h->max_us;
}

double mb_hist_mean(const mb_hist_t *h)
{
    return h->count ? h->sum_us / (double)h->count : 0;
}
