/* codec_int8.cu — codecs/codec_int8.c on the device: per bucket
 * scale = max |v| / 127, codes round(v 127 / max) in [-127, 127]; -128 is
 * a corrupt code. */
#include "gpu_internal.cuh"

static size_t body_size(size_t n, size_t bucket) { return BUCKET_FIELD + 4 * bucket_count(n, bucket) + n; }

/* One block per bucket: v = g + r into r (when r), max |v| as bits (order
 * free), scale = amax / 127 into the body, inv = 127 / amax (0 when amax is
 * not > 0) into inv[]. Block 0 writes the bucket field. */
#define AMAX_THREADS 256
__global__ void k_int8_scales(const float *g, float *r, size_t n, size_t bucket,
                              uint8_t *body, float *inv)
{
    __shared__ uint32_t red[AMAX_THREADS];
    const size_t b = blockIdx.x, i0 = b * bucket, len = bucket_len(n, bucket, b);
    uint32_t m = 0;
    for (size_t i = threadIdx.x; i < len; i += blockDim.x) {
        float v;
        if (r) {
            v = gx_add(g[i0 + i], r[i0 + i]);
            r[i0 + i] = v;
        } else {
            v = g[i0 + i];
        }
        uint32_t a = fbits(v) & 0x7FFFFFFFu;
        m = a > m ? a : m;
    }
    red[threadIdx.x] = m;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w && red[threadIdx.x + w] > red[threadIdx.x])
            red[threadIdx.x] = red[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float amax = bitsf(red[0]);
        float *scales = (float *)(body + BUCKET_FIELD);
        scales[b] = gx_div(amax, 127.0f);
        inv[b] = amax > 0.0f ? gx_div(127.0f, amax) : 0.0f;
        if (b == 0) *(uint32_t *)body = (uint32_t)bucket;
    }
}

__global__ void k_int8_quant(const float *g, float *r, size_t n, size_t bucket,
                             const float *scales, const float *inv, int8_t *q)
{
    GRID_STRIDE(i, n) {
        const size_t b = i / bucket;
        float v = r ? r[i] : g[i];
        float x = round_even_small(clamp_abs(gx_mul(v, inv[b]), 127.0f));
        q[i] = (int8_t)(int32_t)x;
        if (r) r[i] = gx_sub(v, gx_mul(x, scales[b]));
    }
}

__global__ void k_int8_decode(const float *scales, const int8_t *q, size_t n, size_t bucket,
                              float *acc, unsigned *bad)
{
    GRID_STRIDE(i, n) {
        int8_t c = q[i];
        if (c == -128) atomicOr(bad, 1u);
        acc[i] = gx_add(acc[i], gx_mul((float)c, scales[i / bucket]));
    }
}

__global__ void k_int8_field(uint8_t *body, uint32_t bucket) { st_u32(body, bucket); }

static size_t int8_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)seed;
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket), size = body_size(n, bucket);
    if (cap < size) return GC_ERR(DST_TOO_SMALL);
    cudaStream_t st = ctx->stream;
    if (nb == 0) {
        k_int8_field<<<1, 1, 0, st>>>(body, (uint32_t)bucket);
        return size;
    }
    float *inv = (float *)scratch_get(ctx, s, 4 * nb);
    if (!inv) return GC_ERR(ALLOC);
    if (nb > 0x7FFFFFFFu) return GC_ERR(GENERIC);
    k_int8_scales<<<(unsigned)nb, AMAX_THREADS, 0, st>>>(g, r, n, bucket, body, inv);
    const float *scales = (const float *)(body + BUCKET_FIELD);
    k_int8_quant<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n, bucket, scales, inv,
                                                     (int8_t *)(body + BUCKET_FIELD + 4 * nb));
    return size;
}

static size_t int8_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                              float *acc, size_t n)
{
    if (len < BUCKET_FIELD) return GC_ERR(TRUNCATED);
    const uint32_t bf = get_u32(body);
    if (bf < 1 || bf > (UINT32_C(1) << 31)) return GC_ERR(CORRUPT);
    const size_t bucket = bf, nb = bucket_count(n, bucket), want = body_size(n, bucket);
    if (len < want) return GC_ERR(TRUNCATED);
    if (len > want) return GC_ERR(CORRUPT);
    if (n == 0) return 0;
    uint8_t *d = body_to_device(ctx, s, body, len);
    if (!d) return GC_ERR(ALLOC);
    size_t e = flag_clear(ctx);
    if (gc_is_error(e)) return e;
    k_int8_decode<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        (const float *)(d + BUCKET_FIELD), (const int8_t *)(d + BUCKET_FIELD + 4 * nb), n, bucket,
        acc, ctx->flag);
    return flag_result(ctx);
}

extern const gpu_codec gpu_codec_int8;
const gpu_codec gpu_codec_int8 = {ID_INT8, int8_encode, int8_decode_add};
