/* gpu_sparse.cuh — the sparse body of codecs/sparse_index.h (count, mode,
 * delta-or-bitmap indices, float32 values) written on the device, and its
 * decode_add. Used by topk, dgc (and the index section by topkq). */
#ifndef GPU_SPARSE_CUH
#define GPU_SPARSE_CUH

#include "gpu_internal.cuh"

#define SPARSE_HEAD 5u     /* GC_SPARSE_HEAD: u32 k, u8 mode */
#define SPARSE_BLOCK 128u  /* GC_SPARSE_BLOCK */
#define SPARSE_BITMAP_MODE 1u  /* GC_SPARSE_BITMAP */

/* Upper bound of a sparse body sending at most kmax of n elements
 * (gc_sparse_body_bound). */
static inline size_t sparse_body_bound(size_t n, size_t kmax) { return SPARSE_HEAD + (n + 7) / 8 + 4 * kmax; }

/* Head and index section for ascending idx[0..k) (device) at body, in
 * the smaller coding (delta on ties), as gc_sparse_index_write. Waits for
 * the section's size; returns its bytes (head included) or an error. */
size_t gpu_sparse_index_write(gcmpi_gpu_ctx *ctx, scratch *s, const uint32_t *idx, size_t k,
                              size_t n, uint8_t *body, size_t cap);

/* The whole body, values v[idx[j]] after the indices; with r, r[idx] = 0
 * (the values went out exactly), as gc_sparse_body_write. */
size_t gpu_sparse_body_write(gcmpi_gpu_ctx *ctx, scratch *s, const uint32_t *idx, size_t k,
                             const float *v, float *r, size_t n, uint8_t *body, size_t cap);

/* decode_add of a sparse body (its bytes on the host; in device memory
 * too when the payload lies there): the layout is validated on the host
 * (gcmpi_gpu_host_sparse_open), delta-coded indices are decoded on the
 * device (their checks set the decode flag, waited for before any add, so
 * a corrupt body leaves acc as it was), a bitmap on the host; then one
 * scatter-add kernel. */
size_t gpu_sparse_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                             float *acc, size_t n);

/* x[i] = 0 at every index the sparse body sends (gc_sparse_body_apply's
 * GC_SPARSE_ZERO: DGC's momentum factor masking), the body's bytes on
 * the host, validated as decode_add does. Waits; 0 or an error. */
size_t gpu_sparse_zero_sent(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                            float *x, size_t n);

/* The same for randk's and topkq's bodies (codec_randk.cu: the indices of
 * the body's seed and k, drawn on the host; codec_topkq.cu: its index
 * section, topk's), for DGC's momentum correction with those codecs. */
size_t gpu_randk_zero_sent(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *x, size_t n);
size_t gpu_topkq_zero_sent(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *x, size_t n);
/* x[idx[j]] = 0 for j < k (idx on the device), queued. */
void gpu_zero_at(gcmpi_gpu_ctx *ctx, const uint32_t *idx, size_t k, float *x);

/* The index section at body (host bytes of len; dbody the same bytes on
 * the device), as gc_sparse_index_open and gc_sparse_index_decode refuse
 * and decode it: *k and *didx (k indices on the device, from s), delta
 * coding and bitmaps decoded on the device. Waits. Returns the
 * section's bytes (head included) or an error. */
size_t gpu_sparse_indices(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                          size_t n, const uint8_t *dbody, size_t *k, uint32_t **didx);

/* Queue idx[0..k) = the indices of the set bits of the bitmap
 * bits[0..(n + 7) / 8) (device memory, any alignment; bit i of byte i / 8
 * is index i), ascending, at most k written; with bad (a device word),
 * *bad = 1 where a bit lies past n or the bitmap holds other than k
 * indices. 0 or an error. */
size_t gpu_bitmap_indices(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *bits, size_t n,
                          size_t k, uint32_t *idx, unsigned *bad);

/* gpu_host_sparse.c (plain C: it calls the codec library's sparse_index.c,
 * whose header is C-only). */
extern "C" {
/* As gc_sparse_body_apply validates the layout (head, index section's
 * block widths and sizes, values filling the body): *k and *vals_off.
 * Returns 0, GC_ERR_TRUNCATED or GC_ERR_CORRUPT. */
size_t gcmpi_gpu_host_sparse_open(const uint8_t *body, size_t len, size_t n, size_t *k,
                                  size_t *vals_off);
/* The index section's bytes (head included) and *k, as
 * gc_sparse_index_open. */
size_t gcmpi_gpu_host_index_open(const uint8_t *body, size_t len, size_t n, size_t *k);
}

#endif
