/* adapt.c — one buffer's adaptive state behind the interface pmpi/ uses
 * (gc_adapt.h, end of file): it routes each step of a call to the method
 * configured (gct.c, edgc.c, variance.c, budget.c, bitctl.c) and encodes
 * what must be agreed as exact fixed-point integers.
 *
 * Block layout: the header below, padded to 64 bytes, then n floats of
 * history when the method keeps one (gct: the previous transmitted
 * gradient; variance: the previous mean). The history is 64-byte aligned
 * when the block is.
 *
 * Agreement vector (int64, summed over ranks by MPI, so exact and the same
 * bits on every rank):
 *   [0] this rank's proposed setting * 2^32 (ratio, or powersgd rank)
 *   [1] sampled entropy * 2^32 (edgc; 0 when this rank did not sample)
 *   [2] 1 if this rank sampled
 *   [3] reserved, 0
 * The call's setting is the mean of the proposals: a function of the sums
 * only, so identical everywhere even if per-rank states diverged (a rank
 * whose state was evicted proposes the configured setting).
 *
 * GCMPI_RATIO=auto is the ratio's model when no method is selected
 * (config/ refuses it beside edgc or variance, which set the ratio
 * themselves). */
#include "gc_adapt.h"

#include <math.h>
#include <string.h>

#define FIX_ONE 4294967296.0 /* 2^32: fixed-point unit of the agreement vector */
#define HEADER_ALIGN 64

typedef struct adapt_state {
    gc_adapt_method method;
    int auto_on;            /* GCMPI_RATIO=auto                                 */
    unsigned codec_flags;
    int is_rank;            /* powersgd: the setting is a rank                  */
    int is_topkq;
    size_t n;
    int has_history;        /* n floats follow the header                       */
    int apart;              /* the caller keeps the history (device buffers)    */
    uint64_t observed;      /* calls observed: the history is valid when > 0    */
    double proposal;        /* what this rank proposes for its next call        */
    double used;            /* the agreed setting of the last call (NaN: none)  */
    double lambda_used;     /* gct: lambda of the last shaped call              */
    uint64_t bits_before, buckets_before; /* bitctl counters at decide          */
    gc_gct_state gct;
    gc_edgc_state edgc;
    gc_var_state var;
    gc_budget_state budget;
    gc_bitctl bitctl;
    gc_width_policy policy;
    gc_adapt_report last;
} adapt_state;

static size_t header_bytes(void)
{
    return (sizeof(adapt_state) + HEADER_ALIGN - 1) / HEADER_ALIGN * HEADER_ALIGN;
}

static int needs_history(const gc_adapt_config *cfg)
{
    return cfg->method == GC_ADAPT_GCT || cfg->method == GC_ADAPT_VARIANCE;
}

static float *history_of(adapt_state *s)
{
    return s->has_history ? (float *)(void *)((char *)s + header_bytes()) : NULL;
}

static int codec_named(const gc_codec *c, const char *name)
{
    return c && strcmp(gc_codec_name(c), name) == 0;
}

/* The methods that set the ratio or rank through the agreement. */
static int agreed_method(gc_adapt_method m)
{
    return m == GC_ADAPT_EDGC || m == GC_ADAPT_VARIANCE;
}

size_t gc_adapt_state_bytes(const gc_adapt_config *cfg, const gc_codec *c, size_t n)
{
    (void)c;
    size_t bytes = header_bytes();
    if (needs_history(cfg)) {
        if (n > (SIZE_MAX - bytes - HEADER_ALIGN) / sizeof(float)) return SIZE_MAX;
        bytes += (n * sizeof(float) + HEADER_ALIGN - 1) / HEADER_ALIGN * HEADER_ALIGN;
    }
    return bytes;
}

int gc_adapt_agree_len(const gc_adapt_config *cfg, const gc_codec *c)
{
    (void)c;
    /* gct needs none: shaping is local, eg payloads describe themselves and
     * eg's bound does not depend on lambda. */
    return agreed_method(cfg->method) || cfg->ratio_auto.on ? GC_ADAPT_AGREE_LEN : 0;
}

size_t gc_adapt_history_floats(const gc_adapt_config *cfg, size_t n)
{
    return needs_history(cfg) ? n : 0;
}

