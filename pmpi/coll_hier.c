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
 * When every node has the same number q of ranks (the usual cluster), the
 * reduce-scatter style replaces the leader: a reduce-scatter gives local
 * rank i the node's sum of chunk i (of q), local ranks i of all nodes (the
 * "column" communicator) run the compressed allreduce on chunk i with the
 * slice of their residual, and an allgather inside the node puts the
 * chunks together. Both phases go through the node's shared-memory window
 * (node_shm.c) where its ranks share memory and GCMPI_NODE_SHM is on, else
 * through PMPI_Reduce_scatter and PMPI_Allgatherv. Every rank encodes 1/q of the vector instead
 * of one rank all of it, and q columns share the link between nodes.
 * Where the columns run the allgather, the sum and the exchange go
 * segment by segment and overlap (coll_hier_pipe.c).
 * Chunk i is summed by one column whose members end identical, and every
 * rank of a node receives the same chunk bytes: still bit-identical.
 * Uneven nodes, counts above INT_MAX and powersgd (its state is shaped by
 * the whole count) keep the leader style.
 *
 * On one node (every rank shares memory) there is no slow link: with the
 * window, hier is its two phases and nothing between, an exact allreduce
 * (summed in local rank order) that copies less than MPI's; without it,
 * the leader's reduce and broadcast, exact too.
 *
 * A failure between leaders is spread inside the node after the broadcast
 * (one int), so no rank is left waiting and all return the same code. */
#include "coll_impl.h"
#include "node_shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void gcmpi_nodes_free(gcmpi_nodes *n)
{
    if (!n) return;
    if (n->node != MPI_COMM_NULL) PMPI_Comm_free(&n->node);
    if (n->leaders != MPI_COMM_NULL) PMPI_Comm_free(&n->leaders);
    if (n->column != MPI_COMM_NULL) PMPI_Comm_free(&n->column);
    gcmpi_node_shm_free(n->shm);
    free(n->counts);
    free(n);
}

/* by_node and node_start from every rank's node index (in node_counts),
 * a counting sort that keeps rank order inside a node. */
static void order_by_node(gcmpi_nodes *n, int size)
{
    const int *node_of = n->node_counts;
    for (int k = 0; k <= n->n_nodes; k++) n->node_start[k] = 0;
    for (int r = 0; r < size; r++) n->node_start[node_of[r] + 1]++;
    for (int k = 0; k < n->n_nodes; k++) n->node_start[k + 1] += n->node_start[k];
    int *next = n->node_displs; /* scratch: n_nodes entries */
    for (int k = 0; k < n->n_nodes; k++) next[k] = n->node_start[k];
    for (int r = 0; r < size; r++) n->by_node[next[node_of[r]]++] = r;
}

int gcmpi_nodes_create(MPI_Comm comm, int node_size, gcmpi_nodes **out)
{
    int rank;
    PMPI_Comm_rank(comm, &rank);
    /* GCMPI_NODE_SIZE is part of the configuration hash that all ranks
     * compared at MPI_Init, so every rank splits by the same q. */
    return gcmpi_nodes_create_by_color(comm, node_size > 0 ? rank / node_size : -1, out);
}

