/* codec_topkq.c — top-k sparsification, then per-bucket quantisation of the
 * kept values: C(g) = Q_b(S_k(g + r)), r <- v - D(C(v)) (the unified
 * pipeline of shared/papers/001). Selection is topk's: the exact
 * k = ceil(ratio * n) largest magnitudes of v = g + r (radix select,
 * sparse_index.c). The kept values, in index order, are cut into buckets
 * of `bucket` values, and each bucket gets its own width b in 1..8: from
 * the width policy installed on the workspace (gc_workspace_set_width_policy,
 * e.g. the controller of adapt/bitctl.c), or gc_params.bits without one.
 *
 * Quantiser. A kept value has |x| >= the k-th largest magnitude, so the
 * values sit far from 0 and a scale from 0 to max (qsgd's) would waste most
 * levels. Each bucket is quantised as sign + magnitude over its own
 * magnitude range [lo, hi], lo = min |x|, hi = max |x|:
 *   b >= 2  1 sign bit + (b - 1) level bits; M = 2^(b-1) - 1 steps of
 *           step = (hi - lo) / M; q = round((|x| - lo) / step) in 0..M
 *           (nearest, ties to even); decoded as sign * (lo + q * step)
 *   b = 1   the sign alone, decoded as sign * lo with lo = hi = mean |x|.
 * Rounding is deterministic, not stochastic: its bias stays in the
 * residual and error feedback sends it later. The encoder finds q with a
 * multiply by the reciprocal M / (hi - lo), so a value within a few ulps
 * of a half level may round the other way; the reconstruction is the one
 * float expression of level_value() in encoder and decoder (no FMA:
 * quant_common.h), so the residual is exactly v - D(C(v)). A non-finite
 * value makes its bucket's step, and so the bucket, non-finite (as in the
 * other quantisers).
 *
 * Body (little-endian):
 *   u32 k, u8 mode, indices  the head and index section of topk's body
 *                            (sparse_index.h: delta blocks or a bitmap)
 *   u32 bucket               values per bucket, 1..2^31
 *   per bucket (ceil(k / bucket) of them, the last one partial, len values):
 *     u8  b                  width, 1..8
 *     f32 lo, f32 hi         magnitude range (b = 1: both the mean |x|)
 *     ceil(len * b / 8) bytes: per value, in index order, a b-bit field
 *       written LSB first: bit 0 the sign (1: negative), bits 1..b-1 the
 *       level q; padding bits zero (one body per quantised vector).
 */
#include "quant_common.h"
#include "sparse_index.h"

#include "bitstream.h"

#include <float.h>

#define TOPKQ_MAX_BITS     8u
#define TOPKQ_BUCKET_FIELD 4u  /* u32 bucket */
#define TOPKQ_BUCKET_HEAD  9u  /* u8 b, f32 lo, f32 hi */

static size_t topkq_check(const gc_params *p, char *msg, size_t msglen)
{
    size_t r = gc_check_ratio(p, msg, msglen);
    if (!gc_is_error(r)) r = gc_check_bucket(p, msg, msglen);
    /* bits is the width of every bucket when no policy is installed. */
    if (!gc_is_error(r)) r = gc_check_bits(p, 1, TOPKQ_MAX_BITS, msg, msglen);
    return r;
}

static size_t values_bytes(size_t len, unsigned b) { return (len * b + 7) / 8; }

/* The widest body: a bitmap index and 8 bits per value, whatever widths a
 * policy picks, so every rank computes the same bound. */
static size_t topkq_bound(size_t n, const gc_params *p)
{
    size_t k = gc_kept_count(n, p->ratio);
    return GC_SPARSE_HEAD + (n + 7) / 8 + TOPKQ_BUCKET_FIELD
           + gc_bucket_count(k, p->bucket) * TOPKQ_BUCKET_HEAD
           + values_bytes(k, TOPKQ_MAX_BITS);
}

/* Step between levels of a b-bit bucket; 0 for b = 1 (one level, lo). */
static inline float level_step(float lo, float hi, unsigned b)
{
    return b == 1 ? 0.0f : (hi - lo) / (float)((1u << (b - 1)) - 1u);
}

/* The decoded magnitude of level q: the one expression encoder (residual)
 * and decoder share. */
static inline float level_value(float lo, float step, uint32_t q)
{
    return lo + (float)q * step;
}

/* mag with the sign bit of the code. */
static inline float with_sign(float mag, uint32_t sign)
{
    return gc_bits_f32(gc_f32_bits(mag) ^ (sign << 31));
}

/* ---- encoder -------------------------------------------------------------- */

/* What the first pass over a bucket's values learns. */
typedef struct bucket_scan {
    float lo, hi;                /* min and max |x| (NaN above infinity) */
    double sum, sum_abs, sum_sq;
} bucket_scan;

