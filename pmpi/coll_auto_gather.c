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
 * either way), so among them only time decides.
 *
 * GCMPI_AUTO_CACHE keeps the settled rows (size, way, median call) in a
 * file of their own key. A later job with that key runs a size's first
 * call the cached way, timed as a trial call, and settles on it when the
 * slowest rank's call is within GCMPI_AUTO_CACHE_TOLERANCE of the cached
 * median; after two misses (a passing load fails one) it tries the three
 * as without a cache, that call counting as the way's first, and saves
 * the new outcome over the old. */
#include "coll_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auto_cache.h"

/* The cached outcome for count; NULL for none. The same on every rank. */
static gcmpi_auto_settled *cached_row(gcmpi_gather_choices *g, size_t count)
{
    for (int i = 0; i < g->cached.n_settled; i++)
        if (g->cached.settled[i].count == count) return &g->cached.settled[i];
    return NULL;
}

/* The file's rows, looked up once per communicator (collective). */
static int look_up(gcmpi_coll_ctx *ctx, gcmpi_gather_choices *g)
{
    if (!ctx->cache->nodes) return MPI_SUCCESS; /* no node split: no key */
    gcmpi_auto_cache *c = malloc(sizeof *c);
    int ok = c != NULL, all = 0, found = 0;
    int rc = PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (rc == MPI_SUCCESS && all)
        rc = gcmpi_auto_cache_lookup(ctx->cfg, ctx->comm, ctx->cache->nodes, "allgather", c,
                                     &g->cached, &found);
    if (!found) memset(&g->cached, 0, sizeof g->cached);
    if (rc == MPI_SUCCESS && all && c->on) {
        snprintf(g->cache_file, sizeof g->cache_file, "%s", c->path);
        g->cache = c;
        c = NULL;
    }
    free(c);
    return rc;
}

/* A settled trial into the table (replacing the row of its size), saved
 * by rank 0. */
static void remember(gcmpi_gather_choices *g, const gcmpi_auto_choice *c, double ratio)
{
    gcmpi_auto_settled *row = cached_row(g, c->count);
    if (!row && g->cached.n_settled < GCMPI_AUTO_MAX_CHOICES)
        row = &g->cached.settled[g->cached.n_settled++];
    if (!row) return;
    *row = (gcmpi_auto_settled){c->count, ratio, c->algo, gcmpi_auto_settled_median(c)};
    if (g->cache) g->cache_saved = gcmpi_auto_cache_save(g->cache, &g->cached, 0.0) == 0 ? 1 : -1;
}

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
    return look_up(ctx, g);
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

/* A cached way to check on this size's first call: 1 when the row now
 * runs it (known among the candidates, with a median to check). */
static int start_check(gcmpi_gather_choices *g, gcmpi_auto_choice *c)
{
    const gcmpi_auto_settled *known = cached_row(g, c->count);
    if (!known || !(known->median_s > 0)) return 0;
    for (int i = 0; i < c->n_trial; i++)
        if (c->trial[i] == known->algo) {
            c->checking = 1;
            c->check_algo = known->algo;
            c->cached_s = known->median_s;
            return 1;
        }
    return 0;
}

/* After a check call: the slowest rank's time against the cached median
 * (one PMPI_Allreduce, so every rank reads the same verdict). Settles on
 * the cached way when it holds; stops checking after the second miss. */
static int check_verdict(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c)
{
    double slowest = 0.0;
    const int rc = PMPI_Allreduce(&c->check_s, &slowest, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    if (rc != MPI_SUCCESS) return rc;
    c->checked_s = slowest;
    if (gcmpi_auto_cache_agrees(c->cached_s, slowest)) {
        c->algo = c->check_algo;
        c->settled = 1;
        c->from_cache = 1;
        c->checking = 0;
    } else if (++c->checks >= 2) {
        c->checking = 0;
    }
    return MPI_SUCCESS;
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
    remember(ctx->cache->gather, c, ctx->cfg->params.ratio);
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
    if (c->n_trial == 0) {
        start_trial(c, by_node);
        if (start_check(g, c)) return c->check_algo;
    }
    if (c->settled) return c->algo;
    if (c->checking) {
        *rc = check_verdict(ctx, c);
        if (*rc != MPI_SUCCESS) return GCMPI_ALGO_PASS;
        if (c->settled) return c->algo;
        if (c->checking) return c->check_algo; /* once more */
    }
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
    if (!c) return;
    if (c->checking && way == c->check_algo) c->check_s = seconds;
    gcmpi_auto_record(c, way, seconds, ctx->on_device);
}
