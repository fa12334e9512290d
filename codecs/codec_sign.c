/* codec_sign.c — scaled sign compression of EF-signSGD (Karimireddy et al.,
 * 2019): per bucket, one sign bit per element and the scale
 * ||v||_1 / L, so that D(v) = (||v||_1 / L) sign(v). It is biased; the
 * error-feedback residual r = v - D(v) is what makes it converge.
 *
 * sign(v) is + for v >= 0 (including -0) and - otherwise. The scale is the
 * float32 of a sum in a fixed order (quant_common.h) over L.
 *
 * Body (little-endian):
 *     u32 bucket
 *     f32 scale[nb]          nb = ceil(n / bucket)
 *     per bucket of L elements, one bit plane (quant_common.h) of
 *     ceil(L/8) bytes, bit set for +
 * Bits per element: 1 + 32/bucket (a partial last bucket pads to 8). */
#include "quant_common.h"

static size_t sign_check(const gc_params *p, char *msg, size_t msglen)
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
    return GC_Q_BUCKET_FIELD + 4 * gc_bucket_count(n, bucket) + bits_bytes(n, bucket);
}

static size_t sign_bound(size_t n, const gc_params *p)
{
    return body_size(n, p->bucket);
}

GC_VEC_CLONES
static void sign_encode_buckets(const float *g, float *r, size_t n, size_t bucket,
                                uint8_t *scales, uint8_t *out)
{
    const size_t nb = gc_bucket_count(n, bucket);
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        float *rb = r ? r + i0 : NULL;
        float scale = (float)(gc_q_sum_pow(g + i0, rb, len, 1) / (double)len);
        gc_put_f32(scales + 4 * b, scale);
        gc_q_prefetch_next(g, r, i0 + len, n);
        gc_q_bits_encode(g + i0, rb, len, scale, -scale, out);
        out += gc_planes_stride(len);
    }
}

static size_t sign_encode(const float *g, float *r, size_t n, const gc_params *p,
                          uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)seed; (void)ws;
    const size_t size = body_size(n, p->bucket);
    if (cap < size) return GC_ERROR(DST_TOO_SMALL);
    gc_put_u32(dst, (uint32_t)p->bucket);
    uint8_t *scales = dst + GC_Q_BUCKET_FIELD;
    sign_encode_buckets(g, r, n, p->bucket, scales, scales + 4 * gc_bucket_count(n, p->bucket));
    return size;
}

GC_VEC_CLONES
static size_t sign_decode_buckets(const uint8_t *scales, size_t n, size_t bucket, float *acc)
{
    return gc_q_sign_buckets_decode_add(scales, false, n, bucket, acc);
}

static size_t sign_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                              gc_workspace *ws)
{
    (void)ws;
    size_t bucket = 0;
    size_t e = gc_q_open_body(src, len, n, body_size, &bucket);
    if (gc_is_error(e)) return e;
    return sign_decode_buckets(src + GC_Q_BUCKET_FIELD, n, bucket, acc);
}

const gc_codec gc_codec_sign = {
    .name = "sign",
    .id = GC_ID_SIGN,
    .flags = 0,
    .check = sign_check,
    .bound = sign_bound,
    .encode = sign_encode,
    .decode_add = sign_decode_add,
    .zero_sent = NULL,
};
