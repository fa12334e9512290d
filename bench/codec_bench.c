/* codec_bench.c — gcmpi-codec-bench: single-thread throughput, ratio and
 * error of each codec, measured against memcpy of the same buffer in the
 * same run (the machines are shared and noisy, so only ratios taken
 * side by side mean much).
 *
 *   gcmpi-codec-bench [--codec NAME|all] [--size BYTES] [--input SPEC]
 *                     [--ratio R] [--bits B] [--bucket N] [--rank R]
 *                     [--qsgd-coding fixed|elias]
 *                     [--zstd LEVEL] [--crc] [--ef] [--momentum M] [--reps N]
 *                     [--seed S]
 *                     [--scale STD] [--json] [--device cpu|cuda]
 *
 * Each rep runs memcpy, encode and decode_add of the whole buffer once, in
 * that order; a figure is the best (fastest) of the reps. The workspace is
 * reused across reps, so the figures are steady state. */
#include "gcmpi_codec.h"
#include "codec_bench_device.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define PROG "gcmpi-codec-bench"

/* ---- options ------------------------------------------------------------ */

enum input_kind { INPUT_GGD, INPUT_LAPLACE, INPUT_FILE };

typedef struct options {
    const char *codec;     /* a name or "all" */
    size_t bytes;          /* input size; for a file, an upper limit if given */
    bool bytes_given;
    enum input_kind input;
    double ggd_shape;      /* beta of the generalized Gaussian */
    const char *path;      /* file: input */
    double scale;          /* standard deviation of generated inputs */
    gc_params params;
    bool ef;
    double momentum;       /* > 0: gc_encode_momentum (implies ef) */
    unsigned reps;
    uint64_t seed;
    bool json;
    bool cuda;             /* --device cuda: codec_bench_device.c */
} options;

static void usage(FILE *out)
{
    fprintf(out,
        "usage: " PROG " [options]\n"
        "  --codec NAME|all   codec to measure (default all)\n"
        "  --size BYTES       input size, suffixes K M G (default 64M)\n"
        "  --input SPEC       ggd[:SHAPE] generalized Gaussian (default ggd:0.3),\n"
        "                     laplace, or file:PATH raw little-endian float32\n"
        "  --scale STD        standard deviation of generated input (default 1e-3)\n"
        "  --ratio R          kept fraction for topk, randk, dgc\n"
        "  --bits B           qsgd bits per element\n"
        "  --qsgd-coding C    qsgd levels: fixed (bit planes, default) or elias\n"
        "  --bucket N         elements per scale for bucketed codecs\n"
        "  --rank R           powersgd rank\n"
        "  --zstd LEVEL       lossless zstd stage after the codec (0 off)\n"
        "  --crc              write and check a CRC32C of every payload\n"
        "  --ef               encode with a residual buffer (error feedback; --device\n"
        "                     cuda measures with and without one in every run)\n"
        "  --momentum M       encode with DGC's momentum correction, gc_encode_momentum\n"
        "                     (sparse codecs; implies --ef; 0 < M < 1; cpu only)\n"
        "  --reps N           repetitions; figures are the best rep (default 5)\n"
        "  --seed S           input and codec seed (default 1)\n"
        "  --json             one JSON array, one object per codec\n"
        "  --device cpu|cuda  cuda: the CUDA codecs on device buffers, against a\n"
        "                     device-to-device copy (default cpu)\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(PROG ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static uint64_t parse_u64(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        die("%s=%s is not a non-negative integer", opt, s);
    return v;
}

static double parse_double(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) die("%s=%s is not a number", opt, s);
    return v;
}

/* "64M", "1048576", "2GiB": binary multiples; a positive multiple of 4. */
static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-') die("--size=%s is not a size (e.g. 64M, 1G, 4096)", s);
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case '\0': break;
    default: die("--size=%s has an unknown suffix; expected K, M or G", s);
    }
    if (shift && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)) end += strlen(end);
    if (*end) die("--size=%s has an unknown suffix; expected K, M or G", s);
    if (v == 0 || v > (SIZE_MAX >> shift) / 2) die("--size=%s is out of range", s);
    size_t bytes = (size_t)v << shift;
    if (bytes % sizeof(float)) die("--size=%s is not a whole number of float32 (4 bytes)", s);
    return bytes;
}

