/* codec_onebit.c — 1-bit SGD (Seide et al., 2014): per bucket, one bit per
 * element (v >= 0) and two reconstruction values, the mean of the
 * non-negative elements and the mean of the negative ones; an element
 * decodes to the mean of its part. Deterministic and biased: use it with
 * error feedback (r = v - D(v)), as the paper does.
 *
 * Means are float32 of sums in a fixed order (quant_common.h) divided by
 * the counts; a part with no element has mean 0.
 *
 * Body (little-endian):
 *     u32 bucket
 *     f32 {mean_nonneg, mean_neg}[nb]      nb = ceil(n / bucket)
 *     per bucket of L elements, one bit plane (quant_common.h) of
 *     ceil(L/8) bytes, bit set for v >= 0
 * Bits per element: 1 + 64/bucket (a partial last bucket pads to 8). */
#include "quant_common.h"

static size_t onebit_check(const gc_params *p, char *msg, size_t msglen)
{
    return gc_check_bucket(p, msg, msglen);
}

static size_t bits_bytes(size_t n, size_t bucket)
{
    size_t nb = gc_bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * gc_planes_stride(bucket) + gc_planes_stride(gc_q_bucket_len(n, bucket, nb - 1));
}

static size_t body_size(size_t n, size_t bucket)
{
    return GC_Q_BUCKET_FIELD + 8 * gc_bucket_count(n, bucket) + bits_bytes(n, bucket);
}

static size_t onebit_bound(size_t n, const gc_params *p)
{
    return body_size(n, p->bucket);
}

/* Sums and count of each part, in the fixed order of gc_q_sum_pow. */
typedef struct part_sums { double nonneg, neg; size_t count_nonneg; } part_sums;

/* v goes to the non-negative or the negative lane sum, the other gets +0;
 * a select on the bits, so that the loop vectorises (quant_common.h). */
GC_Q_INLINE void add_lane(float *sp, float *sn, uint32_t *cp, float v)
{
    uint32_t nonneg = v >= 0.0f;
    *sp += gc_select_f32(nonneg, v, 0.0f);
    *sn += gc_select_f32(nonneg, 0.0f, v);
    *cp += nonneg;
}

GC_Q_INLINE void chunk_sums(const float *restrict g, float *restrict r, size_t len,
                            part_sums *ps)
{
    float sp[GC_Q_LANES] = {0}, sn[GC_Q_LANES] = {0};
    uint32_t cp[GC_Q_LANES] = {0};
    const size_t full = len - len % GC_Q_LANES, tail = len - full;
    if (r) {
        for (size_t i = 0; i < full; i += GC_Q_LANES)
            for (size_t j = 0; j < GC_Q_LANES; j++) {
                float v = g[i + j] + r[i + j];
                r[i + j] = v;
                add_lane(&sp[j], &sn[j], &cp[j], v);
            }
        for (size_t j = 0; j < tail; j++) {
            float v = g[full + j] + r[full + j];
            r[full + j] = v;
            add_lane(&sp[j], &sn[j], &cp[j], v);
        }
    } else {
        for (size_t i = 0; i < full; i += GC_Q_LANES)
            for (size_t j = 0; j < GC_Q_LANES; j++) add_lane(&sp[j], &sn[j], &cp[j], g[i + j]);
        for (size_t j = 0; j < tail; j++) add_lane(&sp[j], &sn[j], &cp[j], g[full + j]);
    }
    ps->nonneg += (double)gc_q_lanes_total(sp);
    ps->neg += (double)gc_q_lanes_total(sn);
    for (size_t j = 0; j < GC_Q_LANES; j++) ps->count_nonneg += cp[j];
}

/* First pass of a bucket: v = g + r into r (when r), and the part sums. */
GC_Q_INLINE part_sums first_pass(const float *restrict g, float *restrict r, size_t len)
{
    part_sums ps = {0, 0, 0};
    for (size_t c = 0; c < len; c += GC_Q_CHUNK) {
        size_t clen = len - c < GC_Q_CHUNK ? len - c : GC_Q_CHUNK;
        chunk_sums(g + c, r ? r + c : NULL, clen, &ps);
    }
    return ps;
}

GC_VEC_CLONES
static void onebit_encode_buckets(const float *g, float *r, size_t n, size_t bucket,
                                  uint8_t *means, uint8_t *out)
{
    const size_t nb = gc_bucket_count(n, bucket);
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        float *rb = r ? r + i0 : NULL;
        part_sums ps = first_pass(g + i0, rb, len);
        size_t count_neg = len - ps.count_nonneg;
        float hi = ps.count_nonneg ? (float)(ps.nonneg / (double)ps.count_nonneg) : 0.0f;
        float lo = count_neg ? (float)(ps.neg / (double)count_neg) : 0.0f;
        gc_put_f32(means + 8 * b, hi);
        gc_put_f32(means + 8 * b + 4, lo);
        gc_q_prefetch_next(g, r, i0 + len, n);
        gc_q_bits_encode(g + i0, rb, len, hi, lo, out);
        out += gc_planes_stride(len);
    }
}

static size_t onebit_encode(const float *g, float *r, size_t n, const gc_params *p,
                            uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)seed; (void)ws;
    const size_t size = body_size(n, p->bucket);
    if (cap < size) return GC_ERROR(DST_TOO_SMALL);
    gc_put_u32(dst, (uint32_t)p->bucket);
    uint8_t *means = dst + GC_Q_BUCKET_FIELD;
    onebit_encode_buckets(g, r, n, p->bucket, means, means + 8 * gc_bucket_count(n, p->bucket));
    return size;
}

GC_VEC_CLONES
static size_t onebit_decode_buckets(const uint8_t *means, size_t n, size_t bucket, float *acc)
{
    return gc_q_sign_buckets_decode_add(means, true, n, bucket, acc);
}

static size_t onebit_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                                gc_workspace *ws)
{
    (void)ws;
    size_t bucket = 0;
    size_t e = gc_q_open_body(src, len, n, body_size, &bucket);
    if (gc_is_error(e)) return e;
    return onebit_decode_buckets(src + GC_Q_BUCKET_FIELD, n, bucket, acc);
}

const gc_codec gc_codec_onebit = {
    .name = "onebit",
    .id = GC_ID_ONEBIT,
    .flags = 0,
    .check = onebit_check,
    .bound = onebit_bound,
    .encode = onebit_encode,
    .decode_add = onebit_decode_add,
    .zero_sent = NULL,
};
