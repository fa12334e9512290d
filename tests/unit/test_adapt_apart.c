/* test_adapt_apart.c — the history kept apart (gc_adapt.h, last section):
 * a state initialised by gc_adapt_state_init_apart whose caller keeps the
 * method's n floats of history and runs the element passes itself (as a
 * GPU does) adapts a buffer bit for bit as the in-block state does.
 *
 * The element passes the caller runs are written out here from the header
 * (GCT's formula, the order of gc_var_moves' sums, the gather of the EDGC
 * sample), so a change to either side shows up as a difference. Pure C,
 * no MPI: the "all-reduced" sums are made up. */
#include "test_util.h"

#include <float.h>

#include "adapt_test_util.h"

/* ---- helpers ------------------------------------------------------------ */

static gc_params params_of(double ratio, unsigned rank)
{
    gc_params p;
    memset(&p, 0, sizeof p);
    gc_params_default(&p);
    p.ratio = ratio;
    p.rank = rank;
    return p;
}

/* An in-block state: header and history in one block. free() it. */
static void *state_in_block(const gc_adapt_config *cfg, const gc_codec *c, const gc_params *p,
                            size_t n)
{
    size_t bytes = gc_adapt_state_bytes(cfg, c, n);
    void *st = aligned_alloc(64, (bytes + 63) / 64 * 64);
    cr_assert_not_null(st);
    memset(st, 0, bytes);
    gc_adapt_state_init(st, cfg, c, p, n);
    return st;
}

/* An apart state: the header alone, allocated to its exact size so that a
 * write of history into it would run past the block (valgrind, ASan). */
static void *state_apart(const gc_adapt_config *cfg, const gc_codec *c, const gc_params *p,
                         size_t n)
{
    size_t bytes = gc_adapt_state_bytes(cfg, c, 0);
    void *st = malloc(bytes);
    cr_assert_not_null(st);
    memset(st, 0, bytes);
    gc_adapt_state_init_apart(st, cfg, c, p, n);
    return st;
}

/* The in-block history: adapt.c's block layout puts the n floats right
 * after the header, whose size is the block of a buffer of 0 floats. */
static const float *history_in_block(const void *st, const gc_adapt_config *cfg,
                                     const gc_codec *c)
{
    return (const float *)(const void *)((const char *)st + gc_adapt_state_bytes(cfg, c, 0));
}

static void assert_reports_equal(const gc_adapt_report *a, const gc_adapt_report *b, int call)
{
    cr_assert_eq(memcmp(a, b, sizeof *a), 0,
                 "call %d: reports differ: ratio %.17g/%.17g rank %.17g/%.17g bits %.17g/%.17g "
                 "lambda %.17g/%.17g entropy %.17g/%.17g variance %.17g/%.17g",
                 call, a->ratio, b->ratio, a->rank, b->rank, a->bits, b->bits, a->lambda,
                 b->lambda, a->entropy, b->entropy, a->variance, b->variance);
}

static void assert_params_equal(const gc_params *a, const gc_params *b, int call)
{
    cr_assert_eq(memcmp(&a->ratio, &b->ratio, sizeof a->ratio), 0,
                 "call %d: ratio %.17g vs %.17g", call, a->ratio, b->ratio);
    cr_assert_eq(a->rank, b->rank, "call %d: rank %u vs %u", call, a->rank, b->rank);
    cr_assert_eq(a->bits, b->bits, "call %d: bits", call);
    cr_assert_eq(a->bucket, b->bucket, "call %d: bucket", call);
    cr_assert_eq(a->eg_n, b->eg_n, "call %d: eg_n", call);
    cr_assert_eq(a->eg_k, b->eg_k, "call %d: eg_k", call);
}

