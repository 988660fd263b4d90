/* test_hist.c — the latency histogram against known inputs. */
#include <math.h>

#include "harness.h"
#include "slot/hist.h"

TEST_DECLARE(hist_empty_histogram_is_zero)
TEST_DECLARE(hist_small_values_are_exact)
TEST_DECLARE(hist_uniform_million_has_three_digits)
TEST_DECLARE(hist_one_outlier_shows_at_the_tail_only)
TEST_DECLARE(hist_merge_adds_counts)
TEST_DECLARE(hist_huge_values_do_not_overflow)
TEST_DECLARE(hist_cumulative_counts_values_at_or_below_each_bound)

TEST_LIST_START
TEST_ENTRY(hist_empty_histogram_is_zero)
TEST_ENTRY(hist_small_values_are_exact)
TEST_ENTRY(hist_uniform_million_has_three_digits)
TEST_ENTRY(hist_one_outlier_shows_at_the_tail_only)
TEST_ENTRY(hist_merge_adds_counts)
TEST_ENTRY(hist_huge_values_do_not_overflow)
TEST_ENTRY(hist_cumulative_counts_values_at_or_below_each_bound)
TEST_LIST_END

static slot_hist *fresh(void)
{
    slot_hist *h = malloc(sizeof(*h));
    ASSERT(h != NULL);
    slot_hist_reset(h);
    return h;
}

/* |got - want| within 0.1% of want (3 significant digits). */
static void near(uint64_t got, uint64_t want)
{
    double err = fabs((double)got - (double)want);
    if (err > (double)want * 0.001 + 1e-9)
        T_FAIL_("got %" PRIu64 ", want %" PRIu64 " within 0.1%%", got, want);
}

TEST_IMPL(hist_empty_histogram_is_zero)
{
    slot_hist *h = fresh();
    ASSERT_EQ(slot_hist_percentile(h, 50), 0);
    ASSERT_EQ(slot_hist_percentile(h, 100), 0);
    ASSERT(slot_hist_mean(h) == 0.0);
    free(h);
}

TEST_IMPL(hist_small_values_are_exact)
{
    slot_hist *h = fresh();
    for (uint64_t v = 1; v <= 100; v++)
        slot_hist_record(h, v);
    ASSERT_EQ(slot_hist_percentile(h, 50), 50);
    ASSERT_EQ(slot_hist_percentile(h, 99), 99);
    ASSERT_EQ(slot_hist_percentile(h, 1), 1);
    ASSERT_EQ(slot_hist_percentile(h, 100), 100);
    ASSERT_EQ(h->min, 1);
    ASSERT(fabs(slot_hist_mean(h) - 50.5) < 1e-9);
    free(h);
}

TEST_IMPL(hist_uniform_million_has_three_digits)
{
    slot_hist *h = fresh();
    for (uint64_t v = 1; v <= 1000000; v++)
        slot_hist_record(h, v * 1000); /* 1 us .. 1 s in ns */
    near(slot_hist_percentile(h, 50), 500000000);
    near(slot_hist_percentile(h, 90), 900000000);
    near(slot_hist_percentile(h, 99), 990000000);
    near(slot_hist_percentile(h, 99.9), 999000000);
    ASSERT_EQ(slot_hist_percentile(h, 100), 1000000000);
    free(h);
}

TEST_IMPL(hist_one_outlier_shows_at_the_tail_only)
{
    slot_hist *h = fresh();
    for (int i = 0; i < 999; i++)
        slot_hist_record(h, 2000);
    slot_hist_record(h, 5000000);
    near(slot_hist_percentile(h, 99.9), 2000);
    near(slot_hist_percentile(h, 99.95), 5000000);
    ASSERT_EQ(slot_hist_percentile(h, 100), 5000000);
    free(h);
}

TEST_IMPL(hist_merge_adds_counts)
{
    slot_hist *a = fresh(), *b = fresh();
    for (uint64_t v = 1; v <= 500; v++)
        slot_hist_record(a, v);
    for (uint64_t v = 501; v <= 1000; v++)
        slot_hist_record(b, v);
    slot_hist_merge(a, b);
    ASSERT_EQ(a->count, 1000);
    ASSERT_EQ(slot_hist_percentile(a, 50), 500);
    ASSERT_EQ(a->max, 1000);
    ASSERT_EQ(a->min, 1);
    free(a);
    free(b);
}

TEST_IMPL(hist_huge_values_do_not_overflow)
{
    slot_hist *h = fresh();
    slot_hist_record(h, UINT64_MAX);
    slot_hist_record(h, UINT64_MAX / 3);
    ASSERT_EQ(slot_hist_percentile(h, 100), UINT64_MAX);
    uint64_t p50 = slot_hist_percentile(h, 50);
    ASSERT_GE(p50, UINT64_MAX / 3);
    ASSERT(p50 - UINT64_MAX / 3 <= (UINT64_MAX / 3) / 1000);
    free(h);
}

/* The `le` buckets of a Prometheus histogram: exact below SLOT_HIST_SUB, and
 * above it within the bound's slot; the last bound may be UINT64_MAX (+Inf). */
TEST_IMPL(hist_cumulative_counts_values_at_or_below_each_bound)
{
    slot_hist *h = fresh();
    static const uint64_t values[] = {0, 1, 5, 10, 11, 2047, 100000, 100001, 5000000};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        slot_hist_record(h, values[i]);
    static const uint64_t bounds[] = {0, 5, 10, 2047, 100000, 1000000, UINT64_MAX};
    uint64_t counts[7];
    slot_hist_cumulative(h, bounds, 7, counts);
    ASSERT_U64_EQ(counts[0], 1);
    ASSERT_U64_EQ(counts[1], 3);
    ASSERT_U64_EQ(counts[2], 4);
    ASSERT_U64_EQ(counts[3], 6);
    ASSERT(counts[4] == 7 || counts[4] == 8); /* 100001 shares 100000's slot when the slot is 2 wide */
    ASSERT_U64_EQ(counts[5], 8);
    ASSERT_U64_EQ(counts[6], h->count);
    slot_hist *e = fresh();
    slot_hist_cumulative(e, bounds, 7, counts);
    ASSERT_U64_EQ(counts[6], 0);
    free(h);
    free(e);
}
