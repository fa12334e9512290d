/* gpu_stream.cu — the verdict over a sync-pointed stream's segments
 * (gpu_stream.cuh). */
#include "gpu_stream.cuh"

#define VERDICT_THREADS 256u

/* One block: each thread finds the first failing segment of its stride
 * (segment << 2 | error), the block the smallest; thread 0 writes it, or
 * the end's checks. */
__global__ void k_stream_verdict_sync(gpu_stream s, const uint8_t *sync, const uint64_t *end,
                                      const unsigned *status, size_t nseg, unsigned *verdict)
{
    __shared__ uint64_t first[VERDICT_THREADS];
    uint64_t mine = ~0ull;
    for (size_t sg = threadIdx.x; sg < nseg; sg += blockDim.x) {
        unsigned e = status[sg];
        if (e == STREAM_OK && sg + 1 < nseg && end[sg] != stream_sync_point(sync, sg + 1))
            e = STREAM_CORRUPT;
        if (e != STREAM_OK) {
            mine = (uint64_t)sg << 2 | e;
            break;
        }
    }
    first[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h && first[threadIdx.x + h] < first[threadIdx.x])
            first[threadIdx.x] = first[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x != 0) return;
    if (first[0] != ~0ull) {
        *verdict = (unsigned)(first[0] & 3u);
        return;
    }
    const uint64_t used = end[nseg - 1], slen = s.avail / 8;
    unsigned v = STREAM_OK;
    if (used > s.avail) v = STREAM_TRUNCATED;
    else if ((used + 7) / 8 != slen) v = STREAM_CORRUPT;
    else if ((used & 7u) && (stream_peek(&s, used & ~(uint64_t)7) & 0xFFu) >> (used & 7u))
        v = STREAM_CORRUPT;
    *verdict = v;
}

void gpu_stream_verdict(gcmpi_gpu_ctx *ctx, const gpu_stream *s, const uint8_t *sync,
                        const uint64_t *end, const unsigned *status, size_t nseg,
                        unsigned *verdict)
{
    k_stream_verdict_sync<<<1, VERDICT_THREADS, 0, ctx->stream>>>(*s, sync, end, status, nseg,
                                                                 verdict);
}

size_t gpu_stream_result(gcmpi_gpu_ctx *ctx, const unsigned *verdict)
{
    unsigned v = STREAM_OK;
    const size_t r = fetch(ctx, &v, verdict, sizeof v);
    if (gc_is_error(r)) return r;
    return v == STREAM_OK ? 0 : v == STREAM_TRUNCATED ? GC_ERR(TRUNCATED) : GC_ERR(CORRUPT);
}
