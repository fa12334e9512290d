/* gcmpi_gpu.h — CUDA encoders/decoders for device buffers (issue 7).
 *
 * libgcmpi_gpu.so is a separate library: the preloaded libgcmpi.so does not
 * link it (nor libcudart); the shim dlopen()s it only once it sees a device
 * buffer. cudart is linked statically, so the library loads without
 * /usr/local/cuda/lib64 on the library path; every function is safe to call
 * on a machine without a driver or a device (it then reports "no device" or
 * returns GC_ERR_GENERIC).
 *
 * Payloads are the CPU codecs' payloads, byte for byte: same header, same
 * body, same scales (the per-bucket sums of quant_common.h are formed in the
 * same order, and float operations are rounded one by one, without fused
 * multiply-adds). NaN results follow the x86 SSE rules the CPU build runs
 * under (an operand's NaN is kept and made quiet; an invalid operation gives
 * the default NaN 0xFFC00000), so non-finite inputs give the same bytes too.
 *
 * Codecs: every codec of the registry (gpu/gpu_codecs.cu maps an id to
 * its kernels, one gpu/codec_NAME.cu per codec). Host steps that remain:
 * powersgd's starting Q (libm, small: cols x rank floats) is made on the
 * host by the CPU code and copied over, and P's Gram-Schmidt runs there;
 * decoding reads the layout of sparse index sections on the host. randk's
 * indices, and the Elias (qsgd) and Exp-Golomb (eg) streams, are drawn
 * and decoded on the device. A zstd stage (params.zstd_level > 0)
 * returns GC_ERR_UNSUPPORTED: the caller then stages the buffer through the
 * host and uses gc_encode. topkq uses gc_params.bits for every bucket, or
 * the width policy installed on the context (gcmpi_gpu_set_width_policy),
 * whose choices and observations are then the CPU encoder's, in order. Errors are gc_error values
 * returned as size_t, exactly as in gcmpi_codec.h (test with gc_is_error()).
 * CUDA failures are GC_ERR_ALLOC (device memory) or GC_ERR_GENERIC.
 *
 * Every call is synchronous for the host: work is queued on the context's
 * stream and the stream is synchronised before the call returns. A context
 * must not be used by two threads at once.
 */
#ifndef GCMPI_GPU_H
#define GCMPI_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "gcmpi_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GCMPI_GPU_API __attribute__((visibility("default")))
#else
#define GCMPI_GPU_API
#endif

/* Number of CUDA devices; 0 when there is no driver, no device or any
 * error. */
GCMPI_GPU_API int gcmpi_gpu_device_count(void);

/* 1 when p is device memory (cudaMalloc*, or managed memory) that a kernel
 * may read; 0 for host memory, NULL, and on any error (no driver, ...).
 * Clears the CUDA error state it may have set. */
GCMPI_GPU_API int gcmpi_gpu_is_device_pointer(const void *p);

/* 1 when gcmpi_gpu_encode / gcmpi_gpu_decode_add implement codec c. */
GCMPI_GPU_API int gcmpi_gpu_supports(const gc_codec *c);

/* A stream and a memory pool on the current device (cudaMallocFromPoolAsync;
 * the pool is the context's own, not the device's default pool, and keeps
 * freed memory, so steady-state calls allocate nothing from the driver).
 * The stream is a blocking one: it waits for work the application queued on
 * the legacy default stream; work on the application's other streams must be
 * complete before a call (as MPI requires of a send buffer anyway).
 * NULL when there is no device or CUDA fails. */
typedef struct gcmpi_gpu_ctx gcmpi_gpu_ctx;
GCMPI_GPU_API gcmpi_gpu_ctx *gcmpi_gpu_create(void);
GCMPI_GPU_API void gcmpi_gpu_destroy(gcmpi_gpu_ctx *ctx);
/* Install (or, with NULL, remove) the width policy topkq encodes on ctx
 * use, as gc_workspace_set_width_policy does for gc_encode: per bucket
 * choose() is called with the bucket's statistics and observe() with the
 * error energy of the width it chose, on the host, in bucket order. The
 * policy is copied; its ctx must outlive the encodes. */
GCMPI_GPU_API void gcmpi_gpu_set_width_policy(gcmpi_gpu_ctx *ctx, const gc_width_policy *p);

/* Device memory from the context's pool (NULL on failure), its release,
 * and a copy in any direction (cudaMemcpyDefault). gcmpi_gpu_copy returns
 * 0 or an error. Used by the tests and by the shim to stage buffers. */
