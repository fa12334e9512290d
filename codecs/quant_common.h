/* quant_common.h — what the quantising codecs (fp16, bf16, int8, qsgd,
 * terngrad, sign, onebit, natural) share: the bucket field of their bodies,
 * fused "add residual + bucket statistic" passes, the stochastic
 * sign-magnitude quantiser of qsgd and terngrad, the bit-plane layout of
 * codes narrower than a byte, and the fp16 conversions (codec_fp16.c) that
 * the tests compare against F16C.
 *
 * Bucketed encoders work one bucket at a time: a first pass forms
 * v = g + r (written back into r) and the bucket's scale statistic, a second
 * pass quantises v, which is still in L1 (a bucket of ~2k floats is 8 KiB),
 * and writes the residual r = v - D(code). g and r are thus read once from
 * memory and r written once.
 *
 * Bit planes. A bucket of L codes of `bits` bits, m = ceil(L / 8), takes
 * bits * m bytes: plane p (p = 0 .. bits-1) is m bytes, and bit j of byte k
 * of plane p is bit p of the code of element k + j*m. Elements k + j*m >= L
 * are padding and must be zero. Each byte gathers elements m apart, so
 * packing and unpacking are loops over contiguous bytes that vectorise for
 * any bits and any L (a GPU thread per byte k does the same). */
#ifndef GC_QUANT_COMMON_H
#define GC_QUANT_COMMON_H

#include "codec_impl.h"

#include <math.h>
#include <stdbool.h>

/* Bodies hold arrays of little-endian floats and halves that the hot loops
 * copy as host words. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the quantising codecs store host words in little-endian bodies");

/* Hot loops are compiled for AVX-512 (x86-64-v4), AVX2 and the x86-64
 * baseline, and the loader picks one (ifunc). Payloads must not depend on
 * the clone: no clone may fuse a multiply and an add (gcc does not in ISO C
 * mode; clang is told below), so every product is rounded alike. Define
 * GC_NO_VEC_CLONES to build the baseline loops only (to compare payloads). */
#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) \
    && !defined(GC_NO_VEC_CLONES)
#define GC_VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define GC_VEC_CLONES
#endif
#ifdef __clang__
#pragma clang fp contract(off)
#endif

/* Helpers below are inlined into each clone. */
#define GC_Q_INLINE static inline __attribute__((always_inline))

static inline uint32_t gc_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float gc_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Vectorising selects. Without -fno-trapping-math gcc will not if-convert
 * a ternary once it has sunk float arithmetic (which could raise a flag)
 * into one arm, and float clamps against constants can end up as branches;
 * so selects that involve floats are done with masks on the bits. */

/* c ? a : b without a branch (c is 0 or 1). */
static inline uint32_t gc_select_u32(uint32_t c, uint32_t a, uint32_t b)
{
    uint32_t m = 0u - c;
    return (a & m) | (b & ~m);
}

static inline float gc_select_f32(uint32_t c, float a, float b)
{
    return gc_bits_f32(gc_select_u32(c, gc_f32_bits(a), gc_f32_bits(b)));
}

/* x with |x| clamped to limit (limit >= 0); NaN -> +-limit. Integer ops:
 * for non-negative floats the bit order is the numeric order. */
static inline float gc_clamp_abs(float x, float limit)
{
    uint32_t b = gc_f32_bits(x), a = b & 0x7FFFFFFFu, l = gc_f32_bits(limit);
    return gc_bits_f32((a < l ? a : l) | (b & 0x80000000u));
}

/* Round to nearest, ties to even, for |x| < 2^22: adding 1.5 * 2^23 leaves
 * no fraction bits, and the add rounds as the FPU does (to nearest even).
 * Unlike rintf this vectorises on the x86-64 baseline. */
static inline float gc_round_even_small(float x)
{
    const float magic = 0x1.8p23f;
    return (x + magic) - magic;
}

/* ---- the bucket field ---------------------------------------------------- */

/* Bodies of bucketed codecs start with the bucket size as u32. */
#define GC_Q_BUCKET_FIELD 4