int gcmpi_nodes_create_by_color(MPI_Comm comm, int color, gcmpi_nodes **out)
{
    *out = NULL;
    int rank, size, rc;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    gcmpi_nodes *n = calloc(1, sizeof *n);
    /* A node has at most size ranks, and there are at most size nodes:
     * room for the chunk layout, the node order and the nodes' layout. */
    if (n) n->counts = malloc((6 * (size_t)size + 1) * sizeof *n->counts);
    int ok = n && n->counts, all_ok = 0;
    /* Every rank learns whether every rank could allocate before the
     * collective splits, so a failure returns everywhere. */
    rc = PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS || !all_ok) {
        if (n) free(n->counts);
        free(n);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
    }
    n->node = n->leaders = n->column = MPI_COMM_NULL;
    if (color >= 0)
        rc = PMPI_Comm_split(comm, color, rank, &n->node);
    else
        rc = PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &n->node);
    if (rc == MPI_SUCCESS) {
        PMPI_Comm_rank(n->node, &n->node_rank);
        PMPI_Comm_size(n->node, &n->node_size);
        rc = PMPI_Comm_split(comm, n->node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &n->leaders);
    }
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_split(comm, n->node_rank, rank, &n->column);
    int shape[2] = {n->node_rank == 0, n->node_size}, sums[2] = {0, 0};
    if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&shape[0], &sums[0], 1, MPI_INT, MPI_SUM, comm);
    if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&shape[1], &sums[1], 1, MPI_INT, MPI_MAX, comm);
    int smallest = 0;
    if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&shape[1], &smallest, 1, MPI_INT, MPI_MIN, comm);
    if (rc == MPI_SUCCESS && n->leaders != MPI_COMM_NULL) PMPI_Comm_rank(n->leaders, &n->node_index);
    if (rc == MPI_SUCCESS) rc = PMPI_Bcast(&n->node_index, 1, MPI_INT, 0, n->node);
    if (rc == MPI_SUCCESS) rc = gcmpi_node_shm_possible(n->node, &n->shm_possible);
    n->displs = n->counts + size;
    n->by_node = n->displs + size;
    n->node_start = n->by_node + size;
    n->node_counts = n->node_start + size + 1;
    n->node_displs = n->node_counts + size;
    /* Every rank's node (the leaders' order), into node_counts for now. */
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allgather(&n->node_index, 1, MPI_INT, n->node_counts, 1, MPI_INT, comm);
    if (rc != MPI_SUCCESS) {
        gcmpi_nodes_free(n);
        return rc;
    }
    n->n_nodes = sums[0];
    n->max_node_size = sums[1];
    n->min_node_size = smallest;
    order_by_node(n, size);
    *out = n;
    return MPI_SUCCESS;
}

/* PMPI_Reduce / PMPI_Bcast of floats in pieces whose count fits an int. */
#define GCMPI_PIECE ((size_t)1 << 30)

