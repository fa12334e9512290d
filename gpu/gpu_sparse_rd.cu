/* gpu_sparse_rd.cu — the sparse recursive-doubling allreduce's two steps on
 * device vectors (pmpi/coll_sparse_rd.c, gcmpi_gpu.h "sparse_rd"): this
 * rank's decoded vector as a set of its non-zero entries, and the summed
 * set back into the device output. The rounds between them merge sets the
 * MPI library moves, on the host; only the k entries cross (n floats where
 * the set is dense). */
#include "gpu_select.cuh"

/* vals[j] = bits of d[idx[j]]. */
__global__ void k_sparse_rd_gather(const float *d, const uint32_t *idx, size_t m, uint32_t *vals)
{
    GRID_STRIDE(j, m) vals[j] = __float_as_uint(d[idx[j]]);
}

/* out[idx[j]] = 0 + vals[j] on a zeroed out: the host's scatter onto zeros
 * (set_to_dense), an addition so the bits match it for every value. */
__global__ void k_sparse_rd_scatter(const uint32_t *units, size_t m, float *out)
{
    GRID_STRIDE(j, m) out[units[j]] += __uint_as_float(units[m + j]);
}

extern "C" size_t gcmpi_gpu_sparse_rd_set(gcmpi_gpu_ctx *ctx, const float *d, size_t n,
                                          uint32_t *units, size_t cap)
{
    if (!ctx || n > UINT32_MAX) return GC_ERR(GENERIC);
    if (n == 0) return 0;
    if (cap > n) cap = n;
    scratch s;
    memset(&s, 0, sizeof s);
    size_t e = 0, m = 0;
    /* key 0, no ties: every element whose magnitude bits are not 0, so
     * +0 and -0 are left out and NaN is kept, as d[i] != 0.0f on the host */
    gpu_sel *sel = (gpu_sel *)scratch_get(ctx, &s, sizeof(gpu_sel));
    uint32_t *d_units = sel ? (uint32_t *)scratch_get(ctx, &s, (2 * cap + 1) * sizeof(uint32_t))
                            : NULL;
    if (!d_units) e = GC_ERR(ALLOC);
    queue_zero(ctx, sel, sizeof *sel, &e);
    if (!gc_is_error(e)) e = gpu_select_compact(ctx, &s, d, n, sel, d_units, cap, &m);
    if (!gc_is_error(e) && m && m <= cap) {
        k_sparse_rd_gather<<<blocks_for(m, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(d, d_units, m, d_units + m);
        queue_copy(ctx, units, d_units, 2 * m * sizeof(uint32_t), cudaMemcpyDeviceToHost, &e);
    }
    e = release_and_wait(ctx, &s, e);
    return gc_is_error(e) ? e : m;
}

extern "C" size_t gcmpi_gpu_sparse_rd_out(gcmpi_gpu_ctx *ctx, const uint32_t *units, size_t m,
                                          size_t n, float *out)
{
    if (!ctx) return GC_ERR(GENERIC);
    if (n == 0) return 0;
    cudaStream_t st = ctx->stream;
    scratch s;
    memset(&s, 0, sizeof s);
    size_t e = 0;
    queue_zero(ctx, out, n * sizeof(float), &e);
    uint32_t *d_units = gc_is_error(e) || !m ? NULL
                                             : (uint32_t *)scratch_get(ctx, &s, 2 * m * sizeof(uint32_t));
    if (m && !gc_is_error(e) && !d_units) e = GC_ERR(ALLOC);
    queue_copy(ctx, d_units, units, 2 * m * sizeof(uint32_t), cudaMemcpyHostToDevice, &e);
    if (!gc_is_error(e) && m)
        k_sparse_rd_scatter<<<blocks_for(m, GPU_THREADS), GPU_THREADS, 0, st>>>(d_units, m, out);
    return release_and_wait(ctx, &s, e);
}
