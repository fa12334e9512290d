/* codec_int8.cu — codecs/codec_int8.c on the device: per bucket
 * scale = max |v| / 127, codes round(v 127 / max) in [-127, 127]; -128 is
 * a corrupt code. */
#include "gpu_bucket.cuh"

static size_t body_size(size_t n, size_t bucket) { return BUCKET_FIELD + 4 * bucket_count(n, bucket) + n; }

/* Buckets longer than one tile: max |v| per bucket from
 * gpu_bucket_absmax (v = g + r into r), then one thread per bucket writes
 * scale = amax / 127 into the body and inv = 127 / amax (0 when amax is
 * not > 0). Bucket 0 writes the bucket field. */
__global__ void k_int8_scales(size_t nb, size_t bucket, const uint32_t *amax, uint8_t *body,
                              float *inv)
{
    GRID_STRIDE(b, nb) {
        const float m = bitsf(amax[b]);
        ((float *)(body + BUCKET_FIELD))[b] = gx_div(m, 127.0f);
        inv[b] = m > 0.0f ? gx_div(127.0f, m) : 0.0f;
        if (b == 0) *(uint32_t *)body = (uint32_t)bucket;
    }
}

/* The code of v, and its residual into *res. */
__device__ static inline int8_t int8_code(float v, float inv, float scale, float *res)
{
    const float x = round_even_small(clamp_abs(gx_mul(v, inv), 127.0f));
    *res = gx_sub(v, gx_mul(x, scale));
    return (int8_t)(int32_t)x;
}

__global__ void k_int8_quant(const float *g, float *r, size_t n, size_t bucket,
                             const float *scales, const float *inv, int8_t *q)
{
    GRID_STRIDE(i, n) {
        const size_t b = div_index(i, bucket);
        float v = r ? r[i] : g[i], res;
        q[i] = int8_code(v, inv[b], scales[b], &res);
        if (r) r[i] = res;
    }
}

/* The whole encode in one pass for buckets that fit a tile (gpu_bucket.cuh):
 * max |v| per bucket from shared memory (order free), the scale into the
 * body, then codes and residuals. */
__global__ void k_int8_tiles_sync(const float *g, float *r, size_t n, size_t bucket, size_t nb,
                                  size_t bpt, uint8_t *body, unsigned *check)
{
    TILE_SHARED_V(sv);
    __shared__ uint32_t part[TILE_THREADS];
    __shared__ float s_scale[TILE_MAX_BUCKETS], s_inv[TILE_MAX_BUCKETS];
    uint8_t *scales = body + BUCKET_FIELD;
    int8_t *q = (int8_t *)(body + BUCKET_FIELD + 4 * nb);
    const unsigned j = threadIdx.x % Q_LANES, grp = threadIdx.x / Q_LANES;
    if (blockIdx.x == 0 && threadIdx.x == 0) st_u32(body, (uint32_t)bucket);
    for (size_t t = blockIdx.x; t * bpt < nb; t += gridDim.x) {
        const tile tl = tile_at(n, bucket, nb, bpt, t);
        tile_load(g, r, &tl, sv, check);
        for (size_t base = 0; base < tl.nbt; base += TILE_GROUPS) {
            const size_t lb = base + grp;
            uint32_t m = 0;
            if (lb < tl.nbt) {
                const float *vb = sv + lb * bucket;
                const size_t len = bucket_len(n, bucket, tl.b0 + lb);
                for (size_t e = j; e < len; e += Q_LANES) {
                    const uint32_t a = fbits(vb[e]) & 0x7FFFFFFFu;
                    m = a > m ? a : m;
                }
            }
            part[threadIdx.x] = m;
            __syncthreads();
            const size_t ob = base + threadIdx.x;
            if (threadIdx.x < TILE_GROUPS && ob < tl.nbt) {
                m = 0;
                for (unsigned k = 0; k < Q_LANES; k++) {
                    const uint32_t a = part[threadIdx.x * Q_LANES + k];
                    m = a > m ? a : m;
                }
                const float amax = bitsf(m);
                s_scale[ob] = gx_div(amax, 127.0f);
                s_inv[ob] = amax > 0.0f ? gx_div(127.0f, amax) : 0.0f;
                st_f32(scales + 4 * (tl.b0 + ob), s_scale[ob]);
            }
            __syncthreads();
        }
        for (size_t k = threadIdx.x; k < tl.cnt; k += TILE_THREADS) {
            const unsigned lb = (unsigned)k / (unsigned)bucket;
            float res;
            q[tl.i0 + k] = int8_code(sv[k], s_inv[lb], s_scale[lb], &res);
            if (r) r[tl.i0 + k] = res;
        }
        __syncthreads();  /* sv is reloaded */
    }
}

