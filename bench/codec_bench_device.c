/* codec_bench_device.c — the device part of gcmpi-codec-bench
 * (codec_bench_device.h). Built with the CUDA codecs when meson found
 * nvcc; without them (GCMPI_BENCH_CUDA undefined) --device cuda says so.
 *
 * Figures are GB/s of input (4 n bytes) per call, best of reps, and the
 * ratio to a device-to-device copy of the same 4 n bytes timed in the same
 * run. Every gcmpi_gpu_* call is synchronous, so host wall time brackets
 * the device work. Per codec:
 *   encode      no residual, payload written to device memory
 *   encode ef   with a device residual (reset before each rep, untimed)
 *   decode      decode_add of the payload in device memory: the kernels'
 *               rate, the figure to hold against the copy
 *   decode host decode_add of the payload in page-locked host memory
 *               (cudaHostAlloc): what the shim pays without CUDA-aware MPI,
 *               the host-to-device copy of the body included */
#include "codec_bench_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GCMPI_BENCH_CUDA
#include "gcmpi_gpu.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct dev_result {
    double enc_s, enc_ef_s, dec_s, dec_host_s;   /* best seconds per call */
    size_t bytes;                                /* payload bytes */
    char error[160];
} dev_result;

/* Best seconds of reps encodes (with the residual dr when ef); res->bytes
 * is the payload's length. 0 or -1 with res->error set. */
static int time_encode(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *dg, float *dr,
                       const float *r0, size_t n, const gc_params *p, bool ef, unsigned reps,
                       uint64_t seed, void *dpay, size_t cap, double *best, dev_result *res)
{
    for (unsigned i = 0; i < reps; i++) {
        if (ef && gc_is_error(gcmpi_gpu_copy(ctx, dr, r0, n * sizeof(float)))) {
            snprintf(res->error, sizeof res->error, "residual reset failed");
            return -1;
        }
        double t = now();
        size_t l = gcmpi_gpu_encode(ctx, c, dg, ef ? dr : NULL, n, p, seed + i, dpay, cap);
        t = now() - t;
        if (gc_is_error(l)) {
            snprintf(res->error, sizeof res->error, "encode%s: %s", ef ? " (ef)" : "",
                     gc_error_name(l));
            return -1;
        }
        res->bytes = l;
        if (t < *best) *best = t;
    }
    return 0;
}

/* Best seconds of reps decode_adds of pay[0..len) (device or host). */
static int time_decode(gcmpi_gpu_ctx *ctx, const void *pay, size_t len, float *dacc, size_t n,
                       unsigned reps, double *best, dev_result *res)
{
    for (unsigned i = 0; i < reps; i++) {
        double t = now();
        size_t e = gcmpi_gpu_decode_add(ctx, pay, len, dacc, n);
        t = now() - t;
        if (gc_is_error(e)) {
            snprintf(res->error, sizeof res->error, "decode_add: %s", gc_error_name(e));
            return -1;
        }
        if (t < *best) *best = t;
    }
    return 0;
}

static dev_result bench_one(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *dg, float *dr,
                            float *dacc, const float *r0, size_t n, const gc_params *p,
                            unsigned reps, uint64_t seed)
{
    dev_result res = {1e30, 1e30, 1e30, 1e30, 0, ""};
    size_t cap = gc_bound(c, n, p);
    void *dpay = gc_is_error(cap) ? NULL : gcmpi_gpu_alloc(ctx, cap);
    unsigned char *hpay = gc_is_error(cap) ? NULL : gcmpi_gpu_host_alloc(cap);
    if (!dpay || !hpay) {
        snprintf(res.error, sizeof res.error, "no room for a %zu-byte payload", cap);
        goto out;
    }
    /* The residual run first, so the payload decoded below is the plain one. */
    if (time_encode(ctx, c, dg, dr, r0, n, p, true, reps, seed, dpay, cap, &res.enc_ef_s, &res)
        || time_encode(ctx, c, dg, dr, r0, n, p, false, reps, seed, dpay, cap, &res.enc_s, &res))
        goto out;
    if (gc_is_error(gcmpi_gpu_copy(ctx, hpay, dpay, res.bytes))) {
        snprintf(res.error, sizeof res.error, "payload copy failed");
        goto out;
    }
    if (time_decode(ctx, dpay, res.bytes, dacc, n, reps, &res.dec_s, &res)
        || time_decode(ctx, hpay, res.bytes, dacc, n, reps, &res.dec_host_s, &res))
        goto out;
out:
    gcmpi_gpu_dealloc(ctx, dpay);
    gcmpi_gpu_host_free(hpay);
    return res;
}

