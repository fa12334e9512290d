/* test_adapt_gct.c — three pieces of the adaptive layer (codecs/adapt/):
 * GCT shaping (gct.c), the variance-adaptive ratio (variance.c) and
 * GCMPI_RATIO=auto (budget.c). Pure C, no MPI: the "all-reduced" sums are
 * made up here. */
#include "gc_adapt.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (-1, 1). */
static double rng_sym(uint64_t *s)
{
    return 2.0 * (((double)(rng_next(s) >> 11) + 0.5) * 0x1p-53) - 1.0;
}

/* Standard normal (Box-Muller). */
static double rng_normal(uint64_t *s)
{
    double u = (rng_sym(s) + 1.0) / 2.0, v = (rng_sym(s) + 1.0) / 2.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static float *alloc_floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    cr_assert_not_null(p);
    return p;
}

static void assert_close(double got, double want, double rel, const char *what, int i)
{
    cr_assert(fabs(got - want) <= rel * fabs(want) + 1e-7, "%s[%d]: got %.9g, want %.9g",
              what, i, got, want);
}

/* ======================================================================= */
/* GCT                                                                     */
/* ======================================================================= */

static gc_gct_params gct_params(int alg2)
{
    gc_gct_params p = {.lambda = 0.1, .lr = 0.5, .eps = 1e-3, .decay = 0.5,
                       .decay_every = 2, .alg2 = alg2};
    return p;
}

/* Three calls, lr = 0.5 (1/lr = 2), lambda = 0.1, eps = 1e-3, decay 0.5
 * every 2 calls, so calls 1 and 2 use lambda 0.1 and call 3 uses 0.05.
 * h = 2 * (1 - g / (prev +- eps)), ghat = g + lambda * sign(g) * h.
 *
 * call 1: g = {1, -2, 0.5, 0}: no previous gradient, ghat = g.
 * call 2: g = {0.5, -1, 1, 2}, prev = {1, -2, 0.5, 0}
 *   i0: den  1.001      h = 2(1 - 0.4995005)  =  1.0009990  ghat = 0.5 + 0.1000999 = 0.6000999
 *   i1: den -2.001      h = 2(1 - 0.4997501)  =  1.0004998  ghat = -1 - 0.1000500 = -1.1000500
 *   i2: den  0.501      h = 2(1 - 1.9960080)  = -1.9920160  ghat = 1 - 0.1992016  =  0.8007984
 *   i3: den  0.001      h = 2(1 - 2000)       = -3998       ghat = 2 - 399.8      = -397.8
 * call 3: g = {0.3, 0, -0.5, 1}, prev = call 2's ghat (through remember,
 *         sum = 2 ghat over 2 ranks), lambda 0.05
 *   i0: den  0.6010999  h = 2(1 - 0.4990851)  =  1.0018298  ghat = 0.3 + 0.0500915 = 0.3500915
 *   i1: g = 0           h = 2(1 - 0)          =  2          ghat = 0 (sign(0) = 0)
 *   i2: den  0.8017984  h = 2(1 + 0.6235981)  =  3.2471963  ghat = -0.5 - 0.1623598 = -0.6623598
 *   i3: den -397.801    h = 2(1 + 0.0025138)  =  2.0050276  ghat = 1 + 0.1002514  =  1.1002514 */
Test(gct, hand_computed_three_calls)
{
    gc_gct_params p = gct_params(0);
    gc_gct_state s;
    gc_gct_init(&s, &p);
    const float g1[4] = {1, -2, 0.5f, 0}, g2[4] = {0.5f, -1, 1, 2}, g3[4] = {0.3f, 0, -0.5f, 1};
    float out[4], prev[4], sum[4];

    double l1 = gc_gct_shape(&s, &p, g1, NULL, out, 4);
    cr_assert_eq(l1, 0.1);
    for (int i = 0; i < 4; i++) cr_assert_eq(out[i], g1[i], "call 1 changed element %d", i);
    memcpy(prev, g1, sizeof prev);

    double l2 = gc_gct_shape(&s, &p, g2, prev, out, 4);
    cr_assert_eq(l2, 0.1);
    const double want2[4] = {0.6000999, -1.1000500, 0.8007984, -397.8};
    for (int i = 0; i < 4; i++) assert_close(out[i], want2[i], 1e-5, "call 2", i);

    for (int i = 0; i < 4; i++) sum[i] = 2 * out[i];
    gc_gct_remember(sum, 4, 2, prev);
    double l3 = gc_gct_shape(&s, &p, g3, prev, out, 4);
    cr_assert_eq(l3, 0.05);
    const double want3[4] = {0.3500915, 0.0, -0.6623598, 1.1002514};
    for (int i = 0; i < 4; i++) assert_close(out[i], want3[i], 1e-5, "call 3", i);
    cr_assert_eq(out[1], 0.0f, "sign(0) = 0 leaves a zero gradient at zero");
    cr_assert_eq(s.calls, 3);
}

