/* coll_allgather_op.c — MPI_Allgather of floats, compressed: each rank
 * encodes its block with its residual, sizes are exchanged, the payloads
 * are all-gathered (with PMPI_Allgatherv, or node by node under hier and
 * auto: coll_allgather.c), and every rank decodes every block (its own
 * included, so all ranks hold identical bytes) into place. */
#include "coll_impl.h"

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

int gcmpi_allgather_compressed(gcmpi_coll_ctx *ctx, const float *block, float *out,
                               size_t count, gcmpi_ef_slot *ef)
{
    gcmpi_call_stats scratch_stats;
    gcmpi_call_stats *caller_stats = ctx->stats;
    if (!ctx->stats) ctx->stats = &scratch_stats;
    memset(ctx->stats, 0, sizeof *ctx->stats);
    ctx->stats->bytes_offered = (uint64_t)count * sizeof(float);
    /* count is the same on every rank: an empty call is a no-op everywhere. */
    int rc = count ? gcmpi_coll_gather_by_node(ctx) : MPI_SUCCESS;
    if (count && rc == MPI_SUCCESS) rc = allgather_blocks(ctx, block, out, count, ef);
    ctx->gather_nodes = NULL;
    ctx->stats = caller_stats;
    return rc;
}
