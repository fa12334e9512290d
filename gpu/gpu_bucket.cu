/* gpu_bucket.cu — per-bucket reductions (gpu_bucket.cuh). */
#include "gpu_bucket.cuh"

__device__ static inline float sum_term(float v, int what)
{
    switch (what) {
    case SUM_ABS: return gx_abs(v);
    case SUM_SQUARE: return gx_mul(v, v);
    case SUM_NONNEG: return v >= 0.0f ? v : 0.0f;
    default: return v >= 0.0f ? 0.0f : v;
    }
}

/* Chunk c = (bucket c / cpb, chunk c % cpb); 16 threads per chunk, thread
 * j sums elements j, j+16, ... in order from 0.0f (gc_q_chunk_sum_pow's
 * lanes), then lanes combine pairwise, lane j += lane j+w for w = 8, 4, 2,
 * 1 (gc_q_lanes_total). A 16-lane group never straddles a warp, and every
 * thread reaches the shuffles. */
__global__ void k_chunk_sums_sync(const float *g, float *r, size_t n, size_t bucket, size_t cpb,
                                  size_t nchunks, int what, float *chunk_sum)
{
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t c = t / Q_LANES, j = t % Q_LANES;
    size_t start = 0, clen = 0;
    if (c < nchunks) {
        const size_t b = c / cpb, cc = c % cpb, len = bucket_len(n, bucket, b);
        if (cc * Q_CHUNK < len) {
            start = b * bucket + cc * Q_CHUNK;
            clen = len - cc * Q_CHUNK < Q_CHUNK ? len - cc * Q_CHUNK : Q_CHUNK;
        }
    }
    float sum = 0.0f;
    for (size_t i = j; i < clen; i += Q_LANES) {
        float v;
        if (r) {
            v = gx_add(g[start + i], r[start + i]);
            r[start + i] = v;
        } else {
            v = g[start + i];
        }
        sum = gx_add(sum, sum_term(v, what));
    }
    for (unsigned w = 8; w > 0; w /= 2) {
        float o = __shfl_down_sync(0xFFFFFFFFu, sum, w);
        sum = gx_add(sum, o);
    }
    if (j == 0 && clen > 0) chunk_sum[c] = sum;
}

/* Chunk sums of a bucket added in order in double (gc_q_sum_pow). */
__global__ void k_bucket_totals(size_t n, size_t bucket, size_t cpb, size_t nb,
                                const float *chunk_sum, double *total, uint32_t *nan)
{
    GRID_STRIDE(b, nb) {
        const size_t len = bucket_len(n, bucket, b), nc = (len + Q_CHUNK - 1) / Q_CHUNK;
        double t = 0;
        uint32_t first_nan = 0;
        for (size_t cc = 0; cc < nc; cc++) {
            float f = chunk_sum[b * cpb + cc];
            if (!first_nan && is_nan(f)) first_nan = fbits(f) | 0x00400000u;
            t = __dadd_rn(t, (double)f);
        }
        total[b] = t;
        nan[b] = first_nan;
    }
}

size_t gpu_bucket_sums(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                       size_t bucket, int what, gpu_sums *out)
{
    const size_t nb = bucket_count(n, bucket), cpb = (bucket + Q_CHUNK - 1) / Q_CHUNK;
    const size_t nchunks = nb * cpb;
    float *chunk_sum = (float *)scratch_get(ctx, s, 4 * nchunks);
    out->total = (double *)scratch_get(ctx, s, 8 * nb);
    out->nan = (uint32_t *)scratch_get(ctx, s, 4 * nb);
    if (!chunk_sum || !out->total || !out->nan) return GC_ERR(ALLOC);
    const size_t blocks = (nchunks * Q_LANES + GPU_THREADS - 1) / GPU_THREADS;
    if (blocks > 0x7FFFFFFFu) return GC_ERR(GENERIC);
    k_chunk_sums_sync<<<(unsigned)blocks, GPU_THREADS, 0, ctx->stream>>>(g, r, n, bucket, cpb,
                                                                         nchunks, what, chunk_sum);
    k_bucket_totals<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        n, bucket, cpb, nb, chunk_sum, out->total, out->nan);
    return 0;
}

/* One block per bucket (gc_q_absmax_bits). */
#define AMAX_THREADS 256
__global__ void k_bucket_absmax_sync(const float *g, float *r, size_t n, size_t bucket,
                                     uint32_t *amax)
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
    if (threadIdx.x == 0) amax[b] = red[0];
}

void gpu_bucket_absmax(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n, size_t bucket,
                       uint32_t *amax)
{
    const size_t nb = bucket_count(n, bucket);
    if (nb) k_bucket_absmax_sync<<<(unsigned)nb, AMAX_THREADS, 0, ctx->stream>>>(g, r, n, bucket, amax);
}

__global__ void k_bucket_count_nonneg(const float *v, size_t n, size_t bucket, size_t nb,
                                      uint32_t *count)
{
    GRID_STRIDE(b, nb) {
        const size_t i0 = b * bucket, len = bucket_len(n, bucket, b);
        uint32_t c = 0;
        for (size_t i = 0; i < len; i++) c += v[i0 + i] >= 0.0f;
        count[b] = c;
    }
}

void gpu_bucket_count_nonneg(gcmpi_gpu_ctx *ctx, const float *v, size_t n, size_t bucket,
                             uint32_t *count)
{
    const size_t nb = bucket_count(n, bucket);
    if (nb) k_bucket_count_nonneg<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        v, n, bucket, nb, count);
}

/* The body's bucket field alone (an empty vector still has one). */
__global__ void k_bucket_field(uint8_t *body, uint32_t bucket) { st_u32(body, bucket); }

void gpu_bucket_field(gcmpi_gpu_ctx *ctx, uint8_t *body, size_t bucket)
{
    k_bucket_field<<<1, 1, 0, ctx->stream>>>(body, (uint32_t)bucket);
}
