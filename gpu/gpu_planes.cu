/* gpu_planes.cu — stochastic sign-magnitude codes in bit planes
 * (gpu_planes.cuh). */
#include "gpu_bucket.cuh"
#include "gpu_planes.cuh"

/* Columns over all buckets: ceil(bucket / 8) per full bucket, fewer for a
 * short last one (column x is bucket x / ceil(bucket / 8) either way). */
static size_t plane_columns(size_t n, size_t bucket)
{
    const size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * planes_stride(bucket) + planes_stride(bucket_len(n, bucket, nb - 1));
}

/* gc_q_stochastic_one: the code of v (level | sign << sign_shift) with
 * levels 0..top (top = s), and the residual v - decoded into *res. */
__device__ static inline uint8_t signmag_code(float v, float s, int32_t top, unsigned sign_shift,
                                              uint32_t key, uint32_t index, float inv,
                                              float step, float *res)
{
    const uint32_t sign = fbits(v) >> 31;
    const float xq = clamp_abs(gx_mul(gx_abs(v), inv), s);
    int32_t level = (int32_t)gx_add(xq, rand_unit(key, index));
    level = level < top ? level : top;
    const float d = bitsf(fbits(gx_mul((float)level, step)) ^ (sign << 31));
    *res = gx_sub(v, d);
    return (uint8_t)((uint32_t)level | (sign << sign_shift));
}