/* Read and validate the bucket field: 1 <= bucket <= 2^31. */
static inline size_t gc_q_get_bucket(const uint8_t *src, size_t len, size_t *bucket)
{
    if (len < GC_Q_BUCKET_FIELD) return GC_ERROR(TRUNCATED);
    uint32_t b = gc_get_u32(src);
    if (b < 1 || b > (UINT32_C(1) << 31)) return GC_ERROR(CORRUPT);
    *bucket = b;
    return 0;
}

/* 0 when a body is exactly `want` bytes; else TRUNCATED or CORRUPT
 * (trailing bytes). */
static inline size_t gc_q_expect_len(size_t len, size_t want)
{
    if (len < want) return GC_ERROR(TRUNCATED);
    if (len > want) return GC_ERROR(CORRUPT);
    return 0;
}

/* Opens a bucketed body: reads its bucket field and checks the body is
 * exactly body_size(n, bucket) bytes. The per-bucket fields follow at
 * src + GC_Q_BUCKET_FIELD. Returns 0 or TRUNCATED / CORRUPT. */
static inline size_t gc_q_open_body(const uint8_t *src, size_t len, size_t n,
                                    size_t (*body_size)(size_t n, size_t bucket),
                                    size_t *bucket)
{
    size_t e = gc_q_get_bucket(src, len, bucket);
    if (gc_is_error(e)) return e;
    return gc_q_expect_len(len, body_size(n, *bucket));
}

/* Elements in bucket b of size `bucket` over n elements. */
static inline size_t gc_q_bucket_len(size_t n, size_t bucket, size_t b)
{
    size_t start = b * bucket;
    return n - start < bucket ? n - start : bucket;
}

/* ---- fused first passes: v = g + r into r, and a bucket statistic -------- */

/* Ask for the next GC_Q_AHEAD floats of g and r after element `end` (into
 * L2, so as not to evict the bucket from L1) while the second pass of this
 * bucket computes: without it the passes take turns, memory-bound then
 * compute-bound (qsgd encode with error feedback went from 0.35 to 0.6 of
 * memcpy; 1024 floats measured best among 256 .. 4096). */
#define GC_Q_AHEAD 1024

GC_Q_INLINE void gc_q_prefetch_next(const float *g, const float *r, size_t end, size_t n)
{
    size_t stop = n - end < GC_Q_AHEAD ? n : end + GC_Q_AHEAD;
    for (size_t i = end; i < stop; i += 16) {
        __builtin_prefetch(g + i, 0, 2);
        if (r) __builtin_prefetch(r + i, 1, 2);
    }
}

/* max |v| as the bits of a float: for non-negative floats the integer order
 * is the numeric order, and an integer max vectorises without fast-math. A
 * NaN compares above infinity. */
GC_Q_INLINE uint32_t gc_q_absmax_bits(const float *restrict g, float *restrict r, size_t len)
{
    uint32_t m = 0;
    if (r) {
        for (size_t i = 0; i < len; i++) {
            float v = g[i] + r[i];
            r[i] = v;
            uint32_t a = gc_f32_bits(v) & 0x7FFFFFFFu;
            m = a > m ? a : m;
        }
    } else {
        for (size_t i = 0; i < len; i++) {
            uint32_t a = gc_f32_bits(g[i]) & 0x7FFFFFFFu;
            m = a > m ? a : m;
        }
    }
    return m;
}

/* Sums in a fixed order, so that every build (and a GPU kernel) gets the
 * same bits: a bucket is cut into chunks of GC_Q_CHUNK elements; in a
 * chunk, element i goes to float lane i % 16, and lanes are combined
 * pairwise (lane j += lane j + w for w = 8, 4, 2, 1); chunk sums are added
 * in order in double, so long buckets keep their precision. */
#define GC_Q_LANES 16
#define GC_Q_CHUNK 2048

static inline float gc_q_lanes_total(const float *s)
{
    float t[8], u[4];
    for (size_t j = 0; j < 8; j++) t[j] = s[j] + s[j + 8];
    for (size_t j = 0; j < 4; j++) u[j] = t[j] + t[j + 4];
    return (u[0] + u[2]) + (u[1] + u[3]);
}

