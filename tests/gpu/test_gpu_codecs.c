/* test_gpu_codecs.c — the CUDA codecs against the CPU codecs, byte for byte.
 *
 * For every codec, over the parameter variants below (buckets with padding
 * and several summation chunks, bits, ratios from one element to all,
 * Elias coding, unbiased randk, dgc tolerances, fixed eg n and k, ranks),
 * sizes {0, 1, 7, 1000, 4099, 2^20 + 3}, with and without error feedback,
 * a host and a device destination, with and without CRC: the GPU payload
 * equals the CPU payload, the device residual equals the CPU residual, the
 * CPU decodes the GPU payload and the GPU decodes the CPU payload to the
 * same accumulator bits, and so does the GPU from the payload in device
 * memory (gcmpi_gpu_decode_add with a device src). Sparse codecs also see ties (few distinct
 * magnitudes) and all-zero inputs. A "special" vector adds NaN,
 * infinities, -0, subnormals and values past the fp16 range (its residuals
 * and sums compare NaNs as equal; see first_diff_f). Also: every codec is
 * supported, the zstd stage gives GC_ERR_UNSUPPORTED, corrupt bodies give
 * the CPU's error, and DGC's momentum encode (topk, dgc, randk, topkq)
 * keeps the CPU's payload, u and v over four calls, an overflow step among
 * them. randk's indices drawn on the device, over ratios up to 1. eg's and
 * qsgd's Elias sync points: bodies of several segments, and
 * mutants of one (cut, sync points changed, stream bits flipped) refused
 * or summed as the CPU refuses or sums them. The
 * adaptive layer's device passes (gpu_adapt.cu) equal codecs/adapt/'s
 * loops: EDGC's gathered sample, GCT's shaping and remembered mean, and
 * the variance method's two sums in gc_var_moves' order; topkq with a
 * width policy on the context equals the CPU's with it on a workspace.
 *
 * Plain C, no Criterion (the GPU machine has none). Exit 77 (meson: skipped)
 * without a CUDA device. */
#include "gcmpi_gpu.h"
#include "adapt/gc_adapt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static gcmpi_gpu_ctx *ctx;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            failures++;                                                   \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                 \
            fputc('\n', stderr);                                          \
        }                                                                 \
    } while (0)

static uint64_t rng_state = 0x12345678abcdefull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}
/* Gaussian-ish values of mixed magnitude, some exact zeros and -0. */
static float rnd_float(void)
{
    uint32_t u = rnd();
    if ((u & 63) == 0) return 0.0f;
    if ((u & 63) == 1) return -0.0f;
    float x = ((float)(rnd() >> 8) * 0x1p-24f - 0.5f) + ((float)(rnd() >> 8) * 0x1p-24f - 0.5f);
    return ldexpf(x, (int)(u % 17) - 8);
}

static float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

enum { FILL_RANDOM, FILL_SPECIAL, FILL_TIES, FILL_ZERO, FILL_STEPS, FILL_SAMPLED };
static const char *const fill_name[] = {"", " special", " ties", " zeros", " steps", " sampled"};

/* FILL_TIES: magnitudes from {0, 0.5, 1, 2}, so the top-k threshold falls
 * among many equal magnitudes (the tie rule decides what is sent).
 * FILL_STEPS: random values in steps of 1/64, a few dozen ties at any
 * threshold. FILL_SAMPLED: random, but large at every 64th element from
 * the 32nd, where a strided sample of top-k's one-pass path reads (the
 * CPU's and the GPU's), so its threshold comes out too high. */
static void fill(float *x, size_t n, int mode)
{
    static const float ties[] = {0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f};
    for (size_t i = 0; i < n; i++)
        x[i] = mode == FILL_ZERO ? 0.0f : mode == FILL_TIES ? ties[rnd() & 7] : rnd_float();
    if (mode == FILL_STEPS)
        for (size_t i = 0; i < n; i++) x[i] = roundf(x[i] * 64.0f) / 64.0f;
    if (mode == FILL_SAMPLED)
        for (size_t i = 32; i < n; i += 64) x[i] = 1000.0f + (float)(i % 977);
    if (mode == FILL_SPECIAL && n >= 1000) {
        x[3] = NAN;
        /* A second NaN, with a payload, in another bucket (or chunk): where
         * two NaNs meet in one addition the CPU's choice between them
         * depends on how the compiler ordered commutative operands. */
        x[n >= 5000 ? 4500 : 700] = bits_f(0xFFC12345u);
        x[600] = INFINITY;
        x[901] = -INFINITY;
        x[20] = 1e-40f;               /* float subnormal */
        x[21] = -3e-8f;               /* half subnormal */
        x[22] = 70000.0f;             /* past the fp16 range */
        x[23] = -65519.0f;
        x[24] = 3.4e38f;
        x[25] = -0.0f;
        x[26] = 5.96e-8f;
    }
}

static void *dev_from(const void *h, size_t bytes)
{
    void *d = gcmpi_gpu_alloc(ctx, bytes);
    if (!d) {
        fprintf(stderr, "FATAL: gcmpi_gpu_alloc(%zu) failed\n", bytes);
        exit(1);
    }
    if (bytes && gc_is_error(gcmpi_gpu_copy(ctx, d, h, bytes))) {
        fprintf(stderr, "FATAL: gcmpi_gpu_copy to device failed\n");
        exit(1);
    }
    return d;
}

static void to_host(void *h, const void *d, size_t bytes)
{
    if (bytes && gc_is_error(gcmpi_gpu_copy(ctx, h, d, bytes))) {
        fprintf(stderr, "FATAL: gcmpi_gpu_copy to host failed\n");
        exit(1);
    }
}

/* First element where the floats differ in bits; with nan_any, two NaNs
 * are equal whatever their sign and payload: gcc treats the sign of an
 * arithmetic NaN as unspecified and folds x - (-y) into x + y, so the CPU's
 * NaN bits in residuals and sums depend on the compiler (payload bytes are
 * still compared exactly). */
static size_t first_diff_f(const float *a, const float *b, size_t n, int nan_any)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4) && !(nan_any && isnan(a[i]) && isnan(b[i]))) return i;
    return n;
}

static size_t first_diff(const void *a, const void *b, size_t len)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < len; i++)
        if (x[i] != y[i]) return i;
    return len;
}

