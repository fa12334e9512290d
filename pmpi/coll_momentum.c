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
 * A rank whose gradient is not finite sends it without residual or
 * momentum; a sum that is not finite is handed back unchanged (the
 * application skips such a step) and m is not updated.
 *
 * Every rank must return the same S_t - beta*m, so every rank needs the
 * same m: see gcmpi_coll_momentum_with, which runs the same agreement for
 * host vectors (here) and device vectors (coll_device.c's ops). */
#include "coll_impl.h"

#include <limits.h>

/* ---- the host's vectors -------------------------------------------------- */

static int host_finite(const float *g, size_t n, int *yes)
{
    *yes = gc_all_finite(g, n);
    return MPI_SUCCESS;
}

static int host_accumulate(float *u, const float *g, size_t n, float beta)
{
    gc_momentum_accumulate(u, g, n, beta);
    return MPI_SUCCESS;
}

static int host_unfold(float *s, float *m, size_t n, float beta)
{
    gc_momentum_unfold(s, m, n, beta); /* a sum with inf or NaN stays as it is */
    return MPI_SUCCESS;
}

static int host_zero(float *x, size_t n)
{
    memset(x, 0, n * sizeof(float));
    return MPI_SUCCESS;
}

int gcmpi_coll_momentum_bcast_host(float *x, size_t n, int root, size_t piece, MPI_Comm comm)
{
    float sink[GCMPI_MOMENTUM_SINK];
    int rc = MPI_SUCCESS;
    for (size_t at = 0; at < n && rc == MPI_SUCCESS; at += piece) {
        const int k = (int)(n - at < piece ? n - at : piece);
        rc = PMPI_Bcast(x ? x + at : sink, k, MPI_FLOAT, root, comm);
    }
    return rc;
}

static const gcmpi_momentum_ops host_ops = {
    .finite = host_finite,
    .accumulate = host_accumulate,
    .run = gcmpi_coll_run,
    .run_finite = gcmpi_coll_dispatch,
    .unfold = host_unfold,
    .zero = host_zero,
    .bcast = gcmpi_coll_momentum_bcast_host,
};

int gcmpi_coll_momentum_allreduce(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in,
                                  float *out, size_t count, gcmpi_ef_slot *ef)
{
    return gcmpi_coll_momentum_with(ctx, &host_ops, algo, in, out, count, ef);
}

/* ---- the correction, wherever the vectors live --------------------------- */

/* u = beta*u + g, then the algorithm on u with the residual: S_t in out.
 * A gradient with inf or NaN goes without residual or momentum: its sum
 * is not finite on every rank, and unfolding leaves it as it is. A local
 * failure still takes part (on the bare gradient) so no rank waits; it is
 * returned in *local. *finite says whether u was sent. */
static int sum_of_momenta(gcmpi_coll_ctx *ctx, const gcmpi_momentum_ops *ops, gcmpi_algo algo,
                          const float *in, float *out, size_t count, gcmpi_ef_slot *ef,
                          int *finite, int *local)
{
    *finite = 0;
    *local = MPI_SUCCESS;
    if (!ef || !ef->momentum) return ops->run(ctx, algo, in, out, count, ef);
    const double t0 = PMPI_Wtime();
    *local = ops->finite(in, count, finite);
    if (*local == MPI_SUCCESS && *finite)
        *local = ops->accumulate(ef->momentum, in, count, (float)ctx->cfg->momentum);
    ctx->stats->encode_s += PMPI_Wtime() - t0;
    gcmpi_ef_slot sub = *ef;
    sub.momentum = NULL;
    if (*local == MPI_SUCCESS && *finite)
        return ops->run_finite(ctx, algo, ef->momentum, out, count, &sub);
    if (*local == MPI_SUCCESS) ctx->stats->nonfinite_in = 1;
    *finite = 0;
    sub.residual = NULL;
    return ops->run(ctx, algo, in, out, count, &sub);
}

/* S_t - beta*m into out, m = S_t (as the optimizer will hold it). */
static int unfold(gcmpi_coll_ctx *ctx, const gcmpi_momentum_ops *ops, float *out,
                  gcmpi_ef_slot *ef, size_t count)
{
    const double t0 = PMPI_Wtime();
    const int rc = ops->unfold(out, ef->momentum + count, count, (float)ctx->cfg->momentum);
    ctx->stats->decode_s += PMPI_Wtime() - t0;
    return rc;
}

int gcmpi_coll_momentum_with(gcmpi_coll_ctx *ctx, const gcmpi_momentum_ops *ops,
                             gcmpi_algo algo, const float *in, float *out, size_t count,
                             gcmpi_ef_slot *ef)
{
    float *mom = ef ? ef->momentum : NULL;
    int local = MPI_SUCCESS;
    /* Exact calls left u and m behind (coll_choose.c): on every rank
     * alike, so each restarts them without asking. */
    if (mom && ef->momentum_lapsed && *ef->momentum_lapsed) {
        local = ops->zero(mom, 2 * count);
        *ef->momentum_lapsed = 0;
    }
    /* Who kept m: the lowest such rank (the donor), whether any rank did
     * not, whether any rank has no room for it. Started now and waited
     * for after the exchange, which hides its latency: as a blocking
     * allreduce before the call it cost hier's training on the emulated
     * 2 x 4 cluster 1.5-2 s of a 16 s epoch. */
    const int kept = mom && !ef->fresh && local == MPI_SUCCESS;
    int mine[3] = {kept ? ctx->rank : INT_MAX, kept ? 0 : -1, mom ? 0 : -1}, agreed[3];
    MPI_Request req;
    double t0 = PMPI_Wtime();
    int rc = PMPI_Iallreduce(mine, agreed, 3, MPI_INT, MPI_MIN, ctx->comm, &req);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;
    ctx->stats->bytes_sent += sizeof mine;

    int finite, encode_rc;
    int arc = sum_of_momenta(ctx, ops, algo, in, out, count, ef, &finite, &encode_rc);
    if (local == MPI_SUCCESS) local = encode_rc;
    t0 = PMPI_Wtime();
    rc = PMPI_Wait(&req, MPI_STATUS_IGNORE);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;
    const int unfold_here = arc == MPI_SUCCESS && finite;

    if (agreed[1] == 0) { /* every rank kept its m: the same m everywhere */
        if (unfold_here) arc = unfold(ctx, ops, out, ef, count);
        return arc != MPI_SUCCESS ? arc : local;
    }
    if (agreed[0] == INT_MAX) {
        /* No rank kept one: all restart, and the call returns S_t. */
        if (mom && local == MPI_SUCCESS) {
            local = ops->zero(mom + count, count);
            if (local == MPI_SUCCESS && unfold_here) arc = unfold(ctx, ops, out, ef, count);
        }
        return arc != MPI_SUCCESS ? arc : local;
    }
    /* m is a function of the sums alone, the same on every rank that kept
     * it; the others (a new key or an eviction, per rank) take the
     * donor's result and m, so every rank returns the same. Their u
     * restarted alone, which only drops their share of the momentum. */
    const int donor = agreed[0];
    if (ctx->rank == donor && unfold_here) arc = unfold(ctx, ops, out, ef, count);
    const size_t piece = agreed[2] < 0 ? GCMPI_MOMENTUM_SINK : (size_t)1 << 30;
    t0 = PMPI_Wtime();
    rc = ops->bcast(out, count, donor, (size_t)1 << 30, ctx->comm);
    if (rc == MPI_SUCCESS)
        rc = ops->bcast(mom ? mom + count : NULL, count, donor, piece, ctx->comm);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    ctx->stats->bytes_sent += ctx->rank == donor ? 2 * count * sizeof(float) : 0;
    if (arc != MPI_SUCCESS) return arc;
    return rc != MPI_SUCCESS ? rc : local;
}
