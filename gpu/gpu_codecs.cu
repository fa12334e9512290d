/* gpu_codecs.cu — the table mapping a codec id to its device
 * implementation (gpu_internal.cuh). Each entry lives in the .cu named like
 * its CPU twin (codec_topk.cu beside codecs/codec_topk.c). */
#include "gpu_internal.cuh"

extern const gpu_codec gpu_codec_none, gpu_codec_fp16, gpu_codec_bf16, gpu_codec_int8,
    gpu_codec_sign, gpu_codec_qsgd, gpu_codec_terngrad, gpu_codec_onebit, gpu_codec_natural,
    gpu_codec_topk, gpu_codec_randk, gpu_codec_dgc, gpu_codec_topkq, gpu_codec_eg,
    gpu_codec_powersgd;

static const gpu_codec *const table[] = {
    &gpu_codec_none, &gpu_codec_fp16, &gpu_codec_bf16, &gpu_codec_int8, &gpu_codec_sign,
    &gpu_codec_qsgd, &gpu_codec_terngrad, &gpu_codec_onebit, &gpu_codec_natural,
    &gpu_codec_topk, &gpu_codec_randk, &gpu_codec_dgc, &gpu_codec_topkq, &gpu_codec_eg,
    &gpu_codec_powersgd,
};

const gpu_codec *gpu_codec_for(unsigned id)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i]->id == id) return table[i];
    return NULL;
}