int codec_bench_device(const gc_codec *const *codecs, size_t count, const float *g, size_t n,
                       const gc_params *p, unsigned reps, uint64_t seed, bool json)
{
    gcmpi_gpu_ctx *ctx = gcmpi_gpu_device_count() > 0 ? gcmpi_gpu_create() : NULL;
    if (!ctx) {
        fprintf(stderr, "gcmpi-codec-bench: --device cuda: no usable CUDA device\n");
        return -1;
    }
    const size_t bytes = n * sizeof(float);
    float *dg = gcmpi_gpu_alloc(ctx, bytes), *dr = gcmpi_gpu_alloc(ctx, bytes);
    float *dacc = gcmpi_gpu_alloc(ctx, bytes), *dcopy = gcmpi_gpu_alloc(ctx, bytes);
    float *r0 = calloc(n ? n : 1, sizeof(float));
    int failed = 0;
    if (!dg || !dr || !dacc || !dcopy || !r0 || gc_is_error(gcmpi_gpu_copy(ctx, dg, g, bytes))
        || gc_is_error(gcmpi_gpu_copy(ctx, dacc, r0, bytes))) {
        fprintf(stderr, "gcmpi-codec-bench: --device cuda: out of device memory for %zu bytes\n",
                bytes);
        failed = -1;
        goto out;
    }
    double copy_s = 1e30;
    for (unsigned i = 0; i < reps; i++) {
        double t = now();
        size_t e = gcmpi_gpu_copy(ctx, dcopy, dg, bytes);
        t = now() - t;
        if (!gc_is_error(e) && t < copy_s) copy_s = t;
    }
    const double gb = (double)bytes / 1e9;
    if (json) printf("[\n");
    else {
        printf("device: CUDA, %zu elements (%.1f MiB), reps %u; device-to-device copy %.1f GB/s%s\n"
               "enc: no residual; enc ef: with a residual; payload in device memory. dec: payload "
               "in device memory; dec host: in page-locked host memory (PCIe copy included)\n",
               n, (double)bytes / 1048576.0, reps, gb / copy_s,
               (p->flags & GC_PF_QSGD_ELIAS) ? "; qsgd: Elias coding" : "");
        printf("%-10s %9s %9s %8s %9s %8s %9s %8s %9s %8s\n", "codec", "bits/elem", "enc GB/s",
               "enc/copy", "ef GB/s", "ef/copy", "dec GB/s", "dec/copy", "host GB/s", "host/cp");
    }
    for (size_t i = 0; i < count; i++) {
        dev_result r = bench_one(ctx, codecs[i], dg, dr, dacc, r0, n, p, reps, seed);
        const char *name = gc_codec_name(codecs[i]);
        if (r.error[0]) {
            fprintf(stderr, "gcmpi-codec-bench: %s on the device: %s\n", name, r.error);
            failed++;
            continue;
        }
        const double bpe = n ? 8.0 * (double)r.bytes / (double)n : 0.0;
        if (json)
            printf("  {\"codec\": \"%s\", \"device\": \"cuda\", \"n\": %zu, \"bits_per_element\": %.4f, "
                   "\"copy_gbps\": %.3f, \"encode_gbps\": %.3f, \"encode_vs_copy\": %.4f, "
                   "\"encode_ef_gbps\": %.3f, \"encode_ef_vs_copy\": %.4f, "
                   "\"decode_gbps\": %.3f, \"decode_vs_copy\": %.4f, "
                   "\"decode_host_gbps\": %.3f, \"decode_host_vs_copy\": %.4f}%s\n",
                   name, n, bpe, gb / copy_s, gb / r.enc_s, copy_s / r.enc_s, gb / r.enc_ef_s,
                   copy_s / r.enc_ef_s, gb / r.dec_s, copy_s / r.dec_s, gb / r.dec_host_s,
                   copy_s / r.dec_host_s, i + 1 < count ? "," : "");
        else
            printf("%-10s %9.3f %9.2f %8.3f %9.2f %8.3f %9.2f %8.3f %9.2f %8.3f\n", name, bpe,
                   gb / r.enc_s, copy_s / r.enc_s, gb / r.enc_ef_s, copy_s / r.enc_ef_s,
                   gb / r.dec_s, copy_s / r.dec_s, gb / r.dec_host_s, copy_s / r.dec_host_s);
    }
    if (json) printf("]\n");
out:
    gcmpi_gpu_dealloc(ctx, dg);
    gcmpi_gpu_dealloc(ctx, dr);
    gcmpi_gpu_dealloc(ctx, dacc);
    gcmpi_gpu_dealloc(ctx, dcopy);
    free(r0);
    gcmpi_gpu_destroy(ctx);
    return failed;
}

#else /* no CUDA in this build */

int codec_bench_device(const gc_codec *const *codecs, size_t count, const float *g, size_t n,
                       const gc_params *p, unsigned reps, uint64_t seed, bool json)
{
    (void)codecs; (void)count; (void)g; (void)n; (void)p; (void)reps; (void)seed;
    (void)json;
    fprintf(stderr, "gcmpi-codec-bench: --device cuda: this build has no CUDA codecs "
                    "(configure with -Dcuda=enabled where nvcc is installed)\n");
    return -1;
}

#endif
