/* gather_error.c — gcmpi-gather-error: what each codec does to data that is
 * gathered, not summed: the feature all_gather of contrastive training
 * (CLIP, SimCLR), model-parallel activations. A preload library sees these
 * as MPI_Allgather of floats; README "What not to compress" shows this
 * table to explain why GCMPI_ALLGATHER_CODEC=auto leaves them exact.
 *
 *   gcmpi-gather-error [--ranks P] [--rows N] [--dim D] [--ratio R]
 *                      [--bits B] [--rank R] [--seed S] [--json]
 *
 * Each of P ranks holds N rows of D-dimensional L2-normalised features
 * (clustered, as embeddings are: a unit cluster centre plus noise). The
 * compressed MPI_Allgather encodes each rank's block once and every rank
 * decodes every block (pmpi/coll_allgather_op.c); this tool does the same
 * with the codec library, without MPI, so the figures are those of the
 * library's allgather. Against the exact gather it reports:
 *   - rel err: ||G - E||_F / ||E||_F over the gathered matrix;
 *   - max row err: the largest ||g - e|| / ||e|| of a row;
 *   - off >10%: the fraction of elements with |g - e| > 0.1 |e|;
 *   - cos mean/min: cosine similarity of each gathered row to its exact row;
 *   - cos EF step 2: the mean row cosine of a second gather of fresh
 *     features when error feedback is on (GCMPI_ALLGATHER_EF=1): the
 *     residual of the first step is added into the second step's features.
 * Codec parameters are the library defaults (those of an unset GCMPI_*)
 * unless given. */
#include "gcmpi_codec.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "gcmpi-gather-error"
#define CLUSTERS 16

typedef struct options {
    int ranks;
    size_t rows, dim;
    gc_params params;
    uint64_t seed;
    bool json;
} options;

static void usage(FILE *out)
{
    fprintf(out,
        "usage: " PROG " [options]\n"
        "  --ranks P    ranks gathering (default 4)\n"
        "  --rows N     feature rows per rank (default 256)\n"
        "  --dim D      feature dimension (default 512)\n"
        "  --ratio R    kept fraction for topk, randk, dgc, topkq (default 0.01)\n"
        "  --bits B     qsgd, topkq bits (default 4)\n"
        "  --rank R     powersgd rank (default 4)\n"
        "  --seed S     data and codec seed (default 1)\n"
        "  --json       one JSON array, one object per codec\n");
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

static double number(const char *opt, const char *s, double lo, double hi)
{
    char *end = NULL;
    double x = s ? strtod(s, &end) : NAN;
    if (!s || end == s || *end || !(x >= lo && x <= hi))
        die("%s %s: expected a number in [%g, %g]", opt, s ? s : "(missing)", lo, hi);
    return x;
}

static options parse(int argc, char **argv)
{
    options o = {.ranks = 4, .rows = 256, .dim = 512, .seed = 1};
    gc_params_default(&o.params);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--json") == 0) {
            o.json = true;
            continue;
        } else if (strcmp(a, "--ranks") == 0) o.ranks = (int)number(a, v, 1, 1024);
        else if (strcmp(a, "--rows") == 0) o.rows = (size_t)number(a, v, 1, 1 << 20);
        else if (strcmp(a, "--dim") == 0) o.dim = (size_t)number(a, v, 1, 1 << 20);
        else if (strcmp(a, "--ratio") == 0) o.params.ratio = number(a, v, 1e-9, 1);
        else if (strcmp(a, "--bits") == 0) o.params.bits = (unsigned)number(a, v, 1, 32);
        else if (strcmp(a, "--rank") == 0) o.params.rank = (unsigned)number(a, v, 1, 1024);
        else if (strcmp(a, "--seed") == 0) o.seed = (uint64_t)number(a, v, 0, 9e15);
        else {
            usage(stderr);
            die("unknown option %s", a);
        }
        i++;
    }
    if ((double)o.rows * (double)o.dim * o.ranks > 1 << 28) die("--ranks * --rows * --dim above 2^28");
    return o;
}

