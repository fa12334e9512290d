/* gpu_adapt.cu — the adaptive layer's element passes on device buffers
 * (codecs/adapt/, gc_adapt.h "the history kept apart"): EDGC's sample
 * gathered on the device, GCT's shaping against the history, the history
 * remembered, and the variance method's two sums in gc_var_moves' fixed
 * order. The scalar steps stay on the host in codecs/adapt/; with these,
 * a device buffer's history never leaves the device and is adapted bit for
 * bit as the same buffer on the host. */
#include "gpu_internal.cuh"

extern "C" {
#include "adapt/gc_adapt.h"
}

/* edgc.c's splitmix64 finaliser (edgc_mix). */
__device__ static inline uint64_t adapt_mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* sample[j] = x[index j] of edgc.c's stratified sample: m strata, stratum
 * j of length q + (j < r) starting at j q + min(j, r), one index drawn in
 * each from (seed, j). */
__global__ void k_adapt_sample(const float *x, size_t m, size_t q, size_t r, uint64_t seed,
                               float *sample)
{
    GRID_STRIDE(j, m) {
        const size_t start = j * q + (j < r ? j : r);
        const size_t len = q + (j < r);
        sample[j] = x[start + (size_t)(adapt_mix(seed ^ adapt_mix(j)) % len)];
    }
}

/* gct.c's gct_element: Eq. 9 (eq9) or Algorithm 2, one rounding per
 * operation as the CPU's loop; a non-finite result sends g. */
__global__ void k_adapt_gct(const float *g, const float *prev, float *out, size_t n, float c,
                            float eps, int eq9)
{
    GRID_STRIDE(i, n) {
        const float gi = g[i], p = prev[i];
        const float den = gx_add(p, p >= 0.0f ? eps : -eps);
        const float h_lr = gx_sub(1.0f, gx_div(gi, den));
        const float sign = (float)(gi > 0.0f) - (float)(gi < 0.0f);
        const float o = gx_add(gi, gx_mul(gx_mul(c, eq9 ? sign : 1.0f), h_lr));
        out[i] = gx_abs(o) <= 3.40282347e+38f ? o : gi;
    }
}

/* prev[i] = sum[i] / ranks (gc_gct_remember: a division). */
__global__ void k_adapt_remember(const float *sum, size_t n, float ranks, float *prev)
{
    GRID_STRIDE(i, n) prev[i] = gx_div(sum[i], ranks);
}

/* One block of GC_VAR_LANES threads per chunk of GC_VAR_CHUNK elements:
 * lane l sums the chunk's elements l, l + LANES, ... in order, the lanes
 * are halved pairwise, and part[2 chunk], part[2 chunk + 1] receive the
 * chunk's moved and norm; prev becomes the mean. */
__global__ void k_adapt_var_lanes_sync(const float *sum, size_t n, float ranks, float *prev,
                                       double *part)
{
    __shared__ double lm[GC_VAR_LANES], ln[GC_VAR_LANES];
    const unsigned l = threadIdx.x;
    const size_t chunks = (n + GC_VAR_CHUNK - 1) / GC_VAR_CHUNK;
    for (size_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        const size_t base = chunk * GC_VAR_CHUNK;
        const size_t len = n - base < GC_VAR_CHUNK ? n - base : GC_VAR_CHUNK;
        double mv = 0.0, nm = 0.0;
        for (size_t k = l; k < len; k += GC_VAR_LANES) {
            const size_t i = base + k;
            const float m = gx_div(sum[i], ranks);
            const double p = (double)prev[i];
            const double d = __dsub_rn((double)m, p);
            mv = __dadd_rn(mv, __dmul_rn(d, d));
            nm = __dadd_rn(nm, __dmul_rn(p, p));
            prev[i] = m;
        }
        lm[l] = mv;
        ln[l] = nm;
        for (unsigned half = GC_VAR_LANES / 2; half > 0; half /= 2) {
            __syncthreads();
            if (l < half) {
                lm[l] = __dadd_rn(lm[l], lm[l + half]);
                ln[l] = __dadd_rn(ln[l], ln[l + half]);
            }
        }
        __syncthreads();
        if (l == 0) {
            part[2 * chunk] = lm[0];
            part[2 * chunk + 1] = ln[0];
        }
        __syncthreads(); /* lm, ln are rewritten by the next chunk */
    }
}

