/* codec_qsgd.cu — codecs/codec_qsgd.c on the device: per-bucket l2 norms
 * (sums of v^2 in the CPU's order, gpu_bucket.cuh), the CPU's stochastic
 * levels (same counter-based random numbers), fixed-width bit planes or the
 * Elias-gamma stream. The Elias stream is placed by a prefix scan of code
 * lengths per segment and written with atomic ORs; its decode, a
 * sequential parse, runs on the host (gpu_host_decode_add). */
#include "gpu_bucket.cuh"
#include "gpu_planes.cuh"
#include "gpu_scan.cuh"

#define QSGD_FIELDS (BUCKET_FIELD + 2)
#define ELIAS_SEG 64u
enum { QSGD_FIXED = 0, QSGD_ELIAS = 1 };

static size_t fixed_codes_bytes(size_t n, size_t bucket, unsigned bits)
{
    const size_t nb = bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * bits * planes_stride(bucket)
        + bits * planes_stride(bucket_len(n, bucket, nb - 1));
}

__global__ void k_qsgd_head(uint8_t *body, uint32_t bucket, unsigned bits, unsigned coding)
{
    st_u32(body, bucket);
    body[4] = (uint8_t)bits;
    body[5] = (uint8_t)coding;
}

/* norm = sqrt of the bucket's sum of squares, rounded to float (a NaN sum
 * stays that NaN, as sqrtsd and cvtsd2ss keep it); inv = s / norm (0 when
 * norm is not > 0), step = norm / s. */
__global__ void k_qsgd_scales(const double *total, const uint32_t *nan, size_t nb, float s,
                              uint8_t *norms, float *inv, float *step)
{
    GRID_STRIDE(b, nb) {
        const float norm = nan[b] ? bitsf(nan[b]) : __double2float_rn(__dsqrt_rn(total[b]));
        st_f32(norms + 4 * b, norm);
        inv[b] = norm > 0.0f ? gx_div(s, norm) : 0.0f;
        step[b] = gx_div(norm, s);
    }
}

/* put_elias: Elias gamma of level + 1, then the sign when level > 0. */
__device__ static inline uint32_t elias_field(uint8_t code, unsigned bits, unsigned *width)
{
    const uint32_t level = code & ((1u << (bits - 1)) - 1u), x = level + 1;
    const unsigned k = 31u - (unsigned)__clz((int)x);
    uint32_t field = (1u << k) | ((x ^ (1u << k)) << (k + 1));
    unsigned w = 2 * k + 1;
    if (level) {
        field |= (uint32_t)(code >> (bits - 1)) << w;
        w++;
    }
    *width = w;
    return field;
}

__global__ void k_elias_bits(const uint8_t *codes, size_t n, unsigned bits, size_t nseg,
                             uint64_t *seg_bits)
{
    GRID_STRIDE(sg, nseg) {
        const size_t lo = sg * ELIAS_SEG, hi = n - lo < ELIAS_SEG ? n : lo + ELIAS_SEG;
        uint64_t sum = 0;
        for (size_t i = lo; i < hi; i++) {
            unsigned w;
            (void)elias_field(codes[i], bits, &w);
            sum += w;
        }
        seg_bits[sg] = sum;
    }
}

/* Fields are at most 2 * 8 bits, so one spans at most two words. */
__global__ void k_elias_write(const uint8_t *codes, size_t n, unsigned bits, size_t nseg,
                              const uint64_t *seg_off, unsigned *words)
{
    GRID_STRIDE(sg, nseg) {
        const size_t lo = sg * ELIAS_SEG, hi = n - lo < ELIAS_SEG ? n : lo + ELIAS_SEG;
        uint64_t at = seg_off[sg];
        for (size_t i = lo; i < hi; i++) {
            unsigned w;
            const uint32_t field = elias_field(codes[i], bits, &w);
            const unsigned sh = (unsigned)(at & 31u);
            atomicOr(&words[at >> 5], field << sh);
            if (sh + w > 32) atomicOr(&words[(at >> 5) + 1], field >> (32 - sh));
            at += w;
        }
    }
}

