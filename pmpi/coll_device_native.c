/* coll_device_native.c — the native algorithm (coll_native.c) on device
 * buffers, for the codecs whose MPI-summed form the GPU builds:
 *
 *  none      the floats staged through page-locked memory (nothing to
 *            encode, no residual to copy).
 *  int8      bucket maxima and integer levels made by the GPU
 *            (gcmpi_gpu_native_int8_*), agreed and summed by PMPI_Allreduce
 *            on page-locked copies, dequantised by the GPU into the device
 *            output.
 *  randk     the k indices drawn on the device (the same on every rank), the
 *            values gathered and the residual updated by the GPU
 *            (gcmpi_gpu_native_randk_*), the values and the blocks' marks
 *            of inf and NaN summed by PMPI_Allreduce on the host, scattered
 *            by the GPU.
 *  powersgd  P = M Q, Q = M^T P, the residual M - P Q^T and the output
 *            P Q^T on the GPU (gcmpi_gpu_native_powersgd_*); the factors,
 *            rows x rank and cols x rank floats, summed by PMPI_Allreduce
 *            on the host, where P is orthonormalised by the CPU code.
 *
 * The residual and powersgd's warm Q stay on the device. Same messages as
 * the host algorithm, in the same order, so device and host ranks meet in
 * one call and end bit-identical. Only the maxima and levels, or the
 * factors, cross PCIe, where the host fallback (coll_device.c) copies the
 * vector, the output and the residual both ways as floats. */
#include "coll_device.h"

#include "coll_impl.h"
#include "device.h"

int gcmpi_device_native_supports(const gc_codec *codec)
{
    const char *name = gc_codec_name(codec);
    return strcmp(name, "none") == 0 || strcmp(name, "int8") == 0 ||
           strcmp(name, "powersgd") == 0 || strcmp(name, "randk") == 0;
}

static int gpu_status(size_t r) { return gcmpi_coll_mpi_error(gc_error_code(r)); }

static int native_none(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count)
{
    const size_t bytes = count * sizeof(float);
    float *host = gcmpi_device_host_buffer(GCMPI_DEV_HOST_IN, bytes);
    if (!host) return MPI_ERR_NO_MEM; /* local, as the host fallback's */
    /* A failed copy still takes part (with zeros): no rank is left waiting. */
    int local = gcmpi_device_copy(host, in, bytes, 1);
    if (local != MPI_SUCCESS) memset(host, 0, bytes);
    int rc = gcmpi_native_allreduce_big(ctx, NULL, host, count, MPI_FLOAT, sizeof(float), MPI_SUM);
    if (rc == MPI_SUCCESS && local == MPI_SUCCESS) rc = gcmpi_device_copy(out, host, bytes, 1);
    return local != MPI_SUCCESS ? local : rc;
}

static int native_int8(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                       gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    if (gc_is_error(gc_params_check(cfg->codec, &cfg->params, NULL, 0)) ||
        cfg->params.bucket == 0)
        return MPI_ERR_ARG;
    const size_t bucket = cfg->params.bucket;
    const size_t nb = (count + bucket - 1) / bucket;
    const gcmpi_int_wire w = gcmpi_native_int_wire(ctx->size);
    /* The maxima, then the levels (4-byte aligned behind them). */
    float *top =
        gcmpi_device_host_buffer(GCMPI_DEV_HOST_PAYLOAD, nb * sizeof(float) + count * w.elem);
    gcmpi_gpu_ctx *gc = gcmpi_device_ctx();
    const gcmpi_gpu_table *gpu = gc ? gcmpi_device_gpu() : NULL;
    if (!top || !gpu) return MPI_ERR_NO_MEM;
    void *q = top + nb;
    float *res = ef ? ef->residual : NULL;

    /* A local GPU failure still takes part, with zero maxima and levels,
     * and is returned after the exchange. */
    double t0 = PMPI_Wtime();
    size_t local = gpu->native_int8_max(gc, in, res, count, bucket, top);
    if (gc_is_error(local)) memset(top, 0, nb * sizeof(float));
    st->encode_s += PMPI_Wtime() - t0;
    int rc = gcmpi_native_allreduce_big(ctx, NULL, top, nb, MPI_FLOAT, sizeof(float), MPI_MAX);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    if (!gc_is_error(local))
        local = gpu->native_int8_quantise(gc, in, res, count, bucket, top, w.levels, w.elem, q);
    if (gc_is_error(local)) memset(q, 0, count * w.elem);
    st->encode_s += PMPI_Wtime() - t0;
    rc = gcmpi_native_allreduce_big(ctx, NULL, q, count, w.type, w.elem, MPI_SUM);
    if (rc != MPI_SUCCESS) return rc;
    if (gc_is_error(local)) return gpu_status(local);

    t0 = PMPI_Wtime();
    const size_t d = gpu->native_int8_dequantise(gc, q, w.elem, count, bucket, top, w.levels, out);
    st->decode_s += PMPI_Wtime() - t0;
    return gpu_status(d);
}

