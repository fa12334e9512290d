/* config.c — judge every GCMPI_* value, then the combinations, and build the
 * one immutable configuration. Every rejection names the variable, the value
 * as given and what is allowed. */
#include "config_impl.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#define BOOL_EXPECT "0, 1, true, false, yes, no, on or off"
#define SIZE_EXPECT "an integer with optional K, M or G suffix"
#define COMM_EXPECT "world, all or up to 16 comma-separated communicator names"
#define STATS_EXPECT "off, stderr, a path ending in .json, or stderr and a .json path separated by a comma"
#define LOSSLESS_EXPECT "off, zstd or zstd:LEVEL with LEVEL in [1, 19]"

_Static_assert(GCMPI_MAX_COMM_NAMES == 16, "COMM_EXPECT names the limit");

/* zstd's own default level: a good speed/ratio balance for float payloads. */
#define ZSTD_DEFAULT_LEVEL 3

typedef struct judge {
    const cfg_sources *src;
    gcmpi_config_result *res;
} judge;

static const char *raw(const judge *j, cfg_var v) { return j->src->set[v].value; }

/* "libgcmpi: [FILE:LINE: ]GCMPI_X=<value as given> <what>"; returns 0. */
__attribute__((format(printf, 3, 4)))
static int bad(const judge *j, cfg_var v, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const cfg_setting *s = &j->src->set[v];
    char at[GCMPI_PATH_LEN + 32] = "";
    if (s->value && s->file) snprintf(at, sizeof at, "%s:%u: ", s->file, s->line);
    const char *value = s->value ? s->value : "";
    return cfg_error(j->res, "libgcmpi: %s%s=" CFG_SHOW_FMT "%s%s", at, gcmpi_config_names[v],
                     CFG_SHOW(value), what[0] ? " " : "", what);
}

/* ---- one variable at a time ------------------------------------------------------ */

static int get_bool(const judge *j, cfg_var v, int *out)
{
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected " BOOL_EXPECT);
    if (cfg_parse_bool(s, out) != CFG_OK) return bad(j, v, "is not a boolean; expected " BOOL_EXPECT);
    return 1;
}

/* A number in the interval from lo to hi, open at an end when *_open. */
static int get_number(const judge *j, cfg_var v, double lo, int lo_open, double hi, int hi_open,
                      const char *expect, double *out)
{
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected %s", expect);
    double x;
    cfg_status st = cfg_parse_double(s, &x);
    if (st == CFG_SYNTAX) return bad(j, v, "is not a number; expected %s", expect);
    if (st == CFG_RANGE || x < lo || x > hi || (lo_open && x == lo) || (hi_open && x == hi))
        return bad(j, v, "is out of range; expected %s", expect);
    *out = x;
    return 1;
}

/* A count >= 1 that fits an unsigned; codecs narrow the range. */
static int get_count(const judge *j, cfg_var v, unsigned *out)
{
    char expect[64];
    snprintf(expect, sizeof expect, "an integer in [1, %u]", UINT_MAX);
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected %s", expect);
    long long x;
    cfg_status st = cfg_parse_int(s, 1, UINT_MAX, &x);
    if (st == CFG_SYNTAX) return bad(j, v, "is not an integer; expected %s", expect);
    if (st == CFG_RANGE) return bad(j, v, "is out of range; expected %s", expect);
    *out = (unsigned)x;
    return 1;
}

static int get_size(const judge *j, cfg_var v, uint64_t hi, uint64_t *out)
{
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected " SIZE_EXPECT);
    uint64_t x;
    cfg_status st = cfg_parse_size(s, &x);
    if (st == CFG_SYNTAX) return bad(j, v, "is not a size; expected " SIZE_EXPECT);
    if (st == CFG_RANGE || x > hi) return bad(j, v, "is out of range; expected at most %" PRIu64, hi);
    *out = x;
    return 1;
}