static void parse_input(options *o, const char *s)
{
    if (strncmp(s, "file:", 5) == 0) {
        o->input = INPUT_FILE;
        o->path = s + 5;
        if (!*o->path) die("--input=file: needs a path, e.g. file:grads.f32");
    } else if (strcmp(s, "laplace") == 0) {
        o->input = INPUT_LAPLACE;
    } else if (strcmp(s, "ggd") == 0) {
        o->input = INPUT_GGD;
    } else if (strncmp(s, "ggd:", 4) == 0) {
        o->input = INPUT_GGD;
        o->ggd_shape = parse_double("--input ggd:SHAPE", s + 4);
        if (!(o->ggd_shape > 0.05 && o->ggd_shape <= 10))
            die("--input=%s: shape is out of range; expected a number in (0.05, 10]", s);
    } else {
        die("--input=%s is unknown; expected ggd, ggd:SHAPE, laplace or file:PATH", s);
    }
}

static options parse_args(int argc, char **argv)
{
    options o = {.codec = "all", .bytes = (size_t)64 << 20, .input = INPUT_GGD,
                 .ggd_shape = 0.3, .scale = 1e-3, .reps = 5, .seed = 1};
    gc_params_default(&o.params);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { usage(stdout); exit(0); }
        if (strcmp(a, "--json") == 0) { o.json = true; continue; }
        if (strcmp(a, "--ef") == 0) { o.ef = true; continue; }
        if (strcmp(a, "--crc") == 0) { o.params.flags |= GC_PF_CRC; continue; }

        /* Options with a value: "--opt VALUE" or "--opt=VALUE". */
        char name[32];
        const char *val;
        const char *eq = strchr(a, '=');
        if (eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
            if (i + 1 >= argc) {
                fprintf(stderr, PROG ": %s needs a value (or is unknown)\n", a);
                usage(stderr);
                exit(2);
            }
            val = argv[++i];
        }
        if (strcmp(name, "--codec") == 0) o.codec = val;
        else if (strcmp(name, "--size") == 0) { o.bytes = parse_size(val); o.bytes_given = true; }
        else if (strcmp(name, "--input") == 0) parse_input(&o, val);
        else if (strcmp(name, "--scale") == 0) {
            o.scale = parse_double(name, val);
            if (!(o.scale > 0)) die("--scale=%s: expected a positive number", val);
        }
        else if (strcmp(name, "--ratio") == 0) o.params.ratio = parse_double(name, val);
        else if (strcmp(name, "--bits") == 0) o.params.bits = (unsigned)parse_u64(name, val);
        else if (strcmp(name, "--bucket") == 0) o.params.bucket = (size_t)parse_u64(name, val);
        else if (strcmp(name, "--rank") == 0) o.params.rank = (unsigned)parse_u64(name, val);
        else if (strcmp(name, "--qsgd-coding") == 0) {
            if (strcmp(val, "fixed") != 0 && strcmp(val, "elias") != 0)
                die("--qsgd-coding=%s is unknown; expected fixed or elias", val);
            if (strcmp(val, "elias") == 0) o.params.flags |= GC_PF_QSGD_ELIAS;
            else o.params.flags &= ~GC_PF_QSGD_ELIAS;
        }
        else if (strcmp(name, "--zstd") == 0) o.params.zstd_level = (int)parse_u64(name, val);
        else if (strcmp(name, "--reps") == 0) {
            uint64_t r = parse_u64(name, val);
            if (r < 1 || r > 100000)
                die("--reps=%s is out of range; expected an integer in [1, 100000]", val);
            o.reps = (unsigned)r;
        }
        else if (strcmp(name, "--seed") == 0) o.seed = parse_u64(name, val);
        else if (strcmp(name, "--momentum") == 0) {
            o.momentum = parse_double(name, val);
            if (!(o.momentum > 0 && o.momentum < 1))
                die("--momentum=%s is out of range; expected a number in (0, 1)", val);
            o.ef = true;
        }
        else if (strcmp(name, "--device") == 0) {
            if (strcmp(val, "cuda") != 0 && strcmp(val, "cpu") != 0)
                die("--device=%s is unknown; expected cpu or cuda", val);
            o.cuda = strcmp(val, "cuda") == 0;
        }
        else {
            fprintf(stderr, PROG ": unknown option %s\n", name);
            usage(stderr);
            exit(2);
        }
    }
    if (o.cuda && o.momentum > 0) die("--momentum is measured on the cpu only (--device cpu)");
    return o;
}