static void fill_normal(float *x, size_t n, double sigma, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) {
        double u1 = test_rng_unit(s), u2 = test_rng_unit(s);
        x[i] = (float)(sigma * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
}

/* ======================================================================= */
/* GCT                                                                     */
/* ======================================================================= */

/* gct.c's element formula, from the header: den = prev + eps with the sign
 * of prev (prev >= 0: +eps), lr * h = 1 - g / den, out = g + c * [sign(g)]
 * * lr*h, non-finite results fall back to g. */
static float gct_element_ref(float g, float prev, float c, float eps, int eq9)
{
    float den = prev + (prev >= 0.0f ? eps : -eps);
    float h_lr = 1.0f - g / den;
    float sign = (float)(g > 0.0f) - (float)(g < 0.0f);
    float out = g + c * (eq9 ? sign : 1.0f) * h_lr;
    if (!(fabsf(out) <= FLT_MAX)) out = g;
    return out;
}

static void gct_apply_ref(const gc_gct_apply *a, const float *g, const float *prev, float *out,
                          size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a->with_prev ? gct_element_ref(g[i], prev[i], a->c, a->eps, a->eq9) : g[i];
}

/* A gradient with the edge cases of the formula: zeros of both signs. */
static void gct_gradient(float *g, size_t n, uint64_t *s)
{
    fill_normal(g, n, 0.5, s);
    for (size_t i = 0; i < n; i += 89) g[i] = 0.0f;
    for (size_t i = 44; i < n; i += 89) g[i] = -0.0f;
}

/* The made-up all-reduced sum of `ranks` shaped gradients, with the edge
 * cases of the history: exact zeros (den = +eps), values that make prev
 * -eps, a NaN and an infinity (the fallback to g). */
static void gct_sum(const float *shaped, float *sum, size_t n, int ranks, float eps, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        sum[i] = (float)ranks * shaped[i] + (float)(0.1 * (2.0 * test_rng_unit(s) - 1.0));
    for (size_t i = 3; i < n; i += 97) sum[i] = 0.0f;
    for (size_t i = 5; i < n; i += 101) sum[i] = -eps * (float)ranks;
    for (size_t i = 7; i < n; i += 1009) sum[i] = NAN;
    for (size_t i = 11; i < n; i += 1013) sum[i] = INFINITY;
}

/* K calls through both forms, in pmpi/adapt_call.c's order: report_of,
 * decide, shape, the collective, observe. */
static void gct_both_forms(int alg2)
{
    enum { K = 6, RANKS = 3 };
    const size_t n = 10007;
    gc_adapt_config cfg = config(GC_ADAPT_GCT);
    cfg.gct.lambda = 0.1;
    cfg.gct.lr = 0.5;
    cfg.gct.eps = 1e-3;
    cfg.gct.decay = 0.5;
    cfg.gct.decay_every = 2;
    cfg.gct.alg2 = alg2;
    const gc_codec *c = codec("eg");
    cr_assert(gc_adapt_supports(&cfg, c));
    const gc_params p = params_of(0.01, 4);

    void *in = state_in_block(&cfg, c, &p, n);
    void *ap = state_apart(&cfg, c, &p, n);
    cr_assert_eq(gc_adapt_history_floats(&cfg, n), n);
    float *history = test_alloc(gc_adapt_history_floats(&cfg, n));
    float *g = test_alloc(n), *out_in = test_alloc(n), *out_ap = test_alloc(n);
    float *sum = test_alloc(n);
    uint64_t rng = 0x6c7 + (uint64_t)alg2;
    int shaped_calls = 0;
    double lambda_first = NAN, lambda_last = NAN;

    for (int call = 0; call < K; call++) {
        gc_adapt_report rb_in, rb_ap;
        gc_adapt_report_of(in, &cfg, &rb_in);
        gc_adapt_report_of(ap, &cfg, &rb_ap);
        assert_reports_equal(&rb_in, &rb_ap, call);

        gc_params q_in = p, q_ap = p;
        gc_adapt_decide(in, &cfg, NULL, RANKS, &q_in);
        gc_adapt_decide(ap, &cfg, NULL, RANKS, &q_ap);
        assert_params_equal(&q_in, &q_ap, call);

        gct_gradient(g, n, &rng);
        cr_assert_eq(gc_adapt_shape(in, &cfg, g, out_in, n), 1);
        gc_gct_apply a;
        memset(&a, 0x5a, sizeof a);
        cr_assert_eq(gc_adapt_shape_step(ap, &cfg, n, &a), 1);
        cr_assert_eq(a.with_prev, call > 0, "call %d: the history is used from the second", call);
        cr_assert_eq(a.eq9, !alg2);
        gct_apply_ref(&a, g, history, out_ap, n);
        cr_assert_eq(memcmp(out_in, out_ap, n * sizeof(float)), 0,
                     "call %d: shaped gradients differ", call);
        if (memcmp(out_in, g, n * sizeof(float)) != 0) shaped_calls++;

        /* The collective, then prev = sum / ranks kept by the caller. */
        gct_sum(out_in, sum, n, RANKS, (float)cfg.gct.eps, &rng);
        for (size_t i = 0; i < n; i++) history[i] = sum[i] / (float)RANKS;
        gc_adapt_observe(in, &cfg, sum, n, RANKS, 1000.0 + call, 1e-3 * call);
        gc_adapt_observe_apart(ap, &cfg, n, 0.0, 0.0, RANKS, 1000.0 + call, 1e-3 * call);

        cr_assert_eq(memcmp(history_in_block(in, &cfg, c), history, n * sizeof(float)), 0,
                     "call %d: histories differ", call);
        gc_adapt_report r_in, r_ap;
        gc_adapt_report_of(in, &cfg, &r_in);
        gc_adapt_report_of(ap, &cfg, &r_ap);
        assert_reports_equal(&r_in, &r_ap, call);
        /* c is lambda / lr rounded to float, with the lambda the call used. */
        cr_assert_eq(a.c, (float)(r_ap.lambda / cfg.gct.lr), "call %d: c %.9g for lambda %.17g",
                     call, (double)a.c, r_ap.lambda);
        cr_assert_eq(a.eps, (float)cfg.gct.eps);
        if (call == 0) lambda_first = r_ap.lambda;
        lambda_last = r_ap.lambda;
    }
    cr_assert_eq(shaped_calls, K - 1, "every call but the first is shaped");
    cr_assert_eq(lambda_first, cfg.gct.lambda);
    cr_assert_lt(lambda_last, lambda_first, "lambda decayed within the run");
    free(in);
    free(ap);
    free(history);
    free(g);
    free(out_in);
    free(out_ap);
    free(sum);
}

Test(adapt_apart, gct_shapes_bit_for_bit_as_in_block_with_eq9)
{
    gct_both_forms(0);
}

Test(adapt_apart, gct_shapes_bit_for_bit_as_in_block_with_alg2)
{
    gct_both_forms(1);
}

/* ======================================================================= */
/* variance                                                                */
/* ======================================================================= */

/* Made-up bucket statistics fed to the width policy, the same in both
 * forms, so that topkq's mean width gets reported. */
static void feed_policy(const gc_width_policy *pol, int call)
{
    for (size_t b = 0; b < 5; b++) {
        gc_bucket_stats bs = {.index = b, .len = 64, .l2sq = 10.0 + (double)b + call,
                              .maxabs = 1.0 + 0.5 * (double)b, .mean = 0.1, .var = 0.2};
        unsigned bits = pol->choose(pol->ctx, &bs);
        pol->observe(pol->ctx, &bs, bits, bs.l2sq * ldexp(1.0, -2 * (int)bits));
    }
}

static void variance_both_forms(const char *codec_name)
{
    enum { K = 10, RANKS = 4 };
    const size_t n = 10007;
    gc_adapt_config cfg = config(GC_ADAPT_VARIANCE);
    cfg.var.memory = 2;
    const gc_codec *c = codec(codec_name);
    cr_assert(gc_adapt_supports(&cfg, c));
    const gc_params p = params_of(0.01, 4);

    void *in = state_in_block(&cfg, c, &p, n);
    void *ap = state_apart(&cfg, c, &p, n);
    float *history = test_alloc(gc_adapt_history_floats(&cfg, n));
    float *base = test_alloc(n), *noise = test_alloc(n), *sum = test_alloc(n);
    const int len = gc_adapt_agree_len(&cfg, c);
    cr_assert_eq(len, GC_ADAPT_AGREE_LEN);
    uint64_t rng = 0x7a1;
    fill_normal(base, n, 1.0, &rng);
    int64_t first_proposal = 0;
    int proposals_moved = 0;

    for (int call = 0; call < K; call++) {
        gc_adapt_report rb_in, rb_ap;
        gc_adapt_report_of(in, &cfg, &rb_in);
        gc_adapt_report_of(ap, &cfg, &rb_ap);
        assert_reports_equal(&rb_in, &rb_ap, call);

        int64_t l_in[GC_ADAPT_AGREE_LEN], l_ap[GC_ADAPT_AGREE_LEN];
        gc_adapt_local(in, &cfg, base, n, (uint64_t)call, l_in);
        cr_assert_eq(gc_adapt_sample_len(ap, &cfg, n), 0, "variance samples nothing");
        gc_adapt_local_sample(ap, &cfg, NULL, 0, l_ap);
        cr_assert_eq(memcmp(l_in, l_ap, sizeof l_in), 0, "call %d: proposals %lld vs %lld",
                     call, (long long)l_in[0], (long long)l_ap[0]);
        if (call == 0) first_proposal = l_in[0];
        if (l_in[0] != first_proposal) proposals_moved = 1;

        int64_t agreed[GC_ADAPT_AGREE_LEN];
        for (int k = 0; k < len; k++) agreed[k] = RANKS * l_in[k];
        gc_params q_in = p, q_ap = p;
        gc_adapt_decide(in, &cfg, agreed, RANKS, &q_in);
        gc_adapt_decide(ap, &cfg, agreed, RANKS, &q_ap);
        assert_params_equal(&q_in, &q_ap, call);

        float scratch = 1.0f;
        cr_assert_eq(gc_adapt_shape(in, &cfg, &scratch, &scratch, 1), 0);
        gc_gct_apply a;
        cr_assert_eq(gc_adapt_shape_step(ap, &cfg, n, &a), 0);
        const gc_width_policy *pi = gc_adapt_width_policy(in, &cfg);
        const gc_width_policy *pa = gc_adapt_width_policy(ap, &cfg);
        cr_assert_eq(pi == NULL, pa == NULL);
        if (pi) {
            feed_policy(pi, call);
            feed_policy(pa, call);
        }

        /* The sum moves by an amount that changes from call to call. */
        fill_normal(noise, n, 1.0, &rng);
        const double amp = (call % 3 == 0) ? 0.8 : 0.05 * (1 + call % 2);
        for (size_t i = 0; i < n; i++)
            sum[i] = (float)RANKS *
                     (base[i] * (1.0f + 0.01f * (float)call) + (float)amp * noise[i]);

        gc_adapt_observe(in, &cfg, sum, n, RANKS, 500.0 + call, 2e-3);
        double moved = NAN, norm = NAN;
        gc_var_moves(sum, n, RANKS, history, &moved, &norm);
        gc_adapt_observe_apart(ap, &cfg, n, moved, norm, RANKS, 500.0 + call, 2e-3);

        cr_assert_eq(memcmp(history_in_block(in, &cfg, c), history, n * sizeof(float)), 0,
                     "call %d: histories differ", call);
        gc_adapt_report r_in, r_ap;
        gc_adapt_report_of(in, &cfg, &r_in);
        gc_adapt_report_of(ap, &cfg, &r_ap);
        assert_reports_equal(&r_in, &r_ap, call);
        if (pi) cr_assert(isfinite(r_ap.bits), "call %d: topkq reports a mean width", call);
        if (call > 1) cr_assert(isfinite(r_ap.variance), "call %d: fast / slow", call);
    }
    cr_assert(proposals_moved, "the ratio adapted during the run");
    free(in);
    free(ap);
    free(history);
    free(base);
    free(noise);
    free(sum);
}

Test(adapt_apart, variance_topk_decides_bit_for_bit_as_in_block)
{
    variance_both_forms("topk");
}

Test(adapt_apart, variance_topkq_decides_bit_for_bit_as_in_block)
{
    variance_both_forms("topkq");
}

/* gc_var_moves' order, written from the header: per chunk of GC_VAR_CHUNK
 * elements GC_VAR_LANES lane sums in double (lane l: chunk elements l,
 * l + LANES, ...), halved pairwise (lane l += lane l + half, half = LANES/2
 * .. 1), the chunks' lane 0 added in chunk order. */
static void var_moves_ref(const float *sum, size_t n, int ranks, const float *prev,
                          double *moved, double *norm)
{
    double mv = 0.0, nm = 0.0;
    for (size_t c0 = 0; c0 < n; c0 += GC_VAR_CHUNK) {
        double lm[GC_VAR_LANES], ln[GC_VAR_LANES];
        for (size_t l = 0; l < GC_VAR_LANES; l++) {
            lm[l] = 0.0;
            ln[l] = 0.0;
            for (size_t i = c0 + l; i < n && i < c0 + GC_VAR_CHUNK; i += GC_VAR_LANES) {
                double d = (double)(sum[i] / (float)ranks) - (double)prev[i];
                lm[l] += d * d;
                ln[l] += (double)prev[i] * (double)prev[i];
            }
        }
        for (size_t half = GC_VAR_LANES / 2; half >= 1; half /= 2)
            for (size_t l = 0; l < half; l++) {
                lm[l] += lm[l + half];
                ln[l] += ln[l + half];
            }
        mv += lm[0];
        nm += ln[0];
    }
    *moved = mv;
    *norm = nm;
}

/* Values over many binades, so that the order of the sums shows in the
 * last bits. */
static float wide_value(uint64_t *s)
{
    double u = test_rng_unit(s);
    int e = (int)(test_rng_next(s) % 41) - 20;
    return (float)ldexp(2.0 * u - 1.0, e);
}

Test(adapt_apart, var_moves_sums_in_the_documented_order)
{
    const size_t sizes[] = {0, 1, 31, 32, 33, 2047, 2048, 2049, 100003};
    const int ranks = 3;
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        const size_t n = sizes[t];
        float *sum = test_alloc(n), *prev = test_alloc(n), *prev0 = test_alloc(n);
        uint64_t rng = 0x3e5 + n;
        for (size_t i = 0; i < n; i++) {
            sum[i] = wide_value(&rng);
            prev[i] = prev0[i] = wide_value(&rng);
        }
        double want_mv, want_nm;
        var_moves_ref(sum, n, ranks, prev0, &want_mv, &want_nm);

        double mv = NAN, nm = NAN;
        gc_var_moves(sum, n, ranks, prev, &mv, &nm);
        cr_assert_eq(memcmp(&mv, &want_mv, sizeof mv), 0, "n=%zu: moved %a, want %a", n, mv,
                     want_mv);
        cr_assert_eq(memcmp(&nm, &want_nm, sizeof nm), 0, "n=%zu: norm %a, want %a", n, nm,
                     want_nm);

        /* The sums are the sums, to well within double's rounding. */
        long double ref_mv = 0.0L, ref_nm = 0.0L;
        for (size_t i = 0; i < n; i++) {
            long double d = (long double)(sum[i] / (float)ranks) - (long double)prev0[i];
            ref_mv += d * d;
            ref_nm += (long double)prev0[i] * (long double)prev0[i];
        }
        cr_assert(fabsl((long double)mv - ref_mv) <= 1e-12L * fabsl(ref_mv),
                  "n=%zu: moved %.17g, naive %.17Lg", n, mv, ref_mv);
        cr_assert(fabsl((long double)nm - ref_nm) <= 1e-12L * fabsl(ref_nm),
                  "n=%zu: norm %.17g, naive %.17Lg", n, nm, ref_nm);
        if (n == 0) cr_assert(mv == 0.0 && nm == 0.0);

        /* prev becomes this call's mean, by float division. */
        for (size_t i = 0; i < n; i++) {
            const float m = sum[i] / (float)ranks;
            cr_assert_eq(memcmp(&prev[i], &m, sizeof m), 0, "n=%zu: prev[%zu] = %a, want %a", n,
                         i, (double)prev[i], (double)m);
        }
        free(sum);
        free(prev);
        free(prev0);
    }
}

