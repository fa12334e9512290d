/* gc_adapt.h — the adaptive layer (issue 8, DESIGN.md "Codecs"): pure C, no
 * MPI. It takes statistics of a buffer and of its history and returns the
 * codec parameters of the next call. pmpi/ feeds it, makes the ranks agree
 * and keeps its per-buffer state beside the residuals.
 *
 * Three methods from shared/papers/ and one beyond them:
 *   gct       gradient-constrained shaping before eg (GCT, Eq. 8-10)      gct.c
 *   edgc      entropy-driven ratio / rank (EDGC: sampler, model, window)  edgc.c
 *   variance  variance-adaptive k for topk/dgc/topkq (seed 001)           variance.c
 *             + per-bucket bit width of topkq learnt online               bitctl.c
 *   auto      GCMPI_RATIO=auto: ratio from the measured link and a time
 *             budget per call                                             budget.c
 * adapt.c ties them together behind one per-buffer state (the interface
 * pmpi/ uses, at the end of this file); adapt_config.c holds the defaults
 * and which codec each method applies to.
 *
 * Agreement: every decision that changes the payload size bound or a
 * collective's shape must be the same on all ranks. pmpi/ makes one
 * PMPI_Allreduce(MPI_SUM) of GC_ADAPT_AGREE_LEN int64 per call when
 * gc_adapt_agree_len() > 0 (integer sums are exact and associative, so every
 * rank gets the same bits), and the decision is a function of those sums
 * only. Per-bucket bit widths of topkq are not agreed: they are carried in
 * the payload, and no rank ever needs another rank's choice to decode. */
#ifndef GC_ADAPT_H
#define GC_ADAPT_H

#include <stddef.h>
#include <stdint.h>

#include "gcmpi_codec.h"

/* ---- configuration (config/ fills it from GCMPI_* variables) ------------ */

typedef enum gc_adapt_method {
    GC_ADAPT_NONE = 0,
    GC_ADAPT_GCT,
    GC_ADAPT_EDGC,
    GC_ADAPT_VARIANCE,
} gc_adapt_method;

typedef struct gc_gct_params {
    double lambda;         /* GCMPI_GCT_LAMBDA: initial Lagrange multiplier, >= 0   */
    double lr;             /* GCMPI_GCT_LR: the application's learning rate eta, > 0 */
    double eps;            /* GCMPI_GCT_EPS: smoothing epsilon, > 0                  */
    double decay;          /* GCMPI_GCT_DECAY: alpha of Eq. 10, (0, 1]               */
    uint64_t decay_every;  /* GCMPI_GCT_DECAY_EVERY: calls per decay step, >= 1      */
    int alg2;              /* GCMPI_GCT_FORM: 0 = Eq. 9 (with sign(g)), 1 = Alg. 2   */
} gc_gct_params;

typedef struct gc_edgc_params {
    double alpha;          /* GCMPI_EDGC_ALPHA: iteration sampling rate, (0, 1]      */
    double beta;           /* GCMPI_EDGC_BETA: fraction of elements sampled, (0, 1]  */
    uint64_t window;       /* GCMPI_EDGC_WINDOW: calls per window, >= 1              */
    double min, max;       /* GCMPI_EDGC_MIN/MAX: bounds of the setting (ratio for
                              topk/dgc/topkq, rank for powersgd); 0 = auto (base/4,
                              base*4, clamped to the codec's range)                 */
} gc_edgc_params;

#define GC_VAR_MAX_WIDTHS 8

typedef struct gc_var_params {
    double alpha;          /* GCMPI_VAR_ALPHA: exponent of the variance ratio, >= 0  */
    uint64_t memory;       /* GCMPI_VAR_MEMORY: calls of the fast running estimate   */
    double min, max;       /* GCMPI_VAR_MIN/MAX: ratio bounds; 0 = auto (base/4, base*4) */
    unsigned widths[GC_VAR_MAX_WIDTHS]; /* GCMPI_VAR_WIDTHS: candidate bit widths, ascending, 1..8 */
    unsigned n_widths;
    double target;         /* GCMPI_VAR_TARGET: bound on a bucket's relative
                              quantisation error energy ||x - Q(x)||^2 / ||x||^2   */
} gc_var_params;

typedef struct gc_auto_params {
    int on;                /* GCMPI_RATIO=auto                                       */
    double budget_s;       /* GCMPI_RATIO_BUDGET: seconds per compressed call, > 0   */
    double min, max;       /* GCMPI_RATIO_MIN / GCMPI_RATIO_MAX, 0 < min <= max <= 1 */
} gc_auto_params;

typedef struct gc_adapt_config {
    gc_adapt_method method; /* GCMPI_ADAPT */
    gc_gct_params gct;
    gc_edgc_params edgc;
    gc_var_params var;
    gc_auto_params ratio_auto;
} gc_adapt_config;

