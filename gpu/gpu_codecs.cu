/* gpu_codecs.cu — the table mapping a codec id to its device
 * implementation (gpu_internal.cuh) and to how much of a body its decode
 * reads on the host. Each implementation lives in the .cu named like its
 * CPU twin (codec_topk.cu beside codecs/codec_topk.c). */
#include "gpu_internal.cuh"

extern const gpu_codec gpu_codec_none, gpu_codec_fp16, gpu_codec_bf16, gpu_codec_int8,
    gpu_codec_sign, gpu_codec_qsgd, gpu_codec_terngrad, gpu_codec_onebit, gpu_codec_natural,
    gpu_codec_topk, gpu_codec_randk, gpu_codec_dgc, gpu_codec_topkq, gpu_codec_eg,
    gpu_codec_powersgd;

/* host_head: the body bytes decode_add reads on the host before it hands
 * the body to body_to_device (gpu_codec_host_head). The fixed fields:
 * the bucket field of the quantizers, qsgd's bucket, bits and coding bytes
 * (its Elias decode fetches its segment size behind the norms itself),
 * eg's exponent, bucket and segment size, powersgd's rows,
 * cols and rank, randk's seed, k and flags. topk, dgc and topkq parse
 * their index sections on the host: the whole body.
 * any_input: the codec's encode may see inf and NaN (its writes stay inside
 * a body laid out from n and the parameters alone, and it ends), so
 * gcmpi_gpu_encode runs it beside the non-finite check without waiting
 * for the check (gpu_codec_encodes_any_input). topk and dgc are such:
 * they rank magnitude keys as integers (NaN above infinity), keep exactly
 * k (dgc: at most its bound, else the exact k), and their bodies are
 * bounded by that count. Not topkq (its quantised values are scaled by
 * what was kept) nor the variable-length streams (eg, qsgd's Elias
 * coding). */
typedef struct entry {
    const gpu_codec *codec;
    size_t host_head;
    int any_input;
} entry;

static const entry table[] = {
    {&gpu_codec_none, 0, 1},
    {&gpu_codec_fp16, 0, 1},
    {&gpu_codec_bf16, 0, 1},
    {&gpu_codec_int8, BUCKET_FIELD, 1},
    {&gpu_codec_sign, BUCKET_FIELD, 1},
    {&gpu_codec_qsgd, BUCKET_FIELD + 2, 1},
    {&gpu_codec_terngrad, BUCKET_FIELD, 1},
    {&gpu_codec_onebit, BUCKET_FIELD, 1},
    {&gpu_codec_natural, BUCKET_FIELD, 1},
    {&gpu_codec_topk, GPU_HOST_BODY_ALL, 1},
    {&gpu_codec_randk, 13, 1},
    {&gpu_codec_dgc, GPU_HOST_BODY_ALL, 1},
    {&gpu_codec_topkq, GPU_HOST_BODY_ALL, 0},
    {&gpu_codec_eg, 9, 0},
    {&gpu_codec_powersgd, 12, 1},
};

static const entry *entry_for(unsigned id)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].codec->id == id) return &table[i];
    return NULL;
}

const gpu_codec *gpu_codec_for(unsigned id)
{
    const entry *e = entry_for(id);
    return e ? e->codec : NULL;
}

size_t gpu_codec_host_head(unsigned id)
{
    const entry *e = entry_for(id);
    return e ? e->host_head : GPU_HOST_BODY_ALL;
}

int gpu_codec_encodes_any_input(unsigned id, const gc_params *p)
{
    const entry *e = entry_for(id);
    if (!e || !e->any_input) return 0;
    return !(id == ID_QSGD && (p->flags & GC_PF_QSGD_ELIAS));
}