static void state_init(adapt_state *s, const gc_adapt_config *cfg, const gc_codec *c,
                       const gc_params *base, size_t n, int apart)
{
    memset(s, 0, sizeof *s);
    s->method = cfg->method;
    s->auto_on = cfg->ratio_auto.on && cfg->method == GC_ADAPT_NONE;
    s->codec_flags = c ? gc_codec_flags(c) : 0;
    s->is_rank = codec_named(c, "powersgd");
    s->is_topkq = codec_named(c, "topkq");
    s->n = n;
    s->has_history = needs_history(cfg) && !apart;
    s->apart = apart && needs_history(cfg);
    s->used = NAN;
    s->lambda_used = NAN;
    const double configured = s->is_rank ? (double)base->rank : base->ratio;
    s->proposal = configured;

    switch (s->method) {
    case GC_ADAPT_GCT: gc_gct_init(&s->gct, &cfg->gct); break;
    case GC_ADAPT_EDGC:
        gc_edgc_init(&s->edgc, &cfg->edgc, configured, s->is_rank);
        s->proposal = s->edgc.setting;
        break;
    case GC_ADAPT_VARIANCE:
        gc_var_init(&s->var, &cfg->var, base->ratio);
        s->proposal = s->var.ratio;
        if (s->is_topkq) {
            gc_bitctl_init(&s->bitctl, &cfg->var);
            s->policy = gc_bitctl_policy(&s->bitctl);
        }
        break;
    case GC_ADAPT_NONE: break;
    }
    if (s->auto_on) {
        gc_budget_init(&s->budget, &cfg->ratio_auto, base->ratio);
        s->proposal = s->budget.ratio;
    }
    if (s->has_history) memset(history_of(s), 0, n * sizeof(float));
}

void gc_adapt_state_init(void *st, const gc_adapt_config *cfg, const gc_codec *c,
                         const gc_params *base, size_t n)
{
    state_init(st, cfg, c, base, n, 0);
}

void gc_adapt_state_init_apart(void *st, const gc_adapt_config *cfg, const gc_codec *c,
                               const gc_params *base, size_t n)
{
    state_init(st, cfg, c, base, n, 1);
}

static int64_t fixed(double x)
{
    /* Settings are ratios in (0, 1] or ranks, entropies a few dozen bits:
     * far inside int64 at 2^32 per unit. */
    return isfinite(x) ? (int64_t)llround(x * FIX_ONE) : 0;
}

/* The proposal, and the entropy h when this call sampled (NaN: none). */
static void local_of(const adapt_state *s, double h, int64_t local[GC_ADAPT_AGREE_LEN])
{
    local[0] = fixed(s->proposal);
    local[1] = local[2] = local[3] = 0;
    if (isfinite(h)) {
        local[1] = fixed(h);
        local[2] = 1;
    }
}

static int samples_now(const adapt_state *s, const gc_adapt_config *cfg)
{
    return s->method == GC_ADAPT_EDGC && gc_edgc_sample_now(&s->edgc, &cfg->edgc);
}

void gc_adapt_local(void *st, const gc_adapt_config *cfg, const float *g, size_t n,
                    uint64_t call_seed, int64_t local[GC_ADAPT_AGREE_LEN])
{
    adapt_state *s = st;
    const double h = samples_now(s, cfg) ? gc_edgc_entropy(g, n, cfg->edgc.beta, call_seed) : NAN;
    local_of(s, h, local);
}

size_t gc_adapt_sample_len(const void *st, const gc_adapt_config *cfg, size_t n)
{
    const adapt_state *s = st;
    return samples_now(s, cfg) ? gc_edgc_sample_len(n, cfg->edgc.beta) : 0;
}

void gc_adapt_local_sample(void *st, const gc_adapt_config *cfg, const float *sample, size_t m,
                           int64_t local[GC_ADAPT_AGREE_LEN])
{
    adapt_state *s = st;
    /* The gathered sample, taken whole, is the in-block form's draw. */
    const double h = samples_now(s, cfg) && m > 0 ? gc_edgc_entropy(sample, m, 1.0, 0) : NAN;
    local_of(s, h, local);
}

/* The agreed setting: mean of the proposals, a ratio in (0, 1] or a rank
 * >= 1 (rounded to the nearest integer). */
static double agreed_setting(const int64_t *sum, int ranks, int is_rank)
{
    double mean = (double)sum[0] / (ranks > 0 ? ranks : 1) / FIX_ONE;
    if (is_rank) {
        mean = floor(mean + 0.5);
        return mean < 1.0 ? 1.0 : mean;
    }
    if (!(mean > 1.0 / FIX_ONE)) return 1.0 / FIX_ONE;
    return mean > 1.0 ? 1.0 : mean;
}

