/* describe.c — the configuration as text (report header) and as a hash that
 * ranks compare at MPI_Init. */
#include "config_impl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

/* ---- hash ----------------------------------------------------------------------- */

/* FNV-1a over explicit little-endian field values (never pointers or
 * padding), so equal settings hash equally in every process. */
typedef struct hasher { uint64_t h; } hasher;

static void mix_bytes(hasher *s, const void *data, size_t len)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++) {
        s->h ^= b[i];
        s->h *= 0x100000001B3ull;
    }
}

static void mix_u64(hasher *s, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    mix_bytes(s, b, sizeof b);
}

static void mix_double(hasher *s, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    mix_u64(s, u);
}

static void mix_string(hasher *s, const char *str)
{
    size_t len = strlen(str);
    mix_u64(s, len); /* length first: "ab","c" differs from "a","bc" */
    mix_bytes(s, str, len);
}

/* Every field, also those of methods not selected: ranks reading different
 * files are told so even before the difference would matter. */
static void mix_adapt(hasher *s, const gc_adapt_config *a)
{
    mix_u64(s, (uint64_t)a->method);
    mix_double(s, a->gct.lambda);
    mix_double(s, a->gct.lr);
    mix_double(s, a->gct.eps);
    mix_double(s, a->gct.decay);
    mix_u64(s, a->gct.decay_every);
    mix_u64(s, (uint64_t)a->gct.alg2);
    mix_double(s, a->edgc.alpha);
    mix_double(s, a->edgc.beta);
    mix_u64(s, a->edgc.window);
    mix_double(s, a->edgc.min);
    mix_double(s, a->edgc.max);
    mix_double(s, a->var.alpha);
    mix_u64(s, a->var.memory);
    mix_double(s, a->var.min);
    mix_double(s, a->var.max);
    mix_u64(s, a->var.n_widths);
    for (unsigned i = 0; i < a->var.n_widths && i < GC_VAR_MAX_WIDTHS; i++) mix_u64(s, a->var.widths[i]);
    mix_double(s, a->var.target);
    mix_u64(s, (uint64_t)a->ratio_auto.on);
    mix_double(s, a->ratio_auto.budget_s);
    mix_double(s, a->ratio_auto.min);
    mix_double(s, a->ratio_auto.max);
}

uint64_t gcmpi_config_hash(const gcmpi_config *cfg)
{
    hasher s = {0xCBF29CE484222325ull};
    /* Ranks with different payload formats must not talk either. */
    mix_u64(&s, GC_FORMAT_VERSION);
    mix_u64(&s, (uint64_t)cfg->disable);
    mix_u64(&s, gc_codec_id(cfg->codec));
    const gc_params *p = &cfg->params;
    mix_double(&s, p->ratio);
    mix_u64(&s, p->bits);
    mix_u64(&s, p->bucket);
    mix_u64(&s, p->rank);
    mix_u64(&s, (uint64_t)(int64_t)p->eg_n);
    mix_u64(&s, (uint64_t)(int64_t)p->eg_k);
    mix_double(&s, p->dgc_sample);
    mix_double(&s, p->dgc_tolerance);
    mix_u64(&s, (uint64_t)(int64_t)p->zstd_level);
    mix_u64(&s, p->flags);
    mix_u64(&s, (uint64_t)cfg->ef);
    mix_double(&s, cfg->ef_momentum);
    mix_double(&s, cfg->momentum);
    mix_u64(&s, cfg->warmup);
    /* ef_max_bytes is left out: residual memory is private to a rank, and
     * nodes with less memory may set a smaller bound. */
    mix_u64(&s, cfg->min_bytes);
    mix_u64(&s, cfg->max_bytes);
    mix_u64(&s, (uint64_t)cfg->algo);
    mix_u64(&s, (uint64_t)(int64_t)cfg->node_size);
    mix_u64(&s, (uint64_t)cfg->node_shm); /* both ways of a node's phases are collective */
    mix_u64(&s, cfg->hier_segment);       /* the segments are exchanged between nodes */
    mix_u64(&s, cfg->seed);
    mix_u64(&s, (uint64_t)cfg->comm);
    if (cfg->comm == GCMPI_COMM_NAMES) {
        mix_u64(&s, (uint64_t)cfg->n_comm_names);
        for (int i = 0; i < cfg->n_comm_names; i++) mix_string(&s, cfg->comm_names[i]);
    }
    mix_u64(&s, (uint64_t)cfg->n_comm_excluded);
    for (int i = 0; i < cfg->n_comm_excluded; i++) mix_string(&s, cfg->comm_excluded[i]);
    /* Which calls are compressed, and how allgather is: all ranks alike. */
    mix_u64(&s, gc_codec_id(cfg->allgather_codec));
    mix_u64(&s, (uint64_t)cfg->allgather_ef);
    mix_u64(&s, (uint64_t)cfg->n_exact_counts);
    for (int i = 0; i < cfg->n_exact_counts; i++) mix_u64(&s, cfg->exact_counts[i]);
    mix_u64(&s, (uint64_t)cfg->in_place_only);
    /* GCMPI_VERIFY runs an extra exact allreduce: all ranks or none. */
    mix_u64(&s, (uint64_t)cfg->verify);
    mix_adapt(&s, &cfg->adapt);
    return s.h;
}