/* An integer, or "auto" (GC_AUTO, which no integer may collide with). */
static int get_int_or_auto(const judge *j, cfg_var v, int *out)
{
    char expect[80];
    snprintf(expect, sizeof expect, "an integer in [%d, %d] or auto", GC_AUTO + 1, INT_MAX);
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected %s", expect);
    if (cfg_ieq(s, "auto")) {
        *out = GC_AUTO;
        return 1;
    }
    long long x;
    cfg_status st = cfg_parse_int(s, GC_AUTO + 1, INT_MAX, &x);
    if (st == CFG_SYNTAX) return bad(j, v, "is not an integer; expected %s", expect);
    if (st == CFG_RANGE) return bad(j, v, "is out of range; expected %s", expect);
    *out = (int)x;
    return 1;
}

/* One of words (the index into *out); noun names what s should have been. */
static int get_keyword(const judge *j, cfg_var v, const char *const *words, const char *noun,
                       const char *expect, int *out)
{
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected %s", expect);
    int i = cfg_keyword(s, words);
    if (i < 0) return bad(j, v, "is not %s; expected %s", noun, expect);
    *out = i;
    return 1;
}

/* "a, b, c" of the registered codecs that keep(c) accepts. */
static void codec_list(char *buf, size_t len, int (*keep)(const gc_codec *))
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < gc_codec_count(); i++) {
        const gc_codec *c = gc_codec_at(i);
        if (keep && !keep(c)) continue;
        int n = snprintf(buf + at, len - at, "%s%s", at ? ", " : "", gc_codec_name(c));
        if (n < 0 || (size_t)n >= len - at) break;
        at += (size_t)n;
    }
}

static int get_codec(const judge *j, const gc_codec **out)
{
    const char *s = raw(j, CFG_CODEC);
    if (!s) return 1;
    for (size_t i = 0; i < gc_codec_count(); i++) {
        if (cfg_ieq(s, gc_codec_name(gc_codec_at(i)))) {
            *out = gc_codec_at(i);
            return 1;
        }
    }
    char names[512];
    codec_list(names, sizeof names, NULL);
    return bad(j, CFG_CODEC, "is %s; expected one of: %s", *s ? "not a codec" : "empty", names);
}

static int get_lossless(const judge *j, int *level)
{
    const char *s = raw(j, CFG_LOSSLESS);
    if (!s) return 1;
    if (!*s) return bad(j, CFG_LOSSLESS, "is empty; expected " LOSSLESS_EXPECT);
    if (cfg_ieq(s, "off")) {
        *level = 0;
        return 1;
    }
    if (cfg_ieq(s, "zstd")) {
        *level = ZSTD_DEFAULT_LEVEL;
        return 1;
    }
    char head[6];
    snprintf(head, sizeof head, "%s", s);
    long long x;
    cfg_status st = cfg_ieq(head, "zstd:") ? cfg_parse_int(s + 5, 1, 19, &x) : CFG_SYNTAX;
    if (st == CFG_SYNTAX) return bad(j, CFG_LOSSLESS, "is not a lossless stage; expected " LOSSLESS_EXPECT);
    if (st == CFG_RANGE) return bad(j, CFG_LOSSLESS, "is out of range; expected " LOSSLESS_EXPECT);
    *level = (int)x;
    return 1;
}

static int get_seed(const judge *j, uint64_t *out)
{
    static const char expect[] = "an integer in [0, 2^64 - 1], decimal or 0x hexadecimal";
    const char *s = raw(j, CFG_SEED);
    if (!s) return 1;
    if (!*s) return bad(j, CFG_SEED, "is empty; expected %s", expect);
    cfg_status st = cfg_parse_u64(s, out);
    if (st == CFG_SYNTAX) return bad(j, CFG_SEED, "is not an integer; expected %s", expect);
    if (st == CFG_RANGE) return bad(j, CFG_SEED, "is out of range; expected %s", expect);
    return 1;
}

static int get_verbose(const judge *j, int *out)
{
    const char *s = raw(j, CFG_VERBOSE);
    if (!s) return 1;
    if (!*s) return bad(j, CFG_VERBOSE, "is empty; expected an integer in [0, 3]");
    long long x;
    cfg_status st = cfg_parse_int(s, 0, 3, &x);
    if (st == CFG_SYNTAX) return bad(j, CFG_VERBOSE, "is not an integer; expected an integer in [0, 3]");
    if (st == CFG_RANGE) return bad(j, CFG_VERBOSE, "is out of range; expected an integer in [0, 3]");
    *out = (int)x;
    return 1;
}