static void run_case(const char *name, const gc_params *base, size_t n, int ef, int dst_dev,
                     int crc, int mode)
{
    const gc_codec *c = gc_codec_by_name(name);
    gc_params p = *base;
    if (crc) p.flags |= GC_PF_CRC;
    const int special = mode == FILL_SPECIAL;
    char what[200];
    snprintf(what, sizeof what,
             "%s n=%zu bucket=%zu ratio=%g bits=%u flags=%#x tol=%g eg_n=%d rank=%u ef=%d dst=%s "
             "crc=%d%s",
             name, n, p.bucket, p.ratio, p.bits, p.flags, p.dgc_tolerance, p.eg_n, p.rank, ef,
             dst_dev ? "device" : "host", crc, fill_name[mode]);

    size_t cap = gc_bound(c, n, &p);
    CHECK(!gc_is_error(cap), "%s: gc_bound: %s", what, gc_error_name(cap));
    float *g = malloc((n ? n : 1) * sizeof *g), *r0 = malloc((n ? n : 1) * sizeof *r0);
    float *r_cpu = malloc((n ? n : 1) * sizeof *r_cpu), *r_gpu = malloc((n ? n : 1) * sizeof *r_gpu);
    float *acc0 = malloc((n ? n : 1) * sizeof *acc0), *acc_cpu = malloc((n ? n : 1) * sizeof *acc_cpu);
    float *acc_gpu = malloc((n ? n : 1) * sizeof *acc_gpu);
    unsigned char *pay_cpu = malloc(cap), *pay_gpu = malloc(cap);
    if (!g || !r0 || !r_cpu || !r_gpu || !acc0 || !acc_cpu || !acc_gpu || !pay_cpu || !pay_gpu) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(1);
    }
    fill(g, n, mode);
    for (size_t i = 0; i < n; i++) r0[i] = mode == FILL_RANDOM || mode == FILL_SPECIAL ? 0.25f * rnd_float() : 0.0f;
    fill(acc0, n, FILL_RANDOM);
    memcpy(r_cpu, r0, n * sizeof *r0);

    size_t lc = gc_encode(c, g, ef ? r_cpu : NULL, n, &p, 42, pay_cpu, cap, NULL);
    CHECK(!gc_is_error(lc), "%s: gc_encode: %s", what, gc_error_name(lc));

    float *dg = dev_from(g, n * sizeof *g), *dr = dev_from(r0, n * sizeof *r0);
    /* Odd n: a device dst 4 bytes into its allocation (a body that is not
     * 16-byte aligned is staged; decoding it copies it to aligned memory). */
    const size_t shift = dst_dev && (n & 1) ? 4 : 0;
    unsigned char *ddst_mem = dst_dev ? gcmpi_gpu_alloc(ctx, cap + shift) : NULL;
    void *ddst = ddst_mem ? ddst_mem + shift : NULL;
    size_t lg = gcmpi_gpu_encode(ctx, c, dg, ef ? dr : NULL, n, &p, 42,
                                 dst_dev ? ddst : (void *)pay_gpu, cap);
    CHECK(!gc_is_error(lg), "%s: gcmpi_gpu_encode: %s", what, gc_error_name(lg));
    if (!gc_is_error(lg) && !gc_is_error(lc)) {
        if (dst_dev) to_host(pay_gpu, ddst, lg);
        CHECK(lg == lc, "%s: payload length GPU %zu, CPU %zu", what, lg, lc);
        if (lg == lc) {
            size_t d = first_diff(pay_gpu, pay_cpu, lc);
            CHECK(d == lc, "%s: payloads differ first at byte %zu of %zu (GPU %02x, CPU %02x)",
                  what, d, lc, d < lc ? pay_gpu[d] : 0, d < lc ? pay_cpu[d] : 0);
        }
        if (ef) {
            to_host(r_gpu, dr, n * sizeof *r_gpu);
            size_t d = first_diff_f(r_gpu, r_cpu, n, special);
            CHECK(d == n, "%s: residuals differ first at element %zu (GPU %a, CPU %a)",
                  what, d, (double)r_gpu[d], (double)r_cpu[d]);
        }

        /* CPU decodes the GPU payload; GPU decodes the CPU payload. */
        memcpy(acc_cpu, acc0, n * sizeof *acc0);
        size_t e = gc_decode_add(pay_gpu, lg, n ? acc_cpu : NULL, n, NULL);
        CHECK(!gc_is_error(e), "%s: gc_decode_add of the GPU payload: %s", what, gc_error_name(e));
        float *dacc = dev_from(acc0, n * sizeof *acc0);
        e = gcmpi_gpu_decode_add(ctx, pay_cpu, lc, n ? dacc : NULL, n);
        CHECK(!gc_is_error(e), "%s: gcmpi_gpu_decode_add of the CPU payload: %s", what,
              gc_error_name(e));
        to_host(acc_gpu, dacc, n * sizeof *acc_gpu);
        size_t d = first_diff_f(acc_gpu, acc_cpu, n, special);
        CHECK(d == n, "%s: decoded sums differ first at element %zu (GPU %a, CPU %a)",
              what, d, (double)acc_gpu[d], (double)acc_cpu[d]);

        /* The GPU decodes the payload where it lies in device memory. */
        void *dpay = dst_dev ? ddst : dev_from(pay_gpu, lg);
        float *dacc2 = dev_from(acc0, n * sizeof *acc0);
        e = gcmpi_gpu_decode_add(ctx, dpay, lg, n ? dacc2 : NULL, n);
        CHECK(!gc_is_error(e), "%s: gcmpi_gpu_decode_add of the device payload: %s", what,
              gc_error_name(e));
        to_host(acc_gpu, dacc2, n * sizeof *acc_gpu);
        d = first_diff_f(acc_gpu, acc_cpu, n, special);
        CHECK(d == n, "%s: sums decoded from device memory differ first at element %zu "
              "(GPU %a, CPU %a)", what, d, (double)acc_gpu[d], (double)acc_cpu[d]);
        if (!dst_dev) gcmpi_gpu_dealloc(ctx, dpay);
        gcmpi_gpu_dealloc(ctx, dacc2);
        gcmpi_gpu_dealloc(ctx, dacc);
    }
    gcmpi_gpu_dealloc(ctx, ddst_mem);
    gcmpi_gpu_dealloc(ctx, dg);
    gcmpi_gpu_dealloc(ctx, dr);
    free(g); free(r0); free(r_cpu); free(r_gpu); free(acc0); free(acc_cpu); free(acc_gpu);
    free(pay_cpu); free(pay_gpu);
}

/* What each codec is run with (0 / -1: the default parameter). Buckets:
 * 7 leaves padding bits, 4099 spans two summation chunks; ratios from one
 * element to all of them; more_fills adds ties and all-zero inputs. */
typedef struct variant {
    const char *codec;
    size_t bucket;
    double ratio;
    unsigned bits;
    unsigned flags;
    double tolerance;
    int more_fills;
    int eg_fixed;  /* eg: n = 6 and k = 2 instead of auto */
    unsigned rank; /* powersgd */
} variant;

