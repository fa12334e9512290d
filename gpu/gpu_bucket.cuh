/* gpu_bucket.cuh — per-bucket reductions in the CPU's order
 * (codecs/quant_common.h): sums of |v|, v^2 or one sign's part of v over
 * GC_Q_CHUNK-element chunks, 16 float lanes combined pairwise, chunk sums
 * added in order in double; and max |v| (order free). The first reduction
 * of a codec also forms v = g + r into r. */
#ifndef GPU_BUCKET_CUH
#define GPU_BUCKET_CUH

#include "gpu_internal.cuh"

enum {
    SUM_ABS,     /* |v|            (sign)   */
    SUM_SQUARE,  /* v * v          (qsgd)   */
    SUM_NONNEG,  /* v where v >= 0, else +0 (onebit) */
    SUM_NEG,     /* v where !(v >= 0), else +0       */
};

/* Per-bucket sums, device arrays of nb entries: total[b] the double sum,
 * nan[b] 0 or the bits of the first NaN chunk sum (quiet), which the CPU
 * carries through its double additions unchanged. */
typedef struct gpu_sums { double *total; uint32_t *nan; } gpu_sums;

/* Queue the sums of `what` over v = g (+ r, stored into r when r is not
 * NULL) per bucket; nb >= 1. 0 or GC_ERR_ALLOC / GENERIC. */
size_t gpu_bucket_sums(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                       size_t bucket, int what, gpu_sums *out);

/* amax[b] = max |v| of bucket b as float bits (NaN above infinity), v = g
 * (+ r into r). Queued. */
void gpu_bucket_absmax(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n, size_t bucket,
                       uint32_t *amax);

/* count[b] = elements of bucket b with v >= 0 (NaN not). Queued. */
void gpu_bucket_count_nonneg(gcmpi_gpu_ctx *ctx, const float *v, size_t n, size_t bucket,
                             uint32_t *count);

#endif
