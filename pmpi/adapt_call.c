/* adapt_call.c — the steps of adapt_call.h, in the order gc_adapt.h gives:
 * local statistics, one agreement, decision, shaping, width policy, the
 * collective (the shim's), observation. */
#include "adapt_call.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

size_t gcmpi_adapt_slot_bytes(const gcmpi_config *cfg, size_t count)
{
    if (!gc_adapt_active(&cfg->adapt)) return 0;
    return gc_adapt_state_bytes(&cfg->adapt, cfg->codec, count);
}

/* A block without history standing in for a state this rank does not
 * hold: it proposes the configured setting. Out of memory stops the job,
 * because the agreement that follows must run on every rank. */
static void *stand_in(const gcmpi_config *cfg, gcmpi_comm_state *st)
{
    const size_t bytes = gc_adapt_state_bytes(&cfg->adapt, cfg->codec, 0);
    void *block = gcmpi_scratch_get(&st->scratch, GCMPI_SCRATCH_ADAPT, bytes);
    if (!block) {
        fprintf(stderr, "libgcmpi: out of memory for the adaptive layer; stopping the job\n");
        PMPI_Abort(st->user, 1);
        return NULL;
    }
    memset(block, 0, bytes);
    gc_adapt_state_init(block, &cfg->adapt, cfg->codec, &cfg->params, 0);
    return block;
}

static int agree(gcmpi_adapt_call *ac, const gcmpi_config *cfg, gcmpi_comm_state *st,
                 const gcmpi_coll_ctx *ctx, const float *in, size_t count, int64_t *sum)
{
    const int len = gc_adapt_agree_len(&cfg->adapt, cfg->codec);
    if (len == 0) return MPI_SUCCESS;
    int64_t local[GC_ADAPT_AGREE_LEN];
    gc_adapt_local(ac->state, &cfg->adapt, in, count, ctx->call_seed, local);
    /* No state: the configured setting, no entropy. */
    if (!ac->remembers) local[1] = local[2] = local[3] = 0;
    const double t0 = PMPI_Wtime();
    int rc = PMPI_Allreduce(local, sum, len, MPI_INT64_T, MPI_SUM, st->dup);
    ac->agree_s = PMPI_Wtime() - t0;
    ac->agree_bytes = (uint64_t)len * sizeof(int64_t);
    return rc;
}

int gcmpi_adapt_begin(gcmpi_adapt_call *ac, const gcmpi_config *cfg, gcmpi_comm_state *st,
                      const gcmpi_coll_ctx *ctx, gcmpi_ef_slot *slot, const float *in,
                      size_t count, gcmpi_config *call, const float **send)
{
    memset(ac, 0, sizeof *ac);
    *send = in;
    ac->remembers = slot->adapt != NULL;
    if (ac->remembers) {
        ac->state = slot->adapt;
        if (slot->adapt_fresh)
            gc_adapt_state_init(ac->state, &cfg->adapt, cfg->codec, &cfg->params, count);
    } else {
        ac->state = stand_in(cfg, st);
    }
    gc_adapt_report before;
    gc_adapt_report_of(ac->state, &cfg->adapt, &before);

    int64_t sum[GC_ADAPT_AGREE_LEN] = {0};
    int rc = agree(ac, cfg, st, ctx, in, count, sum);
    if (rc != MPI_SUCCESS) return rc;
    const int agreed = gc_adapt_agree_len(&cfg->adapt, cfg->codec) > 0;
    gc_adapt_decide(ac->state, &cfg->adapt, agreed ? sum : NULL, st->size, &call->params);

    /* powersgd's warm-start Q has the last call's rank in its layout. */
    slot->state_reset = !(before.rank == (double)call->params.rank);

    if (ac->remembers && cfg->adapt.method == GC_ADAPT_GCT) {
        /* The user's send buffer is const: shape into scratch. Without
         * memory the gradient goes unshaped, which only this rank sees. */
        float *shaped = gcmpi_scratch_get(&st->scratch, GCMPI_SCRATCH_ADAPT,
                                          count * sizeof(float));
        if (shaped && gc_adapt_shape(ac->state, &cfg->adapt, in, shaped, count)) *send = shaped;
    }
    if (ac->remembers) {
        ac->policy = gc_adapt_width_policy(ac->state, &cfg->adapt);
        if (ac->policy) gc_workspace_set_width_policy(st->ws, ac->policy);
    }
    return MPI_SUCCESS;
}

void gcmpi_adapt_end(gcmpi_adapt_call *ac, const gcmpi_config *cfg, gcmpi_comm_state *st,
                     int ok, const float *out, size_t count, gcmpi_call_stats *cs,
                     gc_adapt_report *report)
{
    if (ac->policy) gc_workspace_set_width_policy(st->ws, NULL);
    cs->comm_s += ac->agree_s;
    cs->bytes_sent += ac->agree_bytes;
    *report = (gc_adapt_report){NAN, NAN, NAN, NAN, NAN, NAN};
    if (!ok || !ac->remembers) return;
    gc_adapt_observe(ac->state, &cfg->adapt, out, count, st->size, (double)cs->bytes_sent,
                     cs->comm_s);
    gc_adapt_report_of(ac->state, &cfg->adapt, report);
}
