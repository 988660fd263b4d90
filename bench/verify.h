/*
 * bench/verify.h — after the measured phase: did the target do what it
 * said, and does it say what it did (verify.c). Single-threaded.
 */
#ifndef SLOT_BENCH_VERIFY_H
#define SLOT_BENCH_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "driver.h"
#include "engine.h"
#include "limits.h"

/* The outcome of verification: problems, one sentence each. */
typedef struct bench_verdict {
    bool ran;
    char problems[2048];
    uint32_t nproblems;
    bench_view views[BENCH_EVENTS_MAX];
} bench_verdict;

/* bench_problem — add one problem (printf-style; cut to what fits in problems). */
void bench_problem(bench_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * bench_verify — after the measured phase: the answers' own consistency, the
 * scenario's outcome (a sell-out is demanded only of a run that was not
 * stopped by its --duration or --requests bound), the target's check, each
 * event's view against the tallies, then the ledger (get_hold for every hold,
 * through the engine) and the totals. Returns 0, or an exit status when the
 * target could not be asked.
 */
int bench_verify(bench_run *run, bench_verdict *v);

#endif
