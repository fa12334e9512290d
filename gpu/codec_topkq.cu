/* codec_topkq.cu — codecs/codec_topkq.c on the device: the exact top-k of
 * v = g + r (gpu_select.cuh), topk's index section (gpu_sparse.cuh), then
 * per bucket of kept values the range head (one block per bucket: min and
 * max |x|, or the mean |x| summed in order in double for b = 1) and the
 * b-bit fields, one thread per output byte, at the fixed width
 * gc_params.bits. With a width policy on the context
 * (gcmpi_gpu_set_width_policy, the adaptive layer's bitctl) each bucket
 * has its own width: the buckets' statistics and the error energy of
 * every width are formed on the device in the CPU's order, the policy
 * (sequential: a bucket's choice learns from the ones before) runs on
 * the host over those few numbers a bucket, and the fields are written at
 * the offsets its widths give. The decode validates the body and decodes
 * the indices on the host (as topkq_open does), then adds one value per
 * thread on the device. */
#include "gpu_select.cuh"
#include "gpu_sparse.cuh"

#define TOPKQ_MAX_BITS 8u
#define TOPKQ_BUCKET_FIELD 4u
#define TOPKQ_BUCKET_HEAD 9u  /* u8 b, f32 lo, f32 hi */

__host__ __device__ static inline size_t values_bytes(size_t len, unsigned b) { return (len * b + 7) / 8; }

static size_t topkq_bound(size_t n, const gc_params *p)
{
    const size_t k = kept_count(n, p->ratio);
    return SPARSE_HEAD + (n + 7) / 8 + TOPKQ_BUCKET_FIELD
           + bucket_count(k, p->bucket) * TOPKQ_BUCKET_HEAD + values_bytes(k, TOPKQ_MAX_BITS);
}

__device__ static inline float level_step(float lo, float hi, unsigned b)
{
    return b == 1 ? 0.0f : gx_div(gx_sub(hi, lo), (float)((1u << (b - 1)) - 1u));
}
__device__ static inline float level_value(float lo, float step, uint32_t q)
{
    return gx_add(lo, gx_mul((float)q, step));
}
__device__ static inline float with_sign(float mag, uint32_t sign)
{
    return bitsf(fbits(mag) ^ (sign << 31));
}

/* A bucket's quantiser: what quantise_bucket derives from (b, lo, hi). */
typedef struct tq_quant { float lo, step, inv, top; unsigned b; } tq_quant;

__device__ static inline tq_quant tq_make(unsigned b, float lo, float hi)
{
    tq_quant q;
    q.b = b;
    q.lo = lo;
    q.step = level_step(lo, hi, b);
    q.top = (float)((1u << (b - 1)) - 1u);
    float inv = b > 1 && hi > lo ? gx_div(q.top, gx_sub(hi, lo)) : 0.0f;
    if (!(inv <= 3.40282347e38f)) inv = 0.0f;
    q.inv = inv;
    return q;
}

/* The field of x (sign | level << 1) and, in *d, its decoded value. */
__device__ static inline uint32_t tq_code(const tq_quant &q, float x, float *d)
{
    const uint32_t sign = fbits(x) >> 31;
    uint32_t level = 0;
    if (q.b > 1) {
        const float t = clamp_abs(gx_abs(gx_mul(gx_sub(gx_abs(x), q.lo), q.inv)), q.top);
        level = (uint32_t)round_even_small(t);
    }
    *d = with_sign(level_value(q.lo, q.step, level), sign);
    return sign | level << 1;
}

/* Byte `byte` of a bucket's fields (x: its len values): the b-bit fields
 * that overlap it, LSB first (gc_bitw), zero padding at the end. */
__device__ static inline uint8_t tq_field_byte(const tq_quant &q, const float *x, size_t len,
                                               size_t byte)
{
    const unsigned b = q.b;
    const size_t bit0 = 8 * byte;
    unsigned out = 0;
    for (size_t j = bit0 / b; j < len && j * b < bit0 + 8; j++) {
        float d;
        const uint32_t code = tq_code(q, x[j], &d);
        const long sh = (long)(j * b) - (long)bit0;
        out |= sh >= 0 ? code << sh : code >> -sh;
    }
    return (uint8_t)out;
}

