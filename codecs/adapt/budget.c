/* budget.c — GCMPI_RATIO=auto (beyond the papers): choose the ratio of the
 * next call from the link as this buffer's own traffic shows it.
 *
 * Model: comm_s = a + b * bytes, fitted by weighted least squares over all
 * calls with exponential forgetting (weight 0.9^age), so the fit follows a
 * link that changes. The next ratio is the one whose predicted exchange
 * takes budget_s: a + b * bytes_per_ratio * r = budget_s.
 *
 * Degenerate fits. Once the ratio settles, every call sends the same number
 * of bytes and the data no longer tell a from b. The fit is used only when
 * the bytes of the remembered calls spread by at least 10 % (coefficient of
 * variation) and it gives b > 0 and a >= 0: with +-20 % timing noise a
 * smaller spread yields slopes near 0 that throw the ratio around. Otherwise
 * (and on the first call) the model is the line through the weighted means
 * (mean bytes, mean seconds) with the last usable intercept a (0 if none, or
 * if it is not below the mean time): on the first call that is the
 * single-point model a = 0, b = comm_s / bytes. Both models predict the
 * measured time where the calls were made, so switching between them does
 * not move a settled ratio.
 *
 * Stability: the ratio changes by at most a factor of 2 per call, so one
 * outlier time (a stalled rank, a page fault) cannot throw it to a bound;
 * the bounds [min, max] win over that limit. */
#include "gc_adapt.h"

#include <math.h>

#define GC_BUDGET_FORGET 0.9     /* weight of the previous sums per call */
#define GC_BUDGET_MAX_STEP 2.0   /* largest factor between two ratios    */
#define GC_BUDGET_MIN_CV2 1e-2   /* (10 % spread of bytes)^2 for a fit   */

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

void gc_budget_init(gc_budget_state *s, const gc_auto_params *p, double start_ratio)
{
    s->sxx = s->sx = s->s1 = s->sxy = s->sy = 0;
    s->calls = 0;
    s->a = s->b = 0;
    s->ratio = clamp(start_ratio, p->min, p->max);
}

/* Least squares on the forgetting sums; 0 when the fit is not usable. */
static int budget_fit(const gc_budget_state *s, double *a, double *b)
{
    if (s->calls < 2) return 0;
    double mx = s->sx / s->s1, my = s->sy / s->s1;
    double var = s->sxx / s->s1 - mx * mx;
    if (!(var >= GC_BUDGET_MIN_CV2 * mx * mx)) return 0;
    double slope = (s->sxy / s->s1 - mx * my) / var;
    double intercept = my - slope * mx;
    if (!(slope > 0) || !isfinite(slope) || !(intercept >= 0)) return 0;
    *b = slope;
    *a = intercept;
    return 1;
}

/* The line through the weighted means, keeping the intercept if it fits. */
static void budget_centroid(gc_budget_state *s)
{
    double mx = s->sx / s->s1, my = s->sy / s->s1;
    if (!(s->a >= 0 && s->a < my)) s->a = 0;
    s->b = (my - s->a) / mx;
}

double gc_budget_observe(gc_budget_state *s, const gc_auto_params *p, double bytes_sent,
                         double comm_s, double bytes_per_ratio)
{
    /* A call that cannot be used (nothing sent, a clock glitch) leaves the
     * fit and the ratio as they were. */
    if (!(bytes_sent > 0) || !(comm_s >= 0) || !isfinite(bytes_sent) || !isfinite(comm_s) ||
        !(bytes_per_ratio > 0) || !isfinite(bytes_per_ratio))
        return s->ratio;

    const double f = GC_BUDGET_FORGET;
    s->s1 = f * s->s1 + 1;
    s->sx = f * s->sx + bytes_sent;
    s->sy = f * s->sy + comm_s;
    s->sxx = f * s->sxx + bytes_sent * bytes_sent;
    s->sxy = f * s->sxy + bytes_sent * comm_s;
    s->calls++;

    if (!budget_fit(s, &s->a, &s->b)) budget_centroid(s);

    double target;
    if (p->budget_s <= s->a)
        target = p->min;                 /* even a tiny message misses the budget */
    else if (!(s->b > 0))
        target = p->max;                 /* free link (comm_s = 0): send the most */
    else
        target = (p->budget_s - s->a) / (s->b * bytes_per_ratio);
    if (isnan(target)) target = s->ratio;  /* a NaN budget: keep the ratio */

    target = clamp(target, s->ratio / GC_BUDGET_MAX_STEP, s->ratio * GC_BUDGET_MAX_STEP);
    s->ratio = clamp(target, p->min, p->max);
    return s->ratio;
}
