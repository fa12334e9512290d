/* gpu_native.cu — the native algorithm's int8 (pmpi/coll_native.c) on
 * device vectors (gcmpi_gpu.h, "the native algorithm's int8"): bucket
 * maxima, integer levels that the MPI library sums itself, and their
 * dequantisation, with the host loops' roundings (gpu_internal.cuh), so a
 * device rank and a host rank send the same levels and decode the same
 * floats. Only the maxima and the levels cross to the host. */
#include "gpu_bucket.cuh"

#include <float.h>

#define INF_BITS 0x7F800000u
/* glibc's NAN (the host loop's NaN step of a non-finite bucket) */
#define HOST_NAN_BITS 0x7FC00000u

/* max |v| bits clamped to +inf's: NaN becomes +inf, as bucket_max. */
__global__ void k_native_top(uint32_t *amax, size_t nb)
{
    GRID_STRIDE(b, nb) if (amax[b] > INF_BITS) amax[b] = INF_BITS;
}

/* Per bucket: inv = L / m and step = m / L where m is finite and > 0 (what
 * quantise multiplies by), step = NaN where m is not finite, 0 where m is
 * 0 (dequantise's step). */
__global__ void k_native_steps(const float *top, size_t nb, float levels, float *inv, float *step)
{
    GRID_STRIDE(b, nb) {
        const float m = top[b];
        const bool finite = m <= FLT_MAX;
        inv[b] = finite && m > 0.0f ? gx_div(levels, m) : 0.0f;
        step[b] = finite ? gx_div(m, levels) : bitsf(HOST_NAN_BITS);
    }
}

/* q = round(v L / m) clamped to [-L, L], v = r (the accumulated residual)
 * or g; r -= q m / L. A zero bucket sends zeros; a non-finite one sends
 * zeros and drops its residual. */
__global__ void k_native_quantise(const float *g, float *r, size_t n, size_t bucket,
                                  const float *top, const float *inv, const float *step,
                                  float levels, size_t elem, void *q)
{
    GRID_STRIDE(i, n) {
        const size_t b = div_index(i, bucket);
        const float m = top[b];
        float x = 0.0f;
        if (m > 0.0f && m <= FLT_MAX) {
            const float v = r ? r[i] : g[i];
            x = round_even_small(gx_mul(v, inv[b]));
            x = x > levels ? levels : x;
            x = x < -levels ? -levels : x;
            if (r) r[i] = gx_sub(v, gx_mul(x, step[b]));
        } else if (r && m != 0.0f) {
            r[i] = 0.0f;
        }
        const int32_t level = (int32_t)x;
        if (elem == 1) ((int8_t *)q)[i] = (int8_t)level;
        else if (elem == 2) ((int16_t *)q)[i] = (int16_t)level;
        else ((int32_t *)q)[i] = level;
    }
}

/* out = q * m / L (NaN in a non-finite bucket). */
__global__ void k_native_dequantise(const void *q, size_t elem, size_t n, size_t bucket,
                                    const float *step, float *out)
{
    GRID_STRIDE(i, n) {
        int32_t level;
        if (elem == 1) level = ((const int8_t *)q)[i];
        else if (elem == 2) level = ((const int16_t *)q)[i];
        else level = ((const int32_t *)q)[i];
        out[i] = gx_mul((float)level, step[div_index(i, bucket)]);
    }
}

static int wire_ok(size_t elem) { return elem == 1 || elem == 2 || elem == 4; }

static void queue(gcmpi_gpu_ctx *ctx, void *dst, const void *src, size_t bytes,
                  cudaMemcpyKind kind, size_t *r)
{
    if (!gc_is_error(*r) && bytes && cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        *r = GC_ERR(GENERIC);
    }
}

/* Release the call's scratch and wait: r, or the stream's failure. */
static size_t finish(gcmpi_gpu_ctx *ctx, scratch *s, size_t r)
{
    scratch_release(ctx, s);
    const size_t done = sync_status(ctx);
    return gc_is_error(r) ? r : done;
}

