/* gcmpi_gpu.cu — the public API of libgcmpi_gpu (gcmpi_gpu.h): context,
 * memory, and gcmpi_gpu_encode / gcmpi_gpu_decode_add, which reach each
 * codec's kernels through the table of gpu_codecs.cu and write the payload
 * header (write_header, the one place it is written). Also the kernels of
 * none, fp16, bf16, int8 and sign.
 *
 * The body is built in a device staging buffer from the context's pool,
 * then copied behind a header written on the host (with gc_crc32c when the
 * CRC flag is asked for). Layouts, rounding and summation orders mirror
 * codecs/codec_*.c and codecs/quant_common.h; a change there must be made
 * here too (tests/gpu/test_gpu_codecs.c compares the bytes). Float
 * exactness: gpu_internal.cuh. */
#include "gpu_internal.cuh"

static size_t sign_bits_bytes(size_t n, size_t bucket)
{
    size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * planes_stride(bucket) + planes_stride(bucket_len(n, bucket, nb - 1));
}

/* Body bytes of codec id for n elements (bucket from p). */
static size_t body_size(unsigned id, size_t n, size_t bucket)
{
    switch (id) {
    case ID_NONE: return 4 * n;
    case ID_FP16:
    case ID_BF16: return 2 * n;
    case ID_INT8: return BUCKET_FIELD + 4 * bucket_count(n, bucket) + n;
    case ID_SIGN: return BUCKET_FIELD + 4 * bucket_count(n, bucket) + sign_bits_bytes(n, bucket);
    default: return 0;
    }
}


/* 0 where d is infinite or NaN, else v - d (codec_fp16.c residual_of). */
__device__ static inline float residual_of(float v, float d)
{
    return (fbits(d) & 0x7F800000u) == 0x7F800000u ? 0.0f : gx_sub(v, d);
}

/* codec_fp16.c's portable conversions, verbatim (they equal F16C). */
__device__ static inline uint16_t half_from_float(float f)
{
    uint32_t x = fbits(f), a = x & 0x7FFFFFFFu;
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t big = a > 0x7F800000u ? (0x7E00u | ((a >> 13) & 0x3FFu)) : 0x7C00u;
    uint32_t small = fbits(__fadd_rn(bitsf(a), 0.5f)) - 0x3F000000u;
    uint32_t normal = (a + 0xC8000FFFu + ((a >> 13) & 1u)) >> 13;
    uint32_t h = a >= 0x47800000u ? big : (a < 0x38800000u ? small : normal);
    return (uint16_t)(sign | h);
}
__device__ static inline float float_from_half(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7FFFu) << 13, exp = o & 0x0F800000u;
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t special = (o + 0x70000000u) | ((uint32_t)(o > 0x0F800000u) << 22);
    uint32_t small = fbits(__fsub_rn(bitsf(o + 0x38800000u), 0x1p-14f));
    uint32_t normal = o + 0x38000000u;
    uint32_t f = exp == 0x0F800000u ? special : (exp == 0 ? small : normal);
    return bitsf(f | sign);
}

