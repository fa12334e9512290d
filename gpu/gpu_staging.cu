/* gpu_staging.cu — host-side helpers the shim's device path needs beside
 * the codec kernels (gcmpi_gpu.h, "staging for the shim"): page-locked
 * host memory and device zeroing. Kept apart from the codec files so the
 * two grow independently; like them it only uses the CUDA runtime. */
#include "gcmpi_gpu.h"

#include <cuda_runtime.h>

#define GC_ERR(e) ((size_t) - (ptrdiff_t)(GC_ERR_##e))

extern "C" void *gcmpi_gpu_host_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

extern "C" void gcmpi_gpu_host_free(void *p)
{
    if (p && cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

/* The context's stream is private to gcmpi_gpu.cu: zero on the legacy
 * default stream, which the context's blocking stream waits for, and wait
 * here so the memory is zero when this returns. */
extern "C" size_t gcmpi_gpu_zero(gcmpi_gpu_ctx *ctx, void *p, size_t bytes)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (bytes == 0) return 0;
    if (cudaMemsetAsync(p, 0, bytes, 0) != cudaSuccess || cudaStreamSynchronize(0) != cudaSuccess) {
        (void)cudaGetLastError();
        return GC_ERR(GENERIC);
    }
    return 0;
}