/* One chunk: v = g + r (into r when r), sum of v^2 (pow 2) or |v| (pow 1). */
GC_Q_INLINE float gc_q_chunk_sum_pow(const float *restrict g, float *restrict r, size_t len,
                                     int pow)
{
    float s[GC_Q_LANES] = {0};
    const size_t full = len - len % GC_Q_LANES, tail = len - full;
    if (r) {
        for (size_t i = 0; i < full; i += GC_Q_LANES)
            for (size_t j = 0; j < GC_Q_LANES; j++) {
                float v = g[i + j] + r[i + j];
                r[i + j] = v;
                s[j] += pow == 2 ? v * v : fabsf(v);
            }
        for (size_t j = 0; j < tail; j++) {
            float v = g[full + j] + r[full + j];
            r[full + j] = v;
            s[j] += pow == 2 ? v * v : fabsf(v);
        }
    } else {
        for (size_t i = 0; i < full; i += GC_Q_LANES)
            for (size_t j = 0; j < GC_Q_LANES; j++) {
                float v = g[i + j];
                s[j] += pow == 2 ? v * v : fabsf(v);
            }
        for (size_t j = 0; j < tail; j++) {
            float v = g[full + j];
            s[j] += pow == 2 ? v * v : fabsf(v);
        }
    }
    return gc_q_lanes_total(s);
}

/* First pass of a bucket: v = g + r written to r (when r), and the sum of
 * v^2 (pow == 2) or of |v| (pow == 1). */
GC_Q_INLINE double gc_q_sum_pow(const float *restrict g, float *restrict r, size_t len, int pow)
{
    double total = 0;
    for (size_t c = 0; c < len; c += GC_Q_CHUNK) {
        size_t clen = len - c < GC_Q_CHUNK ? len - c : GC_Q_CHUNK;
        total += (double)gc_q_chunk_sum_pow(g + c, r ? r + c : NULL, clen, pow);
    }
    return total;
}

/* ---- stochastic sign-magnitude quantisation (qsgd, terngrad) ------------- */

/* Per element, with u = gc_rand_unit(key, index) uniform in [0, 1):
 *     x = min(|v| * inv, s)           (NaN -> s)
 *     level = min(floor(x + u), s)    (x + u rounded to float, no FMA)
 * so level is x rounded up with probability frac(x): E[level] = x, up to
 * the rounding of x + u (at most 2^-24 (s + 1) of a level). Returns
 * code = level | signbit(v) << sign_shift and sets *d to the decoded value,
 * level * step with the sign of v. */
GC_Q_INLINE uint8_t gc_q_stochastic_one(float v, uint32_t key, uint32_t index, float s,
                                        float inv, float step, unsigned sign_shift, float *d)
{
    uint32_t sign = gc_f32_bits(v) >> 31;
    float x = gc_clamp_abs(fabsf(v) * inv, s);
    int32_t level = (int32_t)(x + gc_rand_unit(key, index));
    int32_t top = (int32_t)s;
    level = level < top ? level : top;
    *d = gc_bits_f32(gc_f32_bits((float)level * step) ^ (sign << 31));
    return (uint8_t)((uint32_t)level | (sign << sign_shift));
}

/* codes[i] for the bucket v = r (after the first pass) or g (no residual);
 * with r, r[i] = v - d. index0 is the global index of the first element. */
GC_Q_INLINE void gc_q_stochastic(const float *restrict g, float *restrict r, size_t len,
                                 uint32_t key, uint32_t index0, float s, float inv,
                                 float step, unsigned bits, uint8_t *restrict codes)
{
    const unsigned sign_shift = bits - 1;
    /* A 32-bit counter (len <= 2^31) keeps the index a vector of 32-bit lanes. */
    const uint32_t n32 = (uint32_t)len;
    float d;
    if (r) {
        for (uint32_t i = 0; i < n32; i++) {
            float v = r[i];
            codes[i] = gc_q_stochastic_one(v, key, index0 + i, s, inv, step, sign_shift, &d);
            r[i] = v - d;
        }
    } else {
        for (uint32_t i = 0; i < n32; i++)
            codes[i] = gc_q_stochastic_one(g[i], key, index0 + i, s, inv, step, sign_shift, &d);
    }
}