/* ======================================================================= */
/* EDGC                                                                    */
/* ======================================================================= */

Test(adapt_apart, edgc_gathered_sample_has_the_entropy_of_the_draw)
{
    const size_t sizes[] = {1, 7, 1000, 12345};
    const double betas[] = {0.01, 0.3, 1.0, 2.0};
    const uint64_t seeds[] = {0, 1, 0xdeadbeefull, UINT64_MAX};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        const size_t n = sizes[t];
        float *x = test_alloc(n), *sample = test_alloc(n);
        uint64_t rng = 0xed6 + n;
        fill_normal(x, n, 1.0, &rng);
        for (size_t i = 0; i < n; i += 13) x[i] *= 20.0f; /* a few outliers */
        for (size_t b = 0; b < sizeof betas / sizeof betas[0]; b++) {
            const double beta = betas[b];
            const size_t m = gc_edgc_sample_len(n, beta);
            cr_assert(m >= 1 && m <= n, "n=%zu beta=%g: m=%zu", n, beta, m);
            if (beta >= 1.0) cr_assert_eq(m, n, "beta %g takes the whole buffer", beta);
            for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
                const uint64_t seed = seeds[k];
                for (size_t j = 0; j < m; j++) {
                    const size_t idx = gc_edgc_sample_index(n, beta, seed, j);
                    cr_assert_lt(idx, n, "n=%zu beta=%g j=%zu: index %zu", n, beta, j, idx);
                    if (j > 0)
                        cr_assert_gt(idx, gc_edgc_sample_index(n, beta, seed, j - 1),
                                     "n=%zu beta=%g seed=%llu: indices ascend at j=%zu", n, beta,
                                     (unsigned long long)seed, j);
                    sample[j] = x[idx];
                }
                const double whole = gc_edgc_entropy(sample, m, 1.0, 0);
                const double drawn = gc_edgc_entropy(x, n, beta, seed);
                cr_assert_eq(memcmp(&whole, &drawn, sizeof whole), 0,
                             "n=%zu beta=%g seed=%llu: gathered %.17g, drawn %.17g", n, beta,
                             (unsigned long long)seed, whole, drawn);
            }
        }
        free(x);
        free(sample);
    }
}

