/* test_util.h — shared helpers for the codec unit tests. */
#ifndef GC_TEST_UTIL_H
#define GC_TEST_UTIL_H

#include "gcmpi_codec.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The sizes every codec is tested on (issue 4). */
static const size_t test_sizes[] = {0, 1, 7, 1000, (1u << 20) + 3};
#define TEST_SIZE_COUNT (sizeof test_sizes / sizeof test_sizes[0])

static inline uint64_t test_rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static inline double test_rng_unit(uint64_t *s)
{
    return ((double)(test_rng_next(s) >> 11) + 0.5) * 0x1p-53;
}

/* Laplace(0, scale) samples: heavy-ish tails like real gradients. */
static inline void fill_laplace(float *x, size_t n, double scale, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        double u = test_rng_unit(&s) - 0.5;
        x[i] = (float)(-scale * (u < 0 ? -1.0 : 1.0) * log(1.0 - 2.0 * fabs(u)));
    }
}

/* Distinct magnitudes (no ties) in random order, alternating signs. */
static inline void fill_distinct(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(i + 1) * ((i & 1) ? -1.0f : 1.0f);
    uint64_t s = seed;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(test_rng_next(&s) % i);
        float t = x[i - 1]; x[i - 1] = x[j]; x[j] = t;
    }
}

static inline float *test_alloc(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    cr_assert_not_null(p);
    return p;
}

/* Encode g (no residual) and decode into a zeroed out[]. Returns payload bytes.
 * Asserts that both steps succeed. */
static inline size_t roundtrip(const char *codec, const gc_params *p, const float *g,
                               size_t n, uint64_t seed, float *out)
{
    const gc_codec *c = gc_codec_by_name(codec);
    cr_assert_not_null(c, "codec %s not registered", codec);
    size_t cap = gc_bound(c, n, p);
    cr_assert(!gc_is_error(cap), "bound: %s", gc_error_name(cap));
    void *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t len = gc_encode(c, g, NULL, n, p, seed, buf, cap, NULL);
    cr_assert(!gc_is_error(len), "%s encode n=%zu: %s", codec, n, gc_error_name(len));
    cr_assert_leq(len, cap);
    memset(out, 0, n * sizeof(float));
    size_t r = gc_decode_add(buf, len, out, n, NULL);
    cr_assert(!gc_is_error(r), "%s decode n=%zu: %s", codec, n, gc_error_name(r));
    free(buf);
    return len;
}

static inline double rel_l2_error(const float *ref, const float *got, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)ref[i] - (double)got[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif
