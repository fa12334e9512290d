/* adapt_config.c — the adaptive layer's defaults (what README's variable
 * table documents) and which codecs each method applies to. */
#include "gc_adapt.h"

#include <string.h>

/* GCT's initial Lagrange multiplier and epsilon, both in gradient units:
 * the paper tunes them per model. These are the values that trained
 * gcmpi-train without loss (README "Adaptive layer"); with the paper-style
 * eps = 1e-8 the term g / (prev + eps) explodes wherever the previous mean
 * gradient is near zero and training diverged there. The README table
 * states them too (config/config_impl.h); a unit test holds them in step. */
#define GCT_DEFAULT_LAMBDA 1e-5
#define GCT_DEFAULT_EPS 1e-3

void gc_adapt_config_default(gc_adapt_config *c)
{
    static const unsigned widths[] = {1, 2, 3, 4, 6, 8};
    memset(c, 0, sizeof *c);
    c->method = GC_ADAPT_NONE;

    c->gct.lambda = GCT_DEFAULT_LAMBDA;
    c->gct.lr = 0.01;
    c->gct.eps = GCT_DEFAULT_EPS;
    c->gct.decay = 0.8;
    c->gct.decay_every = 1000;
    c->gct.alg2 = 0;

    c->edgc.alpha = 0.1;
    c->edgc.beta = 0.01;
    c->edgc.window = 100;
    c->edgc.min = 0.0; /* auto */
    c->edgc.max = 0.0;

    c->var.alpha = 1.0;
    c->var.memory = 20;
    c->var.min = 0.0; /* auto */
    c->var.max = 0.0;
    _Static_assert(sizeof widths / sizeof widths[0] <= GC_VAR_MAX_WIDTHS, "default widths fit");
    memcpy(c->var.widths, widths, sizeof widths);
    c->var.n_widths = (unsigned)(sizeof widths / sizeof widths[0]);
    c->var.target = 0.02;

    c->ratio_auto.on = 0;
    c->ratio_auto.budget_s = 0.01;
    c->ratio_auto.min = 0.0001;
    c->ratio_auto.max = 0.1;
}

/* 1 if name is one of the NULL-terminated names. */
static int named(const gc_codec *c, const char *const *names)
{
    if (!c) return 0;
    const char *name = gc_codec_name(c);
    for (size_t i = 0; names[i]; i++)
        if (strcmp(name, names[i]) == 0) return 1;
    return 0;
}

static int method_supports(gc_adapt_method m, const gc_codec *c)
{
    /* GCT shapes the input of Exp-Golomb coding; EDGC needs a ratio or a
     * rank to set; variance sets k of the top-k family (randk keeps no
     * information about which elements matter, so its k has nothing to
     * follow). */
    static const char *const gct[] = {"eg", NULL};
    static const char *const edgc[] = {"topk", "dgc", "topkq", "powersgd", NULL};
    static const char *const variance[] = {"topk", "dgc", "topkq", NULL};
    switch (m) {
    case GC_ADAPT_NONE: return 1;
    case GC_ADAPT_GCT: return named(c, gct);
    case GC_ADAPT_EDGC: return named(c, edgc);
    case GC_ADAPT_VARIANCE: return named(c, variance);
    }
    return 0;
}

int gc_adapt_supports(const gc_adapt_config *cfg, const gc_codec *c)
{
    static const char *const ratio_codecs[] = {"topk", "dgc", "topkq", "randk", NULL};
    if (!method_supports(cfg->method, c)) return 0;
    return !cfg->ratio_auto.on || named(c, ratio_codecs);
}

int gc_adapt_active(const gc_adapt_config *cfg)
{
    return cfg->method != GC_ADAPT_NONE || cfg->ratio_auto.on;
}