Test(gct, first_call_is_unchanged_even_with_prev)
{
    gc_gct_params p = gct_params(0);
    gc_gct_state s;
    gc_gct_init(&s, &p);
    const float g[3] = {0.25f, -3, 7};
    const float prev[3] = {1, 1, 1};
    float out[3];
    gc_gct_shape(&s, &p, g, prev, out, 3);   /* calls == 0: no previous gradient */
    cr_assert_eq(memcmp(out, g, sizeof g), 0);
    /* prev == NULL later on also means h = 0. */
    gc_gct_shape(&s, &p, g, NULL, out, 3);
    cr_assert_eq(memcmp(out, g, sizeof g), 0);
}

Test(gct, in_place_equals_out_of_place)
{
    enum { N = 1003 };
    gc_gct_params p = gct_params(0);
    float *g = alloc_floats(N), *prev = alloc_floats(N), *out = alloc_floats(N);
    uint64_t r = 7;
    for (int i = 0; i < N; i++) {
        g[i] = (float)rng_sym(&r);
        prev[i] = (float)rng_sym(&r);
    }
    gc_gct_state a, b;
    gc_gct_init(&a, &p);
    gc_gct_init(&b, &p);
    a.calls = b.calls = 1;
    gc_gct_shape(&a, &p, g, prev, out, N);
    gc_gct_shape(&b, &p, g, prev, g, N);
    cr_assert_eq(memcmp(out, g, N * sizeof(float)), 0);
    free(g); free(prev); free(out);
}

/* Eq. 9 adds lambda*sign(g)*h, Algorithm 2 adds lambda*h: the same where
 * g > 0, mirrored around g where g < 0; at g = 0 Eq. 9 adds nothing while
 * Algorithm 2 adds lambda*h = lambda/lr * (1 - 0). */
Test(gct, alg2_differs_from_eq9_where_g_is_not_positive)
{
    const float g[6] = {0.5f, -0.5f, 2, -2, 0, 1e-3f};
    const float prev[6] = {1, 1, -1, -1, 0.3f, -0.2f};
    float e9[6], a2[6];
    gc_gct_params p9 = gct_params(0), pa = gct_params(1);
    gc_gct_state s9, sa;
    gc_gct_init(&s9, &p9);
    gc_gct_init(&sa, &pa);
    s9.calls = sa.calls = 1;
    gc_gct_shape(&s9, &p9, g, prev, e9, 6);
    gc_gct_shape(&sa, &pa, g, prev, a2, 6);
    for (int i = 0; i < 6; i++) {
        if (g[i] > 0) {
            cr_assert_eq(e9[i], a2[i], "g > 0 at %d: forms must agree", i);
        } else if (g[i] < 0) {
            cr_assert_neq(e9[i], a2[i], "g < 0 at %d: forms must differ", i);
            cr_assert_float_eq(e9[i] - g[i], -(a2[i] - g[i]), 1e-6, "mirrored at %d", i);
        } else {
            cr_assert_eq(e9[i], 0.0f);
            cr_assert_float_eq(a2[i], 0.1f / 0.5f, 1e-6); /* lambda/lr * (1 - 0) */
        }
    }
}

Test(gct, lambda_decays_exactly_every_decay_every_calls)
{
    gc_gct_params p = {.lambda = 0.8, .lr = 1, .eps = 1e-3, .decay = 0.5, .decay_every = 3};
    gc_gct_state s;
    gc_gct_init(&s, &p);
    const float g[2] = {1, -1};
    float prev[2] = {1, 1}, out[2];
    /* Calls 1-3 use 0.8, the decay happens after call 3, calls 4-6 use 0.4,
     * then 0.2 from call 7. */
    const double want[8] = {0.8, 0.8, 0.8, 0.4, 0.4, 0.4, 0.2, 0.2};
    for (int c = 0; c < 8; c++) {
        double used = gc_gct_shape(&s, &p, g, c ? prev : NULL, out, 2);
        cr_assert_eq(used, want[c], "call %d used %g, want %g", c + 1, used, want[c]);
    }
    cr_assert_eq(s.lambda, 0.2);
}