__global__ void k_tq_gather(const uint32_t *idx, size_t k, const float *v, float *x)
{
    GRID_STRIDE(j, k) x[j] = v[idx[j]];
}

/* One block per bucket: scan_bucket (min and max magnitude key, reduced
 * per thread, then in shared memory; for b = 1 the mean |x|, a sequential
 * double sum whose first NaN, made quiet and positive, is what x86
 * carries through, so one thread), the head written at its place. A
 * thread per bucket would walk 512 values one after another. */
__global__ void k_tq_heads_sync(const float *x, size_t k, size_t bucket, size_t nbk, unsigned b,
                                uint8_t *vals0, float *lohi)
{
    __shared__ unsigned lo_inv, hi;  /* ~min: atomicMax serves both */
    const size_t stride = TOPKQ_BUCKET_HEAD + values_bytes(bucket, b);
    for (size_t bi = blockIdx.x; bi < nbk; bi += gridDim.x) {
        const size_t s = bi * bucket, len = k - s < bucket ? k - s : bucket;
        if (threadIdx.x == 0) lo_inv = hi = 0;
        __syncthreads();
        uint32_t mlo = 0xFFFFFFFFu, mhi = 0;
        for (size_t j = s + threadIdx.x; j < s + len; j += blockDim.x) {
            const uint32_t key = mag_key(x[j]);
            mlo = key < mlo ? key : mlo;
            mhi = key > mhi ? key : mhi;
        }
        atomicMax(&lo_inv, ~mlo);
        atomicMax(&hi, mhi);
        __syncthreads();
        if (threadIdx.x == 0) {
            float flo = bitsf(~lo_inv), fhi = bitsf(hi);
            if (b == 1) {
                uint32_t nan = 0;
                double sum_abs = 0;
                for (size_t j = s; j < s + len; j++) {
                    if (!nan && is_nan(x[j])) nan = (fbits(x[j]) | 0x00400000u) & 0x7FFFFFFFu;
                    sum_abs = __dadd_rn(sum_abs, (double)gx_abs(x[j]));
                }
                flo = fhi = nan ? bitsf(nan) : __double2float_rn(__ddiv_rn(sum_abs, (double)len));
            }
            uint8_t *at = vals0 + bi * stride;
            at[0] = (uint8_t)b;
            st_f32(at + 1, flo);
            st_f32(at + 5, fhi);
            lohi[2 * bi] = flo;
            lohi[2 * bi + 1] = fhi;
        }
        __syncthreads();  /* lo_inv and hi are cleared for the next bucket */
    }
}

/* One thread per byte of a bucket's fields (tq_field_byte). */
__global__ void k_tq_bytes(const float *x, size_t k, size_t bucket, size_t nbk, unsigned b,
                           const float *lohi, uint8_t *vals0)
{
    const size_t per = values_bytes(bucket, b), stride = TOPKQ_BUCKET_HEAD + per;
    GRID_STRIDE(t, nbk * per) {
        const size_t bi = t / per, byte = t % per, s = bi * bucket;
        const size_t len = k - s < bucket ? k - s : bucket;
        if (byte >= values_bytes(len, b)) continue;
        const tq_quant q = tq_make(b, lohi[2 * bi], lohi[2 * bi + 1]);
        vals0[bi * stride + TOPKQ_BUCKET_HEAD + byte] = tq_field_byte(q, x + s, len, byte);
    }
}

__global__ void k_tq_residual(const float *x, const uint32_t *idx, size_t k, size_t bucket,
                              unsigned b, const float *lohi, float *r)
{
    GRID_STRIDE(j, k) {
        const size_t bi = j / bucket;
        const tq_quant q = tq_make(b, lohi[2 * bi], lohi[2 * bi + 1]);
        float d;
        (void)tq_code(q, x[j], &d);
        r[idx[j]] = gx_sub(x[j], d);
    }
}

__global__ void k_tq_bucket_field(uint8_t *at, uint32_t bucket) { st_u32(at, bucket); }

/* ---- per-bucket widths (a width policy on the context) ------------------ */

/* What scan_bucket learns of a bucket, one thread each, in its order:
 * the magnitude keys' min and max, and the sums in double. */
typedef struct tq_scan { double sum, sum_abs, sum_sq; float lo, hi, mean_abs; uint32_t pad; } tq_scan;

__global__ void k_tq_scan(const float *x, size_t k, size_t bucket, size_t nbk, tq_scan *out)
{
    GRID_STRIDE(bi, nbk) {
        const size_t s = bi * bucket, len = k - s < bucket ? k - s : bucket;
        uint32_t lo = 0xFFFFFFFFu, hi = 0, nan = 0;
        double sum = 0, sum_abs = 0, sum_sq = 0;
        for (size_t j = s; j < s + len; j++) {
            const uint32_t key = mag_key(x[j]);
            lo = key < lo ? key : lo;
            hi = key > hi ? key : hi;
            /* The mean |x| of a 1-bit bucket: x86 carries the first NaN,
             * made quiet and positive (k_tq_heads_sync). */
            if (!nan && is_nan(x[j])) nan = (fbits(x[j]) | 0x00400000u) & 0x7FFFFFFFu;
            const double v = (double)x[j];
            sum = __dadd_rn(sum, v);
            sum_abs = __dadd_rn(sum_abs, (double)gx_abs(x[j]));
            sum_sq = __dadd_rn(sum_sq, __dmul_rn(v, v));
        }
        tq_scan o;
        o.sum = sum;
        o.sum_abs = sum_abs;
        o.sum_sq = sum_sq;
        o.lo = bitsf(lo);
        o.hi = bitsf(hi);
        o.mean_abs = nan ? bitsf(nan) : __double2float_rn(__ddiv_rn(sum_abs, (double)len));
        o.pad = 0;
        out[bi] = o;
    }
}

/* err[bi * 8 + b - 1] = quantise_bucket's error energy of bucket bi at
 * width b (1..8), summed in value order: one thread per (bucket, width). */
__global__ void k_tq_err(const float *x, size_t k, size_t bucket, size_t nbk, const tq_scan *sc,
                         double *err)
{
    GRID_STRIDE(t, nbk * TOPKQ_MAX_BITS) {
        const size_t bi = t / TOPKQ_MAX_BITS, s = bi * bucket;
        const size_t len = k - s < bucket ? k - s : bucket;
        const unsigned b = (unsigned)(t % TOPKQ_MAX_BITS) + 1u;
        const float lo = b == 1 ? sc[bi].mean_abs : sc[bi].lo, hi = b == 1 ? lo : sc[bi].hi;
        const tq_quant q = tq_make(b, lo, hi);
        double e2 = 0;
        for (size_t j = s; j < s + len; j++) {
            float d;
            (void)tq_code(q, x[j], &d);
            const double e = (double)gx_sub(x[j], d);
            e2 = __dadd_rn(e2, __dmul_rn(e, e));
        }
        err[t] = e2;
    }
}

/* The chosen widths' layout, one entry a bucket (host-made). */
typedef struct tq_bucket { uint64_t off; float lo, hi; uint32_t b, pad; } tq_bucket;

/* One block per bucket: its head, then its fields one thread per byte. */
__global__ void k_tq_var_bytes(const float *x, size_t k, size_t bucket, size_t nbk,
                               const tq_bucket *bk, uint8_t *vals0)
{
    for (size_t bi = blockIdx.x; bi < nbk; bi += gridDim.x) {
        const size_t s = bi * bucket, len = k - s < bucket ? k - s : bucket;
        const tq_bucket e = bk[bi];
        const unsigned b = e.b;
        uint8_t *at = vals0 + e.off;
        if (threadIdx.x == 0) {
            at[0] = (uint8_t)b;
            st_f32(at + 1, e.lo);
            st_f32(at + 5, e.hi);
        }
        const tq_quant q = tq_make(b, e.lo, e.hi);
        for (size_t byte = threadIdx.x; byte < values_bytes(len, b); byte += blockDim.x)
            at[TOPKQ_BUCKET_HEAD + byte] = tq_field_byte(q, x + s, len, byte);
    }
}

__global__ void k_tq_var_residual(const float *x, const uint32_t *idx, size_t k, size_t bucket,
                                  const tq_bucket *bk, float *r)
{
    GRID_STRIDE(j, k) {
        const tq_bucket e = bk[j / bucket];
        const tq_quant q = tq_make(e.b, e.lo, e.hi);
        float d;
        (void)tq_code(q, x[j], &d);
        r[idx[j]] = gx_sub(x[j], d);
    }
}

/* codec_topkq.c's stats_of, on the host from the device's sums. */
static gc_bucket_stats tq_stats_of(const tq_scan *s, size_t index, size_t len)
{
    double mean = s->sum / (double)len;
    double var = s->sum_sq / (double)len - mean * mean;
    gc_bucket_stats st;
    memset(&st, 0, sizeof st);
    st.index = index;
    st.len = len;
    st.l2sq = s->sum_sq;
    st.maxabs = (double)s->hi;
    st.mean = mean;
    st.var = var > 0 ? var : 0;
    return st;
}

/* The kept values x (device, k of them) quantised per bucket at the
 * policy's widths into vals0 (device), r[idx] their residual when r.
 * Returns the bytes written or an error. */
static size_t topkq_policy_values(gcmpi_gpu_ctx *ctx, scratch *s, const float *x,
                                  const uint32_t *idx, size_t k, size_t bucket, float *r,
                                  uint8_t *vals0)
{
    cudaStream_t st = ctx->stream;
    const gc_width_policy *policy = &ctx->width_policy;
    const size_t nbk = bucket_count(k, bucket);
    const int want_err = policy->observe != NULL;
    tq_scan *dsc = (tq_scan *)scratch_get(ctx, s, nbk * sizeof(tq_scan));
    double *derr = want_err ? (double *)scratch_get(ctx, s, nbk * TOPKQ_MAX_BITS * sizeof(double))
                            : NULL;
    tq_bucket *dbk = (tq_bucket *)scratch_get(ctx, s, nbk * sizeof(tq_bucket));
    /* The host's figures in one buffer the context keeps (grown, not
     * allocated per call): error energies, scans, then the layout. */
    const size_t err_bytes = want_err ? nbk * TOPKQ_MAX_BITS * sizeof(double) : 0;
    uint8_t *host = host_scratch(ctx, err_bytes + nbk * (sizeof(tq_scan) + sizeof(tq_bucket)));
    double *herr = host && want_err ? (double *)host : NULL;
    tq_scan *hsc = host ? (tq_scan *)(host + err_bytes) : NULL;
    tq_bucket *hbk = host ? (tq_bucket *)(hsc + nbk) : NULL;
    size_t e = 0;
    if (!dsc || !dbk || !host || (want_err && !derr)) e = GC_ERR(ALLOC);
    if (!gc_is_error(e)) {
        k_tq_scan<<<blocks_for(nbk, 64), 64, 0, st>>>(x, k, bucket, nbk, dsc);
        if (want_err)
            k_tq_err<<<blocks_for(nbk * TOPKQ_MAX_BITS, 64), 64, 0, st>>>(x, k, bucket, nbk, dsc, derr);
        queue_copy(ctx, hsc, dsc, nbk * sizeof(tq_scan), cudaMemcpyDeviceToHost, &e);
        if (want_err)
            queue_copy(ctx, herr, derr, nbk * TOPKQ_MAX_BITS * sizeof(double),
                       cudaMemcpyDeviceToHost, &e);
        if (!gc_is_error(e)) e = sync_status(ctx);
    }
    size_t pos = 0;
    /* codec_topkq.c's loop: choose, then observe the error it gave. */
    for (size_t bi = 0; !gc_is_error(e) && bi < nbk; bi++) {
        const size_t len = k - bi * bucket < bucket ? k - bi * bucket : bucket;
        const gc_bucket_stats sts = tq_stats_of(&hsc[bi], bi, len);
        unsigned b = policy->choose(policy->ctx, &sts);
        b = b < 1 ? 1 : b > TOPKQ_MAX_BITS ? TOPKQ_MAX_BITS : b;
        hbk[bi].off = pos;
        hbk[bi].b = b;
        hbk[bi].pad = 0;
        hbk[bi].lo = b == 1 ? hsc[bi].mean_abs : hsc[bi].lo;
        hbk[bi].hi = b == 1 ? hsc[bi].mean_abs : hsc[bi].hi;
        pos += TOPKQ_BUCKET_HEAD + values_bytes(len, b);
        if (want_err) policy->observe(policy->ctx, &sts, b, herr[bi * TOPKQ_MAX_BITS + b - 1]);
    }
    if (!gc_is_error(e)) {
        queue_copy(ctx, dbk, hbk, nbk * sizeof(tq_bucket), cudaMemcpyHostToDevice, &e);
        const unsigned grid = nbk < 65535u * 16u ? (unsigned)nbk : 65535u * 16u;
        if (!gc_is_error(e)) {
            k_tq_var_bytes<<<grid, 128, 0, st>>>(x, k, bucket, nbk, dbk, vals0);
            if (r)
                k_tq_var_residual<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, st>>>(x, idx, k, bucket, dbk, r);
        }
        /* hbk is read by the copy: wait before the next call rewrites it */
        const size_t done = sync_status(ctx);
        if (!gc_is_error(e)) e = done;
    }
    return gc_is_error(e) ? e : pos;
}

