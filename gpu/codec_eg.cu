/* codec_eg.cu — codecs/codec_eg.c on the device: fixed-point quantisation
 * q = round(2^n v) (n from the largest finite |v| unless given), zig-zag,
 * per-bucket order k (the CPU's exact best order over the same sample, one
 * thread per bucket), and the order-k Exp-Golomb stream: code lengths
 * summed per segment, a prefix scan for every code's bit offset, codes
 * written with 64-bit atomic ORs. The decode, a sequential parse of the
 * stream, runs on the host (gpu_host_decode_add). */
#include "gpu_scan.cuh"

#define EG_HEAD 5
#define EG_N_LIMIT 60
#define EG_AUTO_RANGE_BITS 12
#define EG_K_BITS 5
#define EG_CLAMP 0x1p30f
#define EG_MAX_CODE_BITS 63u
#define EG_K_SAMPLES 64u
#define EG_MAX_ORDER 30u
#define EG_SEG 64u

__device__ static inline unsigned eg_bitlen(uint64_t x) { return x ? 64u - (unsigned)__clzll((long long)x) : 0u; }

/* gc_eg_word: the code of z in stream order, in the low *nbits bits. */
__device__ static inline uint64_t eg_word(uint32_t z, unsigned k, unsigned *nbits)
{
    const uint64_t x = (uint64_t)z + (1ull << k);
    const unsigned h = eg_bitlen(x) - 1u, u = h - k;
    *nbits = u + h + 1;
    return (((x ^ (1ull << h)) << 1) | 1u) << u;
}

__device__ static inline uint32_t zigzag(int32_t q)
{
    return ((uint32_t)q << 1) ^ (uint32_t)-(int32_t)((uint32_t)q >> 31);
}

/* finite_abs_bits of v = g (+ r), max over all (max_abs). */
__global__ void k_eg_maxabs(const float *g, const float *r, size_t n, unsigned *m)
{
    GRID_STRIDE(i, n) {
        const float v = r ? gx_add(g[i], r[i]) : g[i];
        const uint32_t a = fbits(v) & 0x7FFFFFFFu;
        if (a < 0x7F800000u && a) atomicMax(m, a);
    }
}

/* quantise(): z = zigzag(round(clamp(v 2^n))), r = v - q 2^-n. */
__global__ void k_eg_quant(const float *g, float *r, size_t n, float scale, float step,
                           uint32_t *z)
{
    GRID_STRIDE(i, n) {
        const float v = r ? gx_add(g[i], r[i]) : g[i];
        float x = gx_mul(v, scale);
        x = x < EG_CLAMP ? x : EG_CLAMP;
        x = x > -EG_CLAMP ? x : -EG_CLAMP;
        const int32_t q = __float2int_rn(x);
        if (r) r[i] = gx_sub(v, gx_mul((float)q, step));
        z[i] = zigzag(q);
    }
}

/* best_order over z[0..m) every stride-th element (see codec_eg.c). */
__device__ static unsigned best_order(const uint32_t *z, size_t m, size_t stride)
{
    uint64_t cb[33], cj[33];
    for (unsigned b = 0; b <= 32; b++) cb[b] = cj[b] = 0;
    uint64_t c = 0;
    for (size_t i = 0; i < m; i += stride, c++) {
        const uint64_t v = z[i];
        const unsigned b = eg_bitlen(v);
        cb[b]++;
        cj[eg_bitlen(v ^ ((1ull << b) - 1u))]++;
    }
    uint64_t s = 0;
    for (unsigned b = 0; b <= 32; b++) s += (uint64_t)b * cb[b];
    uint64_t b_at_most = 0, j_at_most = 0, best_bits = ~0ull;
    unsigned best = 0;
    for (unsigned k = 0; k <= EG_MAX_ORDER; k++) {
        j_at_most += cj[k];
        const uint64_t bits = 2 * s + 2 * j_at_most + c * k - c;
        if (bits < best_bits) { best_bits = bits; best = k; }
        b_at_most += cb[k];
        s -= c - b_at_most;
    }
    return best;
}

__global__ void k_eg_orders(const uint32_t *z, size_t n, size_t bucket, size_t nb, int fixed_k,
                            uint8_t *order)
{
    GRID_STRIDE(b, nb) {
        const size_t s = b * bucket, m = bucket_len(n, bucket, b);
        const size_t stride = m >= 2 * EG_K_SAMPLES ? m / EG_K_SAMPLES : 1;
        order[b] = (uint8_t)(fixed_k >= 0 ? (unsigned)fixed_k : best_order(z + s, m, stride));
    }
}

/* Bits of a segment: each element's code, and the 5-bit order in front
 * of each bucket's first element. */
__global__ void k_eg_bits(const uint32_t *z, size_t n, size_t bucket, const uint8_t *order,
                          size_t nseg, uint64_t *seg)
{
    GRID_STRIDE(sg, nseg) {
        const size_t lo = sg * EG_SEG, hi = n - lo < EG_SEG ? n : lo + EG_SEG;
        uint64_t sum = 0;
        for (size_t i = lo; i < hi; i++) {
            unsigned nb;
            (void)eg_word(z[i], order[i / bucket], &nb);
            sum += nb + (i % bucket == 0 ? EG_K_BITS : 0u);
        }
        seg[sg] = sum;
    }
}