Test(gct, lambda_used_scales_the_shaping)
{
    /* lambda 0 (e.g. decayed away) sends g itself. */
    gc_gct_params p = gct_params(0);
    p.lambda = 0;
    gc_gct_state s;
    gc_gct_init(&s, &p);
    s.calls = 1;
    const float g[3] = {1, -2, 3}, prev[3] = {0.5f, 0, -1};
    float out[3];
    gc_gct_shape(&s, &p, g, prev, out, 3);
    cr_assert_eq(memcmp(out, g, sizeof g), 0);
}

Test(gct, prev_near_minus_eps_stays_finite)
{
    gc_gct_params p = gct_params(0);
    gc_gct_state s;
    gc_gct_init(&s, &p);
    s.calls = 1;
    /* prev = -eps: a literal prev + eps would be 0. With eps' = -eps the
     * denominator is -2e-3: h = 2(1 - 1/-2e-3) = 1002, ghat = 1 + 100.2. */
    const float g[4] = {1, 1, -1, 0.5f};
    const float prev[4] = {-1e-3f, 0.0f, -0.0f, -1e-9f};
    float out[4];
    gc_gct_shape(&s, &p, g, prev, out, 4);
    for (int i = 0; i < 4; i++) cr_assert(isfinite(out[i]), "element %d not finite", i);
    assert_close(out[0], 1 + 0.1 * 2 * (1 + 1 / 2e-3), 1e-5, "prev=-eps", 0);
    /* prev = 0: denominator +eps: h = 2(1 - 1000) = -1998. */
    assert_close(out[1], 1 - 0.1 * 1998, 1e-5, "prev=0", 1);
    /* prev = -1e-9: denominator -1.000001e-3: h ~ 2(1 + 500), g > 0. */
    assert_close(out[3], 0.5 + 0.1 * 2 * (1 + 0.5 / 1.000001e-3), 1e-5, "prev=-1e-9", 3);
}

Test(gct, non_finite_results_fall_back_to_g)
{
    gc_gct_params p = gct_params(0);
    p.lambda = 1e38;   /* c = lambda/lr = 2e38 fits a float, c * (1 - g/den) may not */
    gc_gct_state s;
    gc_gct_init(&s, &p);
    s.calls = 1;
    const float g[4] = {1, -2, 3, 4};
    const float prev[4] = {0, NAN, INFINITY, 0.5f};
    float out[4];
    gc_gct_shape(&s, &p, g, prev, out, 4);
    cr_assert_eq(out[0], 1.0f, "overflow falls back to g");
    cr_assert_eq(out[1], -2.0f, "NaN prev falls back to g");
    /* prev = inf: g/den = 0, lambda*h = 2e38 * 1 is finite. */
    assert_close(out[2], 2e38, 1e-6, "inf prev", 2);
    /* 1 - 4/0.501 = -6.98: -1.4e39 overflows. */
    cr_assert_eq(out[3], 4.0f, "overflow falls back to g");
}

Test(gct, remember_divides_by_ranks)
{
    /* 1/3 is not exact: sum * (1/3.0f) differs from sum / 3 for some
     * values; remember must give the division bit for bit. */
    enum { N = 4096 };
    float *sum = alloc_floats(N), *prev = alloc_floats(N);
    uint64_t r = 11;
    for (int i = 0; i < N; i++) sum[i] = (float)(rng_sym(&r) * 100);
    sum[0] = 3; sum[1] = -7.5f; sum[2] = 0;
    gc_gct_remember(sum, N, 3, prev);
    cr_assert_eq(prev[0], 1.0f);
    cr_assert_eq(prev[1], -2.5f);
    cr_assert_eq(prev[2], 0.0f);
    int differs_from_multiply = 0;
    const float third = 1.0f / 3.0f;
    for (int i = 0; i < N; i++) {
        float want = sum[i] / 3.0f;
        cr_assert_eq(memcmp(&prev[i], &want, sizeof want), 0, "element %d", i);
        if (sum[i] * third != want) differs_from_multiply = 1;
    }
    cr_assert(differs_from_multiply, "the data must tell division from multiply");
    /* In place is allowed. */
    gc_gct_remember(sum, N, 1, sum);
    cr_assert_eq(sum[1], -7.5f);
    free(sum); free(prev);
}