/* ---- features -------------------------------------------------------------- */

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double gaussian(uint64_t *s)
{
    double u = ((double)(next(s) >> 11) + 0.5) * 0x1p-53;
    double v = ((double)(next(s) >> 11) + 0.5) * 0x1p-53;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static void normalise(float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    double k = s > 0 ? 1.0 / sqrt(s) : 0.0;
    for (size_t i = 0; i < n; i++) x[i] = (float)(x[i] * k);
}

/* rows x dim unit rows: a unit cluster centre plus noise of norm ~1. */
static void features(float *x, size_t rows, size_t dim, const float *centres, uint64_t *s)
{
    for (size_t r = 0; r < rows; r++) {
        const float *c = centres + (next(s) % CLUSTERS) * dim;
        float *row = x + r * dim;
        for (size_t i = 0; i < dim; i++) row[i] = c[i] + (float)(gaussian(s) / sqrt((double)dim));
        normalise(row, dim);
    }
}

/* ---- one gather ------------------------------------------------------------ */

typedef struct errors {
    double rel, max_row, off10, cos_mean, cos_min;
} errors;

/* out = every rank's block encoded (with its residual when res is not
 * NULL) and decoded, as the compressed MPI_Allgather does. */
static int gather(const gc_codec *c, const options *o, const float *in, float *out, float *res,
                  void *buf, size_t cap, gc_workspace *ws, uint64_t seed)
{
    const size_t block = o->rows * o->dim;
    memset(out, 0, (size_t)o->ranks * block * sizeof(float));
    for (int r = 0; r < o->ranks; r++) {
        size_t len = gc_encode(c, in + (size_t)r * block, res ? res + (size_t)r * block : NULL,
                               block, &o->params, seed + (uint64_t)r, buf, cap, ws);
        size_t d = gc_is_error(len)
                       ? len
                       : gc_decode_add_as(c, buf, len, out + (size_t)r * block, block, ws);
        if (gc_is_error(d)) {
            fprintf(stderr, PROG ": %s: %s\n", gc_codec_name(c), gc_error_name(d));
            return -1;
        }
    }
    return 0;
}

static errors compare(const float *exact, const float *got, size_t rows, size_t dim)
{
    errors e = {0, 0, 0, 0, 1};
    double diff = 0, norm = 0, off = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *x = exact + r * dim, *y = got + r * dim;
        double d = 0, xx = 0, yy = 0, xy = 0;
        for (size_t i = 0; i < dim; i++) {
            double dx = (double)y[i] - x[i];
            d += dx * dx;
            xx += (double)x[i] * x[i];
            yy += (double)y[i] * y[i];
            xy += (double)x[i] * y[i];
            off += fabs(dx) > 0.1 * fabs((double)x[i]);
        }
        diff += d;
        norm += xx;
        double row = xx > 0 ? sqrt(d / xx) : sqrt(d);
        if (row > e.max_row) e.max_row = row;
        double cos = xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : 0.0;
        e.cos_mean += cos;
        if (cos < e.cos_min) e.cos_min = cos;
    }
    e.rel = norm > 0 ? sqrt(diff / norm) : sqrt(diff);
    e.off10 = off / ((double)rows * (double)dim);
    e.cos_mean /= (double)rows;
    return e;
}

int main(int argc, char **argv)
{
    options o = parse(argc, argv);
    const size_t block = o.rows * o.dim, total = (size_t)o.ranks * block;
    float *centres = malloc(CLUSTERS * o.dim * sizeof(float));
    float *step1 = malloc(total * sizeof(float)), *step2 = malloc(total * sizeof(float));
    float *got = malloc(total * sizeof(float)), *res = malloc(total * sizeof(float));
    gc_workspace *ws = gc_workspace_create();
    if (!centres || !step1 || !step2 || !got || !res || !ws) die("out of memory");
    uint64_t s = o.seed * 0x2545F4914F6CDD1Dull + 7;
    for (size_t k = 0; k < CLUSTERS; k++) {
        for (size_t i = 0; i < o.dim; i++) centres[k * o.dim + i] = (float)gaussian(&s);
        normalise(centres + k * o.dim, o.dim);
    }
    features(step1, (size_t)o.ranks * o.rows, o.dim, centres, &s);
    features(step2, (size_t)o.ranks * o.rows, o.dim, centres, &s);

    if (o.json) printf("[");
    else
        printf("%d ranks x %zu rows x %zu dims, unit rows in %d clusters; ratio %g, bits %u, "
               "rank %u\n%-9s %9s %11s %9s %9s %9s %14s\n",
               o.ranks, o.rows, o.dim, CLUSTERS, o.params.ratio, o.params.bits, o.params.rank,
               "codec", "rel err", "max row err", "off >10%", "cos mean", "cos min",
               "cos EF step 2");
    int failed = 0, first = 1;
    for (size_t i = 0; i < gc_codec_count(); i++) {
        const gc_codec *c = gc_codec_at(i);
        char why[256];
        if (gc_is_error(gc_params_check(c, &o.params, why, sizeof why))) {
            fprintf(stderr, "%s skipped: %s\n", gc_codec_name(c), why);
            continue;
        }
        size_t cap = gc_bound(c, block, &o.params);
        void *buf = gc_is_error(cap) ? NULL : malloc(cap);
        if (!buf) die("%s: no payload buffer", gc_codec_name(c));
        /* Step 1 without residuals: what one gather does. */
        if (gather(c, &o, step1, got, NULL, buf, cap, ws, o.seed) != 0) {
            failed = 1;
            free(buf);
            continue;
        }
        errors e = compare(step1, got, (size_t)o.ranks * o.rows, o.dim);
        /* Step 2 with error feedback: the residual of step 1 rides along. */
        memset(res, 0, total * sizeof(float));
        errors ef = {0};
        if (gather(c, &o, step1, got, res, buf, cap, ws, o.seed) != 0 ||
            gather(c, &o, step2, got, res, buf, cap, ws, o.seed + 1000) != 0)
            failed = 1;
        else
            ef = compare(step2, got, (size_t)o.ranks * o.rows, o.dim);
        free(buf);
        if (o.json)
            printf("%s\n  {\"codec\": \"%s\", \"rel_err\": %.6g, \"max_row_err\": %.6g, "
                   "\"off_10pct\": %.6g, \"cos_mean\": %.6g, \"cos_min\": %.6g, "
                   "\"cos_ef_step2\": %.6g}",
                   first ? "" : ",", gc_codec_name(c), e.rel, e.max_row, e.off10, e.cos_mean,
                   e.cos_min, ef.cos_mean);
        else
            printf("%-9s %9.2e %11.2e %8.1f%% %9.4f %9.4f %14.4f\n", gc_codec_name(c), e.rel,
                   e.max_row, 100.0 * e.off10, e.cos_mean, e.cos_min, ef.cos_mean);
        first = 0;
    }
    if (o.json) printf("\n]\n");
    gc_workspace_free(ws);
    free(centres);
    free(step1);
    free(step2);
    free(got);
    free(res);
    return failed;
}
