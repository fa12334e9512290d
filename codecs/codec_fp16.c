/* codec_fp16.c — IEEE 754 binary16, round to nearest even. Lossy but
 * deterministic; not GC_LINEAR (MPI could sum halves only with a float16
 * type of its own, which the library does not assume).
 *
 * Conversion: F16C (vcvtps2ph / vcvtph2ps) where the CPU has it, chosen at
 * run time, else a portable version that gives the same bits for every
 * input: overflow (|v| >= 65520) gives infinity, subnormal halves round to
 * nearest even, a NaN stays a NaN of the same sign with the top ten bits of
 * its mantissa and the quiet bit set.
 *
 * Error feedback: r = v - D(v), which is exact; where D(v) is infinite or
 * NaN (overflow, or a non-finite v) the residual is set to 0 rather than
 * carrying an infinity into every later step.
 *
 * Body: u16 half[n], little-endian. Bits per element: 16. */
#include "quant_common.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GC_HAVE_F16C_PATH 1
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#endif

/* ---- portable conversions (F. Giesen's branch-free formulation) ---------- */

GC_Q_INLINE uint16_t half_from_float(float f)
{
    uint32_t x = gc_f32_bits(f), a = x & 0x7FFFFFFFu;
    uint32_t sign = (x >> 16) & 0x8000u;
    /* |f| >= 2^16: infinity, or a quiet NaN keeping the top payload bits. */
    uint32_t big = gc_select_u32(a > 0x7F800000u, 0x7E00u | ((a >> 13) & 0x3FFu), 0x7C00u);
    /* |f| < 2^-14: adding 0.5 puts the half subnormal's bits at the bottom
     * of the float mantissa, rounded to nearest even by the FPU. */
    uint32_t small = gc_f32_bits(gc_bits_f32(a) + 0.5f) - 0x3F000000u;
    /* Normal: rebias, round to nearest even on bit 13; a carry into the
     * exponent gives the next binade or infinity, as it should. */
    uint32_t normal = (a + 0xC8000FFFu + ((a >> 13) & 1u)) >> 13;
    uint32_t h = gc_select_u32(a >= 0x47800000u, big, gc_select_u32(a < 0x38800000u, small, normal));
    return (uint16_t)(sign | h);
}

GC_Q_INLINE float float_from_half(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7FFFu) << 13, exp = o & 0x0F800000u;
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    /* Inf and NaN: top exponent; NaNs come out quiet, as from F16C. */
    uint32_t special = (o + 0x70000000u) | ((uint32_t)(o > 0x0F800000u) << 22);
    /* Zero and subnormal: renormalise with one exact float subtraction. */
    uint32_t small = gc_f32_bits(gc_bits_f32(o + 0x38800000u) - 0x1p-14f);
    uint32_t normal = o + 0x38000000u;
    uint32_t f = gc_select_u32(exp == 0x0F800000u, special, gc_select_u32(exp == 0, small, normal));
    return gc_bits_f32(f | sign);
}

/* Cloned loops stay static: clang 14 does not define the plain name of a
 * target_clones function for other files to call. */
GC_VEC_CLONES
static void halves_from_floats(const float *restrict x, uint16_t *restrict h, size_t n)
{
    for (size_t i = 0; i < n; i++) h[i] = half_from_float(x[i]);
}

GC_VEC_CLONES
static void floats_from_halves(const uint16_t *restrict h, float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = float_from_half(h[i]);
}

void gc_f16_encode_portable(const float *x, uint16_t *h, size_t n) { halves_from_floats(x, h, n); }
void gc_f16_decode_portable(const uint16_t *h, float *x, size_t n) { floats_from_halves(h, x, n); }

/* The residual of one element: v - d, or 0 where d is not finite. */
GC_Q_INLINE float residual_of(float v, float d)
{
    return gc_select_f32((gc_f32_bits(d) & 0x7F800000u) == 0x7F800000u, 0.0f, v - d);
}

/* Bodies have no alignment: halves go through memcpy (one 16-bit move). */
GC_VEC_CLONES
static void encode_portable(const float *restrict g, float *restrict r, size_t n,
                            uint8_t *restrict dst)
{
    if (r) {
        for (size_t i = 0; i < n; i++) {
            float v = g[i] + r[i];
            uint16_t q = half_from_float(v);
            memcpy(dst + 2 * i, &q, 2);
            r[i] = residual_of(v, float_from_half(q));
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint16_t q = half_from_float(g[i]);
            memcpy(dst + 2 * i, &q, 2);
        }
    }
}