/* acc[i] += level * step with the code's sign: the encoder's d exactly. */
GC_Q_INLINE void gc_q_signmag_add(const uint8_t *restrict codes, size_t len, unsigned bits,
                                  float step, float *restrict acc)
{
    const unsigned sign_shift = bits - 1;
    const uint32_t mask = (1u << sign_shift) - 1u;
    for (size_t i = 0; i < len; i++) {
        uint32_t c = codes[i];
        float d = gc_bits_f32(gc_f32_bits((float)(int32_t)(c & mask) * step)
                              ^ ((c >> sign_shift) << 31));
        acc[i] += d;
    }
}

/* ---- bit planes ----------------------------------------------------------- */

static inline size_t gc_planes_stride(size_t len) { return (len + 7) / 8; }
static inline size_t gc_planes_bytes(size_t len, unsigned bits) { return bits * gc_planes_stride(len); }

/* One plane byte per k from the 8 rows codes[j*m ...]: bit j = bit p of
 * row j. Separate restrict rows let the loop vectorise. */
GC_Q_INLINE void gc_planes_pack_rows(uint8_t *restrict out, size_t m, uint8_t pm,
                                     const uint8_t *restrict c0, const uint8_t *restrict c1,
                                     const uint8_t *restrict c2, const uint8_t *restrict c3,
                                     const uint8_t *restrict c4, const uint8_t *restrict c5,
                                     const uint8_t *restrict c6, const uint8_t *restrict c7)
{
    for (size_t k = 0; k < m; k++)
        out[k] = (uint8_t)(((c0[k] & pm) ? 1u : 0u) | ((c1[k] & pm) ? 2u : 0u)
                           | ((c2[k] & pm) ? 4u : 0u) | ((c3[k] & pm) ? 8u : 0u)
                           | ((c4[k] & pm) ? 16u : 0u) | ((c5[k] & pm) ? 32u : 0u)
                           | ((c6[k] & pm) ? 64u : 0u) | ((c7[k] & pm) ? 128u : 0u));
}

/* codes[0 .. 8m) with codes[len ..] zero -> bits planes of m bytes at dst. */
GC_Q_INLINE void gc_planes_pack(const uint8_t *restrict codes, size_t len, unsigned bits,
                                uint8_t *restrict dst)
{
    const size_t m = gc_planes_stride(len);
    for (unsigned p = 0; p < bits; p++)
        gc_planes_pack_rows(dst + p * m, m, (uint8_t)(1u << p), codes, codes + m,
                            codes + 2 * m, codes + 3 * m, codes + 4 * m, codes + 5 * m,
                            codes + 6 * m, codes + 7 * m);
}

/* Row j of codes gets bit p set where bit j of the plane byte is set. */
GC_Q_INLINE void gc_planes_unpack_rows(const uint8_t *restrict plane, size_t m, uint8_t pm,
                                       uint8_t *restrict c0, uint8_t *restrict c1,
                                       uint8_t *restrict c2, uint8_t *restrict c3,
                                       uint8_t *restrict c4, uint8_t *restrict c5,
                                       uint8_t *restrict c6, uint8_t *restrict c7)
{
    for (size_t k = 0; k < m; k++) {
        uint8_t x = plane[k];
        c0[k] |= (x & 1u) ? pm : 0;
        c1[k] |= (x & 2u) ? pm : 0;
        c2[k] |= (x & 4u) ? pm : 0;
        c3[k] |= (x & 8u) ? pm : 0;
        c4[k] |= (x & 16u) ? pm : 0;
        c5[k] |= (x & 32u) ? pm : 0;
        c6[k] |= (x & 64u) ? pm : 0;
        c7[k] |= (x & 128u) ? pm : 0;
    }
}

/* bits planes at src -> codes[0 .. 8m). Returns false when a padding code
 * (element >= len) is not zero. */
GC_Q_INLINE bool gc_planes_unpack(const uint8_t *restrict src, size_t len, unsigned bits,
                                  uint8_t *restrict codes)
{
    const size_t m = gc_planes_stride(len);
    memset(codes, 0, 8 * m);
    for (unsigned p = 0; p < bits; p++)
        gc_planes_unpack_rows(src + p * m, m, (uint8_t)(1u << p), codes, codes + m,
                              codes + 2 * m, codes + 3 * m, codes + 4 * m, codes + 5 * m,
                              codes + 6 * m, codes + 7 * m);
    uint8_t pad = 0;
    for (size_t i = len; i < 8 * m; i++) pad |= codes[i];
    return pad == 0;
}