static int node_reduce(const float *in, float *out, size_t count, int is_root, MPI_Comm node)
{
    int rc = MPI_SUCCESS;
    for (size_t at = 0; at < count && rc == MPI_SUCCESS; at += GCMPI_PIECE) {
        const int n = (int)(count - at < GCMPI_PIECE ? count - at : GCMPI_PIECE);
        const void *send = is_root && in == out ? MPI_IN_PLACE : (const void *)(in + at);
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

int gcmpi_hier_window_gone(gcmpi_nodes *n)
{
    static int told; /* once a process: the first rank of each node short of room */
    if (n->node_rank == 0 && !told) {
        char host[256] = "?";
        gethostname(host, sizeof host - 1);
        told = 1;
        fprintf(stderr, "libgcmpi: %s: the node's shared memory (/dev/shm) has no room for "
                        "hier's window; its ranks sum through MPI instead (slower). A container "
                        "needs more shared memory (docker run --shm-size); GCMPI_NODE_SHM=0 "
                        "says so without this note\n", host);
    }
    n->shm_possible = 0;
    return 0;
}

int gcmpi_hier_scatter_style(const gcmpi_config *cfg, const gcmpi_nodes *n, size_t count)
{
    return n->min_node_size == n->max_node_size && n->node_size > 1 && n->n_nodes > 1 &&
           count <= (size_t)INT_MAX && strcmp(gc_codec_name(cfg->codec), "powersgd") != 0;
}

int gcmpi_hier_one_node_window(const gcmpi_config *cfg, const gcmpi_nodes *n, size_t count)
{
    return n->n_nodes == 1 && n->node_size > 1 && n->shm_possible && cfg->node_shm &&
           count <= (size_t)INT_MAX;
}

int gcmpi_hier_exact(gcmpi_coll_ctx *ctx, size_t count)
{
    gcmpi_nodes *n = NULL;
    int owned;
    if (!ctx->cache || nodes_of(ctx, &n, &owned) != MPI_SUCCESS) return 0;
    return gcmpi_hier_one_node_window(ctx->cfg, n, count);
}

/* The algorithm between nodes: the model's (auto) or the rule's. */
static gcmpi_algo between_algo(const gcmpi_coll_ctx *ctx, const gcmpi_nodes *n, size_t count)
{
    return ctx->cache && ctx->cache->model ? ctx->cache->model->inner
                                           : gcmpi_coll_rule(ctx->cfg, count, n->n_nodes);
}

/* hier goes by chunks (hier_scatter): every node of the same size, or
 * one node sharing a window. */
static int by_chunks(const gcmpi_config *cfg, const gcmpi_nodes *n, size_t count)
{
    return gcmpi_hier_scatter_style(cfg, n, count) || gcmpi_hier_one_node_window(cfg, n, count);
}

gcmpi_coll_ctx gcmpi_hier_column_ctx(const gcmpi_coll_ctx *ctx, const gcmpi_nodes *n)
{
    gcmpi_coll_ctx col = *ctx;
    col.comm = n->column;
    col.rank = n->node_index;
    col.size = n->n_nodes;
    col.cache = NULL;
    col.finite_in = NULL;
    col.finite_n = 0;
    return col;
}

/* Segments of this thread's last call of the reduce-scatter style (tests). */
static _Thread_local int last_segments, last_gathered_kept;

int gcmpi_hier_last_segments(void)
{
    return last_segments;
}

int gcmpi_hier_last_gathered_kept(void)
{
    return last_gathered_kept;
}

/* The segments hier pipelines its reduce-scatter style in
 * (coll_hier_pipe.c), 0 where it does not: where every column runs the
 * flat allgather, on host or device vectors, through the window or MPI.
 * Decided from what every rank shares (a node's chunks are of two lengths
 * at most, both asked), so all take the same way. */
static int pipeline_segments(const gcmpi_coll_ctx *ctx, const gcmpi_nodes *n, size_t count)
{
    const int q = n->node_size;
    if (n->n_nodes < 2 ||
        between_algo(ctx, n, gcmpi_chunk_len(count, q, 0)) != GCMPI_ALGO_ALLGATHER ||
        between_algo(ctx, n, gcmpi_chunk_len(count, q, q - 1)) != GCMPI_ALGO_ALLGATHER)
        return 0;
    const int segs = gcmpi_hier_segments(ctx->cfg, count, q);
    return segs > 1 ? segs : 0;
}

static uint8_t *host_payloads(gcmpi_coll_ctx *ctx, size_t bytes)
{
    return gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_RECV, bytes);
}

/* Host vectors: the node's phases work on in and out themselves. */
static const gcmpi_hier_vec_ops host_vectors = {
    .run = gcmpi_coll_run,
    .payloads = host_payloads,
    .encode = gcmpi_coll_encode,
    .decode_all = gcmpi_coll_decode_all,
};

/* The vectors the node's phases run on: in and out themselves, or, where
 * ops stages (device vectors), one host copy of in for both (0: no memory
 * for it). Staged, a local failure (*local) still takes part, on zeros,
 * so no rank of the node or between nodes is left waiting; the caller
 * returns it at the end. */
static int host_side(const gcmpi_hier_vec_ops *ops, const float *in, float *out, size_t count,
                     const float **hin, float **hout, int *local)
{
    *local = MPI_SUCCESS;
    *hin = in;
    *hout = out;
    if (!ops->stage) return 1;
    const size_t bytes = count * sizeof(float);
    if (!(*hout = ops->host_vector(count))) return 0;
    *local = ops->stage(*hout, in, bytes);
    if (*local != MPI_SUCCESS) memset(*hout, 0, bytes);
    *hin = *hout;
    return 1;
}

/* Reduce-scatter style (all nodes of q ranks; see the top of the file).
 * The node's two phases run on host floats: in and out themselves, or,
 * where ops stages (device vectors), one host copy of the vector, summed
 * in place; only this rank's chunk goes to the vector for the column's
 * call, and the gathered sum back at the end. */
static int hier_scatter(gcmpi_coll_ctx *ctx, gcmpi_nodes *n, const gcmpi_hier_vec_ops *ops,
                        const float *in, float *out, size_t count, gcmpi_ef_slot *ef)
{
    gcmpi_call_stats *st = ctx->stats;
    const int q = n->node_size, me = n->node_rank;
    int *counts = n->counts, *displs = n->displs;
    for (int i = 0; i < q; i++) {
        counts[i] = (int)gcmpi_chunk_len(count, q, i);
        displs[i] = (int)gcmpi_chunk_start(count, q, i);
    }
    const size_t lo = (size_t)displs[me], len = (size_t)counts[me];
    const size_t bytes = count * sizeof(float);

    const float *hin;
    float *hout;
    int local;
    if (!host_side(ops, in, out, count, &hin, &hout, &local)) return MPI_ERR_NO_MEM;

    /* Through the node's shared window where its ranks share memory (all
     * ranks of a node see the same shm_possible and configuration). */
    int shm = n->shm_possible && ctx->cfg->node_shm;
    double t0 = PMPI_Wtime();
    int rc = MPI_SUCCESS;
    int sum_finite = 0; /* the window's sum found free of inf and NaN */
    int inner_rc = MPI_SUCCESS;
    /* Every rank of the communicator takes the same way (only shared
     * figures decide), so columns meet in the same messages. */
    last_segments = pipeline_segments(ctx, n, count);
    last_gathered_kept = 0;
    gcmpi_hier_kept kept = {0};
    int by_kept = 0;
    if (last_segments) {
        by_kept = gcmpi_hier_kept_room(ctx, n, ops, count, last_segments, shm, &kept);
        rc = gcmpi_hier_pipeline(ctx, n, ops, hin, hout, out, count, last_segments, ef, &shm,
                                 &local, &inner_rc, &kept);
        if (rc != MPI_SUCCESS) return rc;
    } else {
        if (shm) {
            rc = gcmpi_node_shm_reduce_scatter(&n->shm, n->node, hin, hout, counts, displs, 0,
                                               &sum_finite);
            if (rc == GCMPI_NODE_SHM_NO_ROOM) shm = gcmpi_hier_window_gone(n);
        }
        if (!shm && hin == hout) {
            /* In place the node's chunk lands at the start of out. */
            rc = PMPI_Reduce_scatter(MPI_IN_PLACE, hout, counts, MPI_FLOAT, MPI_SUM, n->node);
            if (rc == MPI_SUCCESS && lo) memmove(hout + lo, hout, len * sizeof(float));
        } else if (!shm) {
            rc = PMPI_Reduce_scatter(hin, hout + lo, counts, MPI_FLOAT, MPI_SUM, n->node);
        }
        st->bytes_sent += (uint64_t)(count - len) * sizeof(float);
        st->comm_s += PMPI_Wtime() - t0;
        if (rc != MPI_SUCCESS) return rc;

        /* Chunk me between nodes, with this rank's slice of the residual. */
        if (len && n->n_nodes > 1) {
            if (ops->stage && local == MPI_SUCCESS)
                local = ops->stage(out + lo, hout + lo, len * sizeof(float));
            gcmpi_coll_ctx column = gcmpi_hier_column_ctx(ctx, n);
            /* Host vectors whose sum the window found finite: the column's
             * check need not read them again. */
            column.finite_in = shm && sum_finite && !ops->stage ? out + lo : NULL;
            column.finite_n = column.finite_in ? len : 0;
            gcmpi_ef_slot part = {0};
            if (ef) {
                part = *ef;
                part.residual = ef->residual ? ef->residual + lo : NULL;
                part.state = ef->state ? ef->state + lo : NULL;
                part.momentum = NULL; /* the caller's correction, not the column's */
            }
            inner_rc = ops->run(&column, between_algo(ctx, n, len), out + lo, out + lo, len,
                                ef ? &part : NULL);
            if (ops->stage && local == MPI_SUCCESS)
                local = ops->stage(hout + lo, out + lo, len * sizeof(float));
        }
    }

    /* A column that failed tells its node (every column sees its own
     * failure on all its members, so every rank ends with the same code). */
    int worst = inner_rc;
    /* A window given up during the pipeline is given up on every rank of
     * the node: all take the same way here. */
    if (by_kept && shm) {
        rc = gcmpi_hier_gather_kept(ctx, n, &kept, hout, count, last_segments, inner_rc, &worst,
                                    &last_gathered_kept);
        ctx->stats->node_payloads = last_gathered_kept;
        if (rc == GCMPI_NODE_SHM_NO_ROOM) shm = gcmpi_hier_window_gone(n);
        else if (rc != MPI_SUCCESS) return rc;
    }
    t0 = PMPI_Wtime();
    if (!last_gathered_kept) { /* else every chunk is decoded in place */
        if (shm) {
            rc = gcmpi_node_shm_allgather(&n->shm, n->node, hout, counts, displs, inner_rc,
                                          &worst);
        } else {
            rc = PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hout, counts, displs,
                                 MPI_FLOAT, n->node);
            if (rc == MPI_SUCCESS)
                rc = PMPI_Allreduce(&inner_rc, &worst, 1, MPI_INT, MPI_MAX, n->node);
        }
        st->bytes_sent += (uint64_t)len * sizeof(float);
    }
    st->comm_s += PMPI_Wtime() - t0;
    if (rc == MPI_SUCCESS && ops->stage && local == MPI_SUCCESS)
        local = ops->stage(out, hout, bytes);
    if (rc != MPI_SUCCESS) return rc;
    return worst != MPI_SUCCESS ? worst : local;
}

