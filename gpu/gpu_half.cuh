/* gpu_half.cuh — the fp16 and bf16 conversions of codecs/codec_fp16.c and
 * codec_bf16.c on the device, and their residual rule. */
#ifndef GPU_HALF_CUH
#define GPU_HALF_CUH

#include "gpu_internal.cuh"

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

/* Queue fp16 (bf16 = 0) or bf16 encode of v = g (+ r) into out, with the
 * residual when r, taking s's non-finite check (codec_fp16.cu); and
 * acc += decoded in. */
void gpu_half_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                     uint16_t *out, int bf16);
void gpu_half_decode_add(gcmpi_gpu_ctx *ctx, const uint16_t *in, float *acc, size_t n, int bf16);

#endif