/* ======================================================================= */
/* variance-adaptive ratio                                                 */
/* ======================================================================= */

static gc_var_params var_params(double alpha, uint64_t memory)
{
    gc_var_params p;
    memset(&p, 0, sizeof p);
    p.alpha = alpha;
    p.memory = memory;
    return p;
}

Test(variance, auto_bounds_and_floor)
{
    gc_var_params p = var_params(1, 10);
    gc_var_state s;
    gc_var_init(&s, &p, 0.01);
    cr_assert_float_eq(s.lo, 0.0025, 1e-15);
    cr_assert_float_eq(s.hi, 0.04, 1e-15);
    cr_assert_eq(s.ratio, 0.01);
    gc_var_init(&s, &p, 0.5);
    cr_assert_eq(s.hi, 1.0, "auto max is capped at 1");
    gc_var_init(&s, &p, 1e-7);
    cr_assert_eq(s.lo, 1e-6, "lo is floored at 1e-6");
    cr_assert_geq(s.hi, s.lo);
    cr_assert_eq(s.ratio, 1e-6, "the ratio starts inside the bounds");
    p.min = 0.001;
    p.max = 0.2;
    gc_var_init(&s, &p, 0.01);
    cr_assert_eq(s.lo, 0.001);
    cr_assert_eq(s.hi, 0.2);
}

/* ranks 2, memory 2 (w_f = 1/2, w_s = 1/20), alpha 1, base 0.1:
 *   call 1: sum {2, 4} -> m {1, 2}: stored, no nu.
 *   call 2: sum {4, 4} -> m {2, 2}: nu = (1 + 0) / (1 + 4) = 0.2; fast = slow = 0.2,
 *           ratio = 0.1.
 *   call 3: sum {4, 6} -> m {2, 3}: nu = (0 + 1) / (4 + 4) = 0.125;
 *           fast = 0.2 + (0.125 - 0.2) / 2  = 0.1625
 *           slow = 0.2 + (0.125 - 0.2) / 20 = 0.19625
 *           ratio = 0.1 * 0.1625 / 0.19625 = 0.0828025 */
Test(variance, hand_computed_nu_and_ratio)
{
    gc_var_params p = var_params(1, 2);
    gc_var_state s;
    gc_var_init(&s, &p, 0.1);
    float prev[2] = {0, 0};
    const float s1[2] = {2, 4}, s2[2] = {4, 4}, s3[2] = {4, 6};
    cr_assert_eq(gc_var_observe(&s, &p, s1, 2, 2, prev), 0.1);
    cr_assert(isnan(s.last_nu));
    cr_assert(prev[0] == 1 && prev[1] == 2);
    cr_assert_eq(gc_var_observe(&s, &p, s2, 2, 2, prev), 0.1);
    cr_assert_float_eq(s.last_nu, 0.2, 1e-15);
    double r3 = gc_var_observe(&s, &p, s3, 2, 2, prev);
    cr_assert_float_eq(s.last_nu, 0.125, 1e-15);
    cr_assert_float_eq(s.fast, 0.1625, 1e-15);
    cr_assert_float_eq(s.slow, 0.19625, 1e-15);
    cr_assert_float_eq(r3, 0.1 * 0.1625 / 0.19625, 1e-15);
    cr_assert(prev[0] == 2 && prev[1] == 3);
    cr_assert_eq(s.calls, 3);
}

Test(variance, zero_previous_mean_gives_no_nu)
{
    gc_var_params p = var_params(1, 4);
    gc_var_state s;
    gc_var_init(&s, &p, 0.05);
    float prev[3] = {0, 0, 0};
    const float zero[3] = {0, 0, 0}, some[3] = {1, 2, 3};
    gc_var_observe(&s, &p, zero, 3, 1, prev);
    double r = gc_var_observe(&s, &p, some, 3, 1, prev);
    cr_assert_eq(r, 0.05);
    cr_assert(isnan(s.last_nu), "||m_{t-1}|| = 0 must not produce a nu");
    cr_assert(prev[2] == 3, "the mean is still stored");
}

/* A stream m_t = mu + sigma_t * noise_t; sums are m_t * ranks. */
typedef struct var_stream {
    size_t n;
    int ranks;
    float *mu, *sum, *prev;
    uint64_t rng;
} var_stream;

