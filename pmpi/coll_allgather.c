/* coll_allgather.c — allreduce by all-gathering compressed vectors: each
 * rank encodes its whole vector (with its residual), payload sizes are
 * all-gathered, the payloads are all-gathered with PMPI_Allgatherv, and
 * every rank decodes all p payloads in rank order into a zeroed output.
 * Best for sparse codecs and small p: each rank receives p payloads.
 *
 * Also the payload all-gather that rsag's second half and the compressed
 * MPI_Allgather use; for the latter, node by node where ctx->gather_nodes
 * says so: the node's payloads gathered to its leader, the leaders'
 * bundles all-gathered between nodes, the whole set broadcast inside each
 * node. Every payload then crosses the link between two nodes once, where
 * a ring all-gather over all ranks carries each across every link between
 * nodes that lies on the ring (both of them with two nodes). */
#include "coll_impl.h"

/* Payloads laid out node by node in recv (counts and displs per global
 * rank, in units of type, each node's contiguous): gather, exchange
 * between leaders, broadcast. The leader broadcasts even when its exchange
 * failed, then its code, so no rank of a node waits and all return alike. */
static int gather_node_by_node(gcmpi_nodes *n, uint8_t *send, uint8_t *recv, size_t unit,
                               const int *counts, const int *displs, int total, MPI_Datatype type)
{
    const int first = n->node_start[n->node_index];
    const int base = displs[n->by_node[first]];
    for (int i = 0; i < n->node_size; i++) {
        const int r = n->by_node[first + i];
        n->counts[i] = counts[r];
        n->displs[i] = displs[r] - base;
    }
    int rc = PMPI_Gatherv(send, n->counts[n->node_rank], type, recv + (size_t)base * unit,
                          n->counts, n->displs, type, 0, n->node);
    int between = rc;
    if (rc == MPI_SUCCESS && n->leaders != MPI_COMM_NULL) {
        for (int k = 0; k < n->n_nodes; k++) {
            const int lo = n->node_start[k], hi = n->node_start[k + 1];
            const int last = n->by_node[hi - 1];
            n->node_displs[k] = displs[n->by_node[lo]];
            n->node_counts[k] = displs[last] + counts[last] - n->node_displs[k];
        }
        between = PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, n->node_counts,
                                  n->node_displs, type, n->leaders);
    }
    if (rc == MPI_SUCCESS) rc = PMPI_Bcast(recv, total, type, 0, n->node);
    if (rc == MPI_SUCCESS) rc = PMPI_Bcast(&between, 1, MPI_INT, 0, n->node);
    return rc != MPI_SUCCESS ? rc : between;
}

