/* gpu_native.cu — the native algorithm's int8 and randk (pmpi/coll_native.c)
 * on device vectors (gcmpi_gpu.h, "the native algorithm's int8" and
 * "randk"): int8's bucket maxima, integer levels that the MPI library sums
 * itself, and their dequantisation; randk's gathered values, non-finite
 * marks and scatter; with the host loops' roundings (gpu_internal.cuh), so
 * a device rank and a host rank send the same numbers and decode the same
 * floats. Only what MPI sums crosses to the host. (powersgd's steps are in
 * codec_powersgd.cu, beside the kernels they use.) */
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
        queue_copy(ctx, top, amax, 4 * nb, cudaMemcpyDeviceToHost, &e);
    }
    return release_and_wait(ctx, &s, e);
}

/* What quantise and dequantise share: the arguments checked, then on the
 * device the agreed maxima, each bucket's inv and step, and room for the
 * levels (q). Returns 0 or an error; c->nb is 0 when there is nothing to
 * do. c->s is released by release_and_wait. */
typedef struct levels_call {
    scratch s;
    size_t nb;
    float *top, *inv, *step;
    void *q;
} levels_call;

static size_t levels_begin(gcmpi_gpu_ctx *ctx, const float *top, size_t n, size_t bucket,
                           float levels, size_t elem, levels_call *c)
{
    memset(c, 0, sizeof *c);
    if (!ctx || bucket == 0 || !wire_ok(elem) || !(levels >= 1.0f && levels <= 127.0f))
        return GC_ERR(GENERIC);
    c->nb = bucket_count(n, bucket);
    if (c->nb == 0) return 0;
    c->top = (float *)scratch_get(ctx, &c->s, 4 * c->nb);
    c->inv = (float *)scratch_get(ctx, &c->s, 4 * c->nb);
    c->step = (float *)scratch_get(ctx, &c->s, 4 * c->nb);
    c->q = scratch_get(ctx, &c->s, n * elem);
    if (!c->top || !c->inv || !c->step || !c->q) return GC_ERR(ALLOC);
    size_t e = 0;
    queue_copy(ctx, c->top, top, 4 * c->nb, cudaMemcpyHostToDevice, &e);
    if (!gc_is_error(e))
        k_native_steps<<<blocks_for(c->nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(c->top, c->nb, levels, c->inv, c->step);
    return e;
}

extern "C" size_t gcmpi_gpu_native_int8_quantise(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                                 size_t n, size_t bucket, const float *top,
                                                 float levels, size_t elem, void *q)
{
    levels_call c;
    size_t e = levels_begin(ctx, top, n, bucket, levels, elem, &c);
    if (!gc_is_error(e) && c.nb) {
        k_native_quantise<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, r, n, bucket, c.top, c.inv, c.step, levels, elem, c.q);
        queue_copy(ctx, q, c.q, n * elem, cudaMemcpyDeviceToHost, &e);
    }
    return ctx ? release_and_wait(ctx, &c.s, e) : e;
}

extern "C" size_t gcmpi_gpu_native_int8_dequantise(gcmpi_gpu_ctx *ctx, const void *q, size_t elem,
                                                   size_t n, size_t bucket, const float *top,
                                                   float levels, float *out)
{
    levels_call c;
    size_t e = levels_begin(ctx, top, n, bucket, levels, elem, &c);
    if (!gc_is_error(e) && c.nb) {
        queue_copy(ctx, c.q, q, n * elem, cudaMemcpyHostToDevice, &e);
        if (!gc_is_error(e))
            k_native_dequantise<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(c.q, elem, n, bucket, c.step, out);
    }
    return ctx ? release_and_wait(ctx, &c.s, e) : e;
}

/* ---- randk ----------------------------------------------------------------
 * The k indices (distinct, those of gc_randk_indices for the call's seed:
 * on the host, or drawn on the device by gcmpi_gpu_randk_indices) are the
 * same on every rank; the values go through one float
 * allreduce with one mark per block after them (coll_native.c). */

/* vals[j] = scale v[idx[j]]; with a residual r[idx[j]] = v - scale v. */
__global__ void k_native_randk_gather(const uint32_t *idx, size_t k, const float *v, float *r,
                                      float scale, float *vals)
{
    GRID_STRIDE(j, k) {
        const float x = v[idx[j]], sent = gx_mul(scale, x);
        vals[j] = sent;
        if (r) r[idx[j]] = gx_sub(x, sent);
    }
}

/* r = r + g (the host's accumulate: r first), and the flag set when a sum
 * is inf or NaN. */
__global__ void k_native_randk_accumulate(const float *g, float *r, size_t n, unsigned *flag)
{
    GRID_STRIDE(i, n) {
        const float v = gx_add(r[i], g[i]);
        r[i] = v;
        if (bits_nonfinite(fbits(v))) *flag = 1u;
    }
}

/* r = 0 when the flag is set (a non-finite value would stay for good). */
__global__ void k_native_zero_if(float *r, size_t n, const unsigned *flag)
{
    if (!*flag) return;
    GRID_STRIDE(i, n) r[i] = 0.0f;
}

