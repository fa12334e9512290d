/* test_adapt_edgc.c — EDGC (codecs/adapt/edgc.c, docs/adapt-edgc.md): the
 * down-sampled entropy estimate, the entropy -> ratio / rank model and the
 * window rule.
 *
 * The quantiser under test (documented in edgc.c and the README): 256
 * levels of step mean|x| / 16 centred on 0, values beyond +-8 mean|x| in the
 * edge levels; entropy in bits of the level histogram. */
#include "test_util.h"

#include "gc_adapt.h"

/* ---- helpers ------------------------------------------------------------ */

static void fill_gaussian(float *x, size_t n, double sigma, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        double u1 = test_rng_unit(&s), u2 = test_rng_unit(&s);
        x[i] = (float)(sigma * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
}

/* Plug-in entropy of a histogram of counts, written out independently. */
static double ref_entropy(const double *count, size_t bins)
{
    double total = 0, h = 0;
    for (size_t b = 0; b < bins; b++) total += count[b];
    for (size_t b = 0; b < bins; b++)
        if (count[b] > 0) h -= count[b] / total * log2(count[b] / total);
    return h;
}

static gc_edgc_params edgc_params(double alpha, double beta, uint64_t window, double min,
                                  double max)
{
    gc_edgc_params p = {.alpha = alpha, .beta = beta, .window = window, .min = min, .max = max};
    return p;
}

/* ---- entropy of known distributions ------------------------------------ */

Test(edgc_entropy, constant_vector_is_zero_bits)
{
    enum { N = 1000 };
    float x[N];
    const float values[] = {0.0f, 0.37f, -5e-3f, 1e30f};
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        for (size_t i = 0; i < N; i++) x[i] = values[v];
        cr_assert_float_eq(gc_edgc_entropy_full(x, N), 0.0, 1e-12, "value %g", values[v]);
        cr_assert_float_eq(gc_edgc_entropy(x, N, 0.1, 7), 0.0, 1e-12, "value %g", values[v]);
    }
    cr_assert_float_eq(gc_edgc_entropy_full(x, 0), 0.0, 1e-12, "empty buffer");
}

Test(edgc_entropy, two_values_with_equal_counts_are_one_bit)
{
    enum { N = 1000 };
    float x[N];
    for (size_t i = 0; i < N; i++) x[i] = (i & 1) ? -0.25f : 0.25f; /* +-a: levels 144, 112 */
    cr_assert_float_eq(gc_edgc_entropy_full(x, N), 1.0, 1e-12);
    for (size_t i = 0; i < N; i++) x[i] = (i & 1) ? 3.0f : 0.0f; /* {0, a}: levels 128, 160 */
    cr_assert_float_eq(gc_edgc_entropy_full(x, N), 1.0, 1e-12);
}

Test(edgc_entropy, two_values_at_one_quarter_match_the_hand_computation)
{
    /* p = (1/4, 3/4): H = -(1/4 log2 1/4 + 3/4 log2 3/4) = 0.811278124... */
    enum { N = 1000 };
    float x[N];
    for (size_t i = 0; i < N; i++) x[i] = (i % 4 == 0) ? 1.0f : 0.0f;
    cr_assert_float_eq(gc_edgc_entropy_full(x, N), 0.8112781244591328, 1e-12);
}

Test(edgc_entropy, equally_likely_values_in_distinct_levels_give_k_bits)
{
    /* Values j*D, j < 2^k, equally often: mean|x| = D (2^k - 1) / 2, so the
     * step is D (2^k - 1) / 32 and the spacing D is 32 / (2^k - 1) >= 1 steps
     * for k <= 5: every value has its own level, H = k bits. */
    enum { N = 32 * 960 };
    static float x[N];
    for (unsigned k = 1; k <= 5; k++) {
        size_t values = (size_t)1 << k;
        for (size_t i = 0; i < N; i++) x[i] = 0.125f * (float)(i % values);
        cr_assert_float_eq(gc_edgc_entropy_full(x, N), (double)k, 1e-12, "k = %u", k);
    }
}

Test(edgc_entropy, uniform_data_fills_64_levels_equally)
{
    /* U(-a, a): mean|x| = a/2, step = a/32, so the data spread evenly over
     * the 64 levels of [-a, a): 6 bits, less a plug-in bias of
     * 63 / (2 n ln 2) = 4.5e-5 and the 1/sqrt(n) error of the scale. */
    size_t n = 1000000;
    float *x = test_alloc(n);
    uint64_t s = 11;
    for (size_t i = 0; i < n; i++) x[i] = (float)(2.0 * test_rng_unit(&s) - 1.0);
    cr_assert_float_eq(gc_edgc_entropy_full(x, n), 6.0, 0.01);
    free(x);
}