/* acc + code * scale; a -128 code sets *bad. */
__device__ static inline float int8_add(float acc, int8_t c, float scale, unsigned *bad)
{
    if (c == -128) atomicOr(bad, 1u);
    return gx_add(acc, gx_mul((float)c, scale));
}

/* Elements from .. n - 1, one per thread. */
__global__ void k_int8_decode(const float *scales, const int8_t *q, size_t from, size_t n,
                              size_t bucket, float *acc, unsigned *bad)
{
    GRID_STRIDE(k, n - from) {
        const size_t i = from + k;
        acc[i] = int8_add(acc[i], q[i], scales[div_index(i, bucket)], bad);
    }
}

/* Four codes as one 4-byte load. */
struct alignas(4) int8x4 { int8_t c[4]; };

/* Four elements per thread (q 4-byte, acc 16-byte aligned); nq = n / 4. */
__global__ void k_int8_decode4(const float *scales, const int8_t *q, size_t nq, size_t bucket,
                               float *acc, unsigned *bad)
{
    GRID_STRIDE(t, nq) {
        const size_t i = 4 * t;
        const int8x4 c = ((const int8x4 *)q)[t];
        vec4f a = ((vec4f *)acc)[t];
        a.x = int8_add(a.x, c.c[0], scales[div_index(i, bucket)], bad);
        a.y = int8_add(a.y, c.c[1], scales[div_index(i + 1, bucket)], bad);
        a.z = int8_add(a.z, c.c[2], scales[div_index(i + 2, bucket)], bad);
        a.w = int8_add(a.w, c.c[3], scales[div_index(i + 3, bucket)], bad);
        ((vec4f *)acc)[t] = a;
    }
}

static size_t int8_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
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
        k_int8_tiles_sync<<<tile_grid(nb, bpt), TILE_THREADS, 0, st>>>(g, r, n, bucket, nb, bpt, body, encode_check(s, r));
        return size;
    }
    float *inv = (float *)scratch_get(ctx, s, 4 * nb);
    uint32_t *amax = (uint32_t *)scratch_get(ctx, s, 4 * nb);
    if (!inv || !amax) return GC_ERR(ALLOC);
    if (nb > 0x7FFFFFFFu) return GC_ERR(GENERIC);
    gpu_bucket_absmax(ctx, g, r, n, bucket, amax);
    k_int8_scales<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, st>>>(nb, bucket, amax, body, inv);
    const float *scales = (const float *)(body + BUCKET_FIELD);
    k_int8_quant<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n, bucket, scales, inv,
                                                     (int8_t *)(body + BUCKET_FIELD + 4 * nb));
    return size;
}

static size_t int8_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                              float *acc, size_t n)
{
    size_t bucket = 0;
    uint8_t *d = NULL;
    size_t e = bucketed_decode_begin(ctx, s, body, len, n, body_size, &bucket, &d);
    if (e) return e == DECODE_NOTHING ? 0 : e;
    const size_t nb = bucket_count(n, bucket);
    const float *scales = (const float *)(d + BUCKET_FIELD);
    const int8_t *q = (const int8_t *)(d + BUCKET_FIELD + 4 * nb);
    size_t done = 0;
    if (n >= 4 && ((uintptr_t)q & 3u) == 0 && ((uintptr_t)acc & 15u) == 0) {
        const size_t nq = n / 4;
        k_int8_decode4<<<blocks_for(nq, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(scales, q, nq, bucket, acc, ctx->flag);
        done = 4 * nq;
    }
    if (done < n)
        k_int8_decode<<<blocks_for(n - done, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(scales, q, done, n, bucket, acc, ctx->flag);
    return flag_result(ctx);
}

extern const gpu_codec gpu_codec_int8;
const gpu_codec gpu_codec_int8 = {ID_INT8, int8_encode, int8_decode_add};