/* Leader style (uneven nodes, counts past INT_MAX, powersgd; see the top
 * of the file). The node's reduce and broadcast run on host floats: in
 * and out themselves, or, where ops stages (device vectors), one host copy
 * of the vector; the leader's call between nodes runs on out with the
 * whole slot (its residual is its node sum's), staged there and back. */
static int hier_leader(gcmpi_coll_ctx *ctx, gcmpi_nodes *n, const gcmpi_hier_vec_ops *ops,
                       const float *in, float *out, size_t count, gcmpi_ef_slot *ef)
{
    gcmpi_call_stats *st = ctx->stats;
    const int leader = n->node_rank == 0;
    const size_t bytes = count * sizeof(float);

    const float *hin;
    float *hout;
    int local;
    if (!host_side(ops, in, out, count, &hin, &hout, &local)) return MPI_ERR_NO_MEM;

    double t0 = PMPI_Wtime();
    int rc = MPI_SUCCESS;
    if (n->node_size > 1) {
        rc = node_reduce(hin, hout, count, leader, n->node);
        if (!leader) st->bytes_sent += (uint64_t)bytes;
    } else if (hin != hout) {
        memcpy(hout, hin, bytes);
    }
    st->comm_s += PMPI_Wtime() - t0;

    /* Between nodes: the leaders, on their node sums, in place. */
    int inner_rc = rc;
    const int between = rc == MPI_SUCCESS && leader && n->n_nodes > 1;
    if (between) {
        if (ops->stage && local == MPI_SUCCESS) local = ops->stage(out, hout, bytes);
        gcmpi_coll_ctx others = *ctx;
        others.comm = n->leaders;
        others.rank = n->node_index;
        others.size = n->n_nodes;
        others.cache = NULL;
        inner_rc = ops->run(&others, between_algo(ctx, n, count), out, out, count, ef);
        if (ops->stage && local == MPI_SUCCESS && n->node_size > 1)
            local = ops->stage(hout, out, bytes);
    }

    if (rc == MPI_SUCCESS && n->node_size > 1) {
        t0 = PMPI_Wtime();
        rc = node_bcast(hout, count, n->node);
        if (rc == MPI_SUCCESS) rc = PMPI_Bcast(&inner_rc, 1, MPI_INT, 0, n->node);
        if (leader) st->bytes_sent += (uint64_t)bytes + sizeof(int);
        st->comm_s += PMPI_Wtime() - t0;
    }
    /* The leader's out already holds the result it computed there. */
    if (rc == MPI_SUCCESS && ops->stage && local == MPI_SUCCESS && !between)
        local = ops->stage(out, hout, bytes);
    if (rc != MPI_SUCCESS) return rc;
    return inner_rc != MPI_SUCCESS ? inner_rc : local;
}