/* The defaults config/ documents (README table). adapt_config.c */
void gc_adapt_config_default(gc_adapt_config *c);

/* ---- GCT (gct.c) ----------------------------------------------------------
 * Per buffer: keep the previous transmitted gradient prev = (all-reduced
 * sum) / ranks. Each call (Eq. 8-9):
 *   h[i]   = (1/lr) * (1 - g[i] / (prev[i] + eps'))   from the second call on, else 0
 *   out[i] = g[i] + lambda * sign(g[i]) * h[i]          (Eq. 9; alg2: without sign)
 * eps' = eps with the sign of prev[i] (prev >= 0: +eps), so that a negative
 * prev near -eps cannot divide by zero; non-finite results fall back to g[i].
 * lambda <- decay * lambda after every decay_every-th call (Eq. 10). */
typedef struct gc_gct_state {
    double lambda;         /* multiplier for the next call */
    uint64_t calls;        /* calls shaped so far          */
} gc_gct_state;

void gc_gct_init(gc_gct_state *s, const gc_gct_params *p);
/* out may alias g; prev NULL (or s->calls == 0) means no previous gradient.
 * Returns the lambda used for this call. */
double gc_gct_shape(gc_gct_state *s, const gc_gct_params *p, const float *g,
                    const float *prev, float *out, size_t n);
/* prev[i] = sum[i] / ranks. */
void gc_gct_remember(const float *sum, size_t n, int ranks, float *prev);
/* One call's scalar step, for a caller that runs the element loop itself
 * (a GPU): with_prev 0 means out = g; else out[i] is the element formula
 * above with c = lambda / lr (float), eps and Eq. 9 (eq9) or Alg. 2.
 * Counts the call and decays lambda as gc_gct_shape does, which is this
 * step and the loop. Returns the lambda used. */
typedef struct gc_gct_apply {
    int with_prev;
    float c, eps;
    int eq9;
} gc_gct_apply;
double gc_gct_step(gc_gct_state *s, const gc_gct_params *p, int have_prev, gc_gct_apply *out);

/* ---- EDGC (edgc.c) --------------------------------------------------------
 * Gradient data sampler: entropy (bits) of the histogram of the quantised
 * values of a beta fraction of x (indices drawn from seed, the same set for
 * the same seed). gc_edgc_entropy_full is the same estimate over all of x,
 * the reference the sampled one is tested against. */
double gc_edgc_entropy(const float *x, size_t n, double beta, uint64_t seed);
double gc_edgc_entropy_full(const float *x, size_t n);
/* The sample gc_edgc_entropy draws: its length, and the index of its j-th
 * element (j < len, ascending strata). The entropy of the gathered values
 * x[index(j)], j = 0..len-1, taken whole (beta 1) is gc_edgc_entropy(x, n,
 * beta, seed) bit for bit. */
size_t gc_edgc_sample_len(size_t n, double beta);
size_t gc_edgc_sample_index(size_t n, double beta, uint64_t seed, size_t j);

/* Window state of one buffer. The setting is a ratio (topk, dgc, topkq) or a
 * rank (powersgd, integral values). */
typedef struct gc_edgc_state {
    uint64_t calls;        /* calls seen                                   */
    double h_sum;          /* agreed entropies of the current window       */
    uint64_t h_count;
    double h_ref;          /* entropy of the first window (model anchor)   */
    int have_ref;
    double base;           /* the configured setting (GCMPI_RATIO or _RANK) */
    double lo, hi;         /* bounds after resolving auto                  */
    double setting;        /* what the current window uses                 */
    double last_entropy;   /* last window's mean, for statistics           */
    int is_rank;           /* powersgd                                     */
} gc_edgc_state;

void gc_edgc_init(gc_edgc_state *s, const gc_edgc_params *p, double base, int is_rank);
/* 1 when this call (the next one gc_edgc_step will count) samples the gradient. */
int gc_edgc_sample_now(const gc_edgc_state *s, const gc_edgc_params *p);
/* One call: add the agreed mean entropy when sampled (has_entropy), count
 * the call, and at a window boundary set the setting from the model,
 * clamped to [lo, hi]. Returns the setting for the *next* call. */
double gc_edgc_step(gc_edgc_state *s, const gc_edgc_params *p, int has_entropy, double entropy);
/* The model (README "EDGC"): setting for entropy h given the anchor. */
double gc_edgc_model(const gc_edgc_state *s, double h);

/* ---- variance-adaptive sparsity (variance.c) ------------------------------
 * From the all-reduced mean gradient m_t (identical on all ranks):
 *   nu_t = ||m_t - m_{t-1}||^2 / ||m_{t-1}||^2     how much the gradient moved
 *   fast = EMA of nu over ~memory calls, slow = EMA over ~10*memory calls
 *   ratio = clamp(base * (fast / slow)^alpha, lo, hi)
 * sparsify harder when the gradient is stabler than usual, less when it moves. */
