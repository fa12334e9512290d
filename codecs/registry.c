/* registry.c — the table of codecs; adding one touches its file, this table
 * and its tests, nothing else. */
#include "codec_impl.h"

#include <string.h>

static const gc_codec *const registry[] = {
    &gc_codec_none,  &gc_codec_fp16,   &gc_codec_bf16,    &gc_codec_int8,
    &gc_codec_qsgd,  &gc_codec_terngrad, &gc_codec_sign,  &gc_codec_onebit,
    &gc_codec_natural, &gc_codec_topk, &gc_codec_randk,   &gc_codec_dgc,
    &gc_codec_powersgd, &gc_codec_eg, &gc_codec_topkq,
};

#define REGISTRY_SIZE (sizeof registry / sizeof registry[0])

size_t gc_codec_count(void) { return REGISTRY_SIZE; }

const gc_codec *gc_codec_at(size_t i) { return i < REGISTRY_SIZE ? registry[i] : NULL; }

const gc_codec *gc_codec_by_name(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < REGISTRY_SIZE; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

const gc_codec *gc_codec_by_id(unsigned id)
{
    for (size_t i = 0; i < REGISTRY_SIZE; i++)
        if (registry[i]->id == id) return registry[i];
    return NULL;
}

const char *gc_codec_name(const gc_codec *c) { return c ? c->name : "(none)"; }
unsigned gc_codec_id(const gc_codec *c) { return c ? c->id : 0; }
unsigned gc_codec_flags(const gc_codec *c) { return c ? c->flags : 0; }