static size_t topkq_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                           const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)seed;
    if (n > UINT32_MAX) return GC_ERR(PARAM);  /* indices are 32-bit */
    if (cap < topkq_bound(n, p)) return GC_ERR(DST_TOO_SMALL);
    cudaStream_t st = ctx->stream;
    const size_t k = kept_count(n, p->ratio), bucket = p->bucket, nbk = bucket_count(k, bucket);
    const unsigned b = p->bits;
    uint32_t *idx = (uint32_t *)scratch_get(ctx, s, (k ? k : 1) * sizeof(uint32_t));
    float *x = (float *)scratch_get(ctx, s, (k ? k : 1) * sizeof(float));
    float *lohi = (float *)scratch_get(ctx, s, (nbk ? nbk : 1) * 2 * sizeof(float));
    if (!idx || !x || !lohi) return GC_ERR(ALLOC);
    if (r) gpu_accumulate(ctx, g, r, n);
    const float *v = r ? r : g;
    size_t pos = gpu_topk_indices(ctx, s, v, n, k, idx);
    if (gc_is_error(pos)) return pos;
    pos = gpu_sparse_index_write(ctx, s, idx, k, n, body, cap);
    if (gc_is_error(pos)) return pos;
    k_tq_bucket_field<<<1, 1, 0, st>>>(body + pos, (uint32_t)bucket);
    pos += TOPKQ_BUCKET_FIELD;
    if (k == 0) return pos;
    uint8_t *vals0 = body + pos;
    k_tq_gather<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, st>>>(idx, k, v, x);
    if (ctx->has_width_policy) {
        const size_t w = topkq_policy_values(ctx, s, x, idx, k, bucket, r, vals0);
        return gc_is_error(w) ? w : pos + w;
    }
    /* Per bucket up to 256 threads, in whole warps. */
    const unsigned hthreads = bucket >= GPU_THREADS ? GPU_THREADS : (unsigned)(bucket + 31) / 32 * 32;
    const unsigned hblocks = nbk < 65535u * 16u ? (unsigned)nbk : 65535u * 16u;
    k_tq_heads_sync<<<hblocks, hthreads, 0, st>>>(x, k, bucket, nbk, b, vals0, lohi);
    const size_t per = values_bytes(bucket, b);
    k_tq_bytes<<<blocks_for(nbk * per, GPU_THREADS), GPU_THREADS, 0, st>>>(x, k, bucket, nbk, b,
                                                                          lohi, vals0);
    if (r)
        k_tq_residual<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, st>>>(x, idx, k, bucket, b,
                                                                         lohi, r);
    const size_t last = k - (nbk - 1) * bucket;
    return pos + (nbk - 1) * (TOPKQ_BUCKET_HEAD + per) + TOPKQ_BUCKET_HEAD + values_bytes(last, b);
}

/* One thread per kept value: its bucket's head at off[bucket], its field
 * at bit (j - start) * b of the bucket's values. */
__global__ void k_tq_decode(const uint8_t *body, const uint64_t *off, const uint32_t *idx,
                            size_t k, size_t bucket, float *acc)
{
    GRID_STRIDE(j, k) {
        const size_t bi = j / bucket;
        const uint8_t *at = body + off[bi];
        const unsigned b = at[0];
        const float lo = ld_f32(at + 1), step = level_step(lo, ld_f32(at + 5), b);
        const size_t bit = (j - bi * bucket) * b, byte = bit / 8, sh = bit % 8;
        const uint8_t *f = at + TOPKQ_BUCKET_HEAD + byte;
        uint32_t word = f[0];
        if (sh + b > 8) word |= (uint32_t)f[1] << 8;
        const uint32_t code = (word >> sh) & ((1u << b) - 1u);
        acc[idx[j]] = gx_add(acc[idx[j]], with_sign(level_value(lo, step, code >> 1), code & 1u));
    }
}

