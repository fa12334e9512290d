/* gpu_momentum.cu — codecs/momentum.c on device buffers (gcmpi_gpu.h):
 * GCMPI_MOMENTUM's two loops ("transparent momentum correction") as
 * kernels with the same roundings (one multiply, then one add or
 * subtract, no fused multiply-add: gpu_internal.cuh), so the momentum a
 * GPU rank keeps is bit for bit the one a CPU rank keeps, and the test
 * that decides whether they may run (an overflow step must not enter the
 * momentum); and DGC's momentum correction inside the encode
 * (GCMPI_EF_MOMENTUM, gc_encode_momentum) from those and the encode. */
#include "gpu_sparse.cuh"

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

/* gc_encode_momentum's codecs, whose sent set the device masks: the
 * sparse body of topk and dgc, randk's drawn indices, topkq's index
 * section. */
extern "C" int gcmpi_gpu_encode_momentum_supports(const gc_codec *c)
{
    const unsigned id = c ? gc_codec_id(c) : 0;
    return id == ID_TOPK || id == ID_DGC || id == ID_RANDK || id == ID_TOPKQ;
}

/* u = 0 where the body sent (gc_payload_zero_sent on the device). */
static size_t zero_sent(gcmpi_gpu_ctx *ctx, scratch *s, unsigned id, const uint8_t *body,
                        size_t len, float *u, size_t n)
{
    if (id == ID_RANDK) return gpu_randk_zero_sent(ctx, s, body, len, u, n);
    if (id == ID_TOPKQ) return gpu_topkq_zero_sent(ctx, s, body, len, u, n);
    return gpu_sparse_zero_sent(ctx, s, body, len, u, n);
}

/* The payload's body on the host: dst itself, or (a device dst) a copy in
 * *own, freed by the caller. NULL on failure. */
static const uint8_t *payload_on_host(gcmpi_gpu_ctx *ctx, const void *dst, size_t len,
                                      uint8_t **own)
{
    *own = NULL;
    if (!gcmpi_gpu_is_device_pointer(dst)) return (const uint8_t *)dst;
    *own = (uint8_t *)malloc(len ? len : 1);
    if (!*own || gc_is_error(fetch(ctx, *own, dst, len))) return NULL;
    return *own;
}

extern "C" size_t gcmpi_gpu_encode_momentum(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *g,
                                            float *u, float *v, size_t n, float momentum,
                                            const gc_params *p, uint64_t seed, void *dst,
                                            size_t cap)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (!c) return GC_ERR(UNKNOWN_CODEC);
    if (!gcmpi_gpu_encode_momentum_supports(c)) return GC_ERR(UNSUPPORTED);
    if (!(momentum >= 0.0f && momentum < 1.0f)) return GC_ERR(PARAM);
    if (n > 0 && (!g || !u || !v)) return GC_ERR(GENERIC);
    /* An overflow step: flagged payload, u and v left as they are. */
    size_t r = gcmpi_gpu_all_finite(ctx, g, n);
    if (gc_is_error(r)) return r;
    if (r == 0) return gcmpi_gpu_encode(ctx, c, g, NULL, n, p, seed, dst, cap);
    r = gcmpi_gpu_momentum_accumulate(ctx, u, g, n, momentum);
    /* The fused error-feedback encode sends the top of v + u and leaves
     * v = (v + u) - D(payload), zero where sent; u is cleared there. */
    if (!gc_is_error(r)) r = gcmpi_gpu_encode(ctx, c, u, v, n, p, seed, dst, cap);
    if (gc_is_error(r)) return r;
    uint8_t *own;
    const uint8_t *pl = payload_on_host(ctx, dst, r, &own);
    gc_payload_info info;
    size_t z = pl ? gc_payload_info_get(pl, r, &info) : GC_ERR(ALLOC);
    /* A flagged payload (v + u overflowed) sent nothing. */
    if (!gc_is_error(z) && !(info.flags & GC_HF_NONFINITE)) {
        scratch s;
        memset(&s, 0, sizeof s);
        z = zero_sent(ctx, &s, gc_codec_id(c), pl + GC_HEADER_SIZE, r - GC_HEADER_SIZE, u, n);
        z = release_and_wait(ctx, &s, z);
    }
    free(own);
    return gc_is_error(z) ? z : r;
}
