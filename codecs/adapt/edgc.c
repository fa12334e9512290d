/* edgc.c — EDGC (arXiv 2511.10333): entropy-driven ratio / rank.
 *
 * Three parts, as in the paper (docs/adapt-edgc.md has the derivation):
 *   sampler  entropy of the quantised values of a beta fraction of the
 *            buffer, on the calls gc_edgc_sample_now picks (alpha of them)
 *   model    setting = base * 2^(h - h_ref), clamped to [lo, hi]; from the
 *            Compression Quantification Model held at a fixed error
 *   window   the setting moves only at window boundaries, from the window's
 *            mean of the (rank-agreed) entropies
 * Everything here is a pure function of its arguments: pmpi/ makes the
 * ranks agree on the entropy, so every rank takes the same steps. */
#include "gc_adapt.h"

#include <math.h>
#include <stdint.h>

/* ---- the quantiser --------------------------------------------------------
 * 256 uniform levels of step mean|x| / 16, centred on 0 (range +-8 mean|x|,
 * +-6.4 sigma for Gaussian data, +-8 b for Laplace(b)); values beyond fall
 * into the edge levels. The step comes from the mean magnitude, which a
 * sample estimates to about 1/sqrt(m) relative error (the maximum would
 * grow with m and make sampled and full estimates incomparable), and makes
 * the entropy independent of the gradient's scale: it measures how the
 * mass is spread relative to the elements that carry the magnitude. */
enum { EDGC_LEVELS = 256, EDGC_STEPS_PER_MEAN = 16 };

/* Setting = base * 2^(EDGC_MODEL_EXPONENT * (h - h_ref)); see the model. */
#define EDGC_MODEL_EXPONENT 1.0

#define EDGC_RANK_MIN 1.0
#define EDGC_RANK_MAX 1024.0

/* splitmix64 finaliser: a counter-based generator, so index j of a sample
 * is a function of (seed, j) alone and both passes draw the same set. */
static uint64_t edgc_mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The sample: m strata of (almost) equal length covering [0, n), one index
 * drawn in each (stratified, so no duplicates and the whole buffer is
 * covered even when it is ordered, e.g. a fusion buffer of many layers). */
typedef struct edgc_sample {
    const float *x;
    size_t n, m;          /* m == n: every element, in order */
    size_t q, r;          /* stratum j has length q + (j < r) */
    uint64_t seed;
} edgc_sample;

static edgc_sample edgc_sample_of(const float *x, size_t n, double beta, uint64_t seed)
{
    edgc_sample s = {x, n, n, 1, 0, seed};
    if (n == 0 || !(beta < 1.0)) return s;          /* beta >= 1 or NaN: all */
    double want = ceil(beta * (double)n);
    size_t m = want < 1.0 ? 1 : (size_t)want;       /* beta <= 0: one element */
    if (m >= n) return s;
    s.m = m;
    s.q = n / m;
    s.r = n % m;
    return s;
}

static size_t edgc_index_at(const edgc_sample *s, size_t j)
{
    if (s->m == s->n) return j;
    size_t start = j * s->q + (j < s->r ? j : s->r);
    size_t len = s->q + (j < s->r);
    return start + (size_t)(edgc_mix(s->seed ^ edgc_mix(j)) % len);
}

static float edgc_sample_at(const edgc_sample *s, size_t j)
{
    return s->x[edgc_index_at(s, j)];
}

static double edgc_entropy_of(const edgc_sample *s)
{
    /* Pass 1: the scale (mean magnitude of the finite sampled values). */
    double sum_abs = 0.0;
    size_t finite = 0;
    for (size_t j = 0; j < s->m; j++) {
        float v = edgc_sample_at(s, j);
        if (!isfinite(v)) continue;
        sum_abs += fabs((double)v);
        finite++;
    }
    if (finite == 0 || !(sum_abs > 0.0)) return 0.0; /* empty or all zero: one level */

    /* Pass 2: histogram on the quantiser of that scale. */
    double inv_step = (double)EDGC_STEPS_PER_MEAN * (double)finite / sum_abs;
    uint64_t count[EDGC_LEVELS] = {0};
    for (size_t j = 0; j < s->m; j++) {
        float v = edgc_sample_at(s, j);
        if (!isfinite(v)) continue;
        double level = floor((double)v * inv_step) + EDGC_LEVELS / 2;
        if (level < 0.0) level = 0.0;
        if (level > EDGC_LEVELS - 1) level = EDGC_LEVELS - 1;
        count[(size_t)level]++;
    }

    /* Shannon entropy in bits: log2(N) - (1/N) sum c log2 c. */
    double total = (double)finite, acc = 0.0;
    for (size_t b = 0; b < EDGC_LEVELS; b++)
        if (count[b] > 0) acc += (double)count[b] * log2((double)count[b]);
    double h = log2(total) - acc / total;
    return h > 0.0 ? h : 0.0; /* rounding can leave -1e-16 for one level */
}