extern "C" size_t gcmpi_gpu_native_int8_max(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                            size_t n, size_t bucket, float *top)
{
    if (!ctx || bucket == 0) return GC_ERR(GENERIC);
    const size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    if (nb > 0x7FFFFFFFu) return GC_ERR(GENERIC);
    scratch s;
    memset(&s, 0, sizeof s);
    uint32_t *amax = (uint32_t *)scratch_get(ctx, &s, 4 * nb);
    size_t e = amax ? 0 : GC_ERR(ALLOC);
    if (amax) {
        gpu_bucket_absmax(ctx, g, r, n, bucket, amax);
        k_native_top<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(amax, nb);
        queue(ctx, top, amax, 4 * nb, cudaMemcpyDeviceToHost, &e);
    }
    return finish(ctx, &s, e);
}

/* The agreed maxima on the device and each bucket's inv and step; NULL
 * top_dev on failure (*e set). */
static void steps_on_device(gcmpi_gpu_ctx *ctx, scratch *s, const float *top, size_t nb,
                            float levels, float **top_dev, float **inv, float **step, size_t *e)
{
    *top_dev = (float *)scratch_get(ctx, s, 4 * nb);
    *inv = (float *)scratch_get(ctx, s, 4 * nb);
    *step = (float *)scratch_get(ctx, s, 4 * nb);
    if (!*top_dev || !*inv || !*step) {
        *e = GC_ERR(ALLOC);
        *top_dev = NULL;
        return;
    }
    queue(ctx, *top_dev, top, 4 * nb, cudaMemcpyHostToDevice, e);
    k_native_steps<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(*top_dev, nb, levels, *inv, *step);
}

extern "C" size_t gcmpi_gpu_native_int8_quantise(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                                 size_t n, size_t bucket, const float *top,
                                                 float levels, size_t elem, void *q)
{
    if (!ctx || bucket == 0 || !wire_ok(elem) || !(levels >= 1.0f && levels <= 127.0f))
        return GC_ERR(GENERIC);
    const size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    scratch s;
    memset(&s, 0, sizeof s);
    size_t e = 0;
    float *top_dev, *inv, *step;
    steps_on_device(ctx, &s, top, nb, levels, &top_dev, &inv, &step, &e);
    void *q_dev = top_dev ? scratch_get(ctx, &s, n * elem) : NULL;
    if (top_dev && !q_dev) e = GC_ERR(ALLOC);
    if (q_dev) {
        k_native_quantise<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, r, n, bucket, top_dev, inv, step, levels, elem, q_dev);
        queue(ctx, q, q_dev, n * elem, cudaMemcpyDeviceToHost, &e);
    }
    return finish(ctx, &s, e);
}

extern "C" size_t gcmpi_gpu_native_int8_dequantise(gcmpi_gpu_ctx *ctx, const void *q, size_t elem,
                                                   size_t n, size_t bucket, const float *top,
                                                   float levels, float *out)
{
    if (!ctx || bucket == 0 || !wire_ok(elem) || !(levels >= 1.0f && levels <= 127.0f))
        return GC_ERR(GENERIC);
    const size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    scratch s;
    memset(&s, 0, sizeof s);
    size_t e = 0;
    float *top_dev, *inv, *step;
    steps_on_device(ctx, &s, top, nb, levels, &top_dev, &inv, &step, &e);
    void *q_dev = top_dev ? scratch_get(ctx, &s, n * elem) : NULL;
    if (top_dev && !q_dev) e = GC_ERR(ALLOC);
    if (q_dev) {
        queue(ctx, q_dev, q, n * elem, cudaMemcpyHostToDevice, &e);
        k_native_dequantise<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(q_dev, elem, n, bucket, step, out);
    }
    return finish(ctx, &s, e);
}
