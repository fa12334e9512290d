/* gpu_scan.cuh — exclusive prefix sums on the device, the step that turns
 * per-segment counts (selected elements, bytes of a block of the body)
 * into output positions. */
#ifndef GPU_SCAN_CUH
#define GPU_SCAN_CUH

#include "gpu_internal.cuh"

/* x[0..m) = its exclusive prefix sums, in place; *total (device, may be
 * NULL) = the sum of all. Queued on the context's stream. */
void gpu_scan_u64(gcmpi_gpu_ctx *ctx, uint64_t *x, size_t m, uint64_t *total);

/* Inclusive prefix sum of x over the block's threads through buf
 * (blockDim.x entries of shared memory); every thread must call it, and
 * buf[blockDim.x - 1] holds the block's total until buf is reused. */
__device__ static inline uint64_t gpu_block_inclusive_sum(uint64_t x, uint64_t *buf)
{
    const unsigned t = threadIdx.x;
    buf[t] = x;
    __syncthreads();
    for (unsigned d = 1; d < blockDim.x; d <<= 1) {
        const uint64_t y = t >= d ? buf[t - d] : 0;
        __syncthreads();
        buf[t] += y;
        __syncthreads();
    }
    const uint64_t r = buf[t];
    __syncthreads(); /* buf may be reused at once */
    return r;
}

#endif
