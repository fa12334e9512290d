/* coll_allgather_op.c — MPI_Allgather of floats, compressed: each rank
 * encodes its block with its residual, sizes are exchanged, the payloads
 * are all-gathered with PMPI_Allgatherv, and every rank decodes every block
 * (its own included, so all ranks hold identical bytes) into place. */
#include "coll_impl.h"

static int allgather_blocks(gcmpi_coll_ctx *ctx, const float *block, float *out, size_t count,
                            gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    const size_t bound = gc_bound(cfg->codec, count, &cfg->params);
    /* The bound depends only on shared values: a failure is everyone's. */
    if (gc_is_error(bound)) return gcmpi_coll_mpi_error(gc_error_code(bound));
    const size_t unit = gcmpi_wire_unit(ctx->size, bound);
    uint8_t *send = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_SEND,
                                      gcmpi_wire_units(bound, unit) * unit);
    if (!send) return MPI_ERR_NO_MEM;

    double t0 = PMPI_Wtime();
    size_t len = gcmpi_coll_encode(ctx, block, ef ? ef->residual : NULL, ef ? ef->state : NULL,
                                   count, gcmpi_coll_seed(ctx, GCMPI_STAGE_LOCAL, 0), send, bound);
    st->encode_s += PMPI_Wtime() - t0;

    gcmpi_gathered got;
    int rc = gcmpi_coll_allgather_payloads(ctx, send, len, bound, &got);
    if (rc != MPI_SUCCESS) return rc;

    /* block may lie inside out (MPI_IN_PLACE): it was consumed above. */
    t0 = PMPI_Wtime();
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
    int rc = count ? allgather_blocks(ctx, block, out, count, ef) : MPI_SUCCESS;
    ctx->stats = caller_stats;
    return rc;
}
