/* codec_fp16.cu — codecs/codec_fp16.c on the device: one 16-bit value
 * per element (IEEE binary16, round to nearest even), the residual v - decoded
 * (0 where the decoded value is not finite); the kernels, shared with codec_bf16.cu. */
#include "gpu_bucket.cuh"
#include "gpu_half.cuh"

/* The 16-bit code of v, and its residual into *res. */
__device__ static inline uint16_t half_code(float v, int bf16, float *res)
{
    const uint16_t q = bf16 ? bf16_from_float(v) : half_from_float(v);
    *res = residual_of(v, bf16 ? float_from_bf16(q) : float_from_half(q));
    return q;
}

__device__ static inline float half_value(uint16_t q, int bf16)
{
    return bf16 ? float_from_bf16(q) : float_from_half(q);
}

/* check: as tile_load's (gpu_bucket.cuh), with no residual only. */
__global__ void k_half_encode(const float *g, float *r, size_t n, uint16_t *out, int bf16,
                              unsigned *check)
{
    bool bad = false;
    GRID_STRIDE(i, n) {
        if (check) bad |= bits_nonfinite(fbits(g[i]));
        float v = r ? gx_add(g[i], r[i]) : g[i], res;
        out[i] = half_code(v, bf16, &res);
        if (r) r[i] = res;
    }
    if (bad) *check = 1u;
}

/* Four codes as one 8-byte store. */
struct alignas(8) half4 { uint16_t h[4]; };

/* Four elements per thread: g and r (16-byte aligned) in 16-byte loads,
 * out (8-byte aligned) in 8-byte stores; nq = n / 4 quads. */
__global__ void k_half_encode4(const float *g, float *r, size_t nq, uint16_t *out, int bf16,
                               unsigned *check)
{
    bool bad = false;
    GRID_STRIDE(q, nq) {
        vec4f v = ((const vec4f *)g)[q], res;
        if (check)
            bad |= bits_nonfinite(fbits(v.x)) | bits_nonfinite(fbits(v.y))
                   | bits_nonfinite(fbits(v.z)) | bits_nonfinite(fbits(v.w));
        if (r) v = vec4_add(v, ((const vec4f *)r)[q]);
        half4 h;
        h.h[0] = half_code(v.x, bf16, &res.x);
        h.h[1] = half_code(v.y, bf16, &res.y);
        h.h[2] = half_code(v.z, bf16, &res.z);
        h.h[3] = half_code(v.w, bf16, &res.w);
        ((half4 *)out)[q] = h;
        if (r) ((vec4f *)r)[q] = res;
    }
    if (bad) *check = 1u;
}

__global__ void k_half_decode(const uint16_t *in, float *acc, size_t n, int bf16)
{
    GRID_STRIDE(i, n) acc[i] = gx_add(acc[i], half_value(in[i], bf16));
}

/* Four elements per thread (in 8-byte, acc 16-byte aligned). */
__global__ void k_half_decode4(const uint16_t *in, float *acc, size_t nq, int bf16)
{
    GRID_STRIDE(q, nq) {
        const half4 h = ((const half4 *)in)[q];
        vec4f a = ((vec4f *)acc)[q];
        a.x = gx_add(a.x, half_value(h.h[0], bf16));
        a.y = gx_add(a.y, half_value(h.h[1], bf16));
        a.z = gx_add(a.z, half_value(h.h[2], bf16));
        a.w = gx_add(a.w, half_value(h.h[3], bf16));
        ((vec4f *)acc)[q] = a;
    }
}

static int aligned(const void *p, uintptr_t to) { return ((uintptr_t)p & (to - 1)) == 0; }

void gpu_half_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                     uint16_t *out, int bf16)
{
    unsigned *check = encode_check(s, r);
    size_t done = 0;
    if (n >= 4 && aligned(g, 16) && aligned(r, 16) && aligned(out, 8)) {
        const size_t nq = n / 4;
        k_half_encode4<<<blocks_for(nq, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, r, nq, out, bf16, check);
        done = 4 * nq;
    }
    if (done < n)
        k_half_encode<<<blocks_for(n - done, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g + done, r ? r + done : NULL, n - done, out + done, bf16, check);
}

void gpu_half_decode_add(gcmpi_gpu_ctx *ctx, const uint16_t *in, float *acc, size_t n, int bf16)
{
    size_t done = 0;
    if (n >= 4 && aligned(in, 8) && aligned(acc, 16)) {
        const size_t nq = n / 4;
        k_half_decode4<<<blocks_for(nq, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(in, acc, nq, bf16);
        done = 4 * nq;
    }
    if (done < n)
        k_half_decode<<<blocks_for(n - done, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(in + done, acc + done, n - done, bf16);
}

static size_t fp16_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)p; (void)seed;
    if (cap < 2 * n) return GC_ERR(DST_TOO_SMALL);
    if (n) gpu_half_encode(ctx, s, g, r, n, (uint16_t *)body, 0);
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