static const variant variants[] = {
    {"none", 0, 0, 0, 0, -1, 0, 0, 0},
    {"fp16", 0, 0, 0, 0, -1, 0, 0, 0},
    {"bf16", 0, 0, 0, 0, -1, 0, 0, 0},
    {"int8", 512, 0, 0, 0, -1, 0, 0, 0},
    {"int8", 7, 0, 0, 0, -1, 0, 0, 0},
    {"int8", 4099, 0, 0, 0, -1, 0, 0, 0},
    {"sign", 512, 0, 0, 0, -1, 0, 0, 0},
    {"sign", 7, 0, 0, 0, -1, 0, 0, 0},
    {"sign", 4099, 0, 0, 0, -1, 0, 0, 0},
    {"qsgd", 512, 0, 4, 0, -1, 0, 0, 0},
    {"qsgd", 7, 0, 2, 0, -1, 0, 0, 0},
    {"qsgd", 4099, 0, 8, 0, -1, 0, 0, 0},
    {"qsgd", 512, 0, 3, GC_PF_QSGD_ELIAS, -1, 0, 0, 0},
    {"qsgd", 7, 0, 8, GC_PF_QSGD_ELIAS, -1, 0, 0, 0},
    {"terngrad", 512, 0, 0, 0, -1, 0, 0, 0},
    {"terngrad", 7, 0, 0, 0, -1, 0, 0, 0},
    {"terngrad", 4099, 0, 0, 0, -1, 0, 0, 0},
    {"onebit", 512, 0, 0, 0, -1, 0, 0, 0},
    {"onebit", 7, 0, 0, 0, -1, 0, 0, 0},
    {"onebit", 4099, 0, 0, 0, -1, 0, 0, 0},
    {"natural", 512, 0, 0, 0, -1, 0, 0, 0},
    {"natural", 7, 0, 0, 0, -1, 0, 0, 0},
    {"natural", 4099, 0, 0, 0, -1, 0, 0, 0},
    {"topk", 0, 0.01, 0, 0, -1, 1, 0, 0},
    {"topk", 0, 0.3, 0, 0, -1, 1, 0, 0},
    {"topk", 0, 1.0, 0, 0, -1, 0, 0, 0},
    {"topk", 0, 1e-9, 0, 0, -1, 0, 0, 0},
    {"topkq", 512, 0.01, 4, 0, -1, 1, 0, 0},
    {"topkq", 7, 0.3, 1, 0, -1, 1, 0, 0},
    {"topkq", 3, 0.5, 3, 0, -1, 0, 0, 0},
    {"topkq", 100, 1.0, 8, 0, -1, 0, 0, 0},
    {"eg", 512, 0, 0, 0, -1, 0, 0, 0},
    {"eg", 7, 0, 0, 0, -1, 0, 0, 0},
    {"eg", 4099, 0, 0, 0, -1, 0, 0, 0},
    {"eg", 100, 0, 0, 0, -1, 0, 1, 0},
    {"powersgd", 0, 0, 0, 0, -1, 0, 0, 0},
    {"powersgd", 0, 0, 0, 0, -1, 0, 0, 1},
    {"powersgd", 0, 0, 0, 0, -1, 0, 0, 40},  /* more than the rows of small n */
    {"randk", 0, 0.01, 0, 0, -1, 0, 0, 0},
    {"randk", 0, 0.3, 0, GC_PF_RANDK_UNBIASED, -1, 0, 0, 0},
    {"randk", 0, 1.0, 0, 0, -1, 0, 0, 0},
    {"dgc", 0, 0.01, 0, 0, -1, 1, 0, 0},
    {"dgc", 0, 0.05, 0, 0, 5.0, 1, 0, 0},   /* wide tolerance: the sampled threshold is kept */
    {"dgc", 0, 0.1, 0, 0, 0.0, 0, 0, 0},    /* no tolerance: almost always the exact top-k */
};

/* gcmpi_gpu_decode_add of a copy of the host payload buf[0..len) in
 * device memory. */
static size_t decode_from_device(const void *buf, size_t len, float *dacc, size_t n)
{
    void *d = dev_from(buf, len);
    size_t r = gcmpi_gpu_decode_add(ctx, d, len, dacc, n);
    gcmpi_gpu_dealloc(ctx, d);
    return r;
}

static void test_errors(void)
{
    gc_params p;
    gc_params_default(&p);
    float h[16] = {0};
    float *d = dev_from(h, sizeof h);
    unsigned char buf[4096];

    size_t r, l;
    for (size_t i = 0; i < gc_codec_count(); i++)
        CHECK(gcmpi_gpu_supports(gc_codec_at(i)), "%s has no device kernels",
              gc_codec_name(gc_codec_at(i)));
    CHECK(!gcmpi_gpu_supports(NULL), "NULL codec reported as supported");

    const gc_codec *int8 = gc_codec_by_name("int8");
    CHECK(gcmpi_gpu_supports(int8), "int8 not reported as supported");
    gc_params z = p;
    z.zstd_level = 3;
    r = gcmpi_gpu_encode(ctx, int8, d, NULL, 16, &z, 1, buf, sizeof buf);
    CHECK(gc_error_code(r) == GC_ERR_UNSUPPORTED, "zstd encode: %s", gc_error_name(r));
    r = gcmpi_gpu_encode(ctx, int8, d, NULL, 16, &p, 1, buf, 33);
    CHECK(gc_error_code(r) == GC_ERR_DST_TOO_SMALL, "small dst: %s", gc_error_name(r));
    r = gcmpi_gpu_encode(ctx, int8, h, NULL, 16, &p, 1, buf, sizeof buf);
    CHECK(gc_error_code(r) == GC_ERR_PARAM, "host input: %s", gc_error_name(r));

    /* int8 body: bucket, 1 scale, 16 codes; -128 is corrupt. */
    for (int i = 0; i < 16; i++) h[i] = (float)i - 8.0f;
    float *d2 = dev_from(h, sizeof h);
    l = gc_encode(int8, h, NULL, 16, &p, 1, buf, sizeof buf, NULL);
    CHECK(!gc_is_error(l), "int8 encode: %s", gc_error_name(l));
    buf[GC_HEADER_SIZE + 8 + 2] = 0x80;
    r = gcmpi_gpu_decode_add(ctx, buf, l, d2, 16);
    CHECK(gc_error_code(r) == GC_ERR_CORRUPT, "int8 -128: %s", gc_error_name(r));
    r = decode_from_device(buf, l, d2, 16);
    CHECK(gc_error_code(r) == GC_ERR_CORRUPT, "int8 -128 from device: %s", gc_error_name(r));
    r = decode_from_device(buf, l - 1, d2, 16);
    CHECK(gc_is_error(r), "truncated device payload accepted");
    r = decode_from_device(buf, 20, d2, 16);
    CHECK(gc_error_code(r) == GC_ERR_TRUNCATED, "20-byte device payload: %s", gc_error_name(r));
    r = gcmpi_gpu_decode_add(ctx, buf, l - 1, d2, 16);
    CHECK(gc_is_error(r), "truncated payload accepted");
    r = gcmpi_gpu_decode_add(ctx, buf, l, d2, 15);
    CHECK(gc_error_code(r) == GC_ERR_SIZE_MISMATCH, "n mismatch: %s", gc_error_name(r));

    /* sign, 13 elements in one bucket: m = 2, elements 13..15 are padding
     * (bits 6 and 7 of byte 1, bit 7 of byte 0). */
    const gc_codec *sign = gc_codec_by_name("sign");
    l = gc_encode(sign, h, NULL, 13, &p, 1, buf, sizeof buf, NULL);
    CHECK(!gc_is_error(l), "sign encode: %s", gc_error_name(l));
    buf[GC_HEADER_SIZE + 8 + 1] |= 0x80;
    r = gcmpi_gpu_decode_add(ctx, buf, l, d2, 13);
    CHECK(gc_error_code(r) == GC_ERR_CORRUPT, "sign padding bit: %s", gc_error_name(r));

    /* CRC mismatch */
    p.flags |= GC_PF_CRC;
    l = gc_encode(int8, h, NULL, 16, &p, 1, buf, sizeof buf, NULL);
    buf[l - 1] ^= 1;
    r = gcmpi_gpu_decode_add(ctx, buf, l, d2, 16);
    CHECK(gc_error_code(r) == GC_ERR_CHECKSUM, "crc: %s", gc_error_name(r));
    r = decode_from_device(buf, l, d2, 16);
    CHECK(gc_error_code(r) == GC_ERR_CHECKSUM, "crc from device: %s", gc_error_name(r));

    /* Corrupt bodies of the other codecs are refused as the CPU refuses
     * them (the device decode checks what the CPU decode checks). */
    /* topk's and topkq's delta indices (13 elements, k 2: indices 0 and 1,
     * width 1, body+5 the width, body+6 the deltas) are checked on the
     * device. */
    enum { DELTAS = GC_HEADER_SIZE + 6 };
    static const struct { const char *codec; size_t at; unsigned char x; size_t at2; unsigned char x2; } bad[] = {
        {"natural", GC_HEADER_SIZE + 4 + 1 + 3, 0x80, 0, 0},   /* code 128: a signed zero */
        {"natural", GC_HEADER_SIZE + 4, 0, 0, 0},              /* E = 0 */
        {"terngrad", GC_HEADER_SIZE + 4 + 4 + 3, 0x80, 0, 0},  /* a padding code (13 of 16) */
        {"qsgd", GC_HEADER_SIZE + 4, 9, 0, 0},                 /* 9 bits */
        {"onebit", GC_HEADER_SIZE + 4 + 8 + 1, 0x80, 0, 0},    /* a padding bit */
        {"topk", GC_HEADER_SIZE, 200, 0, 0},                   /* k > n */
        {"topk", DELTAS, 0x06, 0, 0},                          /* a padding bit */
        {"topk", DELTAS, 0x00, 0, 0},                          /* deltas 0, 0: not increasing */
        {"topk", DELTAS - 1, 4, DELTAS, 0xFC},                 /* width 4: 12 + 15 is past n */
        {"topkq", GC_HEADER_SIZE + 11, 9, 0, 0},               /* width 9 (k 2: 2 index bytes) */
        {"topkq", DELTAS, 0x00, 0, 0},                         /* its deltas 0, 0 (as topk's) */
        {"randk", GC_HEADER_SIZE + 12, 2, 0, 0},               /* unknown flag */
        {"powersgd", GC_HEADER_SIZE + 8, 0, 0, 0},             /* rank 0 */
    };
    gc_params q;
    gc_params_default(&q);
    q.ratio = 0.1;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const gc_codec *c = gc_codec_by_name(bad[i].codec);
        l = gc_encode(c, h, NULL, 13, &q, 1, buf, sizeof buf, NULL);
        CHECK(!gc_is_error(l), "%s encode: %s", bad[i].codec, gc_error_name(l));
        if (gc_is_error(l) || bad[i].at >= l) continue;
        buf[bad[i].at] = bad[i].x;
        if (bad[i].at2) buf[bad[i].at2] = bad[i].x2;
        size_t want = gc_decode_add(buf, l, h, 13, NULL);
        CHECK(gc_is_error(want), "%s: the CPU accepts the corrupt body", bad[i].codec);
        r = gcmpi_gpu_decode_add(ctx, buf, l, d2, 13);
        CHECK(gc_error_code(r) == gc_error_code(want), "%s corrupt body: GPU %s, CPU %s",
              bad[i].codec, gc_error_name(r), gc_error_name(want));
        r = decode_from_device(buf, l, d2, 13);
        CHECK(gc_error_code(r) == gc_error_code(want),
              "%s corrupt body in device memory: GPU %s, CPU %s", bad[i].codec, gc_error_name(r),
              gc_error_name(want));
    }

    /* A bitmap index section (topk keeping all 13: body+5 and body+6 are
     * the bitmap), decoded on the device: a bit past n (with index 0
     * cleared, so the count is still k), a bit past n besides k, and one
     * index fewer than k. */
    q.ratio = 1.0;
    static const struct { unsigned char or6, and5; } bits[] = {{0x80, 0xFE}, {0x80, 0xFF}, {0x00, 0xFE}};
    for (size_t i = 0; i < sizeof bits / sizeof *bits; i++) {
        const gc_codec *c = gc_codec_by_name("topk");
        l = gc_encode(c, h, NULL, 13, &q, 1, buf, sizeof buf, NULL);
        CHECK(!gc_is_error(l) && buf[GC_HEADER_SIZE + 4] == 1, "topk 13 of 13: not a bitmap");
        buf[GC_HEADER_SIZE + 6] |= bits[i].or6;
        buf[GC_HEADER_SIZE + 5] &= bits[i].and5;
        size_t want = gc_decode_add(buf, l, h, 13, NULL);
        CHECK(gc_error_code(want) == GC_ERR_CORRUPT, "bitmap case %zu: the CPU says %s", i,
              gc_error_name(want));
        r = gcmpi_gpu_decode_add(ctx, buf, l, d2, 13);
        CHECK(gc_error_code(r) == gc_error_code(want), "bitmap case %zu: GPU %s, CPU %s", i,
              gc_error_name(r), gc_error_name(want));
        r = decode_from_device(buf, l, d2, 13);
        CHECK(gc_error_code(r) == gc_error_code(want), "bitmap case %zu from device: GPU %s, CPU %s",
              i, gc_error_name(r), gc_error_name(want));
    }

    CHECK(gcmpi_gpu_is_device_pointer(d) == 1, "device pointer not recognised");
    CHECK(gcmpi_gpu_is_device_pointer(h) == 0, "host pointer taken for a device pointer");
    CHECK(gcmpi_gpu_is_device_pointer(NULL) == 0, "NULL taken for a device pointer");
    gcmpi_gpu_dealloc(ctx, d);
    gcmpi_gpu_dealloc(ctx, d2);
}

/* One mutated payload buf[0..len) of a sync-pointed stream (eg, qsgd's
 * Elias coding; its header's length set to len): the GPU answers the
 * CPU's error, from host and from device memory, and leaves its
 * accumulator as it was; where the CPU accepts the body, the GPU's sums
 * are the CPU's bits. */
static void stream_mutant(const char *codec, const char *what, unsigned char *buf, size_t len,
                          size_t n, const float *acc0, float *acc_cpu, float *acc_gpu)
{
    for (int i = 0; i < 8; i++) buf[16 + i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(acc_cpu, acc0, n * sizeof *acc0);
    const size_t want = gc_decode_add(buf, len, acc_cpu, n, NULL);
    for (int from_dev = 0; from_dev < 2; from_dev++) {
        float *dacc = dev_from(acc0, n * sizeof *acc0);
        const size_t r = from_dev ? decode_from_device(buf, len, dacc, n)
                                  : gcmpi_gpu_decode_add(ctx, buf, len, dacc, n);
        CHECK(gc_error_code(r) == gc_error_code(want), "%s %s%s: GPU %s, CPU %s", codec, what,
              from_dev ? " (device payload)" : "", gc_error_name(r), gc_error_name(want));
        to_host(acc_gpu, dacc, n * sizeof *acc_gpu);
        const float *expect = gc_is_error(r) ? acc0 : acc_cpu;
        const size_t d = first_diff_f(acc_gpu, expect, n, 0);
        CHECK(d == n, "%s %s%s: sum differs at %zu (GPU %a, %s %a)", codec, what,
              from_dev ? " (device payload)" : "", d, (double)acc_gpu[d],
              gc_is_error(r) ? "before" : "CPU", (double)expect[d]);
        gcmpi_gpu_dealloc(ctx, dacc);
    }
}

/* Sync-pointed streams (codecs/sync_points.h): bodies of several segments
 * at several bucket sizes equal the CPU's (run_case), and mutants of one
 * of N elements whose segment size field is at body byte seg_at (two sync
 * points follow it, then the stream) — cut at many lengths and in the last
 * code before each sync point, a byte of the segment size or the sync
 * points changed, stream bits flipped (orders, zero runs, codes), a byte
 * appended — get the CPU's verdict from the GPU, which decodes each
 * segment from its sync point. */
static int test_stream_bodies(const char *codec, const gc_params *base, size_t max_n)
{
    int cases = 0;
    gc_params p = *base;
    const size_t buckets[] = {1, 16, 512, 5000};
    for (size_t bi = 0; bi < sizeof buckets / sizeof *buckets; bi++) {
        p.bucket = buckets[bi];
        const size_t n = 9000 < max_n ? 9000 : max_n;
        run_case(codec, &p, n, 1, (int)(bi & 1), 0, FILL_RANDOM);
        run_case(codec, &p, n, 0, !(bi & 1), 1, FILL_RANDOM);
        cases += 2;
    }
    enum { N = 9000 };  /* buckets of 16: segments of 256 buckets, three of them */
    const gc_codec *c = gc_codec_by_name(codec);
    p.bucket = 16;
    const size_t seg_at = gc_codec_id(c) == gc_codec_id(gc_codec_by_name("eg")) ? 5
                          : 6 + 4 * ((N + 15) / 16);  /* qsgd: past its norms */
    const size_t cap = gc_bound(c, N, &p) + 1;
    float *g = malloc(N * sizeof *g), *acc0 = malloc(N * sizeof *acc0);
    float *acc_cpu = malloc(N * sizeof *acc_cpu), *acc_gpu = malloc(N * sizeof *acc_gpu);
    unsigned char *orig = malloc(cap), *buf = malloc(cap);
    if (!g || !acc0 || !acc_cpu || !acc_gpu || !orig || !buf) {
        fprintf(stderr, "FATAL: out of host memory\n");
        exit(1);
    }
    fill(g, N, FILL_RANDOM);
    fill(acc0, N, FILL_RANDOM);
    const size_t len = gc_encode(c, g, NULL, N, &p, 1, orig, cap, NULL);
    CHECK(!gc_is_error(len), "%s encode: %s", codec, gc_error_name(len));
    if (gc_is_error(len)) return cases;
    const size_t body = GC_HEADER_SIZE, sync = body + seg_at + 4, stream = sync + 16;
    char what[96];
    for (size_t cut = body; cut < len; cut += cut < stream + 64 ? 1 : 37) {
        memcpy(buf, orig, cut);
        snprintf(what, sizeof what, "cut at %zu of %zu", cut, len);
        stream_mutant(codec, what, buf, cut, N, acc0, acc_cpu, acc_gpu);
        cases++;
    }
    /* Cuts in the last code before each sync point: a segment that ends
     * past the stream is TRUNCATED, not off its sync point. */
    for (size_t j = 0; j < 2; j++) {
        uint64_t sp = 0;
        for (int i = 7; i >= 0; i--) sp = sp << 8 | orig[sync + 8 * j + (size_t)i];
        for (size_t cut = stream + (size_t)(sp / 8) - 2; cut <= stream + (size_t)(sp / 8) + 1; cut++) {
            memcpy(buf, orig, cut);
            snprintf(what, sizeof what, "cut at %zu, sync point %zu at bit %llu", cut, j,
                     (unsigned long long)sp);
            stream_mutant(codec, what, buf, cut, N, acc0, acc_cpu, acc_gpu);
            cases++;
        }
    }
    for (size_t at = body + seg_at; at < stream; at++)
        for (unsigned x = 1; x < 256; x <<= 1) {
            memcpy(buf, orig, len);
            buf[at] ^= (unsigned char)x;
            snprintf(what, sizeof what, "byte %zu ^ %#x", at - body, x);
            stream_mutant(codec, what, buf, len, N, acc0, acc_cpu, acc_gpu);
            cases++;
        }
    for (int t = 0; t < 300; t++) {
        memcpy(buf, orig, len);
        const size_t bit = stream * 8 + rnd() % ((len - stream) * 8);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        if (t & 1) buf[(bit + 64) / 8 < len ? (bit + 64) / 8 : bit / 8] ^= 0x10;
        snprintf(what, sizeof what, "stream bit %zu flipped%s", bit - stream * 8,
                 t & 1 ? " and one 64 bits on" : "");
        stream_mutant(codec, what, buf, len, N, acc0, acc_cpu, acc_gpu);
        cases++;
    }
    for (unsigned x = 0; x < 2; x++) {
        memcpy(buf, orig, len);
        buf[len] = (unsigned char)x;
        stream_mutant(codec, x ? "a byte 1 appended" : "a byte 0 appended", buf, len + 1, N, acc0,
                      acc_cpu, acc_gpu);
        cases++;
    }
    stream_mutant(codec, "unchanged", memcpy(buf, orig, len), len, N, acc0, acc_cpu, acc_gpu);
    free(g); free(acc0); free(acc_cpu); free(acc_gpu); free(orig); free(buf);
    return cases + 1;
}

/* randk's indices, drawn on the device as the CPU's Floyd sampler draws
 * them: g[i] = i + 1 (exact floats), so the payload's values are its
 * indices; every n, ratio and seed below gives the CPU's payload, and the
 * GPU decodes it to the CPU's sums (the same indices drawn again).
 * Ratios from one element to all, with many repeated draws near 1. */
static int test_randk_draws(void)
{
    static const size_t ns[] = {1, 2, 3, 64, 1000, 4099, 70000};
    static const double ratios[] = {1e-9, 0.01, 0.3, 0.5, 0.97, 1.0};
    static const uint64_t seeds[] = {1, 0x9E3779B97F4A7C15ull, ~0ull};
    const gc_codec *c = gc_codec_by_name("randk");
    int cases = 0;
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
        const size_t n = ns[ni];
        float *g = malloc(n * sizeof *g), *acc_cpu = calloc(n, sizeof *acc_cpu);
        float *acc_gpu = malloc(n * sizeof *acc_gpu);
        for (size_t i = 0; i < n; i++) g[i] = (float)(i + 1);
        float *dg = dev_from(g, n * sizeof *g);
        for (size_t ri = 0; ri < sizeof ratios / sizeof *ratios; ri++)
            for (size_t si = 0; si < sizeof seeds / sizeof *seeds; si++) {
                gc_params p;
                gc_params_default(&p);
                p.ratio = ratios[ri];
                const size_t cap = gc_bound(c, n, &p);
                unsigned char *pc = malloc(cap), *pg = malloc(cap);
                const size_t lc = gc_encode(c, g, NULL, n, &p, seeds[si], pc, cap, NULL);
                const size_t lg = gcmpi_gpu_encode(ctx, c, dg, NULL, n, &p, seeds[si], pg, cap);
                CHECK(!gc_is_error(lc) && lg == lc && !memcmp(pc, pg, lc),
                      "randk n=%zu ratio=%g seed=%#llx: GPU indices differ from the CPU's (first "
                      "byte %zu)", n, ratios[ri], (unsigned long long)seeds[si],
                      lg == lc ? first_diff(pc, pg, lc) : (size_t)-1);
                memset(acc_cpu, 0, n * sizeof *acc_cpu);
                CHECK(!gc_is_error(gc_decode_add(pc, lc, acc_cpu, n, NULL)), "randk CPU decode");
                float *zero = calloc(n, sizeof *zero);
                float *dacc = dev_from(zero, n * sizeof *zero);
                const size_t e = gcmpi_gpu_decode_add(ctx, pc, lc, dacc, n);
                CHECK(!gc_is_error(e), "randk n=%zu ratio=%g: GPU decode: %s", n, ratios[ri],
                      gc_error_name(e));
                to_host(acc_gpu, dacc, n * sizeof *acc_gpu);
                CHECK(first_diff_f(acc_gpu, acc_cpu, n, 0) == n,
                      "randk n=%zu ratio=%g seed=%#llx: GPU decode scatters elsewhere", n,
                      ratios[ri], (unsigned long long)seeds[si]);
                gcmpi_gpu_dealloc(ctx, dacc);
                free(zero); free(pc); free(pg);
                cases++;
            }
        gcmpi_gpu_dealloc(ctx, dg);
        free(g); free(acc_cpu); free(acc_gpu);
    }
    return cases;
}