static var_stream stream_new(size_t n, int ranks, uint64_t seed)
{
    var_stream v = {.n = n, .ranks = ranks, .rng = seed};
    v.mu = alloc_floats(n);
    v.sum = alloc_floats(n);
    v.prev = alloc_floats(n);
    for (size_t i = 0; i < n; i++) v.mu[i] = (float)rng_sym(&v.rng);
    return v;
}

static double stream_step(var_stream *v, gc_var_state *s, const gc_var_params *p,
                          double sigma)
{
    for (size_t i = 0; i < v->n; i++)
        v->sum[i] = (float)((v->mu[i] + sigma * rng_normal(&v->rng)) * v->ranks);
    return gc_var_observe(s, p, v->sum, v->n, v->ranks, v->prev);
}

static void stream_free(var_stream *v)
{
    free(v->mu); free(v->sum); free(v->prev);
}

Test(variance, stationary_stream_keeps_ratio_near_base)
{
    /* Same noise distribution every call: nu has a fixed mean and a
     * relative spread of ~sqrt(2/n) = 4.5 % per call, fast/slow stays
     * within 10 % of 1. */
    gc_var_params p = var_params(1, 10);
    gc_var_state s;
    gc_var_init(&s, &p, 0.01);
    var_stream v = stream_new(1000, 4, 3);
    for (int c = 0; c < 400; c++) {
        double r = stream_step(&v, &s, &p, 0.1);
        if (c >= 30) cr_assert(fabs(r / 0.01 - 1) < 0.10, "call %d: ratio %g", c, r);
    }
    stream_free(&v);
}

Test(variance, stabilising_stream_drives_ratio_to_lo)
{
    gc_var_params p = var_params(1, 10);
    gc_var_state s;
    gc_var_init(&s, &p, 0.01);
    var_stream v = stream_new(1000, 4, 5);
    for (int c = 0; c < 200; c++) stream_step(&v, &s, &p, 0.1);
    cr_assert(fabs(s.ratio / 0.01 - 1) < 0.10);
    /* sigma / 10: nu drops 100x. fast follows within ~20 calls, slow does not. */
    double r = 0;
    for (int c = 0; c < 30; c++) r = stream_step(&v, &s, &p, 0.01);
    cr_assert_eq(r, s.lo, "ratio %g, lo %g, fast/slow %g", r, s.lo, s.fast / s.slow);
    stream_free(&v);
}

Test(variance, moving_stream_drives_ratio_to_hi)
{
    gc_var_params p = var_params(1, 10);
    gc_var_state s;
    gc_var_init(&s, &p, 0.01);
    var_stream v = stream_new(1000, 4, 9);
    for (int c = 0; c < 200; c++) stream_step(&v, &s, &p, 0.01);
    cr_assert(fabs(s.ratio / 0.01 - 1) < 0.10);
    double r = 0;
    for (int c = 0; c < 10; c++) r = stream_step(&v, &s, &p, 0.1);   /* nu up 100x */
    cr_assert_eq(r, s.hi, "ratio %g, hi %g, fast/slow %g", r, s.hi, s.fast / s.slow);
    stream_free(&v);
}

Test(variance, bounds_are_never_left_on_random_streams)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        uint64_t r = seed * 977;
        gc_var_params p = var_params(0.25 + 2 * (rng_sym(&r) + 1), 1 + rng_next(&r) % 20);
        if (seed % 2) {
            p.min = 0.002;
            p.max = 0.3;
        }
        double base = 0.001 + 0.2 * (rng_sym(&r) + 1) / 2;
        gc_var_state s;
        gc_var_init(&s, &p, base);
        cr_assert(s.lo <= s.hi);
        var_stream v = stream_new(1 + rng_next(&r) % 300, 1 + (int)(rng_next(&r) % 8), seed);
        for (int c = 0; c < 150; c++) {
            double sigma = pow(10, -3 + 4 * (rng_sym(&r) + 1) / 2);   /* 1e-3 .. 10 */
            double ratio = stream_step(&v, &s, &p, sigma);
            cr_assert(ratio >= s.lo && ratio <= s.hi, "seed %d call %d: %g not in [%g, %g]",
                      (int)seed, c, ratio, s.lo, s.hi);
        }
        stream_free(&v);
    }
}

