/* gpu_select.cu — exact top-k by radix select (gpu_select.cuh): the same
 * threshold key and tie count as codecs/sparse_index.c (refine,
 * bin_of_rank, keep_above) finds, so the CPU and the GPU keep the same
 * indices.
 *
 * Cost for n elements, all queued without a host round trip:
 *   3 histogram passes over the data (digits of 11, 10, 10 bits), each
 *     into per-block shared-memory bins merged once per block into global
 *     memory (one global atomic per non-empty bin and block, not one per
 *     element: the top digit of Gaussian data falls in a few dozen bins,
 *     so per-element global atomics serialise on them);
 *   3 one-block picks, a block-wide prefix sum over the bins (not a
 *     serial walk of up to 2048 dependent loads);
 *   2 placing passes that write the kept indices ascending: one counts
 *     per tile of SEL_TILE elements (above and at the threshold), a scan
 *     of the tile counts, then one writes each element at its tile's
 *     offset plus a block-wide scan of the threads' counts.
 * The host waits only where a caller asks for the count (dgc).
 *
 * gpu_topk_indices first tries the CPU's one-pass path (its rule in
 * sparse_sample.h, as sparse_index.c takes it): a threshold from a strided sample
 * of v that some 1.3 k elements reach, one placing pass (two reads of v)
 * that writes those candidates' indices and keys ascending, and the exact
 * top-k among the candidates, placed by the same kernels over their keys.
 * Two reads of v instead of five, and one wait for the candidates' count;
 * when the sample missed (fewer than k candidates, or more than room was
 * made for) the five-read path runs. Either way the selection is the
 * exact top-k with the CPU's ties, so the payload does not depend on the
 * path. */
#include "gpu_bucket.cuh" /* vec4f */
#include "gpu_scan.cuh"
#include "gpu_select.cuh"
#include "sparse_sample.h"

#define SEL_BINS 2048u        /* GC_SPARSE_HIST_BINS: the widest digit */
#define SEL_LEVELS 3u
#define SEL_THREADS 256u      /* threads of every kernel here */
#define SEL_MAX_BLOCKS 1024u  /* histogram grid: ~8 resident blocks per SM */
#define SEL_UNROLL 4u         /* loads per thread at once in the histograms */
#define SEL_ITEMS 8u          /* contiguous elements per thread in a tile */
#define SEL_TILE (SEL_THREADS * SEL_ITEMS)
struct alignas(16) vec4u { uint32_t x, y, z, w; };

__host__ __device__ static inline unsigned level_shift(unsigned level) { return level == 0 ? 20u : level == 1 ? 10u : 0u; }
__host__ __device__ static inline unsigned level_bits(unsigned level) { return level == 0 ? 11u : 10u; }

static inline unsigned hist_blocks(size_t n)
{
    unsigned b = blocks_for(n, SEL_THREADS);
    return b < SEL_MAX_BLOCKS ? b : SEL_MAX_BLOCKS;
}

__global__ void k_sel_init(gpu_sel *sel, uint32_t k)
{
    sel->key = 0;
    sel->ties = k;
}

__global__ void k_sel_all_ties(gpu_sel *sel) { sel->ties = 0xFFFFFFFFu; }

/* Histogram of digit `level` over the keys that agree with sel->key on
 * the digits above it: counted in shared memory, then added to hist.
 * check (scratch.check, level 0 of v only): set when a key is inf or NaN. */
