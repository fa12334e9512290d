/* sparse_index.h — what the sparse codecs (topk, dgc, randk) share: exact
 * top-k selection by radix select on the bits of |v|, and the sparse body
 * of topk and dgc (count, index coding, float32 values), whose head and
 * index section topkq reuses before its quantised values.
 *
 * Sparse body (little-endian):
 *   u32   k          elements sent, k <= n
 *   u8    mode       GC_SPARSE_DELTA or GC_SPARSE_BITMAP
 *   ...   indices    strictly increasing, in the chosen coding
 *   f32[k] values    in index order
 * GC_SPARSE_DELTA: deltas d0 = i0, dj = ij - i(j-1) >= 1, in blocks of
 *   GC_SPARSE_BLOCK (the last one partial): one byte w (0..32), then the
 *   block's deltas as w-bit fields, LSB first, zero padded to a byte.
 * GC_SPARSE_BITMAP: ceil(n/8) bytes, bit i (LSB first) set when i is sent,
 *   bits at and beyond n zero.
 * The encoder writes whichever coding is smaller (delta on ties). */
#ifndef GC_SPARSE_INDEX_H
#define GC_SPARSE_INDEX_H

#include "codec_impl.h"

#define GC_SPARSE_DELTA  0u
#define GC_SPARSE_BITMAP 1u
#define GC_SPARSE_BLOCK  128u
#define GC_SPARSE_HEAD   5u     /* k and mode */

/* First radix level: the top 11 of the 31 magnitude bits (exponent and
 * three mantissa bits). */
#define GC_SPARSE_HIST_SHIFT 20u
#define GC_SPARSE_HIST_BINS  2048u

/* |x| as an unsigned integer: ordered like |x| for every float (NaN above
 * infinity), so magnitudes can be radix-selected without a sort. */
static inline uint32_t gc_mag_key(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u & 0x7FFFFFFFu;
}

/* v = g, or v = g + r stored back into r when r is not NULL (one fused
 * pass); hist[b] counts the elements whose gc_mag_key(v) >> 20 == b.
 * Returns v (g or r). */
GC_INTERNAL const float *gc_sparse_accumulate(const float *g, float *r, size_t n,
                                              uint32_t hist[GC_SPARSE_HIST_BINS]);

/* The exact k largest |v[i]| (ties: lower index first), as ascending
 * indices in workspace slot GC_WS_A, stored in *idx (slot GC_WS_C is
 * scratch). hist is v's histogram from gc_sparse_accumulate. Returns
 * min(k, n) or GC_ERROR(ALLOC). */
GC_INTERNAL size_t gc_sparse_topk(const float *v, size_t n, size_t k,
                                  const uint32_t hist[GC_SPARSE_HIST_BINS],
                                  gc_workspace *ws, uint32_t **idx);

/* The first steps of topk, topkq and exact dgc: v = g (+ r, fused into r)
 * and the exact k largest |v[i]| as ascending indices (*idx, as
 * gc_sparse_topk; slot GC_WS_B is scratch too). Returns min(k, n) or
 * GC_ERROR(ALLOC). */
GC_INTERNAL size_t gc_sparse_accumulate_topk(const float *g, float *r, size_t n, size_t k,
                                             gc_workspace *ws, const float **v, uint32_t **idx);

/* Keep in cand[0..k) the k of the m ascending candidate indices with the
 * largest |v| (ties: lower index first), still ascending; cand must not be
 * in slot GC_WS_C (scratch). Returns min(k, m) or GC_ERROR(ALLOC). */
GC_INTERNAL size_t gc_sparse_topk_among(const float *v, uint32_t *cand, size_t m, size_t k,
                                        gc_workspace *ws);

/* The k-th largest of keys[0..m) (1 <= k <= m); reorders keys. */
GC_INTERNAL uint32_t gc_sparse_kth_largest(uint32_t *keys, size_t m, size_t k);

/* Upper bound of a sparse body sending at most kmax of n elements. */
GC_INTERNAL size_t gc_sparse_body_bound(size_t n, size_t kmax);

/* Write the body for ascending idx[0..k) with values v[idx]; when r is not
 * NULL also set r[idx] = 0 (the value went out exactly). Returns body bytes
 * or GC_ERROR(DST_TOO_SMALL). */
GC_INTERNAL size_t gc_sparse_body_write(const uint32_t *idx, size_t k, const float *v,
                                        float *r, size_t n, uint8_t *dst, size_t cap);

/* Write only the head and the index section of that body (no values) for
 * ascending idx[0..k): codecs that send the kept values in another form
 * (topkq) follow it with their own. Returns bytes or GC_ERROR(DST_TOO_SMALL). */
GC_INTERNAL size_t gc_sparse_index_write(const uint32_t *idx, size_t k, size_t n, uint8_t *dst,
                                         size_t cap);

/* Open an index section written by gc_sparse_index_write for n elements:
 * checks the head (k <= n, a known mode) and that the section lies within
 * len, stores k and returns the section's bytes (head included), or
 * GC_ERROR(TRUNCATED / CORRUPT). The indices themselves are checked by
 * gc_sparse_index_decode. */
GC_INTERNAL size_t gc_sparse_index_open(const uint8_t *src, size_t len, size_t n, size_t *k);

/* The k indices of a section that gc_sparse_index_open accepted (same n)
 * into idx[0..k), checking they are strictly increasing, below n, with
 * zero padding bits and (bitmap) exactly k of them. Returns 0 or
 * GC_ERROR(CORRUPT); idx may then be partly written. */
GC_INTERNAL size_t gc_sparse_index_decode(const uint8_t *src, size_t n, uint32_t *idx);

typedef enum gc_sparse_op {
    GC_SPARSE_ADD,   /* x[i] += value */
    GC_SPARSE_ZERO,  /* x[i] = 0 (momentum correction) */
} gc_sparse_op;

/* Validate a sparse body for n elements and apply op at every index it
 * sends. Returns 0, GC_ERROR(TRUNCATED) or GC_ERROR(CORRUPT); on error x
 * may be partly updated. */
GC_INTERNAL size_t gc_sparse_body_apply(const uint8_t *src, size_t len, float *x, size_t n,
                                        gc_sparse_op op);

#endif /* GC_SPARSE_INDEX_H */
