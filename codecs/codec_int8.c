/* codec_int8.c — 8-bit linear quantisation with one scale per bucket
 * (deterministic, round to nearest even).
 *
 * Per bucket: scale = max|v| / 127, q_i = roundeven(v_i * 127 / max|v|) in
 * [-127, 127], decoded q_i * scale; so |v_i - D_i| <= scale / 2 (half a
 * step) up to float rounding. An all-zero bucket has scale 0 and q = 0.
 *
 * Body (little-endian):
 *     u32 bucket
 *     f32 scale[nb]          nb = ceil(n / bucket)
 *     i8  q[n]               -128 never occurs (CORRUPT)
 * Bits per element: 8 + 32/bucket. */
#include "quant_common.h"

static size_t int8_check(const gc_params *p, char *msg, size_t msglen)
{
    return gc_check_bucket(p, msg, msglen);
}

static size_t body_size(size_t n, size_t bucket)
{
    return GC_Q_BUCKET_FIELD + 4 * gc_bucket_count(n, bucket) + n;
}

static size_t int8_bound(size_t n, const gc_params *p)
{
    return body_size(n, p->bucket);
}

/* q = roundeven(v * inv) with v * inv clamped to [-127, 127] (NaN -> +-127,
 * so the conversion is always defined); d = q * scale. */
GC_Q_INLINE int8_t quantize(float v, float inv, float scale, float *d)
{
    float q = gc_round_even_small(gc_clamp_abs(v * inv, 127.0f));
    *d = q * scale;
    return (int8_t)(int32_t)q;
}

GC_VEC_CLONES
static void int8_encode_buckets(const float *restrict g, float *restrict r, size_t n,
                                size_t bucket, uint8_t *restrict scales, int8_t *restrict q)
{
    const size_t nb = gc_bucket_count(n, bucket);
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        float amax = gc_bits_f32(gc_q_absmax_bits(g + i0, r ? r + i0 : NULL, len));
        float scale = amax / 127.0f;
        float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        gc_put_f32(scales + 4 * b, scale);
        gc_q_prefetch_next(g, r, i0 + len, n);
        float d;
        if (r) {
            float *restrict rb = r + i0;
            for (size_t i = 0; i < len; i++) {
                float v = rb[i];
                q[i0 + i] = quantize(v, inv, scale, &d);
                rb[i] = v - d;
            }
        } else {
            for (size_t i = 0; i < len; i++) q[i0 + i] = quantize(g[i0 + i], inv, scale, &d);
        }
    }
}

static size_t int8_encode(const float *g, float *r, size_t n, const gc_params *p,
                          uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)seed; (void)ws;
    const size_t size = body_size(n, p->bucket);
    if (cap < size) return GC_ERROR(DST_TOO_SMALL);
    gc_put_u32(dst, (uint32_t)p->bucket);
    uint8_t *scales = dst + GC_Q_BUCKET_FIELD;
    int8_encode_buckets(g, r, n, p->bucket, scales,
                        (int8_t *)(scales + 4 * gc_bucket_count(n, p->bucket)));
    return size;
}

GC_VEC_CLONES
static size_t int8_decode_buckets(const uint8_t *restrict scales, const int8_t *restrict q,
                                  size_t n, size_t bucket, float *restrict acc)
{
    const size_t nb = gc_bucket_count(n, bucket);
    int bad = 0;
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        const float scale = gc_get_f32(scales + 4 * b);
        for (size_t i = 0; i < len; i++) {
            bad |= q[i0 + i] == -128;
            acc[i0 + i] += (float)q[i0 + i] * scale;
        }
    }
    return bad ? GC_ERROR(CORRUPT) : 0;
}

static size_t int8_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                              gc_workspace *ws)
{
    (void)ws;
    size_t bucket = 0;
    size_t e = gc_q_open_body(src, len, n, body_size, &bucket);
    if (gc_is_error(e)) return e;
    const uint8_t *scales = src + GC_Q_BUCKET_FIELD;
    return int8_decode_buckets(scales, (const int8_t *)(scales + 4 * gc_bucket_count(n, bucket)),
                               n, bucket, acc);
}

const gc_codec gc_codec_int8 = {
    .name = "int8",
    .id = GC_ID_INT8,
    .flags = 0,
    .check = int8_check,
    .bound = int8_bound,
    .encode = int8_encode,
    .decode_add = int8_decode_add,
    .zero_sent = NULL,
};
