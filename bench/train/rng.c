/* rng.c — splitmix64 (Steele, Lea, Flood 2014): tiny, stateless to seed, and
 * the same sequence on every platform. */
#include "rng.h"

#include <math.h>

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

rng rng_stream(uint64_t seed, uint64_t purpose)
{
    /* Mixing both words keeps (seed, purpose) pairs from sharing streams. */
    return (rng){ .state = mix(seed ^ mix(purpose + 0x9e3779b97f4a7c15ULL)) };
}

uint64_t rng_next(rng *r)
{
    r->state += 0x9e3779b97f4a7c15ULL;
    return mix(r->state);
}

uint32_t rng_below(rng *r, uint32_t bound)
{
    /* Multiply-shift (Lemire): bias below 2^-32 per draw, no division. */
    return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)bound) >> 32);
}

double rng_normal(rng *r)
{
    /* u1 in (0, 1] so the logarithm is finite. */
    double u1 = ((double)(rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(rng_next(r) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void rng_permutation(rng *r, uint32_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        uint32_t j = rng_below(r, (uint32_t)i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}