/* The chunks' sums added in chunk order (one thread: a few thousand adds
 * per 10^7 elements, against a pass over the whole buffer before it). */
__global__ void k_adapt_var_total(const double *part, size_t chunks, double *out)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double mv = 0.0, nm = 0.0;
    for (size_t c = 0; c < chunks; c++) {
        mv = __dadd_rn(mv, part[2 * c]);
        nm = __dadd_rn(nm, part[2 * c + 1]);
    }
    out[0] = mv;
    out[1] = nm;
}

extern "C" size_t gcmpi_gpu_adapt_sample(gcmpi_gpu_ctx *ctx, const float *x, size_t n,
                                         size_t m, uint64_t seed, float *sample)
{
    if (!ctx || m > n) return GC_ERR(GENERIC);
    if (m == 0) return 0;
    if (m == n) return fetch(ctx, sample, x, n * sizeof(float)); /* every element, in order */
    scratch s;
    memset(&s, 0, sizeof s);
    size_t e = 0;
    float *d = (float *)scratch_get(ctx, &s, m * sizeof(float));
    if (!d) e = GC_ERR(ALLOC);
    if (!gc_is_error(e))
        k_adapt_sample<<<blocks_for(m, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(x, m, n / m, n % m, seed, d);
    queue_copy(ctx, sample, d, m * sizeof(float), cudaMemcpyDeviceToHost, &e);
    return release_and_wait(ctx, &s, e);
}

extern "C" size_t gcmpi_gpu_adapt_gct_shape(gcmpi_gpu_ctx *ctx, const float *g, const float *prev,
                                            size_t n, int with_prev, float c, float eps, int eq9,
                                            float *out)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (n == 0) return 0;
    size_t e = 0;
    if (!with_prev) {
        if (out != g) queue_copy(ctx, out, g, n * sizeof(float), cudaMemcpyDeviceToDevice, &e);
    } else {
        k_adapt_gct<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, prev, out, n, c, eps, eq9);
    }
    const size_t done = sync_status(ctx);
    return gc_is_error(e) ? e : done;
}

extern "C" size_t gcmpi_gpu_adapt_remember(gcmpi_gpu_ctx *ctx, const float *sum, size_t n,
                                           int ranks, float *prev)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (n == 0) return 0;
    const float r = (float)(ranks > 0 ? ranks : 1);
    k_adapt_remember<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(sum, n, r, prev);
    return sync_status(ctx);
}

extern "C" size_t gcmpi_gpu_adapt_var_moves(gcmpi_gpu_ctx *ctx, const float *sum, size_t n,
                                            int ranks, float *prev, double *moved, double *norm)
{
    if (!ctx || !moved || !norm) return GC_ERR(GENERIC);
    *moved = *norm = 0.0;
    if (n == 0) return 0;
    const float r = (float)(ranks > 0 ? ranks : 1);
    const size_t chunks = (n + GC_VAR_CHUNK - 1) / GC_VAR_CHUNK;
    scratch s;
    memset(&s, 0, sizeof s);
    size_t e = 0;
    double *part = (double *)scratch_get(ctx, &s, (2 * chunks + 2) * sizeof(double));
    if (!part) e = GC_ERR(ALLOC);
    double both[2] = {0.0, 0.0};
    if (!gc_is_error(e)) {
        const unsigned grid = chunks < 65535u * 16u ? (unsigned)chunks : 65535u * 16u;
        k_adapt_var_lanes_sync<<<grid, GC_VAR_LANES, 0, ctx->stream>>>(sum, n, r, prev, part);
        k_adapt_var_total<<<1, 1, 0, ctx->stream>>>(part, chunks, part + 2 * chunks);
        queue_copy(ctx, both, part + 2 * chunks, sizeof both, cudaMemcpyDeviceToHost, &e);
    }
    e = release_and_wait(ctx, &s, e);
    if (gc_is_error(e)) return e;
    *moved = both[0];
    *norm = both[1];
    return 0;
}
