/* config.c — judge every GCMPI_* value, then the combinations, and build the
 * one immutable configuration. Every rejection names the variable, the value
 * as given and what is allowed. */
#include "config_impl.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#define BOOL_EXPECT "0, 1, true, false, yes, no, on or off"
#define SIZE_EXPECT "an integer with optional K, M or G suffix"
#define COMM_EXPECT "world, all or up to 16 comma-separated communicator names, and up to 16 !NAME exclusions"
#define COUNTS_EXPECT "none or up to 16 comma-separated element counts in [0, 2^63 - 1]"
#define MAX_BYTES_EXPECT "off or " SIZE_EXPECT
#define STATS_EXPECT "off, stderr, a path ending in .json, or stderr and a .json path separated by a comma"
#define LOSSLESS_EXPECT "off, zstd or zstd:LEVEL with LEVEL in [1, 19]"
#define RATIO_EXPECT "a number in (0, 1]"
#define CALLS_EXPECT "an integer in [1, 2^63 - 1]"
#define WIDTHS_EXPECT "1 to 8 comma-separated integers in [1, 8], strictly ascending"

_Static_assert(GCMPI_MAX_COMM_NAMES == 16, "COMM_EXPECT names the limit");
_Static_assert(GCMPI_MAX_EXACT_COUNTS == 16, "COUNTS_EXPECT names the limit");
_Static_assert(GC_VAR_MAX_WIDTHS == 8, "WIDTHS_EXPECT names the limit");

/* powersgd's largest rank (its own check, gc_check_rank, says the same). */
#define POWERSGD_MAX_RANK 1024

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

/* A count in [1, hi] (calls, for the adaptive layer). */
static int get_count64(const judge *j, cfg_var v, long long hi, const char *expect, uint64_t *out)
{
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected %s", expect);
    long long x;
    cfg_status st = cfg_parse_int(s, 1, hi, &x);
    if (st == CFG_SYNTAX) return bad(j, v, "is not an integer; expected %s", expect);
    if (st == CFG_RANGE) return bad(j, v, "is out of range; expected %s", expect);
    *out = (uint64_t)x;
    return 1;
}

/* A number of calls >= 0 (GCMPI_WARMUP: 0 turns it off). */
static int get_calls0(const judge *j, cfg_var v, uint64_t *out)
{
    static const char expect[] = "an integer >= 0";
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected %s", expect);
    long long x;
    cfg_status st = cfg_parse_int(s, 0, LLONG_MAX, &x);
    if (st == CFG_SYNTAX) return bad(j, v, "is not an integer; expected %s", expect);
    if (st == CFG_RANGE) return bad(j, v, "is out of range; expected %s", expect);
    *out = (uint64_t)x;
    return 1;
}

/* GCMPI_NODE_SIZE: auto (0: MPI says which ranks share memory) or a
 * positive number of ranks per node. */
static int get_node_size(const judge *j, int *out)
{
    const char *s = raw(j, CFG_NODE_SIZE);
    if (!s || strcmp(s, "auto") == 0) return 1;
    uint64_t q = 0;
    if (!get_count64(j, CFG_NODE_SIZE, INT_MAX, "auto or an integer in [1, 2147483647]", &q))
        return 0;
    *out = (int)q;
    return 1;
}

/* GCMPI_RATIO: a number in (0, 1], or auto (GCMPI_RATIO_BUDGET decides). */
static int get_ratio(const judge *j, gcmpi_config *c)
{
    const char *s = raw(j, CFG_RATIO);
    if (!s) return 1;
    if (cfg_ieq(s, "auto")) {
        c->adapt.ratio_auto.on = 1;
        return 1;
    }
    if (!*s) return bad(j, CFG_RATIO, "is empty; expected " RATIO_EXPECT " or auto");
    double x;
    cfg_status st = cfg_parse_double(s, &x);
    if (st == CFG_SYNTAX) return bad(j, CFG_RATIO, "is not a number; expected " RATIO_EXPECT " or auto");
    /* A number was meant: the range of numbers is what helps. */
    if (st == CFG_RANGE || !(x > 0.0 && x <= 1.0))
        return bad(j, CFG_RATIO, "is out of range; expected " RATIO_EXPECT);
    c->params.ratio = x;
    return 1;
}

