/* gpu_select.cu — exact top-k by radix select (gpu_select.cuh), digit for
 * digit the selection of codecs/sparse_index.c (refine, bin_of_rank,
 * keep_above), so the CPU and the GPU keep the same indices. */
#include "gpu_select.cuh"

#include "gpu_scan.cuh"

#define SEL_BINS 2048u   /* GC_SPARSE_HIST_BINS: the widest digit */
#define SEL_SEG 64u      /* elements per thread in the counting passes */

__host__ __device__ static inline unsigned level_shift(unsigned level) { return level == 0 ? 20u : level == 1 ? 10u : 0u; }
__host__ __device__ static inline unsigned level_bits(unsigned level) { return level == 0 ? 11u : 10u; }

__global__ void k_sel_init(gpu_sel *sel, uint32_t k)
{
    sel->key = 0;
    sel->ties = k;
}

__global__ void k_sel_all_ties(gpu_sel *sel) { sel->ties = 0xFFFFFFFFu; }

/* Histogram of digit `level` over the keys that agree with sel->key on
 * the digits above it. */
__global__ void k_sel_hist(const float *v, const uint32_t *keys, size_t n, unsigned level,
                           const gpu_sel *sel, uint32_t *hist)
{
    const unsigned shift = level_shift(level), bins = 1u << level_bits(level);
    const unsigned top = shift + level_bits(level);
    const uint32_t want = level == 0 ? 0u : sel->key >> top;
    GRID_STRIDE(i, n) {
        const uint32_t key = keys ? keys[i] : mag_key(v[i]);
        if (level == 0 || (key >> top) == want) atomicAdd(&hist[(key >> shift) & (bins - 1)], 1u);
    }
}

/* bin_of_rank: walk the bins from the top to the one holding the
 * sel->ties-th largest; fix that digit and count what lies above. */
__global__ void k_sel_pick(const uint32_t *hist, unsigned level, gpu_sel *sel)
{
    const unsigned bins = 1u << level_bits(level);
    const uint32_t need = sel->ties;
    uint32_t sum = 0;
    unsigned b = bins - 1;
    while (b > 0 && sum + hist[b] < need) sum += hist[b--];
    sel->ties = need - sum;
    sel->key |= (uint32_t)b << level_shift(level);
}

size_t gpu_select_threshold(gcmpi_gpu_ctx *ctx, scratch *s, const float *v,
                            const uint32_t *keys, size_t n, size_t k, gpu_sel *sel)
{
    cudaStream_t st = ctx->stream;
    uint32_t *hist = (uint32_t *)scratch_get(ctx, s, SEL_BINS * sizeof(uint32_t));
    if (!hist) return GC_ERR(ALLOC);
    k_sel_init<<<1, 1, 0, st>>>(sel, (uint32_t)k);
    for (unsigned level = 0; level < 3; level++) {
        if (cudaMemsetAsync(hist, 0, SEL_BINS * sizeof(uint32_t), st) != cudaSuccess)
            return GC_ERR(GENERIC);
        k_sel_hist<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(v, keys, n, level, sel, hist);
        k_sel_pick<<<1, 1, 0, st>>>(hist, level, sel);
    }
    return 0;
}

void gpu_select_all_ties(gcmpi_gpu_ctx *ctx, gpu_sel *sel)
{
    k_sel_all_ties<<<1, 1, 0, ctx->stream>>>(sel);
}

/* Per segment: elements above the threshold (high word) and equal to it
 * (low word); n < 2^32, so the low word never carries in the scan. */
__global__ void k_sel_count(const float *v, size_t n, const gpu_sel *sel, size_t nseg,
                            uint64_t *seg)
{
    const uint32_t t = sel->key;
    GRID_STRIDE(sg, nseg) {
        const size_t lo = sg * SEL_SEG, hi = n - lo < SEL_SEG ? n : lo + SEL_SEG;
        uint64_t above = 0, equal = 0;
        for (size_t i = lo; i < hi; i++) {
            const uint32_t key = mag_key(v[i]);
            above += key > t;
            equal += key == t;
        }
        seg[sg] = above << 32 | equal;
    }
}

