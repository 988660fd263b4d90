/*
 * slot/hist.h — a log-linear latency histogram with at least 3 significant
 * digits (the layout of Gil Tene's HdrHistogram: each power of two is split
 * into SLOT_HIST_SUB linear sub-buckets, so a value is recorded with a
 * relative error below 1/SLOT_HIST_SUB).
 *
 * Values are unsigned 64-bit integers in the caller's unit (slotd uses
 * microseconds or nanoseconds and says which in the name: latency_us_p99).
 * Recording is O(1) and allocation-free; one histogram is about 0.5 MiB.
 * Not thread-safe: one per thread, merged with slot_hist_merge.
 */
#ifndef SLOT_HIST_H
#define SLOT_HIST_H

#include <stddef.h>
#include <stdint.h>

#define SLOT_HIST_SUB_BITS 11 /* 2048 sub-buckets: error < 0.05% */
#define SLOT_HIST_SUB (1u << SLOT_HIST_SUB_BITS)
#define SLOT_HIST_BUCKETS (64 - SLOT_HIST_SUB_BITS + 1) /* covers every uint64_t */
#define SLOT_HIST_SLOTS (SLOT_HIST_BUCKETS * (SLOT_HIST_SUB / 2) + SLOT_HIST_SUB / 2)

typedef struct slot_hist {
    uint64_t count;
    uint64_t min, max;
    double sum;
    uint64_t slots[SLOT_HIST_SLOTS];
} slot_hist;

/* slot_hist_reset — empty the histogram (also the initializer for zeroed memory). */
void slot_hist_reset(slot_hist *h);
/* slot_hist_record — record one value. */
void slot_hist_record(slot_hist *h, uint64_t value);
/* slot_hist_merge — add every value of src to dst. */
void slot_hist_merge(slot_hist *dst, const slot_hist *src);
/*
 * slot_hist_percentile — the smallest recorded value v (to within the bucket
 * resolution; the bucket's highest equivalent value is returned, like
 * HdrHistogram) such that at least pct percent of the values are <= v.
 *   pct: 0..100 (100 gives the max). Returns 0 for an empty histogram.
 */
uint64_t slot_hist_percentile(const slot_hist *h, double pct);
/* slot_hist_mean — mean of the recorded values; 0 when empty. */
double slot_hist_mean(const slot_hist *h);

/*
 * slot_hist_cumulative — for each bound, the count of recorded values <= it,
 * as a Prometheus histogram's `le` buckets want them (docs/operations.md,
 * "Metrics"), in one pass over the slots up to the last bound.
 *   bounds: n values in strictly increasing order, in the histogram's unit.
 *   counts: out, n values; counts[k] = values whose slot starts at or below
 *   bounds[k] (exact below SLOT_HIST_SUB; above, a value may be counted up to
 *   the end of bounds[k]'s slot, a relative error below 1/SLOT_HIST_SUB).
 * O(slots up to bounds[n-1]); no allocation. Not thread-safe (as the rest).
 */
void slot_hist_cumulative(const slot_hist *h, const uint64_t *bounds, size_t n, uint64_t *counts);

#endif
