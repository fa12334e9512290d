/* coll_auto_gather.c — how a compressed MPI_Allgather travels, and under
 * GCMPI_ALGO=auto a trial that picks it per block size.
 *
 * An all-gather sums nothing, so the algorithms of allreduce do not apply:
 * what can change is how the payloads travel — flat (PMPI_Allgatherv of
 * every payload over the whole communicator) or node by node (gathered at
 * each node's leader, exchanged between leaders, broadcast inside the
 * node: coll_allgather.c) — and whether to compress at all (passthrough:
 * PMPI_Allgather of the floats). Neither layout wins everywhere: on the
 * emulated 2 x 4 cluster at 1 Gbit/s node by node took int8's 1 MiB
 * blocks in half the flat time and topk 0.01's in 1.2x it, and over
 * shared memory or for small blocks passing the floats through can beat
 * both. So auto runs, per block size, each candidate for 3 to
 * GCMPI_AUTO_TRIAL_CALLS calls in turn (each timed from a barrier, all with
 * correct results) and keeps the one whose median call on the slowest
 * rank was fastest, a lossy one only when it beats passthrough by
 * GCMPI_AUTO_MARGIN — the rules of allreduce's trial (coll_auto.c).
 *
 * No cost model: the three candidates' calls are the whole measurement,
 * and a job that only gathers does not pay allreduce's calibration. Flat
 * and node by node decode the same bytes (every rank's result is the same
 * either way), so among them only time decides. */
#include "coll_impl.h"

#include <stdlib.h>

/* The communicator's table of MPI_Allgather rows, made on its first
 * auto call; every rank learns whether every rank could allocate it, so
 * all go on or all fail. */
static int choices_of(gcmpi_coll_ctx *ctx, gcmpi_gather_choices **out)
{
    *out = ctx->cache->gather;
    if (*out) return MPI_SUCCESS;
    gcmpi_gather_choices *g = calloc(1, sizeof *g);
    int ok = g != NULL, all = 0;
    const int rc = PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (rc != MPI_SUCCESS || !all) {
        free(g);
        return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
    }
    g->p = ctx->size;
    g->n_nodes = ctx->cache->nodes ? ctx->cache->nodes->n_nodes : 1;
    *out = ctx->cache->gather = g;
    return MPI_SUCCESS;
}

/* A new row: node by node (where it applies), flat, passthrough. Its
 * "model" is what hier would run, the way auto took before it had a
 * trial. */
static void start_trial(gcmpi_auto_choice *c, int by_node)
{
    if (by_node) c->trial[c->n_trial++] = GCMPI_ALGO_HIER;
    c->trial[c->n_trial++] = GCMPI_ALGO_ALLGATHER;
    c->trial[c->n_trial++] = GCMPI_ALGO_PASS;
    c->model = c->trial[0];
    c->algo = c->model;
}

/* Every candidate has had its calls: the fastest median on the slowest
 * rank, a lossy one only past passthrough's by the margin. */
static int settle(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c)
{
    int rc = gcmpi_auto_agree_medians(ctx, c);
    if (rc != MPI_SUCCESS) return rc;
    const double *t = c->trial_median_s;
    int pass = -1, best = -1;
    for (int i = 0; i < c->n_trial; i++)
        if (c->trial[i] == GCMPI_ALGO_PASS) pass = i;
    for (int i = 0; i < c->n_trial; i++) {
        const int ok = i == pass || t[i] < (1.0 - GCMPI_AUTO_MARGIN) * t[pass];
        if (ok && (best < 0 || t[i] < t[best])) best = i;
    }
    c->algo = c->trial[best];
    c->settled = 1;
    return MPI_SUCCESS;
}

gcmpi_algo gcmpi_gather_pick(gcmpi_coll_ctx *ctx, size_t count, int *rc)
{
    *rc = MPI_SUCCESS;
    const gcmpi_algo algo = ctx->cfg->algo;
    if (algo == GCMPI_ALGO_HIER) return GCMPI_ALGO_HIER;
    if (algo != GCMPI_ALGO_AUTO) return GCMPI_ALGO_ALLGATHER;
    /* Without the communicator's state (no place for a trial's rows) or
     * for an empty call: node by node, as before auto had a trial. */
    if (!ctx->cache || count == 0) return GCMPI_ALGO_HIER;
    const int by_node = gcmpi_coll_can_gather_by_node(ctx, rc);
    if (*rc != MPI_SUCCESS) return GCMPI_ALGO_ALLGATHER;
    gcmpi_gather_choices *g;
    *rc = choices_of(ctx, &g);
    if (*rc != MPI_SUCCESS) return GCMPI_ALGO_ALLGATHER;
    gcmpi_auto_choice *c = gcmpi_auto_row(g->rows, &g->n, count, 1);
    /* Every row taken (the same sizes on every rank): auto's way before
     * it had a trial. */
    if (!c) return by_node ? GCMPI_ALGO_HIER : GCMPI_ALGO_ALLGATHER;
    if (c->n_trial == 0) start_trial(c, by_node);
    if (c->settled) return c->algo;
    const int next = gcmpi_auto_next_candidate(ctx, c, rc);
    if (*rc != MPI_SUCCESS) return GCMPI_ALGO_PASS;
    if (next >= 0) return c->trial[next];
    *rc = settle(ctx, c);
    return *rc == MPI_SUCCESS ? c->algo : GCMPI_ALGO_PASS;
}

static gcmpi_auto_choice *row_of(gcmpi_coll_ctx *ctx, size_t count)
{
    if (ctx->cfg->algo != GCMPI_ALGO_AUTO || !ctx->cache || !ctx->cache->gather) return NULL;
    gcmpi_gather_choices *g = ctx->cache->gather;
    return gcmpi_auto_row(g->rows, &g->n, count, 0);
}

int gcmpi_gather_in_trial(gcmpi_coll_ctx *ctx, size_t count)
{
    const gcmpi_auto_choice *c = row_of(ctx, count);
    return c && !c->settled;
}

void gcmpi_gather_note(gcmpi_coll_ctx *ctx, size_t count, gcmpi_algo way, double seconds)
{
    gcmpi_auto_choice *c = row_of(ctx, count);
    if (c) gcmpi_auto_record(c, way, seconds, ctx->on_device);
}
