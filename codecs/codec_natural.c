/* codec_natural.c — natural compression (Horváth et al., 2022): each
 * element is rounded stochastically to one of the two powers of two around
 * it, 2^e <= |v| < 2^(e+1) going up with probability (|v| - 2^e) / 2^e, so
 * the decoded value is unbiased; only sign and exponent are sent.
 *
 * Exponents are coded relative to the bucket. With E the biased (IEEE)
 * exponent of the bucket's largest |v| plus one (capped at 254), code
 * c in 1..127 stands for 2^(c + E - 254), and 0 for zero. Exponents below
 * the lowest representable one, lo = max(E - 126, 1), i.e. |v| < 2^(lo-127)
 * (this includes float subnormals), go stochastically to 0 or to 2^(lo-127)
 * with P(up) = |v| / 2^(lo-127): still unbiased, to the 2^-24 resolution of
 * u. The draw for element i is x = gc_rand32(gc_key32(seed), i): a normal
 * |v| with mantissa field m rounds up when (x >> 9) < m (exact), a small
 * one when (x >> 8) * 2^-24 (gc_rand_unit) < |v| / 2^(lo-127). Values of 2^127 and above (and
 * inf, NaN) become 2^127 with their sign.
 *
 * Body (little-endian):
 *     u32 bucket
 *     u8  E[nb]              in [1, 254]; nb = ceil(n / bucket)
 *     u8  code[n]            bit 7 sign, bits 0-6 c; c = 0 has sign 0;
 *                            c must be >= 128 - E (CORRUPT otherwise)
 * Bits per element: 8 + 8/bucket. */
#include "quant_common.h"

static size_t natural_check(const gc_params *p, char *msg, size_t msglen)
{
    return gc_check_bucket(p, msg, msglen);
}

static size_t body_size(size_t n, size_t bucket)
{
    return GC_Q_BUCKET_FIELD + gc_bucket_count(n, bucket) + n;
}

static size_t natural_bound(size_t n, const gc_params *p)
{
    return body_size(n, p->bucket);
}

/* The power of two a code stands for, with its sign (0 for c == 0). */
GC_Q_INLINE float natural_value(uint32_t code, uint32_t e_top)
{
    uint32_t c = code & 127u, bits = ((code >> 7) << 31) | ((c + e_top - 127u) << 23);
    return gc_bits_f32(gc_select_u32(c != 0, bits, 0u));
}

/* The code of v and, in *d, its decoded value. Exponents and mantissas are
 * below 2^31, so they are compared as signed integers (what SIMD has).
 * `small` (a constant) says whether the bucket has nonzero values below
 * 2^(lo-127); without them zero is the only value off the normal path,
 * and it already gives exponent 0 there. */
GC_Q_INLINE uint8_t natural_code(float v, uint32_t key, uint32_t index, int32_t e_top,
                                 int32_t lo, float small_scale, bool small, float *d)
{
    uint32_t bits = gc_f32_bits(v), a = bits & 0x7FFFFFFFu, sign = bits & 0x80000000u;
    int32_t ex = (int32_t)(a >> 23), mant = (int32_t)(a & 0x7FFFFFu);
    uint32_t rnd = gc_rand32(key, index);
    /* Normal range: exponent ex, or ex + 1 with probability mant / 2^23;
     * capped at E (only 2^127 and above, inf and NaN reach it). */
    int32_t e_norm = ex + ((int32_t)(rnd >> 9) < mant);
    e_norm = e_norm < e_top ? e_norm : e_top;
    /* The biased exponent of the result, 0 for zero. */
    uint32_t e = (uint32_t)e_norm;
    if (small) {
        /* Below 2^(lo-127): 0, or the smallest power with P = |v| / 2^(lo-127). */
        uint32_t up = (float)(int32_t)(rnd >> 8) * 0x1p-24f < gc_bits_f32(a) * small_scale;
        e = gc_select_u32(ex >= lo, e, (uint32_t)lo & (0u - up));
    }
    uint32_t nonzero = 0u - (uint32_t)(e != 0);
    *d = gc_bits_f32((e << 23) | (sign & nonzero));
    return (uint8_t)(((e + 127u - (uint32_t)e_top) | (sign >> 24)) & nonzero);
}

/* Second pass over a bucket (v in r when r, else in g). */
GC_Q_INLINE void natural_bucket(const float *restrict g, float *restrict r, size_t len,
                                uint32_t key, uint32_t base, int32_t e_top, int32_t lo,
                                bool small, uint8_t *restrict codes)
{
    const float small_scale = gc_bits_f32((uint32_t)(254 - lo) << 23); /* 2^(127 - lo) */
    /* 32-bit counters keep the index in 32-bit vector lanes. */
    const uint32_t n32 = (uint32_t)len;
    float d;
    if (r) {
        for (uint32_t i = 0; i < n32; i++) {
            float v = r[i];
            codes[i] = natural_code(v, key, base + i, e_top, lo, small_scale, small, &d);
            r[i] = v - d;
        }
    } else {
        for (uint32_t i = 0; i < n32; i++)
            codes[i] = natural_code(g[i], key, base + i, e_top, lo, small_scale, small, &d);
    }
}