static int get_adapt(const judge *j, gcmpi_adapt *out)
{
    static const char *const words[] = {"none", "gct", "edgc", "variance", NULL};
    int i = GCMPI_ADAPT_NONE;
    if (!get_keyword(j, CFG_ADAPT, words, "an adaptive mode", "none", &i)) return 0;
    /* The adaptive layer is not built yet: accepting its names would
     * silently train without it. */
    if (i != GCMPI_ADAPT_NONE) return bad(j, CFG_ADAPT, "is not available in this build; expected none");
    *out = (gcmpi_adapt)i;
    return 1;
}

/* Calls fn(item, len) for each comma-separated item with blanks trimmed;
 * stops at the first 0. */
static int each_item(const char *s, int (*fn)(void *, const char *, size_t), void *ctx)
{
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        const char *item = s;
        while (len && (*item == ' ' || *item == '\t')) item++, len--;
        while (len && (item[len - 1] == ' ' || item[len - 1] == '\t')) len--;
        if (!fn(ctx, item, len)) return 0;
        if (!comma) return 1;
        s = comma + 1;
    }
}

typedef struct item_ctx {
    const judge *j;
    gcmpi_config *c;
} item_ctx;

static int is_word(const char *item, size_t len, const char *word)
{
    char buf[16];
    if (len >= sizeof buf) return 0;
    memcpy(buf, item, len);
    buf[len] = '\0';
    return cfg_ieq(buf, word);
}

static int comm_item(void *ctx, const char *item, size_t len)
{
    item_ctx *k = ctx;
    if (len == 0) return bad(k->j, CFG_COMM, "has an empty name; expected " COMM_EXPECT);
    if (is_word(item, len, "world") || is_word(item, len, "all"))
        return bad(k->j, CFG_COMM, "mixes world or all with names; expected " COMM_EXPECT);
    if (len >= GCMPI_COMM_NAME_LEN)
        return bad(k->j, CFG_COMM, "has a name longer than %d characters; expected " COMM_EXPECT,
                   GCMPI_COMM_NAME_LEN - 1);
    if (k->c->n_comm_names == GCMPI_MAX_COMM_NAMES)
        return bad(k->j, CFG_COMM, "lists more than %d names; expected " COMM_EXPECT,
                   GCMPI_MAX_COMM_NAMES);
    memcpy(k->c->comm_names[k->c->n_comm_names], item, len);
    k->c->comm_names[k->c->n_comm_names][len] = '\0';
    k->c->n_comm_names++;
    return 1;
}

static int get_comm(const judge *j, gcmpi_config *c)
{
    const char *s = raw(j, CFG_COMM);
    if (!s) return 1;
    if (!*s) return bad(j, CFG_COMM, "is empty; expected " COMM_EXPECT);
    if (cfg_ieq(s, "world")) c->comm = GCMPI_COMM_WORLD_ONLY;
    else if (cfg_ieq(s, "all")) c->comm = GCMPI_COMM_ALL;
    else {
        c->comm = GCMPI_COMM_NAMES;
        c->n_comm_names = 0;
        item_ctx k = {j, c};
        return each_item(s, comm_item, &k);
    }
    return 1;
}

static int ends_with_json(const char *item, size_t len)
{
    /* A name before the extension: ".json" alone is not a file anyone meant. */
    return len > 5 && is_word(item + len - 5, 5, ".json");
}