int gcmpi_hier_with(gcmpi_coll_ctx *ctx, const gcmpi_hier_vec_ops *ops, const float *in,
                    float *out, size_t count, gcmpi_ef_slot *ef)
{
    gcmpi_nodes *n = NULL;
    int owned = 0;
    int rc = nodes_of(ctx, &n, &owned);
    if (rc != MPI_SUCCESS) return rc;
    if (by_chunks(ctx->cfg, n, count))
        rc = hier_scatter(ctx, n, ops, in, out, count, ef);
    else
        rc = hier_leader(ctx, n, ops, in, out, count, ef);
    if (owned) gcmpi_nodes_free(n);
    return rc;
}

int gcmpi_hier_between(gcmpi_coll_ctx *ctx, size_t count, gcmpi_algo *inner)
{
    gcmpi_nodes *n = NULL;
    int owned;
    *inner = GCMPI_ALGO_PASS;
    if (!ctx->cache || nodes_of(ctx, &n, &owned) != MPI_SUCCESS) return 0;
    if (n->n_nodes < 2) return 1;
    if (!by_chunks(ctx->cfg, n, count)) {
        *inner = between_algo(ctx, n, count); /* the leaders' call */
        return 1;
    }
    const size_t len = gcmpi_chunk_len(count, n->node_size, n->node_rank);
    if (len) *inner = between_algo(ctx, n, len);
    return 1;
}

