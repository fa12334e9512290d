/* codec_none.cu — codecs/codec_none.c on the device: the floats as they
 * are (v = g + r with error feedback, the residual then zero). */
#include "gpu_internal.cuh"

__global__ void k_none_encode_ef(const float *g, float *r, size_t n, float *out)
{
    GRID_STRIDE(i, n) {
        float v = gx_add(g[i], r[i]);
        out[i] = v;
        r[i] = 0.0f;
    }
}

__global__ void k_none_decode(const float *in, float *acc, size_t n)
{
    GRID_STRIDE(i, n) acc[i] = gx_add(acc[i], in[i]);
}

static size_t none_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)s; (void)p; (void)seed;
    if (cap < 4 * n) return GC_ERR(DST_TOO_SMALL);
    if (n == 0) return 0;
    if (r)
        k_none_encode_ef<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, r, n, (float *)body);
    else if (cudaMemcpyAsync(body, g, 4 * n, cudaMemcpyDeviceToDevice, ctx->stream) != cudaSuccess)
        return GC_ERR(GENERIC);
    return 4 * n;
}

static size_t none_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                              float *acc, size_t n)
{
    if (len < 4 * n) return GC_ERR(TRUNCATED);
    if (len > 4 * n) return GC_ERR(CORRUPT);
    if (n == 0) return 0;
    uint8_t *d = body_to_device(ctx, s, body, len);
    if (!d) return GC_ERR(ALLOC);
    k_none_decode<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>((const float *)d, acc, n);
    return 0;
}

extern const gpu_codec gpu_codec_none;
const gpu_codec gpu_codec_none = {ID_NONE, none_encode, none_decode_add};