static int stats_item(void *ctx, const char *item, size_t len)
{
    item_ctx *k = ctx;
    gcmpi_config *c = k->c;
    if (len == 0) return bad(k->j, CFG_STATS, "has an empty entry; expected " STATS_EXPECT);
    if (is_word(item, len, "stderr")) {
        c->stats_stderr = 1;
        return 1;
    }
    if (!ends_with_json(item, len))
        return bad(k->j, CFG_STATS, "is not a statistics destination; expected " STATS_EXPECT);
    if (c->stats_json[0])
        return bad(k->j, CFG_STATS, "names two JSON files; expected " STATS_EXPECT);
    if (len >= sizeof c->stats_json)
        return bad(k->j, CFG_STATS, "has a path longer than %zu bytes; expected " STATS_EXPECT,
                   sizeof c->stats_json - 1);
    memcpy(c->stats_json, item, len);
    c->stats_json[len] = '\0';
    return 1;
}

static int get_stats(const judge *j, gcmpi_config *c)
{
    const char *s = raw(j, CFG_STATS);
    int on;
    if (!s) return 1;
    c->stats_stderr = 0;
    c->stats_json[0] = '\0';
    /* Empty, 0 and off mean no statistics; 1 (or on, yes, true) means stderr. */
    if (!*s) return 1;
    if (cfg_parse_bool(s, &on) == CFG_OK) {
        c->stats_stderr = on;
        return 1;
    }
    item_ctx k = {j, c};
    return each_item(s, stats_item, &k);
}

/* GCMPI_EF: a boolean or auto (the default). Error feedback only helps a
 * contractive compressor, ||C(v) - v|| < ||v||. QSGD at the usual widths,
 * TernGrad and randk scaled by n/k are unbiased with a variance above
 * ||v||^2: the residual they leave is larger than what they send, and
 * feeding it back makes the error grow without bound (measured: qsgd at 2
 * bits, the error of the running mean grew from 59 to 3.4e7 in 64 calls).
 * So auto turns it off for those and on for every other lossy codec. */
static int get_ef(const judge *j, gcmpi_config *c)
{
    const char *s = raw(j, CFG_EF);
    if (!s || cfg_ieq(s, "auto")) {
        c->ef = -1;
        c->ef_auto = 1;
        return 1;
    }
    c->ef_auto = 0;
    if (s && !*s) return bad(j, CFG_EF, "is empty; expected auto or " BOOL_EXPECT);
    if (s && cfg_parse_bool(s, &c->ef) != CFG_OK)
        return bad(j, CFG_EF, "is not a boolean; expected auto or " BOOL_EXPECT);
    return 1;
}

static int judge_values(const judge *j, gcmpi_config *c)
{
    static const char *const codings[] = {"fixed", "elias", NULL};
    static const char *const algos[] = {"auto", "allgather", "rsag", "native", NULL};
    gc_params *p = &c->params;
    int randk_unbiased = 0, crc = 0, coding = 0, algo = GCMPI_ALGO_AUTO;
    uint64_t bucket = p->bucket;

    if (!get_bool(j, CFG_DISABLE, &c->disable)) return 0;
    if (!get_codec(j, &c->codec)) return 0;
    if (!get_number(j, CFG_RATIO, 0, 1, 1, 0, "a number in (0, 1]", &p->ratio)) return 0;
    if (!get_count(j, CFG_BITS, &p->bits)) return 0;
    if (!get_size(j, CFG_BUCKET, SIZE_MAX, &bucket)) return 0;
    p->bucket = (size_t)bucket;
    if (!get_count(j, CFG_RANK, &p->rank)) return 0;
    if (!get_int_or_auto(j, CFG_EG_N, &p->eg_n)) return 0;
    if (!get_int_or_auto(j, CFG_EG_K, &p->eg_k)) return 0;
    /* The dgc codec checks these two ranges when it is the codec. */
    if (!get_number(j, CFG_DGC_SAMPLE, -DBL_MAX, 0, DBL_MAX, 0, "a number", &p->dgc_sample)) return 0;
    if (!get_number(j, CFG_DGC_TOLERANCE, -DBL_MAX, 0, DBL_MAX, 0, "a number", &p->dgc_tolerance))
        return 0;
    if (!get_keyword(j, CFG_QSGD_CODING, codings, "a QSGD coding", "fixed or elias", &coding)) return 0;
    if (!get_bool(j, CFG_RANDK_UNBIASED, &randk_unbiased)) return 0;
    if (!get_bool(j, CFG_CRC, &crc)) return 0;
    if (!get_lossless(j, &p->zstd_level)) return 0;
    p->flags = (coding ? GC_PF_QSGD_ELIAS : 0u) | (randk_unbiased ? GC_PF_RANDK_UNBIASED : 0u) |
               (crc ? GC_PF_CRC : 0u);
    if (!get_ef(j, c)) return 0;
    if (!get_number(j, CFG_EF_MOMENTUM, 0, 0, 1, 1, "a number in [0, 1)", &c->ef_momentum)) return 0;
    if (!get_size(j, CFG_EF_MAX_BYTES, UINT64_MAX, &c->ef_max_bytes)) return 0;
    if (!get_size(j, CFG_MIN_BYTES, UINT64_MAX, &c->min_bytes)) return 0;
    if (!get_keyword(j, CFG_ALGO, algos, "an algorithm", "auto, allgather, rsag or native", &algo))
        return 0;
    c->algo = (gcmpi_algo)algo;
    if (!get_seed(j, &c->seed)) return 0;
    if (!get_comm(j, c)) return 0;
    if (!get_stats(j, c)) return 0;
    if (!get_bool(j, CFG_VERIFY, &c->verify)) return 0;
    if (!get_verbose(j, &c->verbose)) return 0;
    if (!get_adapt(j, &c->adapt)) return 0;
    memcpy(c->source, j->src->path, sizeof c->source);
    return 1;
}