int gcmpi_allreduce_hier(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                         gcmpi_ef_slot *ef)
{
    return gcmpi_hier_with(ctx, &host_vectors, in, out, count, ef);
}

/* The communicator's node split where a payload all-gather can go node
 * by node (several nodes, not one a rank; a cache to keep the split in),
 * else NULL. */
static gcmpi_nodes *gather_nodes_of(gcmpi_coll_ctx *ctx, int *rc)
{
    *rc = MPI_SUCCESS;
    if (!ctx->cache) return NULL;
    gcmpi_nodes *n;
    int owned;
    *rc = nodes_of(ctx, &n, &owned);
    if (*rc != MPI_SUCCESS) return NULL;
    /* One node, or a node per rank: the flat all-gather is the same path. */
    return n->n_nodes > 1 && n->n_nodes < ctx->size ? n : NULL;
}

int gcmpi_coll_can_gather_by_node(gcmpi_coll_ctx *ctx, int *rc)
{
    return gather_nodes_of(ctx, rc) != NULL;
}

int gcmpi_coll_gather_by_node(gcmpi_coll_ctx *ctx, gcmpi_algo way)
{
    int rc = MPI_SUCCESS;
    ctx->gather_nodes = way == GCMPI_ALGO_HIER ? gather_nodes_of(ctx, &rc) : NULL;
    return rc;
}
