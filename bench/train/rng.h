/* rng.h — the trainer's only source of randomness: splitmix64 streams derived
 * from --seed, so a run is a pure function of its options and rank count. */
#ifndef TRAIN_RNG_H
#define TRAIN_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} rng;

/* Stream purposes: one per use, so no two uses share random numbers. */
enum {
    RNG_PURPOSE_INIT = 1,          /* He initialisation of the weights */
    RNG_PURPOSE_EPOCH_BASE = 1000, /* + epoch: that epoch's shuffle */
};

/* A stream for one purpose (init, shuffle of epoch e, ...): independent of the
 * other streams of the same seed. */
rng rng_stream(uint64_t seed, uint64_t purpose);

uint64_t rng_next(rng *r);

/* Uniform in [0, bound); bound > 0. */
uint32_t rng_below(rng *r, uint32_t bound);

/* Standard normal (Box-Muller). */
double rng_normal(rng *r);

/* perm[i] = i, then a Fisher-Yates shuffle. */
void rng_permutation(rng *r, uint32_t *perm, size_t n);

#endif