GCMPI_GPU_API void *gcmpi_gpu_alloc(gcmpi_gpu_ctx *ctx, size_t bytes);
GCMPI_GPU_API void gcmpi_gpu_dealloc(gcmpi_gpu_ctx *ctx, void *p);
GCMPI_GPU_API size_t gcmpi_gpu_copy(gcmpi_gpu_ctx *ctx, void *dst, const void *src,
                                    size_t bytes);

/* gc_encode for device buffers: g[0..n) and residual[0..n) (NULL: no error
 * feedback) are device memory; dst (capacity cap >= gc_bound(c, n, p)) may
 * be host or device memory. Same payload and same residual as gc_encode
 * with the same arguments. Returns payload bytes or an error.
 * Device dst: the kernels write the body in place at dst + GC_HEADER_SIZE
 * (staged in pool memory and copied only when that address is not 16-byte
 * aligned) and the header goes in with one small host-to-device copy; bytes
 * of dst past the payload may be written too (up to cap). Host dst: the
 * body is built on the device and copied over. The CRC flag copies the body
 * to the host for gc_crc32c.
 * inf and NaN in g (payload.c, GC_HF_NONFINITE): one vectorised pass over g
 * sets a device flag. Without a residual, and for a codec whose body layout
 * does not depend on the values (all but topk, dgc, topkq, eg and qsgd's
 * Elias coding), the pass and the encode are queued back to back and the
 * flag is read after the one wait at the end; a flagged input is then
 * encoded again by the CPU code on a host copy. Otherwise the pass is
 * waited for first (a residual must never take inf or NaN). */
GCMPI_GPU_API size_t gcmpi_gpu_encode(gcmpi_gpu_ctx *ctx, const gc_codec *c,
                                      const float *g, float *residual, size_t n,
                                      const gc_params *p, uint64_t seed,
                                      void *dst, size_t cap);

/* gc_decode_add for a device accumulator: src[0..len) is a payload in host
 * or device memory, acc[0..n) device memory; acc += decode(src). Validates
 * like gc_decode_add (header, CRC32C, body length, corrupt codes); on an
 * error acc may be partly updated.
 * Host src: the body is copied to the device (at full speed from
 * page-locked memory, gcmpi_gpu_host_alloc). Device src: one small copy
 * fetches the header and the body's first fields (those a codec checks on
 * the host: bucket size, bits, shape, ...); the kernels then read the body
 * where it lies (copied device to device only when src + GC_HEADER_SIZE is
 * not 16-byte aligned, and randk's values). The whole body comes to the
 * host only where the host must read it: with the CRC flag, for the
 * layout of the sparse index sections of topk, dgc and topkq, and for
 * flagged (non-finite) payloads (qsgd's Elias and eg's streams are read
 * where they lie: the host reads only their segment size).
 * For this the context keeps a host buffer as long as the longest device
 * payload decoded so far (pageable; only the pages read are touched). */
GCMPI_GPU_API size_t gcmpi_gpu_decode_add(gcmpi_gpu_ctx *ctx, const void *src, size_t len,
                                          float *acc, size_t n);

/* ---- staging for the shim (gpu/gpu_staging.cu) ----------------------------
 * What pmpi/device.c needs besides the codecs: page-locked host memory for
 * payloads and staged buffers (allocated once and reused by the shim's
 * pools), and zeroing of device memory (fresh residuals, accumulators). */

/* Page-locked host memory (cudaHostAlloc), NULL on failure; its release. */
GCMPI_GPU_API void *gcmpi_gpu_host_alloc(size_t bytes);
GCMPI_GPU_API void gcmpi_gpu_host_free(void *p);

/* bytes of device memory at p set to zero, queued on the context's stream
 * and waited for. Returns 0 or an error. */
GCMPI_GPU_API size_t gcmpi_gpu_zero(gcmpi_gpu_ctx *ctx, void *p, size_t bytes);

/* ---- transparent momentum correction (GCMPI_MOMENTUM, gpu_momentum.cu) ----
 * codecs/momentum.c on device memory, bit for bit. */

/* 1 when the n floats at g (device) are all finite, 0 when one is inf or
 * NaN, or an error. */
GCMPI_GPU_API size_t gcmpi_gpu_all_finite(gcmpi_gpu_ctx *ctx, const float *g, size_t n);
/* u = beta*u + g on the device (gc_momentum_accumulate); 0 or an error.
 * The one call here that does not wait: it is queued on the context's
 * stream, so the next call on the context (the encode of u) runs after it,
 * and the host must not read u before that call returns. */
GCMPI_GPU_API size_t gcmpi_gpu_momentum_accumulate(gcmpi_gpu_ctx *ctx, float *u, const float *g,
                                                   size_t n, float beta);
/* gc_momentum_unfold on the device: 1 when s was finite and was unfolded
 * against m, 0 when s holds inf or NaN (s and m left as they are), or an
 * error. */