__global__ void k_sel_hist_sync(const float *v, const uint32_t *keys, size_t n, unsigned level,
                                const gpu_sel *sel, uint32_t *hist, unsigned *check)
{
    __shared__ uint32_t bin[SEL_BINS];
    const unsigned shift = level_shift(level), bins = 1u << level_bits(level);
    const unsigned top = shift + level_bits(level);
    const uint32_t want = level == 0 ? 0u : sel->key >> top;
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x) bin[b] = 0;
    __syncthreads();
    /* SEL_UNROLL independent loads in flight per thread: one each would
     * leave too few bytes in flight per SM to keep the memory busy. */
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    uint32_t kmax = 0;  /* the largest key seen, for check */
    for (; i + (SEL_UNROLL - 1) * stride < n; i += SEL_UNROLL * stride) {
        uint32_t key[SEL_UNROLL];
        for (unsigned u = 0; u < SEL_UNROLL; u++)
            key[u] = keys ? keys[i + u * stride] : mag_key(v[i + u * stride]);
        for (unsigned u = 0; u < SEL_UNROLL; u++) {
            kmax = key[u] > kmax ? key[u] : kmax;
            if (level == 0 || (key[u] >> top) == want)
                atomicAdd(&bin[(key[u] >> shift) & (bins - 1)], 1u);
        }
    }
    for (; i < n; i += stride) {
        const uint32_t key = keys ? keys[i] : mag_key(v[i]);
        kmax = key > kmax ? key : kmax;
        if (level == 0 || (key >> top) == want) atomicAdd(&bin[(key >> shift) & (bins - 1)], 1u);
    }
    if (check && bits_nonfinite(kmax)) *check = 1u;
    __syncthreads();
    for (unsigned b = threadIdx.x; b < bins; b += blockDim.x)
        if (bin[b]) atomicAdd(&hist[b], bin[b]);
}

/* bin_of_rank: the bin holding the sel->ties-th largest key (counting
 * from the top bin; bin 0 when the count falls short); fix that digit and
 * keep the rank within it. Each thread owns a run of bins from the top,
 * a block prefix sum gives the count above each run. */
__global__ void k_sel_pick_sync(const uint32_t *hist, unsigned level, gpu_sel *sel)
{
    __shared__ uint64_t buf[SEL_THREADS];
    const unsigned bins = 1u << level_bits(level), per = (bins + blockDim.x - 1) / blockDim.x;
    const uint32_t need = sel->ties;
    const unsigned hi = threadIdx.x * per;  /* this thread: bins - 1 - hi down */
    uint64_t mine = 0;
    for (unsigned j = 0; j < per && hi + j < bins; j++) mine += hist[bins - 1 - hi - j];
    uint64_t above = gpu_block_inclusive_sum(mine, buf) - mine;  /* all read sel before this */
    for (unsigned j = 0; j < per && hi + j < bins; j++) {
        const unsigned b = bins - 1 - hi - j;
        const uint32_t h = hist[b];
        if (above < need && (above + h >= need || b == 0)) {
            sel->ties = need - (uint32_t)above;
            sel->key |= (uint32_t)b << level_shift(level);
        }
        above += h;
    }
}

size_t gpu_select_threshold(gcmpi_gpu_ctx *ctx, scratch *s, const float *v,
                            const uint32_t *keys, size_t n, size_t k, gpu_sel *sel)
{
    cudaStream_t st = ctx->stream;
    unsigned *check = keys ? NULL : encode_check(s, NULL);  /* v is g when s asks */
    const size_t bytes = SEL_LEVELS * SEL_BINS * sizeof(uint32_t);
    uint32_t *hist = (uint32_t *)scratch_get(ctx, s, bytes);
    if (!hist) return GC_ERR(ALLOC);
    /* One histogram per level, cleared together: no clearing between. */
    if (cudaMemsetAsync(hist, 0, bytes, st) != cudaSuccess) return GC_ERR(GENERIC);
    k_sel_init<<<1, 1, 0, st>>>(sel, (uint32_t)k);
    for (unsigned level = 0; level < SEL_LEVELS; level++) {
        uint32_t *h = hist + level * SEL_BINS;
        k_sel_hist_sync<<<hist_blocks(n), SEL_THREADS, 0, st>>>(v, keys, n, level, sel, h,
                                                                level == 0 ? check : NULL);
        k_sel_pick_sync<<<1, SEL_THREADS, 0, st>>>(h, level, sel);
    }
    return 0;
}