/* A gradient whose spread changes with the call, so that the entropy and
 * then the setting move. */
static void edgc_gradient(float *g, size_t n, int call, uint64_t *s)
{
    fill_normal(g, n, 1.0, s);
    const double dense = (call / 3) % 2 ? 0.05 : 0.9;
    for (size_t i = 0; i < n; i++)
        if (test_rng_unit(s) > dense) g[i] *= 1e-3f;
}

static void edgc_both_forms(const char *codec_name, double ratio, unsigned rank)
{
    enum { K = 24 };
    const size_t n = 12345;
    gc_adapt_config cfg = config(GC_ADAPT_EDGC);
    cfg.edgc.window = 3;
    cfg.edgc.alpha = 0.5;
    cfg.edgc.beta = 0.05;
    const gc_codec *c = codec(codec_name);
    cr_assert(gc_adapt_supports(&cfg, c));
    const gc_params p = params_of(ratio, rank);

    cr_assert_eq(gc_adapt_history_floats(&cfg, n), 0, "edgc keeps no history");
    void *in = state_in_block(&cfg, c, &p, n);
    void *ap = state_apart(&cfg, c, &p, n);
    float *g = test_alloc(n), *sample = test_alloc(n);
    uint64_t rng = 0xed7;
    int sampled = 0, skipped = 0, moved = 0;
    int64_t first = 0;

    for (int call = 0; call < K; call++) {
        gc_adapt_report rb_in, rb_ap;
        gc_adapt_report_of(in, &cfg, &rb_in);
        gc_adapt_report_of(ap, &cfg, &rb_ap);
        assert_reports_equal(&rb_in, &rb_ap, call);

        edgc_gradient(g, n, call, &rng);
        const uint64_t call_seed = 0x1234567ull * (uint64_t)(call + 1);
        int64_t l_in[GC_ADAPT_AGREE_LEN], l_ap[GC_ADAPT_AGREE_LEN];
        gc_adapt_local(in, &cfg, g, n, call_seed, l_in);
        const size_t m = gc_adapt_sample_len(ap, &cfg, n);
        for (size_t j = 0; j < m; j++)
            sample[j] = g[gc_edgc_sample_index(n, cfg.edgc.beta, call_seed, j)];
        gc_adapt_local_sample(ap, &cfg, sample, m, l_ap);
        cr_assert_eq(memcmp(l_in, l_ap, sizeof l_in), 0,
                     "call %d: local [%lld %lld %lld %lld] vs [%lld %lld %lld %lld]", call,
                     (long long)l_in[0], (long long)l_in[1], (long long)l_in[2],
                     (long long)l_in[3], (long long)l_ap[0], (long long)l_ap[1],
                     (long long)l_ap[2], (long long)l_ap[3]);
        cr_assert_eq(m > 0, l_in[2] != 0, "call %d: a sample exactly when the call samples", call);
        if (l_in[2]) sampled++;
        else skipped++;
        if (call == 0) first = l_in[0];
        if (l_in[0] != first) moved = 1;

        /* One rank: the sum is the local vector. */
        gc_params q_in = p, q_ap = p;
        gc_adapt_decide(in, &cfg, l_in, 1, &q_in);
        gc_adapt_decide(ap, &cfg, l_ap, 1, &q_ap);
        assert_params_equal(&q_in, &q_ap, call);

        gc_adapt_observe(in, &cfg, g, n, 1, 800.0, 1e-3);
        gc_adapt_observe_apart(ap, &cfg, n, 0.0, 0.0, 1, 800.0, 1e-3);
        gc_adapt_report r_in, r_ap;
        gc_adapt_report_of(in, &cfg, &r_in);
        gc_adapt_report_of(ap, &cfg, &r_ap);
        assert_reports_equal(&r_in, &r_ap, call);
    }
    cr_assert_gt(sampled, 0, "some calls sampled");
    cr_assert_gt(skipped, 0, "some calls did not");
    cr_assert(moved, "the setting moved with the entropy");
    free(in);
    free(ap);
    free(g);
    free(sample);
}

