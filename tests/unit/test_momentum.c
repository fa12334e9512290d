/* test_momentum.c — transparent momentum correction (GCMPI_MOMENTUM): an
 * application whose optimizer applies momentum beta to what the library
 * returns (gc_momentum_unfold of the compressed sum) ends each step with the
 * momentum that DGC's momentum correction (application momentum 0) applies:
 * S_t, the sum over ranks of what was sent. */
#include "test_util.h"

#include <float.h>

enum { RANKS = 4, N = 96 };

/* What every simulated rank keeps. */
typedef struct rank_state {
    float u[N], r[N];
} rank_state;

/* Gradients: multiples of 1/8 in [-4, 4] (dyadic=1), else Laplace. */
static void gradient(float *g, int t, int rank, int dyadic)
{
    uint64_t s = 1000u * (uint64_t)t + (uint64_t)rank + 1;
    if (!dyadic) {
        fill_laplace(g, N, 0.01, s);
        return;
    }
    for (size_t i = 0; i < N; i++) g[i] = (float)((int)(test_rng_next(&s) % 65) - 32) / 8.0f;
}

/* One step of DGC's momentum correction on every rank: S = sum over ranks
 * of what was sent. masked: gc_encode_momentum (GCMPI_EF_MOMENTUM: u
 * cleared where sent, sparse codecs); else what GCMPI_MOMENTUM does, every
 * codec: u = beta*u + g compressed with error feedback. The unfolding is the
 * same for both: it holds for any sequence S. */
static int masked;

static void dgc_step(const gc_codec *c, const gc_params *p, rank_state *ranks, int t,
                     int dyadic, float beta, float *S, gc_workspace *ws)
{
    const size_t cap = gc_bound(c, N, p);
    void *buf = malloc(cap);
    cr_assert_not_null(buf);
    memset(S, 0, N * sizeof(float));
    for (int k = 0; k < RANKS; k++) {
        float g[N];
        gradient(g, t, k, dyadic);
        size_t len;
        if (masked && (gc_codec_flags(c) & GC_SPARSE)) {
            len = gc_encode_momentum(c, g, ranks[k].u, ranks[k].r, N, beta, p, 7, buf, cap, ws);
        } else {
            gc_momentum_accumulate(ranks[k].u, g, N, beta);
            len = gc_encode(c, ranks[k].u, ranks[k].r, N, p, 7, buf, cap, ws);
        }
        cr_assert(!gc_is_error(len), "%s: %s", gc_codec_name(c), gc_error_name(len));
        size_t d = gc_decode_add(buf, len, S, N, ws);
        cr_assert(!gc_is_error(d));
    }
    free(buf);
}

/* Runs both optimizers for T steps: the reference (application momentum 0:
 * m = S) and the unchanged one (momentum beta on the library's output).
 * Returns the largest |m_app - S| relative to the bound of one rounding. */
static double run(const char *codec, double ratio, float beta, int dyadic, int T,
                  int expect_bit_exact)
{
    const gc_codec *c = gc_codec_by_name(codec);
    cr_assert_not_null(c);
    gc_params p;
    gc_params_default(&p);
    p.ratio = ratio;
    p.bucket = 32;
    gc_workspace *ws = gc_workspace_create();
    static rank_state ranks[RANKS];
    memset(ranks, 0, sizeof ranks);
    float mirror[N] = {0}, m_app[N] = {0}, x_ref[N] = {0}, x_app[N] = {0};
    const float lr = 0.05f;
    double worst = 0.0;
    for (int t = 0; t < T; t++) {
        float S[N], out[N];
        dgc_step(c, &p, ranks, t, dyadic, beta, S, ws);
        memcpy(out, S, sizeof S);
        cr_assert_eq(gc_momentum_unfold(out, mirror, N, beta), 1);
        for (size_t i = 0; i < N; i++) {
            /* the application: m = beta*m + g_hat; x -= lr*m */
            m_app[i] = beta * m_app[i] + out[i];
            x_app[i] -= lr * m_app[i];
            /* the reference: momentum 0, m = S */
            x_ref[i] -= lr * S[i];
            /* the library's mirror is the application's momentum, exactly */
            cr_assert_eq(memcmp(&mirror[i], &m_app[i], sizeof(float)), 0,
                         "step %d element %zu: mirror %.9g, application %.9g", t, i,
                         (double)mirror[i], (double)m_app[i]);
            if (expect_bit_exact) {
                cr_assert_eq(memcmp(&m_app[i], &S[i], sizeof(float)), 0,
                             "step %d element %zu: %.9g != %.9g", t, i, (double)m_app[i],
                             (double)S[i]);
            } else {
                /* g_hat = fl(S - b), m = fl(b + g_hat), b = beta*m_prev:
                 * |m - S| <= u(2|S| + |b|) + O(u^2), u = 2^-24. */
                const double b = fabs((double)m_app[i] - (double)out[i]); /* = beta*m_prev */
                const double bound = 0x1p-24 * (2.0 * fabs((double)S[i]) + 2.0 * b) + FLT_MIN;
                const double err = fabs((double)m_app[i] - (double)S[i]);
                if (err / bound > worst) worst = err / bound;
            }
        }
    }
    if (expect_bit_exact)
        for (size_t i = 0; i < N; i++)
            cr_assert_eq(memcmp(&x_app[i], &x_ref[i], sizeof(float)), 0);
    gc_workspace_free(ws);
    return worst;
}