Test(variance, alpha_zero_keeps_base_exactly)
{
    gc_var_params p = var_params(0, 5);
    gc_var_state s;
    gc_var_init(&s, &p, 0.037);
    var_stream v = stream_new(200, 3, 13);
    for (int c = 0; c < 100; c++) {
        double ratio = stream_step(&v, &s, &p, c < 50 ? 0.001 : 1.0);
        cr_assert_eq(ratio, 0.037, "call %d: %.17g", c, ratio);
    }
    cr_assert(s.fast > s.slow, "the stream did move; only alpha = 0 kept the ratio");
    stream_free(&v);
}

Test(variance, same_sums_give_same_bits)
{
    /* Agreement: two ranks that see the same all-reduced sums compute the
     * same ratio, bit for bit. */
    gc_var_params p = var_params(0.7, 6);
    gc_var_state a, b;
    gc_var_init(&a, &p, 0.02);
    gc_var_init(&b, &p, 0.02);
    var_stream v = stream_new(777, 5, 17);
    float *prev_b = alloc_floats(777);
    uint64_t r = 3;
    for (int c = 0; c < 60; c++) {
        double ra = stream_step(&v, &a, &p, 0.05 + (rng_sym(&r) + 1));
        double rb = gc_var_observe(&b, &p, v.sum, v.n, v.ranks, prev_b);
        cr_assert_eq(memcmp(&ra, &rb, sizeof ra), 0);
    }
    free(prev_b);
    stream_free(&v);
}

/* ======================================================================= */
/* GCMPI_RATIO=auto                                                        */
/* ======================================================================= */

/* A synthetic link: comm = a + b * bytes, bytes = bytes_per_ratio * r + 64. */
typedef struct sim_link {
    double a, b, bytes_per_ratio;
    double noise;   /* relative amplitude of a deterministic pseudo-noise */
    uint64_t rng;
} sim_link;

static double link_time(sim_link *l, double bytes)
{
    double t = l->a + l->b * bytes;
    return l->noise > 0 ? t * (1 + l->noise * rng_sym(&l->rng)) : t;
}

static double link_bytes(const sim_link *l, double ratio)
{
    return l->bytes_per_ratio * ratio + 64;
}

/* Feeds the link back for `calls` calls; *min_seen / *max_seen (optional)
 * record the range of the ratios. Returns the last ratio. */
static double run_link(sim_link *l, const gc_auto_params *p, double start, int calls,
                       gc_budget_state *s, double *min_seen, double *max_seen)
{
    gc_budget_init(s, p, start);
    double r = s->ratio, lo = r, hi = r;
    for (int c = 0; c < calls; c++) {
        double bytes = link_bytes(l, r);
        r = gc_budget_observe(s, p, bytes, link_time(l, bytes), l->bytes_per_ratio);
        lo = fmin(lo, r);
        hi = fmax(hi, r);
    }
    if (min_seen) *min_seen = lo;
    if (max_seen) *max_seen = hi;
    return r;
}

/* 100 Mbit/s = 12.5e6 bytes/s, 1 ms latency; 8e6 bytes per unit ratio
 * (1M elements, value + index). budget 20 ms: r* = (0.02 - 0.001 -
 * 64 b) / (8e6 b) = 0.02968. */
static sim_link link_100mbit(void)
{
    sim_link l = {.a = 1e-3, .b = 1 / 12.5e6, .bytes_per_ratio = 8e6};
    return l;
}

static gc_auto_params auto_params(double budget, double min, double max)
{
    gc_auto_params p = {.on = 1, .budget_s = budget, .min = min, .max = max};
    return p;
}

static double predicted(const sim_link *l, double r)
{
    return l->a + l->b * link_bytes(l, r);
}

Test(budget, init_clamps_the_start_ratio)
{
    gc_auto_params p = auto_params(0.02, 0.001, 0.1);
    gc_budget_state s;
    gc_budget_init(&s, &p, 0.5);
    cr_assert_eq(s.ratio, 0.1);
    gc_budget_init(&s, &p, 1e-5);
    cr_assert_eq(s.ratio, 0.001);
    cr_assert(s.s1 == 0 && s.sx == 0 && s.sxx == 0 && s.sxy == 0 && s.sy == 0 && s.calls == 0);
}

/* First call: single point a = 0, b = 0.01 s / 1000 B = 1e-5 s/B; r =
 * 0.006 / (1e-5 * 1e5) = 0.006 (within a factor 2 of 0.01). */
