/* gct.c — GCT gradient shaping (paper 000, §4.3-4.5, Eq. 8-10, Alg. 2).
 *
 * The transmitted gradient is g + lambda * [sign(g)] * h with the
 * quasi-Newton estimate of the second derivative
 *   h = (1/lr) * (1 - g / (prev + eps'))                    (Eq. 8)
 * where prev is the previous transmitted (equivalent) gradient. Shaping
 * pushes the gradient towards values Exp-Golomb codes in fewer bits.
 *
 * Arithmetic is float throughout (the loop is memory bound and runs over
 * up to ~10^8 elements; float keeps it 8 lanes wide under AVX2). lambda/lr
 * is formed once in double and rounded to float, so out = g + c * s * (1 -
 * g / den) with c = lambda / lr: the formula of the header up to float
 * rounding. The loop body has no branches (selects only) so it vectorises. */
#include "gc_adapt.h"

#include <float.h>
#include <math.h>
#include <string.h>

void gc_gct_init(gc_gct_state *s, const gc_gct_params *p)
{
    s->lambda = p->lambda;
    s->calls = 0;
}

/* One element of Eq. 9 (eq9 != 0) or of Algorithm 2 (eq9 == 0). */
static inline float gct_element(float g, float prev, float c, float eps, int eq9)
{
    /* eps takes the sign of prev: prev + eps alone is 0 at prev = -eps, and
     * the paper's clipping is meant to keep |denominator| >= eps. */
    float den = prev + (prev >= 0.0f ? eps : -eps);
    float h_lr = 1.0f - g / den;                           /* lr * h */
    float sign = (float)(g > 0.0f) - (float)(g < 0.0f);    /* sign(0) = 0 */
    float out = g + c * (eq9 ? sign : 1.0f) * h_lr;
    /* Non-finite (prev NaN/inf-ish, den 0 when eps underflows): send g. */
    return fabsf(out) <= FLT_MAX ? out : g;
}

/* Two loops per form so that each has restrict pointers the compiler can
 * vectorise without run-time alias checks: out may alias g (header). */
static void gct_in_place(float *restrict x, const float *restrict prev, size_t n, float c,
                         float eps, int eq9)
{
    if (eq9)
        for (size_t i = 0; i < n; i++) x[i] = gct_element(x[i], prev[i], c, eps, 1);
    else
        for (size_t i = 0; i < n; i++) x[i] = gct_element(x[i], prev[i], c, eps, 0);
}

static void gct_out_of_place(const float *restrict g, const float *restrict prev,
                             float *restrict out, size_t n, float c, float eps, int eq9)
{
    if (eq9)
        for (size_t i = 0; i < n; i++) out[i] = gct_element(g[i], prev[i], c, eps, 1);
    else
        for (size_t i = 0; i < n; i++) out[i] = gct_element(g[i], prev[i], c, eps, 0);
}

double gc_gct_step(gc_gct_state *s, const gc_gct_params *p, int have_prev, gc_gct_apply *out)
{
    double lambda = s->lambda;
    /* No previous gradient: h = 0 (the paper's 1_{t>=2}). */
    out->with_prev = s->calls > 0 && have_prev;
    out->c = (float)(lambda / p->lr);
    out->eps = (float)p->eps;
    out->eq9 = !p->alg2;
    s->calls++;
    /* Eq. 10 per decay_every calls; 0 (rejected by config/) counts as 1. */
    uint64_t every = p->decay_every ? p->decay_every : 1;
    if (s->calls % every == 0) s->lambda = lambda * p->decay;
    return lambda;
}

double gc_gct_shape(gc_gct_state *s, const gc_gct_params *p, const float *g,
                    const float *prev, float *out, size_t n)
{
    gc_gct_apply a;
    double lambda = gc_gct_step(s, p, prev != NULL, &a);
    if (!a.with_prev) {
        if (out != g && n > 0) memmove(out, g, n * sizeof *out);
    } else if (out == g) {
        gct_in_place(out, prev, n, a.c, a.eps, a.eq9);
    } else {
        gct_out_of_place(g, prev, out, n, a.c, a.eps, a.eq9);
    }
    return lambda;
}

void gc_gct_remember(const float *sum, size_t n, int ranks, float *prev)
{
    /* Division, not a multiply by 1/ranks (which rounds twice and is not
     * bit-identical to sum / ranks): the mean is the same correctly rounded
     * value on every rank and wherever else it is formed (variance.c). */
    float r = (float)(ranks > 0 ? ranks : 1);
    for (size_t i = 0; i < n; i++) prev[i] = sum[i] / r;
}