Test(edgc_entropy, matches_an_independent_histogram_on_laplace_data)
{
    size_t n = 100000;
    float *x = test_alloc(n);
    fill_laplace(x, n, 0.01, 5);
    double sum_abs = 0;
    for (size_t i = 0; i < n; i++) sum_abs += fabs((double)x[i]);
    double step = sum_abs / (double)n / 16.0;
    static double count[256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) {
        long level = (long)floor(x[i] / step) + 128;
        count[level < 0 ? 0 : level > 255 ? 255 : level] += 1;
    }
    cr_assert_float_eq(gc_edgc_entropy_full(x, n), ref_entropy(count, 256), 1e-9);
    free(x);
}

Test(edgc_entropy, non_finite_values_are_left_out)
{
    enum { N = 1000 };
    float x[N];
    for (size_t i = 0; i < N; i++) x[i] = (i & 1) ? -1.0f : 1.0f;
    x[10] = NAN;
    x[11] = INFINITY;
    x[12] = -INFINITY;
    x[13] = NAN;
    cr_assert_float_eq(gc_edgc_entropy_full(x, N), 1.0, 1e-12);
}

Test(edgc_entropy, is_independent_of_the_gradient_scale)
{
    /* The step follows mean|x|: scaling by a power of two changes nothing. */
    size_t n = 100000;
    float *x = test_alloc(n);
    fill_laplace(x, n, 1.0, 9);
    double h = gc_edgc_entropy(x, n, 0.1, 3);
    for (size_t i = 0; i < n; i++) x[i] *= 0x1p-20f;
    cr_assert_float_eq(gc_edgc_entropy(x, n, 0.1, 3), h, 1e-12);
    free(x);
}

/* ---- the sampled estimate ------------------------------------------------
 * With m = beta n sampled elements the plug-in estimate is low by about
 * (B - 1) / (2 m ln 2) bits (B occupied levels <= 256). Its spread: the
 * estimate is about mean(-log2 p(x_i)) + log2(16 / mean|x_i|) over the
 * sample, and the two terms move together. For Laplace data both are
 * linear in |x| and cancel to first order; for Gaussian data the sd is
 * log2(e) sd(z^2/2 - sqrt(pi/2)|z|) / sqrt(m) = 0.38 / sqrt(m). Allowed:
 * bias + 4 times a generous sd of 0.75 / sqrt(m), i.e.
 * 255 / (2 m ln 2) + 3 / sqrt(m): 0.048 bits at m = 1e4 (beta 0.01),
 * 0.011 at m = 1e5 (beta 0.1). (Measured over 200 seeds: at most 0.029 and
 * 0.004.) A quantiser scaled by the sample maximum fails this by ~0.5 bits
 * on Laplace data (the maximum of 1e4 draws is 2/3 of that of 1e6). */
static double sampled_bound(double m) { return 255.0 / (2.0 * m * log(2.0)) + 3.0 / sqrt(m); }

static void check_sampled_against_full(const float *x, size_t n, const char *what)
{
    double full = gc_edgc_entropy_full(x, n);
    const double betas[] = {0.01, 0.1};
    for (size_t b = 0; b < 2; b++) {
        double m = betas[b] * (double)n, bound = sampled_bound(m);
        for (uint64_t seed = 1; seed <= 4; seed++) {
            double h = gc_edgc_entropy(x, n, betas[b], seed * 0x1234567ull);
            cr_assert_leq(fabs(h - full), bound, "%s beta %g seed %llu: sampled %.4f full %.4f",
                          what, betas[b], (unsigned long long)seed, h, full);
        }
    }
}

Test(edgc_sampler, sampled_estimate_is_within_the_bound_on_gaussian_data)
{
    size_t n = 1000000;
    float *x = test_alloc(n);
    fill_gaussian(x, n, 0.003, 21);
    check_sampled_against_full(x, n, "gaussian");
    free(x);
}

Test(edgc_sampler, sampled_estimate_is_within_the_bound_on_laplace_data)
{
    size_t n = 1000000;
    float *x = test_alloc(n);
    fill_laplace(x, n, 0.003, 22);
    check_sampled_against_full(x, n, "laplace");
    free(x);
}

