/* hist.c — log-linear histogram; see slot/hist.h. */
#include "slot/hist.h"

#include <string.h>

/* Values below SLOT_HIST_SUB are exact (slot = value). Above, the top
 * SLOT_HIST_SUB_BITS bits of the value (the leading one and the next
 * SUB_BITS-1 bits) pick a sub-bucket inside the value's power of two. */
static uint32_t slot_index(uint64_t v)
{
    if (v < SLOT_HIST_SUB)
        return (uint32_t)v;
    int msb = 63 - __builtin_clzll(v);          /* >= SUB_BITS */
    int shift = msb - (SLOT_HIST_SUB_BITS - 1); /* >= 1 */
    uint64_t sub = v >> shift;                  /* in [SUB/2, SUB) */
    return (uint32_t)((uint64_t)shift * (SLOT_HIST_SUB / 2) + sub);
}

/* The highest value that maps to slot i. */
static uint64_t slot_high(uint32_t i)
{
    if (i < SLOT_HIST_SUB)
        return i;
    uint32_t shift = (i - SLOT_HIST_SUB / 2) / (SLOT_HIST_SUB / 2);
    uint64_t sub = i - (uint64_t)shift * (SLOT_HIST_SUB / 2);
    uint64_t lo = sub << shift;
    return lo + ((UINT64_C(1) << shift) - 1);
}

void slot_hist_reset(slot_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

void slot_hist_record(slot_hist *h, uint64_t value)
{
    h->slots[slot_index(value)]++;
    h->count++;
    h->sum += (double)value;
    if (value < h->min)
        h->min = value;
    if (value > h->max)
        h->max = value;
}

void slot_hist_merge(slot_hist *dst, const slot_hist *src)
{
    if (src->count == 0)
        return;
    for (uint32_t i = 0; i < SLOT_HIST_SLOTS; i++)
        dst->slots[i] += src->slots[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t slot_hist_percentile(const slot_hist *h, double pct)
{
    if (h->count == 0)
        return 0;
    if (pct >= 100.0)
        return h->max;
    if (pct < 0.0)
        pct = 0.0;
    /* The rank of the value asked for: ceil(pct% of count), at least 1. */
    double want = pct / 100.0 * (double)h->count - 1e-9; /* 99.9% of 1000 is 999, not 999.0000000000001 */
    uint64_t rank = want > 0 ? (uint64_t)want : 0;
    if ((double)rank < want)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < SLOT_HIST_SLOTS; i++) {
        seen += h->slots[i];
        if (seen >= rank) {
            uint64_t v = slot_high(i);
            return v > h->max ? h->max : v;
        }
    }
    return h->max;
}

double slot_hist_mean(const slot_hist *h)
{
    return h->count ? h->sum / (double)h->count : 0.0;
}

void slot_hist_cumulative(const slot_hist *h, const uint64_t *bounds, size_t n, uint64_t *counts)
{
    uint64_t seen = 0;
    uint32_t i = 0;
    for (size_t k = 0; k < n; k++) {
        uint32_t last = slot_index(bounds[k]);
        for (; i <= last; i++)
            seen += h->slots[i];
        counts[k] = seen;
    }
}
