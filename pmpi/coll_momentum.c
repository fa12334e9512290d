/* coll_momentum.c — transparent momentum correction (GCMPI_MOMENTUM=beta):
 * DGC's momentum correction for an application whose own optimizer keeps
 * applying momentum beta (m = beta*m + g, dampening 0).
 *
 * Per buffer the slot holds u (DGC's local momentum) and m (the
 * application's momentum, mirrored). A call forms u = beta*u + g and sends
 * it with error feedback: sparse codecs inside their encodes, which clear
 * u where an element was sent (DGC's momentum factor masking); dense
 * codecs (sign, onebit, eg, powersgd, int8, fp16) compress u itself with
 * their residual, nothing is cleared. The algorithm leaves S_t, the sum
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
    const float beta = gcmpi_coll_momentum(ctx->cfg);
    float *u = ef->momentum, *m = ef->momentum + count;
    gcmpi_ef_slot sub = *ef;
    sub.momentum = NULL;

    double t0 = PMPI_Wtime();
    const float *send = in;
    if (gcmpi_coll_momentum_on(ctx->cfg)) {
        sub.state = u; /* sparse: the encodes form u and mask it */
    } else {
        gc_momentum_accumulate(u, in, count, beta);
        send = u;
    }
    ctx->stats->encode_s += PMPI_Wtime() - t0;

    int rc = gcmpi_coll_dispatch(ctx, algo, send, out, count, &sub);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    gc_momentum_unfold(out, m, count, beta);
    ctx->stats->decode_s += PMPI_Wtime() - t0;
    return MPI_SUCCESS;
}