/* ---- input -------------------------------------------------------------- */

/* xoshiro256** seeded through splitmix64. */
typedef struct rng { uint64_t s[4]; } rng;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static rng rng_seed(uint64_t seed)
{
    rng r;
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        r.s[i] = z ^ (z >> 31);
    }
    return r;
}

static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in the open interval (0, 1). */
static double rng_unit(rng *r) { return ((double)(rng_next(r) >> 11) + 0.5) * 0x1p-53; }

/* Standard normal, Marsaglia's polar method. */
static double rng_normal(rng *r)
{
    for (;;) {
        double u = 2 * rng_unit(r) - 1, v = 2 * rng_unit(r) - 1, s = u * u + v * v;
        if (s > 0 && s < 1) return u * sqrt(-2 * log(s) / s);
    }
}

/* Gamma(a, 1), Marsaglia and Tsang (2000); a < 1 through Gamma(a + 1). */
static double rng_gamma(rng *r, double a)
{
    if (a < 1) return rng_gamma(r, a + 1) * pow(rng_unit(r), 1 / a);
    double d = a - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = rng_normal(r), v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = rng_unit(r), x2 = x * x;
        if (u < 1 - 0.0331 * x2 * x2 || log(u) < 0.5 * x2 + d * (1 - v + log(v))) return d * v;
    }
}

/* Generalized Gaussian of shape beta and standard deviation std:
 * |x| = alpha * Gamma(1/beta, 1)^(1/beta) with a random sign, where
 * Var = alpha^2 Gamma(3/beta) / Gamma(1/beta). Shape 0.3 has the heavy tails
 * and sharp peak of real gradients. */
static void fill_ggd(float *x, size_t n, double beta, double std, uint64_t seed)
{
    rng r = rng_seed(seed);
    double alpha = std / sqrt(exp(lgamma(3 / beta) - lgamma(1 / beta)));
    for (size_t i = 0; i < n; i++) {
        double m = alpha * pow(rng_gamma(&r, 1 / beta), 1 / beta);
        x[i] = (float)((rng_next(&r) >> 63) ? -m : m);
    }
}

static void fill_laplace(float *x, size_t n, double std, uint64_t seed)
{
    rng r = rng_seed(seed);
    double b = std / sqrt(2.0);
    for (size_t i = 0; i < n; i++) {
        double u = rng_unit(&r) - 0.5;
        x[i] = (float)(-b * (u < 0 ? -1 : 1) * log(1 - 2 * fabs(u)));
    }
}

/* A raw little-endian float32 file (e.g. gradients dumped by a trainer);
 * at most limit bytes when limit is not 0. */
static float *read_floats(const char *path, size_t limit, size_t *n_out)
{
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot read %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) die("cannot stat %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) die("%s is not a regular file", path);
    size_t bytes = (size_t)st.st_size;
    if (bytes % 4) die("%s is %zu bytes, not a whole number of float32 (4 bytes)", path, bytes);
    if (limit && limit < bytes) bytes = limit;
    if (bytes == 0) die("%s is empty", path);
    float *x = malloc(bytes);
    if (!x) die("out of memory reading %zu bytes of %s", bytes, path);
    if (fread(x, 1, bytes, f) != bytes)
        die("cannot read %s: %s", path, ferror(f) ? strerror(errno) : "file shrank while reading");
    fclose(f);
    size_t n = bytes / 4;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        u = __builtin_bswap32(u);
        memcpy(&x[i], &u, 4);
    }
#endif
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) die("%s: element %zu is %g; gradients must be finite", path, i, x[i]);
    *n_out = n;
    return x;
}