/* name is an item of the comma-separated list */
/* DGC's momentum correction (gcmpi_gpu_encode_momentum against
 * gc_encode_momentum): four calls on one u and v, the third an overflow
 * step (u and v must stay as they are), payload, u and v equal to the
 * CPU's byte for byte after each; other codecs are refused. */
static int momentum_case(const char *name, size_t n, int dst_dev, int mode)
{
    const gc_codec *c = gc_codec_by_name(name);
    gc_params p;
    gc_params_default(&p);
    p.ratio = 0.05;
    const size_t cap = gc_bound(c, n, &p), bytes = n * sizeof(float);
    float *g = malloc(bytes + 4), *u = calloc(n + 1, 4), *v = calloc(n + 1, 4);
    float *gu = malloc(bytes + 4), *gv = malloc(bytes + 4);
    uint8_t *want = malloc(cap), *got = malloc(cap);
    float *du = dev_from(u, bytes), *dv = dev_from(v, bytes), *dg = dev_from(u, bytes);
    uint8_t *ddst = dst_dev ? dev_from(want, cap) : NULL;
    for (int call = 0; call < 4; call++) {
        fill(g, n, mode);
        if (call == 2 && n > 7) g[7] = INFINITY;
        if (bytes && gc_is_error(gcmpi_gpu_copy(ctx, dg, g, bytes))) exit(1);
        const uint64_t seed = 7 + (uint64_t)call;
        const size_t lw = gc_encode_momentum(c, g, u, v, n, 0.9f, &p, seed, want, cap, NULL);
        const size_t lg = gcmpi_gpu_encode_momentum(ctx, c, dg, du, dv, n, 0.9f, &p, seed,
                                                    ddst ? (void *)ddst : got, cap);
        if (ddst && !gc_is_error(lg)) to_host(got, ddst, lg);
        to_host(gu, du, bytes);
        to_host(gv, dv, bytes);
        CHECK(lw == lg && !gc_is_error(lg), "momentum %s n=%zu call %d: length %zu, CPU %zu",
              name, n, call, lg, lw);
        if (lw == lg && !gc_is_error(lg))
            CHECK(first_diff(want, got, lw) == lw, "momentum %s n=%zu call %d: payload differs",
                  name, n, call);
        CHECK(first_diff_f(u, gu, n, 0) == n, "momentum %s n=%zu call %d: u differs at %zu", name,
              n, call, first_diff_f(u, gu, n, 0));
        CHECK(first_diff_f(v, gv, n, 0) == n, "momentum %s n=%zu call %d: v differs at %zu", name,
              n, call, first_diff_f(v, gv, n, 0));
    }
    gcmpi_gpu_dealloc(ctx, du);
    gcmpi_gpu_dealloc(ctx, dv);
    gcmpi_gpu_dealloc(ctx, dg);
    if (ddst) gcmpi_gpu_dealloc(ctx, ddst);
    free(g), free(u), free(v), free(gu), free(gv), free(want), free(got);
    return 4;
}

static int test_encode_momentum(size_t max_n)
{
    static const size_t sizes[] = {1000, 4099, (1u << 20) + 3};
    int cases = 0;
    static const char *const names[] = {"topk", "dgc", "randk", "topkq"};
    for (size_t ci = 0; ci < sizeof names / sizeof *names; ci++) {
        const char *name = names[ci];
        CHECK(gcmpi_gpu_encode_momentum_supports(gc_codec_by_name(name)),
              "%s: momentum encode not supported", name);
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes && sizes[si] <= max_n; si++) {
            cases += momentum_case(name, sizes[si], (int)(si & 1), FILL_RANDOM);
            cases += momentum_case(name, sizes[si], (int)(~si & 1), FILL_TIES);
        }
    }
    const gc_codec *int8 = gc_codec_by_name("int8");
    float x = 1.0f;
    uint8_t buf[256];
    CHECK(!gcmpi_gpu_encode_momentum_supports(int8), "int8: momentum encode supported");
    const size_t r = gcmpi_gpu_encode_momentum(ctx, int8, &x, &x, &x, 1, 0.9f, NULL, 0, buf,
                                               sizeof buf);
    CHECK(gc_is_error(r) && gc_error_code(r) == GC_ERR_UNSUPPORTED,
          "int8 momentum encode: expected GC_ERR_UNSUPPORTED");
    return cases;
}

static int same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* The adaptive layer's element passes (gpu_adapt.cu) against
 * codecs/adapt/, bit for bit, on random and special vectors. */