/* codec_bf16.c */
__device__ static inline uint16_t bf16_from_float(float f)
{
    uint32_t x = fbits(f);
    uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x0040u;
    return (uint16_t)((x & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}
__device__ static inline float float_from_bf16(uint16_t h) { return bitsf((uint32_t)h << 16); }

/* ---- none, fp16, bf16 ------------------------------------------------------ */

__global__ void k_none_encode_ef(const float *g, float *r, size_t n, float *out)
{
    GRID_STRIDE(i, n) {
        float v = gx_add(g[i], r[i]);
        out[i] = v;
        r[i] = 0.0f;
    }
}

__global__ void k_none_decode(const float *in, float *acc, size_t n)
{
    GRID_STRIDE(i, n) acc[i] = gx_add(acc[i], in[i]);
}

__global__ void k_half_encode(const float *g, float *r, size_t n, uint16_t *out, int bf16)
{
    GRID_STRIDE(i, n) {
        float v = r ? gx_add(g[i], r[i]) : g[i];
        uint16_t q = bf16 ? bf16_from_float(v) : half_from_float(v);
        out[i] = q;
        if (r) r[i] = residual_of(v, bf16 ? float_from_bf16(q) : float_from_half(q));
    }
}

__global__ void k_half_decode(const uint16_t *in, float *acc, size_t n, int bf16)
{
    GRID_STRIDE(i, n) {
        uint16_t q = in[i];
        acc[i] = gx_add(acc[i], bf16 ? float_from_bf16(q) : float_from_half(q));
    }
}

/* ---- int8 ----------------------------------------------------------------- */

/* One block per bucket: v = g + r into r (when r), max |v| as bits (order
 * free), scale = amax / 127 into the body, inv = 127 / amax (0 when amax is
 * not > 0) into inv[]. Block 0 writes the bucket field. */
#define AMAX_THREADS 256
__global__ void k_int8_scales(const float *g, float *r, size_t n, size_t bucket,
                              uint8_t *body, float *inv)
{
    __shared__ uint32_t red[AMAX_THREADS];
    const size_t b = blockIdx.x, i0 = b * bucket, len = bucket_len(n, bucket, b);
    uint32_t m = 0;
    for (size_t i = threadIdx.x; i < len; i += blockDim.x) {
        float v;
        if (r) {
            v = gx_add(g[i0 + i], r[i0 + i]);
            r[i0 + i] = v;
        } else {
            v = g[i0 + i];
        }
        uint32_t a = fbits(v) & 0x7FFFFFFFu;
        m = a > m ? a : m;
    }
    red[threadIdx.x] = m;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w && red[threadIdx.x + w] > red[threadIdx.x])
            red[threadIdx.x] = red[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float amax = bitsf(red[0]);
        float *scales = (float *)(body + BUCKET_FIELD);
        scales[b] = gx_div(amax, 127.0f);
        inv[b] = amax > 0.0f ? gx_div(127.0f, amax) : 0.0f;
        if (b == 0) *(uint32_t *)body = (uint32_t)bucket;
    }
}

__global__ void k_int8_quant(const float *g, float *r, size_t n, size_t bucket,
                             const float *scales, const float *inv, int8_t *q)
{
    GRID_STRIDE(i, n) {
        const size_t b = i / bucket;
        float v = r ? r[i] : g[i];
        float x = round_even_small(clamp_abs(gx_mul(v, inv[b]), 127.0f));
        q[i] = (int8_t)(int32_t)x;
        if (r) r[i] = gx_sub(v, gx_mul(x, scales[b]));
    }
}

__global__ void k_int8_decode(const float *scales, const int8_t *q, size_t n, size_t bucket,
                              float *acc, unsigned *bad)
{
    GRID_STRIDE(i, n) {
        int8_t c = q[i];
        if (c == -128) atomicOr(bad, 1u);
        acc[i] = gx_add(acc[i], gx_mul((float)c, scales[i / bucket]));
    }
}

/* ---- sign ----------------------------------------------------------------- */

/* Chunk sums of |v| in quant_common.h's order. Chunk c = (bucket b, chunk cc
 * of cpb per bucket); 16 threads per chunk, thread j sums elements j, j+16,
 * ... of the chunk in order (from 0.0f), then lanes combine pairwise: lane
 * j += lane j+w for w = 8, 4, 2, 1 (gc_q_lanes_total). v = g + r goes into
 * r first (each element is read by one thread). Every thread of a warp
 * reaches the shuffles (a 16-lane group never straddles a warp). */
__global__ void k_sign_chunks(const float *g, float *r, size_t n, size_t bucket, size_t cpb,
                              size_t nchunks, float *chunk_sum)
{
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t c = t / Q_LANES, j = t % Q_LANES;
    size_t start = 0, clen = 0;
    if (c < nchunks) {
        const size_t b = c / cpb, cc = c % cpb, len = bucket_len(n, bucket, b);
        if (cc * Q_CHUNK < len) {
            start = b * bucket + cc * Q_CHUNK;
            clen = len - cc * Q_CHUNK < Q_CHUNK ? len - cc * Q_CHUNK : Q_CHUNK;
        }
    }
    float s = 0.0f;
    for (size_t i = j; i < clen; i += Q_LANES) {
        float v;
        if (r) {
            v = gx_add(g[start + i], r[start + i]);
            r[start + i] = v;
        } else {
            v = g[start + i];
        }
        s = gx_add(s, gx_abs(v));
    }
    for (unsigned w = 8; w > 0; w /= 2) {
        float o = __shfl_down_sync(0xFFFFFFFFu, s, w);
        s = gx_add(s, o);
    }
    if (j == 0 && clen > 0) chunk_sum[c] = s;
}

/* One thread per bucket: chunk sums added in order in double, over len,
 * rounded to float (gc_q_sum_pow and sign_encode_buckets). A NaN chunk sum
 * is carried through the double additions as x86 does: the result is that
 * first NaN (it is already quiet, so widening and narrowing keep it). */
__global__ void k_sign_scales(size_t n, size_t bucket, size_t cpb, size_t nb,
                              const float *chunk_sum, uint8_t *body)
{
    GRID_STRIDE(b, nb) {
        const size_t len = bucket_len(n, bucket, b), nc = (len + Q_CHUNK - 1) / Q_CHUNK;
        double total = 0;
        uint32_t nan = 0;
        for (size_t cc = 0; cc < nc; cc++) {
            float f = chunk_sum[b * cpb + cc];
            if (!nan && is_nan(f)) nan = fbits(f) | 0x00400000u;
            total = __dadd_rn(total, (double)f);
        }
        float scale = nan ? bitsf(nan) : __double2float_rn(__ddiv_rn(total, (double)len));
        ((float *)(body + BUCKET_FIELD))[b] = scale;
        if (b == 0) *(uint32_t *)body = (uint32_t)bucket;
    }
}

/* One thread per plane byte: bit j of byte k of bucket b is element
 * j*m + k, set when v >= 0 (NaN clear); with r, r = v - (hi or lo). The
 * decode kernel below walks the same bytes and flags set padding bits. */
__global__ void k_sign_bits(const float *g, float *r, size_t n, size_t bucket, size_t nbytes,
                            const float *scales, uint8_t *out)
{
    const size_t mfull = (bucket + 7) / 8;
    GRID_STRIDE(x, nbytes) {
        const size_t b = x / mfull, k = x % mfull, len = bucket_len(n, bucket, b);
        const size_t m = (len + 7) / 8, i0 = b * bucket;
        const float hi = scales[b];
        unsigned byte = 0;
        for (unsigned j = 0; j < 8; j++) {
            const size_t e = j * m + k;
            if (e >= len) break;
            float v = r ? r[i0 + e] : g[i0 + e];
            unsigned bit = v >= 0.0f;
            byte |= bit << j;
            /* v - lo written as v + hi: equal bits for non-NaN, and where the
             * scale is NaN it gives the NaN gcc's folding gives the CPU. */
            if (r) r[i0 + e] = bit ? gx_sub(v, hi) : gx_add(v, hi);
        }
        out[x] = (uint8_t)byte;
    }
}

__global__ void k_sign_decode(const float *scales, const uint8_t *in, size_t n, size_t bucket,
                              size_t nbytes, float *acc, unsigned *bad)
{
    const size_t mfull = (bucket + 7) / 8;
    GRID_STRIDE(x, nbytes) {
        const size_t b = x / mfull, k = x % mfull, len = bucket_len(n, bucket, b);
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

/* ---- context -------------------------------------------------------------- */

extern "C" int gcmpi_gpu_device_count(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count > 0 ? count : 0;
}

extern "C" int gcmpi_gpu_is_device_pointer(const void *p)
{
    if (!p) return 0;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

extern "C" int gcmpi_gpu_supports(const gc_codec *c)
{
    return c && gpu_codec_for(gc_codec_id(c)) != NULL;
}

extern "C" gcmpi_gpu_ctx *gcmpi_gpu_create(void)
{
    if (gcmpi_gpu_device_count() == 0) return NULL;
    gcmpi_gpu_ctx *ctx = (gcmpi_gpu_ctx *)calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    uint64_t keep = UINT64_MAX;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    /* A blocking stream: it waits for work the application queued on the
     * legacy default stream (a gradient still being written). */
    if (cudaGetDevice(&ctx->device) != cudaSuccess || cudaStreamCreate(&ctx->stream) != cudaSuccess)
        goto fail;
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = ctx->device;
    /* Our own pool, so the application's default pool keeps its settings. */
    if (cudaMemPoolCreate(&ctx->pool, &props) != cudaSuccess) {
        ctx->pool = NULL;
        goto fail;
    }
    if (cudaMemPoolSetAttribute(ctx->pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess
        || cudaMallocAsync((void **)&ctx->flag, sizeof *ctx->flag, ctx->pool, ctx->stream) != cudaSuccess
        || cudaStreamSynchronize(ctx->stream) != cudaSuccess)
        goto fail;
    return ctx;
fail:
    (void)cudaGetLastError();
    gcmpi_gpu_destroy(ctx);
    return NULL;
}

extern "C" void gcmpi_gpu_destroy(gcmpi_gpu_ctx *ctx)
{
    if (!ctx) return;
    if (ctx->stream) {
        if (ctx->flag) (void)cudaFreeAsync(ctx->flag, ctx->stream);
        (void)cudaStreamSynchronize(ctx->stream);
        (void)cudaStreamDestroy(ctx->stream);
    }
    if (ctx->pool) (void)cudaMemPoolDestroy(ctx->pool);
    (void)cudaGetLastError();
    free(ctx);
}

extern "C" void *gcmpi_gpu_alloc(gcmpi_gpu_ctx *ctx, size_t bytes)
{
    void *p = NULL;
    if (!ctx) return NULL;
    if (cudaMallocFromPoolAsync(&p, bytes ? bytes : 1, ctx->pool, ctx->stream) != cudaSuccess
        || cudaStreamSynchronize(ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

extern "C" void gcmpi_gpu_dealloc(gcmpi_gpu_ctx *ctx, void *p)
{
    if (!ctx || !p) return;
    (void)cudaFreeAsync(p, ctx->stream);
    (void)cudaStreamSynchronize(ctx->stream);
    (void)cudaGetLastError();
}

extern "C" size_t gcmpi_gpu_copy(gcmpi_gpu_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (bytes == 0) return 0;
    if (cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return GC_ERR(GENERIC);
    }
    return sync_status(ctx);
}

/* ---- encode ----------------------------------------------------------------- */

/* Queue the kernels that write the body of codec id into body (device). */
static size_t encode_body(gcmpi_gpu_ctx *ctx, scratch *s, unsigned id, const float *g, float *r,
                          size_t n, size_t bucket, uint8_t *body)
{
    const unsigned T = 256;
    cudaStream_t st = ctx->stream;
    switch (id) {
    case ID_NONE:
        if (n == 0) return 0;
        if (r) {
            k_none_encode_ef<<<blocks_for(n, T), T, 0, st>>>(g, r, n, (float *)body);
        } else if (cudaMemcpyAsync(body, g, 4 * n, cudaMemcpyDeviceToDevice, st) != cudaSuccess) {
            return GC_ERR(GENERIC);
        }
        return 0;
    case ID_FP16:
    case ID_BF16:
        if (n) k_half_encode<<<blocks_for(n, T), T, 0, st>>>(g, r, n, (uint16_t *)body, id == ID_BF16);
        return 0;
    case ID_INT8: {
        const size_t nb = bucket_count(n, bucket);
        if (nb == 0) {
            uint32_t b32 = (uint32_t)bucket;
            return cudaMemcpyAsync(body, &b32, 4, cudaMemcpyHostToDevice, st) == cudaSuccess
                       ? sync_status(ctx) : GC_ERR(GENERIC);
        }
        float *inv = (float *)scratch_get(ctx, s, 4 * nb);
        if (!inv) return GC_ERR(ALLOC);
        if (nb > 0x7FFFFFFFu) return GC_ERR(GENERIC);
        k_int8_scales<<<(unsigned)nb, AMAX_THREADS, 0, st>>>(g, r, n, bucket, body, inv);
        const float *scales = (const float *)(body + BUCKET_FIELD);
        k_int8_quant<<<blocks_for(n, T), T, 0, st>>>(g, r, n, bucket, scales, inv,
                                                     (int8_t *)(body + BUCKET_FIELD + 4 * nb));
        return 0;
    }
    case ID_SIGN: {
        const size_t nb = bucket_count(n, bucket);
        if (nb == 0) {
            uint32_t b32 = (uint32_t)bucket;
            return cudaMemcpyAsync(body, &b32, 4, cudaMemcpyHostToDevice, st) == cudaSuccess
                       ? sync_status(ctx) : GC_ERR(GENERIC);
        }
        const size_t cpb = (bucket + Q_CHUNK - 1) / Q_CHUNK;
        const size_t nchunks = nb * cpb;
        float *chunk_sum = (float *)scratch_get(ctx, s, 4 * nchunks);
        if (!chunk_sum) return GC_ERR(ALLOC);
        const size_t threads = nchunks * Q_LANES;
        size_t blocks = (threads + T - 1) / T;
        if (blocks > 0x7FFFFFFFu) return GC_ERR(GENERIC);
        k_sign_chunks<<<(unsigned)blocks, T, 0, st>>>(g, r, n, bucket, cpb, nchunks, chunk_sum);
        k_sign_scales<<<blocks_for(nb, T), T, 0, st>>>(n, bucket, cpb, nb, chunk_sum, body);
        const size_t nbytes = sign_bits_bytes(n, bucket);
        k_sign_bits<<<blocks_for(nbytes, T), T, 0, st>>>(g, r, n, bucket, nbytes,
                                                         (const float *)(body + BUCKET_FIELD),
                                                         body + BUCKET_FIELD + 4 * nb);
        return 0;
    }
    default:
        return GC_ERR(UNSUPPORTED);
    }
}

/* ---- decode of the dense codecs -------------------------------------------- */

static size_t dense_decode(unsigned id, gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *b,
                           size_t blen, float *acc, size_t n)
{
    size_t bucket = 1;
    if (id == ID_INT8 || id == ID_SIGN) {
        if (blen < BUCKET_FIELD) return GC_ERR(TRUNCATED);
        uint32_t bf = get_u32(b);
        if (bf < 1 || bf > (UINT32_C(1) << 31)) return GC_ERR(CORRUPT);
        bucket = bf;
    }
    const size_t want = body_size(id, n, bucket);
    if (blen < want) return GC_ERR(TRUNCATED);
    if (blen > want) return GC_ERR(CORRUPT);
    if (n == 0) return 0;

    const unsigned T = 256;
    cudaStream_t st = ctx->stream;
    const size_t nb = bucket_count(n, bucket);
    unsigned bad = 0;
    uint8_t *d = (uint8_t *)scratch_get(ctx, s, blen);
    if (!d) return GC_ERR(ALLOC);
    if (cudaMemcpyAsync(d, b, blen, cudaMemcpyHostToDevice, st) != cudaSuccess
        || cudaMemsetAsync(ctx->flag, 0, sizeof *ctx->flag, st) != cudaSuccess)
        return GC_ERR(GENERIC);
    switch (id) {
    case ID_NONE:
        k_none_decode<<<blocks_for(n, T), T, 0, st>>>((const float *)d, acc, n);
        break;
    case ID_FP16:
    case ID_BF16:
        k_half_decode<<<blocks_for(n, T), T, 0, st>>>((const uint16_t *)d, acc, n, id == ID_BF16);
        break;
    case ID_INT8:
        k_int8_decode<<<blocks_for(n, T), T, 0, st>>>((const float *)(d + BUCKET_FIELD),
                                                      (const int8_t *)(d + BUCKET_FIELD + 4 * nb),
                                                      n, bucket, acc, ctx->flag);
        break;
    case ID_SIGN: {
        const size_t nbytes = sign_bits_bytes(n, bucket);
        k_sign_decode<<<blocks_for(nbytes, T), T, 0, st>>>((const float *)(d + BUCKET_FIELD),
                                                           d + BUCKET_FIELD + 4 * nb, n, bucket,
                                                           nbytes, acc, ctx->flag);
        break;
    }
    default:
        return GC_ERR(UNSUPPORTED);
    }
    size_t r = fetch(ctx, &bad, ctx->flag, sizeof bad);
    return !gc_is_error(r) && bad ? GC_ERR(CORRUPT) : r;
}

static size_t dense_encode(unsigned id, gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r,
                           size_t n, const gc_params *p, uint8_t *body, size_t cap)
{
    const size_t bytes = body_size(id, n, p->bucket);
    if (cap < bytes) return GC_ERR(DST_TOO_SMALL);
    size_t e = encode_body(ctx, s, id, g, r, n, p->bucket, body);
    return gc_is_error(e) ? e : bytes;
}

/* The table entries of the dense codecs (gpu_codecs.cu). */
#define DENSE_CODEC(name, ID)                                                                \
    static size_t name##_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r,    \
                                size_t n, const gc_params *p, uint64_t seed, uint8_t *body,  \
                                size_t cap)                                                  \
    {                                                                                        \
        (void)seed; /* not stochastic */                                                     \
        return dense_encode(ID, ctx, s, g, r, n, p, body, cap);                              \
    }                                                                                        \
    static size_t name##_decode(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *b,            \
                                size_t len, float *acc, size_t n)                            \
    {                                                                                        \
        return dense_decode(ID, ctx, s, b, len, acc, n);                                     \
    }                                                                                        \
    extern const gpu_codec gpu_codec_##name;                                                 \
    const gpu_codec gpu_codec_##name = {ID, name##_encode, name##_decode};

DENSE_CODEC(none, ID_NONE)
DENSE_CODEC(fp16, ID_FP16)
DENSE_CODEC(bf16, ID_BF16)
DENSE_CODEC(int8, ID_INT8)
DENSE_CODEC(sign, ID_SIGN)

/* ---- shared first pass ------------------------------------------------------ */

__global__ void k_accumulate(const float *g, float *r, size_t n)
{
    GRID_STRIDE(i, n) r[i] = gx_add(g[i], r[i]);
}

void gpu_accumulate(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n)
{
    if (n) k_accumulate<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(g, r, n);
}

__global__ void k_add(float *acc, const float *d, size_t n)
{
    GRID_STRIDE(i, n) acc[i] = gx_add(acc[i], d[i]);
}

size_t gpu_host_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *acc, size_t n)
{
    float *tmp = (float *)malloc((n ? n : 1) * sizeof(float));
    if (!tmp) return GC_ERR(ALLOC);
    for (size_t i = 0; i < n; i++) tmp[i] = -0.0f;
    size_t r = gc_decode_add(body - GC_HEADER_SIZE, GC_HEADER_SIZE + len, tmp, n, NULL);
    if (!gc_is_error(r) && n) {
        float *d = (float *)scratch_get(ctx, s, n * sizeof(float));
        if (!d) {
            r = GC_ERR(ALLOC);
        } else if (cudaMemcpyAsync(d, tmp, n * sizeof(float), cudaMemcpyHostToDevice, ctx->stream)
                   != cudaSuccess) {
            r = GC_ERR(GENERIC);
        } else {
            k_add<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(acc, d, n);
            r = sync_status(ctx);  /* tmp is freed below */
        }
    }
    free(tmp);
    return r;
}

/* ---- the payload ------------------------------------------------------------ */

/* payload.c write_header: the one place libgcmpi_gpu writes a header. */
static void write_header(uint8_t *d, unsigned id, unsigned flags, uint64_t n, uint64_t length,
                         uint32_t crc)
{
    memset(d, 0, GC_HEADER_SIZE);
    d[0] = 'G';
    d[1] = 'C';
    d[2] = GC_FORMAT_VERSION;
    d[3] = (uint8_t)id;
    d[4] = (uint8_t)flags;
    put_u64(d + 8, n);
    put_u64(d + 16, length);
    put_u32(d + 24, crc);
}

extern "C" size_t gcmpi_gpu_encode(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *g,
                                   float *residual, size_t n, const gc_params *p,
                                   uint64_t seed, void *dst, size_t cap)
{
    if (!c) return GC_ERR(UNKNOWN_CODEC);
    if (gc_is_error(gc_params_check(c, p, NULL, 0))) return GC_ERR(PARAM);
    const unsigned id = gc_codec_id(c);
    const gpu_codec *gc = gpu_codec_for(id);
    if (!gc || p->zstd_level > 0) return GC_ERR(UNSUPPORTED);
    if (!ctx) return GC_ERR(GENERIC);
    if (n > 0 && (!gcmpi_gpu_is_device_pointer(g)
                  || (residual && !gcmpi_gpu_is_device_pointer(residual))))
        return GC_ERR(PARAM);
    const size_t bound = gc_bound(c, n, p);
    if (gc_is_error(bound)) return bound;
    if (!dst || cap < bound) return GC_ERR(DST_TOO_SMALL);
    const int dst_dev = gcmpi_gpu_is_device_pointer(dst);

    scratch s;
    memset(&s, 0, sizeof s);
    uint8_t *stage = (uint8_t *)scratch_get(ctx, &s, bound - GC_HEADER_SIZE);
    uint8_t *host_body = NULL;
    size_t r, body = 0;
    uint8_t hdr[GC_HEADER_SIZE];
    unsigned flags = 0;
    uint32_t crc = 0;
    if (!stage) { r = GC_ERR(ALLOC); goto out; }
    r = gc->encode(ctx, &s, g, residual, n, p, seed, stage, bound - GC_HEADER_SIZE);
    if (gc_is_error(r)) goto out;
    body = r;
    if (!dst_dev) {
        host_body = (uint8_t *)dst + GC_HEADER_SIZE;
    } else if (p->flags & GC_PF_CRC) {
        host_body = (uint8_t *)malloc(body ? body : 1);
        if (!host_body) { r = GC_ERR(ALLOC); goto out; }
    }
    if (host_body && body
        && cudaMemcpyAsync(host_body, stage, body, cudaMemcpyDeviceToHost, ctx->stream) != cudaSuccess) {
        r = GC_ERR(GENERIC);
        goto out;
    }
    if (dst_dev && body
        && cudaMemcpyAsync((uint8_t *)dst + GC_HEADER_SIZE, stage, body, cudaMemcpyDeviceToDevice,
                           ctx->stream) != cudaSuccess) {
        r = GC_ERR(GENERIC);
        goto out;
    }
    r = sync_status(ctx);
    if (gc_is_error(r)) goto out;
    if (p->flags & GC_PF_CRC) {
        flags |= GC_HF_CRC;
        crc = gc_crc32c(0, host_body, body);
    }
    write_header(hdr, id, flags, n, GC_HEADER_SIZE + body, crc);
    if (dst_dev) {
        if (cudaMemcpyAsync(dst, hdr, sizeof hdr, cudaMemcpyHostToDevice, ctx->stream) != cudaSuccess) {
            r = GC_ERR(GENERIC);
            goto out;
        }
        r = sync_status(ctx);
        if (gc_is_error(r)) goto out;
    } else {
        memcpy(dst, hdr, sizeof hdr);
    }
    r = GC_HEADER_SIZE + body;
out:
    if (dst_dev) free(host_body);
    scratch_release(ctx, &s);
    size_t done = sync_status(ctx);
    return gc_is_error(r) ? r : (gc_is_error(done) ? done : r);
}

/* ---- decode ----------------------------------------------------------------- */

extern "C" size_t gcmpi_gpu_decode_add(gcmpi_gpu_ctx *ctx, const void *src, size_t len,
                                       float *acc, size_t n)
{
    if (n > 0 && !acc) return GC_ERR(GENERIC);
    gc_payload_info info;
    size_t r = gc_payload_info_get(src, len, &info);
    if (gc_is_error(r)) return r;
    if (info.n != (uint64_t)n) return GC_ERR(SIZE_MISMATCH);
    const uint8_t *b = (const uint8_t *)src + GC_HEADER_SIZE;
    const size_t blen = (size_t)info.length - GC_HEADER_SIZE;
    if ((info.flags & GC_HF_CRC) && gc_crc32c(0, b, blen) != get_u32((const uint8_t *)src + 24))
        return GC_ERR(CHECKSUM);
    const gpu_codec *gc = gpu_codec_for(info.codec_id);
    if (!gc || (info.flags & GC_HF_ZSTD)) return GC_ERR(UNSUPPORTED);
    if (!ctx) return GC_ERR(GENERIC);
    if (n > 0 && !gcmpi_gpu_is_device_pointer(acc)) return GC_ERR(PARAM);

    scratch s;
    memset(&s, 0, sizeof s);
    r = gc->decode_add(ctx, &s, b, blen, acc, n);
    scratch_release(ctx, &s);
    size_t done = sync_status(ctx);
    return gc_is_error(r) ? r : (gc_is_error(done) ? done : 0);
}
