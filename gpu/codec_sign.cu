/* codec_sign.cu — codecs/codec_sign.c on the device: per bucket the mean
 * |v| (sums in quant_common.h's order), one bit per element (v >= 0) in a
 * bit plane, decoded as +-mean. */
#include "gpu_bucket.cuh"

static size_t sign_bits_bytes(size_t n, size_t bucket)
{
    size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * planes_stride(bucket) + planes_stride(bucket_len(n, bucket, nb - 1));
}

static size_t body_size(size_t n, size_t bucket)
{
    return BUCKET_FIELD + 4 * bucket_count(n, bucket) + sign_bits_bytes(n, bucket);
}

/* Buckets longer than one tile: the per-bucket sums of |v| come from
 * gpu_bucket_sums (chunk sums in quant_common.h's lane order, added in
 * double); one thread per bucket divides by len and rounds to float
 * (gc_q_sum_pow and sign_encode_buckets). A NaN sum is carried as x86
 * does: the scale is that first NaN. */
__global__ void k_sign_scales(size_t n, size_t bucket, size_t nb, const double *total,
                              const uint32_t *nan, uint8_t *body)
{
    GRID_STRIDE(b, nb) {
        const size_t len = bucket_len(n, bucket, b);
        float scale = nan[b] ? bitsf(nan[b]) : __double2float_rn(__ddiv_rn(total[b], (double)len));
        ((float *)(body + BUCKET_FIELD))[b] = scale;
        if (b == 0) *(uint32_t *)body = (uint32_t)bucket;
    }
}

/* The residual v - (bit ? hi : -hi), with v - lo written as v + hi: equal
 * bits for non-NaN, and where the scale is NaN it gives the NaN gcc's
 * folding gives the CPU. */
__device__ static inline float sign_residual(float v, unsigned bit, float hi)
{
    return bit ? gx_sub(v, hi) : gx_add(v, hi);
}

/* One thread per plane byte: bit j of byte k of bucket b is element
 * j*m + k, set when v >= 0 (NaN clear); with r, r = v - (hi or lo). The
 * decode kernel below walks the same bytes and flags set padding bits. */
__global__ void k_sign_bits(const float *g, float *r, size_t n, size_t bucket, size_t nbytes,
                            const float *scales, uint8_t *out)
{
    const size_t mfull = (bucket + 7) / 8;
    GRID_STRIDE(x, nbytes) {
        const size_t b = div_index(x, mfull), k = x - b * mfull, len = bucket_len(n, bucket, b);
        const size_t m = (len + 7) / 8, i0 = b * bucket;
        const float hi = scales[b];
        unsigned byte = 0;
        for (unsigned j = 0; j < 8; j++) {
            const size_t e = j * m + k;
            if (e >= len) break;
            float v = r ? r[i0 + e] : g[i0 + e];
            unsigned bit = v >= 0.0f;
            byte |= bit << j;
            if (r) r[i0 + e] = sign_residual(v, bit, hi);
        }
        out[x] = (uint8_t)byte;
    }
}

/* The whole encode in one pass for buckets that fit a tile (gpu_bucket.cuh):
 * lane sums of |v| per bucket from shared memory, the mean into the body,
 * then the plane bytes (one thread per byte) and residuals. */
