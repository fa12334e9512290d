/* coll_momentum.c — transparent momentum correction (GCMPI_MOMENTUM=beta):
 * DGC's momentum correction for an application whose own optimizer keeps
 * applying momentum beta (m = beta*m + g, dampening 0).
 *
 * Per buffer the slot holds u (DGC's local momentum) and m (the
 * application's momentum, mirrored). A call forms u = beta*u + g and sends
 * u with error feedback, every codec alike. u is not cleared where sent:
 * DGC's momentum factor masking would take the momentum away from the
 * elements sent most often (on gcmpi-train topk 0.01 reached 0.8200 after
 * one epoch with masking, 0.8462 without, the baseline 0.8463; README).
 * Without it the sum of what is sent tracks the sum of the momenta, which
 * is what the optimizer would have applied. The algorithm leaves S_t, the sum
 * over ranks of what was sent, in out; gc_momentum_unfold turns it into
 * S_t - beta*m, so that the application's m = beta*m + that equals S_t:
 * its unchanged optimizer applies DGC's momentum-corrected update.
 *
 * A rank whose gradient is not finite never gets here (coll_choose.c sends
 * it without state); a sum that is not finite is handed back unchanged (the
 * application skips such a step) and m is not updated. */
#include "coll_impl.h"

int gcmpi_coll_momentum_allreduce(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in,
                                  float *out, size_t count, gcmpi_ef_slot *ef)
{
    const float beta = (float)ctx->cfg->momentum;
    float *u = ef->momentum, *m = ef->momentum + count;
    gcmpi_ef_slot sub = *ef;
    sub.momentum = NULL;

    double t0 = PMPI_Wtime();
    gc_momentum_accumulate(u, in, count, beta);
    ctx->stats->encode_s += PMPI_Wtime() - t0;

    int rc = gcmpi_coll_dispatch(ctx, algo, u, out, count, &sub);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    gc_momentum_unfold(out, m, count, beta);
    ctx->stats->decode_s += PMPI_Wtime() - t0;
    return MPI_SUCCESS;
}
