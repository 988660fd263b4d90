/*
 * bench/util.h — the two helpers every part of slot-bench uses and that use
 * nothing of it: the wall clock and the random numbers. A leaf of the
 * bench's include graph. Thread-safe (no shared state).
 */
#ifndef SLOT_BENCH_UTIL_H
#define SLOT_BENCH_UTIL_H

#include <stdint.h>

/* bench_wall_ms — the wall clock (CLOCK_REALTIME), ms since the Unix epoch:
 * the servers' clock for expires_at. */
uint64_t bench_wall_ms(void);

/* bench_sleep_until_wall_ms — sleep until the wall clock reads at least
 * at_ms (ms since the Unix epoch; at once when it has passed). Signals do
 * not cut it short. */
void bench_sleep_until_wall_ms(uint64_t at_ms);

/* bench_rand — splitmix64: fast and seedable; *state is the stream's state
 * (any value; one state per stream). Returns the next 64 random bits. */
uint64_t bench_rand(uint64_t *state);

#endif