static int adapt_case(size_t n, int mode)
{
    const size_t bytes = n * sizeof(float);
    float *g = malloc(bytes + 4), *prev = malloc(bytes + 4), *want = malloc(bytes + 4);
    float *got = malloc(bytes + 4), *pw = malloc(bytes + 4);
    fill(g, n, mode);
    fill(prev, n, mode == FILL_SPECIAL ? FILL_RANDOM : mode);
    float *dg = dev_from(g, bytes), *dprev = dev_from(prev, bytes), *dout = dev_from(g, bytes);
    int cases = 0;

    /* EDGC's sample: gathered where gc_edgc_sample_index says. */
    static const double betas[] = {0.01, 0.3, 1.0};
    for (size_t bi = 0; bi < sizeof betas / sizeof *betas; bi++) {
        const uint64_t seed = 0x5eed0000u + bi;
        const size_t m = gc_edgc_sample_len(n, betas[bi]);
        for (size_t j = 0; j < m; j++) want[j] = g[gc_edgc_sample_index(n, betas[bi], seed, j)];
        const size_t r = gcmpi_gpu_adapt_sample(ctx, dg, n, m, seed, got);
        CHECK(!gc_is_error(r) && first_diff_f(want, got, m, 0) == m,
              "adapt sample n=%zu beta %g%s: differs at %zu of %zu", n, betas[bi],
              fill_name[mode], first_diff_f(want, got, m, 0), m);
        cases++;
    }

    /* GCT: two calls (the first has no previous gradient), both forms,
     * out of place and in place. */
    for (int alg2 = 0; alg2 < 2; alg2++) {
        const gc_gct_params gp = {.lambda = 0.3, .lr = 0.7, .eps = 1e-3, .decay = 0.5,
                                  .decay_every = 1, .alg2 = alg2};
        gc_gct_state cpu, dev;
        gc_gct_init(&cpu, &gp);
        gc_gct_init(&dev, &gp);
        for (int call = 0; call < 2; call++) {
            gc_gct_apply a;
            gc_gct_shape(&cpu, &gp, g, prev, want, n);
            gc_gct_step(&dev, &gp, 1, &a);
            size_t r = gcmpi_gpu_adapt_gct_shape(ctx, dg, dprev, n, a.with_prev, a.c, a.eps,
                                                 a.eq9, dout);
            to_host(got, dout, bytes);
            CHECK(!gc_is_error(r) && first_diff_f(want, got, n, 0) == n,
                  "adapt gct n=%zu alg2=%d call %d%s: differs at %zu", n, alg2, call,
                  fill_name[mode], first_diff_f(want, got, n, 0));
            if (bytes && gc_is_error(gcmpi_gpu_copy(ctx, dout, g, bytes))) exit(1);
            r = gcmpi_gpu_adapt_gct_shape(ctx, dout, dprev, n, a.with_prev, a.c, a.eps, a.eq9,
                                          dout);
            to_host(got, dout, bytes);
            CHECK(!gc_is_error(r) && first_diff_f(want, got, n, 0) == n,
                  "adapt gct in place n=%zu alg2=%d call %d%s: differs at %zu", n, alg2, call,
                  fill_name[mode], first_diff_f(want, got, n, 0));
            cases += 2;
        }
    }

    /* The remembered mean, and the variance sums (prev becomes the mean). */
    memcpy(pw, prev, bytes);
    gc_gct_remember(g, n, 3, pw);
    size_t r = gcmpi_gpu_adapt_remember(ctx, dg, n, 3, dout);
    to_host(got, dout, bytes);
    CHECK(!gc_is_error(r) && first_diff_f(pw, got, n, 1) == n,
          "adapt remember n=%zu%s: differs at %zu", n, fill_name[mode],
          first_diff_f(pw, got, n, 1));
    memcpy(pw, prev, bytes);
    double moved = -1, norm = -1, dmoved = -2, dnorm = -2;
    gc_var_moves(g, n, 3, pw, &moved, &norm);
    r = gcmpi_gpu_adapt_var_moves(ctx, dg, n, 3, dprev, &dmoved, &dnorm);
    to_host(got, dprev, bytes);
    CHECK(!gc_is_error(r) && same_double(moved, dmoved) && same_double(norm, dnorm),
          "adapt var n=%zu%s: moved %.17g norm %.17g, CPU %.17g %.17g", n, fill_name[mode],
          dmoved, dnorm, moved, norm);
    CHECK(first_diff_f(pw, got, n, 1) == n, "adapt var n=%zu%s: mean differs at %zu", n,
          fill_name[mode], first_diff_f(pw, got, n, 1));
    cases += 2;

    gcmpi_gpu_dealloc(ctx, dg);
    gcmpi_gpu_dealloc(ctx, dprev);
    gcmpi_gpu_dealloc(ctx, dout);
    free(g), free(prev), free(want), free(got), free(pw);
    return cases;
}

static int test_adapt(size_t max_n)
{
    /* sizes across GC_VAR_CHUNK and GC_VAR_LANES boundaries */
    static const size_t sizes[] = {0, 1, 7, 33, 1000, 2 * GC_VAR_CHUNK + 33, (1u << 20) + 3};
    int cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes && sizes[si] <= max_n; si++)
        cases += adapt_case(sizes[si], FILL_RANDOM);
    cases += adapt_case(1000, FILL_SPECIAL);
    cases += adapt_case(5000, FILL_SPECIAL);
    return cases;
}

/* topkq with a width policy (the adaptive layer's bitctl) on the context
 * against the CPU encoder with the same policy on a workspace: over five
 * calls on one residual, payloads, residuals and the two controllers'
 * learnt states equal byte for byte (choose and observe saw the same
 * statistics and error energies, in the same order). */
static int policy_case(size_t n, int mode, size_t bucket, int dst_dev)
{
    const gc_codec *c = gc_codec_by_name("topkq");
    gc_params p;
    gc_params_default(&p);
    p.ratio = 0.3;
    p.bucket = bucket;
    gc_adapt_config acfg;
    gc_adapt_config_default(&acfg);
    acfg.var.target = 0.01;
    gc_bitctl cpu_ctl, gpu_ctl;
    gc_bitctl_init(&cpu_ctl, &acfg.var);
    gc_bitctl_init(&gpu_ctl, &acfg.var);
    const gc_width_policy cpu_pol = gc_bitctl_policy(&cpu_ctl), gpu_pol = gc_bitctl_policy(&gpu_ctl);
    gc_workspace *ws = gc_workspace_create();
    if (!ws) exit(1);
    gc_workspace_set_width_policy(ws, &cpu_pol);
    gcmpi_gpu_set_width_policy(ctx, &gpu_pol);
    const size_t cap = gc_bound(c, n, &p), bytes = n * sizeof(float);
    float *g = malloc(bytes + 4), *r = calloc(n + 1, 4), *gr = malloc(bytes + 4);
    uint8_t *want = malloc(cap), *got = malloc(cap);
    float *dg = dev_from(r, bytes), *dr = dev_from(r, bytes);
    uint8_t *ddst = dst_dev ? dev_from(want, cap) : NULL;
    for (int call = 0; call < 5; call++) {
        fill(g, n, mode);
        if (bytes && gc_is_error(gcmpi_gpu_copy(ctx, dg, g, bytes))) exit(1);
        const size_t lw = gc_encode(c, g, r, n, &p, 9, want, cap, ws);
        const size_t lg = gcmpi_gpu_encode(ctx, c, dg, dr, n, &p, 9, ddst ? (void *)ddst : got, cap);
        if (ddst && !gc_is_error(lg)) to_host(got, ddst, lg);
        to_host(gr, dr, bytes);
        CHECK(lw == lg && !gc_is_error(lg), "topkq policy n=%zu bucket %zu call %d%s: length %zu, CPU %zu",
              n, bucket, call, fill_name[mode], lg, lw);
        if (lw == lg && !gc_is_error(lg))
            CHECK(first_diff(want, got, lw) == lw,
                  "topkq policy n=%zu bucket %zu call %d%s: payload differs at byte %zu", n,
                  bucket, call, fill_name[mode], first_diff(want, got, lw));
        CHECK(first_diff_f(r, gr, n, 1) == n,
              "topkq policy n=%zu bucket %zu call %d%s: residual differs at %zu", n, bucket, call,
              fill_name[mode], first_diff_f(r, gr, n, 1));
        CHECK(memcmp(&cpu_ctl, &gpu_ctl, sizeof cpu_ctl) == 0,
              "topkq policy n=%zu bucket %zu call %d%s: the controllers learnt differently", n,
              bucket, call, fill_name[mode]);
    }
    /* More than one width was chosen, or the test says little (an input
     * with inf or NaN is sent as it is, without the policy). */
    CHECK(n < 1000 || mode == FILL_SPECIAL ||
              cpu_ctl.chosen_bits != cpu_ctl.chosen_buckets * acfg.var.widths[0],
          "topkq policy n=%zu: every bucket at the narrowest width (%llu bits, %llu buckets)", n, (unsigned long long)cpu_ctl.chosen_bits, (unsigned long long)cpu_ctl.chosen_buckets);
    gcmpi_gpu_set_width_policy(ctx, NULL);
    gcmpi_gpu_dealloc(ctx, dg);
    gcmpi_gpu_dealloc(ctx, dr);
    if (ddst) gcmpi_gpu_dealloc(ctx, ddst);
    gc_workspace_free(ws);
    free(g), free(r), free(gr), free(want), free(got);
    return 5;
}