/* What a GCMPI_EDGC_MIN/MAX or GCMPI_VAR_MIN/MAX bound may be. */
typedef enum bound_kind {
    BOUND_POSITIVE, /* any number > 0: the method that reads it is not selected */
    BOUND_RATIO,    /* (0, 1] */
    BOUND_RANK,     /* an integer in [1, POWERSGD_MAX_RANK] */
} bound_kind;

/* auto (stored as 0) or a bound of that kind; codec, when not NULL, is
 * named in the message as the reason for the kind. */
static int get_bound(const judge *j, cfg_var v, bound_kind kind, const gc_codec *codec, double *out)
{
    const char *s = raw(j, v);
    if (!s) return 1;
    if (cfg_ieq(s, "auto")) {
        *out = 0.0;
        return 1;
    }
    char expect[128], with[64] = "";
    if (codec) snprintf(with, sizeof with, " with GCMPI_CODEC=%s", gc_codec_name(codec));
    if (kind == BOUND_RATIO) snprintf(expect, sizeof expect, "auto or a ratio in (0, 1]%s", with);
    else if (kind == BOUND_RANK)
        snprintf(expect, sizeof expect, "auto or a rank in [1, %d]%s", POWERSGD_MAX_RANK, with);
    else snprintf(expect, sizeof expect, "auto or a number > 0");
    double hi = kind == BOUND_RATIO ? 1.0 : kind == BOUND_RANK ? POWERSGD_MAX_RANK : DBL_MAX;
    double x = 0.0;
    if (!get_number(j, v, 0.0, 1, hi, 0, expect, &x)) return 0;
    if (kind == BOUND_RANK && (x < 1.0 || x != (double)(long long)x))
        return bad(j, v, "is %s; expected %s", x < 1.0 ? "out of range" : "not an integer", expect);
    *out = x;
    return 1;
}