GCMPI_GPU_API size_t gcmpi_gpu_momentum_unfold(gcmpi_gpu_ctx *ctx, float *s, float *m, size_t n,
                                               float beta);

/* ---- DGC's momentum correction (GCMPI_EF_MOMENTUM, gpu_momentum.cu) ----
 * gc_encode_momentum on device vectors, byte for byte: u = m u + g, the
 * fused error-feedback encode of v + u, u cleared where sent; an overflow
 * step (inf or NaN in g) is sent flagged and leaves u and v alone. */

/* 1 for the codecs gcmpi_gpu_encode_momentum takes: topk, dgc, randk, topkq. */
GCMPI_GPU_API int gcmpi_gpu_encode_momentum_supports(const gc_codec *c);
/* g, u, v: device memory; dst as gcmpi_gpu_encode. Payload bytes or an
 * error (GC_ERR_UNSUPPORTED for another codec). */
GCMPI_GPU_API size_t gcmpi_gpu_encode_momentum(gcmpi_gpu_ctx *ctx, const gc_codec *c,
                                               const float *g, float *u, float *v, size_t n,
                                               float momentum, const gc_params *p,
                                               uint64_t seed, void *dst, size_t cap);

/* ---- the native algorithm's int8 (pmpi/coll_native.c, gpu_native.cu) ----
 * Integer levels the MPI library sums itself: per bucket the maxima agreed
 * by MPI_MAX, levels in [-L, L] summed by MPI_SUM, bit for bit the host
 * loops, so device and host ranks meet in one call. g, r and out are device
 * memory, top and q host memory (page-locked for full-speed copies); nb =
 * ceil(n / bucket) maxima, q holds n levels of elem = 1, 2 or 4 bytes,
 * 1 <= L <= 127. Each returns 0 or an error, after its wait. */

/* top[b] = max |v| over bucket b, +inf when it holds inf or NaN; v = g, or
 * g + r stored into r (r NULL: no error feedback). */
GCMPI_GPU_API size_t gcmpi_gpu_native_int8_max(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                               size_t n, size_t bucket, float *top);
/* q[i] = round(v L / top[b]) (nearest, ties to even) clamped to [-L, L],
 * v = r (as left by _max) or g; r -= q top[b] / L. A bucket whose top is 0
 * sends zeros; one whose top is not finite sends zeros and drops its
 * residual. */
GCMPI_GPU_API size_t gcmpi_gpu_native_int8_quantise(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                                    size_t n, size_t bucket, const float *top,
                                                    float levels, size_t elem, void *q);
/* out[i] = q[i] top[b] / L (the summed levels), NaN where top[b] is not
 * finite. */
GCMPI_GPU_API size_t gcmpi_gpu_native_int8_dequantise(gcmpi_gpu_ctx *ctx, const void *q,
                                                      size_t elem, size_t n, size_t bucket,
                                                      const float *top, float levels,
                                                      float *out);

/* ---- the native algorithm's randk (pmpi/coll_native.c, gpu_native.cu) ----
 * idx: the k distinct indices of gc_randk_indices (the same on every
 * rank), in host memory or drawn into device memory by
 * gcmpi_gpu_randk_indices; vals, marks: host memory; g, r, out: device
 * memory. */

/* idx[0..k) (device memory) = gc_randk_indices' k indices of n elements
 * for seed (k <= n <= UINT32_MAX), drawn on the device. 0 or an error. */
GCMPI_GPU_API size_t gcmpi_gpu_randk_indices(gcmpi_gpu_ctx *ctx, size_t n, size_t k,
                                             uint64_t seed, uint32_t *idx);

/* vals[j] = scale v[idx[j]], v = g, or r after r += g; then with r,
 * r[idx[j]] = v - scale v, and r = 0 when any r + g was inf or NaN. 0 or
 * an error. */
GCMPI_GPU_API size_t gcmpi_gpu_native_randk_values(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                                   size_t n, const uint32_t *idx, size_t k,
                                                   float scale, float *vals);
/* marks[b] = the sum, in element order, of the inf and NaN values of g in
 * block b (elements b*block .. b*block+block-1), 0 where there are none. */
GCMPI_GPU_API size_t gcmpi_gpu_native_randk_marks(gcmpi_gpu_ctx *ctx, const float *g, size_t n,
                                                  size_t block, float *marks);
/* out = 0, out[idx[j]] = vals[j], then out[i] += marks[i / block] where
 * that mark is not 0 (marks NULL: none). 0 or an error. */
