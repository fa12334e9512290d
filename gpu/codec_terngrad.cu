/* codec_terngrad.cu — codecs/codec_terngrad.c on the device: per bucket
 * scale s = max |v| (gpu_bucket.cuh), levels {-1, 0, 1} drawn with the
 * CPU's random numbers (u < |v| / s), two bit planes per bucket. */
#include "gpu_bucket.cuh"
#include "gpu_planes.cuh"

#define TERN_BITS 2

static size_t codes_bytes(size_t n, size_t bucket)
{
    const size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * TERN_BITS * planes_stride(bucket)
        + TERN_BITS * planes_stride(bucket_len(n, bucket, nb - 1));
}

static size_t body_size(size_t n, size_t bucket)
{
    return BUCKET_FIELD + 4 * bucket_count(n, bucket) + codes_bytes(n, bucket);
}

/* scale = max |v|; inv = 1 / scale (0 when scale is not > 0); step = scale. */
__global__ void k_tern_scales(const uint32_t *amax, size_t nb, uint32_t bucket, uint8_t *body,
                              float *inv, float *step)
{
    GRID_STRIDE(b, nb) {
        const float sc = bitsf(amax[b]);
        st_f32(body + BUCKET_FIELD + 4 * b, sc);
        inv[b] = sc > 0.0f ? gx_div(1.0f, sc) : 0.0f;
        step[b] = sc;
        if (b == 0) st_u32(body, bucket);
    }
}

static size_t terngrad_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                              const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket), size = body_size(n, bucket);
    if (cap < size) return GC_ERR(DST_TOO_SMALL);
    if (nb == 0) {
        gpu_bucket_field(ctx, body, bucket);
        return size;
    }
    if (tile_fits(bucket)) {
        gpu_signmag_encode_tiles(ctx, g, r, n, bucket, TERN_BITS, 1.0f, key32(seed), STAT_ABSMAX,
                                 body, body + BUCKET_FIELD, body + BUCKET_FIELD + 4 * nb, NULL, encode_check(s, r));
        return size;
    }
    uint32_t *amax = (uint32_t *)scratch_get(ctx, s, 4 * nb);
    float *inv = (float *)scratch_get(ctx, s, 4 * nb), *step = (float *)scratch_get(ctx, s, 4 * nb);
    if (!amax || !inv || !step) return GC_ERR(ALLOC);
    gpu_bucket_absmax(ctx, g, r, n, bucket, amax);
    k_tern_scales<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        amax, nb, (uint32_t)bucket, body, inv, step);
    gpu_signmag_encode(ctx, g, r, n, bucket, TERN_BITS, 1.0f, key32(seed), inv, step,
                       body + BUCKET_FIELD + 4 * nb, NULL);
    return size;
}

__global__ void k_tern_steps(const uint8_t *scales, size_t nb, float *step)
{
    GRID_STRIDE(b, nb) step[b] = ld_f32(scales + 4 * b);
}

static size_t terngrad_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body,
                                  size_t len, float *acc, size_t n)
{
    size_t bucket = 0;
    uint8_t *d = NULL;
    size_t e = bucketed_decode_begin(ctx, s, body, len, n, body_size, &bucket, &d);
    if (e) return e == DECODE_NOTHING ? 0 : e;
    const size_t nb = bucket_count(n, bucket);
    float *step = (float *)scratch_get(ctx, s, 4 * nb);
    if (!step) return GC_ERR(ALLOC);
    k_tern_steps<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(d + BUCKET_FIELD,
                                                                               nb, step);
    gpu_signmag_decode_add(ctx, d + BUCKET_FIELD + 4 * nb, n, bucket, TERN_BITS, step, acc,
                           ctx->flag);
    return flag_result(ctx);
}

extern const gpu_codec gpu_codec_terngrad;
const gpu_codec gpu_codec_terngrad = {ID_TERNGRAD, terngrad_encode, terngrad_decode_add};
