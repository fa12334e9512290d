/* codec_bench_device.c — the device part of gcmpi-codec-bench
 * (codec_bench_device.h). Built with the CUDA codecs when meson found
 * nvcc; without them (GCMPI_BENCH_CUDA undefined) --device cuda says so.
 *
 * Figures are GB/s of input (4 n bytes) per call, best of reps, and the
 * ratio to a device-to-device copy of the same 4 n bytes timed in the same
 * run. Every gcmpi_gpu_* call is synchronous, so host wall time brackets
 * the device work; the encode writes its payload to device memory, the
 * decode reads a host payload (the MPI path without CUDA-aware MPI). */
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
    double enc_s, dec_s;   /* best seconds per call */
    size_t bytes;          /* payload bytes */
    char error[160];
} dev_result;

static dev_result bench_one(gcmpi_gpu_ctx *ctx, const gc_codec *c, const float *dg, float *dr,
                            float *dacc, const float *r0, size_t n, const gc_params *p, bool ef,
                            unsigned reps, uint64_t seed)
{
    dev_result res = {1e30, 1e30, 0, ""};
    size_t cap = gc_bound(c, n, p);
    void *dpay = gc_is_error(cap) ? NULL : gcmpi_gpu_alloc(ctx, cap);
    unsigned char *hpay = gc_is_error(cap) ? NULL : malloc(cap);
    if (!dpay || !hpay) {
        snprintf(res.error, sizeof res.error, "no room for a %zu-byte payload", cap);
        goto out;
    }
    for (unsigned i = 0; i < reps; i++) {
        if (ef && gc_is_error(gcmpi_gpu_copy(ctx, dr, r0, n * sizeof(float)))) {
            snprintf(res.error, sizeof res.error, "residual reset failed");
            goto out;
        }
        double t = now();
        size_t l = gcmpi_gpu_encode(ctx, c, dg, ef ? dr : NULL, n, p, seed + i, dpay, cap);
        t = now() - t;
        if (gc_is_error(l)) {
            snprintf(res.error, sizeof res.error, "encode: %s", gc_error_name(l));
            goto out;
        }
        res.bytes = l;
        if (t < res.enc_s) res.enc_s = t;
    }
    if (gc_is_error(gcmpi_gpu_copy(ctx, hpay, dpay, res.bytes))) {
        snprintf(res.error, sizeof res.error, "payload copy failed");
        goto out;
    }
    for (unsigned i = 0; i < reps; i++) {
        double t = now();
        size_t e = gcmpi_gpu_decode_add(ctx, hpay, res.bytes, dacc, n);
        t = now() - t;
        if (gc_is_error(e)) {
            snprintf(res.error, sizeof res.error, "decode_add: %s", gc_error_name(e));
            goto out;
        }
        if (t < res.dec_s) res.dec_s = t;
    }
out:
    gcmpi_gpu_dealloc(ctx, dpay);
    free(hpay);
    return res;
}

int codec_bench_device(const gc_codec *const *codecs, size_t count, const float *g, size_t n,
                       const gc_params *p, bool ef, unsigned reps, uint64_t seed, bool json)
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
        printf("device: CUDA, %zu elements (%.1f MiB), reps %u%s; "
               "device-to-device copy %.1f GB/s\n",
               n, (double)bytes / 1048576.0, reps, ef ? ", error feedback" : "", gb / copy_s);
        printf("%-10s %10s %12s %10s %12s %10s\n", "codec", "bits/elem", "enc GB/s",
               "enc/copy", "dec GB/s", "dec/copy");
    }
    for (size_t i = 0; i < count; i++) {
        dev_result r = bench_one(ctx, codecs[i], dg, dr, dacc, r0, n, p, ef, reps, seed);
        const char *name = gc_codec_name(codecs[i]);
        if (r.error[0]) {
            fprintf(stderr, "gcmpi-codec-bench: %s on the device: %s\n", name, r.error);
            failed++;
            continue;
        }
        const double bpe = n ? 8.0 * (double)r.bytes / (double)n : 0.0;
        if (json)
            printf("  {\"codec\": \"%s\", \"device\": \"cuda\", \"n\": %zu, \"bits_per_element\": %.4f, "
                   "\"encode_gbps\": %.3f, \"decode_gbps\": %.3f, \"copy_gbps\": %.3f, "
                   "\"encode_vs_copy\": %.4f, \"decode_vs_copy\": %.4f}%s\n",
                   name, n, bpe, gb / r.enc_s, gb / r.dec_s, gb / copy_s, copy_s / r.enc_s,
                   copy_s / r.dec_s, i + 1 < count ? "," : "");
        else
            printf("%-10s %10.3f %12.2f %10.3f %12.2f %10.3f\n", name, bpe, gb / r.enc_s,
                   copy_s / r.enc_s, gb / r.dec_s, copy_s / r.dec_s);
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
                       const gc_params *p, bool ef, unsigned reps, uint64_t seed, bool json)
{
    (void)codecs; (void)count; (void)g; (void)n; (void)p; (void)ef; (void)reps; (void)seed;
    (void)json;
    fprintf(stderr, "gcmpi-codec-bench: --device cuda: this build has no CUDA codecs "
                    "(configure with -Dcuda=enabled where nvcc is installed)\n");
    return -1;
}

#endif
