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
/* Shared by the workloads (workload.c): an error answer counted by code (one nobody expected
 * ends the phase); the answer to a release or a confirm of ledger entry t->key, settled in the
 * ledger and the tallies. */
void bench_count_error(bench_run *run, const bench_result *r);
void bench_release_answer(bench_run *run, const bench_ticket *t, const bench_result *r);
void bench_confirm_answer(bench_run *run, const bench_ticket *t, const bench_result *r);

/*
 * The waitlist scenario (workload_wait.c; docs/protocol.md, "Waitlist"). After the prefill sold
 * every unit: bench_wl_init (the waiters: users, keys, qty), the join phase (every waiter joins,
 * in order, on one connection, so join order is the order of the bench's requests), then
 * bench_wl_sessions_init (a session per waiter, polling its entry, and per prefill hold) and the
 * measured phase (releases and expiries hand units to the waiters; a waiter who learns of its
 * offer releases, confirms or abandons it). After it, verification: the leave phase (waiters
 * still waiting leave, the last joiner first, on one connection), the status phase (every
 * waiter's final state), then bench_wl_order (offers in join order). Each 0 or -1 out of memory.
 */
int bench_wl_init(bench_run *run);
bench_phase bench_wl_join_phase(const bench_run *run);
int bench_wl_sessions_init(bench_run *run);
bench_phase bench_wl_phase(const bench_run *run);
bench_phase bench_wl_leave_phase(const bench_run *run);
bench_phase bench_wl_status_phase(const bench_run *run);
void bench_wl_order(bench_run *run);
/* bench_wl_wait_ms — waiter i's wait: from its join's answer to its offer's commit (ms, 0 when
 * the offer came first or it has none). */
uint64_t bench_wl_wait_ms(const bench_waiter *w);

#endif
