/* codec_natural.cu — codecs/codec_natural.c on the device: per bucket the
 * exponent E of the largest |v| plus one and whether nonzero values lie
 * below the lowest power sent (one block per bucket), then one code byte
 * per element, rounded to a power of two with the CPU's random numbers. */
#include "gpu_bucket.cuh"

static size_t body_size(size_t n, size_t bucket) { return BUCKET_FIELD + bucket_count(n, bucket) + n; }

/* One block per bucket: v = g + r into r (when r), max |v| and the
 * smallest nonzero |v| as bits (magnitude_range), then E = exponent of the
 * max + 1 (at most 254) into tops[b], and small[b] = there are nonzero
 * values below 2^(lo-127), lo = max(E - 126, 1). */
/* E from max |v| (bits) and min nonzero |v| (bits) - 1; *small as above. */
__device__ static inline uint8_t natural_top(uint32_t hi, uint32_t lo_minus_1, uint8_t *small)
{
    const uint32_t amin = lo_minus_1 + 1u;
    int32_t e_top = (int32_t)(hi >> 23) + 1;
    e_top = e_top < 254 ? e_top : 254;
    const int32_t lo = e_top > 127 ? e_top - 126 : 1;
    *small = amin != 0 && (int32_t)(amin >> 23) < lo;
    return (uint8_t)e_top;
}

#define RANGE_THREADS 256
__global__ void k_natural_range_sync(const float *g, float *r, size_t n, size_t bucket,
                                     uint8_t *tops, uint8_t *small)
{
    __shared__ uint32_t red_hi[RANGE_THREADS], red_lo[RANGE_THREADS];
    const size_t b = blockIdx.x, i0 = b * bucket, len = bucket_len(n, bucket, b);
    uint32_t hi = 0, lo_minus_1 = 0xFFFFFFFFu;
    for (size_t i = threadIdx.x; i < len; i += blockDim.x) {
        float v;
        if (r) {
            v = gx_add(g[i0 + i], r[i0 + i]);
            r[i0 + i] = v;
        } else {
            v = g[i0 + i];
        }
        const uint32_t a = fbits(v) & 0x7FFFFFFFu;
        hi = a > hi ? a : hi;
        lo_minus_1 = a - 1u < lo_minus_1 ? a - 1u : lo_minus_1;
    }
    red_hi[threadIdx.x] = hi;
    red_lo[threadIdx.x] = lo_minus_1;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) {
            if (red_hi[threadIdx.x + w] > red_hi[threadIdx.x]) red_hi[threadIdx.x] = red_hi[threadIdx.x + w];
            if (red_lo[threadIdx.x + w] < red_lo[threadIdx.x]) red_lo[threadIdx.x] = red_lo[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) tops[b] = natural_top(red_hi[0], red_lo[0], &small[b]);
}

/* natural_code: the code of element i = v of a bucket with top E = e_top,
 * its residual into *res. */
__device__ static inline uint8_t natural_code(float v, uint32_t key, size_t i, int32_t e_top,
                                              bool small_b, float *res)
{
    const int32_t lo = e_top > 127 ? e_top - 126 : 1;
    const uint32_t bits = fbits(v), a = bits & 0x7FFFFFFFu, sign = bits & 0x80000000u;
    const int32_t ex = (int32_t)(a >> 23), mant = (int32_t)(a & 0x7FFFFFu);
    const uint32_t rnd = rand32(key, (uint32_t)i);
    int32_t e_norm = ex + ((int32_t)(rnd >> 9) < mant);
    e_norm = e_norm < e_top ? e_norm : e_top;
    uint32_t e = (uint32_t)e_norm;
    if (small_b && ex < lo) {
        const float small_scale = bitsf((uint32_t)(254 - lo) << 23);  /* 2^(127 - lo) */
        const bool up = gx_mul((float)(int32_t)(rnd >> 8), 0x1p-24f) < gx_mul(bitsf(a), small_scale);
        e = up ? (uint32_t)lo : 0u;
    }
    const uint32_t nonzero = 0u - (uint32_t)(e != 0);
    const float d = bitsf((e << 23) | (sign & nonzero));
    *res = gx_sub(v, d);
    return (uint8_t)(((e + 127u - (uint32_t)e_top) | (sign >> 24)) & nonzero);
}

/* natural_code, one thread per element. */
__global__ void k_natural_codes(const float *g, float *r, size_t n, size_t bucket, uint32_t key,
                                const uint8_t *tops, const uint8_t *small, uint8_t *codes)
{
    GRID_STRIDE(i, n) {
        const size_t b = div_index(i, bucket);
        float res;
        codes[i] = natural_code(r ? r[i] : g[i], key, i, tops[b], small[b] != 0, &res);
        if (r) r[i] = res;
    }
}

/* The whole encode in one pass for buckets that fit a tile (gpu_bucket.cuh):
 * max |v| and min nonzero |v| per bucket from shared memory (order free),
 * E into the body, then codes and residuals. */
