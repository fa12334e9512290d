/* gpu_select.cuh — exact top-k selection on the device, as
 * codecs/sparse_index.c selects on the CPU: the k-th largest magnitude key
 * (|x| as bits, so NaN ranks above infinity) found digit by digit (11, 10,
 * 10 bits from the top) by histograms, never a sort; ties at the threshold
 * go to the lower indices. The kept indices come out ascending, placed by
 * a prefix scan of per-tile counts in the same pass that writes them. */
#ifndef GPU_SELECT_CUH
#define GPU_SELECT_CUH

#include "gpu_internal.cuh"

/* A selection, in device memory: every element with key > key, and the
 * first `ties` (by index) of those with key == key. */
typedef struct gpu_sel { uint32_t key; uint32_t ties; } gpu_sel;

/* The magnitude key of sparse_index.h (gc_mag_key). */
__device__ static inline uint32_t mag_key(float x) { return __float_as_uint(x) & 0x7FFFFFFFu; }

/* *sel = the k largest (1 <= k <= n) of keys[0..n), or of the magnitude
 * keys of v[0..n) when keys is NULL (then v is g whenever s asks for the
 * non-finite check, which the first pass takes). Queued; 0 or
 * GC_ERR_ALLOC. */
size_t gpu_select_threshold(gcmpi_gpu_ctx *ctx, scratch *s, const float *v,
                            const uint32_t *keys, size_t n, size_t k, gpu_sel *sel);

/* Make *sel take every element with key >= threshold (all ties). */
void gpu_select_all_ties(gcmpi_gpu_ctx *ctx, gpu_sel *sel);

/* One pass over v[0..n): idx[0..min(count, cap)) = the selected indices,
 * ascending (positions from cap on are dropped, so a caller may pass a
 * bound smaller than the count and check the count after; the pass takes
 * s's non-finite check as gpu_select_threshold does). With count
 * not NULL, waits and stores the number of elements selected; else
 * queued. 0 or an error. */
size_t gpu_select_compact(gcmpi_gpu_ctx *ctx, scratch *s, const float *v, size_t n,
                          const gpu_sel *sel, uint32_t *idx, size_t cap, size_t *count);

/* idx[0..k) = the k largest |v| (ties: lower index first), ascending, for
 * any k <= n (k >= n: every index). Large n with k/n <= 1/16 go through a
 * sampled threshold and wait once for its candidates' count; else
 * queued. 0 or an error. */
size_t gpu_topk_indices(gcmpi_gpu_ctx *ctx, scratch *s, const float *v, size_t n, size_t k,
                        uint32_t *idx);

#endif