typedef struct gc_var_state {
    double fast, slow;
    uint64_t calls;        /* observations so far */
    double base, lo, hi;
    double ratio;          /* ratio for the next call */
    double last_nu;
} gc_var_state;

void gc_var_init(gc_var_state *s, const gc_var_params *p, double base_ratio);
/* The two sums of nu_t, in double, in one fixed order so that a GPU forms
 * them bit for bit: per chunk of GC_VAR_CHUNK elements, GC_VAR_LANES lane
 * sums (lane l: chunk elements l, l + LANES, ...), halved pairwise (lane l
 * += lane l + half, half = LANES/2 .. 1), the chunks' lane 0 added in chunk
 * order. moved = sum (sum[i]/ranks - prev[i])^2, norm = sum prev[i]^2;
 * prev[i] becomes sum[i] / ranks. */
#define GC_VAR_CHUNK 2048
#define GC_VAR_LANES 32
void gc_var_moves(const float *sum, size_t n, int ranks, float *prev_mean, double *moved,
                  double *norm);
/* One observation from those sums; returns the ratio for the next call. */
double gc_var_update(gc_var_state *s, const gc_var_params *p, double moved, double norm);
/* sum: this call's all-reduced result; prev_mean: n floats kept per buffer
 * (updated to sum / ranks). Returns the ratio for the next call:
 * gc_var_moves, then gc_var_update. */
double gc_var_observe(gc_var_state *s, const gc_var_params *p, const float *sum, size_t n,
                      int ranks, float *prev_mean);

/* ---- per-bucket bit width controller (bitctl.c) ---------------------------
 * A contextual bandit over the candidate widths: the context of a bucket is
 * a bin of its crest factor max^2 * len / ||x||^2 (how peaked it is); per
 * (bin, width) the controller keeps a running mean of the relative error
 * energy it observed, and chooses the smallest width whose estimate is
 * within target (untried widths: a prior from uniform quantisation theory,
 * refined by what is observed; every explore_every-th decision in a bin
 * tries the next smaller width). It is handed to topkq as a
 * gc_width_policy. */
#define GC_BITCTL_BINS 8

typedef struct gc_bitctl {
    gc_var_params p;                                   /* widths, target    */
    double err[GC_BITCTL_BINS][GC_VAR_MAX_WIDTHS];     /* running mean      */
    uint32_t seen[GC_BITCTL_BINS][GC_VAR_MAX_WIDTHS];
    uint64_t decisions[GC_BITCTL_BINS];
    uint64_t chosen_bits, chosen_buckets;              /* for statistics    */
} gc_bitctl;

void gc_bitctl_init(gc_bitctl *c, const gc_var_params *p);
/* A policy that calls back into c (valid while c is). */
gc_width_policy gc_bitctl_policy(gc_bitctl *c);

/* ---- GCMPI_RATIO=auto (budget.c) ------------------------------------------
 * The link as the library sees its own traffic: comm_s = a + b * bytes,
 * fitted by recursive least squares with forgetting over the calls of one
 * buffer. The ratio of the next call is the largest that keeps the predicted
 * exchange within budget_s, clamped to [min, max]. */
typedef struct gc_budget_state {
    double sxx, sx, s1, sxy, sy;   /* forgetting sums of the fit */
    uint64_t calls;
    double a, b;                   /* seconds, seconds per byte  */
    double ratio;                  /* ratio for the next call    */
} gc_budget_state;

void gc_budget_init(gc_budget_state *s, const gc_auto_params *p, double start_ratio);
/* One call: bytes this rank sent and the seconds it spent communicating.
 * bytes_per_ratio: bytes sent per unit of ratio (bytes_sent / ratio of the
 * call, so the model can be inverted). Returns the ratio for the next call. */
double gc_budget_observe(gc_budget_state *s, const gc_auto_params *p, double bytes_sent,
                         double comm_s, double bytes_per_ratio);

/* ---- the per-buffer interface pmpi/ uses (adapt.c) ------------------------
 * Order of one allreduce call on a buffer of n floats:
 *   local[] <- gc_adapt_local(st, g)            statistics of this rank
 *   sum[]   <- PMPI_Allreduce(local, SUM)       when gc_adapt_agree_len() > 0
 *   gc_adapt_decide(st, sum, ranks, &params)    this call's parameters
 *   gc_adapt_shape(st, g, tmp)                  GCT: encode tmp instead of g
 *   gc_adapt_width_policy(st)                   topkq: install on the workspace
 *   ... the compressed collective, out = sum of all ranks ...
 *   gc_adapt_observe(st, out, ranks, bytes, comm_s)
 * The state is one block of gc_adapt_state_bytes() bytes, zeroed by the
 * caller and initialised by gc_adapt_state_init. */
