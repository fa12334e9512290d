/* gpu_planes.cuh — the stochastic sign-magnitude codes of qsgd and
 * terngrad (gc_q_stochastic_one) and the bit planes they are packed into
 * (quant_common.h: bucket b's planes at b * bits * ceil(bucket / 8); bit j
 * of byte k of plane p is bit p of element k + j*m's code). One thread per
 * plane column k handles the 8 elements of the column. */
#ifndef GPU_PLANES_CUH
#define GPU_PLANES_CUH

#include "gpu_internal.cuh"

/* Codes of v = r (after the first pass) or g, with levels 0..s, per-bucket
 * inv[b] and step[b] (device): into planes (bits planes per bucket) or,
 * when codes is not NULL, one code byte per element into codes. With r,
 * r = v - decoded. Queued. */
void gpu_signmag_encode(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n, size_t bucket,
                        unsigned bits, float s, uint32_t key, const float *inv,
                        const float *step, uint8_t *planes, uint8_t *codes);

/* The statistic that scales a bucket's levels in gpu_signmag_encode_tiles. */
enum {
    STAT_NORM,    /* qsgd: scale = l2 norm (sum of v^2 in the CPU's order), inv = s / norm,
                     step = norm / s */
    STAT_ABSMAX,  /* terngrad: scale = max |v|, inv = 1 / scale, step = scale */
};

/* gpu_signmag_encode with each bucket's scale computed in the same pass,
 * for buckets that fit a tile (tile_fits, gpu_bucket.cuh): reads g (and r)
 * once. The scale goes to stats + 4 b (little-endian float), the bucket
 * size to field when field is not NULL; check as tile_load's. Queued. */
void gpu_signmag_encode_tiles(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n,
                              size_t bucket, unsigned bits, float s, uint32_t key, int stat,
                              uint8_t *field, uint8_t *stats, uint8_t *planes, uint8_t *codes,
                              unsigned *check);

/* acc += sign * level * step[b] from the planes; a set padding code sets
 * *bad. Queued. */
void gpu_signmag_decode_add(gcmpi_gpu_ctx *ctx, const uint8_t *planes, size_t n, size_t bucket,
                            unsigned bits, const float *step, float *acc, unsigned *bad);

/* One bit per element (onebit): bit = (v >= 0), decoded as hi when set
 * and lo when clear, with hi and lo little-endian floats at levels + 8 b
 * and levels + 8 b + 4 (device). With r, r = v - (hi or lo). */
void gpu_bits_encode(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n, size_t bucket,
                     const uint8_t *levels, uint8_t *planes);

/* acc += hi or lo by the bits; a set padding bit sets *bad. Queued. */
void gpu_bits_decode_add(gcmpi_gpu_ctx *ctx, const uint8_t *planes, size_t n, size_t bucket,
                         const uint8_t *levels, float *acc, unsigned *bad);

#endif