void gc_adapt_decide(void *st, const gc_adapt_config *cfg, const int64_t *sum, int ranks,
                     gc_params *params)
{
    adapt_state *s = st;
    if (s->method == GC_ADAPT_VARIANCE && s->is_topkq) {
        s->bits_before = s->bitctl.chosen_bits;
        s->buckets_before = s->bitctl.chosen_buckets;
    }
    if (!sum || gc_adapt_agree_len(cfg, NULL) == 0) return;
    const double setting = agreed_setting(sum, ranks, s->is_rank);
    if (s->is_rank) params->rank = (unsigned)setting;
    else params->ratio = setting;
    s->used = setting;
    if (s->method == GC_ADAPT_EDGC) {
        const int has = sum[2] > 0;
        const double mean = has ? (double)sum[1] / (double)sum[2] / FIX_ONE : 0.0;
        s->proposal = gc_edgc_step(&s->edgc, &cfg->edgc, has, mean);
    }
}

int gc_adapt_shape(void *st, const gc_adapt_config *cfg, const float *g, float *out, size_t n)
{
    adapt_state *s = st;
    if (s->method != GC_ADAPT_GCT || n != s->n || s->apart) return 0;
    const float *prev = s->observed > 0 ? history_of(s) : NULL;
    s->lambda_used = gc_gct_shape(&s->gct, &cfg->gct, g, prev, out, n);
    return 1;
}

int gc_adapt_shape_step(void *st, const gc_adapt_config *cfg, size_t n, gc_gct_apply *a)
{
    adapt_state *s = st;
    if (s->method != GC_ADAPT_GCT || n != s->n || !s->apart) return 0;
    s->lambda_used = gc_gct_step(&s->gct, &cfg->gct, s->observed > 0, a);
    return 1;
}

const gc_width_policy *gc_adapt_width_policy(void *st, const gc_adapt_config *cfg)
{
    (void)cfg;
    adapt_state *s = st;
    return s->method == GC_ADAPT_VARIANCE && s->is_topkq ? &s->policy : NULL;
}

/* What follows the element passes of an observation. */
static void observe_tail(adapt_state *s, const gc_adapt_config *cfg, double bytes_sent,
                         double comm_s)
{
    if (s->auto_on) {
        /* Bytes per unit of ratio, so the budget model can be inverted. */
        const double used = s->used > 0 ? s->used : NAN;
        const double per_ratio = isfinite(used) ? bytes_sent / used : 0.0;
        s->proposal =
            gc_budget_observe(&s->budget, &cfg->ratio_auto, bytes_sent, comm_s, per_ratio);
    }
    s->observed++;

    gc_adapt_report *r = &s->last;
    r->ratio = !s->is_rank ? s->used : NAN;
    r->rank = s->is_rank ? s->used : NAN;
    r->bits = NAN;
    if (s->method == GC_ADAPT_VARIANCE && s->is_topkq) {
        const uint64_t buckets = s->bitctl.chosen_buckets - s->buckets_before;
        if (buckets) r->bits = (double)(s->bitctl.chosen_bits - s->bits_before) / (double)buckets;
    }
    r->lambda = s->method == GC_ADAPT_GCT ? s->lambda_used : NAN;
    r->entropy = s->method == GC_ADAPT_EDGC ? s->edgc.last_entropy : NAN;
    r->variance = s->method == GC_ADAPT_VARIANCE && s->var.slow > 0
                      ? s->var.fast / s->var.slow
                      : NAN;
}

void gc_adapt_observe(void *st, const gc_adapt_config *cfg, const float *sum, size_t n,
                      int ranks, double bytes_sent, double comm_s)
{
    adapt_state *s = st;
    if (n != s->n || s->apart) return;
    switch (s->method) {
    case GC_ADAPT_GCT: gc_gct_remember(sum, n, ranks, history_of(s)); break;
    case GC_ADAPT_VARIANCE:
        s->proposal = gc_var_observe(&s->var, &cfg->var, sum, n, ranks, history_of(s));
        break;
    default: break;
    }
    observe_tail(s, cfg, bytes_sent, comm_s);
}

void gc_adapt_observe_apart(void *st, const gc_adapt_config *cfg, size_t n, double moved,
                            double norm, int ranks, double bytes_sent, double comm_s)
{
    (void)ranks; /* the caller's passes divided by it */
    adapt_state *s = st;
    if (n != s->n || s->has_history) return; /* an in-block state: gc_adapt_observe */
    if (s->method == GC_ADAPT_VARIANCE) s->proposal = gc_var_update(&s->var, &cfg->var, moved, norm);
    observe_tail(s, cfg, bytes_sent, comm_s);
}

void gc_adapt_report_of(const void *st, const gc_adapt_config *cfg, gc_adapt_report *out)
{
    (void)cfg;
    const adapt_state *s = st;
    if (s->observed == 0) {
        *out = (gc_adapt_report){NAN, NAN, NAN, NAN, NAN, NAN};
        return;
    }
    *out = s->last;
}