static int test_topkq_policy(size_t max_n)
{
    static const size_t sizes[] = {1, 7, 1000, 4099, (1u << 20) + 3};
    int cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes && sizes[si] <= max_n; si++) {
        cases += policy_case(sizes[si], FILL_RANDOM, 64, (int)(si & 1));
        cases += policy_case(sizes[si], FILL_TIES, 17, (int)(~si & 1));
    }
    cases += policy_case(5000, FILL_SPECIAL, 64, 1);
    return cases;
}

static int listed(const char *list, const char *name)
{
    const size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        const size_t l = end ? (size_t)(end - p) : strlen(p);
        if (l == len && !strncmp(p, name, len)) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

int main(void)
{
    if (gcmpi_gpu_device_count() == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    ctx = gcmpi_gpu_create();
    if (!ctx) {
        fprintf(stderr, "FAIL: a CUDA device is present but gcmpi_gpu_create failed\n");
        return 1;
    }
    /* GCMPI_GPU_TEST_MAX_N: skip larger sizes (tests/gpu/emu runs on the
     * host, where 2^20 elements are slow). */
    const char *max_env = getenv("GCMPI_GPU_TEST_MAX_N");
    const size_t max_n = max_env ? (size_t)strtoull(max_env, NULL, 10) : (size_t)-1;
    static const size_t sizes[] = {0, 1, 7, 1000, 4099, (1u << 20) + 3};
    /* GCMPI_GPU_TEST_CODECS=a,b: only those codecs (while iterating). */
    const char *only = getenv("GCMPI_GPU_TEST_CODECS");
    int cases = 0;
    for (size_t vi = 0; vi < sizeof variants / sizeof *variants; vi++) {
        const variant *v = &variants[vi];
        if (only && !listed(only, v->codec)) continue;
        gc_params p;
        gc_params_default(&p);
        if (v->bucket) p.bucket = v->bucket;
        if (v->ratio > 0) p.ratio = v->ratio;
        if (v->bits) p.bits = v->bits;
        if (v->tolerance >= 0) p.dgc_tolerance = v->tolerance;
        p.flags |= v->flags;
        if (v->rank) p.rank = v->rank;
        if (v->eg_fixed) {
            p.eg_n = 6;
            p.eg_k = 2;
        }
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes && sizes[si] <= max_n; si++)
            for (int ef = 0; ef < 2; ef++) {
                const int dst_dev = (int)((si + (size_t)ef) & 1), crc = (int)(si & 1);
                run_case(v->codec, &p, sizes[si], ef, dst_dev, crc, FILL_RANDOM);
                cases++;
                if (!v->more_fills || sizes[si] < 1000) continue;
                run_case(v->codec, &p, sizes[si], ef, !dst_dev, crc, FILL_TIES);
                run_case(v->codec, &p, sizes[si], ef, dst_dev, !crc, FILL_ZERO);
                cases += 2;
            }
        for (int ef = 0; ef < 2; ef++) {
            run_case(v->codec, &p, 1000, ef, ef, 1, FILL_SPECIAL);
            run_case(v->codec, &p, 5000, ef, !ef, 0, FILL_SPECIAL);
            cases += 2;
        }
    }
    /* Full one-pass tiles of the dense quantisers (gpu_bucket.cuh: 8192
     * floats moved in 16-byte loads) at the default bucket and at the
     * longest a tile takes (2048: four buckets a tile, most lane groups
     * idle while the statistic is formed), at a size the emulation runs
     * too: two full tiles and a short one. */
    static const char *const tiled[] = {"int8", "sign", "qsgd", "terngrad", "onebit", "natural"};
    for (size_t ti = 0; ti < sizeof tiled / sizeof *tiled; ti++) {
        if (only && !listed(only, tiled[ti])) continue;
        gc_params p;
        gc_params_default(&p);
        for (int ef = 0; ef < 2; ef++) {
            p.bucket = 512;
            run_case(tiled[ti], &p, 2 * 8192 + 5, ef, ef, 0, FILL_RANDOM);
            run_case(tiled[ti], &p, 2 * 8192 + 5, ef, !ef, 1, FILL_SPECIAL);
            p.bucket = 2048;
            run_case(tiled[ti], &p, 2 * 8192 + 5, ef, !ef, 0, FILL_RANDOM);
            cases += 3;
        }
    }
    /* top-k's one-pass path (a sampled threshold; vectors of at least
     * 65536 elements keeping at most 1/16, 0.06 near that bound): taken
     * with random and stepped values, given up for the full selection
     * with ties, zeros and a sample that sees only large values; a tail
     * that is not a whole tile. Run whatever GCMPI_GPU_TEST_MAX_N says. */
    static const struct { const char *codec; double ratio; } sampled[] = {
        {"topk", 0.01}, {"topk", 0.06}, {"dgc", 0.01}, {"topkq", 0.01}};
    static const int sampled_fills[] = {FILL_RANDOM, FILL_STEPS, FILL_TIES, FILL_ZERO, FILL_SAMPLED};
    for (size_t ci = 0; ci < sizeof sampled / sizeof *sampled; ci++) {
        if (only && !listed(only, sampled[ci].codec)) continue;
        gc_params p;
        gc_params_default(&p);
        p.ratio = sampled[ci].ratio;
        if (!strcmp(sampled[ci].codec, "dgc")) p.dgc_tolerance = 0.0;  /* the exact top-k */
        for (size_t fi = 0; fi < sizeof sampled_fills / sizeof *sampled_fills; fi++) {
            const int ef = (int)(fi & 1);
            run_case(sampled[ci].codec, &p, 70001, ef, ef, 0, sampled_fills[fi]);
            cases++;
        }
        run_case(sampled[ci].codec, &p, (1u << 17) + 5, 1, 0, 1, FILL_RANDOM);
        cases++;
    }
    if (!only || listed(only, "topk") || listed(only, "dgc") || listed(only, "randk") ||
        listed(only, "topkq"))
        cases += test_encode_momentum(max_n);
    if (!only || listed(only, "adapt")) cases += test_adapt(max_n);
    if (!only || listed(only, "topkq")) cases += test_topkq_policy(max_n);
    if (!only || listed(only, "randk")) cases += test_randk_draws();
    if (!only || listed(only, "eg")) {
        gc_params p;
        gc_params_default(&p);
        cases += test_stream_bodies("eg", &p, max_n);
    }
    if (!only || listed(only, "qsgd")) {
        gc_params p;
        gc_params_default(&p);
        p.flags |= GC_PF_QSGD_ELIAS;
        for (p.bits = 2; p.bits <= 8; p.bits += 3) cases += test_stream_bodies("qsgd", &p, max_n);
    }
    test_errors();
    gcmpi_gpu_destroy(ctx);
    if (failures) {
        fprintf(stderr, "%d check(s) failed over %d cases\n", failures, cases);
        return 1;
    }
    printf("OK: %d cases, GPU payloads, residuals and decodes equal the CPU's\n", cases);
    return 0;
}
