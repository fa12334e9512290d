/* brief.c — the settings a short report shows: those changed from their
 * defaults and those the chosen codec and adaptive method read. The full
 * list (gcmpi_config_describe) is for GCMPI_VERBOSE and the JSON file. */
#include "config_impl.h"

#include <stdio.h>

/* Variables a codec reads besides GCMPI_CODEC and GCMPI_EF. A codec not
 * listed reads none (none, fp16, bf16). */
typedef struct codec_vars {
    const char *codec;
    cfg_var vars[4];
    int n;
} codec_vars;

static const codec_vars codec_table[] = {
    {"int8", {CFG_BUCKET}, 1},
    {"qsgd", {CFG_BITS, CFG_BUCKET, CFG_QSGD_CODING, CFG_SEED}, 4},
    {"terngrad", {CFG_BUCKET, CFG_SEED}, 2},
    {"sign", {CFG_BUCKET}, 1},
    {"onebit", {CFG_BUCKET}, 1},
    {"natural", {CFG_BUCKET, CFG_SEED}, 2},
    {"topk", {CFG_RATIO}, 1},
    {"randk", {CFG_RATIO, CFG_RANDK_UNBIASED, CFG_SEED}, 3},
    {"dgc", {CFG_RATIO, CFG_DGC_SAMPLE, CFG_DGC_TOLERANCE}, 3},
    {"powersgd", {CFG_RANK, CFG_SEED}, 2},
    {"eg", {CFG_BUCKET, CFG_EG_N, CFG_EG_K}, 3},
    {"topkq", {CFG_RATIO, CFG_BITS, CFG_BUCKET}, 3},
};

/* Whether the name starts with prefix (the adaptive methods' families). */
static int has_prefix(const char *name, const char *prefix)
{
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

int gcmpi_config_matters(const gcmpi_config *cfg, const char *name)
{
    const char *const *n = gcmpi_config_names;
    if (cfg->disable) return strcmp(name, n[CFG_DISABLE]) == 0;
    const char *codec = gc_codec_name(cfg->codec);
    if (strcmp(name, n[CFG_CODEC]) == 0) return 1;
    if (strcmp(codec, "none") == 0) return 0; /* nothing is compressed */
    if (strcmp(name, n[CFG_EF]) == 0) return 1;
    for (size_t i = 0; i < sizeof codec_table / sizeof codec_table[0]; i++) {
        if (strcmp(codec_table[i].codec, codec) != 0) continue;
        for (int k = 0; k < codec_table[i].n; k++)
            if (strcmp(name, n[codec_table[i].vars[k]]) == 0) return 1;
    }
    const gc_adapt_config *a = &cfg->adapt;
    if (a->ratio_auto.on && has_prefix(name, "GCMPI_RATIO_")) return 1;
    switch (a->method) {
    case GC_ADAPT_GCT: return has_prefix(name, "GCMPI_GCT_");
    case GC_ADAPT_EDGC: return has_prefix(name, "GCMPI_EDGC_");
    case GC_ADAPT_VARIANCE: return has_prefix(name, "GCMPI_VAR_");
    case GC_ADAPT_NONE: break;
    }
    return 0;
}

/* The line of text (up to its '\n') that starts with "name=", or NULL. */
static const char *line_of(const char *text, const char *name, size_t name_len)
{
    for (const char *line = text; *line;) {
        if (strncmp(line, name, name_len) == 0 && line[name_len] == '=') return line;
        const char *nl = strchr(line, '\n');
        if (!nl) break;
        line = nl + 1;
    }
    return NULL;
}

static size_t line_len(const char *line)
{
    const char *nl = strchr(line, '\n');
    return nl ? (size_t)(nl - line) : strlen(line);
}

size_t gcmpi_config_describe_brief(const gcmpi_config *cfg, char *buf, size_t len)
{
    char all[8192], defaults[8192];
    gcmpi_config def;
    gcmpi_config_defaults(&def);
    gcmpi_config_describe(cfg, all, sizeof all);
    gcmpi_config_describe(&def, defaults, sizeof defaults);

    size_t total = 0;
    int fits = buf && len; /* once a line did not fit, none is written */
    if (fits) buf[0] = '\0';
    for (const char *line = all; *line;) {
        size_t n = line_len(line);
        const char *eq = memchr(line, '=', n);
        if (eq) {
            size_t name_len = (size_t)(eq - line);
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)name_len, line);
            const char *d = line_of(defaults, name, name_len);
            int changed = !d || line_len(d) != n || memcmp(d, line, n) != 0;
            if (changed || gcmpi_config_matters(cfg, name)) {
                fits = fits && total + n + 1 < len;
                if (fits) {
                    memcpy(buf + total, line, n);
                    buf[total + n] = '\n';
                    buf[total + n + 1] = '\0';
                }
                total += n + 1;
            }
        }
        line += n;
        if (*line == '\n') line++;
    }
    return total;
}