__global__ void k_signmag_encode(const float *g, float *r, size_t n, size_t bucket, size_t ncols,
                                 unsigned bits, float s, uint32_t key, const float *inv,
                                 const float *step, uint8_t *planes, uint8_t *codes)
{
    const size_t mfull = (bucket + 7) / 8;
    const unsigned sign_shift = bits - 1;
    const int32_t top = (int32_t)s;
    GRID_STRIDE(x, ncols) {
        const size_t b = div_index(x, mfull), k = x - b * mfull, len = bucket_len(n, bucket, b);
        const size_t m = (len + 7) / 8, i0 = b * bucket;
        if (k >= m) continue;
        uint8_t code[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (unsigned j = 0; j < 8; j++) {
            const size_t e = j * m + k;
            if (e >= len) break;
            const float v = r ? r[i0 + e] : g[i0 + e];
            float res;
            code[j] = signmag_code(v, s, top, sign_shift, key, (uint32_t)(i0 + e), inv[b], step[b],
                                   &res);
            if (r) r[i0 + e] = res;
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
        const size_t b = div_index(x, mfull), k = x - b * mfull, len = bucket_len(n, bucket, b);
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

/* The whole encode in one pass for buckets that fit a tile (gpu_bucket.cuh):
 * each bucket's statistic from shared memory (lane sums of v^2, or max
 * |v|), its scale into stats, then codes per plane column as
 * k_signmag_encode and residuals. */
__global__ void k_signmag_tiles_sync(const float *g, float *r, size_t n, size_t bucket,
                                     size_t nb, size_t bpt, unsigned bits, float s, uint32_t key,
                                     int stat, uint8_t *field, uint8_t *stats, uint8_t *planes,
                                     uint8_t *codes, unsigned *check)
{
    TILE_SHARED_V(sv);
    __shared__ float part[TILE_THREADS];
    __shared__ float s_inv[TILE_MAX_BUCKETS], s_step[TILE_MAX_BUCKETS];
    const size_t mfull = (bucket + 7) / 8;
    const unsigned j = threadIdx.x % Q_LANES, grp = threadIdx.x / Q_LANES;
    const unsigned sign_shift = bits - 1;
    const int32_t top = (int32_t)s;
    if (field && blockIdx.x == 0 && threadIdx.x == 0) st_u32(field, (uint32_t)bucket);
    for (size_t t = blockIdx.x; t * bpt < nb; t += gridDim.x) {
        const tile tl = tile_at(n, bucket, nb, bpt, t);
        tile_load(g, r, &tl, sv, check);
        for (size_t base = 0; base < tl.nbt; base += TILE_GROUPS) {
            const size_t lb = base + grp;
            float sum = 0.0f;
            uint32_t m = 0;
            if (lb < tl.nbt) {
                const float *vb = sv + lb * bucket;
                const size_t len = bucket_len(n, bucket, tl.b0 + lb);
                for (size_t e = j; e < len; e += Q_LANES) {
                    const float v = vb[e];
                    if (stat == STAT_NORM) {
                        sum = gx_add(sum, gx_mul(v, v));
                    } else {
                        const uint32_t a = fbits(v) & 0x7FFFFFFFu;
                        m = a > m ? a : m;
                    }
                }
            }
            part[threadIdx.x] = stat == STAT_NORM ? sum : bitsf(m);
            __syncthreads();
            const size_t ob = base + threadIdx.x;
            if (threadIdx.x < TILE_GROUPS && ob < tl.nbt) {
                const float *lanes = part + threadIdx.x * Q_LANES;
                float scale;
                if (stat == STAT_NORM) {  /* k_qsgd_scales */
                    uint32_t nan;
                    const double total = chunk_total(lanes_total(lanes), &nan);
                    scale = nan ? bitsf(nan) : __double2float_rn(__dsqrt_rn(total));
                    s_inv[ob] = scale > 0.0f ? gx_div(s, scale) : 0.0f;
                    s_step[ob] = gx_div(scale, s);
                } else {  /* k_tern_scales */
                    m = 0;
                    for (unsigned k = 0; k < Q_LANES; k++) {
                        const uint32_t a = fbits(lanes[k]);
                        m = a > m ? a : m;
                    }
                    scale = bitsf(m);
                    s_inv[ob] = scale > 0.0f ? gx_div(1.0f, scale) : 0.0f;
                    s_step[ob] = scale;
                }
                st_f32(stats + 4 * (tl.b0 + ob), scale);
            }
            __syncthreads();
        }
        const unsigned ncols = (unsigned)(tl.nbt * mfull), mf = (unsigned)mfull;
        for (unsigned x = threadIdx.x; x < ncols; x += TILE_THREADS) {
            const unsigned lb = x / mf, k = x % mf;
            const size_t b = tl.b0 + lb;
            const size_t len = bucket_len(n, bucket, b), m = (len + 7) / 8, i0 = b * bucket;
            if (k >= m) continue;
            const float *vb = sv + lb * bucket;
            const float inv = s_inv[lb], step = s_step[lb];
            uint8_t code[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (unsigned jj = 0; jj < 8; jj++) {
                const size_t e = jj * m + k;
                if (e >= len) break;
                float res;
                code[jj] = signmag_code(vb[e], s, top, sign_shift, key, (uint32_t)(i0 + e), inv,
                                        step, &res);
                if (r) r[i0 + e] = res;
                if (codes) codes[i0 + e] = code[jj];
            }
            if (codes) continue;
            uint8_t *out = planes + b * bits * mfull + k;
            for (unsigned p = 0; p < bits; p++) {
                unsigned byte = 0;
                for (unsigned jj = 0; jj < 8; jj++) byte |= ((code[jj] >> p) & 1u) << jj;
                out[p * m] = (uint8_t)byte;
            }
        }
        __syncthreads();  /* sv is reloaded */
    }
}

void gpu_signmag_encode_tiles(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n,
                              size_t bucket, unsigned bits, float s, uint32_t key, int stat,
                              uint8_t *field, uint8_t *stats, uint8_t *planes, uint8_t *codes,
                              unsigned *check)
{
    const size_t nb = bucket_count(n, bucket), bpt = tile_buckets(bucket);
    if (nb)
        k_signmag_tiles_sync<<<tile_grid(nb, bpt), TILE_THREADS, 0, ctx->stream>>>(g, r, n, bucket, nb, bpt, bits, s, key, stat, field, stats, planes, codes, check);
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
        const size_t b = div_index(x, mfull), k = x - b * mfull, len = bucket_len(n, bucket, b);
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
        const size_t b = div_index(x, mfull), k = x - b * mfull, len = bucket_len(n, bucket, b);
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
