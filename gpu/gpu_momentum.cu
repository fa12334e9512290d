/* gpu_momentum.cu — GCMPI_MOMENTUM on device buffers (gcmpi_gpu.h,
 * "transparent momentum correction"): codecs/momentum.c's two loops as
 * kernels with the same roundings (one multiply, then one add or
 * subtract, no fused multiply-add: gpu_internal.cuh), so the momentum a
 * GPU rank keeps is bit for bit the one a CPU rank keeps, and the test
 * that decides whether they may run (an overflow step must not enter the
 * momentum). */
#include "gpu_internal.cuh"

__global__ void k_momentum_nonfinite(const float *g, size_t n, unsigned *flag)
{
    GRID_STRIDE(i, n) if ((fbits(g[i]) & 0x7F800000u) == 0x7F800000u) *flag = 1u;
}

/* u = beta*u + g (gc_momentum_accumulate) */
__global__ void k_momentum_accumulate(float *u, const float *g, size_t n, float beta)
{
    GRID_STRIDE(i, n) u[i] = gx_add(gx_mul(beta, u[i]), g[i]);
}

/* gc_momentum_unfold: g_hat = s - beta*m, m = beta*m + g_hat, s = g_hat;
 * nothing when the check before it flagged s as not finite (decided on
 * the device, so no host wait between the two). */
__global__ void k_momentum_unfold(float *s, float *m, size_t n, float beta, const unsigned *flag)
{
    if (*flag) return;
    GRID_STRIDE(i, n) {
        const float b = gx_mul(beta, m[i]);
        const float g = gx_sub(s[i], b);
        m[i] = gx_add(b, g);
        s[i] = g;
    }
}

extern "C" size_t gcmpi_gpu_all_finite(gcmpi_gpu_ctx *ctx, const float *g, size_t n)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (n == 0) return 1;
    size_t r = flag_clear(ctx);
    if (gc_is_error(r)) return r;
    k_momentum_nonfinite<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, n, ctx->flag);
    unsigned any = 0;
    r = fetch(ctx, &any, ctx->flag, sizeof any);
    return gc_is_error(r) ? r : (size_t)(any == 0);
}

/* Queued without a wait: the encode that reads u follows on the same
 * stream (two ranks time-sharing one GPU pay for every wait). */
extern "C" size_t gcmpi_gpu_momentum_accumulate(gcmpi_gpu_ctx *ctx, float *u, const float *g,
                                                size_t n, float beta)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (n == 0) return 0;
    k_momentum_accumulate<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(u, g, n, beta);
    if (cudaGetLastError() != cudaSuccess) return GC_ERR(GENERIC);
    return 0;
}

/* The check, the conditional unfold and the flag's copy back queued
 * together: one wait. */
extern "C" size_t gcmpi_gpu_momentum_unfold(gcmpi_gpu_ctx *ctx, float *s, float *m, size_t n,
                                            float beta)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (n == 0) return 1;
    size_t r = flag_clear(ctx);
    if (gc_is_error(r)) return r;
    const unsigned grid = blocks_for(n, GPU_THREADS);
    k_momentum_nonfinite<<<grid, GPU_THREADS, 0, ctx->stream>>>(s, n, ctx->flag);
    k_momentum_unfold<<<grid, GPU_THREADS, 0, ctx->stream>>>(s, m, n, beta, ctx->flag);
    unsigned any = 0;
    r = fetch(ctx, &any, ctx->flag, sizeof any);
    return gc_is_error(r) ? r : (size_t)(any == 0);
}