__global__ void k_sign_tiles_sync(const float *g, float *r, size_t n, size_t bucket, size_t nb,
                                  size_t bpt, uint8_t *body, unsigned *check)
{
    TILE_SHARED_V(sv);
    __shared__ float part[TILE_THREADS];
    __shared__ float s_hi[TILE_MAX_BUCKETS];
    uint8_t *scales = body + BUCKET_FIELD, *out = body + BUCKET_FIELD + 4 * nb;
    const size_t mfull = (bucket + 7) / 8;
    const unsigned j = threadIdx.x % Q_LANES, grp = threadIdx.x / Q_LANES;
    if (blockIdx.x == 0 && threadIdx.x == 0) st_u32(body, (uint32_t)bucket);
    for (size_t t = blockIdx.x; t * bpt < nb; t += gridDim.x) {
        const tile tl = tile_at(n, bucket, nb, bpt, t);
        tile_load(g, r, &tl, sv, check);
        for (size_t base = 0; base < tl.nbt; base += TILE_GROUPS) {
            const size_t lb = base + grp;
            float sum = 0.0f;
            if (lb < tl.nbt) {
                const float *vb = sv + lb * bucket;
                const size_t len = bucket_len(n, bucket, tl.b0 + lb);
                for (size_t e = j; e < len; e += Q_LANES) sum = gx_add(sum, gx_abs(vb[e]));
            }
            part[threadIdx.x] = sum;
            __syncthreads();
            const size_t ob = base + threadIdx.x;
            if (threadIdx.x < TILE_GROUPS && ob < tl.nbt) {
                const size_t len = bucket_len(n, bucket, tl.b0 + ob);
                uint32_t nan;
                const double total = chunk_total(lanes_total(part + threadIdx.x * Q_LANES), &nan);
                s_hi[ob] = nan ? bitsf(nan) : __double2float_rn(__ddiv_rn(total, (double)len));
                st_f32(scales + 4 * (tl.b0 + ob), s_hi[ob]);
            }
            __syncthreads();
        }
        const unsigned ncols = (unsigned)(tl.nbt * mfull), mf = (unsigned)mfull;
        for (unsigned x = threadIdx.x; x < ncols; x += TILE_THREADS) {
            const unsigned lb = x / mf, k = x % mf;
            const size_t len = bucket_len(n, bucket, tl.b0 + lb);
            const size_t m = (len + 7) / 8;
            if (k >= m) continue;
            const float *vb = sv + lb * bucket;
            const float hi = s_hi[lb];
            unsigned byte = 0;
            for (unsigned jj = 0; jj < 8; jj++) {
                const size_t e = jj * m + k;
                if (e >= len) break;
                const float v = vb[e];
                const unsigned bit = v >= 0.0f;
                byte |= bit << jj;
                if (r) r[tl.i0 + lb * bucket + e] = sign_residual(v, bit, hi);
            }
            out[(tl.b0 + lb) * mfull + k] = (uint8_t)byte;
        }
        __syncthreads();  /* sv is reloaded */
    }
}

__global__ void k_sign_decode(const float *scales, const uint8_t *in, size_t n, size_t bucket,
                              size_t nbytes, float *acc, unsigned *bad)
{
    const size_t mfull = (bucket + 7) / 8;
    GRID_STRIDE(x, nbytes) {
        const size_t b = div_index(x, mfull), k = x - b * mfull, len = bucket_len(n, bucket, b);
        const size_t m = (len + 7) / 8, i0 = b * bucket;
        const float hi = scales[b];
        const unsigned byte = in[x];
        for (unsigned j = 0; j < 8; j++) {
            const size_t e = j * m + k;
            if (e < len)  /* acc + lo as acc - hi: see k_sign_bits */
                acc[i0 + e] = ((byte >> j) & 1u) ? gx_add(acc[i0 + e], hi) : gx_sub(acc[i0 + e], hi);
            else if ((byte >> j) & 1u)
                atomicOr(bad, 1u);
        }
    }
}

static size_t sign_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)seed;
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket), size = body_size(n, bucket);
    if (cap < size) return GC_ERR(DST_TOO_SMALL);
    cudaStream_t st = ctx->stream;
    if (nb == 0) {
        gpu_bucket_field(ctx, body, bucket);
        return size;
    }
    if (tile_fits(bucket)) {
        const size_t bpt = tile_buckets(bucket);
        k_sign_tiles_sync<<<tile_grid(nb, bpt), TILE_THREADS, 0, st>>>(g, r, n, bucket, nb, bpt, body, encode_check(s, r));
        return size;
    }
    gpu_sums sums;
    const size_t e = gpu_bucket_sums(ctx, s, g, r, n, bucket, SUM_ABS, &sums);
    if (gc_is_error(e)) return e;
    k_sign_scales<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, st>>>(n, bucket, nb, sums.total,
                                                                       sums.nan, body);
    const size_t nbytes = sign_bits_bytes(n, bucket);
    k_sign_bits<<<blocks_for(nbytes, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n, bucket, nbytes,
                                                     (const float *)(body + BUCKET_FIELD),
                                                     body + BUCKET_FIELD + 4 * nb);
    return size;
}

static size_t sign_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                              float *acc, size_t n)
{
    size_t bucket = 0;
    uint8_t *d = NULL;
    size_t e = bucketed_decode_begin(ctx, s, body, len, n, body_size, &bucket, &d);
    if (e) return e == DECODE_NOTHING ? 0 : e;
    const size_t nb = bucket_count(n, bucket);
    const size_t nbytes = sign_bits_bytes(n, bucket);
    k_sign_decode<<<blocks_for(nbytes, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        (const float *)(d + BUCKET_FIELD), d + BUCKET_FIELD + 4 * nb, n, bucket, nbytes, acc,
        ctx->flag);
    return flag_result(ctx);
}

extern const gpu_codec gpu_codec_sign;
const gpu_codec gpu_codec_sign = {ID_SIGN, sign_encode, sign_decode_add};