__device__ static inline void put_bits(unsigned long long *w, uint64_t at, uint64_t v, unsigned nb)
{
    const unsigned sh = (unsigned)(at & 63u);
    atomicOr(&w[at >> 6], (unsigned long long)(v << sh));
    if (sh + nb > 64) atomicOr(&w[(at >> 6) + 1], (unsigned long long)(v >> (64 - sh)));
}

__global__ void k_eg_write(const uint32_t *z, size_t n, size_t bucket, const uint8_t *order,
                           size_t nseg, const uint64_t *seg, unsigned long long *words)
{
    GRID_STRIDE(sg, nseg) {
        const size_t lo = sg * EG_SEG, hi = n - lo < EG_SEG ? n : lo + EG_SEG;
        uint64_t at = seg[sg];
        for (size_t i = lo; i < hi; i++) {
            const unsigned k = order[i / bucket];
            if (i % bucket == 0) {
                put_bits(words, at, k, EG_K_BITS);
                at += EG_K_BITS;
            }
            unsigned nb;
            const uint64_t word = eg_word(z[i], k, &nb);
            put_bits(words, at, word, nb);
            at += nb;
        }
    }
}

__global__ void k_eg_head(uint8_t *body, int e, uint32_t bucket)
{
    body[0] = (uint8_t)(int8_t)e;
    st_u32(body + 1, bucket);
}

static size_t eg_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                        const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)seed;
    cudaStream_t st = ctx->stream;
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket);
    if (cap < EG_HEAD + (EG_K_BITS * nb + EG_MAX_CODE_BITS * n + 7) / 8) return GC_ERR(DST_TOO_SMALL);
    int e = p->eg_n;
    if (e == GC_AUTO) {
        unsigned *m = (unsigned *)scratch_get(ctx, s, sizeof(unsigned));
        if (!m || cudaMemsetAsync(m, 0, sizeof *m, st) != cudaSuccess) return GC_ERR(ALLOC);
        if (n) k_eg_maxabs<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n, m);
        unsigned mb = 0;
        size_t err = fetch(ctx, &mb, m, sizeof mb);
        if (gc_is_error(err)) return err;
        float mf;
        memcpy(&mf, &mb, sizeof mf);
        e = 0;
        if (mf != 0.0f) {
            int ex;
            frexpf(mf, &ex);
            const int x = EG_AUTO_RANGE_BITS - ex;
            e = x < -EG_N_LIMIT ? -EG_N_LIMIT : x > EG_N_LIMIT ? EG_N_LIMIT : x;
        }
    }
    k_eg_head<<<1, 1, 0, st>>>(body, e, (uint32_t)bucket);
    if (n == 0) return EG_HEAD;
    uint32_t *z = (uint32_t *)scratch_get(ctx, s, n * sizeof(uint32_t));
    uint8_t *order = (uint8_t *)scratch_get(ctx, s, nb);
    const size_t nseg = (n + EG_SEG - 1) / EG_SEG;
    uint64_t *seg = (uint64_t *)scratch_get(ctx, s, (nseg + 1) * sizeof(uint64_t));
    if (!z || !order || !seg) return GC_ERR(ALLOC);
    k_eg_quant<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, st>>>(g, r, n, ldexpf(1.0f, e),
                                                                   ldexpf(1.0f, -e), z);
    k_eg_orders<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, st>>>(
        z, n, bucket, nb, p->eg_k == GC_AUTO ? -1 : p->eg_k, order);
    k_eg_bits<<<blocks_for(nseg, GPU_THREADS), GPU_THREADS, 0, st>>>(z, n, bucket, order, nseg, seg);
    gpu_scan_u64(ctx, seg, nseg, seg + nseg);
    uint64_t total = 0;
    size_t err = fetch(ctx, &total, seg + nseg, sizeof total);
    if (gc_is_error(err)) return err;
    const size_t bytes = (size_t)((total + 7) / 8), nwords = (size_t)(total / 64 + 2);
    if (EG_HEAD + bytes > cap) return GC_ERR(DST_TOO_SMALL);
    unsigned long long *words = (unsigned long long *)scratch_get(ctx, s, nwords * 8);
    if (!words || cudaMemsetAsync(words, 0, nwords * 8, st) != cudaSuccess)
        return words ? GC_ERR(GENERIC) : GC_ERR(ALLOC);
    k_eg_write<<<blocks_for(nseg, GPU_THREADS), GPU_THREADS, 0, st>>>(z, n, bucket, order, nseg,
                                                                      seg, words);
    if (cudaMemcpyAsync(body + EG_HEAD, words, bytes, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
        return GC_ERR(GENERIC);
    return EG_HEAD + bytes;
}

extern const gpu_codec gpu_codec_eg;
const gpu_codec gpu_codec_eg = {ID_EG, eg_encode, gpu_host_decode_add};