Test(edgc_sampler, sample_spreads_over_an_ordered_buffer)
{
    /* A fusion buffer: a layer of zeros, then a Laplace layer, then a small
     * Gaussian one. A sample of the first beta n elements would read 0 bits. */
    size_t n = 1000000;
    float *x = test_alloc(n);
    fill_laplace(x + n / 2, n / 4, 0.01, 23);
    fill_gaussian(x + 3 * (n / 4), n - 3 * (n / 4), 0.001, 24);
    double full = gc_edgc_entropy_full(x, n);
    cr_assert_gt(full, 1.0);
    check_sampled_against_full(x, n, "ordered");
    free(x);
}

Test(edgc_sampler, same_seed_gives_the_same_estimate_and_other_seeds_differ)
{
    size_t n = 1000000;
    float *x = test_alloc(n);
    fill_laplace(x, n, 1.0, 31);
    double a = gc_edgc_entropy(x, n, 0.01, 77);
    cr_assert_eq(gc_edgc_entropy(x, n, 0.01, 77), a); /* bit for bit */
    cr_assert_neq(gc_edgc_entropy(x, n, 0.01, 78), a);
    cr_assert_neq(gc_edgc_entropy(x, n, 0.01, 1u << 20), a);
    free(x);
}

Test(edgc_sampler, beta_one_is_the_full_estimate)
{
    size_t n = 10007;
    float *x = test_alloc(n);
    fill_gaussian(x, n, 1.0, 41);
    cr_assert_eq(gc_edgc_entropy(x, n, 1.0, 5), gc_edgc_entropy_full(x, n));
    free(x);
}

Test(edgc_sampler, tiny_beta_still_reads_one_element)
{
    float x[3] = {2.0f, 2.0f, 2.0f};
    cr_assert_float_eq(gc_edgc_entropy(x, 3, 1e-9, 1), 0.0, 1e-12);
    float y[2] = {1.0f, -1.0f};
    cr_assert_float_eq(gc_edgc_entropy(y, 2, 1.0, 1), 1.0, 1e-12);
}

/* ---- bounds and the model ---------------------------------------------- */

Test(edgc_model, auto_bounds_are_a_quarter_and_four_times_base_in_the_codec_range)
{
    gc_edgc_params p = edgc_params(0.5, 0.1, 10, 0, 0);
    gc_edgc_state s;
    gc_edgc_init(&s, &p, 0.01, 0);
    cr_assert_float_eq(s.lo, 0.0025, 1e-15);
    cr_assert_float_eq(s.hi, 0.04, 1e-15);
    cr_assert_float_eq(s.setting, 0.01, 1e-15);
    gc_edgc_init(&s, &p, 0.5, 0);
    cr_assert_float_eq(s.lo, 0.125, 1e-15);
    cr_assert_float_eq(s.hi, 1.0, 0); /* 2 clamped to the ratio range */
    gc_edgc_init(&s, &p, 4, 1);
    cr_assert_float_eq(s.lo, 1.0, 0);
    cr_assert_float_eq(s.hi, 16.0, 0);
    gc_edgc_init(&s, &p, 6, 1);
    cr_assert_float_eq(s.lo, 2.0, 0); /* ceil(1.5) */
    cr_assert_float_eq(s.hi, 24.0, 0);
    gc_edgc_init(&s, &p, 512, 1);
    cr_assert_float_eq(s.hi, 1024.0, 0); /* 2048 clamped to the rank range */

    gc_edgc_params q = edgc_params(0.5, 0.1, 10, 0.003, 0.02);
    gc_edgc_init(&s, &q, 0.01, 0);
    cr_assert_float_eq(s.lo, 0.003, 0);
    cr_assert_float_eq(s.hi, 0.02, 0);
    gc_edgc_params r = edgc_params(0.5, 0.1, 10, 2.5, 7.5);
    gc_edgc_init(&s, &r, 4, 1);
    cr_assert_float_eq(s.lo, 3.0, 0);
    cr_assert_float_eq(s.hi, 7.0, 0);
}

static gc_edgc_state anchored(double base, int is_rank, double h_ref)
{
    gc_edgc_params p = edgc_params(1.0, 0.1, 1, 0, 0);
    gc_edgc_state s;
    gc_edgc_init(&s, &p, base, is_rank);
    gc_edgc_step(&s, &p, 1, h_ref); /* window of one call: anchors */
    cr_assert(s.have_ref);
    cr_assert_float_eq(s.h_ref, h_ref, 0);
    return s;
}