/* mark[b] = the sum, in element order, of block b's inf and NaN (0: none). */
__global__ void k_native_randk_marks(const float *g, size_t n, size_t block, size_t nb, float *mark)
{
    GRID_STRIDE(b, nb) {
        const size_t lo = b * block, hi = n - lo < block ? n : lo + block;
        float m = 0.0f;
        for (size_t i = lo; i < hi; i++)
            if (bits_nonfinite(fbits(g[i]))) m = gx_add(m, g[i]);
        mark[b] = m;
    }
}

__global__ void k_native_randk_scatter(const uint32_t *idx, size_t k, const float *vals, float *out)
{
    GRID_STRIDE(j, k) out[idx[j]] = vals[j];
}

/* out[i] += mark of i's block, where that mark is not 0. */
__global__ void k_native_randk_add_marks(float *out, size_t n, size_t block, const float *mark)
{
    GRID_STRIDE(i, n) {
        const float m = mark[div_index(i, block)];
        if (m != 0.0f) out[i] = gx_add(out[i], m);
    }
}

/* The k indices on the device: idx itself when it is device memory, else
 * a copy in scratch; NULL with *e set on failure. */
static uint32_t *indices_on_device(gcmpi_gpu_ctx *ctx, scratch *s, const uint32_t *idx, size_t k,
                                   size_t *e)
{
    /* Drawn there already (gcmpi_gpu_randk_indices). */
    if (k && gcmpi_gpu_is_device_pointer(idx)) return (uint32_t *)idx;
    uint32_t *d = (uint32_t *)scratch_get(ctx, s, (k ? k : 1) * sizeof(uint32_t));
    if (!d) {
        *e = GC_ERR(ALLOC);
        return NULL;
    }
    queue_copy(ctx, d, idx, k * sizeof(uint32_t), cudaMemcpyHostToDevice, e);
    return gc_is_error(*e) ? NULL : d;
}

extern "C" size_t gcmpi_gpu_native_randk_values(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                                size_t n, const uint32_t *idx, size_t k,
                                                float scale, float *vals)
{
    if (!ctx) return GC_ERR(GENERIC);
    scratch s;
    memset(&s, 0, sizeof s);
    size_t e = r ? flag_clear(ctx) : 0;
    cudaStream_t st = ctx->stream;
    if (!gc_is_error(e) && r && n)
        k_native_randk_accumulate<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n, ctx->flag);
    uint32_t *d_idx = gc_is_error(e) ? NULL : indices_on_device(ctx, &s, idx, k, &e);
    float *d_vals = d_idx ? (float *)scratch_get(ctx, &s, (k ? k : 1) * sizeof(float)) : NULL;
    if (d_idx && !d_vals) e = GC_ERR(ALLOC);
    if (d_vals && k) {
        k_native_randk_gather<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, st>>>(d_idx, k, r ? r : g, r, scale, d_vals);
        queue_copy(ctx, vals, d_vals, k * sizeof(float), cudaMemcpyDeviceToHost, &e);
    }
    if (d_vals && r && n)
        k_native_zero_if<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(r, n, ctx->flag);
    return release_and_wait(ctx, &s, e);
}

extern "C" size_t gcmpi_gpu_native_randk_marks(gcmpi_gpu_ctx *ctx, const float *g, size_t n,
                                               size_t block, float *marks)
{
    if (!ctx || block == 0) return GC_ERR(GENERIC);
    const size_t nb = bucket_count(n, block);
    if (nb == 0) return 0;
    scratch s;
    memset(&s, 0, sizeof s);
    float *d = (float *)scratch_get(ctx, &s, nb * sizeof(float));
    size_t e = d ? 0 : GC_ERR(ALLOC);
    if (d) {
        k_native_randk_marks<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, n, block, nb, d);
        queue_copy(ctx, marks, d, nb * sizeof(float), cudaMemcpyDeviceToHost, &e);
    }
    return release_and_wait(ctx, &s, e);
}

extern "C" size_t gcmpi_gpu_native_randk_out(gcmpi_gpu_ctx *ctx, const uint32_t *idx, size_t k,
                                             const float *vals, const float *marks, size_t block,
                                             size_t n, float *out)
{
    if (!ctx || block == 0) return GC_ERR(GENERIC);
    if (n == 0) return 0;
    const size_t nb = bucket_count(n, block);
    cudaStream_t st = ctx->stream;
    scratch s;
    memset(&s, 0, sizeof s);
    size_t e = 0;
    queue_zero(ctx, out, n * sizeof(float), &e);
    uint32_t *d_idx = gc_is_error(e) ? NULL : indices_on_device(ctx, &s, idx, k, &e);
    float *d_vals = d_idx ? (float *)scratch_get(ctx, &s, (k ? k : 1) * sizeof(float)) : NULL;
    float *d_mark = d_vals && marks ? (float *)scratch_get(ctx, &s, nb * sizeof(float)) : NULL;
    if (d_idx && (!d_vals || (marks && !d_mark))) e = GC_ERR(ALLOC);
    queue_copy(ctx, d_vals, vals, k * sizeof(float), cudaMemcpyHostToDevice, &e);
    if (d_mark) queue_copy(ctx, d_mark, marks, nb * sizeof(float), cudaMemcpyHostToDevice, &e);
    if (!gc_is_error(e) && k)
        k_native_randk_scatter<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, st>>>(d_idx, k, d_vals, out);
    if (!gc_is_error(e) && d_mark)
        k_native_randk_add_marks<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(out, n, block, d_mark);
    return release_and_wait(ctx, &s, e);
}
