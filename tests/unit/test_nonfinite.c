/* test_nonfinite.c — inf and NaN in the input behave like MPI_SUM, every
 * codec (gc_encode's GC_HF_NONFINITE payload): the decoded sum is
 * non-finite wherever an input was (spread to its block at most), the
 * residual keeps no non-finite value, and the next finite call is finite. */
#include "test_util.h"

#include <float.h>

enum { N = 3000 };

static gc_params params_for(const gc_codec *c)
{
    gc_params p;
    gc_params_default(&p);
    p.ratio = 0.05;
    (void)c;
    return p;
}

static size_t encode_to(const gc_codec *c, const gc_params *p, const float *g, float *r,
                        void **buf)
{
    const size_t cap = gc_bound(c, N, p);
    cr_assert(!gc_is_error(cap));
    *buf = malloc(cap);
    cr_assert_not_null(*buf);
    size_t len = gc_encode(c, g, r, N, p, 11, *buf, cap, NULL);
    cr_assert(!gc_is_error(len), "%s: %s", gc_codec_name(c), gc_error_name(len));
    return len;
}

/* One rank with a non-finite gradient, one without: their decoded sum. */
static void check_codec(const gc_codec *c, float bad, size_t at)
{
    const char *name = gc_codec_name(c);
    gc_params p = params_for(c);
    float *g = malloc(N * sizeof(float)), *r = malloc(N * sizeof(float));
    float *r0 = malloc(N * sizeof(float)), *sum = calloc(N, sizeof(float));
    cr_assert(g && r && r0 && sum);
    fill_laplace(g, N, 1.0, 3);
    fill_laplace(r, N, 0.1, 4);
    memcpy(r0, r, N * sizeof(float));
    g[at] = bad;

    void *pl;
    size_t len = encode_to(c, &p, g, r, &pl);
    gc_payload_info info;
    cr_assert(!gc_is_error(gc_payload_info_get(pl, len, &info)));
    cr_assert(info.flags & GC_HF_NONFINITE, "%s: payload not flagged", name);
    cr_assert_eq(memcmp(r, r0, N * sizeof(float)), 0, "%s: residual changed", name);
    cr_assert(!gc_is_error(gc_decode_add(pl, len, sum, N, NULL)));
    free(pl);

    /* a second rank, finite, with its residual */
    float *g2 = malloc(N * sizeof(float)), *r2 = calloc(N, sizeof(float));
    cr_assert(g2 && r2);
    fill_laplace(g2, N, 1.0, 5);
    len = encode_to(c, &p, g2, r2, &pl);
    cr_assert(!gc_is_error(gc_decode_add(pl, len, sum, N, NULL)));
    free(pl);
    cr_assert(gc_all_finite(r2, N), "%s: finite rank's residual not finite", name);

    /* MPI_SUM is non-finite at `at` (same class: NaN stays NaN, inf keeps
     * its sign); elements outside the block of 512 stay finite. */
    cr_assert(!isfinite(sum[at]), "%s: sum[%zu] = %g is finite", name, at, (double)sum[at]);
    if (isnan(bad)) cr_assert(isnan(sum[at]), "%s: NaN became %g", name, (double)sum[at]);
    else cr_assert_eq(sum[at], bad, "%s: %g became %g", name, (double)bad, (double)sum[at]);
    for (size_t i = 0; i < N; i++)
        if (i / 512 != at / 512)
            cr_assert(isfinite(sum[i]), "%s: sum[%zu] not finite, outside the block", name, i);

    /* the next finite call on the same residual is finite everywhere */
    memset(sum, 0, N * sizeof(float));
    fill_laplace(g, N, 1.0, 6);
    len = encode_to(c, &p, g, r, &pl);
    cr_assert(!gc_is_error(gc_decode_add(pl, len, sum, N, NULL)));
    free(pl);
    cr_assert(gc_all_finite(sum, N), "%s: next call not finite", name);
    cr_assert(gc_all_finite(r, N), "%s: residual not finite after the next call", name);
    free(g), free(r), free(r0), free(sum), free(g2), free(r2);
}

