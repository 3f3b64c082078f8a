/* mcpbench latency histogram (log-linear, microseconds). Main thread only.
 *
 * Values below 128 µs get one bucket each; above, every power of two is split into 64 buckets,
 * so a reported percentile is within 1.6% of the true value, from 1 µs to 12 days, in 2,304
 * counters (18 KiB). Recording is a count-leading-zeros and an increment.
 */
#ifndef MCPBENCH_MB_HIST_H
#define MCPBENCH_MB_HIST_H

#include <stdint.h>

#define MB_HIST_SUB_BITS 6
#define MB_HIST_BUCKETS (128 + 34 * 64)

typedef struct mb_hist {
    uint64_t count;
    uint64_t min_us, max_us;
    double sum_us;
    uint64_t b[MB_HIST_BUCKETS];
} mb_hist_t;

void mb_hist_init(mb_hist_t *h);
void mb_hist_add(mb_hist_t *h, int64_t us);
void mb_hist_merge(mb_hist_t *into, const mb_hist_t *from);
/* The value at percentile p (0..100), in µs; 0 when empty. */
double mb_hist_pct(const mb_hist_t *h, double p);
double mb_hist_mean(const mb_hist_t *h);

#endif
