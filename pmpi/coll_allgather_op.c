/* coll_allgather_op.c — MPI_Allgather of floats, compressed: each rank
 * encodes its block with its residual, sizes are exchanged, the payloads
 * are all-gathered (with PMPI_Allgatherv, or node by node: coll_allgather.c),
 * and every rank decodes every block (its own included, so all ranks hold
 * identical bytes) into place. Or, where auto's trial found compressing
 * slower (coll_auto_gather.c), MPI_Allgather of the floats themselves. */
#include "coll_impl.h"

#include <limits.h>

static int allgather_blocks(gcmpi_coll_ctx *ctx, const float *block, float *out, size_t count,
                            gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    gcmpi_gathered got;
    int rc = gcmpi_coll_encode_and_gather(ctx, block, count, ef, &got);
    if (rc != MPI_SUCCESS) return rc;

    /* block may lie inside out (MPI_IN_PLACE): it was consumed above. */
    double t0 = PMPI_Wtime();
    size_t d = 0;
    for (int r = 0; r < ctx->size && !gc_is_error(d); r++) {
        float *dst = out + (size_t)r * count;
        memset(dst, 0, count * sizeof(float));
        d = gc_decode_add_as(cfg->codec, got.buf + got.off[r], (size_t)got.len[r], dst, count,
                             ctx->ws);
    }
    st->decode_s += PMPI_Wtime() - t0;
    return gcmpi_coll_mpi_error(gc_error_code(d));
}

/* Uncompressed: MPI_Allgather of the floats; no residual is touched. */
static int allgather_passthrough(gcmpi_coll_ctx *ctx, const float *block, float *out,
                                 size_t count)
{
    const int in_place = block == out + (size_t)ctx->rank * count;
    const void *send = in_place ? MPI_IN_PLACE : (const void *)block;
    double t0 = PMPI_Wtime();
    int rc;
#ifdef GCMPI_HAVE_LARGE_COUNT
    if (count > (size_t)INT_MAX)
        rc = PMPI_Allgather_c(send, (MPI_Count)count, MPI_FLOAT, out, (MPI_Count)count, MPI_FLOAT,
                              ctx->comm);
    else
#endif
        rc = PMPI_Allgather(send, (int)count, MPI_FLOAT, out, (int)count, MPI_FLOAT, ctx->comm);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    ctx->stats->bytes_sent += (uint64_t)count * sizeof(float);
    return rc;
}

int gcmpi_allgather_compressed(gcmpi_coll_ctx *ctx, gcmpi_algo way, const float *block,
                               float *out, size_t count, gcmpi_ef_slot *ef)
{
    gcmpi_call_stats scratch_stats;
    gcmpi_call_stats *caller_stats = ctx->stats;
    if (!ctx->stats) ctx->stats = &scratch_stats;
    memset(ctx->stats, 0, sizeof *ctx->stats);
    ctx->stats->bytes_offered = (uint64_t)count * sizeof(float);
    int rc = MPI_SUCCESS;
    if (way == GCMPI_ALGO_AUTO || way == GCMPI_ALGO_RULE) way = gcmpi_gather_pick(ctx, count, &rc);
    /* A trial call starts together on every rank, as allreduce's do; the
     * device path times its calls itself, copies included. */
    const int timed = !ctx->on_device;
    if (rc == MPI_SUCCESS && count && timed && gcmpi_gather_in_trial(ctx, count))
        rc = PMPI_Barrier(ctx->comm);
    const double t0 = PMPI_Wtime();
    /* count is the same on every rank: an empty call is a no-op everywhere. */
    if (rc == MPI_SUCCESS && count && way == GCMPI_ALGO_PASS) {
        rc = allgather_passthrough(ctx, block, out, count);
    } else if (rc == MPI_SUCCESS && count) {
        rc = gcmpi_coll_gather_by_node(ctx, way);
        if (rc == MPI_SUCCESS) rc = allgather_blocks(ctx, block, out, count, ef);
    }
    ctx->gather_nodes = NULL;
    if (rc == MPI_SUCCESS && count && timed) gcmpi_gather_note(ctx, count, way, PMPI_Wtime() - t0);
    ctx->stats = caller_stats;
    return rc;
}