/* ---- measuring ---------------------------------------------------------- */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct result {
    const gc_codec *codec;
    char error[160];       /* empty when the codec ran */
    size_t payload_bytes;
    double memcpy_s, encode_s, decode_s; /* best of reps */
    double rel_l2_error;
    gc_encode_report report;
} result;

static double rel_l2(const float *ref, const float *got, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static double min_d(double a, double b) { return a < b ? a : b; }

/* One encode as the options ask: with momentum correction (u and residual
 * kept across calls), or plain gc_encode. Either includes its own scan of
 * g for inf and NaN. */
static size_t encode_once(const gc_codec *c, const options *o, const float *g, float *residual,
                          float *u, size_t n, void *dst, size_t cap, gc_workspace *ws)
{
    if (o->momentum > 0)
        return gc_encode_momentum(c, g, u, residual, n, (float)o->momentum, &o->params, o->seed,
                                  dst, cap, ws);
    return gc_encode(c, g, residual, n, &o->params, o->seed, dst, cap, ws);
}

static result bench_codec(const gc_codec *c, const options *o, const float *g, size_t n,
                          float *acc)
{
    result res = {.codec = c, .memcpy_s = INFINITY, .encode_s = INFINITY, .decode_s = INFINITY};
    size_t cap = gc_bound(c, n, &o->params);
    if (gc_is_error(cap)) {
        snprintf(res.error, sizeof res.error, "bound: %s", gc_error_name(cap));
        return res;
    }
    uint8_t *dst = malloc(cap);
    float *residual = o->ef ? calloc(n, sizeof(float)) : NULL;
    float *u = o->momentum > 0 ? calloc(n, sizeof(float)) : NULL;
    gc_workspace *ws = gc_workspace_create();
    if (!dst || (o->ef && !residual) || (o->momentum > 0 && !u) || !ws)
        die("out of memory for %s (payload bound %zu bytes)", gc_codec_name(c), cap);

    /* Warm-up: grows the workspace and gives the error with a zero residual. */
    size_t len = encode_once(c, o, g, residual, u, n, dst, cap, ws);
    if (gc_is_error(len)) {
        snprintf(res.error, sizeof res.error, "encode: %s", gc_error_name(len));
        goto out;
    }
    res.report = *gc_workspace_report(ws);
    res.payload_bytes = len;
    memset(acc, 0, n * sizeof(float));
    size_t r = gc_decode_add(dst, len, acc, n, ws);
    if (gc_is_error(r)) {
        snprintf(res.error, sizeof res.error, "decode: %s", gc_error_name(r));
        goto out;
    }
    res.rel_l2_error = rel_l2(g, acc, n);

    for (unsigned rep = 0; rep < o->reps; rep++) {
        double t0 = now();
        memcpy(acc, g, n * sizeof(float));
        double t1 = now();
        len = encode_once(c, o, g, residual, u, n, dst, cap, ws);
        double t2 = now();
        if (gc_is_error(len)) {
            snprintf(res.error, sizeof res.error, "encode (rep %u): %s", rep + 1,
                     gc_error_name(len));
            goto out;
        }
        r = gc_decode_add(dst, len, acc, n, ws);
        double t3 = now();
        if (gc_is_error(r)) {
            snprintf(res.error, sizeof res.error, "decode (rep %u): %s", rep + 1,
                     gc_error_name(r));
            goto out;
        }
        res.memcpy_s = min_d(res.memcpy_s, t1 - t0);
        res.encode_s = min_d(res.encode_s, t2 - t1);
        res.decode_s = min_d(res.decode_s, t3 - t2);
    }
out:
    gc_workspace_free(ws);
    free(u);
    free(residual);
    free(dst);
    return res;
}

/* ---- output ------------------------------------------------------------- */

static double gbps(size_t bytes, double s)
{
    return s > 0 && isfinite(s) ? (double)bytes / s * 1e-9 : NAN;
}

static bool is_eg(const gc_codec *c) { return strcmp(gc_codec_name(c), "eg") == 0; }

static void json_num(const char *key, double v, bool last)
{
    if (isfinite(v)) printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
    else printf("\"%s\": null%s", key, last ? "" : ", ");
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned char)*s);
        else putchar(*s);
    }
    putchar('"');
}