int gcmpi_ef_auto(const gc_codec *codec, const gc_params *p)
{
    const char *name = gc_codec_name(codec);
    if (strcmp(name, "qsgd") == 0 || strcmp(name, "terngrad") == 0) return 0;
    if (strcmp(name, "randk") == 0 && (p->flags & GC_PF_RANDK_UNBIASED)) return 0;
    return 1;
}

/* ---- codec parameters: the codec's own message, in the user's terms ------------- */

int cfg_param_var(const char *msg, const char **value, size_t *value_len, const char **rest)
{
    static const struct { const char *param; cfg_var var; } map[] = {
        {"ratio", CFG_RATIO},       {"bits", CFG_BITS},
        {"bucket", CFG_BUCKET},     {"rank", CFG_RANK},
        {"eg_n", CFG_EG_N},         {"eg_k", CFG_EG_K},
        {"dgc_sample", CFG_DGC_SAMPLE}, {"dgc_tolerance", CFG_DGC_TOLERANCE},
        {"sample", CFG_DGC_SAMPLE}, {"tolerance", CFG_DGC_TOLERANCE},
        {"zstd_level", CFG_LOSSLESS},
    };
    const char *eq = strchr(msg, '=');
    if (!eq) return -1;
    size_t name_len = (size_t)(eq - msg);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strlen(map[i].param) != name_len || memcmp(map[i].param, msg, name_len) != 0) continue;
        *value = eq + 1;
        *value_len = strcspn(eq + 1, " \t");
        *rest = *value + *value_len;
        return (int)map[i].var;
    }
    return -1;
}

static int judge_codec_params(const judge *j, const gcmpi_config *c)
{
    char msg[512];
    if (!gc_is_error(gc_params_check(c->codec, &c->params, msg, sizeof msg))) return 1;
    const char *value, *rest;
    size_t value_len;
    int v = cfg_param_var(msg, &value, &value_len, &rest);
    if (v < 0) return bad(j, CFG_CODEC, "does not accept its parameters: %s", msg);
    while (*rest == ' ') rest++;
    if (raw(j, (cfg_var)v)) return bad(j, (cfg_var)v, "%s", rest);
    /* A default the codec refuses: show the value the codec saw. */
    return cfg_error(j->res, "libgcmpi: %s=%.*s (default)%s%s with GCMPI_CODEC=%s",
                     gcmpi_config_names[v], (int)value_len, value, *rest ? " " : "", rest,
                     gc_codec_name(c->codec));
}

/* ---- combinations ------------------------------------------------------------------ */