/* First pass: v = g + r into r (when r); the largest |v| and the smallest
 * nonzero |v|, as float bits (UINT32_MAX when all are zero). */
GC_Q_INLINE void magnitude_range(const float *restrict g, float *restrict r, size_t len,
                                 uint32_t *max, uint32_t *min_nonzero)
{
    /* a - 1 wraps for zero, which then never is the minimum. */
    uint32_t hi = 0, lo_minus_1 = UINT32_MAX;
    if (r) {
        for (size_t i = 0; i < len; i++) {
            float v = g[i] + r[i];
            r[i] = v;
            uint32_t a = gc_f32_bits(v) & 0x7FFFFFFFu;
            hi = a > hi ? a : hi;
            lo_minus_1 = a - 1u < lo_minus_1 ? a - 1u : lo_minus_1;
        }
    } else {
        for (size_t i = 0; i < len; i++) {
            uint32_t a = gc_f32_bits(g[i]) & 0x7FFFFFFFu;
            hi = a > hi ? a : hi;
            lo_minus_1 = a - 1u < lo_minus_1 ? a - 1u : lo_minus_1;
        }
    }
    *max = hi;
    *min_nonzero = lo_minus_1 + 1u;
}

GC_VEC_CLONES
static void natural_encode_buckets(const float *restrict g, float *restrict r, size_t n,
                                   size_t bucket, uint32_t key, uint8_t *restrict tops,
                                   uint8_t *restrict codes)
{
    const size_t nb = gc_bucket_count(n, bucket);
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        float *rb = r ? r + i0 : NULL;
        uint32_t amax, amin;
        magnitude_range(g + i0, rb, len, &amax, &amin);
        int32_t e_top = (int32_t)(amax >> 23) + 1;
        e_top = e_top < 254 ? e_top : 254;
        int32_t lo = e_top > 127 ? e_top - 126 : 1;
        tops[b] = (uint8_t)e_top;
        gc_q_prefetch_next(g, r, i0 + len, n);
        if (amin != 0 && (int32_t)(amin >> 23) < lo)
            natural_bucket(g + i0, rb, len, key, (uint32_t)i0, e_top, lo, true, codes + i0);
        else
            natural_bucket(g + i0, rb, len, key, (uint32_t)i0, e_top, lo, false, codes + i0);
    }
}

static size_t natural_encode(const float *g, float *r, size_t n, const gc_params *p,
                             uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)ws;
    const size_t size = body_size(n, p->bucket);
    if (cap < size) return GC_ERROR(DST_TOO_SMALL);
    gc_put_u32(dst, (uint32_t)p->bucket);
    uint8_t *tops = dst + GC_Q_BUCKET_FIELD;
    natural_encode_buckets(g, r, n, p->bucket, gc_key32(seed), tops,
                           tops + gc_bucket_count(n, p->bucket));
    return size;
}

GC_VEC_CLONES
static size_t natural_decode_buckets(const uint8_t *restrict tops,
                                     const uint8_t *restrict codes, size_t n, size_t bucket,
                                     float *restrict acc)
{
    const size_t nb = gc_bucket_count(n, bucket);
    uint32_t bad = 0;
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        const uint32_t e_top = tops[b];
        if (e_top < 1 || e_top > 254) return GC_ERROR(CORRUPT);
        /* Valid codes: 0, or c >= 128 - E with any sign. */
        const uint32_t c_min = e_top >= 127u ? 1u : 128u - e_top;
        for (size_t i = 0; i < len; i++) {
            /* c in [1, c_min), or a signed zero (code 128). */
            uint32_t code = codes[i0 + i], c = code & 127u;
            bad |= (uint32_t)(c - 1u < c_min - 1u) | (uint32_t)(code == 128u);
            acc[i0 + i] += natural_value(code, e_top);
        }
    }
    return bad ? GC_ERROR(CORRUPT) : 0;
}

static size_t natural_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                                 gc_workspace *ws)
{
    (void)ws;
    size_t bucket = 0;
    size_t e = gc_q_open_body(src, len, n, body_size, &bucket);
    if (gc_is_error(e)) return e;
    const uint8_t *tops = src + GC_Q_BUCKET_FIELD;
    return natural_decode_buckets(tops, tops + gc_bucket_count(n, bucket), n, bucket, acc);
}

const gc_codec gc_codec_natural = {
    .name = "natural",
    .id = GC_ID_NATURAL,
    .flags = GC_STOCHASTIC,
    .check = natural_check,
    .bound = natural_bound,
    .encode = natural_encode,
    .decode_add = natural_decode_add,
    .zero_sent = NULL,
};
