/* codec_randk.cu — codecs/codec_randk.c on the device. The k indices are
 * drawn on the host by the CPU's own sampler (gc_randk_indices: Floyd's
 * algorithm, one draw after another, depending only on n, k and the
 * seed); they go to the device (4 k bytes), where the values are
 * gathered, scaled (unbiased mode) and written with the residual. */
#include "gpu_sparse.cuh"

#define RANDK_HEAD 13u
#define RANDK_FLAG_UNBIASED 1u

__global__ void k_randk_head(uint8_t *body, uint64_t seed, uint32_t k, unsigned flag)
{
    st_u32(body, (uint32_t)seed);
    st_u32(body + 4, (uint32_t)(seed >> 32));
    st_u32(body + 8, k);
    body[12] = (uint8_t)flag;
}

__global__ void k_randk_values(const uint32_t *idx, size_t k, const float *v, float *r,
                               int unbiased, float scale, uint8_t *vals)
{
    GRID_STRIDE(j, k) {
        const float x = v[idx[j]], sent = unbiased ? gx_mul(x, scale) : x;
        st_f32(vals + 4 * j, sent);
        if (r) r[idx[j]] = unbiased ? gx_sub(x, sent) : 0.0f;
    }
}

/* The indices of (n, k, seed) on the host, then on the device (scratch). */
static uint32_t *randk_indices(gcmpi_gpu_ctx *ctx, scratch *s, size_t n, const gc_params *p,
                               uint64_t seed, size_t k, size_t *err)
{
    uint32_t *h = (uint32_t *)malloc((k ? k : 1) * sizeof(uint32_t));
    uint32_t *d = (uint32_t *)scratch_get(ctx, s, (k ? k : 1) * sizeof(uint32_t));
    *err = h && d ? 0 : GC_ERR(ALLOC);
    if (!*err) {
        size_t got = gc_randk_indices(n, p, seed, h, NULL);
        if (gc_is_error(got)) *err = got;
        else if (k && cudaMemcpyAsync(d, h, k * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                      ctx->stream) != cudaSuccess)
            *err = GC_ERR(GENERIC);
        else
            *err = sync_status(ctx);  /* h is freed below */
    }
    free(h);
    return gc_is_error(*err) ? NULL : d;
}

static size_t randk_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                           const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    if (n > UINT32_MAX) return GC_ERR(PARAM);  /* indices are 32-bit */
    const size_t k = kept_count(n, p->ratio);
    if (cap < RANDK_HEAD + 4 * k) return GC_ERR(DST_TOO_SMALL);
    /* Queued first, so the device adds g to r while the host draws. */
    if (r) gpu_accumulate(ctx, g, r, n);
    size_t e;
    uint32_t *idx = randk_indices(ctx, s, n, p, seed, k, &e);
    if (!idx) return e;
    const int unbiased = (p->flags & GC_PF_RANDK_UNBIASED) != 0;
    const float scale = unbiased && k ? (float)((double)n / (double)k) : 1.0f;
    k_randk_head<<<1, 1, 0, ctx->stream>>>(body, seed, (uint32_t)k,
                                           unbiased ? RANDK_FLAG_UNBIASED : 0u);
    if (k)
        k_randk_values<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
            idx, k, r ? r : g, r, unbiased, scale, body + RANDK_HEAD);
    return RANDK_HEAD + 4 * k;
}

__global__ void k_randk_scatter_add(const uint32_t *idx, size_t k, const uint8_t *vals, float *acc)
{
    GRID_STRIDE(j, k) acc[idx[j]] = gx_add(acc[idx[j]], ld_f32(vals + 4 * j));
}

/* randk_read's checks of a body (host bytes), then its k indices on the
 * device (*idx; NULL with k = 0). Returns k or an error. */
static size_t randk_open(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                         size_t n, uint32_t **idx)
{
    *idx = NULL;
    if (len < RANDK_HEAD) return GC_ERR(TRUNCATED);
    uint64_t seed = 0;
    for (int i = 7; i >= 0; i--) seed = seed << 8 | body[i];
    const size_t k = get_u32(body + 8);
    if ((body[12] & ~RANDK_FLAG_UNBIASED) || k > n || n > UINT32_MAX) return GC_ERR(CORRUPT);
    const size_t rest = len - RANDK_HEAD;
    if (k > rest / 4) return GC_ERR(TRUNCATED);
    if (rest != 4 * k) return GC_ERR(CORRUPT);
    if (k == 0) return 0;
    /* A ratio that gives this k for n (ceil((k - 1/2) / n * n) = k): the
     * indices depend on n, k and the seed only. */
    gc_params p;
    gc_params_default(&p);
    p.ratio = ((double)k - 0.5) / (double)n;
    if (kept_count(n, p.ratio) != k) return GC_ERR(CORRUPT);
    size_t e;
    *idx = randk_indices(ctx, s, n, &p, seed, k, &e);
    return *idx ? k : e;
}

size_t gpu_randk_zero_sent(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *x, size_t n)
{
    uint32_t *idx;
    const size_t k = randk_open(ctx, s, body, len, n, &idx);
    if (gc_is_error(k)) return k;
    gpu_zero_at(ctx, idx, k, x);
    return sync_status(ctx);
}

static size_t randk_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                               float *acc, size_t n)
{
    uint32_t *idx;
    const size_t k = randk_open(ctx, s, body, len, n, &idx);
    if (gc_is_error(k) || k == 0) return gc_is_error(k) ? k : 0;
    uint8_t *vals = body_to_device(ctx, s, body + RANDK_HEAD, 4 * k);
    if (!vals) return GC_ERR(ALLOC);
    k_randk_scatter_add<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(idx, k, vals,
                                                                                     acc);
    return 0;
}

extern const gpu_codec gpu_codec_randk;
const gpu_codec gpu_codec_randk = {ID_RANDK, randk_encode, randk_decode_add};