double gc_edgc_entropy(const float *x, size_t n, double beta, uint64_t seed)
{
    edgc_sample s = edgc_sample_of(x, n, beta, seed);
    return edgc_entropy_of(&s);
}

size_t gc_edgc_sample_len(size_t n, double beta)
{
    return edgc_sample_of(NULL, n, beta, 0).m;
}

size_t gc_edgc_sample_index(size_t n, double beta, uint64_t seed, size_t j)
{
    edgc_sample s = edgc_sample_of(NULL, n, beta, seed);
    return edgc_index_at(&s, j);
}

double gc_edgc_entropy_full(const float *x, size_t n)
{
    edgc_sample s = edgc_sample_of(x, n, 1.0, 0);
    return edgc_entropy_of(&s);
}

/* ---- the setting ------------------------------------------------------- */

static double edgc_clamp(const gc_edgc_state *s, double v)
{
    if (s->is_rank) v = nearbyint(v);
    if (!(v >= s->lo)) v = s->lo; /* also NaN */
    if (v > s->hi) v = s->hi;
    return v;
}

void gc_edgc_init(gc_edgc_state *s, const gc_edgc_params *p, double base, int is_rank)
{
    /* The codec's range: ratios in (0, 1], ranks integral in [1, 1024]. */
    double range_hi = is_rank ? EDGC_RANK_MAX : 1.0;
    double floor_lo = is_rank ? EDGC_RANK_MIN : 0x1p-30; /* smallest ratio we hand out */
    if (!(base > 0.0)) base = is_rank ? EDGC_RANK_MIN : 1.0; /* config checks; stay safe */
    if (base < floor_lo) base = floor_lo;
    if (base > range_hi) base = range_hi;

    double lo = p->min > 0.0 ? p->min : base / 4.0; /* 0 = auto */
    double hi = p->max > 0.0 ? p->max : base * 4.0;
    if (is_rank) {
        lo = ceil(lo);
        hi = floor(hi);
    }
    if (lo < floor_lo) lo = floor_lo;
    if (lo > range_hi) lo = range_hi;
    if (hi > range_hi) hi = range_hi;
    if (hi < lo) hi = lo;

    *s = (gc_edgc_state){0};
    s->base = base;
    s->lo = lo;
    s->hi = hi;
    s->is_rank = is_rank ? 1 : 0;
    s->last_entropy = NAN; /* no window measured yet */
    s->setting = edgc_clamp(s, base);
}

/* Calls at positions 0, 1/alpha, 2/alpha, ... of a window, rounded up: the
 * position p is sampled when (p-1)*alpha < k <= p*alpha for an integer k.
 * The small slack keeps p*alpha from landing just below an integer in
 * floating point (alpha = 0.1, p = 30). */
int gc_edgc_sample_now(const gc_edgc_state *s, const gc_edgc_params *p)
{
    uint64_t window = p->window ? p->window : 1;
    uint64_t pos = s->calls % window;
    if (pos == 0) return 1;
    double alpha = p->alpha;
    if (!(alpha > 0.0)) return 0;
    if (alpha >= 1.0) return 1;
    const double slack = 1e-9;
    return floor((double)pos * alpha + slack) > floor((double)(pos - 1) * alpha + slack);
}

double gc_edgc_step(gc_edgc_state *s, const gc_edgc_params *p, int has_entropy, double entropy)
{
    uint64_t window = p->window ? p->window : 1;
    if (has_entropy && isfinite(entropy)) {
        s->h_sum += entropy;
        s->h_count++;
    }
    s->calls++;
    if (s->calls % window != 0) return s->setting;

    if (s->h_count > 0) { /* a window without samples keeps the setting */
        double h = s->h_sum / (double)s->h_count;
        s->last_entropy = h;
        if (!s->have_ref) { /* the first measured window anchors the model */
            s->h_ref = h;
            s->have_ref = 1;
        } else {
            s->setting = gc_edgc_model(s, h);
        }
    }
    s->h_sum = 0.0;
    s->h_count = 0;
    return s->setting;
}

/* CQM at a fixed compression error (docs/adapt-edgc.md): the error a
 * positively homogeneous compressor leaves scales with the Gaussian-
 * equivalent variance 2^(2h) / (2 pi e); with a tail that falls like
 * setting^-2 the setting that keeps it fixed is base * 2^(h - h_ref). */
double gc_edgc_model(const gc_edgc_state *s, double h)
{
    if (!s->have_ref || !isfinite(h)) return edgc_clamp(s, s->base);
    return edgc_clamp(s, s->base * exp2(EDGC_MODEL_EXPONENT * (h - s->h_ref)));
}