Test(edgc_model, anchor_entropy_gives_the_base_setting)
{
    gc_edgc_state s = anchored(0.01, 0, 4.3);
    cr_assert_float_eq(gc_edgc_model(&s, 4.3), 0.01, 1e-15);
    gc_edgc_state r = anchored(8, 1, 6.1);
    cr_assert_float_eq(gc_edgc_model(&r, 6.1), 8.0, 0);
}

Test(edgc_model, one_bit_less_halves_the_setting)
{
    /* setting = base * 2^(h - h_ref), docs/adapt-edgc.md */
    gc_edgc_state s = anchored(0.01, 0, 5.0);
    cr_assert_float_eq(gc_edgc_model(&s, 4.0), 0.005, 1e-15);
    cr_assert_float_eq(gc_edgc_model(&s, 6.0), 0.02, 1e-15);
    cr_assert_float_eq(gc_edgc_model(&s, 4.5), 0.01 / sqrt(2.0), 1e-15);
    cr_assert_float_eq(gc_edgc_model(&s, 1.0), 0.0025, 1e-15); /* 0.01/16 -> lo */
    gc_edgc_state r = anchored(8, 1, 5.0);
    cr_assert_float_eq(gc_edgc_model(&r, 4.5), 6.0, 0); /* 5.66 rounds to 6 */
    cr_assert_float_eq(gc_edgc_model(&r, 6.0), 16.0, 0);
    cr_assert_float_eq(gc_edgc_model(&r, 9.0), 32.0, 0); /* 128 -> hi */
}

Test(edgc_model, lower_entropy_never_raises_the_setting_and_ranks_are_integers)
{
    const double bases[] = {0.001, 0.01, 0.3, 1.0};
    for (size_t b = 0; b < 4; b++) {
        gc_edgc_state s = anchored(bases[b], 0, 5.0);
        double prev = gc_edgc_model(&s, -2.0);
        for (double h = -2.0; h <= 10.0; h += 0.01) {
            double v = gc_edgc_model(&s, h);
            cr_assert_geq(v, prev, "base %g h %g", bases[b], h);
            cr_assert(v > 0.0 && v <= 1.0);
            prev = v;
        }
    }
    for (unsigned base = 1; base <= 1024; base *= 2) {
        gc_edgc_state r = anchored(base, 1, 5.0);
        double prev = gc_edgc_model(&r, -2.0);
        for (double h = -2.0; h <= 10.0; h += 0.01) {
            double v = gc_edgc_model(&r, h);
            cr_assert_geq(v, prev, "rank base %u h %g", base, h);
            cr_assert_eq(v, floor(v), "rank %g is not an integer", v);
            cr_assert(v >= 1.0 && v <= 1024.0);
            prev = v;
        }
    }
}

/* ---- the window rule ----------------------------------------------------- */

/* Independent reference for alpha = a / b: position p of a window is sampled
 * when an integer k has (p - 1) a / b < k <= p a / b, i.e. the calls
 * ceil(k b / a): 0, 1/alpha, 2/alpha, ... rounded up. */
static int ref_sampled(uint64_t pos, uint64_t a, uint64_t b)
{
    if (pos == 0) return 1;
    return (pos * a) / b > ((pos - 1) * a) / b;
}

Test(edgc_window, samples_exactly_the_calls_at_multiples_of_one_over_alpha)
{
    const uint64_t fr[][2] = {{1, 1}, {1, 2}, {1, 3}, {1, 10}, {3, 10}, {2, 3}, {7, 9}, {1, 64}};
    const uint64_t windows[] = {1, 2, 7, 10, 30, 100};
    for (size_t f = 0; f < sizeof fr / sizeof fr[0]; f++) {
        for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
            gc_edgc_params p = edgc_params((double)fr[f][0] / (double)fr[f][1], 0.1, windows[w],
                                           0, 0);
            gc_edgc_state s;
            gc_edgc_init(&s, &p, 0.01, 0);
            uint64_t sampled = 0;
            for (uint64_t call = 0; call < 3 * windows[w]; call++) {
                int want = ref_sampled(call % windows[w], fr[f][0], fr[f][1]);
                int got = gc_edgc_sample_now(&s, &p);
                cr_assert_eq(got, want, "alpha %llu/%llu window %llu call %llu",
                             (unsigned long long)fr[f][0], (unsigned long long)fr[f][1],
                             (unsigned long long)windows[w], (unsigned long long)call);
                sampled += (uint64_t)got;
                gc_edgc_step(&s, &p, got, 5.0);
            }
            /* floor((W - 1) alpha) + 1 per window, at least one */
            uint64_t per_window = ((windows[w] - 1) * fr[f][0]) / fr[f][1] + 1;
            cr_assert_eq(sampled, 3 * per_window);
        }
    }
}

