/* codec_terngrad.c — TernGrad (Wen et al., 2017): each element becomes
 * s * t with t in {-1, 0, +1}, s = max|v| of its bucket, and
 * P(t = sign(v)) = |v| / s, so E[s t] = v (unbiased).
 *
 * The draw is the stochastic rounding of quant_common.h with one level:
 * t = sign(v) * min(floor(|v| / s + u), 1), u = gc_rand_unit(gc_key32(seed),
 * i) for global element index i.
 *
 * Body (little-endian):
 *     u32 bucket
 *     f32 s[nb]              nb = ceil(n / bucket)
 *     per bucket of L elements, 2 bit planes (quant_common.h), 2 * ceil(L/8)
 *     bytes: plane 0 is |t|, plane 1 the sign bit of v
 * Bits per element: 2 + 32/bucket (a partial last bucket pads to 8). */
#include "quant_common.h"

#define TERN_BITS 2

static size_t terngrad_check(const gc_params *p, char *msg, size_t msglen)
{
    return gc_check_bucket(p, msg, msglen);
}

static size_t codes_bytes(size_t n, size_t bucket)
{
    size_t nb = gc_bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * gc_planes_bytes(bucket, TERN_BITS)
        + gc_planes_bytes(gc_q_bucket_len(n, bucket, nb - 1), TERN_BITS);
}

static size_t body_size(size_t n, size_t bucket)
{
    return GC_Q_BUCKET_FIELD + 4 * gc_bucket_count(n, bucket) + codes_bytes(n, bucket);
}

static size_t terngrad_bound(size_t n, const gc_params *p)
{
    return body_size(n, p->bucket);
}

GC_VEC_CLONES
static void terngrad_encode_buckets(const float *g, float *r, size_t n, size_t bucket,
                                    uint32_t key, uint8_t *scales, uint8_t *out,
                                    uint8_t *codes)
{
    const size_t nb = gc_bucket_count(n, bucket);
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        float *rb = r ? r + i0 : NULL;
        float s = gc_bits_f32(gc_q_absmax_bits(g + i0, rb, len));
        float inv = s > 0.0f ? 1.0f / s : 0.0f;
        gc_put_f32(scales + 4 * b, s);
        gc_q_prefetch_next(g, r, i0 + len, n);
        gc_q_stochastic(g + i0, rb, len, key, (uint32_t)i0, 1.0f, inv, s, TERN_BITS, codes);
        size_t m = gc_planes_stride(len);
        memset(codes + len, 0, 8 * m - len);
        gc_planes_pack(codes, len, TERN_BITS, out);
        out += TERN_BITS * m;
    }
}

static size_t terngrad_encode(const float *g, float *r, size_t n, const gc_params *p,
                              uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    const size_t size = body_size(n, p->bucket);
    if (cap < size) return GC_ERROR(DST_TOO_SMALL);
    size_t biggest = p->bucket < n ? p->bucket : n;
    uint8_t *codes = gc_ws_get(ws, GC_WS_A, 8 * gc_planes_stride(biggest));
    if (!codes) return GC_ERROR(ALLOC);
    gc_put_u32(dst, (uint32_t)p->bucket);
    uint8_t *scales = dst + GC_Q_BUCKET_FIELD;
    terngrad_encode_buckets(g, r, n, p->bucket, gc_key32(seed), scales,
                            scales + 4 * gc_bucket_count(n, p->bucket), codes);
    return size;
}

GC_VEC_CLONES
static size_t terngrad_decode_buckets(const uint8_t *scales, const uint8_t *in, size_t n,
                                      size_t bucket, float *acc, uint8_t *codes)
{
    const size_t nb = gc_bucket_count(n, bucket);
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        if (!gc_planes_unpack(in, len, TERN_BITS, codes)) return GC_ERROR(CORRUPT);
        in += gc_planes_bytes(len, TERN_BITS);
        gc_q_signmag_add(codes, len, TERN_BITS, gc_get_f32(scales + 4 * b), acc + i0);
    }
    return 0;
}

static size_t terngrad_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                                  gc_workspace *ws)
{
    size_t bucket = 0;
    size_t e = gc_q_open_body(src, len, n, body_size, &bucket);
    if (gc_is_error(e)) return e;
    size_t biggest = bucket < n ? bucket : n;
    uint8_t *codes = gc_ws_get(ws, GC_WS_A, 8 * gc_planes_stride(biggest));
    if (!codes) return GC_ERROR(ALLOC);
    const uint8_t *scales = src + GC_Q_BUCKET_FIELD;
    return terngrad_decode_buckets(scales, scales + 4 * gc_bucket_count(n, bucket), n, bucket,
                                   acc, codes);
}

const gc_codec gc_codec_terngrad = {
    .name = "terngrad",
    .id = GC_ID_TERNGRAD,
    .flags = GC_STOCHASTIC,
    .check = terngrad_check,
    .bound = terngrad_bound,
    .encode = terngrad_encode,
    .decode_add = terngrad_decode_add,
    .zero_sent = NULL,
};