static const char *input_name(const options *o)
{
    switch (o->input) {
    case INPUT_GGD: return "ggd";
    case INPUT_LAPLACE: return "laplace";
    case INPUT_FILE: return "file";
    }
    return "?";
}

static void print_json(const result *res, size_t count, const options *o, size_t n)
{
    size_t bytes = n * sizeof(float);
    printf("[\n");
    for (size_t i = 0; i < count; i++) {
        const result *r = &res[i];
        const gc_params *p = &o->params;
        printf("  {\"codec\": ");
        json_str(gc_codec_name(r->codec));
        printf(", \"params\": {\"ratio\": %.6g, \"bits\": %u, \"bucket\": %zu, \"rank\": %u, "
               "\"qsgd_coding\": \"%s\", \"zstd_level\": %d, \"crc\": %s, \"ef\": %s, "
               "\"momentum\": %.6g, \"seed\": %" PRIu64 "}, ",
               p->ratio, p->bits, p->bucket, p->rank,
               (p->flags & GC_PF_QSGD_ELIAS) ? "elias" : "fixed", p->zstd_level,
               (p->flags & GC_PF_CRC) ? "true" : "false", o->ef ? "true" : "false", o->momentum,
               o->seed);
        printf("\"input\": {\"kind\": \"%s\", ", input_name(o));
        if (o->input == INPUT_FILE) { printf("\"path\": "); json_str(o->path); printf(", "); }
        else if (o->input == INPUT_GGD)
            printf("\"shape\": %.6g, \"std\": %.6g, ", o->ggd_shape, o->scale);
        else printf("\"std\": %.6g, ", o->scale);
        printf("\"elements\": %zu, \"bytes\": %zu}, ", n, bytes);
        printf("\"reps\": %u, \"timing\": \"best\", ", o->reps);
        if (r->error[0]) {
            printf("\"error\": ");
            json_str(r->error);
            printf("}%s\n", i + 1 < count ? "," : "");
            continue;
        }
        double mc = gbps(bytes, r->memcpy_s), en = gbps(bytes, r->encode_s),
               de = gbps(bytes, r->decode_s);
        printf("\"error\": null, \"payload_bytes\": %zu, ", r->payload_bytes);
        json_num("ratio", (double)bytes / (double)r->payload_bytes, false);
        json_num("encode_gbps", en, false);
        json_num("decode_gbps", de, false);
        json_num("memcpy_gbps", mc, false);
        json_num("encode_vs_memcpy", en / mc, false);
        json_num("decode_vs_memcpy", de / mc, false);
        json_num("rel_l2_error", r->rel_l2_error, false);
        json_num("bits_per_element", 8.0 * (double)r->payload_bytes / (double)n, false);
        if (gc_codec_flags(r->codec) & GC_SPARSE) printf("\"kept\": %" PRIu64 ", ", r->report.kept);
        else printf("\"kept\": null, ");
        /* Exp-Golomb stream against fixed-length coding: eg only. */
        bool eg = is_eg(r->codec);
        json_num("code_bits_per_element", eg ? r->report.code_bits_per_element : NAN, false);
        json_num("fl_bits_per_element", eg ? r->report.fl_bits_per_element : NAN, true);
        printf("}%s\n", i + 1 < count ? "," : "");
    }
    printf("]\n");
}