Test(momentum, unchanged_optimizer_applies_dgc_update_bit_for_bit_on_exact_arithmetic)
{
    /* beta = 1/2 and gradients in steps of 1/8: every product and sum is
     * exact, so the application's momentum equals S_t bit for bit. */
    for (masked = 0; masked < 2; masked++) {
        run("topk", 0.25, 0.5f, 1, 10, 1);
        run("randk", 0.25, 0.5f, 1, 10, 1);
    }
    masked = 0;
}

Test(momentum, unchanged_optimizer_stays_within_one_rounding_of_dgc_update)
{
    /* beta = 0.9 rounds: the mirror keeps the application's value, so each
     * step's error is one rounding and does not accumulate over 200 steps. */
    static const char *const codecs[] = {"topk", "dgc", "randk", "topkq", "sign",
                                         "onebit", "eg", "int8", "fp16"};
    for (masked = 0; masked < 2; masked++)
        for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
            double worst = run(codecs[k], 0.1, 0.9f, 0, 200, 0);
            cr_assert_leq(worst, 1.0, "%s: error %.3g times the one-rounding bound", codecs[k],
                          worst);
        }
    masked = 0;
}

Test(momentum, non_finite_sum_is_returned_unchanged_and_leaves_momentum_alone)
{
    float s[4] = {1.0f, INFINITY, 2.0f, NAN}, m[4] = {0.5f, 0.25f, -1.0f, 3.0f};
    const float s0[4] = {1.0f, INFINITY, 2.0f, NAN}, m0[4] = {0.5f, 0.25f, -1.0f, 3.0f};
    cr_assert_eq(gc_momentum_unfold(s, m, 4, 0.9f), 0);
    cr_assert_eq(memcmp(m, m0, sizeof m), 0);
    cr_assert_eq(s[0], s0[0]);
    cr_assert(isinf(s[1]) && isnan(s[3]));
}

Test(momentum, first_step_returns_the_sum_itself)
{
    /* m starts at zero (and restarts there when the library's state for a
     * buffer was evicted): g_hat = S. */
    float s[3] = {1.5f, -2.0f, 0.1f}, m[3] = {0};
    const float s0[3] = {1.5f, -2.0f, 0.1f};
    cr_assert_eq(gc_momentum_unfold(s, m, 3, 0.9f), 1);
    cr_assert_eq(memcmp(s, s0, sizeof s), 0);
    cr_assert_eq(memcmp(m, s0, sizeof m), 0);
}

Test(momentum, accumulate_is_beta_u_plus_g)
{
    float u[3] = {1.0f, -2.0f, 0.0f};
    const float g[3] = {0.5f, 0.5f, 4.0f};
    gc_momentum_accumulate(u, g, 3, 0.5f);
    cr_assert_eq(u[0], 1.0f);
    cr_assert_eq(u[1], -0.5f);
    cr_assert_eq(u[2], 4.0f);
}