Test(adapt_apart, edgc_topk_state_agrees_with_in_block)
{
    edgc_both_forms("topk", 0.01, 4);
}

Test(adapt_apart, edgc_powersgd_state_agrees_with_in_block)
{
    edgc_both_forms("powersgd", 0.01, 4);
}

/* ======================================================================= */
/* the guards                                                              */
/* ======================================================================= */

Test(adapt_apart, in_block_calls_leave_an_apart_state_alone)
{
    const size_t n = 64;
    const gc_params p = params_of(0.01, 4);
    float g[64], out[64], sentinel[64], sum[64], history[64] = {0};
    for (size_t i = 0; i < n; i++) {
        g[i] = 0.25f * (float)i - 3.0f;
        sentinel[i] = out[i] = -7.5f;
        sum[i] = 2.0f * g[i] + 1.0f;
    }

    /* GCT: one full apart call, then the in-block steps must do nothing. */
    gc_adapt_config gct = config(GC_ADAPT_GCT);
    gct.gct.lambda = 0.2;
    gct.gct.lr = 0.5;
    gct.gct.decay = 0.5;
    gct.gct.decay_every = 1;
    void *st = state_apart(&gct, codec("eg"), &p, n);
    cr_assert_eq(gc_adapt_shape(st, &gct, g, out, n), 0, "gc_adapt_shape on an apart state");
    cr_assert_eq(memcmp(out, sentinel, sizeof out), 0, "out left alone");
    gc_gct_apply a;
    cr_assert_eq(gc_adapt_shape_step(st, &gct, n, &a), 1);
    cr_assert_eq(a.with_prev, 0);
    cr_assert_eq(a.c, (float)(gct.gct.lambda / gct.gct.lr), "the refused shape did not count");
    for (size_t i = 0; i < n; i++) history[i] = sum[i] / 2.0f;
    gc_adapt_observe_apart(st, &gct, n, 0.0, 0.0, 2, 100.0, 1e-3);
    gc_adapt_report before, after;
    gc_adapt_report_of(st, &gct, &before);
    gc_adapt_observe(st, &gct, sum, n, 2, 100.0, 1e-3);
    gc_adapt_report_of(st, &gct, &after);
    assert_reports_equal(&before, &after, 1);
    cr_assert_eq(gc_adapt_shape(st, &gct, g, out, n), 0);
    cr_assert_eq(memcmp(out, sentinel, sizeof out), 0);
    cr_assert_eq(gc_adapt_shape_step(st, &gct, n, &a), 1);
    cr_assert_eq(a.with_prev, 1, "one observation before");
    cr_assert_eq(a.c, (float)(gct.gct.lambda * gct.gct.decay / gct.gct.lr),
                 "second shaped call: one decay, none from the refused calls");
    free(st);

    /* Variance: gc_adapt_observe neither updates the ratio nor the report. */
    gc_adapt_config var = config(GC_ADAPT_VARIANCE);
    var.var.memory = 1;
    st = state_apart(&var, codec("topk"), &p, n);
    double moved, norm;
    for (int call = 0; call < 3; call++) {
        for (size_t i = 0; i < n; i++) sum[i] = (float)(call + 1) * g[i] + (float)(i % 3);
        gc_var_moves(sum, n, 2, history, &moved, &norm);
        gc_adapt_observe_apart(st, &var, n, moved, norm, 2, 100.0, 1e-3);
    }
    int64_t l0[GC_ADAPT_AGREE_LEN], l1[GC_ADAPT_AGREE_LEN];
    gc_adapt_local(st, &var, g, n, 0, l0);
    gc_adapt_report_of(st, &var, &before);
    for (size_t i = 0; i < n; i++) sum[i] = 100.0f * g[i];
    gc_adapt_observe(st, &var, sum, n, 2, 100.0, 1e-3);
    gc_adapt_report_of(st, &var, &after);
    gc_adapt_local(st, &var, g, n, 0, l1);
    assert_reports_equal(&before, &after, 3);
    cr_assert_eq(memcmp(l0, l1, sizeof l0), 0, "the proposal did not move");
    cr_assert_eq(gc_adapt_shape_step(st, &var, n, &a), 0, "not gct: no step");
    free(st);
}