static bucket_scan scan_bucket(const float *restrict x, size_t len)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    double sum = 0, sum_abs = 0, sum_sq = 0;
    for (size_t j = 0; j < len; j++) {
        /* Integer order of magnitude bits is the order of |x|. */
        uint32_t key = gc_mag_key(x[j]);
        lo = key < lo ? key : lo;
        hi = key > hi ? key : hi;
        double v = x[j];
        sum += v;
        sum_abs += fabs(v);
        sum_sq += v * v;
    }
    return (bucket_scan){gc_bits_f32(lo), gc_bits_f32(hi), sum, sum_abs, sum_sq};
}

static gc_bucket_stats stats_of(const bucket_scan *s, size_t index, size_t len)
{
    double mean = s->sum / (double)len;
    double var = s->sum_sq / (double)len - mean * mean;
    return (gc_bucket_stats){
        .index = index, .len = len, .l2sq = s->sum_sq, .maxabs = (double)s->hi,
        .mean = mean, .var = var > 0 ? var : 0,
    };
}

static unsigned clamp_width(unsigned b)
{
    return b < 1 ? 1 : b > TOPKQ_MAX_BITS ? TOPKQ_MAX_BITS : b;
}

/* Level of |x| for b >= 2: t = (|x| - lo) * inv is >= 0 or NaN; fabsf and
 * an integer clamp map NaN to a level in 0..M before the conversion. */
static inline uint32_t level_of(float ax, float lo, float inv, float top)
{
    float t = gc_clamp_abs(fabsf((ax - lo) * inv), top);
    return (uint32_t)gc_round_even_small(t);
}

/* Quantise one bucket x[0..len) with width b over [lo, hi] into out (its
 * values_bytes), set r[idx[j]] = x[j] - decoded when r, and return the
 * error energy sum (x - decoded)^2 when want_err (else 0). */
static double quantise_bucket(const float *restrict x, const uint32_t *restrict idx, size_t len,
                              unsigned b, float lo, float hi, float *restrict r, int want_err,
                              uint8_t *out)
{
    const float step = level_step(lo, hi, b);
    const float top = (float)((1u << (b - 1)) - 1u);
    /* A multiply per value, not a division; a range too small for the
     * reciprocal (a subnormal one) puts every value on level 0. */
    float inv = b > 1 && hi > lo ? top / (hi - lo) : 0.0f;
    if (!(inv <= FLT_MAX)) inv = 0.0f;
    gc_bitw bw;
    gc_bitw_init(&bw, out, values_bytes(len, b));
    double err = 0;
    for (size_t j = 0; j < len; j++) {
        uint32_t sign = gc_f32_bits(x[j]) >> 31;
        uint32_t q = b > 1 ? level_of(fabsf(x[j]), lo, inv, top) : 0;
        gc_bitw_put(&bw, sign | (q << 1), b);
        float d = with_sign(level_value(lo, step, q), sign);
        float e = x[j] - d;
        if (r) r[idx[j]] = e;
        if (want_err) err += (double)e * (double)e;
    }
    gc_bitw_finish(&bw);  /* the room was reserved: cannot overflow */
    return err;
}

static size_t topkq_encode(const float *g, float *r, size_t n, const gc_params *p,
                           uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)seed;
    if (n > UINT32_MAX) return GC_ERROR(PARAM);  /* indices are 32-bit */
    /* Checked before the residual is touched, so an error leaves it as it was. */
    if (cap < topkq_bound(n, p)) return GC_ERROR(DST_TOO_SMALL);
    size_t k = gc_kept_count(n, p->ratio);
    const float *v;
    uint32_t *idx;
    size_t got = gc_sparse_accumulate_topk(g, r, n, k, ws, &v, &idx);
    if (gc_is_error(got)) return got;
    /* The kept values, contiguous, so each bucket's two passes stream. */
    float *x = gc_ws_get(ws, GC_WS_B, k * sizeof(float));
    if (!x) return GC_ERROR(ALLOC);
    for (size_t j = 0; j < k; j++) x[j] = v[idx[j]];
    ws->report.kept = k;

    size_t pos = gc_sparse_index_write(idx, k, n, dst, cap);
    if (gc_is_error(pos)) return pos;
    gc_put_u32(dst + pos, (uint32_t)p->bucket);
    pos += TOPKQ_BUCKET_FIELD;

    const gc_width_policy *policy = ws->has_width_policy ? &ws->width_policy : NULL;
    const int want_err = policy && policy->observe;
    for (size_t s = 0, bi = 0; s < k; s += p->bucket, bi++) {
        size_t len = k - s < p->bucket ? k - s : p->bucket;
        bucket_scan sc = scan_bucket(x + s, len);
        gc_bucket_stats st = stats_of(&sc, bi, len);
        unsigned b = policy ? clamp_width(policy->choose(policy->ctx, &st)) : p->bits;
        float lo = sc.lo, hi = sc.hi;
        if (b == 1) lo = hi = (float)(sc.sum_abs / (double)len);
        dst[pos] = (uint8_t)b;
        gc_put_f32(dst + pos + 1, lo);
        gc_put_f32(dst + pos + 5, hi);
        pos += TOPKQ_BUCKET_HEAD;
        double err = quantise_bucket(x + s, idx + s, len, b, lo, hi, r, want_err, dst + pos);
        pos += values_bytes(len, b);
        if (want_err) policy->observe(policy->ctx, &st, b, err);
    }
    return pos;
}