static void print_table(const result *res, size_t count, const options *o, size_t n)
{
    size_t bytes = n * sizeof(float);
    const gc_params *p = &o->params;
    printf("input: ");
    if (o->input == INPUT_FILE) printf("file %s", o->path);
    else if (o->input == INPUT_GGD)
        printf("generalized Gaussian shape %g, std %g", o->ggd_shape, o->scale);
    else printf("Laplace, std %g", o->scale);
    printf(", %zu floats (%.1f MiB), seed %" PRIu64 "\n", n, (double)bytes / (1 << 20), o->seed);
    printf("params: ratio %g, bits %u, bucket %zu, rank %u, zstd %d%s%s%s", p->ratio, p->bits,
           p->bucket, p->rank, p->zstd_level, (p->flags & GC_PF_CRC) ? ", crc" : "",
           (p->flags & GC_PF_QSGD_ELIAS) ? ", qsgd elias" : "", o->ef ? ", error feedback" : "");
    if (o->momentum > 0) printf(", momentum correction %g", o->momentum);
    printf("\n");
    printf("timing: best of %u reps, single thread; GB/s of input bytes; xmem = / memcpy "
           "of the same buffer\n\n", o->reps);
    printf("%-9s %9s %8s %9s %6s %9s %6s %8s %11s %9s %9s\n", "codec", "ratio", "bits/el",
           "enc GB/s", "xmem", "dec GB/s", "xmem", "memcpy", "rel_l2_err", "eg code", "eg fixed");
    for (size_t i = 0; i < count; i++) {
        const result *r = &res[i];
        if (r->error[0]) {
            printf("%-9s error: %s\n", gc_codec_name(r->codec), r->error);
            continue;
        }
        double mc = gbps(bytes, r->memcpy_s), en = gbps(bytes, r->encode_s),
               de = gbps(bytes, r->decode_s);
        printf("%-9s %9.2f %8.3f %9.3f %6.3f %9.3f %6.3f %8.2f %11.3e", gc_codec_name(r->codec),
               (double)bytes / (double)r->payload_bytes, 8.0 * (double)r->payload_bytes / (double)n,
               en, en / mc, de, de / mc, mc, r->rel_l2_error);
        if (is_eg(r->codec))
            printf(" %9.3f %9.3f", r->report.code_bits_per_element, r->report.fl_bits_per_element);
        printf("\n");
    }
}

/* ---- main --------------------------------------------------------------- */

static void die_unknown_codec(const char *name)
{
    fprintf(stderr, PROG ": unknown codec '%s'; expected one of: all", name);
    for (size_t i = 0; i < gc_codec_count(); i++)
        fprintf(stderr, ", %s", gc_codec_name(gc_codec_at(i)));
    fputc('\n', stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    options o = parse_args(argc, argv);

    const gc_codec *chosen[256];
    size_t count = 0;
    if (strcmp(o.codec, "all") == 0) {
        for (size_t i = 0; i < gc_codec_count() && count < 256; i++)
            chosen[count++] = gc_codec_at(i);
    } else {
        const gc_codec *c = gc_codec_by_name(o.codec);
        if (!c) die_unknown_codec(o.codec);
        chosen[count++] = c;
    }
    for (size_t i = 0; i < count; i++) {
        char msg[256];
        if (gc_is_error(gc_params_check(chosen[i], &o.params, msg, sizeof msg)))
            die("codec %s: %s", gc_codec_name(chosen[i]), msg);
    }

    size_t n;
    float *g;
    if (o.input == INPUT_FILE) {
        g = read_floats(o.path, o.bytes_given ? o.bytes : 0, &n);
    } else {
        n = o.bytes / sizeof(float);
        g = malloc(o.bytes);
        if (!g) die("out of memory for a %zu-byte input", o.bytes);
        if (o.input == INPUT_GGD) fill_ggd(g, n, o.ggd_shape, o.scale, o.seed);
        else fill_laplace(g, n, o.scale, o.seed);
    }
    if (o.cuda) {
        int bad = codec_bench_device(chosen, count, g, n, &o.params, o.reps, o.seed, o.json);
        free(g);
        return bad ? 1 : 0;
    }
    float *acc = malloc(n * sizeof(float));
    result *res = calloc(count, sizeof *res);
    if (!acc || !res) die("out of memory for a %zu-byte accumulator", n * sizeof(float));

    int failed = 0;
    for (size_t i = 0; i < count; i++) {
        res[i] = bench_codec(chosen[i], &o, g, n, acc);
        if (res[i].error[0]) {
            fprintf(stderr, PROG ": %s: %s\n", gc_codec_name(chosen[i]), res[i].error);
            failed++;
        }
    }

    if (o.json) print_json(res, count, &o, n);
    else print_table(res, count, &o, n);

    free(res);
    free(acc);
    free(g);
    return failed ? 1 : 0;
}
