/*
 * bench/util.h — the helpers every part of slot-bench uses and that use
 * nothing of it: the wall clock, the random numbers, an array's growth. A leaf of the
 * bench's include graph. Thread-safe (no shared state).
 */
#ifndef SLOT_BENCH_UTIL_H
#define SLOT_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
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

/* bench_grow — make the array *p (items of item bytes, *cap of them) hold at least
 * need items: doubling from 4096, realloc'd in place of *p. Returns true (then *p and
 * *cap are the new array and its capacity), or false when memory cannot be had (*p and
 * *cap unchanged, the array still owned by the caller). The caller's thread. */
bool bench_grow(void **p, size_t *cap, size_t need, size_t item);

#endif