/* ---- decoder -------------------------------------------------------------- */

/* A body checked end to end: every length, width, padding bit and index. */
typedef struct topkq_body {
    size_t k, bucket;
    const uint8_t *buckets;  /* the first bucket's width byte */
    const uint32_t *idx;     /* the k indices (workspace slot GC_WS_A) */
} topkq_body;

static size_t topkq_open(const uint8_t *src, size_t len, size_t n, gc_workspace *ws,
                         topkq_body *body)
{
    size_t k;
    size_t pos = gc_sparse_index_open(src, len, n, &k);
    if (gc_is_error(pos)) return pos;
    if (len - pos < TOPKQ_BUCKET_FIELD) return GC_ERROR(TRUNCATED);
    size_t bucket = 1;
    size_t e = gc_q_get_bucket(src + pos, len - pos, &bucket);
    if (gc_is_error(e)) return e;
    pos += TOPKQ_BUCKET_FIELD;
    body->buckets = src + pos;
    /* Each bucket takes at least its head, so this walk is O(len). */
    for (size_t s = 0; s < k; s += bucket) {
        size_t blen = k - s < bucket ? k - s : bucket;
        if (len - pos < TOPKQ_BUCKET_HEAD) return GC_ERROR(TRUNCATED);
        unsigned b = src[pos];
        if (b < 1 || b > TOPKQ_MAX_BITS) return GC_ERROR(CORRUPT);
        if (b == 1 && gc_get_u32(src + pos + 1) != gc_get_u32(src + pos + 5))
            return GC_ERROR(CORRUPT);
        pos += TOPKQ_BUCKET_HEAD;
        size_t bits = blen * b, nbytes = values_bytes(blen, b);
        if (len - pos < nbytes) return GC_ERROR(TRUNCATED);
        if ((bits & 7) && (src[pos + nbytes - 1] >> (bits & 7)) != 0) return GC_ERROR(CORRUPT);
        pos += nbytes;
    }
    if (pos != len) return GC_ERROR(CORRUPT);
    uint32_t *idx = gc_ws_get(ws, GC_WS_A, k * sizeof(uint32_t));
    if (!idx) return GC_ERROR(ALLOC);
    e = gc_sparse_index_decode(src, n, idx);
    if (gc_is_error(e)) return e;
    body->k = k;
    body->bucket = bucket;
    body->idx = idx;
    return 0;
}

static size_t topkq_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                               gc_workspace *ws)
{
    topkq_body body;
    size_t e = topkq_open(src, len, n, ws, &body);
    if (gc_is_error(e)) return e;
    const uint8_t *at = body.buckets;
    for (size_t s = 0; s < body.k; s += body.bucket) {
        size_t blen = body.k - s < body.bucket ? body.k - s : body.bucket;
        unsigned b = at[0];
        float lo = gc_get_f32(at + 1), step = level_step(lo, gc_get_f32(at + 5), b);
        at += TOPKQ_BUCKET_HEAD;
        size_t nbytes = values_bytes(blen, b);
        gc_bitr br;
        gc_bitr_init(&br, at, nbytes);
        const uint32_t *idx = body.idx + s;
        for (size_t j = 0; j < blen; j++) {
            uint32_t code = gc_bitr_get(&br, b);
            acc[idx[j]] += with_sign(level_value(lo, step, code >> 1), code & 1u);
        }
        at += nbytes;
    }
    return 0;
}

static size_t topkq_zero_sent(const uint8_t *src, size_t len, float *x, size_t n,
                              gc_workspace *ws)
{
    topkq_body body;
    size_t e = topkq_open(src, len, n, ws, &body);
    if (gc_is_error(e)) return e;
    for (size_t j = 0; j < body.k; j++) x[body.idx[j]] = 0.0f;
    return 0;
}

const gc_codec gc_codec_topkq = {
    .name = "topkq",
    .id = GC_ID_TOPKQ,
    .flags = GC_SPARSE,
    .check = topkq_check,
    .bound = topkq_bound,
    .encode = topkq_encode,
    .decode_add = topkq_decode_add,
    .zero_sent = topkq_zero_sent,
};