#define GC_ADAPT_AGREE_LEN 4

/* adapt_config.c: 1 if the configuration applies to codec c (config/ rejects the rest with
 * a message naming both variables): gct -> eg; edgc -> topk, dgc, topkq,
 * powersgd; variance -> topk, dgc, topkq; auto -> topk, dgc, topkq, randk. */
int gc_adapt_supports(const gc_adapt_config *cfg, const gc_codec *c);
/* adapt_config.c: 0 when nothing is adapted (method none and no auto ratio). */
int gc_adapt_active(const gc_adapt_config *cfg);

size_t gc_adapt_state_bytes(const gc_adapt_config *cfg, const gc_codec *c, size_t n);
void gc_adapt_state_init(void *st, const gc_adapt_config *cfg, const gc_codec *c,
                         const gc_params *base, size_t n);
/* Number of int64 to all-reduce per call: a function of cfg and c only. */
int gc_adapt_agree_len(const gc_adapt_config *cfg, const gc_codec *c);
void gc_adapt_local(void *st, const gc_adapt_config *cfg, const float *g, size_t n,
                    uint64_t call_seed, int64_t local[GC_ADAPT_AGREE_LEN]);
/* params: in the configured parameters, out this call's. sum is NULL when
 * gc_adapt_agree_len() is 0. */
void gc_adapt_decide(void *st, const gc_adapt_config *cfg, const int64_t *sum, int ranks,
                     gc_params *params);
/* GCT: out[0..n) = the shaped gradient, returns 1; otherwise returns 0 and
 * leaves out alone. out may alias g. */
int gc_adapt_shape(void *st, const gc_adapt_config *cfg, const float *g, float *out, size_t n);
/* topkq under variance: the controller's policy; NULL otherwise. */
const gc_width_policy *gc_adapt_width_policy(void *st, const gc_adapt_config *cfg);
void gc_adapt_observe(void *st, const gc_adapt_config *cfg, const float *sum, size_t n,
                      int ranks, double bytes_sent, double comm_s);

/* What the state chose for its last call (statistics timeline). Fields that
 * do not apply are NaN. */
typedef struct gc_adapt_report {
    double ratio, rank, bits;   /* setting used; bits = mean topkq width       */
    double lambda;              /* gct                                         */
    double entropy;             /* edgc: last window's agreed mean entropy     */
    double variance;            /* variance: fast / slow                       */
} gc_adapt_report;
void gc_adapt_report_of(const void *st, const gc_adapt_config *cfg, gc_adapt_report *out);

/* ---- the history kept apart (device buffers) ------------------------------
 * A buffer in device memory keeps the method's n floats of history in
 * device memory beside its residual and runs the element passes there
 * (gpu/gcmpi_gpu.h); the block is then the header alone
 * (gc_adapt_state_bytes(cfg, c, 0)), initialised by
 * gc_adapt_state_init_apart, and a call runs:
 *   m = gc_adapt_sample_len(st, n)   edgc: gather x[gc_edgc_sample_index(j)]
 *   gc_adapt_local_sample(st, sample, m, local)   instead of gc_adapt_local
 *   gc_adapt_shape_step(st, n, &a)   gct: out = the element formula, with
 *                                     the history as prev when a.with_prev
 *   ... decide, width policy and the collective as above ...
 *   gct: prev = sum / ranks; variance: gc_var_moves' sums of the history
 *   gc_adapt_observe_apart(st, n, moved, norm, ...)
 * Each step computes what the in-block form does, so a device buffer is
 * adapted bit for bit as the same buffer on the host. */
size_t gc_adapt_history_floats(const gc_adapt_config *cfg, size_t n);
void gc_adapt_state_init_apart(void *st, const gc_adapt_config *cfg, const gc_codec *c,
                               const gc_params *base, size_t n);
/* Elements of this call's edgc sample of a buffer of n floats: 0 when the
 * call does not sample. */
size_t gc_adapt_sample_len(const void *st, const gc_adapt_config *cfg, size_t n);
void gc_adapt_local_sample(void *st, const gc_adapt_config *cfg, const float *sample, size_t m,
                           int64_t local[GC_ADAPT_AGREE_LEN]);
/* GCT: fills *a and returns 1 (the call counts as shaped); otherwise 0. */
int gc_adapt_shape_step(void *st, const gc_adapt_config *cfg, size_t n, gc_gct_apply *a);
/* moved and norm: gc_var_moves' sums under variance (ignored otherwise). */
void gc_adapt_observe_apart(void *st, const gc_adapt_config *cfg, size_t n, double moved,
                            double norm, int ranks, double bytes_sent, double comm_s);

#endif /* GC_ADAPT_H */