/* min <= max unless either is auto (0); the message blames the one set. */
static int check_order(const judge *j, cfg_var vmin, double min, cfg_var vmax, double max)
{
    if (min <= 0.0 || max <= 0.0 || min <= max) return 1;
    int blame_min = raw(j, vmin) != NULL;
    cfg_var other = blame_min ? vmax : vmin;
    char shown[CFG_SHOW_MAX + 16];
    if (raw(j, other)) {
        snprintf(shown, sizeof shown, CFG_SHOW_FMT, CFG_SHOW(raw(j, other)));
    } else {
        char text[64];
        cfg_format_double(blame_min ? max : min, text, sizeof text);
        snprintf(shown, sizeof shown, "%s (default)", text);
    }
    return bad(j, blame_min ? vmin : vmax, "is %s %s=%s; expected %s <= %s",
               blame_min ? "above" : "below", gcmpi_config_names[other], shown,
               gcmpi_config_names[vmin], gcmpi_config_names[vmax]);
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

/* "a, b, c" of the registered codecs that keep(c, ctx) accepts (all when
 * keep is NULL). */
static void codec_list(char *buf, size_t len, int (*keep)(const gc_codec *, const void *),
                       const void *ctx)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < gc_codec_count(); i++) {
        const gc_codec *c = gc_codec_at(i);
        if (keep && !keep(c, ctx)) continue;
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
    codec_list(names, sizeof names, NULL, NULL);
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

/* One name of GCMPI_COMM into names[*n]; what says "name" or "exclusion". */
static int comm_name(const judge *j, const char *item, size_t len, char (*names)[GCMPI_COMM_NAME_LEN],
                     int *n, const char *what)
{
    if (len == 0) return bad(j, CFG_COMM, "has an empty %s; expected " COMM_EXPECT, what);
    if (len >= GCMPI_COMM_NAME_LEN)
        return bad(j, CFG_COMM, "has a%s name longer than %d characters; expected " COMM_EXPECT,
                   strcmp(what, "name") == 0 ? "" : "n excluded", GCMPI_COMM_NAME_LEN - 1);
    if (*n == GCMPI_MAX_COMM_NAMES)
        return bad(j, CFG_COMM, "lists more than %d %ss; expected " COMM_EXPECT, GCMPI_MAX_COMM_NAMES,
                   what);
    memcpy(names[*n], item, len);
    names[*n][len] = '\0';
    (*n)++;
    return 1;
}

typedef struct comm_ctx {
    const judge *j;
    gcmpi_config *c;
    int keyword; /* world or all seen */
} comm_ctx;

/* world, all, a name, or !NAME: a communicator never compressed. world or
 * all is the base set; names are the base set when neither is given. */
static int comm_item(void *ctx, const char *item, size_t len)
{
    comm_ctx *k = ctx;
    gcmpi_config *c = k->c;
    if (len > 0 && item[0] == '!')
        return comm_name(k->j, item + 1, len - 1, c->comm_excluded, &c->n_comm_excluded,
                         "exclusion");
    int world = is_word(item, len, "world"), all = is_word(item, len, "all");
    if ((world || all) && (k->keyword || c->n_comm_names > 0))
        return bad(k->j, CFG_COMM, "mixes world or all with names; expected " COMM_EXPECT);
    if (world || all) {
        k->keyword = 1;
        c->comm = world ? GCMPI_COMM_WORLD_ONLY : GCMPI_COMM_ALL;
        return 1;
    }
    if (len > 0 && k->keyword)
        return bad(k->j, CFG_COMM, "mixes world or all with names; expected " COMM_EXPECT);
    c->comm = GCMPI_COMM_NAMES;
    return comm_name(k->j, item, len, c->comm_names, &c->n_comm_names, "name");
}

/* A list of only exclusions keeps the default base set, world. */
static int get_comm(const judge *j, gcmpi_config *c)
{
    const char *s = raw(j, CFG_COMM);
    if (!s) return 1;
    if (!*s) return bad(j, CFG_COMM, "is empty; expected " COMM_EXPECT);
    c->comm = GCMPI_COMM_WORLD_ONLY;
    c->n_comm_names = c->n_comm_excluded = 0;
    comm_ctx k = {j, c, 0};
    return each_item(s, comm_item, &k);
}

/* ---- calls kept exact ------------------------------------------------------------ */

static int count_item(void *ctx, const char *item, size_t len)
{
    item_ctx *k = ctx;
    gcmpi_config *c = k->c;
    char text[32];
    if (len == 0) return bad(k->j, CFG_EXACT_COUNTS, "has an empty entry; expected " COUNTS_EXPECT);
    if (c->n_exact_counts == GCMPI_MAX_EXACT_COUNTS)
        return bad(k->j, CFG_EXACT_COUNTS, "lists more than %d counts; expected " COUNTS_EXPECT,
                   GCMPI_MAX_EXACT_COUNTS);
    if (len >= sizeof text)
        return bad(k->j, CFG_EXACT_COUNTS, "has an entry longer than %zu characters; expected "
                   COUNTS_EXPECT, sizeof text - 1);
    memcpy(text, item, len);
    text[len] = '\0';
    long long x;
    cfg_status st = cfg_parse_int(text, 0, LLONG_MAX, &x);
    if (st == CFG_SYNTAX)
        return bad(k->j, CFG_EXACT_COUNTS, "has %s, which is not an integer; expected " COUNTS_EXPECT,
                   text);
    if (st == CFG_RANGE)
        return bad(k->j, CFG_EXACT_COUNTS, "has count %s out of range; expected " COUNTS_EXPECT, text);
    c->exact_counts[c->n_exact_counts++] = (uint64_t)x;
    return 1;
}

/* GCMPI_EXACT_COUNTS: none, or element counts (metric vectors, loss
 * scalars, ...) that are never compressed. */
static int get_exact_counts(const judge *j, gcmpi_config *c)
{
    const char *s = raw(j, CFG_EXACT_COUNTS);
    if (!s) return 1;
    if (!*s) return bad(j, CFG_EXACT_COUNTS, "is empty; expected " COUNTS_EXPECT);
    c->n_exact_counts = 0;
    if (cfg_ieq(s, "none")) return 1;
    item_ctx k = {j, c};
    return each_item(s, count_item, &k);
}

/* A size in [lo, hi], or "off" (stored as off_value): expect says what
 * is allowed. */
static int get_size_or_off(const judge *j, cfg_var v, const char *expect, uint64_t off_value,
                           uint64_t lo, uint64_t hi, uint64_t *out)
{
    const char *s = raw(j, v);
    if (!s) return 1;
    if (!*s) return bad(j, v, "is empty; expected %s", expect);
    if (cfg_ieq(s, "off")) {
        *out = off_value;
        return 1;
    }
    uint64_t x;
    cfg_status st = cfg_parse_size(s, &x);
    if (st == CFG_SYNTAX) return bad(j, v, "is not a size; expected %s", expect);
    if (st == CFG_RANGE || x > hi) return bad(j, v, "is out of range; expected at most %" PRIu64, hi);
    if (x < lo) return bad(j, v, "is out of range; expected %s", expect);
    *out = x;
    return 1;
}

/* GCMPI_MAX_BYTES: off (no bound, stored as UINT64_MAX) or a size. */
static int get_max_bytes(const judge *j, gcmpi_config *c)
{
    return get_size_or_off(j, CFG_MAX_BYTES, MAX_BYTES_EXPECT, UINT64_MAX, 0, UINT64_MAX - 1,
                           &c->max_bytes);
}

/* GCMPI_HIER_SEGMENT: off (0) or a size of at least one float. */
static int get_hier_segment(const judge *j, gcmpi_config *c)
{
    return get_size_or_off(j, CFG_HIER_SEGMENT, "off, or a size >= 4 (bytes)", 0, sizeof(float),
                           UINT64_MAX, &c->hier_segment);
}

/* GCMPI_ALLGATHER_CODEC: auto (resolved once GCMPI_CODEC is known) or a
 * codec name. */
static int get_allgather_codec(const judge *j, gcmpi_config *c)
{
    const char *s = raw(j, CFG_ALLGATHER_CODEC);
    c->allgather_codec_auto = !s || cfg_ieq(s, "auto");
    if (c->allgather_codec_auto) return 1;
    for (size_t i = 0; i < gc_codec_count(); i++) {
        if (cfg_ieq(s, gc_codec_name(gc_codec_at(i)))) {
            c->allgather_codec = gc_codec_at(i);
            return 1;
        }
    }
    char names[512];
    codec_list(names, sizeof names, NULL, NULL);
    return bad(j, CFG_ALLGATHER_CODEC, "is %s; expected auto or one of: %s",
               *s ? "not a codec" : "empty", names);
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

typedef struct widths_ctx {
    const judge *j;
    gc_var_params *var;
} widths_ctx;

/* One width of GCMPI_VAR_WIDTHS: a bit width topkq can use (1..8, as
 * gc_width_policy says), above the previous one. */
static int widths_item(void *ctx, const char *item, size_t len)
{
    widths_ctx *k = ctx;
    gc_var_params *var = k->var;
    const cfg_var v = CFG_VAR_WIDTHS;
    char text[32];
    if (len == 0) return bad(k->j, v, "has an empty entry; expected " WIDTHS_EXPECT);
    if (var->n_widths == GC_VAR_MAX_WIDTHS)
        return bad(k->j, v, "lists more than %d widths; expected " WIDTHS_EXPECT, GC_VAR_MAX_WIDTHS);
    if (len >= sizeof text)
        return bad(k->j, v, "has an entry longer than %zu characters; expected " WIDTHS_EXPECT,
                   sizeof text - 1);
    memcpy(text, item, len);
    text[len] = '\0';
    long long w;
    cfg_status st = cfg_parse_int(text, 1, 8, &w);
    if (st == CFG_SYNTAX) return bad(k->j, v, "has %s, which is not an integer; expected " WIDTHS_EXPECT, text);
    if (st == CFG_RANGE) return bad(k->j, v, "has width %s out of range; expected " WIDTHS_EXPECT, text);
    unsigned last = var->n_widths ? var->widths[var->n_widths - 1] : 0;
    if ((unsigned)w <= last)
        return bad(k->j, v, "is not strictly ascending (%s after %u); expected " WIDTHS_EXPECT, text, last);
    var->widths[var->n_widths++] = (unsigned)w;
    return 1;
}

static int get_widths(const judge *j, gc_var_params *var)
{
    const char *s = raw(j, CFG_VAR_WIDTHS);
    if (!s) return 1;
    if (!*s) return bad(j, CFG_VAR_WIDTHS, "is empty; expected " WIDTHS_EXPECT);
    gc_var_params parsed = *var;
    parsed.n_widths = 0;
    memset(parsed.widths, 0, sizeof parsed.widths);
    widths_ctx k = {j, &parsed};
    if (!each_item(s, widths_item, &k)) return 0;
    *var = parsed;
    return 1;
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

/* The bounds of GCMPI_EDGC_MIN/MAX are ratios or ranks depending on the
 * codec edgc adapts; unless edgc is selected they are not read, and a kept
 * config file may hold anything positive. */
static bound_kind edgc_bound_kind(const gcmpi_config *c)
{
    gc_adapt_config edgc = {.method = GC_ADAPT_EDGC};
    if (c->adapt.method != GC_ADAPT_EDGC || !gc_adapt_supports(&edgc, c->codec)) return BOUND_POSITIVE;
    return strcmp(gc_codec_name(c->codec), "powersgd") == 0 ? BOUND_RANK : BOUND_RATIO;
}

/* GCMPI_ADAPT and the parameters of every method, whichever is selected. */
static int judge_adapt_values(const judge *j, gcmpi_config *c)
{
    gc_adapt_config *a = &c->adapt;
    int method = GC_ADAPT_NONE, form = 0;
    if (!get_keyword(j, CFG_ADAPT, cfg_adapt_words, "an adaptive method", "none, gct, edgc or variance",
                     &method))
        return 0;
    a->method = (gc_adapt_method)method;

    if (!get_number(j, CFG_GCT_LAMBDA, 0, 0, DBL_MAX, 0, "a number >= 0", &a->gct.lambda)) return 0;
    if (!get_number(j, CFG_GCT_LR, 0, 1, DBL_MAX, 0, "a number > 0", &a->gct.lr)) return 0;
    if (!get_number(j, CFG_GCT_EPS, 0, 1, DBL_MAX, 0, "a number > 0", &a->gct.eps)) return 0;
    if (!get_number(j, CFG_GCT_DECAY, 0, 1, 1, 0, "a number in (0, 1]", &a->gct.decay)) return 0;
    if (!get_count64(j, CFG_GCT_DECAY_EVERY, LLONG_MAX, CALLS_EXPECT, &a->gct.decay_every)) return 0;
    if (!get_keyword(j, CFG_GCT_FORM, cfg_gct_forms, "a GCT form", "eq9 or alg2", &form)) return 0;
    a->gct.alg2 = form;

    if (!get_number(j, CFG_EDGC_ALPHA, 0, 1, 1, 0, "a number in (0, 1]", &a->edgc.alpha)) return 0;
    if (!get_number(j, CFG_EDGC_BETA, 0, 1, 1, 0, "a number in (0, 1]", &a->edgc.beta)) return 0;
    if (!get_count64(j, CFG_EDGC_WINDOW, LLONG_MAX, CALLS_EXPECT, &a->edgc.window)) return 0;
    bound_kind kind = edgc_bound_kind(c);
    const gc_codec *why = kind == BOUND_POSITIVE ? NULL : c->codec;
    if (!get_bound(j, CFG_EDGC_MIN, kind, why, &a->edgc.min)) return 0;
    if (!get_bound(j, CFG_EDGC_MAX, kind, why, &a->edgc.max)) return 0;
    if (!check_order(j, CFG_EDGC_MIN, a->edgc.min, CFG_EDGC_MAX, a->edgc.max)) return 0;

    if (!get_number(j, CFG_VAR_ALPHA, 0, 0, 4, 0, "a number in [0, 4]", &a->var.alpha)) return 0;
    if (!get_count64(j, CFG_VAR_MEMORY, 100000, "an integer in [1, 100000]", &a->var.memory)) return 0;
    if (!get_bound(j, CFG_VAR_MIN, BOUND_RATIO, NULL, &a->var.min)) return 0;
    if (!get_bound(j, CFG_VAR_MAX, BOUND_RATIO, NULL, &a->var.max)) return 0;
    if (!check_order(j, CFG_VAR_MIN, a->var.min, CFG_VAR_MAX, a->var.max)) return 0;
    if (!get_widths(j, &a->var)) return 0;
    return get_number(j, CFG_VAR_TARGET, 0, 1, 1, 1, "a number in (0, 1)", &a->var.target);
}

#define ALGO_EXPECT "auto, rule, allgather, rsag, native, hier, sparse_rd or passthrough"

/* GCMPI_CUDA_AWARE and GCMPI_GPU_LIB (pmpi/device.c). The library path
 * is checked when a device buffer is first seen, not here: host-only jobs
 * never load it. */
static int get_device(const judge *j, gcmpi_config *c)
{
    static const char *const aware[] = {"auto", "0", "1", NULL};
    int a = 0;
    if (!get_keyword(j, CFG_CUDA_AWARE, aware, "a CUDA-awareness setting", "auto, 0 or 1", &a))
        return 0;
    c->cuda_aware = a - 1;
    const char *lib = raw(j, CFG_GPU_LIB);
    if (!lib) return 1;
    if (strlen(lib) >= sizeof c->gpu_lib)
        return bad(j, CFG_GPU_LIB, "is too long; expected a path of at most %zu characters",
                   sizeof c->gpu_lib - 1);
    memcpy(c->gpu_lib, lib, strlen(lib) + 1);
    return 1;
}

/* GCMPI_AUTO_CACHE: the directory is made and written when a calibration
 * is first saved, not here; a failure there only costs the next job a
 * calibration (pmpi/auto_cache.c). */
static int get_auto_cache(const judge *j, gcmpi_config *c)
{
    static const char *const off[] = {"off", "0", "no", "false", "none"};
    static const char *const on[] = {"auto", "on", "1", "yes", "true"};
    const char *v = raw(j, CFG_AUTO_CACHE);
    if (!v) return 1;
    if (!*v) return bad(j, CFG_AUTO_CACHE, "is empty; expected auto, off or a directory");
    /* The boolean words too: GCMPI_AUTO_CACHE=0 must not be a directory
     * named 0. */
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        if (strcasecmp(v, off[i]) == 0) v = "off";
        if (strcasecmp(v, on[i]) == 0) v = "auto";
    }
    if (strlen(v) >= sizeof c->auto_cache)
        return bad(j, CFG_AUTO_CACHE, "is too long; expected a directory of at most %zu characters",
                   sizeof c->auto_cache - 1);
    memcpy(c->auto_cache, v, strlen(v) + 1);
    return 1;
}

static int judge_values(const judge *j, gcmpi_config *c)
{
    static const char *const codings[] = {"fixed", "elias", NULL};
    /* In gcmpi_algo's order: the index is the stored value. */
    static const char *const algos[] = {"auto", "allgather", "rsag", "native", "hier",
                                        "passthrough", "rule", "sparse_rd", NULL};
    gc_params *p = &c->params;
    int randk_unbiased = 0, crc = 0, coding = 0, algo = GCMPI_ALGO_AUTO;
    uint64_t bucket = p->bucket;

    if (!get_bool(j, CFG_DISABLE, &c->disable)) return 0;
    if (!get_codec(j, &c->codec)) return 0;
    if (!get_ratio(j, c)) return 0;
    gc_auto_params *ra = &c->adapt.ratio_auto;
    if (!get_number(j, CFG_RATIO_BUDGET, 0, 1, DBL_MAX, 0, "a number > 0", &ra->budget_s)) return 0;
    if (!get_number(j, CFG_RATIO_MIN, 0, 1, 1, 0, RATIO_EXPECT, &ra->min)) return 0;
    if (!get_number(j, CFG_RATIO_MAX, 0, 1, 1, 0, RATIO_EXPECT, &ra->max)) return 0;
    if (!check_order(j, CFG_RATIO_MIN, ra->min, CFG_RATIO_MAX, ra->max)) return 0;
    /* auto starts at the largest ratio it may choose, the one closest to
     * the uncompressed gradient, and lowers it once it has measured the link. */
    if (ra->on) p->ratio = ra->max;
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
    if (!get_number(j, CFG_MOMENTUM, 0, 0, 1, 1, "a number in [0, 1)", &c->momentum)) return 0;
    if (!get_calls0(j, CFG_WARMUP, &c->warmup)) return 0;
    if (!get_size(j, CFG_EF_MAX_BYTES, UINT64_MAX, &c->ef_max_bytes)) return 0;
    if (!get_size(j, CFG_MIN_BYTES, UINT64_MAX, &c->min_bytes)) return 0;
    if (!get_max_bytes(j, c)) return 0;
    if (!get_keyword(j, CFG_ALGO, algos, "an algorithm", ALGO_EXPECT, &algo))
        return 0;
    c->algo = (gcmpi_algo)algo;
    if (!get_node_size(j, &c->node_size)) return 0;
    if (!get_bool(j, CFG_NODE_SHM, &c->node_shm)) return 0;
    if (!get_hier_segment(j, c)) return 0;
    if (!get_seed(j, &c->seed)) return 0;
    if (!get_comm(j, c)) return 0;
    if (!get_allgather_codec(j, c)) return 0;
    if (!get_bool(j, CFG_ALLGATHER_EF, &c->allgather_ef)) return 0;
    if (!get_exact_counts(j, c)) return 0;
    if (!get_bool(j, CFG_IN_PLACE_ONLY, &c->in_place_only)) return 0;
    if (!get_stats(j, c)) return 0;
    if (!get_bool(j, CFG_VERIFY, &c->verify)) return 0;
    if (!get_verbose(j, &c->verbose)) return 0;
    if (!judge_adapt_values(j, c)) return 0;
    if (!get_device(j, c)) return 0;
    if (!get_auto_cache(j, c)) return 0;
    memcpy(c->source, j->src->path, sizeof c->source);
    return 1;
}

/* Every other lossy codec is contractive, topkq included: it drops what
 * topk drops and quantises what it keeps, a residual smaller than the input. */
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

/* The codec named by codec_var (GCMPI_CODEC or GCMPI_ALLGATHER_CODEC) must
 * accept the shared parameters. */
static int judge_params_of(const judge *j, const gc_codec *codec, cfg_var codec_var,
                           const gc_params *params)
{
    char msg[512];
    if (!gc_is_error(gc_params_check(codec, params, msg, sizeof msg))) return 1;
    const char *value, *rest;
    size_t value_len;
    int v = cfg_param_var(msg, &value, &value_len, &rest);
    if (v < 0) return bad(j, codec_var, "does not accept its parameters: %s", msg);
    while (*rest == ' ') rest++;
    if (raw(j, (cfg_var)v)) {
        if (codec_var == CFG_CODEC) return bad(j, (cfg_var)v, "%s", rest);
        return bad(j, (cfg_var)v, "%s with %s=%s", rest, gcmpi_config_names[codec_var],
                   gc_codec_name(codec));
    }
    /* A default the codec refuses: show the value the codec saw. */
    return cfg_error(j->res, "libgcmpi: %s=%.*s (default)%s%s with %s=%s",
                     gcmpi_config_names[v], (int)value_len, value, *rest ? " " : "", rest,
                     gcmpi_config_names[codec_var], gc_codec_name(codec));
}

static int judge_codec_params(const judge *j, const gcmpi_config *c)
{
    if (!judge_params_of(j, c->codec, CFG_CODEC, &c->params)) return 0;
    return c->allgather_codec == c->codec ||
           judge_params_of(j, c->allgather_codec, CFG_ALLGATHER_CODEC, &c->params);
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

static int keep_native(const gc_codec *c, const void *ctx)
{
    (void)ctx;
    return gcmpi_codec_has_native_path(c);
}

static int keep_sparse(const gc_codec *c, const void *ctx)
{
    (void)ctx;
    return (gc_codec_flags(c) & GC_SPARSE) != 0;
}

static int keep_adapt(const gc_codec *c, const void *adapt_config)
{
    return gc_adapt_supports(adapt_config, c);
}

/* The adaptive layer: each part must apply to the codec, and only one part
 * may choose the ratio. Parameters of a method that is not selected are not
 * judged here: users keep them in config files while switching methods. */
static int judge_adapt_combinations(const judge *j, const gcmpi_config *c)
{
    char names[512];
    const char *codec = gc_codec_name(c->codec);
    const char *method = cfg_adapt_words[c->adapt.method];
    gc_adapt_config only_method = {.method = c->adapt.method};
    gc_adapt_config only_auto = {.method = GC_ADAPT_NONE, .ratio_auto = {.on = 1}};
    if (!gc_adapt_supports(&only_method, c->codec)) {
        codec_list(names, sizeof names, keep_adapt, &only_method);
        return bad(j, CFG_ADAPT, "does not work with GCMPI_CODEC=%s; %s works with: %s", codec, method,
                   names);
    }
    if (!c->adapt.ratio_auto.on) return 1;
    if (c->adapt.method == GC_ADAPT_EDGC || c->adapt.method == GC_ADAPT_VARIANCE)
        return bad(j, CFG_RATIO, "does not work with GCMPI_ADAPT=%s, which chooses the ratio itself; "
                                 "expected " RATIO_EXPECT " (%s starts from it) or GCMPI_ADAPT=none",
                   method, method);
    if (!gc_adapt_supports(&only_auto, c->codec)) {
        codec_list(names, sizeof names, keep_adapt, &only_auto);
        return bad(j, CFG_RATIO, "does not work with GCMPI_CODEC=%s; auto works with: %s", codec, names);
    }
    return 1;
}

static int judge_combinations(const judge *j, const gcmpi_config *c)
{
    char names[512];
    if (c->algo == GCMPI_ALGO_NATIVE && !gcmpi_codec_has_native_path(c->codec)) {
        codec_list(names, sizeof names, keep_native, NULL);
        return bad(j, CFG_ALGO, "does not work with GCMPI_CODEC=%s; native works with: %s",
                   gc_codec_name(c->codec), names);
    }
    if (c->algo == GCMPI_ALGO_SPARSE_RD && !(gc_codec_flags(c->codec) & GC_SPARSE)) {
        codec_list(names, sizeof names, keep_sparse, NULL);
        return bad(j, CFG_ALGO, "does not work with GCMPI_CODEC=%s; sparse_rd works with: %s",
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
    if (c->ef_momentum > 0 && !keep_sparse(c->codec, NULL)) {
        codec_list(names, sizeof names, keep_sparse, NULL);
        return bad(j, CFG_EF_MOMENTUM, "does not work with GCMPI_CODEC=%s; momentum correction "
                                       "works with the sparse codecs: %s",
                   gc_codec_name(c->codec), names);
    }
    if (c->ef_momentum > 0 && !c->ef)
        return bad(j, CFG_EF_MOMENTUM, "needs error feedback, but GCMPI_EF=0; expected "
                                       "GCMPI_EF_MOMENTUM=0 or GCMPI_EF=1");
    /* Both would apply the momentum twice: GCMPI_EF_MOMENTUM is for jobs
     * whose own momentum is switched off, GCMPI_MOMENTUM for unchanged ones. */
    if (c->momentum > 0 && c->ef_momentum > 0)
        return bad(j, CFG_MOMENTUM, "cannot be used with GCMPI_EF_MOMENTUM=%g; set GCMPI_MOMENTUM "
                                    "to the momentum of an unchanged optimizer, or "
                                    "GCMPI_EF_MOMENTUM when the job's own momentum is 0, not both",
                   c->ef_momentum);
    if (c->ef && c->ef_max_bytes == 0)
        return bad(j, CFG_EF_MAX_BYTES, "is out of range; expected at least 1 while GCMPI_EF=1 "
                                        "(GCMPI_EF=0 turns error feedback off)");
    if (c->allgather_ef && c->ef_max_bytes == 0)
        return bad(j, CFG_EF_MAX_BYTES, "is out of range; expected at least 1 while "
                                        "GCMPI_ALLGATHER_EF=1");
    if (c->max_bytes < c->min_bytes) {
        char min[32];
        snprintf(min, sizeof min, "%" PRIu64 "%s", c->min_bytes,
                 raw(j, CFG_MIN_BYTES) ? "" : " (default)");
        return bad(j, CFG_MAX_BYTES, "is below GCMPI_MIN_BYTES=%s; expected off or a size >= "
                                     "GCMPI_MIN_BYTES", min);
    }
    return judge_adapt_combinations(j, c);
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
    cfg->momentum = 0.0;
    /* About 4 epochs of the small trainer under bench/train (234 calls an
     * epoch at 4 ranks), as DGC warms up over 4 epochs; a few hundred steps
     * of a large job, a small fraction of its first epoch. */
    cfg->warmup = 1000;
    cfg->ef_max_bytes = (uint64_t)1 << 30;
    /* Below 4 KiB an allreduce is latency-bound: compression only adds
     * encode time and a second exchange, and framework control traffic
     * (Horovod's coordination) stays untouched. */
    cfg->min_bytes = 4096;
    cfg->max_bytes = UINT64_MAX;
    cfg->allgather_codec = cfg->codec; /* auto with codec none */
    cfg->allgather_codec_auto = 1;
    cfg->algo = GCMPI_ALGO_AUTO;
    cfg->node_shm = 1;
    /* 256 Ki floats: up to 8 segments from a 1 MiB chunk on; 4 and 8
     * segments of hier's 64 MiB int8 call on the emulated 2 x 4 cluster
     * took alike, 229-262 ms against 291-384 ms at once. */
    cfg->hier_segment = (uint64_t)1 << 20;
    cfg->seed = 42;
    cfg->comm = GCMPI_COMM_WORLD_ONLY;
    cfg->verbose = 0;
    cfg->cuda_aware = -1;
    memcpy(cfg->auto_cache, "auto", sizeof "auto");
    gc_adapt_config_default(&cfg->adapt);
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
        if (ok && c.allgather_codec_auto) c.allgather_codec = gcmpi_allgather_codec_auto(c.codec);
        ok = ok && judge_codec_params(&j, &c) && judge_combinations(&j, &c);
    }
    cfg_sources_free(&src);
    if (ok) *cfg = c;
    else gcmpi_config_defaults(cfg);
    res->ok = ok;
}

const char *gcmpi_algo_name(gcmpi_algo algo)
{
    static const char *const names[GCMPI_ALGO_COUNT] = {
        "auto", "allgather", "rsag", "native", "hier", "passthrough", "rule", "sparse_rd"};
    return (unsigned)algo < GCMPI_ALGO_COUNT ? names[algo] : "?";
}
