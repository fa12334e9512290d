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
 * same m: see gcmpi_coll_momentum_allreduce. */
#include "coll_impl.h"

#include <limits.h>

/* u = beta*u + g, the algorithm on u with the residual: S_t in out. */
static int sum_of_momenta(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                          size_t count, gcmpi_ef_slot *ef)
{
    const float beta = (float)ctx->cfg->momentum;
    gcmpi_ef_slot sub = *ef;
    sub.momentum = NULL;
    const double t0 = PMPI_Wtime();
    gc_momentum_accumulate(ef->momentum, in, count, beta);
    ctx->stats->encode_s += PMPI_Wtime() - t0;
    return gcmpi_coll_dispatch(ctx, algo, ef->momentum, out, count, &sub);
}

/* S_t - beta*m into out, m = S_t (as the optimizer will hold it). */
static void unfold(gcmpi_coll_ctx *ctx, float *out, gcmpi_ef_slot *ef, size_t count)
{
    const double t0 = PMPI_Wtime();
    gc_momentum_unfold(out, ef->momentum + count, count, (float)ctx->cfg->momentum);
    ctx->stats->decode_s += PMPI_Wtime() - t0;
}

/* PMPI_Bcast of n floats in pieces whose count fits an int. */
static int bcast_floats(float *x, size_t n, int root, MPI_Comm comm)
{
    const size_t piece = (size_t)1 << 30;
    int rc = MPI_SUCCESS;
    for (size_t at = 0; at < n && rc == MPI_SUCCESS; at += piece)
        rc = PMPI_Bcast(x + at, (int)(n - at < piece ? n - at : piece), MPI_FLOAT, root, comm);
    return rc;
}

/* The donor's m to every rank; a rank without room for m (bare) takes
 * it through a small buffer and drops it, in the same pieces as all. */
#define BARE_PIECE 16384
static int bcast_mirror(float *m, size_t count, int root, int any_bare, MPI_Comm comm)
{
    if (!any_bare) return bcast_floats(m, count, root, comm);
    float sink[BARE_PIECE];
    int rc = MPI_SUCCESS;
    for (size_t at = 0; at < count && rc == MPI_SUCCESS; at += BARE_PIECE) {
        const int n = (int)(count - at < BARE_PIECE ? count - at : BARE_PIECE);
        rc = PMPI_Bcast(m ? m + at : sink, n, MPI_FLOAT, root, comm);
    }
    return rc;
}

int gcmpi_coll_momentum_allreduce(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in,
                                  float *out, size_t count, gcmpi_ef_slot *ef)
{
    float *mom = ef ? ef->momentum : NULL;
    /* Exact calls left u and m behind (coll_choose.c): on every rank
     * alike, so each restarts them without asking. */
    if (mom && ef->momentum_lapsed && *ef->momentum_lapsed) {
        memset(mom, 0, 2 * count * sizeof(float));
        *ef->momentum_lapsed = 0;
    }
    /* Who kept m: the lowest such rank (the donor), whether any rank did
     * not, whether any rank has no room for it. Started now and waited
     * for after the exchange, which hides its latency: as a blocking
     * allreduce before the call it cost hier's training on the emulated
     * 2 x 4 cluster 1.5-2 s of a 16 s epoch. */
    const int kept = mom && !ef->fresh;
    int mine[3] = {kept ? ctx->rank : INT_MAX, kept ? 0 : -1, mom ? 0 : -1}, agreed[3];
    MPI_Request req;
    double t0 = PMPI_Wtime();
    int rc = PMPI_Iallreduce(mine, agreed, 3, MPI_INT, MPI_MIN, ctx->comm, &req);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;
    ctx->stats->bytes_sent += sizeof mine;

    /* A gradient with inf or NaN goes without residual or momentum: its
     * sum is not finite on every rank, and unfolding leaves it as it is. */
    const int finite = mom && gc_all_finite(in, count);
    const int arc = finite ? sum_of_momenta(ctx, algo, in, out, count, ef)
                           : gcmpi_coll_run(ctx, algo, in, out, count, ef);
    t0 = PMPI_Wtime();
    rc = PMPI_Wait(&req, MPI_STATUS_IGNORE);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;

    if (agreed[1] == 0) { /* every rank kept its m: the same m everywhere */
        if (arc == MPI_SUCCESS && finite) unfold(ctx, out, ef, count);
        return arc;
    }
    if (agreed[0] == INT_MAX) {
        /* No rank kept one: all restart, and the call returns S_t. */
        if (mom) {
            memset(mom + count, 0, count * sizeof(float));
            if (arc == MPI_SUCCESS && finite) unfold(ctx, out, ef, count);
        }
        return arc;
    }
    /* m is a function of the sums alone, the same on every rank that kept
     * it; the others (a new key or an eviction, per rank) take the
     * donor's result and m, so every rank returns the same. Their u
     * restarted alone, which only drops their share of the momentum. */
    const int donor = agreed[0];
    if (ctx->rank == donor && arc == MPI_SUCCESS && finite) unfold(ctx, out, ef, count);
    t0 = PMPI_Wtime();
    rc = bcast_floats(out, count, donor, ctx->comm);
    if (rc == MPI_SUCCESS)
        rc = bcast_mirror(mom ? mom + count : NULL, count, donor, agreed[2] < 0, ctx->comm);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    ctx->stats->bytes_sent += ctx->rank == donor ? 2 * count * sizeof(float) : 0;
    return arc != MPI_SUCCESS ? arc : rc;
}