GC_VEC_CLONES
static void decode_add_portable(const uint8_t *restrict src, float *restrict acc, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t q;
        memcpy(&q, src + 2 * i, 2);
        acc[i] += float_from_half(q);
    }
}

/* ---- F16C ------------------------------------------------------------------ */

#ifdef GC_HAVE_F16C_PATH
bool gc_f16c_available(void)
{
    /* -1 unknown, else 0 / 1; racing first calls store the same value. */
    static atomic_int cached = -1;
    int have = atomic_load_explicit(&cached, memory_order_relaxed);
    if (have < 0) {
        unsigned a, b, c, d;
        /* AVX2 as reported by libgcc includes the OS's YMM state check. */
        have = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) && __builtin_cpu_supports("avx2");
        atomic_store_explicit(&cached, have, memory_order_relaxed);
    }
    return have;
}

#define F16C_TARGET __attribute__((target("avx2,f16c")))
#define F16C_ROUND (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

F16C_TARGET
void gc_f16_encode_f16c(const float *x, uint16_t *h, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), F16C_ROUND));
    gc_f16_encode_portable(x + i, h + i, n - i);
}

F16C_TARGET
void gc_f16_decode_f16c(const uint16_t *h, float *x, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(h + i))));
    gc_f16_decode_portable(h + i, x + i, n - i);
}

F16C_TARGET
static void encode_f16c(const float *g, float *r, size_t n, uint8_t *dst)
{
    size_t i = 0;
    if (r) {
        const __m256 exp_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7F800000));
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_add_ps(_mm256_loadu_ps(g + i), _mm256_loadu_ps(r + i));
            __m128i q = _mm256_cvtps_ph(v, F16C_ROUND);
            _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i), q);
            __m256 d = _mm256_cvtph_ps(q);
            __m256 non_finite = _mm256_cmp_ps(_mm256_and_ps(d, exp_mask), exp_mask, _CMP_EQ_OQ);
            _mm256_storeu_ps(r + i, _mm256_andnot_ps(non_finite, _mm256_sub_ps(v, d)));
        }
    } else {
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(g + i), F16C_ROUND));
    }
    encode_portable(g + i, r ? r + i : NULL, n - i, dst + 2 * i);
}

F16C_TARGET
static void decode_add_f16c(const uint8_t *src, float *acc, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i)));
        _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), d));
    }
    decode_add_portable(src + 2 * i, acc + i, n - i);
}
#else
bool gc_f16c_available(void) { return false; }
void gc_f16_encode_f16c(const float *x, uint16_t *h, size_t n) { gc_f16_encode_portable(x, h, n); }
void gc_f16_decode_f16c(const uint16_t *h, float *x, size_t n) { gc_f16_decode_portable(h, x, n); }
#endif

/* ---- the codec -------------------------------------------------------------- */

static size_t fp16_bound(size_t n, const gc_params *p)
{
    (void)p;
    return 2 * n;
}

static size_t fp16_encode(const float *g, float *r, size_t n, const gc_params *p,
                          uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)p; (void)seed; (void)ws;
    if (cap < 2 * n) return GC_ERROR(DST_TOO_SMALL);
#ifdef GC_HAVE_F16C_PATH
    if (gc_f16c_available()) {
        encode_f16c(g, r, n, dst);
        return 2 * n;
    }
#endif
    encode_portable(g, r, n, dst);
    return 2 * n;
}

static size_t fp16_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                              gc_workspace *ws)
{
    (void)ws;
    size_t e = gc_q_expect_len(len, 2 * n);
    if (gc_is_error(e)) return e;
#ifdef GC_HAVE_F16C_PATH
    if (gc_f16c_available()) {
        decode_add_f16c(src, acc, n);
        return 0;
    }
#endif
    decode_add_portable(src, acc, n);
    return 0;
}

const gc_codec gc_codec_fp16 = {
    .name = "fp16",
    .id = GC_ID_FP16,
    .flags = 0,
    .check = NULL,
    .bound = fp16_bound,
    .encode = fp16_encode,
    .decode_add = fp16_decode_add,
    .zero_sent = NULL,
};
