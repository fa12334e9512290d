/* codec_none.cu — codecs/codec_none.c on the device: the floats as they
 * are (v = g + r with error feedback, the residual then zero). */
#include "gpu_bucket.cuh"

__global__ void k_none_encode_ef(const float *g, float *r, size_t n, float *out)
{
    GRID_STRIDE(i, n) {
        float v = gx_add(g[i], r[i]);
        out[i] = v;
        r[i] = 0.0f;
    }
}

/* Four elements per thread, every pointer 16-byte aligned; nq = n / 4. */
__global__ void k_none_encode_ef4(const float *g, float *r, size_t nq, float *out)
{
    const vec4f zero = {0.0f, 0.0f, 0.0f, 0.0f};
    GRID_STRIDE(q, nq) {
        ((vec4f *)out)[q] = vec4_add(((const vec4f *)g)[q], ((const vec4f *)r)[q]);
        ((vec4f *)r)[q] = zero;
    }
}

__global__ void k_none_decode(const float *in, float *acc, size_t n)
{
    GRID_STRIDE(i, n) acc[i] = gx_add(acc[i], in[i]);
}

__global__ void k_none_decode4(const float *in, float *acc, size_t nq)
{
    GRID_STRIDE(q, nq) ((vec4f *)acc)[q] = vec4_add(((const vec4f *)acc)[q], ((const vec4f *)in)[q]);
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

static size_t none_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)s; (void)p; (void)seed;
    if (cap < 4 * n) return GC_ERR(DST_TOO_SMALL);
    if (n == 0) return 0;
    float *out = (float *)body;
    if (!r) {
        if (cudaMemcpyAsync(body, g, 4 * n, cudaMemcpyDeviceToDevice, ctx->stream) != cudaSuccess)
            return GC_ERR(GENERIC);
        return 4 * n;
    }
    size_t done = 0;
    if (n >= 4 && aligned16(g) && aligned16(r) && aligned16(out)) {
        const size_t nq = n / 4;
        k_none_encode_ef4<<<blocks_for(nq, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, r, nq, out);
        done = 4 * nq;
    }
    if (done < n)
        k_none_encode_ef<<<blocks_for(n - done, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g + done, r + done, n - done, out + done);
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
    const float *in = (const float *)d;
    size_t done = 0;
    if (n >= 4 && aligned16(in) && aligned16(acc)) {
        const size_t nq = n / 4;
        k_none_decode4<<<blocks_for(nq, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(in, acc, nq);
        done = 4 * nq;
    }
    if (done < n)
        k_none_decode<<<blocks_for(n - done, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(in + done, acc + done, n - done);
    return 0;
}

extern const gpu_codec gpu_codec_none;
const gpu_codec gpu_codec_none = {ID_NONE, none_encode, none_decode_add};