static size_t topkq_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                               float *acc, size_t n)
{
    /* The indices first, as the CPU checks them first (errors agree). */
    const uint8_t *d = body_to_device(ctx, s, body, len);
    uint32_t *didx = NULL;
    uint64_t *off = NULL;
    size_t k = 0, r = d ? gpu_sparse_indices(ctx, s, body, len, n, d, &k, &didx) : GC_ERR(ALLOC);
    size_t pos = r, bucket = 1, nbk = 0;
    /* topkq_open's walk over the bucket heads. */
    if (!gc_is_error(r)) {
        if (len - pos < TOPKQ_BUCKET_FIELD) r = GC_ERR(TRUNCATED);
        else {
            const uint32_t bf = get_u32(body + pos);
            if (bf < 1 || bf > (UINT32_C(1) << 31)) r = GC_ERR(CORRUPT);
            bucket = bf;
            pos += TOPKQ_BUCKET_FIELD;
        }
    }
    if (!gc_is_error(r)) {
        nbk = bucket_count(k, bucket);
        off = (uint64_t *)malloc((nbk ? nbk : 1) * sizeof(uint64_t));
        if (!off) r = GC_ERR(ALLOC);
    }
    for (size_t bi = 0; !gc_is_error(r) && bi < nbk; bi++) {
        const size_t st = bi * bucket, blen = k - st < bucket ? k - st : bucket;
        if (len - pos < TOPKQ_BUCKET_HEAD) { r = GC_ERR(TRUNCATED); break; }
        const unsigned b = body[pos];
        if (b < 1 || b > TOPKQ_MAX_BITS) { r = GC_ERR(CORRUPT); break; }
        if (b == 1 && get_u32(body + pos + 1) != get_u32(body + pos + 5)) { r = GC_ERR(CORRUPT); break; }
        off[bi] = pos;
        pos += TOPKQ_BUCKET_HEAD;
        const size_t bits = blen * b, nbytes = values_bytes(blen, b);
        if (len - pos < nbytes) { r = GC_ERR(TRUNCATED); break; }
        if ((bits & 7) && (body[pos + nbytes - 1] >> (bits & 7)) != 0) { r = GC_ERR(CORRUPT); break; }
        pos += nbytes;
    }
    if (!gc_is_error(r) && pos != len) r = GC_ERR(CORRUPT);
    if (!gc_is_error(r) && k) {
        uint64_t *doff = (uint64_t *)scratch_get(ctx, s, nbk * sizeof(uint64_t));
        if (!doff) {
            r = GC_ERR(ALLOC);
        } else if (cudaMemcpyAsync(doff, off, nbk * sizeof(uint64_t), cudaMemcpyHostToDevice,
                                   ctx->stream) != cudaSuccess) {
            r = GC_ERR(GENERIC);
        } else {
            k_tq_decode<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
                d, doff, didx, k, bucket, acc);
            r = sync_status(ctx);  /* off is freed below */
        }
    } else if (!gc_is_error(r)) {
        r = 0;
    }
    free(off);
    return gc_is_error(r) ? r : 0;
}

size_t gpu_topkq_zero_sent(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *x, size_t n)
{
    /* The sent set is the index section at the body's start (topk's). */
    const uint8_t *d = body_to_device(ctx, s, body, len);
    uint32_t *didx = NULL;
    size_t k = 0;
    const size_t r = d ? gpu_sparse_indices(ctx, s, body, len, n, d, &k, &didx) : GC_ERR(ALLOC);
    if (gc_is_error(r)) return r;
    gpu_zero_at(ctx, didx, k, x);
    return sync_status(ctx);
}

extern const gpu_codec gpu_codec_topkq;
const gpu_codec gpu_codec_topkq = {ID_TOPKQ, topkq_encode, topkq_decode_add};