void gpu_select_all_ties(gcmpi_gpu_ctx *ctx, gpu_sel *sel)
{
    k_sel_all_ties<<<1, 1, 0, ctx->stream>>>(sel);
}

/* Thread t of a tile owns elements [t * SEL_ITEMS, (t + 1) * SEL_ITEMS)
 * of it: their keys into key[] (the magnitude keys of v, or keys[] where
 * v is NULL; two 16-byte loads where the run is whole and aligned), and
 * how many of them lie before n. */
__device__ static inline unsigned thread_keys(const float *v, const uint32_t *keys, size_t n,
                                              size_t lo, uint32_t key[SEL_ITEMS])
{
    static_assert(SEL_ITEMS == 8, "two 16-byte loads per thread");
    const void *at = v ? (const void *)(v + lo) : (const void *)(keys + lo);
    if (lo + SEL_ITEMS <= n && ((uintptr_t)at & 15u) == 0) {
        if (v) {
            const vec4f a = ((const vec4f *)at)[0], b = ((const vec4f *)at)[1];
            key[0] = mag_key(a.x); key[1] = mag_key(a.y); key[2] = mag_key(a.z); key[3] = mag_key(a.w);
            key[4] = mag_key(b.x); key[5] = mag_key(b.y); key[6] = mag_key(b.z); key[7] = mag_key(b.w);
        } else {
            const vec4u a = ((const vec4u *)at)[0], b = ((const vec4u *)at)[1];
            key[0] = a.x; key[1] = a.y; key[2] = a.z; key[3] = a.w;
            key[4] = b.x; key[5] = b.y; key[6] = b.z; key[7] = b.w;
        }
        return SEL_ITEMS;
    }
    for (unsigned q = 0; q < SEL_ITEMS; q++)
        key[q] = lo + q >= n ? 0u : v ? mag_key(v[lo + q]) : keys[lo + q];
    return lo >= n ? 0u : n - lo < SEL_ITEMS ? (unsigned)(n - lo) : SEL_ITEMS;
}

/* The keys' count above the threshold t (high word) and equal to it (low
 * word). n < 2^32, so the low word never carries into the high one in any
 * sum of these. */
__device__ static inline uint64_t thread_counts(const uint32_t key[SEL_ITEMS], unsigned cnt,
                                                uint32_t t)
{
    uint32_t above = 0, equal = 0;
    for (unsigned q = 0; q < SEL_ITEMS; q++) {  /* predicated, not broken: unrolled */
        above += q < cnt && key[q] > t;
        equal += q < cnt && key[q] == t;
    }
    return (uint64_t)above << 32 | equal;
}

/* counts[tile] = the tile's counts (thread_counts summed); check as
 * k_sel_hist_sync's. The placement
 * takes two passes, this one and k_sel_emit_sync after a scan of the tile
 * counts: a single pass chained tile to tile (decoupled look-back, one
 * predecessor per step) measured 400 us for 2^24 elements on an H100,
 * against 25 us for one read of them. */
__global__ void k_sel_count_sync(const float *v, const uint32_t *keys, size_t n,
                                 const gpu_sel *sel, size_t ntiles, uint64_t *counts,
                                 unsigned *check)
{
    __shared__ uint64_t buf[SEL_THREADS];
    const uint32_t t = sel->key;
    bool bad = false;
    for (size_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        uint32_t key[SEL_ITEMS];
        const unsigned cnt = thread_keys(v, keys, n, tile * SEL_TILE + (size_t)threadIdx.x * SEL_ITEMS, key);
        for (unsigned q = 0; q < SEL_ITEMS; q++) bad |= q < cnt && bits_nonfinite(key[q]);
        const uint64_t upto = gpu_block_inclusive_sum(thread_counts(key, cnt, t), buf);
        if (threadIdx.x == blockDim.x - 1) counts[tile] = upto;
    }
    if (bad && check) *check = 1u;
}