/* ---- one bit per element (sign, onebit) ----------------------------------- */

/* The single plane of a bucket: bit = (v >= 0) (so -0 is +, NaN is -),
 * decoded as hi when set and lo when clear. Written row by row: row j holds
 * elements j*m .. j*m + m - 1, bit j of each plane byte. With r, r = v - d. */
GC_Q_INLINE void gc_q_bits_encode(const float *restrict g, float *restrict r, size_t len,
                                  float hi, float lo, uint8_t *restrict out)
{
    const size_t m = gc_planes_stride(len);
    memset(out, 0, m);
    for (unsigned j = 0; j < 8 && j * m < len; j++) {
        const size_t start = j * m, cnt = len - start < m ? len - start : m;
        if (r) {
            float *restrict row = r + start;
            for (size_t k = 0; k < cnt; k++) {
                float v = row[k];
                uint8_t bit = v >= 0.0f;
                out[k] |= (uint8_t)(bit << j);
                row[k] = v - (bit ? hi : lo);
            }
        } else {
            const float *restrict row = g + start;
            for (size_t k = 0; k < cnt; k++) out[k] |= (uint8_t)((row[k] >= 0.0f) << j);
        }
    }
}

/* acc += hi or lo by the bits of a plane; false when a padding bit is set. */
GC_Q_INLINE bool gc_q_bits_decode_add(const uint8_t *restrict plane, size_t len, float hi,
                                      float lo, float *restrict acc)
{
    const size_t m = gc_planes_stride(len);
    uint8_t pad = 0;
    for (unsigned j = 0; j < 8; j++) {
        const size_t start = j * m;
        const size_t cnt = start >= len ? 0 : (len - start < m ? len - start : m);
        if (cnt) {
            float *restrict row = acc + start;
            for (size_t k = 0; k < cnt; k++) row[k] += ((plane[k] >> j) & 1u) ? hi : lo;
        }
        for (size_t k = cnt; k < m; k++) pad |= (uint8_t)(plane[k] & (1u << j));
    }
    return pad == 0;
}

/* The bucket loop of sign and onebit decoding. levels holds per bucket hi
 * and, with two_levels, lo (sign: one scale, lo = -hi); the bit planes of
 * the buckets follow the levels. Returns 0 or GC_ERROR(CORRUPT). Inlined
 * into each codec's CPU-dispatch clones. */
GC_Q_INLINE size_t gc_q_sign_buckets_decode_add(const uint8_t *levels, bool two_levels,
                                                size_t n, size_t bucket, float *acc)
{
    const size_t nb = gc_bucket_count(n, bucket), per = two_levels ? 8 : 4;
    const uint8_t *in = levels + per * nb;
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        const float hi = gc_get_f32(levels + per * b);
        const float lo = two_levels ? gc_get_f32(levels + per * b + 4) : -hi;
        if (!gc_q_bits_decode_add(in, len, hi, lo, acc + i0)) return GC_ERROR(CORRUPT);
        in += gc_planes_stride(len);
    }
    return 0;
}

/* ---- fp16 conversions (codec_fp16.c) -------------------------------------- */

/* IEEE binary16, round to nearest even; overflow gives infinity; a NaN stays
 * a NaN of its sign with the top ten bits of its mantissa and the quiet bit
 * set (as F16C does). */
GC_INTERNAL void gc_f16_encode_portable(const float *x, uint16_t *h, size_t n);
GC_INTERNAL void gc_f16_decode_portable(const uint16_t *h, float *x, size_t n);
/* The F16C versions; call only when gc_f16c_available(). */
GC_INTERNAL bool gc_f16c_available(void);
GC_INTERNAL void gc_f16_encode_f16c(const float *x, uint16_t *h, size_t n);
GC_INTERNAL void gc_f16_decode_f16c(const uint16_t *h, float *x, size_t n);

#endif /* GC_QUANT_COMMON_H */