Test(nonfinite, every_codec_is_nonfinite_where_mpi_sum_is_and_keeps_no_state)
{
    const float bad[] = {INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < gc_codec_count(); i++)
        for (size_t k = 0; k < 3; k++) check_codec(gc_codec_at(i), bad[k], 1234);
}

Test(nonfinite, opposite_infinities_in_one_block_give_nan)
{
    const gc_codec *c = gc_codec_by_name("topk");
    gc_params p = params_for(c);
    float *g = calloc(N, sizeof(float)), *sum = calloc(N, sizeof(float));
    cr_assert(g && sum);
    g[10] = INFINITY;
    g[20] = -INFINITY;
    g[2999] = INFINITY;
    void *pl;
    size_t len = encode_to(c, &p, g, NULL, &pl);
    cr_assert(!gc_is_error(gc_decode_add(pl, len, sum, N, NULL)));
    cr_assert(isnan(sum[0]) && isnan(sum[511]));
    cr_assert_eq(sum[2999], INFINITY);
    cr_assert_eq(sum[600], 0.0f);
    free(pl), free(g), free(sum);
}

Test(nonfinite, one_element_fits_every_codec_bound)
{
    float g = NAN, out = 0.0f;
    for (size_t i = 0; i < gc_codec_count(); i++) {
        const gc_codec *c = gc_codec_at(i);
        gc_params p = params_for(c);
        const size_t cap = gc_bound(c, 1, &p);
        uint8_t buf[256];
        cr_assert_leq(cap, sizeof buf);
        size_t len = gc_encode(c, &g, NULL, 1, &p, 1, buf, cap, NULL);
        cr_assert(!gc_is_error(len), "%s: %s", gc_codec_name(c), gc_error_name(len));
        cr_assert(!gc_is_error(gc_decode_add(buf, len, &out, 1, NULL)));
        cr_assert(isnan(out));
    }
}

Test(nonfinite, momentum_correction_keeps_u_and_v_on_an_overflow_step)
{
    const gc_codec *c = gc_codec_by_name("topk");
    gc_params p = params_for(c);
    float *g = calloc(N, sizeof(float)), *u = malloc(N * sizeof(float));
    float *v = malloc(N * sizeof(float)), *u0 = malloc(N * sizeof(float));
    float *v0 = malloc(N * sizeof(float));
    cr_assert(g && u && v && u0 && v0);
    fill_laplace(u, N, 1.0, 8);
    fill_laplace(v, N, 1.0, 9);
    memcpy(u0, u, N * sizeof(float));
    memcpy(v0, v, N * sizeof(float));
    g[7] = NAN;
    const size_t cap = gc_bound(c, N, &p);
    void *buf = malloc(cap);
    size_t len = gc_encode_momentum(c, g, u, v, N, 0.9f, &p, 1, buf, cap, NULL);
    cr_assert(!gc_is_error(len));
    cr_assert_eq(memcmp(u, u0, N * sizeof(float)), 0);
    cr_assert_eq(memcmp(v, v0, N * sizeof(float)), 0);
    free(buf), free(g), free(u), free(v), free(u0), free(v0);
}

/* gc_encode_finite (for a caller that has checked g) writes gc_encode's
 * payload and residual byte for byte, every codec, with and without a
 * residual. */