__global__ void k_natural_tiles_sync(const float *g, float *r, size_t n, size_t bucket, size_t nb,
                                     size_t bpt, uint32_t key, uint8_t *body, unsigned *check)
{
    TILE_SHARED_V(sv);
    __shared__ uint32_t part_hi[TILE_THREADS], part_lo[TILE_THREADS];
    __shared__ uint8_t s_top[TILE_MAX_BUCKETS], s_small[TILE_MAX_BUCKETS];
    uint8_t *tops = body + BUCKET_FIELD, *codes = body + BUCKET_FIELD + nb;
    const unsigned j = threadIdx.x % Q_LANES, grp = threadIdx.x / Q_LANES;
    if (blockIdx.x == 0 && threadIdx.x == 0) st_u32(body, (uint32_t)bucket);
    for (size_t t = blockIdx.x; t * bpt < nb; t += gridDim.x) {
        const tile tl = tile_at(n, bucket, nb, bpt, t);
        tile_load(g, r, &tl, sv, check);
        for (size_t base = 0; base < tl.nbt; base += TILE_GROUPS) {
            const size_t lb = base + grp;
            uint32_t hi = 0, lo_minus_1 = 0xFFFFFFFFu;
            if (lb < tl.nbt) {
                const float *vb = sv + lb * bucket;
                const size_t len = bucket_len(n, bucket, tl.b0 + lb);
                for (size_t e = j; e < len; e += Q_LANES) {
                    const uint32_t a = fbits(vb[e]) & 0x7FFFFFFFu;
                    hi = a > hi ? a : hi;
                    lo_minus_1 = a - 1u < lo_minus_1 ? a - 1u : lo_minus_1;
                }
            }
            part_hi[threadIdx.x] = hi;
            part_lo[threadIdx.x] = lo_minus_1;
            __syncthreads();
            const size_t ob = base + threadIdx.x;
            if (threadIdx.x < TILE_GROUPS && ob < tl.nbt) {
                hi = 0;
                lo_minus_1 = 0xFFFFFFFFu;
                for (unsigned k = 0; k < Q_LANES; k++) {
                    const uint32_t h = part_hi[threadIdx.x * Q_LANES + k];
                    const uint32_t l = part_lo[threadIdx.x * Q_LANES + k];
                    hi = h > hi ? h : hi;
                    lo_minus_1 = l < lo_minus_1 ? l : lo_minus_1;
                }
                s_top[ob] = natural_top(hi, lo_minus_1, &s_small[ob]);
                tops[tl.b0 + ob] = s_top[ob];
            }
            __syncthreads();
        }
        for (size_t k = threadIdx.x; k < tl.cnt; k += TILE_THREADS) {
            const unsigned lb = (unsigned)k / (unsigned)bucket;
            float res;
            codes[tl.i0 + k] = natural_code(sv[k], key, tl.i0 + k, s_top[lb], s_small[lb] != 0, &res);
            if (r) r[tl.i0 + k] = res;
        }
        __syncthreads();  /* sv is reloaded */
    }
}

static size_t natural_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                             const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket), size = body_size(n, bucket);
    if (cap < size) return GC_ERR(DST_TOO_SMALL);
    if (nb == 0) {
        gpu_bucket_field(ctx, body, bucket);
        return size;
    }
    if (tile_fits(bucket)) {
        const size_t bpt = tile_buckets(bucket);
        k_natural_tiles_sync<<<tile_grid(nb, bpt), TILE_THREADS, 0, ctx->stream>>>(g, r, n, bucket, nb, bpt, key32(seed), body, encode_check(s, r));
        return size;
    }
    gpu_bucket_field(ctx, body, bucket);
    uint8_t *small = (uint8_t *)scratch_get(ctx, s, nb);
    if (!small) return GC_ERR(ALLOC);
    if (nb > 0x7FFFFFFFu) return GC_ERR(GENERIC);
    uint8_t *tops = body + BUCKET_FIELD;
    k_natural_range_sync<<<(unsigned)nb, RANGE_THREADS, 0, ctx->stream>>>(g, r, n, bucket, tops, small);
    k_natural_codes<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        g, r, n, bucket, key32(seed), tops, small, tops + nb);
    return size;
}

/* natural_value, and the CPU's checks: E in [1, 254]; a code is 0 or has
 * c >= 128 - E (any sign); 128 (a signed zero) is corrupt. */
__global__ void k_natural_decode(const uint8_t *tops, const uint8_t *codes, size_t n,
                                 size_t bucket, float *acc, unsigned *bad)
{
    GRID_STRIDE(i, n) {
        const uint32_t e_top = tops[div_index(i, bucket)];
        if (e_top < 1 || e_top > 254) {
            atomicOr(bad, 1u);
            continue;
        }
        const uint32_t c_min = e_top >= 127u ? 1u : 128u - e_top;
        const uint32_t code = codes[i], c = code & 127u;
        if (c - 1u < c_min - 1u || code == 128u) atomicOr(bad, 1u);
        const uint32_t vb = ((code >> 7) << 31) | ((c + e_top - 127u) << 23);
        acc[i] = gx_add(acc[i], bitsf(c != 0 ? vb : 0u));
    }
}

static size_t natural_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                                 float *acc, size_t n)
{
    size_t bucket = 0;
    uint8_t *d = NULL;
    size_t e = bucketed_decode_begin(ctx, s, body, len, n, body_size, &bucket, &d);
    if (e) return e == DECODE_NOTHING ? 0 : e;
    const size_t nb = bucket_count(n, bucket);
    k_natural_decode<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        d + BUCKET_FIELD, d + BUCKET_FIELD + nb, n, bucket, acc, ctx->flag);
    return flag_result(ctx);
}

extern const gpu_codec gpu_codec_natural;
const gpu_codec gpu_codec_natural = {ID_NATURAL, natural_encode, natural_decode_add};