int gcmpi_config_is_per_rank(const char *name)
{
    /* Keep in step with what gcmpi_config_hash leaves out. */
    static const cfg_var per_rank[] = {CFG_STATS, CFG_VERBOSE, CFG_EF_MAX_BYTES, CFG_CONFIG,
                                       CFG_AUTO_CACHE};
    for (size_t i = 0; i < sizeof per_rank / sizeof per_rank[0]; i++)
        if (strcmp(name, gcmpi_config_names[per_rank[i]]) == 0) return 1;
    return 0;
}

/* ---- describe ---------------------------------------------------------------------- */

/* snprintf into a running buffer; the total is what would have been
 * written, as snprintf returns. */
typedef struct writer {
    char *buf;
    size_t len, total;
} writer;

__attribute__((format(printf, 2, 3)))
static void put(writer *w, const char *fmt, ...)
{
    char *at = w->total < w->len ? w->buf + w->total : NULL;
    size_t room = w->total < w->len ? w->len - w->total : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (n > 0) w->total += (size_t)n;
}

static void put_size(writer *w, const char *name, uint64_t v)
{
    static const char units[] = "GMK";
    for (int i = 0; i < 3; i++) {
        unsigned shift = (unsigned)(30 - 10 * i);
        if (v && v % ((uint64_t)1 << shift) == 0) {
            put(w, "%s=%" PRIu64 "%c\n", name, v >> shift, units[i]);
            return;
        }
    }
    put(w, "%s=%" PRIu64 "\n", name, v);
}

static void put_double(writer *w, const char *name, double v)
{
    char text[64];
    cfg_format_double(v, text, sizeof text);
    put(w, "%s=%s\n", name, text);
}

/* A bound where 0 means auto. */
static void put_double_or_auto(writer *w, const char *name, double v)
{
    if (v == 0.0) put(w, "%s=auto\n", name);
    else put_double(w, name, v);
}

static void put_int_or_auto(writer *w, const char *name, int v)
{
    if (v == GC_AUTO) put(w, "%s=auto\n", name);
    else put(w, "%s=%d\n", name, v);
}

