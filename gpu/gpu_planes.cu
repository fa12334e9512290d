/* gpu_planes.cu — stochastic sign-magnitude codes in bit planes
 * (gpu_planes.cuh). */
#include "gpu_planes.cuh"

/* Columns over all buckets: ceil(bucket / 8) per full bucket, fewer for a
 * short last one (column x is bucket x / ceil(bucket / 8) either way). */
static size_t plane_columns(size_t n, size_t bucket)
{
    const size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * planes_stride(bucket) + planes_stride(bucket_len(n, bucket, nb - 1));
}

__global__ void k_signmag_encode(const float *g, float *r, size_t n, size_t bucket, size_t ncols,
                                 unsigned bits, float s, uint32_t key, const float *inv,
                                 const float *step, uint8_t *planes, uint8_t *codes)
{
    const size_t mfull = (bucket + 7) / 8;
    const unsigned sign_shift = bits - 1;
    const int32_t top = (int32_t)s;
    GRID_STRIDE(x, ncols) {
        const size_t b = x / mfull, k = x % mfull, len = bucket_len(n, bucket, b);
        const size_t m = (len + 7) / 8, i0 = b * bucket;
        if (k >= m) continue;
        uint8_t code[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (unsigned j = 0; j < 8; j++) {
            const size_t e = j * m + k;
            if (e >= len) break;
            const float v = r ? r[i0 + e] : g[i0 + e];
            const uint32_t sign = fbits(v) >> 31;
            const float xq = clamp_abs(gx_mul(gx_abs(v), inv[b]), s);
            int32_t level = (int32_t)gx_add(xq, rand_unit(key, (uint32_t)(i0 + e)));
            level = level < top ? level : top;
            const float d = bitsf(fbits(gx_mul((float)level, step[b])) ^ (sign << 31));
            code[j] = (uint8_t)((uint32_t)level | (sign << sign_shift));
            if (r) r[i0 + e] = gx_sub(v, d);
            if (codes) codes[i0 + e] = code[j];
        }
        if (codes) continue;
        uint8_t *out = planes + b * bits * mfull + k;
        for (unsigned p = 0; p < bits; p++) {
            unsigned byte = 0;
            for (unsigned j = 0; j < 8; j++) byte |= ((code[j] >> p) & 1u) << j;
            out[p * m] = (uint8_t)byte;
        }
    }
}

__global__ void k_signmag_decode(const uint8_t *planes, size_t n, size_t bucket, size_t ncols,
                                 unsigned bits, const float *step, float *acc, unsigned *bad)
{
    const size_t mfull = (bucket + 7) / 8;
    const unsigned sign_shift = bits - 1;
    const uint32_t mask = (1u << sign_shift) - 1u;
    GRID_STRIDE(x, ncols) {
        const size_t b = x / mfull, k = x % mfull, len = bucket_len(n, bucket, b);
        const size_t m = (len + 7) / 8, i0 = b * bucket;
        if (k >= m) continue;
        const uint8_t *in = planes + b * bits * mfull + k;
        uint32_t code[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (unsigned p = 0; p < bits; p++) {
            const unsigned byte = in[p * m];
            for (unsigned j = 0; j < 8; j++) code[j] |= ((byte >> j) & 1u) << p;
        }
        for (unsigned j = 0; j < 8; j++) {
            const size_t e = j * m + k;
            if (e >= len) {
                if (code[j]) atomicOr(bad, 1u);
                continue;
            }
            const float d = bitsf(fbits(gx_mul((float)(int32_t)(code[j] & mask), step[b]))
                                  ^ ((code[j] >> sign_shift) << 31));
            acc[i0 + e] = gx_add(acc[i0 + e], d);
        }
    }
}

void gpu_signmag_encode(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n, size_t bucket,
                        unsigned bits, float s, uint32_t key, const float *inv,
                        const float *step, uint8_t *planes, uint8_t *codes)
{
    const size_t ncols = plane_columns(n, bucket);
    if (ncols)
        k_signmag_encode<<<blocks_for(ncols, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
            g, r, n, bucket, ncols, bits, s, key, inv, step, planes, codes);
}

void gpu_signmag_decode_add(gcmpi_gpu_ctx *ctx, const uint8_t *planes, size_t n, size_t bucket,
                            unsigned bits, const float *step, float *acc, unsigned *bad)
{
    const size_t ncols = plane_columns(n, bucket);
    if (ncols)
        k_signmag_decode<<<blocks_for(ncols, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
            planes, n, bucket, ncols, bits, step, acc, bad);
}

__global__ void k_bits_encode(const float *g, float *r, size_t n, size_t bucket, size_t ncols,
                              const uint8_t *levels, uint8_t *planes)
{
    const size_t mfull = (bucket + 7) / 8;
    GRID_STRIDE(x, ncols) {
        const size_t b = x / mfull, k = x % mfull, len = bucket_len(n, bucket, b);
        const size_t m = (len + 7) / 8, i0 = b * bucket;
        if (k >= m) continue;
        const float hi = ld_f32(levels + 8 * b), lo = ld_f32(levels + 8 * b + 4);
        unsigned byte = 0;
        for (unsigned j = 0; j < 8; j++) {
            const size_t e = j * m + k;
            if (e >= len) break;
            const float v = r ? r[i0 + e] : g[i0 + e];
            const unsigned bit = v >= 0.0f;
            byte |= bit << j;
            if (r) r[i0 + e] = gx_sub(v, bit ? hi : lo);
        }
        planes[b * mfull + k] = (uint8_t)byte;
    }
}

__global__ void k_bits_decode(const uint8_t *planes, size_t n, size_t bucket, size_t ncols,
                              const uint8_t *levels, float *acc, unsigned *bad)
{
    const size_t mfull = (bucket + 7) / 8;
    GRID_STRIDE(x, ncols) {
        const size_t b = x / mfull, k = x % mfull, len = bucket_len(n, bucket, b);
        const size_t m = (len + 7) / 8, i0 = b * bucket;
        if (k >= m) continue;
        const float hi = ld_f32(levels + 8 * b), lo = ld_f32(levels + 8 * b + 4);
        const unsigned byte = planes[b * mfull + k];
        for (unsigned j = 0; j < 8; j++) {
            const size_t e = j * m + k;
            if (e < len)
                acc[i0 + e] = gx_add(acc[i0 + e], ((byte >> j) & 1u) ? hi : lo);
            else if ((byte >> j) & 1u)
                atomicOr(bad, 1u);
        }
    }
}

void gpu_bits_encode(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n, size_t bucket,
                     const uint8_t *levels, uint8_t *planes)
{
    const size_t ncols = plane_columns(n, bucket);
    if (ncols)
        k_bits_encode<<<blocks_for(ncols, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
            g, r, n, bucket, ncols, levels, planes);
}

void gpu_bits_decode_add(gcmpi_gpu_ctx *ctx, const uint8_t *planes, size_t n, size_t bucket,
                         const uint8_t *levels, float *acc, unsigned *bad)
{
    const size_t ncols = plane_columns(n, bucket);
    if (ncols)
        k_bits_decode<<<blocks_for(ncols, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
            planes, n, bucket, ncols, levels, acc, bad);
}
