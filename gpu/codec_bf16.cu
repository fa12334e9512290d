/* codec_bf16.cu — codecs/codec_bf16.c on the device: one 16-bit value
 * per element (bfloat16, round to nearest even), the residual v - decoded
 * (0 where the decoded value is not finite); its kernels are codec_fp16.cu's. */
#include "gpu_half.cuh"

static size_t bf16_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                          const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    (void)p; (void)seed;
    if (cap < 2 * n) return GC_ERR(DST_TOO_SMALL);
    if (n) gpu_half_encode(ctx, s, g, r, n, (uint16_t *)body, 1);
    return 2 * n;
}

static size_t bf16_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                              float *acc, size_t n)
{
    if (len < 2 * n) return GC_ERR(TRUNCATED);
    if (len > 2 * n) return GC_ERR(CORRUPT);
    if (n == 0) return 0;
    uint8_t *d = body_to_device(ctx, s, body, len);
    if (!d) return GC_ERR(ALLOC);
    gpu_half_decode_add(ctx, (const uint16_t *)d, acc, n, 1);
    return 0;
}

extern const gpu_codec gpu_codec_bf16;
const gpu_codec gpu_codec_bf16 = {ID_BF16, bf16_encode, bf16_decode_add};
