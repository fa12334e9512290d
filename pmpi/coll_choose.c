/* coll_choose.c — which algorithm a call uses, what error-feedback state it
 * needs, and the dispatch to it.
 *
 * The auto rule (a pure function of the configuration and the communicator
 * size, so every rank picks the same):
 *   none, randk, powersgd  native: MPI sums the floats, randk's k values
 *                 (shared indices) or PowerSGD's P and Q itself;
 *   p = 2         allgather: it moves the same bytes as rsag in two
 *                 exchanges instead of four, and quantises once, not twice;
 *   sparse codecs allgather while p <= 8 (p small payloads beat four
 *                 exchanges), rsag above;
 *   sign, onebit  the same: rsag would re-quantise the sum of p sign
 *                 vectors to one sign per element with a second
 *                 residual, and that second, coarse quantisation of an
 *                 already delayed sum is what made sign and onebit with
 *                 error feedback and momentum diverge at lr 0.05 (README,
 *                 "sign and onebit"); all-gathering quantises once;
 *   dense codecs  rsag, about 2c bytes per rank whatever p (int8 too; its
 *                 native form is there when forced).
 * Native has no payload, so when the zstd stage or CRC is asked for, auto
 * never picks it (a setting is never silently dropped): none goes to the
 * dense rule, randk to the sparse rule, powersgd to allgather (its
 * payloads, P and Q, are small). topkq is sparse (GC_SPARSE) and follows
 * the sparse rule like topk; it has no native path. GCMPI_ALGO forces an
 * algorithm; config/ refuses native for a codec without a native path.
 * None of this depends on the parameters the adaptive layer changes
 * (ratio, rank), so the pick is the same before and after a decision. */
#include "coll_impl.h"

#include <math.h>

static int codec_is(const gc_codec *c, const char *name)
{
    return strcmp(gc_codec_name(c), name) == 0;
}

int gcmpi_coll_supports(const gc_codec *codec, gcmpi_algo algo)
{
    if (!codec) return 0;
    switch (algo) {
    case GCMPI_ALGO_NATIVE: return gcmpi_codec_has_native_path(codec);
    case GCMPI_ALGO_SPARSE_RD: return (gc_codec_flags(codec) & GC_SPARSE) != 0;
    case GCMPI_ALGO_AUTO:
    case GCMPI_ALGO_COUNT: return 0;
    default: return 1;
    }
}

/* Uncompressed: MPI sums the floats, in pieces whose count fits an int.
 * No residual is touched: nothing is dropped. */
static int allreduce_passthrough(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count)
{
    const size_t piece = (size_t)1 << 30;
    int rc = MPI_SUCCESS;
    double t0 = PMPI_Wtime();
    for (size_t at = 0; at < count && rc == MPI_SUCCESS; at += piece) {
        const int n = (int)(count - at < piece ? count - at : piece);
        rc = PMPI_Allreduce(in == out ? MPI_IN_PLACE : (const void *)(in + at), out + at, n,
                            MPI_FLOAT, MPI_SUM, ctx->comm);
    }
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    ctx->stats->bytes_sent += (uint64_t)count * sizeof(float);
    return rc;
}

gcmpi_algo gcmpi_coll_choose(const gcmpi_config *cfg, size_t count, int comm_size)
{
    if (cfg->algo != GCMPI_ALGO_AUTO && cfg->algo != GCMPI_ALGO_RULE) return cfg->algo;
    return gcmpi_coll_rule(cfg, count, comm_size);
}

gcmpi_algo gcmpi_coll_rule(const gcmpi_config *cfg, size_t count, int comm_size)
{
    (void)count; /* eligible calls are large enough that size does not change the pick */
    const gc_codec *c = cfg->codec;
    const int payload_only = cfg->params.zstd_level > 0 || (cfg->params.flags & GC_PF_CRC);
    if (!payload_only && (codec_is(c, "none") || codec_is(c, "randk") || codec_is(c, "powersgd")))
        return GCMPI_ALGO_NATIVE;
    if (codec_is(c, "powersgd") || comm_size <= 2) return GCMPI_ALGO_ALLGATHER;
    if ((gc_codec_flags(c) & GC_SPARSE) || codec_is(c, "sign") || codec_is(c, "onebit"))
        return comm_size <= 8 ? GCMPI_ALGO_ALLGATHER : GCMPI_ALGO_RSAG;
    return GCMPI_ALGO_RSAG;
}

