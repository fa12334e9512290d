/* variance.c — variance-adaptive sparsity ratio (paper 001, "Adaptive
 * Error-Feedback Sparsification"). The paper's k_t formula was lost in the
 * text we have; only "alpha is a tunable scaling factor" survived. Our
 * reading (gc_adapt.h): the relative movement of the all-reduced mean
 *   nu_t = ||m_t - m_{t-1}||^2 / ||m_{t-1}||^2
 * is tracked by a fast and a slow running mean, and
 *   ratio = clamp(base * (fast / slow)^alpha, lo, hi):
 * keep fewer elements while the gradient moves less than usual, more while
 * it moves more. Every input is the all-reduced sum, and every sum below is
 * in double in one fixed order (gc_var_moves), so all ranks compute the
 * same ratio bit for bit, on the host or on a GPU. */
#include "gc_adapt.h"

#include <math.h>

#define GC_VAR_LO_FLOOR 1e-6   /* smallest ratio ever chosen */
#define GC_VAR_SLOW_SPAN 10.0  /* slow memory = 10 x fast memory */

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

void gc_var_init(gc_var_state *s, const gc_var_params *p, double base_ratio)
{
    s->base = base_ratio;
    s->lo = p->min > 0 ? p->min : base_ratio / 4;
    s->hi = p->max > 0 ? p->max : fmin(1.0, base_ratio * 4);
    if (s->lo < GC_VAR_LO_FLOOR) s->lo = GC_VAR_LO_FLOOR;
    if (s->hi < s->lo) s->hi = s->lo;      /* a tiny base: keep the range non-empty */
    s->ratio = clamp(base_ratio, s->lo, s->hi);
    s->fast = s->slow = 0;
    s->calls = 0;
    s->last_nu = NAN;                      /* NaN: no nu observed yet */
}

void gc_var_moves(const float *sum, size_t n, int ranks, float *prev_mean, double *moved,
                  double *norm)
{
    /* m_t = sum / ranks by division, the same mean gc_gct_remember forms.
     * The order of the double sums is gc_adapt.h's (GC_VAR_CHUNK): lane
     * sums a GPU warp forms in the same order, vectorised here. */
    float r = (float)(ranks > 0 ? ranks : 1);
    double mv = 0, nm = 0;
    for (size_t base = 0; base < n; base += GC_VAR_CHUNK) {
        const size_t len = n - base < GC_VAR_CHUNK ? n - base : GC_VAR_CHUNK;
        double lm[GC_VAR_LANES] = {0}, ln[GC_VAR_LANES] = {0};
        for (size_t k = 0; k < len; k += GC_VAR_LANES) {
            const size_t lanes = len - k < GC_VAR_LANES ? len - k : GC_VAR_LANES;
            for (size_t l = 0; l < lanes; l++) {
                const size_t i = base + k + l;
                float m = sum[i] / r;
                double d = (double)m - (double)prev_mean[i];
                lm[l] += d * d;
                ln[l] += (double)prev_mean[i] * (double)prev_mean[i];
                prev_mean[i] = m;
            }
        }
        for (size_t half = GC_VAR_LANES / 2; half > 0; half /= 2)
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

double gc_var_update(gc_var_state *s, const gc_var_params *p, double moved, double norm)
{
    int first = s->calls == 0;   /* prev_mean held nothing yet */
    s->calls++;
    /* A zero previous mean (or overflowed sums) gives no nu: keep the ratio. */
    if (first || !(norm > 0) || !isfinite(moved) || !isfinite(norm)) return s->ratio;

    double nu = moved / norm;
    if (isnan(s->last_nu)) {
        s->fast = s->slow = nu;
    } else {
        double memory = p->memory ? (double)p->memory : 1.0;
        s->fast += (nu - s->fast) / memory;
        s->slow += (nu - s->slow) / (GC_VAR_SLOW_SPAN * memory);
    }
    s->last_nu = nu;
    double target = s->slow > 0 ? s->base * pow(s->fast / s->slow, p->alpha) : s->base;
    s->ratio = clamp(target, s->lo, s->hi);
    return s->ratio;
}

double gc_var_observe(gc_var_state *s, const gc_var_params *p, const float *sum, size_t n,
                      int ranks, float *prev_mean)
{
    double moved, norm;
    gc_var_moves(sum, n, ranks, prev_mean, &moved, &norm);
    return gc_var_update(s, p, moved, norm);
}
