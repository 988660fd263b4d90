/*
 * bench/workload.h — what each phase sends and what each answer means
 * (workload.c): the phases the engine runs. Single-threaded.
 */
#ifndef SLOT_BENCH_WORKLOAD_H
#define SLOT_BENCH_WORKLOAD_H

#include "engine.h"

/* bench_workload_phase — the measured phase of cfg's scenario. */
bench_phase bench_workload_phase(const bench_run *run);
/* bench_warmup_phase / bench_prefill_phase — the warm-up (events[nevents-1]), and
 * sold-out's prefill that sells the event out before measuring. */
bench_phase bench_warmup_phase(const bench_run *run);
bench_phase bench_prefill_phase(const bench_run *run);
/* bench_verify_phase — get_hold for every ledger entry. */
bench_phase bench_verify_phase(const bench_run *run);
/* bench_sessions_init — churn: pipeline sessions per connection. 0 or -1 when out of memory. */
int bench_sessions_init(bench_run *run);

#endif
