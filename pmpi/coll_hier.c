/* coll_hier.c — node-aware allreduce (GCMPI_ALGO=hier): compression only
 * where the link is slow.
 *
 *   1. inside each node the ranks sum natively into the node's leader
 *      (PMPI_Reduce to local rank 0 over the node communicator);
 *   2. the leaders run the compressed allreduce of the fixed rule
 *      (gcmpi_coll_rule over the node count) on the node sums, with the
 *      slot's residual: a leader's residual is what compression dropped
 *      of its node's sum, so error feedback holds whatever the number of
 *      ranks per node;
 *   3. each leader broadcasts the result inside its node.
 *
 * Every rank ends bit-identical: the leaders' results are (the compressed
 * collectives guarantee it) and every other rank receives its leader's
 * bytes. Native reduce need not sum in the same order on every node, but
 * only the leader keeps its sum, so no rank sees another order.
 *
 * A failure between leaders is spread inside the node after the broadcast
 * (one int), so no rank is left waiting and all return the same code. */
#include "coll_impl.h"

#include <stdlib.h>

void gcmpi_nodes_free(gcmpi_nodes *n)
{
    if (!n) return;
    if (n->node != MPI_COMM_NULL) PMPI_Comm_free(&n->node);
    if (n->leaders != MPI_COMM_NULL) PMPI_Comm_free(&n->leaders);
    free(n);
}

int gcmpi_nodes_create(MPI_Comm comm, int node_size, gcmpi_nodes **out)
{
    *out = NULL;
    int rank, rc;
    PMPI_Comm_rank(comm, &rank);
    gcmpi_nodes *n = calloc(1, sizeof *n);
    int ok = n != NULL, all_ok = 0;
    /* Every rank learns whether every rank could allocate before the
     * collective splits, so a failure returns everywhere. */
    rc = PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS || !all_ok) {
        free(n);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
    }
    n->node = n->leaders = MPI_COMM_NULL;
    /* GCMPI_NODE_SIZE is part of the configuration hash that all ranks
     * compared at MPI_Init, so every rank splits by the same q. */
    if (node_size > 0)
        rc = PMPI_Comm_split(comm, rank / node_size, rank, &n->node);
    else
        rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &n->node);
    if (rc == MPI_SUCCESS) {
        PMPI_Comm_rank(n->node, &n->node_rank);
        PMPI_Comm_size(n->node, &n->node_size);
        rc = PMPI_Comm_split(comm, n->node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &n->leaders);
    }
    int shape[2] = {n->node_rank == 0, n->node_size}, sums[2] = {0, 0};
    if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&shape[0], &sums[0], 1, MPI_INT, MPI_SUM, comm);
    if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&shape[1], &sums[1], 1, MPI_INT, MPI_MAX, comm);
    if (rc == MPI_SUCCESS && n->leaders != MPI_COMM_NULL) PMPI_Comm_rank(n->leaders, &n->node_index);
    if (rc == MPI_SUCCESS) rc = PMPI_Bcast(&n->node_index, 1, MPI_INT, 0, n->node);
    if (rc != MPI_SUCCESS) {
        gcmpi_nodes_free(n);
        return rc;
    }
    n->n_nodes = sums[0];
    n->max_node_size = sums[1];
    *out = n;
    return MPI_SUCCESS;
}

/* PMPI_Reduce / PMPI_Bcast of floats in pieces whose count fits an int. */
#define GCMPI_PIECE ((size_t)1 << 30)

static int node_reduce(const float *in, float *out, size_t count, int root_rank, MPI_Comm node)
{
    int rc = MPI_SUCCESS;
    for (size_t at = 0; at < count && rc == MPI_SUCCESS; at += GCMPI_PIECE) {
        const int n = (int)(count - at < GCMPI_PIECE ? count - at : GCMPI_PIECE);
        const void *send = root_rank && in == out ? MPI_IN_PLACE : (const void *)(in + at);
        rc = PMPI_Reduce(send, out + at, n, MPI_FLOAT, MPI_SUM, 0, node);
    }
    return rc;
}

static int node_bcast(float *buf, size_t count, MPI_Comm node)
{
    int rc = MPI_SUCCESS;
    for (size_t at = 0; at < count && rc == MPI_SUCCESS; at += GCMPI_PIECE) {
        const int n = (int)(count - at < GCMPI_PIECE ? count - at : GCMPI_PIECE);
        rc = PMPI_Bcast(buf + at, n, MPI_FLOAT, 0, node);
    }
    return rc;
}

/* The communicator's node split, built on first use (collective: hier is
 * picked on every rank for the same call). */
static int nodes_of(gcmpi_coll_ctx *ctx, gcmpi_nodes **n, int *owned)
{
    *owned = ctx->cache == NULL;
    if (ctx->cache && ctx->cache->nodes) {
        *n = ctx->cache->nodes;
        return MPI_SUCCESS;
    }
    int rc = gcmpi_nodes_create(ctx->comm, ctx->cfg->node_size, n);
    if (rc == MPI_SUCCESS && ctx->cache) ctx->cache->nodes = *n;
    return rc;
}

int gcmpi_allreduce_hier(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                         gcmpi_ef_slot *ef)
{
    gcmpi_call_stats *st = ctx->stats;
    gcmpi_nodes *n = NULL;
    int owned = 0;
    int rc = nodes_of(ctx, &n, &owned);
    if (rc != MPI_SUCCESS) return rc;
    const int leader = n->node_rank == 0;

    double t0 = PMPI_Wtime();
    if (n->node_size > 1) {
        rc = node_reduce(in, out, count, leader, n->node);
        if (!leader) st->bytes_sent += (uint64_t)count * sizeof(float);
    } else if (in != out) {
        memcpy(out, in, count * sizeof(float));
    }
    st->comm_s += PMPI_Wtime() - t0;

    /* Between nodes: the leaders, on their node sums, in place. */
    int inner_rc = rc;
    if (rc == MPI_SUCCESS && leader && n->n_nodes > 1) {
        gcmpi_coll_ctx between = *ctx;
        between.comm = n->leaders;
        between.rank = n->node_index;
        between.size = n->n_nodes;
        between.cache = NULL;
        const gcmpi_algo algo = ctx->cache && ctx->cache->model ? ctx->cache->model->inner
                                : gcmpi_coll_rule(ctx->cfg, count, n->n_nodes);
        inner_rc = gcmpi_coll_run(&between, algo, out, out, count, ef);
    }

    if (rc == MPI_SUCCESS && n->node_size > 1) {
        t0 = PMPI_Wtime();
        rc = node_bcast(out, count, n->node);
        if (rc == MPI_SUCCESS) rc = PMPI_Bcast(&inner_rc, 1, MPI_INT, 0, n->node);
        if (leader) st->bytes_sent += (uint64_t)count * sizeof(float) + sizeof(int);
        st->comm_s += PMPI_Wtime() - t0;
    }
    if (owned) gcmpi_nodes_free(n);
    return rc != MPI_SUCCESS ? rc : inner_rc;
}