Test(adapt_apart, apart_calls_leave_an_in_block_state_alone)
{
    const size_t n = 64;
    const gc_params p = params_of(0.01, 4);
    float g[64], out[64], want[64];
    for (size_t i = 0; i < n; i++) g[i] = 0.5f * (float)i - 9.0f;

    gc_adapt_config gct = config(GC_ADAPT_GCT);
    gct.gct.lambda = 0.2;
    gct.gct.lr = 0.5;
    void *st = state_in_block(&gct, codec("eg"), &p, n);
    gc_gct_apply a;
    cr_assert_eq(gc_adapt_shape_step(st, &gct, n, &a), 0, "shape_step on an in-block state");
    /* The refused step did not count: the first shaped call has no prev. */
    cr_assert_eq(gc_adapt_shape(st, &gct, g, out, n), 1);
    cr_assert_eq(memcmp(out, g, sizeof out), 0);
    free(st);

    /* Variance: gc_adapt_observe_apart does not move an in-block state. */
    gc_adapt_config var = config(GC_ADAPT_VARIANCE);
    var.var.memory = 1;
    st = state_in_block(&var, codec("topk"), &p, n);
    void *ref = state_in_block(&var, codec("topk"), &p, n);
    for (int call = 0; call < 3; call++) {
        for (size_t i = 0; i < n; i++) want[i] = (float)(call + 1) * g[i] + (float)(i % 3);
        gc_adapt_observe(st, &var, want, n, 2, 100.0, 1e-3);
        gc_adapt_observe(ref, &var, want, n, 2, 100.0, 1e-3);
        gc_adapt_observe_apart(st, &var, n, 1e6, 1.0, 2, 100.0, 1e-3);
    }
    gc_adapt_report rs, rr;
    gc_adapt_report_of(st, &var, &rs);
    gc_adapt_report_of(ref, &var, &rr);
    assert_reports_equal(&rs, &rr, 3);
    int64_t ls[GC_ADAPT_AGREE_LEN], lr[GC_ADAPT_AGREE_LEN];
    gc_adapt_local(st, &var, g, n, 0, ls);
    gc_adapt_local(ref, &var, g, n, 0, lr);
    cr_assert_eq(memcmp(ls, lr, sizeof ls), 0);
    free(st);
    free(ref);
}

Test(adapt_apart, only_history_methods_keep_floats_apart)
{
    gc_adapt_config none = config(GC_ADAPT_NONE), gct = config(GC_ADAPT_GCT),
                    edgc = config(GC_ADAPT_EDGC), var = config(GC_ADAPT_VARIANCE);
    cr_assert_eq(gc_adapt_history_floats(&none, 1000), 0);
    cr_assert_eq(gc_adapt_history_floats(&edgc, 1000), 0);
    cr_assert_eq(gc_adapt_history_floats(&gct, 1000), 1000);
    cr_assert_eq(gc_adapt_history_floats(&var, 1000), 1000);
    /* The in-block block holds them after the header. */
    cr_assert_geq(gc_adapt_state_bytes(&gct, codec("eg"), 1000),
                  gc_adapt_state_bytes(&gct, codec("eg"), 0) + 1000 * sizeof(float));
}
