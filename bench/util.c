/* util.c — the wall clock, splitmix64 and an array's growth (util.h). */
#include <stdlib.h>
#include <time.h>

#include "util.h"

uint64_t bench_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void bench_sleep_until_wall_ms(uint64_t at_ms)
{
    struct timespec ts = {.tv_sec = (time_t)(at_ms / 1000u), .tv_nsec = (long)(at_ms % 1000u) * 1000000L};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

uint64_t bench_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

bool bench_grow(void **p, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * item);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}