static int native_randk(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                        gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    const size_t k = gc_randk_count(count, &cfg->params);
    if (gc_is_error(k)) return gcmpi_coll_mpi_error(gc_error_code(k));
    /* Indices are 32-bit (gc_randk_indices refuses more): on every rank. */
    if (count > UINT32_MAX) return gcmpi_coll_mpi_error(GC_ERR_PARAM);
    const size_t marks = (count + GCMPI_RANDK_MARK_BLOCK - 1) / GCMPI_RANDK_MARK_BLOCK;
    /* The values and the marks, page-locked: MPI sums them. */
    float *val = gcmpi_device_host_buffer(GCMPI_DEV_HOST_PAYLOAD, (k + marks) * sizeof(float));
    gcmpi_gpu_ctx *gc = gcmpi_device_ctx();
    const gcmpi_gpu_table *gpu = gc ? gcmpi_device_gpu() : NULL;
    if (!val || !gpu) return MPI_ERR_NO_MEM;
    float *mark = val + k;

    double t0 = PMPI_Wtime();
    /* The indices depend only on shared values, the same on every rank;
     * drawn on the device (gc_randk_indices' draw), where they are used. */
    uint32_t *idx = k ? gcmpi_device_buffer(GCMPI_DEV_BUF_INDICES, k * sizeof(uint32_t)) : NULL;
    const float scale =
        (cfg->params.flags & GC_PF_RANDK_UNBIASED) ? (float)((double)count / (double)k) : 1.0f;
    /* The marks are made only where this rank's input held inf or NaN
     * (run_kernels_as looked); a local failure takes part with zeros. */
    size_t r = k && !idx ? GCMPI_GC_ERROR(GC_ERR_ALLOC)
                         : gpu->randk_indices(gc, count, k, ctx->call_seed, idx);
    if (!gc_is_error(r))
        r = gpu->native_randk_values(gc, in, ef ? ef->residual : NULL, count, idx, k, scale, val);
    if (!gc_is_error(r) && st->nonfinite_in)
        r = gpu->native_randk_marks(gc, in, count, GCMPI_RANDK_MARK_BLOCK, mark);
    else
        memset(mark, 0, marks * sizeof(float));
    if (gc_is_error(r)) memset(val, 0, (k + marks) * sizeof(float));
    st->encode_s += PMPI_Wtime() - t0;

    int rc = gcmpi_native_allreduce_big(ctx, NULL, val, k + marks, MPI_FLOAT, sizeof(float),
                                        MPI_SUM);
    if (rc != MPI_SUCCESS) return rc;
    if (gc_is_error(r)) return gpu_status(r);

    t0 = PMPI_Wtime();
    int any_mark = 0;
    for (size_t b = 0; b < marks && !any_mark; b++) any_mark = mark[b] != 0.0f;
    r = gpu->native_randk_out(gc, idx, k, val, any_mark ? mark : NULL, GCMPI_RANDK_MARK_BLOCK,
                              count, out);
    st->decode_s += PMPI_Wtime() - t0;
    return gpu_status(r);
}