Test(budget, first_call_uses_the_single_point_model)
{
    gc_auto_params p = auto_params(0.006, 1e-4, 1);
    gc_budget_state s;
    gc_budget_init(&s, &p, 0.01);
    double r = gc_budget_observe(&s, &p, 1000, 0.01, 1e5);
    cr_assert_eq(s.a, 0.0);
    cr_assert_float_eq(s.b, 1e-5, 1e-18);
    cr_assert_float_eq(r, 0.006, 1e-15);
}

Test(budget, exact_line_is_recovered_by_the_fit)
{
    gc_auto_params p = auto_params(1, 1e-4, 1);
    gc_budget_state s;
    gc_budget_init(&s, &p, 0.01);
    const double a = 2e-3, b = 3e-8;
    const double bytes[4] = {1e5, 4e5, 2e5, 9e5};
    for (int i = 0; i < 4; i++) gc_budget_observe(&s, &p, bytes[i], a + b * bytes[i], 1e7);
    cr_assert_float_eq(s.a, a, 1e-12);
    cr_assert_float_eq(s.b, b, 1e-17);
}

Test(budget, constant_bytes_fall_back_to_the_mean_time_per_byte)
{
    /* Every call the same size: the slope is undetermined, and with no
     * intercept ever fitted the model is b = (weighted mean time) / bytes,
     * weights 0.9^age. */
    gc_auto_params p = auto_params(0.01, 1e-4, 1);
    gc_budget_state s;
    gc_budget_init(&s, &p, 0.01);
    const double times[5] = {0.02, 0.021, 0.019, 0.02, 0.022};
    for (int i = 0; i < 5; i++) {
        gc_budget_observe(&s, &p, 5e4, times[i], 5e6);
        double num = 0, den = 0;
        for (int j = 0; j <= i; j++) {
            num += pow(0.9, i - j) * times[j];
            den += pow(0.9, i - j);
        }
        cr_assert_eq(s.a, 0.0, "call %d", i);
        cr_assert_float_eq(s.b, num / den / 5e4, 1e-18, "call %d", i);
    }
}

Test(budget, settled_ratio_stays_when_the_fit_lapses)
{
    /* After convergence the bytes stop varying and the fit is no longer
     * usable; the ratio must stay where the fit put it, and the latency
     * learnt is kept. */
    sim_link l = link_100mbit();
    gc_auto_params p = auto_params(0.02, 1e-4, 1);
    gc_budget_state s;
    double r50 = run_link(&l, &p, 0.001, 50, &s, NULL, NULL);
    for (int c = 0; c < 200; c++) {
        double bytes = link_bytes(&l, s.ratio);
        gc_budget_observe(&s, &p, bytes, link_time(&l, bytes), l.bytes_per_ratio);
    }
    double mx = s.sx / s.s1, var = s.sxx / s.s1 - mx * mx;
    cr_assert_lt(var, 1e-2 * mx * mx, "the bytes did settle");
    cr_assert(fabs(s.ratio / r50 - 1) < 1e-3, "ratio moved from %g to %g", r50, s.ratio);
    cr_assert(fabs(s.a / l.a - 1) < 1e-3, "intercept %g", s.a);
}

Test(budget, converges_to_the_budget_on_a_100mbit_link)
{
    sim_link l = link_100mbit();
    gc_auto_params p = auto_params(0.02, 1e-4, 1);
    gc_budget_state s;
    double r = run_link(&l, &p, 0.001, 50, &s, NULL, NULL);
    cr_assert(fabs(predicted(&l, r) / 0.02 - 1) < 0.05, "ratio %g predicts %g s", r,
              predicted(&l, r));
    cr_assert(fabs(r / 0.029681 - 1) < 0.05, "ratio %g", r);
}

Test(budget, ten_times_slower_link_gives_ten_times_smaller_ratio)
{
    sim_link fast = link_100mbit(), slow = link_100mbit();
    slow.b *= 10;
    gc_auto_params p = auto_params(0.02, 1e-5, 1);
    gc_budget_state s;
    double rf = run_link(&fast, &p, 0.01, 50, &s, NULL, NULL);
    double rs = run_link(&slow, &p, 0.01, 50, &s, NULL, NULL);
    cr_assert(fabs(rf / rs / 10 - 1) < 0.2, "fast %g, slow %g: factor %g", rf, rs, rf / rs);
    cr_assert(fabs(predicted(&slow, rs) / 0.02 - 1) < 0.05);
}

