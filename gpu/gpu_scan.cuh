/* gpu_scan.cuh — exclusive prefix sums on the device, the step that turns
 * per-segment counts (selected elements, bytes of a block of the body)
 * into output positions. */
#ifndef GPU_SCAN_CUH
#define GPU_SCAN_CUH

#include "gpu_internal.cuh"

/* x[0..m) = its exclusive prefix sums, in place; *total (device, may be
 * NULL) = the sum of all. Queued on the context's stream. */
void gpu_scan_u64(gcmpi_gpu_ctx *ctx, uint64_t *x, size_t m, uint64_t *total);

#endif
