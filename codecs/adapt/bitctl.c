/* bitctl.c — the per-bucket bit width of topkq, learnt online (gc_adapt.h,
 * "per-bucket bit width controller"): a contextual bandit whose arms are
 * the candidate widths and whose reward is meeting the error target with
 * the fewest bits. It replaces the paper's (shared/papers/001) learned
 * neural scheduler by something that needs no training loop: it measures
 * the error each width gives and takes the cheapest that is good enough.
 *
 * Context. A bucket's bin is that of its crest factor
 *     c = maxabs^2 * len / l2sq      (1 <= c <= len: 1 when all magnitudes
 *                                     are equal, len for a single spike)
 * on a half-octave log2 scale, bin j = floor(log2(c^2)) clamped to
 * 0..GC_BITCTL_BINS-1: edges at c = 2^(j/2), i.e.
 *     bin  0      1      2      3      4      5      6      7
 *     c   [1,    [1.41, [2,    [2.83, [4,    [5.66, [8,    [11.3, inf)
 * Half octaves because top-k buckets crowd at small c (the top 1% of a
 * Gaussian has c ~ 2..3, a whole Gaussian bucket of 512 about 10).
 *
 * Estimate. Per (bin, width) a running mean of the relative error energy
 * e = err_sq / l2sq that topkq reported: an exponential average with weight
 * max(1/seen, 0.1), the plain mean over the first ten observations (learns
 * fast), then a tracker of the last ~10. Untried arms use a prior from
 * uniform quantisation of topkq's quantiser (codec_topkq.c): with M steps
 * over the magnitude range [lo, hi], step D = (hi - lo) / M, a value
 * spread evenly within a step is off by U(-D/2, D/2), mean square D^2/12;
 * relative to the mean square l2sq / len,
 *     e = len (hi - lo)^2 / (12 M^2 l2sq) <= c / (12 M^2)   (0 <= lo),
 * with M = 2^(b-1) - 1 for b >= 2. Width 1 sends one magnitude (the mean)
 * whose error is the magnitudes' variance, (hi - lo)^2 / 12 when they are
 * spread evenly: the same formula with M = 1. The prior is pessimistic for
 * top-k buckets (lo is far from 0), which exploration corrects.
 *
 * Choice. The smallest width whose estimate is <= target, else the
 * largest. Every EXPLORE_EVERY-th decision in a bin tries one smaller
 * width instead, cycling from the next smaller down to the smallest, so a
 * cheaper width that became good (or whose prior was pessimistic) is found
 * even below a width that is too coarse: on top-k buckets 1 bit (sign and
 * mean magnitude) can beat 2 bits. At most 1 in 16 buckets pays for it. */
#include "gc_adapt.h"

#include <math.h>
#include <string.h>

#define EXPLORE_EVERY 16u
#define EMA_FLOOR 0.1
#define MAX_WIDTH 8u

void gc_bitctl_init(gc_bitctl *c, const gc_var_params *p)
{
    memset(c, 0, sizeof *c);
    c->p = *p;
    /* config/ validates the list (ascending, 1..8, 1..8 entries); keep
     * only its valid ascending entries anyway, so choose() always returns
     * a candidate width: the widest, 8, when none is valid. */
    unsigned kept = 0, n = p->n_widths < GC_VAR_MAX_WIDTHS ? p->n_widths : GC_VAR_MAX_WIDTHS;
    for (unsigned i = 0; i < n; i++) {
        unsigned w = p->widths[i];
        if (w >= 1 && w <= MAX_WIDTH && (kept == 0 || w > c->p.widths[kept - 1]))
            c->p.widths[kept++] = w;
    }
    if (kept == 0) c->p.widths[kept++] = MAX_WIDTH;
    for (unsigned i = kept; i < GC_VAR_MAX_WIDTHS; i++) c->p.widths[i] = 0;
    c->p.n_widths = kept;
}

static double crest_factor(const gc_bucket_stats *s)
{
    if (!(s->l2sq > 0)) return 1.0;  /* all zero: nothing peaks */
    return s->maxabs * s->maxabs * (double)s->len / s->l2sq;
}

static unsigned crest_bin(double crest)
{
    double c2 = crest * crest;
    if (!(c2 >= 2.0)) return 0;  /* also NaN */
    if (c2 >= (double)(1u << (GC_BITCTL_BINS - 1))) return GC_BITCTL_BINS - 1;
    int e;
    frexp(c2, &e);  /* c2 = m 2^e, m in [0.5, 1): floor(log2 c2) = e - 1 */
    return (unsigned)(e - 1);
}

/* Prior relative error of width b for a bucket of crest factor c. */
static double prior_error(unsigned b, double crest)
{
    double m = b >= 2 ? (double)((1u << (b - 1)) - 1u) : 1.0;
    return crest / (12.0 * m * m);
}

static double estimate(const gc_bitctl *c, unsigned bin, unsigned arm, double crest)
{
    return c->seen[bin][arm] ? c->err[bin][arm] : prior_error(c->p.widths[arm], crest);
}

static unsigned bitctl_choose(void *ctx, const gc_bucket_stats *s)
{
    gc_bitctl *c = ctx;
    double crest = crest_factor(s);
    unsigned bin = crest_bin(crest);
    uint64_t decision = ++c->decisions[bin];
    unsigned arm = c->p.n_widths - 1;
    for (unsigned i = 0; i < c->p.n_widths; i++) {
        if (estimate(c, bin, i, crest) <= c->p.target) {
            arm = i;
            break;
        }
    }
    if (decision % EXPLORE_EVERY == 0 && arm > 0)
        arm = arm - 1 - (unsigned)((decision / EXPLORE_EVERY - 1) % arm);
    c->chosen_bits += c->p.widths[arm];
    c->chosen_buckets++;
    return c->p.widths[arm];
}

static void bitctl_observe(void *ctx, const gc_bucket_stats *s, unsigned bits, double err_sq)
{
    gc_bitctl *c = ctx;
    unsigned arm = 0;
    while (arm < c->p.n_widths && c->p.widths[arm] != bits) arm++;
    if (arm == c->p.n_widths) return;  /* not a candidate: nothing to learn */
    double e = s->l2sq > 0 ? err_sq / s->l2sq : 0.0;
    if (!isfinite(e)) return;  /* a non-finite bucket says nothing about widths */
    unsigned bin = crest_bin(crest_factor(s));
    uint32_t *seen = &c->seen[bin][arm];
    if (*seen < UINT32_MAX) (*seen)++;
    double w = 1.0 / (double)*seen;
    if (w < EMA_FLOOR) w = EMA_FLOOR;
    c->err[bin][arm] += w * (e - c->err[bin][arm]);
}

gc_width_policy gc_bitctl_policy(gc_bitctl *c)
{
    return (gc_width_policy){.ctx = c, .choose = bitctl_choose, .observe = bitctl_observe};
}