/* Element i goes to (above before i) + min(equal before i, ties), as
 * keep_above places it: idx[at] = i, or map[i] where map is not NULL, and
 * key_out[at] = its key where key_out is not NULL; positions from cap on
 * are dropped. before[tile] = the counts of the tiles before it (the
 * scanned k_sel_count_sync). */
__global__ void k_sel_emit_sync(const float *v, const uint32_t *keys, const uint32_t *map,
                                size_t n, const gpu_sel *sel, size_t ntiles,
                                const uint64_t *before_tile, uint32_t *idx, uint32_t *key_out,
                                size_t cap)
{
    __shared__ uint64_t buf[SEL_THREADS];
    const uint32_t t = sel->key;
    const uint64_t ties = sel->ties;
    for (size_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const size_t lo = tile * SEL_TILE + (size_t)threadIdx.x * SEL_ITEMS;
        uint32_t key[SEL_ITEMS];
        const unsigned cnt = thread_keys(v, keys, n, lo, key);
        const uint64_t mine = thread_counts(key, cnt, t);
        const uint64_t upto = gpu_block_inclusive_sum(mine, buf);
        if (!mine) continue;
        const uint64_t before = before_tile[tile] + upto - mine;
        uint64_t above = before >> 32, equal = before & 0xFFFFFFFFu;
        for (unsigned q = 0; q < cnt; q++) {
            uint64_t at = cap;
            if (key[q] > t) {
                at = above + (equal < ties ? equal : ties);
                above++;
            } else if (key[q] == t) {
                if (equal < ties) at = above + equal;
                equal++;
            }
            if (at < cap) {
                idx[at] = map ? map[lo + q] : (uint32_t)(lo + q);
                if (key_out) key_out[at] = key[q];
            }
        }
    }
}

/* *count = above + min(equal, ties) from the total counts. */
__global__ void k_sel_total(const uint64_t *total, const gpu_sel *sel, uint64_t *count)
{
    const uint64_t equal = *total & 0xFFFFFFFFu;
    *count = (*total >> 32) + (equal < sel->ties ? equal : sel->ties);
}

/* gpu_select_compact over the magnitude keys of v, or (v NULL) over
 * keys[0..n) with map[j] written for position j; key_out (may be NULL)
 * gets the selected keys beside idx. */
static size_t compact(gcmpi_gpu_ctx *ctx, scratch *s, const float *v, const uint32_t *keys,
                      const uint32_t *map, size_t n, const gpu_sel *sel, uint32_t *idx,
                      uint32_t *key_out, size_t cap, size_t *count)
{
    cudaStream_t st = ctx->stream;
    const size_t ntiles = (n + SEL_TILE - 1) / SEL_TILE;  /* < 2^21: n < 2^32 */
    uint64_t *counts = (uint64_t *)scratch_get(ctx, s, (ntiles + 2) * sizeof(uint64_t));
    if (!counts) return GC_ERR(ALLOC);
    uint64_t *total = counts + ntiles;
    const unsigned blocks = ntiles < SEL_MAX_BLOCKS ? (unsigned)(ntiles ? ntiles : 1) : SEL_MAX_BLOCKS;
    k_sel_count_sync<<<blocks, SEL_THREADS, 0, st>>>(v, keys, n, sel, ntiles, counts,
                                                     v ? encode_check(s, NULL) : NULL);
    gpu_scan_u64(ctx, counts, ntiles, total);
    k_sel_emit_sync<<<blocks, SEL_THREADS, 0, st>>>(v, keys, map, n, sel, ntiles, counts, idx,
                                                    key_out, cap);
    if (!count) return 0;
    /* The one wait: the caller needs the count to go on. */
    k_sel_total<<<1, 1, 0, st>>>(total, sel, total + 1);
    uint64_t c = 0;
    size_t e = fetch(ctx, &c, total + 1, sizeof c);
    if (gc_is_error(e)) return e;
    *count = (size_t)c;
    return 0;
}

