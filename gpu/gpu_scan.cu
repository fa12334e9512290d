/* gpu_scan.cu — exclusive prefix sums (gpu_scan.cuh). One block: each
 * thread sums a contiguous slice, thread 0 scans the slice totals, then
 * every thread writes its slice's prefixes. The arrays scanned hold one
 * entry per segment of elements (tens of thousands for 2^20 elements),
 * so one block is enough and needs no grid-wide synchronisation. */
#include "gpu_scan.cuh"

#define SCAN_THREADS 256

__global__ void k_scan_u64_sync(uint64_t *x, size_t m, uint64_t *total)
{
    __shared__ uint64_t part[SCAN_THREADS];
    const size_t per = (m + blockDim.x - 1) / blockDim.x;
    const size_t lo = threadIdx.x * per < m ? threadIdx.x * per : m;
    const size_t hi = lo + per < m ? lo + per : m;
    uint64_t sum = 0;
    for (size_t i = lo; i < hi; i++) sum += x[i];
    part[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint64_t run = 0;
        for (unsigned t = 0; t < blockDim.x; t++) {
            uint64_t u = part[t];
            part[t] = run;
            run += u;
        }
        if (total) *total = run;
    }
    __syncthreads();
    uint64_t run = part[threadIdx.x];
    for (size_t i = lo; i < hi; i++) {
        uint64_t u = x[i];
        x[i] = run;
        run += u;
    }
}

void gpu_scan_u64(gcmpi_gpu_ctx *ctx, uint64_t *x, size_t m, uint64_t *total)
{
    k_scan_u64_sync<<<1, SCAN_THREADS, 0, ctx->stream>>>(x, m, total);
}