Test(nonfinite, encode_finite_equals_encode_on_a_finite_input)
{
    float *g = malloc(N * sizeof(float)), *r1 = malloc(N * sizeof(float));
    float *r2 = malloc(N * sizeof(float));
    cr_assert(g && r1 && r2);
    fill_laplace(g, N, 1.0, 12);
    for (size_t i = 0; i < gc_codec_count(); i++)
        for (int ef = 0; ef < 2; ef++) {
            const gc_codec *c = gc_codec_at(i);
            const char *name = gc_codec_name(c);
            gc_params p = params_for(c);
            fill_laplace(r1, N, 0.1, 13);
            memcpy(r2, r1, N * sizeof(float));
            const size_t cap = gc_bound(c, N, &p);
            uint8_t *a = malloc(cap), *b = malloc(cap);
            cr_assert(a && b);
            const size_t la = gc_encode(c, g, ef ? r1 : NULL, N, &p, 7, a, cap, NULL);
            const size_t lb = gc_encode_finite(c, g, ef ? r2 : NULL, N, &p, 7, b, cap, NULL);
            cr_assert(!gc_is_error(la) && !gc_is_error(lb), "%s: %s, %s", name,
                      gc_error_name(la), gc_error_name(lb));
            cr_assert_eq(la, lb, "%s ef%d: %zu against %zu bytes", name, ef, la, lb);
            cr_assert_eq(memcmp(a, b, la), 0, "%s ef%d: payloads differ", name, ef);
            cr_assert_eq(memcmp(r1, r2, N * sizeof(float)), 0, "%s ef%d: residuals differ", name,
                         ef);
            free(a), free(b);
        }
    free(g), free(r1), free(r2);
}

/* gc_encode_momentum_finite (g already checked) gives gc_encode_momentum's
 * payload, u and v byte for byte: over several steps, and on a step where
 * a finite g and u overflow u (flagged payload, v kept), every sparse codec
 * with zero_sent. */
Test(nonfinite, encode_momentum_finite_equals_encode_momentum)
{
    const char *names[] = {"topk", "dgc", "randk"};
    float *g = malloc(N * sizeof(float));
    float *u[2], *v[2];
    for (int k = 0; k < 2; k++) {
        u[k] = calloc(N, sizeof(float));
        v[k] = calloc(N, sizeof(float));
        cr_assert(u[k] && v[k]);
    }
    cr_assert(g);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const gc_codec *c = gc_codec_by_name(names[i]);
        gc_params p = params_for(c);
        const size_t cap = gc_bound(c, N, &p);
        uint8_t *a = malloc(cap), *b = malloc(cap);
        cr_assert(a && b);
        for (int k = 0; k < 2; k++) {
            memset(u[k], 0, N * sizeof(float));
            memset(v[k], 0, N * sizeof(float));
        }
        for (int step = 0; step < 4; step++) {
            fill_laplace(g, N, 1.0, 20 + (uint64_t)step);
            /* Step 2: u near FLT_MAX, so 0.9 u + g overflows though g and
             * u are finite. */
            if (step == 2) u[0][5] = u[1][5] = g[5] = 0.9f * FLT_MAX;
            const size_t la = gc_encode_momentum(c, g, u[0], v[0], N, 0.9f, &p, 3, a, cap, NULL);
            const size_t lb =
                gc_encode_momentum_finite(c, g, u[1], v[1], N, 0.9f, &p, 3, b, cap, NULL);
            cr_assert(!gc_is_error(la) && !gc_is_error(lb), "%s step %d: %s, %s", names[i],
                      step, gc_error_name(la), gc_error_name(lb));
            cr_assert_eq(la, lb, "%s step %d: %zu against %zu bytes", names[i], step, la, lb);
            cr_assert_eq(memcmp(a, b, la), 0, "%s step %d: payloads differ", names[i], step);
            cr_assert_eq(memcmp(u[0], u[1], N * sizeof(float)), 0, "%s step %d: u differs",
                         names[i], step);
            cr_assert_eq(memcmp(v[0], v[1], N * sizeof(float)), 0, "%s step %d: v differs",
                         names[i], step);
            gc_payload_info info;
            cr_assert(!gc_is_error(gc_payload_info_get(b, lb, &info)));
            cr_assert_eq((info.flags & GC_HF_NONFINITE) != 0, step == 2,
                         "%s step %d: overflow flag %u", names[i], step, info.flags);
            if (step == 2) { /* what the overflow left in u is not carried on */
                u[0][5] = u[1][5] = 0.0f;
            }
        }
        free(a), free(b);
    }
    for (int k = 0; k < 2; k++) free(u[k]), free(v[k]);
    free(g);
}