GCMPI_GPU_API size_t gcmpi_gpu_native_randk_out(gcmpi_gpu_ctx *ctx, const uint32_t *idx, size_t k,
                                                const float *vals, const float *marks,
                                                size_t block, size_t n, float *out);

/* ---- the native algorithm's powersgd (pmpi/coll_native.c, codec_powersgd.cu)
 * The steps around its two allreduces, with the codec's kernels: M = g,
 * or r after r += g; P = M Q, Q = M^T P, and M -+ P Q^T, bit for bit the
 * CPU's gc_powersgd_* loops. The small factors P (rows x rank) and Q
 * (cols x rank) of gc_powersgd_shape_of(n, rank) are host memory, where
 * MPI sums them and the CPU orthonormalises P; g, r, m and out are device
 * memory. Each waits before it returns. */

/* p = M q. Returns 1 when M is finite, 0 when it holds inf or NaN, or an
 * error. */
GCMPI_GPU_API size_t gcmpi_gpu_native_powersgd_p(gcmpi_gpu_ctx *ctx, const float *g, float *r,
                                                 size_t n, size_t rank, const float *q, float *p);
/* q = M^T p (m: M on the device, r or g); then, when r_sub is not NULL,
 * r_sub -= p q^T (the residual: r_sub may be m). 0 or an error. */
GCMPI_GPU_API size_t gcmpi_gpu_native_powersgd_q(gcmpi_gpu_ctx *ctx, const float *m, size_t n,
                                                 size_t rank, const float *p, float *q,
                                                 float *r_sub);
/* out = p q^T (the first n elements). 0 or an error. */
GCMPI_GPU_API size_t gcmpi_gpu_native_powersgd_out(gcmpi_gpu_ctx *ctx, const float *p,
                                                   const float *q, size_t n, size_t rank,
                                                   float *out);

/* ---- the sparse_rd algorithm (pmpi/coll_sparse_rd.c, gpu_sparse_rd.cu) ----
 * Its sets: m entries as units[0..m) indices, ascending, then units[m..2m)
 * the values' float bits; units is host memory, d and out device memory.
 * Each waits before it returns. */

/* m = the number of d[i] != 0 (+0 and -0 left out, NaN kept: the host's
 * test); when m <= cap, units[0..2m) = those entries as a set (else
 * nothing is written). Returns m or an error; n < 2^32. */
GCMPI_GPU_API size_t gcmpi_gpu_sparse_rd_set(gcmpi_gpu_ctx *ctx, const float *d, size_t n,
                                             uint32_t *units, size_t cap);
/* out = 0, then out[idx] += value for each of the set's m entries (distinct
 * indices below n). 0 or an error. */
GCMPI_GPU_API size_t gcmpi_gpu_sparse_rd_out(gcmpi_gpu_ctx *ctx, const uint32_t *units, size_t m,
                                             size_t n, float *out);

/* ---- the adaptive layer on device buffers (gpu_adapt.cu) ----------------
 * The element passes of codecs/adapt/ for a buffer whose history is kept
 * in device memory (gc_adapt.h "the history kept apart"), bit for bit the
 * host loops; the scalar steps stay on the host. x, g, prev, sum and out
 * are device memory. Each waits before it returns 0 or an error. */

/* sample[j] (host memory, m floats) = x[gc_edgc_sample_index(n, beta,
 * seed, j)] for m = gc_edgc_sample_len(n, beta) (m == n: x itself). */
GCMPI_GPU_API size_t gcmpi_gpu_adapt_sample(gcmpi_gpu_ctx *ctx, const float *x, size_t n,
                                            size_t m, uint64_t seed, float *sample);
/* GCT shaping (gc_gct_shape's loop with gc_gct_step's gc_gct_apply): out =
 * g when with_prev is 0, else GCT's element formula of g and prev with c,
 * eps and eq9. out may be g. */
GCMPI_GPU_API size_t gcmpi_gpu_adapt_gct_shape(gcmpi_gpu_ctx *ctx, const float *g,
                                               const float *prev, size_t n, int with_prev,
                                               float c, float eps, int eq9, float *out);
/* prev[i] = sum[i] / ranks (gc_gct_remember). */
GCMPI_GPU_API size_t gcmpi_gpu_adapt_remember(gcmpi_gpu_ctx *ctx, const float *sum, size_t n,
                                              int ranks, float *prev);
/* gc_var_moves: *moved and *norm (host) in its order, prev the mean. */
GCMPI_GPU_API size_t gcmpi_gpu_adapt_var_moves(gcmpi_gpu_ctx *ctx, const float *sum, size_t n,
                                               int ranks, float *prev, double *moved,
                                               double *norm);

#ifdef __cplusplus
}
#endif
#endif /* GCMPI_GPU_H */
