/* allgather.c — what MPI_Allgather of floats is compressed with. Gathered
 * data is often not a gradient (contrastive features, activations,
 * statistics): it is not summed, not repeated, and a dropped element is
 * simply lost. */
#include "config_impl.h"

const gc_codec *gcmpi_allgather_codec_auto(const gc_codec *codec)
{
    /* Round to nearest on every element: a relative error of at most 2^-11
     * (fp16, in its range) or 2^-9 (bf16), whatever the data. */
    static const char *const safe[] = {"fp16", "bf16", NULL};
    const char *name = gc_codec_name(codec);
    for (int i = 0; safe[i]; i++)
        if (strcmp(name, safe[i]) == 0) return codec;
    return gc_codec_by_name("none");
}

void gcmpi_config_for_allgather(const gcmpi_config *cfg, gcmpi_config *out)
{
    *out = *cfg;
    out->codec = cfg->allgather_codec;
    out->ef = cfg->allgather_ef;
    out->ef_auto = 0;
    out->ef_momentum = 0.0;
    gc_adapt_config_default(&out->adapt);
}