/* Element i goes to (above before i) + min(equal before i, ties). */
__global__ void k_sel_emit(const float *v, size_t n, const gpu_sel *sel, size_t nseg,
                           const uint64_t *seg, uint32_t *idx)
{
    const uint32_t t = sel->key;
    const uint64_t ties = sel->ties;
    GRID_STRIDE(sg, nseg) {
        const size_t lo = sg * SEL_SEG, hi = n - lo < SEL_SEG ? n : lo + SEL_SEG;
        uint64_t above = seg[sg] >> 32, equal = seg[sg] & 0xFFFFFFFFu;
        for (size_t i = lo; i < hi; i++) {
            const uint32_t key = mag_key(v[i]);
            if (key > t) {
                idx[above + (equal < ties ? equal : ties)] = (uint32_t)i;
                above++;
            } else if (key == t) {
                if (equal < ties) idx[above + equal] = (uint32_t)i;
                equal++;
            }
        }
    }
}

size_t gpu_select_count(gcmpi_gpu_ctx *ctx, scratch *s, const float *v, size_t n,
                        const gpu_sel *sel, gpu_sel_pass *pass, size_t *count)
{
    cudaStream_t st = ctx->stream;
    pass->nseg = (n + SEL_SEG - 1) / SEL_SEG;
    pass->seg = (uint64_t *)scratch_get(ctx, s, (pass->nseg + 1) * sizeof(uint64_t));
    if (!pass->seg) return GC_ERR(ALLOC);
    uint64_t *total = pass->seg + pass->nseg;
    k_sel_count<<<blocks_for(pass->nseg, GPU_THREADS), GPU_THREADS, 0, st>>>(v, n, sel, pass->nseg,
                                                                              pass->seg);
    gpu_scan_u64(ctx, pass->seg, pass->nseg, total);
    if (!count) return 0;
    uint64_t sum = 0;
    gpu_sel h;
    size_t e = fetch(ctx, &sum, total, sizeof sum);
    if (gc_is_error(e)) return e;
    e = fetch(ctx, &h, sel, sizeof h);
    if (gc_is_error(e)) return e;
    const uint64_t equal = sum & 0xFFFFFFFFu;
    *count = (size_t)((sum >> 32) + (equal < h.ties ? equal : h.ties));
    return 0;
}

void gpu_select_emit(gcmpi_gpu_ctx *ctx, const float *v, size_t n, const gpu_sel *sel,
                     const gpu_sel_pass *pass, uint32_t *idx)
{
    k_sel_emit<<<blocks_for(pass->nseg, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        v, n, sel, pass->nseg, pass->seg, idx);
}

__global__ void k_iota(uint32_t *idx, size_t n)
{
    GRID_STRIDE(i, n) idx[i] = (uint32_t)i;
}

size_t gpu_topk_indices(gcmpi_gpu_ctx *ctx, scratch *s, const float *v, size_t n, size_t k,
                        uint32_t *idx)
{
    if (k >= n) {
        if (n) k_iota<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(idx, n);
        return 0;
    }
    if (k == 0) return 0;
    gpu_sel *sel = (gpu_sel *)scratch_get(ctx, s, sizeof(gpu_sel));
    if (!sel) return GC_ERR(ALLOC);
    size_t e = gpu_select_threshold(ctx, s, v, NULL, n, k, sel);
    if (gc_is_error(e)) return e;
    gpu_sel_pass pass;
    e = gpu_select_count(ctx, s, v, n, sel, &pass, NULL);
    if (gc_is_error(e)) return e;
    gpu_select_emit(ctx, v, n, sel, &pass, idx);
    return 0;
}