/* One step, returning the setting (a function: Criterion's float macros
 * evaluate their arguments twice). */
static double step(gc_edgc_state *s, const gc_edgc_params *p, int has, double h)
{
    return gc_edgc_step(s, p, has, h);
}

Test(edgc_window, first_measured_window_anchors_and_keeps_base)
{
    gc_edgc_params p = edgc_params(0.5, 0.1, 4, 0, 0);
    gc_edgc_state s;
    gc_edgc_init(&s, &p, 0.01, 0);
    cr_assert(isnan(s.last_entropy));
    double v;
    /* window 1: no samples -> nothing anchored, setting kept */
    for (int i = 0; i < 4; i++) {
        v = step(&s, &p, 0, 0.0);
        cr_assert_float_eq(v, 0.01, 0);
    }
    cr_assert(!s.have_ref);
    /* window 2: entropies 5 and 7 -> h_ref = 6, base kept */
    const double e2[] = {5.0, 0, 7.0, 0};
    for (int i = 0; i < 4; i++) {
        v = step(&s, &p, i % 2 == 0, e2[i]);
        cr_assert_float_eq(v, 0.01, 0);
    }
    cr_assert(s.have_ref);
    cr_assert_float_eq(s.h_ref, 6.0, 1e-15);
    cr_assert_float_eq(s.last_entropy, 6.0, 1e-15);
    /* window 3: mean 5 -> half the base, from the boundary on */
    const double e3[] = {4.5, 0, 5.5, 0};
    const double want3[] = {0.01, 0.01, 0.01, 0.005};
    for (int i = 0; i < 4; i++) {
        v = step(&s, &p, i % 2 == 0, e3[i]);
        cr_assert_float_eq(v, want3[i], 1e-15, "call %d", i);
    }
    /* window 4: no samples -> kept */
    for (int i = 0; i < 4; i++) {
        v = step(&s, &p, 0, 9.0);
        cr_assert_float_eq(v, 0.005, 1e-15);
    }
    cr_assert_float_eq(s.last_entropy, 5.0, 1e-15);
    cr_assert_eq(s.calls, 16u);
}

Test(edgc_window, setting_stays_in_bounds_and_moves_only_at_window_boundaries)
{
    uint64_t rng = 99;
    for (int trial = 0; trial < 400; trial++) {
        int is_rank = trial % 2;
        uint64_t window = 1 + test_rng_next(&rng) % 40;
        double alpha = 0.01 + 0.99 * test_rng_unit(&rng);
        double base = is_rank ? (double)(1 + test_rng_next(&rng) % 1024)
                              : exp(log(1e-4) * test_rng_unit(&rng));
        double min = 0, max = 0;
        if (test_rng_next(&rng) % 2) { /* explicit bounds around base */
            min = base * (0.1 + 0.9 * test_rng_unit(&rng));
            max = base * (1.0 + 9.0 * test_rng_unit(&rng));
            if (is_rank) {
                min = ceil(min);
                max = floor(max) < min ? min : floor(max);
            }
        }
        gc_edgc_params p = edgc_params(alpha, 0.1, window, min, max);
        gc_edgc_state s;
        gc_edgc_init(&s, &p, base, is_rank);
        double lo = s.lo, hi = s.hi;
        cr_assert_leq(lo, hi);
        if (is_rank) cr_assert(lo >= 1 && hi <= 1024);
        else cr_assert(lo > 0 && hi <= 1);

        double prev = s.setting, h = 3.0 + 4.0 * test_rng_unit(&rng);
        for (uint64_t call = 1; call <= 20 * window; call++) {
            h += 0.8 * (test_rng_unit(&rng) - 0.5); /* random walk of entropies */
            int has = gc_edgc_sample_now(&s, &p) && test_rng_next(&rng) % 5 != 0;
            double v = gc_edgc_step(&s, &p, has, h);
            cr_assert(v >= lo && v <= hi, "trial %d call %llu: %g not in [%g, %g]", trial,
                      (unsigned long long)call, v, lo, hi);
            if (is_rank) cr_assert_eq(v, floor(v));
            if (call % window != 0) cr_assert_eq(v, prev, "moved inside a window");
            prev = v;
        }
    }
}