static int native_powersgd(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                           gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    if (gc_is_error(gc_params_check(cfg->codec, &cfg->params, NULL, 0))) return MPI_ERR_ARG;
    const size_t rank = cfg->params.rank;
    const gc_powersgd_shape s = gc_powersgd_shape_of(count, rank);
    const size_t np = s.rows * s.rank, nq = s.cols * s.rank;
    float *res = ef ? ef->residual : NULL;
    float *warm = ef ? ef->state : NULL; /* device: last call's summed Q */
    /* P, this rank's Q and the summed Q, page-locked. */
    float *pm = gcmpi_device_host_buffer(GCMPI_DEV_HOST_PAYLOAD, (np + 2 * nq) * sizeof(float));
    gcmpi_gpu_ctx *gc = gcmpi_device_ctx();
    const gcmpi_gpu_table *gpu = gc ? gcmpi_device_gpu() : NULL;
    if (!pm || !gpu) return MPI_ERR_NO_MEM;
    float *q_local = pm + np, *q_sum = q_local + nq;

    /* As on the host: the warm Q is last call's allreduce, the same on
     * every rank, so all ranks take the same branch. A local failure still
     * takes part, on zeros, and is returned after the exchanges. */
    double t0 = PMPI_Wtime();
    int local = MPI_SUCCESS;
    int use_warm = warm && !ef->fresh && !ef->state_reset;
    if (use_warm) {
        local = gcmpi_device_copy(q_sum, warm, nq * sizeof(float), 1);
        use_warm = local == MPI_SUCCESS && gcmpi_native_q_usable(q_sum, nq);
    }
    if (!use_warm) gc_powersgd_init_q(s, ctx->call_seed, q_sum);
    size_t finite = 1;
    if (local == MPI_SUCCESS) {
        finite = gpu->native_powersgd_p(gc, in, res, count, rank, q_sum, pm);
        if (gc_is_error(finite)) local = gpu_status(finite);
    }
    if (local != MPI_SUCCESS) memset(pm, 0, np * sizeof(float));
    st->encode_s += PMPI_Wtime() - t0;
    int rc = gcmpi_native_allreduce_big(ctx, NULL, pm, np, MPI_FLOAT, sizeof(float), MPI_SUM);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    /* Another rank's input was not finite: P is not, and the residual
     * must not take it: it keeps M (nothing usable was sent). */
    const int p_finite = gc_all_finite(pm, np);
    gc_powersgd_orthonormalize(s, pm);
    if (local == MPI_SUCCESS) {
        float *sub = res && finite == 1 && p_finite ? res : NULL;
        size_t r = gpu->native_powersgd_q(gc, res ? res : in, count, rank, pm, q_local, sub);
        /* A non-finite value would stay in the residual for good: drop it. */
        if (!gc_is_error(r) && res && finite != 1) r = gpu->zero(gc, res, count * sizeof(float));
        if (gc_is_error(r)) local = gpu_status(r);
    }
    if (local != MPI_SUCCESS) memset(q_local, 0, nq * sizeof(float));
    st->encode_s += PMPI_Wtime() - t0;
    rc = gcmpi_native_allreduce_big(ctx, q_local, q_sum, nq, MPI_FLOAT, sizeof(float), MPI_SUM);
    if (rc != MPI_SUCCESS) return rc;
    if (local != MPI_SUCCESS) return local;

    t0 = PMPI_Wtime();
    rc = gpu_status(gpu->native_powersgd_out(gc, pm, q_sum, count, rank, out));
    if (rc == MPI_SUCCESS && warm) rc = gcmpi_device_copy(warm, q_sum, nq * sizeof(float), 1);
    st->decode_s += PMPI_Wtime() - t0;
    return rc;
}

int gcmpi_device_allreduce_native(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                                  gcmpi_ef_slot *ef)
{
    const char *name = gc_codec_name(ctx->cfg->codec);
    if (strcmp(name, "none") == 0) return native_none(ctx, in, out, count);
    if (strcmp(name, "int8") == 0) return native_int8(ctx, in, out, count, ef);
    if (strcmp(name, "powersgd") == 0) return native_powersgd(ctx, in, out, count, ef);
    if (strcmp(name, "randk") == 0) return native_randk(ctx, in, out, count, ef);
    return MPI_ERR_ARG;
}
