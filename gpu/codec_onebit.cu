/* codec_onebit.cu — codecs/codec_onebit.c on the device: per bucket the
 * means of the non-negative and of the negative elements (part sums in the
 * CPU's lane and chunk order, gpu_bucket.cuh, over the counts), one bit per
 * element in a bit plane (gpu_planes.cuh). */
#include "gpu_bucket.cuh"
#include "gpu_planes.cuh"

static size_t body_size(size_t n, size_t bucket)
{
    const size_t nb = bucket_count(n, bucket);
    if (nb == 0) return BUCKET_FIELD;
    return BUCKET_FIELD + 8 * nb + (nb - 1) * planes_stride(bucket)
        + planes_stride(bucket_len(n, bucket, nb - 1));
}

/* A part's mean: its double sum over its count, rounded to float (0 for an
 * empty part; a NaN sum stays that NaN, as x86 divides and narrows it). */
__device__ static inline float part_mean(double total, uint32_t nan, uint64_t count)
{
    if (!count) return 0.0f;
    return nan ? bitsf(nan) : __double2float_rn(__ddiv_rn(total, (double)count));
}

__global__ void k_onebit_means(size_t n, size_t bucket, size_t nb, gpu_sums nonneg, gpu_sums neg,
                               const uint32_t *count, uint8_t *body)
{
    GRID_STRIDE(b, nb) {
        const uint64_t len = bucket_len(n, bucket, b), cp = count[b];
        uint8_t *means = body + BUCKET_FIELD + 8 * b;
        st_f32(means, part_mean(nonneg.total[b], nonneg.nan[b], cp));
        st_f32(means + 4, part_mean(neg.total[b], neg.nan[b], len - cp));
        if (b == 0) st_u32(body, (uint32_t)bucket);
    }
}

/* The whole encode in one pass for buckets that fit a tile (gpu_bucket.cuh):
 * lane sums of each part and the count of v >= 0 per bucket from shared
 * memory, the means into the body, then the plane bytes (one thread per
 * byte, as k_bits_encode) and residuals v - mean. */
__global__ void k_onebit_tiles_sync(const float *g, float *r, size_t n, size_t bucket, size_t nb,
                                    size_t bpt, uint8_t *body, unsigned *check)
{
    TILE_SHARED_V(sv);
    __shared__ float part_pos[TILE_THREADS], part_neg[TILE_THREADS];
    __shared__ uint32_t part_count[TILE_THREADS];
    __shared__ float s_hi[TILE_MAX_BUCKETS], s_lo[TILE_MAX_BUCKETS];
    uint8_t *means = body + BUCKET_FIELD, *out = body + BUCKET_FIELD + 8 * nb;
    const size_t mfull = (bucket + 7) / 8;
    const unsigned j = threadIdx.x % Q_LANES, grp = threadIdx.x / Q_LANES;
    if (blockIdx.x == 0 && threadIdx.x == 0) st_u32(body, (uint32_t)bucket);
    for (size_t t = blockIdx.x; t * bpt < nb; t += gridDim.x) {
        const tile tl = tile_at(n, bucket, nb, bpt, t);
        tile_load(g, r, &tl, sv, check);
        for (size_t base = 0; base < tl.nbt; base += TILE_GROUPS) {
            const size_t lb = base + grp;
            float pos = 0.0f, neg = 0.0f;
            uint32_t count = 0;
            if (lb < tl.nbt) {
                const float *vb = sv + lb * bucket;
                const size_t len = bucket_len(n, bucket, tl.b0 + lb);
                for (size_t e = j; e < len; e += Q_LANES) {
                    const float v = vb[e];
                    const bool nonneg = v >= 0.0f;
                    pos = gx_add(pos, nonneg ? v : 0.0f);
                    neg = gx_add(neg, nonneg ? 0.0f : v);
                    count += nonneg;
                }
            }
            part_pos[threadIdx.x] = pos;
            part_neg[threadIdx.x] = neg;
            part_count[threadIdx.x] = count;
            __syncthreads();
            const size_t ob = base + threadIdx.x;
            if (threadIdx.x < TILE_GROUPS && ob < tl.nbt) {
                const unsigned at = threadIdx.x * Q_LANES;
                const uint64_t len = bucket_len(n, bucket, tl.b0 + ob);
                uint32_t cp = 0, nan_pos, nan_neg;
                for (unsigned k = 0; k < Q_LANES; k++) cp += part_count[at + k];
                const double tp = chunk_total(lanes_total(part_pos + at), &nan_pos);
                const double tn = chunk_total(lanes_total(part_neg + at), &nan_neg);
                s_hi[ob] = part_mean(tp, nan_pos, cp);
                s_lo[ob] = part_mean(tn, nan_neg, len - cp);
                st_f32(means + 8 * (tl.b0 + ob), s_hi[ob]);
                st_f32(means + 8 * (tl.b0 + ob) + 4, s_lo[ob]);
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
            const float hi = s_hi[lb], lo = s_lo[lb];
            unsigned byte = 0;
            for (unsigned jj = 0; jj < 8; jj++) {
                const size_t e = jj * m + k;
                if (e >= len) break;
                const float v = vb[e];
                const unsigned bit = v >= 0.0f;
                byte |= bit << jj;
                if (r) r[tl.i0 + lb * bucket + e] = gx_sub(v, bit ? hi : lo);
            }
            out[(tl.b0 + lb) * mfull + k] = (uint8_t)byte;
        }
        __syncthreads();  /* sv is reloaded */
    }
}

static size_t onebit_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                            const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)seed;
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket), size = body_size(n, bucket);
    if (cap < size) return GC_ERR(DST_TOO_SMALL);
    if (nb == 0) {
        gpu_bucket_field(ctx, body, bucket);
        return size;
    }
    if (tile_fits(bucket)) {
        const size_t bpt = tile_buckets(bucket);
        k_onebit_tiles_sync<<<tile_grid(nb, bpt), TILE_THREADS, 0, ctx->stream>>>(g, r, n, bucket, nb, bpt, body, encode_check(s, r));
        return size;
    }
    gpu_sums nonneg, neg;
    size_t e = gpu_bucket_sums(ctx, s, g, r, n, bucket, SUM_NONNEG, &nonneg);
    if (gc_is_error(e)) return e;
    const float *v = r ? r : g;
    e = gpu_bucket_sums(ctx, s, v, NULL, n, bucket, SUM_NEG, &neg);
    if (gc_is_error(e)) return e;
    uint32_t *count = (uint32_t *)scratch_get(ctx, s, 4 * nb);
    if (!count) return GC_ERR(ALLOC);
    gpu_bucket_count_nonneg(ctx, v, n, bucket, count);
    k_onebit_means<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        n, bucket, nb, nonneg, neg, count, body);
    gpu_bits_encode(ctx, g, r, n, bucket, body + BUCKET_FIELD, body + BUCKET_FIELD + 8 * nb);
    return size;
}

static size_t onebit_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                                float *acc, size_t n)
{
    size_t bucket = 0;
    uint8_t *d = NULL;
    size_t e = bucketed_decode_begin(ctx, s, body, len, n, body_size, &bucket, &d);
    if (e) return e == DECODE_NOTHING ? 0 : e;
    const size_t nb = bucket_count(n, bucket);
    gpu_bits_decode_add(ctx, d + BUCKET_FIELD + 8 * nb, n, bucket, d + BUCKET_FIELD, acc,
                        ctx->flag);
    return flag_result(ctx);
}

extern const gpu_codec gpu_codec_onebit;
const gpu_codec gpu_codec_onebit = {ID_ONEBIT, onebit_encode, onebit_decode_add};
