/* codec_fp16.cu — codecs/codec_fp16.c on the device: one 16-bit value
 * per element (IEEE binary16, round to nearest even), the residual v - decoded
 * (0 where the decoded value is not finite); the kernels, shared with codec_bf16.cu. */
#include "gpu_half.cuh"

__global__ void k_half_encode(const float *g, float *r, size_t n, uint16_t *out, int bf16)
{
    GRID_STRIDE(i, n) {
        float v = r ? gx_add(g[i], r[i]) : g[i];
        uint16_t q = bf16 ? bf16_from_float(v) : half_from_float(v);
        out[i] = q;
        if (r) r[i] = residual_of(v, bf16 ? float_from_bf16(q) : float_from_half(q));
    }
}

__global__ void k_half_decode(const uint16_t *in, float *acc, size_t n, int bf16)
{
    GRID_STRIDE(i, n) {
        uint16_t q = in[i];
        acc[i] = gx_add(acc[i], bf16 ? float_from_bf16(q) : float_from_half(q));
    }
}

void gpu_half_encode(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n, uint16_t *out,
                     int bf16)
{
    k_half_encode<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, r, n, out, bf16);
}

void gpu_half_decode_add(gcmpi_gpu_ctx *ctx, const uint16_t *in, float *acc, size_t n, int bf16)
{
    k_half_decode<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(in, acc, n, bf16);
}

static size_t fp16_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)s; (void)p; (void)seed;
    if (cap < 2 * n) return GC_ERR(DST_TOO_SMALL);
    if (n) gpu_half_encode(ctx, g, r, n, (uint16_t *)body, 0);
    return 2 * n;
}

static size_t fp16_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                              float *acc, size_t n)
{
    if (len < 2 * n) return GC_ERR(TRUNCATED);
    if (len > 2 * n) return GC_ERR(CORRUPT);
    if (n == 0) return 0;
    uint8_t *d = body_to_device(ctx, s, body, len);
    if (!d) return GC_ERR(ALLOC);
    gpu_half_decode_add(ctx, (const uint16_t *)d, acc, n, 0);
    return 0;
}

extern const gpu_codec gpu_codec_fp16;
const gpu_codec gpu_codec_fp16 = {ID_FP16, fp16_encode, fp16_decode_add};
