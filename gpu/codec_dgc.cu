/* codec_dgc.cu — codecs/codec_dgc.c on the device: the top-k threshold
 * estimated from one random sample per stratum (the CPU's splitmix64
 * stream: draw j uses state seed + (j + 1) * golden, so every draw is
 * computed independently), every element with |v| at or above it sent
 * when their count c lies in [lo, hi], else the exact top-k of v. Where
 * the CPU takes the top-k among the c candidates (c > hi) the result is
 * the exact top-k of v as well (c >= k elements reach the threshold), so
 * one exact path serves both misses. */
#include "gpu_select.cuh"
#include "gpu_sparse.cuh"

#define DGC_MIN_SAMPLES 1024u

static size_t dgc_hi(size_t n, size_t k, const gc_params *p)
{
    double hi = floor((double)k * (1.0 + p->dgc_tolerance));
    return hi >= (double)n ? n : (size_t)hi;
}

static size_t dgc_lo(size_t k, const gc_params *p)
{
    double lo = ceil((double)k * (1.0 - p->dgc_tolerance));
    return lo < 1.0 ? 1 : (size_t)lo;
}

static size_t dgc_samples(size_t n, const gc_params *p)
{
    double s = ceil(p->dgc_sample * (double)n);
    size_t floor_s = n < DGC_MIN_SAMPLES ? n : DGC_MIN_SAMPLES;
    if (s >= (double)n) return n;
    return (size_t)s > floor_s ? (size_t)s : floor_s;
}

/* Sample j: stratum [floor(j n / s), floor((j + 1) n / s)) (n < 2^32, so
 * j n fits in 64 bits), index by Lemire's multiply (gc_rand_below), key of
 * v there. */
__global__ void k_dgc_sample(const float *v, size_t n, size_t s, uint64_t seed, uint32_t *keys)
{
    GRID_STRIDE(j, s) {
        const uint64_t lo = (uint64_t)j * n / s, width = (uint64_t)(j + 1) * n / s - lo;
        const uint64_t i = lo + __umul64hi(splitmix_at(seed, j), width);
        keys[j] = mag_key(v[i]);
    }
}

static size_t dgc_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                         const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    if (n > UINT32_MAX) return GC_ERR(PARAM);  /* indices are 32-bit */
    const size_t k = kept_count(n, p->ratio), hi = dgc_hi(n, k, p);
    if (cap < sparse_body_bound(n, hi)) return GC_ERR(DST_TOO_SMALL);
    cudaStream_t st = ctx->stream;
    if (r) gpu_accumulate(ctx, g, r, n);
    const float *v = r ? r : g;
    const size_t ns = dgc_samples(n, p);
    uint32_t *idx = (uint32_t *)scratch_get(ctx, s, (hi > k ? hi : k ? k : 1) * sizeof(uint32_t));
    if (!idx) return GC_ERR(ALLOC);
    size_t e;
    if (ns < n) {
        uint32_t *keys = (uint32_t *)scratch_get(ctx, s, ns * sizeof(uint32_t));
        gpu_sel *sel = (gpu_sel *)scratch_get(ctx, s, sizeof(gpu_sel));
        if (!keys || !sel) return GC_ERR(ALLOC);
        k_dgc_sample<<<blocks_for(ns, GPU_THREADS), GPU_THREADS, 0, st>>>(v, n, ns, seed, keys);
        e = gpu_select_threshold(ctx, s, NULL, keys, ns, kept_count(ns, p->ratio), sel);
        if (gc_is_error(e)) return e;
        gpu_select_all_ties(ctx, sel);
        /* One pass writes up to hi candidates and counts them all: when
         * the count is in range they are the selection, else they are
         * dropped for the exact top-k. */
        size_t c = 0;
        e = gpu_select_compact(ctx, s, v, n, sel, idx, hi, &c);
        if (gc_is_error(e)) return e;
        if (c >= dgc_lo(k, p) && c <= hi) return gpu_sparse_body_write(ctx, s, idx, c, v, r, n, body, cap);
    }
    e = gpu_topk_indices(ctx, s, v, n, k, idx);
    if (gc_is_error(e)) return e;
    return gpu_sparse_body_write(ctx, s, idx, k, v, r, n, body, cap);
}

extern const gpu_codec gpu_codec_dgc;
const gpu_codec gpu_codec_dgc = {
    ID_DGC,
    dgc_encode,
    gpu_sparse_decode_add,
};
