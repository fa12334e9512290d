/* codec_qsgd.cu — codecs/codec_qsgd.c on the device: per-bucket l2 norms
 * (sums of v^2 in the CPU's order, gpu_bucket.cuh), the CPU's stochastic
 * levels (same counter-based random numbers), fixed-width bit planes or the
 * Elias-gamma stream. The Elias stream is placed by a prefix scan of code
 * lengths per run of ELIAS_SEG elements and written with atomic ORs, its
 * sync points (codecs/sync_points.h) with it; its decode runs a thread per
 * sync-pointed segment (gpu_stream.cuh), codes read as codec_qsgd.c's
 * elias_code reads them, and adds only a body the CPU would accept. */
#include "gpu_bucket.cuh"
#include "gpu_planes.cuh"
#include "gpu_scan.cuh"
#include "gpu_stream.cuh"

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

/* The fixed fields; with seg_at, the Elias body's segment size there. */
__global__ void k_qsgd_head(uint8_t *body, uint32_t bucket, unsigned bits, unsigned coding,
                            uint8_t *seg_at, uint32_t seg)
{
    st_u32(body, bucket);
    body[4] = (uint8_t)bits;
    body[5] = (uint8_t)coding;
    if (seg_at) st_u32(seg_at, seg);
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

/* Fields are at most 2 * 8 bits, so one spans at most two words. The
 * sync point of a segment (sync_elems elements) starting here goes to
 * sync. */
__global__ void k_elias_write(const uint8_t *codes, size_t n, unsigned bits, size_t nseg,
                              const uint64_t *seg_off, unsigned *words, uint8_t *sync,
                              size_t sync_elems)
{
    GRID_STRIDE(sg, nseg) {
        const size_t lo = sg * ELIAS_SEG, hi = n - lo < ELIAS_SEG ? n : lo + ELIAS_SEG;
        uint64_t at = seg_off[sg];
        for (size_t i = lo; i < hi; i++) {
            if (gc_sync_at(i, sync_elems)) st_u64(sync + gc_sync_offset(i, sync_elems), at);
            unsigned w;
            const uint32_t field = elias_field(codes[i], bits, &w);
            const unsigned sh = (unsigned)(at & 31u);
            atomicOr(&words[at >> 5], field << sh);
            if (sh + w > 32) atomicOr(&words[(at >> 5) + 1], field >> (32 - sh));
            at += w;
        }
    }
}

/* The Elias body after the norms at out[0..cap): the sync points and the
 * stream behind the segment size (k_qsgd_head writes it). Its bytes, the
 * size included, or an error. */
static size_t elias_write(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *codes, size_t n,
                          size_t bucket, unsigned bits, uint8_t *out, size_t cap)
{
    const size_t sync_seg = gc_sync_segment_buckets(bucket);
    const size_t sync_bytes = 4 + gc_sync_bytes(bucket_count(n, bucket), sync_seg);
    if (cap < sync_bytes) return GC_ERR(DST_TOO_SMALL);
    uint8_t *sync = out + 4;
    out += sync_bytes;
    cap -= sync_bytes;
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
    k_elias_write<<<blocks_for(nseg, GPU_THREADS), GPU_THREADS, 0, st>>>(
        codes, n, bits, nseg, seg, words, sync, sync_seg * bucket);
    if (bytes && cudaMemcpyAsync(out, words, bytes, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
        return GC_ERR(GENERIC);
    return sync_bytes + bytes;
}

static size_t qsgd_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    const size_t bucket = p->bucket, nb = bucket_count(n, bucket);
    const unsigned bits = p->bits;
    const int coding = (p->flags & GC_PF_QSGD_ELIAS) ? QSGD_ELIAS : QSGD_FIXED;
    const size_t head = QSGD_FIELDS + 4 * nb;
    const size_t bound = head + (coding == QSGD_ELIAS
                                     ? 4 + gc_sync_bytes(nb, gc_sync_segment_buckets(bucket))
                                           + (2 * bits * n + 7) / 8
                                     : fixed_codes_bytes(n, bucket, bits));
    if (cap < bound) return GC_ERR(DST_TOO_SMALL);
    const float levels = (float)((1u << (bits - 1)) - 1u);
    k_qsgd_head<<<1, 1, 0, ctx->stream>>>(body, (uint32_t)bucket, bits, (unsigned)coding,
                                          coding == QSGD_ELIAS ? body + head : NULL,
                                          (uint32_t)gc_sync_segment_buckets(bucket));
    if (nb == 0) return coding == QSGD_ELIAS ? QSGD_FIELDS + 4 : QSGD_FIELDS;
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
        size_t e = elias_write(ctx, s, codes, n, bucket, bits, body + head, cap - head);
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
    e = elias_write(ctx, s, codes, n, bucket, bits, body + head, cap - head);
    return gc_is_error(e) ? e : head + e;
}

__global__ void k_qsgd_steps(const uint8_t *norms, size_t nb, float s, float *step)
{
    GRID_STRIDE(b, nb) step[b] = gx_div(ld_f32(norms + 4 * b), s);
}

/* Segment sg's Elias codes from its sync point (sync_elems elements a
 * segment), the signed levels into q: end[sg] = the bit after its last
 * code, status[sg] = what codec_qsgd.c's elias_code answers first inside
 * it (TRUNCATED: the stream ends inside a code; CORRUPT: b zeros inside
 * the stream, a level above s), else STREAM_OK. */
__global__ void k_elias_decode_segments(gpu_stream s, const uint8_t *sync, size_t n,
                                        size_t sync_elems, size_t nseg, unsigned bits, int8_t *q,
                                        uint64_t *end, unsigned *status)
{
    const uint32_t smax = (1u << (bits - 1)) - 1u;
    GRID_STRIDE(sg, nseg) {
        uint64_t p = sg ? stream_sync_point(sync, sg) : 0;
        unsigned st = STREAM_OK;
        const size_t lo = sg * sync_elems, hi = n - lo < sync_elems ? n : lo + sync_elems;
        for (size_t i = lo; i < hi; i++) {
            const uint64_t v = stream_peek(&s, p), head = v & ((1u << bits) - 1u);
            if (head == 0) {
                st = p + bits > s.avail ? STREAM_TRUNCATED : STREAM_CORRUPT;
                break;
            }
            const unsigned k = (unsigned)__ffsll((long long)head) - 1u;
            unsigned width = 2 * k + 1;
            if (p + width > s.avail) {
                st = STREAM_TRUNCATED;
                break;
            }
            const uint32_t level = ((1u << k) | (uint32_t)((v >> (k + 1)) & ((1u << k) - 1u))) - 1u;
            if (level > smax) {
                st = STREAM_CORRUPT;
                break;
            }
            int x = (int)level;
            if (level) {
                if (p + width + 1 > s.avail) {
                    st = STREAM_TRUNCATED;
                    break;
                }
                if ((v >> width) & 1u) x = -x;
                width++;
            }
            q[i] = (int8_t)x;
            p += width;
        }
        end[sg] = p;
        status[sg] = st;
    }
}

/* acc += q step of its bucket (codec_qsgd.c's decode_elias), unless the
 * verdict is an error. */
__global__ void k_elias_add(const int8_t *q, size_t n, size_t bucket, const float *step,
                            const unsigned *verdict, float *acc)
{
    if (*verdict != STREAM_OK) return;
    GRID_STRIDE(i, n) acc[i] = gx_add(acc[i], gx_mul((float)q[i], step[i / bucket]));
}

/* The Elias body from its segment size at body[head] (decode_elias's
 * checks first, in its order). */
static size_t elias_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                               float *acc, size_t n, size_t bucket, unsigned bits)
{
    const size_t nb = bucket_count(n, bucket), head = QSGD_FIELDS + 4 * nb;
    size_t r = body_on_host(ctx, body, len, head + 4);
    if (gc_is_error(r)) return r;
    size_t seg = 0;
    const size_t sync_len = gc_sync_open(body + head, len - head, nb, &seg);
    if (gc_is_error(sync_len)) return sync_len;
    const size_t off = head + sync_len;
    if (n == 0) return len == off ? 0 : GC_ERR(CORRUPT);
    const size_t nseg = gc_sync_segments(nb, seg);
    const uint8_t *d = body_to_device(ctx, s, body, len);
    int8_t *q = (int8_t *)scratch_get(ctx, s, n);
    float *step = (float *)scratch_get(ctx, s, 4 * nb);
    uint64_t *end = (uint64_t *)scratch_get(ctx, s, nseg * sizeof(uint64_t));
    unsigned *status = (unsigned *)scratch_get(ctx, s, nseg * sizeof(unsigned));
    if (!d || !q || !step || !end || !status) return GC_ERR(ALLOC);
    const gpu_stream st = {(const uint64_t *)d, len, off, (uint64_t)(len - off) * 8};
    cudaStream_t cs = ctx->stream;
    k_qsgd_steps<<<blocks_for(nb, GPU_THREADS), GPU_THREADS, 0, cs>>>(
        d + QSGD_FIELDS, nb, (float)((1u << (bits - 1)) - 1u), step);
    k_elias_decode_segments<<<blocks_for(nseg, STREAM_DECODE_THREADS), STREAM_DECODE_THREADS, 0, cs>>>(
        st, d + head + 4, n, (size_t)seg * bucket, nseg, bits, q, end, status);
    gpu_stream_verdict(ctx, &st, d + head + 4, end, status, nseg, ctx->flag);
    k_elias_add<<<blocks_for(n, GPU_THREADS), GPU_THREADS, 0, cs>>>(q, n, bucket, step, ctx->flag, acc);
    return gpu_stream_result(ctx, ctx->flag);
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
        return elias_decode_add(ctx, s, body, len, acc, n, bucket, bits);
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