unsigned gcmpi_coll_max_rank(const gcmpi_config *cfg)
{
    unsigned rank = cfg->params.rank;
    if (cfg->adapt.method != GC_ADAPT_EDGC || !codec_is(cfg->codec, "powersgd")) return rank;
    /* An agreed rank is the rounded mean of proposals, each the configured
     * rank (a rank without state) or within EDGC's bounds. */
    gc_edgc_state bounds;
    gc_edgc_init(&bounds, &cfg->adapt.edgc, (double)rank, 1);
    const double hi = ceil(bounds.hi);
    return hi > (double)rank && hi < (double)UINT_MAX ? (unsigned)hi : rank;
}

void gcmpi_coll_slot_sizes(const gcmpi_config *cfg, gcmpi_algo algo, size_t count,
                           int comm_size, size_t *server_floats, size_t *state_floats)
{
    if (algo == GCMPI_ALGO_AUTO || algo == GCMPI_ALGO_RULE)
        algo = gcmpi_coll_choose(cfg, count, comm_size);
    const int p = comm_size > 0 ? comm_size : 1;
    *server_floats = algo == GCMPI_ALGO_RSAG ? gcmpi_chunk_len(count, p, 0) : 0;
    if (algo == GCMPI_ALGO_HIER) {
        /* Between nodes the rule runs; it picks rsag only for 3 nodes or
         * more, whose largest chunk is at most ceil(count / 3). The node
         * count is not known here, so the bound covers every case. */
        *server_floats = gcmpi_chunk_len(count, 3, 0);
        algo = gcmpi_coll_rule(cfg, count, comm_size);
    }
    *state_floats = 0;
    if (algo == GCMPI_ALGO_NATIVE && codec_is(cfg->codec, "powersgd")) {
        gc_powersgd_shape s = gc_powersgd_shape_of(count, gcmpi_coll_max_rank(cfg));
        *state_floats = s.cols * s.rank; /* the warm-start Q */
    } else if (cfg->ef_momentum > 0.0 && (gc_codec_flags(cfg->codec) & GC_SPARSE)) {
        *state_floats = count; /* DGC momentum u (GCMPI_MOMENTUM's is in slot->momentum) */
    }
}

size_t gcmpi_coll_momentum_floats(const gcmpi_config *cfg, size_t count)
{
    /* the shim keeps residuals (and so this state) for lossy codecs only */
    const int residuals = cfg->ef && !(gc_codec_flags(cfg->codec) & GC_LOSSLESS);
    return cfg->momentum > 0.0 && residuals ? 2 * count : 0;
}

int gcmpi_coll_exact(gcmpi_coll_ctx *ctx, gcmpi_algo algo, size_t count)
{
    return algo == GCMPI_ALGO_PASS || (algo == GCMPI_ALGO_HIER && gcmpi_hier_exact(ctx, count));
}

void gcmpi_coll_slot_split(gcmpi_ef_slot *slot, size_t state_floats, size_t momentum_floats,
                           size_t history_floats)
{
    float *base = slot->state;
    if (!base) return;
    slot->momentum = momentum_floats ? base + state_floats : NULL;
    slot->history = history_floats ? base + state_floats + momentum_floats : NULL;
    if (state_floats == 0) slot->state = NULL;
}

int gcmpi_allreduce_compressed(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in,
                               float *out, size_t count, gcmpi_ef_slot *ef)
{
    gcmpi_call_stats scratch_stats;
    gcmpi_call_stats *caller_stats = ctx->stats;
    if (!ctx->stats) ctx->stats = &scratch_stats;
    memset(ctx->stats, 0, sizeof *ctx->stats);
    ctx->stats->bytes_offered = (uint64_t)count * sizeof(float);

    int rc = MPI_SUCCESS;
    if (algo == GCMPI_ALGO_AUTO || algo == GCMPI_ALGO_RULE) algo = gcmpi_coll_pick(ctx, count, &rc);
    /* A trial call starts together on every rank: else it is charged with
     * the previous call's stragglers (after a passthrough call over a
     * 1 Gbit/s link the next candidate took 2-3x its own time). The
     * device path times its calls itself, copies included. */
    const int timed = !ctx->on_device;
    if (rc == MPI_SUCCESS && timed && gcmpi_auto_in_trial(ctx, count))
        rc = PMPI_Barrier(ctx->comm);
    const double t0 = PMPI_Wtime();
    /* An exact call has no error for momentum correction to make up: it
     * sums g as MPI would, and the optimizer's own momentum is exact. It
     * skips the correction and its agreement (one small allreduce a call,
     * which cost passthrough 2-3 s of a 13 s epoch on the emulated
     * cluster), and u and m restart at the next lossy call: the algorithm
     * is the same on every rank, so the lapse is too. */
    const int correct = count && gcmpi_coll_supports(ctx->cfg->codec, algo) &&
                        gcmpi_coll_momentum_floats(ctx->cfg, count) > 0;
    const int exact = correct && gcmpi_coll_exact(ctx, algo, count);
    if (exact && ef && ef->momentum && ef->momentum_lapsed) *ef->momentum_lapsed = 1;
    if (rc == MPI_SUCCESS && correct && !exact)
        rc = gcmpi_coll_momentum_allreduce(ctx, algo, in, out, count, ef);
    else if (rc == MPI_SUCCESS)
        rc = gcmpi_coll_run(ctx, algo, in, out, count, ef);
    if (rc == MPI_SUCCESS && timed) gcmpi_auto_note(ctx, count, algo, PMPI_Wtime() - t0);
    ctx->stats = caller_stats;
    return rc;
}

