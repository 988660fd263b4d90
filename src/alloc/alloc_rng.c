/*
 * alloc_rng.c — the allocator's random numbers: xoshiro256** (Blackman and
 * Vigna, 2018), seeded from getrandom(2) or, for tests, from one number
 * (slot_alloc_seed). Used for the start shard of a hold and the hold id's
 * tag. Internal to libslot; see alloc_int.h.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "alloc_int.h"

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t slot__rng_next(slot_alloc *a)
{
    uint64_t *s = a->rng;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* splitmix64, to spread one seed over the four words of state. */
static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void slot_alloc_seed(slot_alloc *a, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        a->rng[i] = splitmix(&seed);
}

int slot__rng_init(slot_alloc *a)
{
    uint64_t seed[4];
    ssize_t n = getrandom(seed, sizeof(seed), 0);
    if (n != (ssize_t)sizeof(seed))
        return n < 0 ? -errno : -EIO;
    memcpy(a->rng, seed, sizeof(seed));
    if ((a->rng[0] | a->rng[1] | a->rng[2] | a->rng[3]) == 0)
        a->rng[0] = 1; /* the one state xoshiro cannot leave */
    return 0;
}
