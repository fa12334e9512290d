/* codec_bf16.c — bfloat16: the top 16 bits of a float32, rounded to nearest
 * even. Same exponent range as float32, 8 significant bits. A NaN stays a
 * NaN (made quiet, sign and top payload bits kept); values that round past
 * the largest bfloat16 become infinity, as IEEE rounding says.
 *
 * Error feedback: r = v - D(v), exact; 0 where D(v) is not finite (see
 * codec_fp16.c).
 *
 * Body: u16 bf16[n], little-endian. Bits per element: 16. */
#include "quant_common.h"

GC_Q_INLINE uint16_t bf16_from_float(float f)
{
    uint32_t x = gc_f32_bits(f);
    uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x0040u;
    return (uint16_t)((x & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

GC_Q_INLINE float float_from_bf16(uint16_t h) { return gc_bits_f32((uint32_t)h << 16); }

GC_Q_INLINE float residual_of(float v, float d)
{
    return gc_select_f32((gc_f32_bits(d) & 0x7F800000u) == 0x7F800000u, 0.0f, v - d);
}

static size_t bf16_bound(size_t n, const gc_params *p)
{
    (void)p;
    return 2 * n;
}

/* Bodies have no alignment: halves go through memcpy (one 16-bit move). */
GC_VEC_CLONES
static void bf16_encode_body(const float *restrict g, float *restrict r, size_t n,
                             uint8_t *restrict dst)
{
    if (r) {
        for (size_t i = 0; i < n; i++) {
            float v = g[i] + r[i];
            uint16_t q = bf16_from_float(v);
            memcpy(dst + 2 * i, &q, 2);
            r[i] = residual_of(v, float_from_bf16(q));
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint16_t q = bf16_from_float(g[i]);
            memcpy(dst + 2 * i, &q, 2);
        }
    }
}

static size_t bf16_encode(const float *g, float *r, size_t n, const gc_params *p,
                          uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)p; (void)seed; (void)ws;
    if (cap < 2 * n) return GC_ERROR(DST_TOO_SMALL);
    bf16_encode_body(g, r, n, dst);
    return 2 * n;
}

GC_VEC_CLONES
static void bf16_decode_body(const uint8_t *restrict src, float *restrict acc, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t q;
        memcpy(&q, src + 2 * i, 2);
        acc[i] += float_from_bf16(q);
    }
}

static size_t bf16_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                              gc_workspace *ws)
{
    (void)ws;
    size_t e = gc_q_expect_len(len, 2 * n);
    if (gc_is_error(e)) return e;
    bf16_decode_body(src, acc, n);
    return 0;
}

const gc_codec gc_codec_bf16 = {
    .name = "bf16",
    .id = GC_ID_BF16,
    .flags = 0,
    .check = NULL,
    .bound = bf16_bound,
    .encode = bf16_encode,
    .decode_add = bf16_decode_add,
    .zero_sent = NULL,
};