static size_t elias_write(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *codes, size_t n,
                          unsigned bits, uint8_t *out, size_t cap)
{
    cudaStream_t st = ctx->stream;
    const size_t nseg = (n + ELIAS_SEG - 1) / ELIAS_SEG;
    uint64_t *seg = (uint64_t *)scratch_get(ctx, s, (nseg + 1) * sizeof(uint64_t));
    if (!seg) return GC_ERR(ALLOC);
    k_elias_bits<<<blocks_for(nseg, GPU_THREADS), GPU_THREADS, 0, st>>>(codes, n, bits, nseg, seg);
    gpu_scan_u64(ctx, seg, nseg, seg + nseg);
    uint64_t total = 0;
    size_t e = fetch(ctx, &total, seg + nseg, sizeof total);
    if (gc_is_error(e)) return e;
    const size_t bytes = (size_t)((total + 7) / 8), nwords = (size_t)(total / 32 + 2);
    if (bytes > cap) return GC_ERR(DST_TOO_SMALL);
    unsigned *words = (unsigned *)scratch_get(ctx, s, nwords * 4);
    if (!words || cudaMemsetAsync(words, 0, nwords * 4, st) != cudaSuccess)
        return words ? GC_ERR(GENERIC) : GC_ERR(ALLOC);
    k_elias_write<<<blocks_for(nseg, GPU_THREADS), GPU_THREADS, 0, st>>>(codes, n, bits, nseg, seg,
                                                                         words);
    if (bytes && cudaMemcpyAsync(out, words, bytes, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
        return GC_ERR(GENERIC);
    return bytes;
}

static size_t qsgd_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket);
    const unsigned bits = p->bits;
    const int coding = (p->flags & GC_PF_QSGD_ELIAS) ? QSGD_ELIAS : QSGD_FIXED;
    const size_t head = QSGD_FIELDS + 4 * nb;
    const size_t bound = head + (coding == QSGD_ELIAS ? (2 * bits * n + 7) / 8
                                                      : fixed_codes_bytes(n, bucket, bits));
    if (cap < bound) return GC_ERR(DST_TOO_SMALL);
    const float levels = (float)((1u << (bits - 1)) - 1u);
    k_qsgd_head<<<1, 1, 0, ctx->stream>>>(body, (uint32_t)bucket, bits, (unsigned)coding);
    if (nb == 0) return QSGD_FIELDS;
    const uint32_t key = key32(seed);
    if (tile_fits(bucket)) {
        if (coding == QSGD_FIXED) {
            gpu_signmag_encode_tiles(ctx, g, r, n, bucket, bits, levels, key, STAT_NORM, NULL,
                                     body + QSGD_FIELDS, body + head, NULL, encode_check(s, r));
            return bound;
        }
        uint8_t *codes = (uint8_t *)scratch_get(ctx, s, n);
        if (!codes) return GC_ERR(ALLOC);
        gpu_signmag_encode_tiles(ctx, g, r, n, bucket, bits, levels, key, STAT_NORM, NULL,
                                 body + QSGD_FIELDS, NULL, codes, encode_check(s, r));
        size_t e = elias_write(ctx, s, codes, n, bits, body + head, cap - head);
        return gc_is_error(e) ? e : head + e;
    }
    gpu_sums sums;
    size_t e = gpu_bucket_sums(ctx, s, g, r, n, bucket, SUM_SQUARE, &sums);
    if (gc_is_error(e)) return e;
    float *inv = (float *)scratch_get(ctx, s, 4 * nb), *step = (float *)scratch_get(ctx, s, 4 * nb);
    if (!inv || !step) return GC_ERR(ALLOC);
    k_qsgd_scales<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        sums.total, sums.nan, nb, levels, body + QSGD_FIELDS, inv, step);
    if (coding == QSGD_FIXED) {
        gpu_signmag_encode(ctx, g, r, n, bucket, bits, levels, key, inv, step, body + head, NULL);
        return bound;
    }
    uint8_t *codes = (uint8_t *)scratch_get(ctx, s, n);
    if (!codes) return GC_ERR(ALLOC);
    gpu_signmag_encode(ctx, g, r, n, bucket, bits, levels, key, inv, step, NULL, codes);
    e = elias_write(ctx, s, codes, n, bits, body + head, cap - head);
    return gc_is_error(e) ? e : head + e;
}

__global__ void k_qsgd_steps(const uint8_t *norms, size_t nb, float s, float *step)
{
    GRID_STRIDE(b, nb) step[b] = gx_div(ld_f32(norms + 4 * b), s);
}

static size_t qsgd_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                              float *acc, size_t n)
{
    if (len < BUCKET_FIELD) return GC_ERR(TRUNCATED);
    const uint32_t bf = get_u32(body);
    if (bf < 1 || bf > (UINT32_C(1) << 31)) return GC_ERR(CORRUPT);
    if (len < QSGD_FIELDS) return GC_ERR(TRUNCATED);
    const size_t bucket = bf, nb = bucket_count(n, bucket);
    const unsigned bits = body[4], coding = body[5];
    if (bits < 2 || bits > 8 || (coding != QSGD_FIXED && coding != QSGD_ELIAS))
        return GC_ERR(CORRUPT);
    const size_t head = QSGD_FIELDS + 4 * nb;
    if (coding == QSGD_ELIAS) {
        if (len < head) return GC_ERR(TRUNCATED);
        return gpu_host_decode_add(ctx, s, body, len, acc, n);
    }
    const size_t want = head + fixed_codes_bytes(n, bucket, bits);
    if (len < want) return GC_ERR(TRUNCATED);
    if (len > want) return GC_ERR(CORRUPT);
    if (nb == 0) return 0;
    uint8_t *d = body_to_device(ctx, s, body, len);
    float *step = (float *)scratch_get(ctx, s, 4 * nb);
    if (!d || !step) return GC_ERR(ALLOC);
    size_t e = flag_clear(ctx);
    if (gc_is_error(e)) return e;
    k_qsgd_steps<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
        d + QSGD_FIELDS, nb, (float)((1u << (bits - 1)) - 1u), step);
    gpu_signmag_decode_add(ctx, d + head, n, bucket, bits, step, acc, ctx->flag);
    return flag_result(ctx);
}

extern const gpu_codec gpu_codec_qsgd;
const gpu_codec gpu_codec_qsgd = {ID_QSGD, qsgd_encode, qsgd_decode_add};