int gcmpi_coll_allgather_payloads(gcmpi_coll_ctx *ctx, uint8_t *send, size_t len,
                                  size_t max_len, gcmpi_gathered *got)
{
    const int p = ctx->size;
    gcmpi_call_stats *st = ctx->stats;
    const size_t unit = gcmpi_wire_unit(p, max_len);

    /* sizes[p] int64, off[p] size_t, counts[p] int, displs[p] int */
    uint8_t *meta = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_META,
                                      (size_t)p * (2 * sizeof(int64_t) + 2 * sizeof(int)));
    if (!meta) return MPI_ERR_NO_MEM;
    int64_t *sizes = (int64_t *)meta;
    size_t *off = (size_t *)(sizes + p);
    int *counts = (int *)(off + p);
    int *displs = counts + p;

    int64_t mine = gcmpi_coll_wire_size(len);

    double t0 = PMPI_Wtime();
    int rc = PMPI_Allgather(&mine, 1, MPI_INT64_T, sizes, 1, MPI_INT64_T, ctx->comm);
    st->comm_s += PMPI_Wtime() - t0;
    st->bytes_sent += sizeof mine;
    if (rc != MPI_SUCCESS) return rc;
    rc = gcmpi_coll_first_failure(sizes, p);
    if (rc != MPI_SUCCESS) return rc;

    /* Every rank sees the same sizes, so this refusal is agreed too. */
    for (int r = 0; r < p; r++)
        if (sizes[r] > (int64_t)max_len) return MPI_ERR_OTHER;
    gcmpi_nodes *nodes = ctx->gather_nodes;
    size_t total = 0;
    for (int j = 0; j < p; j++) {
        const int r = nodes ? nodes->by_node[j] : j; /* node by node, or rank order */
        size_t units = gcmpi_wire_units((size_t)sizes[r], unit);
        counts[r] = (int)units;
        displs[r] = (int)total;
        off[r] = total * unit;
        total += units;
    }
    uint8_t *recv = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_RECV, total * unit);
    if (!recv) return MPI_ERR_NO_MEM;

    MPI_Datatype type;
    rc = gcmpi_wire_type(unit, &type);
    if (rc != MPI_SUCCESS) return rc;
    gcmpi_wire_pad(send, len, unit);
    t0 = PMPI_Wtime();
    if (nodes) {
        rc = gather_node_by_node(nodes, send, recv, unit, counts, displs, (int)total, type);
        /* A leader sends its node's bundle and the whole set to its node;
         * the others their own payload. */
        if (nodes->leaders != MPI_COMM_NULL) {
            const int k = nodes->node_index;
            st->bytes_sent +=
                ((uint64_t)nodes->node_counts[k] + (nodes->node_size > 1 ? total : 0)) * unit;
        } else {
            st->bytes_sent += (uint64_t)counts[ctx->rank] * unit;
        }
    } else {
        rc = PMPI_Allgatherv(send, counts[ctx->rank], type, recv, counts, displs, type,
                             ctx->comm);
        st->bytes_sent += (uint64_t)counts[ctx->rank] * unit;
    }
    st->comm_s += PMPI_Wtime() - t0;
    gcmpi_wire_type_free(&type);
    if (rc != MPI_SUCCESS) return rc;

    got->buf = recv;
    got->len = sizes;
    got->off = off;
    return MPI_SUCCESS;
}

int gcmpi_coll_encode_and_gather(gcmpi_coll_ctx *ctx, const float *in, size_t count,
                                 gcmpi_ef_slot *ef, gcmpi_gathered *got)
{
    const gcmpi_config *cfg = ctx->cfg;
    const size_t bound = gc_bound(cfg->codec, count, &cfg->params);
    /* The bound depends only on what all ranks share: a failure here is the
     * same everywhere, so returning before any exchange is safe. */
    if (gc_is_error(bound)) return gcmpi_coll_mpi_error(gc_error_code(bound));

    const size_t unit = gcmpi_wire_unit(ctx->size, bound);
    uint8_t *send = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_SEND,
                                      gcmpi_wire_units(bound, unit) * unit);
    if (!send) return MPI_ERR_NO_MEM;

    double t0 = PMPI_Wtime();
    size_t len = gcmpi_coll_encode(ctx, in, ef ? ef->residual : NULL, ef ? ef->state : NULL,
                                   count, gcmpi_coll_seed(ctx, GCMPI_STAGE_LOCAL, 0), send, bound);
    ctx->stats->encode_s += PMPI_Wtime() - t0;
    return gcmpi_coll_allgather_payloads(ctx, send, len, bound, got);
}

size_t gcmpi_coll_decode_all(gcmpi_coll_ctx *ctx, const gcmpi_gathered *got, float *out,
                             size_t count)
{
    memset(out, 0, count * sizeof(float));
    size_t r = 0;
    for (int k = 0; k < ctx->size && !gc_is_error(r); k++)
        r = gc_decode_add_as(ctx->cfg->codec, got->buf + got->off[k], (size_t)got->len[k], out,
                             count, ctx->ws);
    return r;
}

int gcmpi_allreduce_allgather(gcmpi_coll_ctx *ctx, const float *in, float *out,
                              size_t count, gcmpi_ef_slot *ef)
{
    gcmpi_call_stats *st = ctx->stats;
    gcmpi_gathered got;
    int rc = gcmpi_coll_encode_and_gather(ctx, in, count, ef, &got);
    if (rc != MPI_SUCCESS) return rc;

    /* in is fully consumed by the encode: out may alias it. */
    double t0 = PMPI_Wtime();
    const size_t r = gcmpi_coll_decode_all(ctx, &got, out, count);
    st->decode_s += PMPI_Wtime() - t0;
    return gcmpi_coll_mpi_error(gc_error_code(r));
}