int gcmpi_coll_run(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                   size_t count, gcmpi_ef_slot *ef)
{
    /* count is the same on every rank: an empty call is a no-op everywhere. */
    if (count == 0) return MPI_SUCCESS;
    if (!gcmpi_coll_supports(ctx->cfg->codec, algo)) return MPI_ERR_ARG;
    /* Passthrough, and hier on one node through its window, run no codec:
     * MPI_SUM's own arithmetic takes inf and NaN as they are, so no pass
     * over the input (it cost auto's passthrough pick 20% against
     * PMPI_Allreduce at 16 MiB over shared memory, and hier a tenth of its
     * 64 MiB call on 4 ranks). */
    if (gcmpi_coll_exact(ctx, algo, count))
        return gcmpi_coll_dispatch(ctx, algo, in, out, count, ef);
    /* hier between nodes encodes node sums, not this rank's input: each
     * column (or leader) scans the sum it encodes through this function,
     * and inf or NaN in any input is inf or NaN there. A pass over the
     * whole input as well cost 8 ranks on the emulated 2 x 4 cluster 50 ms
     * of a 214 ms topk call of 64 MiB. */
    if (algo == GCMPI_ALGO_HIER) return gcmpi_coll_dispatch(ctx, algo, in, out, count, ef);
    /* hier's column: its node's window checked the sum while making it. */
    if (!gcmpi_coll_known_finite(ctx, in, count) && !gc_all_finite(in, count)) {
        /* An overflow step (inf or NaN in this rank's gradient, or in a
         * node's sum under hier): sent as it is (a flagged payload; native
         * paths mark its blocks), so the sum is non-finite where MPI_SUM's
         * is, and neither the residual nor the momentum takes the value. */
        gcmpi_ef_slot bare;
        ctx->stats->nonfinite_in = 1;
        return gcmpi_coll_dispatch(ctx, algo, in, out, count, gcmpi_ef_without_state(ef, &bare));
    }
    /* Found finite: the encoder need not look again (a fifth of topk's
     * encode). Kept for this dispatch only; an outer run's is restored. */
    const float *outer_in = ctx->finite_in;
    const size_t outer_n = ctx->finite_n;
    ctx->finite_in = in;
    ctx->finite_n = count;
    const int rc = gcmpi_coll_dispatch(ctx, algo, in, out, count, ef);
    ctx->finite_in = outer_in;
    ctx->finite_n = outer_n;
    return rc;
}

int gcmpi_coll_dispatch(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                        size_t count, gcmpi_ef_slot *ef)
{
    switch (algo) {
    case GCMPI_ALGO_ALLGATHER: return gcmpi_allreduce_allgather(ctx, in, out, count, ef);
    case GCMPI_ALGO_NATIVE: return gcmpi_allreduce_native(ctx, in, out, count, ef);
    case GCMPI_ALGO_HIER: return gcmpi_allreduce_hier(ctx, in, out, count, ef);
    case GCMPI_ALGO_RSAG: return gcmpi_allreduce_rsag(ctx, in, out, count, ef);
    case GCMPI_ALGO_PASS: return allreduce_passthrough(ctx, in, out, count);
    case GCMPI_ALGO_SPARSE_RD: return gcmpi_allreduce_sparse_rd(ctx, in, out, count, ef);
    case GCMPI_ALGO_AUTO:
    case GCMPI_ALGO_RULE:
    case GCMPI_ALGO_COUNT: break;
    }
    return MPI_ERR_ARG;
}