Test(budget, budget_out_of_reach_sits_at_a_bound)
{
    sim_link l = link_100mbit();
    double lo, hi;
    gc_budget_state s;
    /* 0.5 ms is below the 1 ms latency: nothing meets it. */
    gc_auto_params tight = auto_params(5e-4, 0.002, 0.5);
    double r = run_link(&l, &tight, 0.1, 50, &s, &lo, &hi);
    cr_assert_eq(r, 0.002);
    cr_assert(lo >= 0.002 && hi <= 0.5);
    /* 10 s: even ratio 1 (0.64 s) is well within it. */
    gc_auto_params loose = auto_params(10, 0.002, 0.5);
    r = run_link(&l, &loose, 0.01, 50, &s, &lo, &hi);
    cr_assert_eq(r, 0.5);
    cr_assert(lo >= 0.002 && hi <= 0.5);
}

Test(budget, change_per_call_is_at_most_a_factor_of_two)
{
    sim_link l = link_100mbit();
    gc_auto_params p = auto_params(10, 1e-4, 1);
    gc_budget_state s;
    gc_budget_init(&s, &p, 0.01);
    double r = s.ratio;
    for (int c = 0; c < 10; c++) {
        double bytes = link_bytes(&l, r);
        double next = gc_budget_observe(&s, &p, bytes, link_time(&l, bytes), l.bytes_per_ratio);
        cr_assert_float_eq(next, fmin(1.0, 2 * r), 1e-15, "call %d: %g after %g", c, next, r);
        r = next;
    }
    cr_assert_eq(r, 1.0);
}

Test(budget, noisy_times_still_converge)
{
    /* Times off by up to +-20 % (uniform): after 30 calls every ratio
     * predicts (noise-free) a time within 20 % of the budget. */
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sim_link l = link_100mbit();
        l.noise = 0.2;
        l.rng = seed;
        gc_auto_params p = auto_params(0.02, 1e-4, 1);
        gc_budget_state s;
        gc_budget_init(&s, &p, 0.001);
        double r = s.ratio;
        for (int c = 0; c < 100; c++) {
            double bytes = link_bytes(&l, r);
            r = gc_budget_observe(&s, &p, bytes, link_time(&l, bytes), l.bytes_per_ratio);
            if (c >= 30)
                cr_assert(fabs(predicted(&l, r) / 0.02 - 1) < 0.2,
                          "seed %d call %d: ratio %g predicts %g s", (int)seed, c, r,
                          predicted(&l, r));
        }
    }
}

Test(budget, bounds_hold_over_random_links)
{
    for (uint64_t seed = 1; seed <= 30; seed++) {
        uint64_t q = seed * 31;
        sim_link l = {.a = 1e-4 * (1 + 50 * (rng_sym(&q) + 1)),
                  .b = 1 / (1e6 * pow(10, 1.5 * (rng_sym(&q) + 1))),
                  .bytes_per_ratio = 1e4 * pow(10, 1.5 * (rng_sym(&q) + 1)),
                  .noise = 0.3 * (rng_sym(&q) + 1) / 2, .rng = seed};
        double min = 1e-4 * (1 + 9 * (rng_sym(&q) + 1) / 2);
        gc_auto_params p = auto_params(1e-3 * pow(10, 2 * (rng_sym(&q) + 1) / 2), min,
                                       fmin(1, min * 100));
        gc_budget_state s;
        double lo, hi;
        run_link(&l, &p, 0.5 * (rng_sym(&q) + 1), 60, &s, &lo, &hi);
        cr_assert(lo >= p.min && hi <= p.max, "seed %d: [%g, %g] outside [%g, %g]", (int)seed,
                  lo, hi, p.min, p.max);
    }
}

Test(budget, unusable_observations_change_nothing)
{
    gc_auto_params p = auto_params(0.02, 1e-4, 1);
    gc_budget_state s;
    gc_budget_init(&s, &p, 0.05);
    cr_assert_eq(gc_budget_observe(&s, &p, 0, 0.01, 1e6), 0.05);
    cr_assert_eq(gc_budget_observe(&s, &p, 1e4, NAN, 1e6), 0.05);
    cr_assert_eq(gc_budget_observe(&s, &p, 1e4, -1, 1e6), 0.05);
    cr_assert_eq(gc_budget_observe(&s, &p, 1e4, 0.01, 0), 0.05);
    cr_assert_eq(s.calls, 0);
    cr_assert_eq(s.s1, 0.0);
}
