/*
 * micro_idem — the idempotency index (src/alloc/alloc_int.h) alone: the time of every
 * single call across N inserts of hold-shaped keys, as the commit thread
 * makes them (a lookup that misses, then an add), and the p50, p99, p99.9,
 * p99.99 and max of those times. The max is the number that matters: a
 * table that doubles in one step shows up there as one call of tens of ms
 * (docs/design.md, "The idempotency index"). Then every key is looked up
 * again (hits) with the same statistics.
 *
 * Twice: timed on the wall clock (what a request would wait), and again on
 * a new index timed on the thread's CPU clock (the call's own work, kernel
 * time included, without the time other processes ran on a shared machine).
 * One thread, no store; --seconds bounds each insert phase (the run stops
 * early, reporting what it did).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "micro.h"
#include "alloc/alloc_int.h" /* internal to libslot, measured directly */

#define MICRO_IDEM_KEYS_DEFAULT 10000000u /* --max-keys */
#define MICRO_IDEM_KEYS_MAX 100000000u
#define MICRO_IDEM_SECONDS_DEFAULT 120.0 /* --seconds: the insert phase */

static uint64_t now_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts t[0..n) and prints its quantiles (ns, as us). */
static void report(const char *what, uint32_t *t, uint64_t n, double seconds)
{
    if (n == 0)
        return;
    qsort(t, n, sizeof(*t), cmp_u32);
    const double q[] = {0.5, 0.99, 0.999, 0.9999};
    printf("%-12s %10" PRIu64 " calls %7.2f s %8.0f/s", what, n, seconds, (double)n / seconds);
    const char *names[] = {"p50", "p99", "p99.9", "p99.99"};
    for (int i = 0; i < 4; i++)
        printf("  %s %.2f us", names[i], t[(uint64_t)(q[i] * (double)(n - 1))] / 1000.0);
    printf("  max %.2f us\n", t[n - 1] / 1000.0);
}

/* The i-th key: user "u<i>", request a 16-hex-digit scramble of i. */
static void key_of(uint64_t i, char user[24], size_t *ul, char req[24], size_t *rl)
{
    uint64_t x = i * UINT64_C(0x9e3779b97f4a7c15);
    *ul = (size_t)snprintf(user, 24, "u%" PRIu64, i);
    *rl = (size_t)snprintf(req, 24, "%016" PRIx64, x ^ (x >> 29));
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: micro_idem [--seconds S] [--max-keys N]\n\n"
            "Per-call time of the in-memory idempotency index (src/alloc/idem.c): N inserts\n"
            "(get that misses + add, as a new hold does), then N lookups that hit.\n\n"
            "  --seconds S      the insert phase stops after S seconds (more than 0, at most %.0f;\n"
            "                   default %.0f)\n"
            "  --max-keys N     keys to insert (1..%u; default %u)\n\n"
            "Exit status: 0 ok; 1 out of memory; 64 usage error.\n",
            MICRO_SECONDS_MAX, MICRO_IDEM_SECONDS_DEFAULT, MICRO_IDEM_KEYS_MAX, MICRO_IDEM_KEYS_DEFAULT);
}

static const char ev[] = "hot-sale";

/* Inserts keys 0..n-1 into a new index (*out), timing each call on clock clk
 * into t; stops after `seconds`. Returns the keys inserted, or 0 when out of
 * memory (a message printed). */
static uint64_t insert_pass(clockid_t clk, const char *label, uint64_t n, double seconds, uint32_t *t, slot__idem **out)
{
    slot__idem *ix = *out = slot__idem_new();
    if (!ix) {
        fprintf(stderr, "micro_idem: out of memory\n");
        return 0;
    }
    char user[24], req[24];
    size_t ul, rl;
    double t0 = micro_now_s(), deadline = t0 + seconds;
    uint64_t done = 0;
    enum { WORST_N = 5 };
    uint64_t worst_at[WORST_N] = {0}; /* the slowest inserts' numbers, slowest first */
    for (; done < n; done++) {
        key_of(done, user, &ul, req, &rl);
        uint64_t seq = 0;
        uint64_t a = now_ns(clk);
        int rc = slot__idem_get(ix, ev, sizeof(ev) - 1, user, ul, req, rl, &seq);
        if (rc != 0)
            rc = slot__idem_add(ix, ev, sizeof(ev) - 1, user, ul, req, rl, done + 1);
        uint64_t d = now_ns(clk) - a;
        if (rc != 0) {
            fprintf(stderr, "micro_idem: add: out of memory after %" PRIu64 " keys\n", done);
            return 0;
        }
        t[done] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
        for (int w = 0; w < WORST_N; w++) {
            if (done == 0 || t[done] > t[worst_at[w]]) {
                memmove(&worst_at[w + 1], &worst_at[w], (WORST_N - 1 - (size_t)w) * sizeof(worst_at[0]));
                worst_at[w] = done;
                break;
            }
        }
        if ((done & 1023) == 0 && micro_now_s() > deadline)
            break;
    }
    double ins_s = micro_now_s() - t0;
    printf("%s: %" PRIu64 " keys, index %zu MiB; slowest inserts (number: ms):", label, done,
           slot__idem_bytes(ix) >> 20);
    for (int w = 0; w < WORST_N && w < (int)done; w++)
        printf(" %" PRIu64 ": %.2f", worst_at[w], t[worst_at[w]] / 1e6);
    printf("\n");
    report("insert", t, done, ins_s);
    return done;
}

int main(int argc, char **argv)
{
    micro_opts o = {.count_flag = "max-keys",
                    .seconds = MICRO_IDEM_SECONDS_DEFAULT,
                    .count = MICRO_IDEM_KEYS_DEFAULT,
                    .count_max = MICRO_IDEM_KEYS_MAX,
                    .usage = usage};
    int prc = micro_parse(argc, argv, &o);
    if (prc >= 0)
        return prc;
    uint64_t n = o.count;
    uint32_t *t = malloc(n * sizeof(*t));
    if (!t) {
        fprintf(stderr, "micro_idem: out of memory\n");
        return 1;
    }
    /* Wall clock: what a request waits, including time the thread was not
     * running (on a shared machine, preemption shows up in the max). */
    slot__idem *ix = NULL;
    uint64_t done = insert_pass(CLOCK_MONOTONIC, "wall clock", n, o.seconds, t, &ix);
    if (done == 0)
        return 1;
    char user[24], req[24];
    size_t ul, rl;
    double t0 = micro_now_s();
    uint64_t misses = 0;
    for (uint64_t i = 0; i < done; i++) {
        key_of(i, user, &ul, req, &rl);
        uint64_t seq = 0;
        uint64_t a = now_ns(CLOCK_MONOTONIC);
        int rc = slot__idem_get(ix, ev, sizeof(ev) - 1, user, ul, req, rl, &seq);
        uint64_t d = now_ns(CLOCK_MONOTONIC) - a;
        misses += rc != 0 || seq != i + 1;
        t[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
    }
    report("lookup (hit)", t, done, micro_now_s() - t0);
    slot__idem_free(ix);
    /* The thread's CPU clock: the work of the call itself (page faults and
     * unmapping included), without the time other processes ran. */
    done = insert_pass(CLOCK_THREAD_CPUTIME_ID, "thread CPU clock", n, o.seconds, t, &ix);
    slot__idem_free(ix);
    free(t);
    if (done == 0)
        return 1;
    if (misses) {
        fprintf(stderr, "micro_idem: %" PRIu64 " keys not found with their seq\n", misses);
        return 1;
    }
    return 0;
}
