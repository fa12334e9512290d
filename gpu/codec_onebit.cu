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

__global__ void k_onebit_field(uint8_t *body, uint32_t bucket) { st_u32(body, bucket); }

static size_t onebit_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                            const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)seed;
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket), size = body_size(n, bucket);
    if (cap < size) return GC_ERR(DST_TOO_SMALL);
    if (nb == 0) {
        k_onebit_field<<<1, 1, 0, ctx->stream>>>(body, (uint32_t)bucket);
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
    if (len < BUCKET_FIELD) return GC_ERR(TRUNCATED);
    const uint32_t bf = get_u32(body);
    if (bf < 1 || bf > (UINT32_C(1) << 31)) return GC_ERR(CORRUPT);
    const size_t bucket = bf, nb = bucket_count(n, bucket), want = body_size(n, bucket);
    if (len < want) return GC_ERR(TRUNCATED);
    if (len > want) return GC_ERR(CORRUPT);
    if (nb == 0) return 0;
    uint8_t *d = body_to_device(ctx, s, body, len);
    if (!d) return GC_ERR(ALLOC);
    size_t e = flag_clear(ctx);
    if (gc_is_error(e)) return e;
    gpu_bits_decode_add(ctx, d + BUCKET_FIELD + 8 * nb, n, bucket, d + BUCKET_FIELD, acc,
                        ctx->flag);
    return flag_result(ctx);
}

extern const gpu_codec gpu_codec_onebit;
const gpu_codec gpu_codec_onebit = {ID_ONEBIT, onebit_encode, onebit_decode_add};