size_t gpu_select_compact(gcmpi_gpu_ctx *ctx, scratch *s, const float *v, size_t n,
                          const gpu_sel *sel, uint32_t *idx, size_t cap, size_t *count)
{
    return compact(ctx, s, v, NULL, NULL, n, sel, idx, NULL, cap, count);
}

__global__ void k_iota(uint32_t *idx, size_t n)
{
    GRID_STRIDE(i, n) idx[i] = (uint32_t)i;
}

/* keys[j] = the magnitude key of v[stride / 2 + j * stride]: the CPU's
 * sample positions (sampled_threshold). */
__global__ void k_sel_sample(const float *v, size_t stride, size_t ns, uint32_t *keys)
{
    GRID_STRIDE(j, ns) keys[j] = mag_key(v[stride / 2 + j * stride]);
}

static inline size_t round4(size_t x) { return (x + 3) & ~(size_t)3; }

/* The one-pass path (see the top of this file): *done = 1 with idx[0..k)
 * the selection, 0 where it does not apply, the sample missed or the pool
 * has no room for the candidates (nothing written to idx). 0 or an
 * error. */
static size_t topk_sampled(gcmpi_gpu_ctx *ctx, scratch *s, const float *v, size_t n, size_t k,
                           uint32_t *idx, int *done)
{
    *done = 0;
    gc_sample_plan pl;
    if (!gc_sample_plan_for(n, k, &pl)) return 0;
    const size_t room = 2 * pl.expect + SEL_TILE;  /* past it the sample missed */
    /* One allocation (scratch slots are few): two selections, the sample,
     * the candidates' indices and keys, each 16-byte aligned. */
    const size_t words = 4 + round4(pl.ns) + 2 * round4(room);
    uint32_t *buf = (uint32_t *)scratch_get(ctx, s, words * sizeof(uint32_t));
    if (!buf) return 0;  /* the five-read path needs no room for candidates */
    gpu_sel *sel = (gpu_sel *)buf;  /* sel[0]: the sample's, sel[1]: the candidates' */
    uint32_t *sample = buf + 4, *cand = sample + round4(pl.ns), *cand_key = cand + round4(room);
    k_sel_sample<<<blocks_for(pl.ns, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        v, pl.stride, pl.ns, sample);
    size_t e = gpu_select_threshold(ctx, s, NULL, sample, pl.ns, pl.want, &sel[0]);
    if (gc_is_error(e)) return e;
    gpu_select_all_ties(ctx, &sel[0]);
    size_t m = 0;
    e = compact(ctx, s, v, NULL, NULL, n, &sel[0], cand, cand_key, room, &m);
    if (gc_is_error(e) || m < k || m > room) return e;
    /* Every element of the top-k reaches the threshold (m >= k do), and
     * the candidates lie in index order: ties among them go to the lower
     * index as over v. */
    e = gpu_select_threshold(ctx, s, NULL, cand_key, m, k, &sel[1]);
    if (gc_is_error(e)) return e;
    e = compact(ctx, s, NULL, cand_key, cand, m, &sel[1], idx, NULL, k, NULL);
    *done = !gc_is_error(e);
    return e;
}

size_t gpu_topk_indices(gcmpi_gpu_ctx *ctx, scratch *s, const float *v, size_t n, size_t k,
                        uint32_t *idx)
{
    if (k >= n) {
        if (n) k_iota<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(idx, n);
        return 0;
    }
    if (k == 0) return 0;
    int done;
    size_t e = topk_sampled(ctx, s, v, n, k, idx, &done);
    if (done || gc_is_error(e)) return e;
    gpu_sel *sel = (gpu_sel *)scratch_get(ctx, s, sizeof(gpu_sel));
    if (!sel) return GC_ERR(ALLOC);
    e = gpu_select_threshold(ctx, s, v, NULL, n, k, sel);
    if (gc_is_error(e)) return e;
    return gpu_select_compact(ctx, s, v, n, sel, idx, k, NULL);
}
