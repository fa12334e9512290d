/* codec_topk.cu — codecs/codec_topk.c on the device: v = g + r, the exact
 * k = ceil(ratio * n) largest |v| (radix select, ties to the lower index;
 * gpu_select.cuh), the sparse body (gpu_sparse.cuh); the residual is v
 * with the sent elements cleared. */
#include "gpu_select.cuh"
#include "gpu_sparse.cuh"

static size_t topk_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)seed;
    if (n > UINT32_MAX) return GC_ERR(PARAM);  /* indices are 32-bit */
    const size_t k = kept_count(n, p->ratio);
    if (cap < sparse_body_bound(n, k)) return GC_ERR(DST_TOO_SMALL);
    uint32_t *idx = (uint32_t *)scratch_get(ctx, s, (k ? k : 1) * sizeof(uint32_t));
    if (!idx) return GC_ERR(ALLOC);
    if (r) gpu_accumulate(ctx, g, r, n);
    const float *v = r ? r : g;
    size_t e = gpu_topk_indices(ctx, s, v, n, k, idx);
    if (gc_is_error(e)) return e;
    return gpu_sparse_body_write(ctx, s, idx, k, v, r, n, body, cap);
}

extern const gpu_codec gpu_codec_topk;
const gpu_codec gpu_codec_topk = {
    ID_TOPK,
    topk_encode,
    gpu_sparse_decode_add,
};