size_t gcmpi_config_describe(const gcmpi_config *cfg, char *buf, size_t len)
{
    writer w = {buf, buf ? len : 0, 0};
    if (w.len) buf[0] = '\0';
    const gc_params *p = &cfg->params;
    const char *const *n = gcmpi_config_names;

    put(&w, "%s=%d\n", n[CFG_DISABLE], cfg->disable);
    put(&w, "%s=%s\n", n[CFG_CODEC], gc_codec_name(cfg->codec));
    const gc_adapt_config *a = &cfg->adapt;
    if (a->ratio_auto.on) put(&w, "%s=auto\n", n[CFG_RATIO]);
    else put_double(&w, n[CFG_RATIO], p->ratio);
    put_double(&w, n[CFG_RATIO_BUDGET], a->ratio_auto.budget_s);
    put_double(&w, n[CFG_RATIO_MIN], a->ratio_auto.min);
    put_double(&w, n[CFG_RATIO_MAX], a->ratio_auto.max);
    put(&w, "%s=%u\n", n[CFG_BITS], p->bits);
    put_size(&w, n[CFG_BUCKET], p->bucket);
    put(&w, "%s=%u\n", n[CFG_RANK], p->rank);
    put_int_or_auto(&w, n[CFG_EG_N], p->eg_n);
    put_int_or_auto(&w, n[CFG_EG_K], p->eg_k);
    put_double(&w, n[CFG_DGC_SAMPLE], p->dgc_sample);
    put_double(&w, n[CFG_DGC_TOLERANCE], p->dgc_tolerance);
    put(&w, "%s=%s\n", n[CFG_QSGD_CODING], (p->flags & GC_PF_QSGD_ELIAS) ? "elias" : "fixed");
    put(&w, "%s=%d\n", n[CFG_RANDK_UNBIASED], (p->flags & GC_PF_RANDK_UNBIASED) ? 1 : 0);
    put(&w, "%s=%d\n", n[CFG_CRC], (p->flags & GC_PF_CRC) ? 1 : 0);
    if (p->zstd_level > 0) put(&w, "%s=zstd:%d\n", n[CFG_LOSSLESS], p->zstd_level);
    else put(&w, "%s=off\n", n[CFG_LOSSLESS]);
    if (cfg->ef_auto)
        put(&w, "%s=auto\n", n[CFG_EF]);
    else
        put(&w, "%s=%d\n", n[CFG_EF], cfg->ef);
    put_double(&w, n[CFG_EF_MOMENTUM], cfg->ef_momentum);
    put_double(&w, n[CFG_MOMENTUM], cfg->momentum);
    put(&w, "%s=%" PRIu64 "\n", n[CFG_WARMUP], cfg->warmup);
    put_size(&w, n[CFG_EF_MAX_BYTES], cfg->ef_max_bytes);
    put_size(&w, n[CFG_MIN_BYTES], cfg->min_bytes);
    if (cfg->max_bytes == UINT64_MAX) put(&w, "%s=off\n", n[CFG_MAX_BYTES]);
    else put_size(&w, n[CFG_MAX_BYTES], cfg->max_bytes);
    put(&w, "%s=%s\n", n[CFG_ALGO], gcmpi_algo_name(cfg->algo));
    if (cfg->node_size > 0) put(&w, "%s=%d\n", n[CFG_NODE_SIZE], cfg->node_size);
    else put(&w, "%s=auto\n", n[CFG_NODE_SIZE]);
    put(&w, "%s=%s\n", n[CFG_AUTO_CACHE], cfg->auto_cache);
    put(&w, "%s=%d\n", n[CFG_NODE_SHM], cfg->node_shm);
    if (cfg->hier_segment) put_size(&w, n[CFG_HIER_SEGMENT], cfg->hier_segment);
    else put(&w, "%s=off\n", n[CFG_HIER_SEGMENT]);
    put(&w, "%s=%" PRIu64 "\n", n[CFG_SEED], cfg->seed);
    if (cfg->comm == GCMPI_COMM_WORLD_ONLY) put(&w, "%s=world", n[CFG_COMM]);
    else if (cfg->comm == GCMPI_COMM_ALL) put(&w, "%s=all", n[CFG_COMM]);
    else {
        put(&w, "%s=", n[CFG_COMM]);
        for (int i = 0; i < cfg->n_comm_names; i++) put(&w, "%s%s", i ? "," : "", cfg->comm_names[i]);
    }
    for (int i = 0; i < cfg->n_comm_excluded; i++) put(&w, ",!%s", cfg->comm_excluded[i]);
    put(&w, "\n");
    if (cfg->allgather_codec_auto) put(&w, "%s=auto\n", n[CFG_ALLGATHER_CODEC]);
    else put(&w, "%s=%s\n", n[CFG_ALLGATHER_CODEC], gc_codec_name(cfg->allgather_codec));
    put(&w, "%s=%d\n", n[CFG_ALLGATHER_EF], cfg->allgather_ef);
    if (cfg->n_exact_counts == 0) put(&w, "%s=none", n[CFG_EXACT_COUNTS]);
    else put(&w, "%s=", n[CFG_EXACT_COUNTS]);
    for (int i = 0; i < cfg->n_exact_counts; i++)
        put(&w, "%s%" PRIu64, i ? "," : "", cfg->exact_counts[i]);
    put(&w, "\n");
    put(&w, "%s=%d\n", n[CFG_IN_PLACE_ONLY], cfg->in_place_only);
    if (!cfg->stats_stderr && !cfg->stats_json[0]) put(&w, "%s=off\n", n[CFG_STATS]);
    else put(&w, "%s=%s%s%s\n", n[CFG_STATS], cfg->stats_stderr ? "stderr" : "",
             cfg->stats_stderr && cfg->stats_json[0] ? "," : "", cfg->stats_json);
    put(&w, "%s=%d\n", n[CFG_VERIFY], cfg->verify);
    put(&w, "%s=%d\n", n[CFG_VERBOSE], cfg->verbose);
    put(&w, "%s=%s\n", n[CFG_ADAPT], (unsigned)a->method < 4 ? cfg_adapt_words[a->method] : "?");
    put_double(&w, n[CFG_GCT_LAMBDA], a->gct.lambda);
    put_double(&w, n[CFG_GCT_LR], a->gct.lr);
    put_double(&w, n[CFG_GCT_EPS], a->gct.eps);
    put_double(&w, n[CFG_GCT_DECAY], a->gct.decay);
    put(&w, "%s=%" PRIu64 "\n", n[CFG_GCT_DECAY_EVERY], a->gct.decay_every);
    put(&w, "%s=%s\n", n[CFG_GCT_FORM], cfg_gct_forms[a->gct.alg2 ? 1 : 0]);
    put_double(&w, n[CFG_EDGC_ALPHA], a->edgc.alpha);
    put_double(&w, n[CFG_EDGC_BETA], a->edgc.beta);
    put(&w, "%s=%" PRIu64 "\n", n[CFG_EDGC_WINDOW], a->edgc.window);
    put_double_or_auto(&w, n[CFG_EDGC_MIN], a->edgc.min);
    put_double_or_auto(&w, n[CFG_EDGC_MAX], a->edgc.max);
    put_double(&w, n[CFG_VAR_ALPHA], a->var.alpha);
    put(&w, "%s=%" PRIu64 "\n", n[CFG_VAR_MEMORY], a->var.memory);
    put_double_or_auto(&w, n[CFG_VAR_MIN], a->var.min);
    put_double_or_auto(&w, n[CFG_VAR_MAX], a->var.max);
    put(&w, "%s=", n[CFG_VAR_WIDTHS]);
    for (unsigned i = 0; i < a->var.n_widths && i < GC_VAR_MAX_WIDTHS; i++)
        put(&w, "%s%u", i ? "," : "", a->var.widths[i]);
    put(&w, "\n");
    put_double(&w, n[CFG_VAR_TARGET], a->var.target);
    put(&w, "%s=%s\n", n[CFG_CUDA_AWARE],
        cfg->cuda_aware < 0 ? "auto" : cfg->cuda_aware ? "1" : "0");
    put(&w, "%s=%s\n", n[CFG_GPU_LIB], cfg->gpu_lib);
    put(&w, "%s=%s\n", n[CFG_CONFIG], cfg->source);
    return w.total;
}