int gcmpi_codec_has_native_path(const gc_codec *c)
{
    static const char *const native[] = {"none", "randk", "int8", "powersgd", NULL};
    if (!c) return 0;
    for (int i = 0; native[i]; i++)
        if (strcmp(gc_codec_name(c), native[i]) == 0) return 1;
    return 0;
}

static int is_sparse(const gc_codec *c) { return (gc_codec_flags(c) & GC_SPARSE) != 0; }

static int judge_combinations(const judge *j, const gcmpi_config *c)
{
    char names[512];
    if (c->algo == GCMPI_ALGO_NATIVE && !gcmpi_codec_has_native_path(c->codec)) {
        codec_list(names, sizeof names, gcmpi_codec_has_native_path);
        return bad(j, CFG_ALGO, "does not work with GCMPI_CODEC=%s; native works with: %s",
                   gc_codec_name(c->codec), names);
    }
    /* On the native path MPI sums the values itself: there is no payload to
     * checksum or compress, so these settings would be silently ignored. */
    if (c->algo == GCMPI_ALGO_NATIVE && c->params.zstd_level > 0)
        return bad(j, CFG_LOSSLESS, "does not work with GCMPI_ALGO=native (MPI sums the values "
                                    "itself, there is no payload to compress); expected off");
    if (c->algo == GCMPI_ALGO_NATIVE && (c->params.flags & GC_PF_CRC))
        return bad(j, CFG_CRC, "does not work with GCMPI_ALGO=native (MPI sums the values itself, "
                               "there is no payload to check); expected 0");
    if (c->ef_momentum > 0 && !is_sparse(c->codec)) {
        codec_list(names, sizeof names, is_sparse);
        return bad(j, CFG_EF_MOMENTUM, "does not work with GCMPI_CODEC=%s; momentum correction "
                                       "works with the sparse codecs: %s",
                   gc_codec_name(c->codec), names);
    }
    if (c->ef_momentum > 0 && !c->ef)
        return bad(j, CFG_EF_MOMENTUM, "needs error feedback, but GCMPI_EF=0; expected "
                                       "GCMPI_EF_MOMENTUM=0 or GCMPI_EF=1");
    if (c->ef && c->ef_max_bytes == 0)
        return bad(j, CFG_EF_MAX_BYTES, "is out of range; expected at least 1 while GCMPI_EF=1 "
                                        "(GCMPI_EF=0 turns error feedback off)");
    return 1;
}

/* ---- entry points ---------------------------------------------------------------------- */

void gcmpi_config_defaults(gcmpi_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->disable = 0;
    /* Uncompressed until the user asks: a preload that is not configured
     * must not change the numbers of a job. */
    cfg->codec = gc_codec_by_name("none");
    gc_params_default(&cfg->params);
    cfg->ef = 1; /* auto, resolved for the default codec none */
    cfg->ef_auto = 1;
    cfg->ef_momentum = 0.0;
    cfg->ef_max_bytes = (uint64_t)1 << 30;
    /* Below 4 KiB an allreduce is latency-bound: compression only adds
     * encode time and a second exchange, and framework control traffic
     * (Horovod's coordination) stays untouched. */
    cfg->min_bytes = 4096;
    cfg->algo = GCMPI_ALGO_AUTO;
    cfg->seed = 42;
    cfg->comm = GCMPI_COMM_WORLD_ONLY;
    cfg->verbose = 0;
    cfg->adapt = GCMPI_ADAPT_NONE;
}

void gcmpi_config_load(gcmpi_config *cfg, gcmpi_config_result *res, char *const *envp)
{
    memset(res, 0, sizeof *res);
    res->ok = 1;
    gcmpi_config c;
    gcmpi_config_defaults(&c);
    cfg_sources src;
    int ok = cfg_sources_read(&src, res, envp);
    if (ok) {
        judge j = {&src, res};
        ok = judge_values(&j, &c);
        if (ok && c.ef < 0) c.ef = gcmpi_ef_auto(c.codec, &c.params);
        ok = ok && judge_codec_params(&j, &c) && judge_combinations(&j, &c);
    }
    cfg_sources_free(&src);
    if (ok) *cfg = c;
    else gcmpi_config_defaults(cfg);
    res->ok = ok;
}
