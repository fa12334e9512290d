/* adapt_call.c — the steps of adapt_call.h, in the order gc_adapt.h gives:
 * local statistics, one agreement, decision, shaping, width policy, the
 * collective (the shim's), observation; for device buffers, the element
 * passes on the GPU around the same scalar steps. */
#include "adapt_call.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "device.h"

size_t gcmpi_adapt_slot_bytes(const gcmpi_config *cfg, size_t count, int on_dev)
{
    if (!gc_adapt_active(&cfg->adapt)) return 0;
    return gc_adapt_state_bytes(&cfg->adapt, cfg->codec, on_dev ? 0 : count);
}

size_t gcmpi_adapt_device_floats(const gcmpi_config *cfg, size_t count, int on_dev)
{
    if (!on_dev || !gc_adapt_active(&cfg->adapt)) return 0;
    return gc_adapt_history_floats(&cfg->adapt, count);
}

/* A GPU pass: 1 when it ran, its seconds counted as device time. A
 * failure (the GPU has no memory, or is gone) leaves the call unadapted
 * on this rank alone, which the agreement tolerates: the collective that
 * follows reports the device's state. */
static int gpu_ok(size_t r, double t0)
{
    gcmpi_device_stats_mut()->device_s += PMPI_Wtime() - t0;
    return !gc_is_error(r);
}

/* EDGC's sample of a device buffer, gathered on the GPU: its length, 0
 * when this call does not sample or the gather failed. */
static size_t device_sample(gcmpi_adapt_call *ac, const gcmpi_config *cfg, gcmpi_comm_state *st,
                            const float *in, size_t count, uint64_t seed, float **sample)
{
    const gcmpi_gpu_table *gpu = gcmpi_device_gpu();
    const size_t m = gc_adapt_sample_len(ac->state, &cfg->adapt, count);
    *sample = m && gpu ? gcmpi_scratch_get(&st->scratch, GCMPI_SCRATCH_ADAPT, m * sizeof(float))
                       : NULL;
    if (!*sample) return 0;
    const double t0 = PMPI_Wtime();
    return gpu_ok(gpu->adapt_sample(gcmpi_device_ctx(), in, count, m, seed, *sample), t0) ? m : 0;
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
    if (!ac->on_dev) {
        gc_adapt_local(ac->state, &cfg->adapt, in, count, ctx->call_seed, local);
    } else {
        float *sample = NULL;
        const size_t m =
            ac->remembers ? device_sample(ac, cfg, st, in, count, ctx->call_seed, &sample) : 0;
        gc_adapt_local_sample(ac->state, &cfg->adapt, sample, m, local);
    }
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
                      size_t count, int on_dev, gcmpi_config *call, const float **send)
{
    memset(ac, 0, sizeof *ac);
    *send = in;
    ac->on_dev = on_dev;
    ac->history = slot->history;
    /* A device buffer's state is usable with its history in device memory
     * (a method without history has none to keep). */
    ac->remembers = slot->adapt != NULL &&
                    (!on_dev || slot->history || gcmpi_adapt_device_floats(cfg, count, 1) == 0);
    if (ac->remembers) {
        ac->state = slot->adapt;
        if (slot->adapt_fresh && on_dev)
            gc_adapt_state_init_apart(ac->state, &cfg->adapt, cfg->codec, &cfg->params, count);
        else if (slot->adapt_fresh)
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

    if (ac->remembers && cfg->adapt.method == GC_ADAPT_GCT && !on_dev) {
        /* The user's send buffer is const: shape into scratch. Without
         * memory the gradient goes unshaped, which only this rank sees. */
        float *shaped = gcmpi_scratch_get(&st->scratch, GCMPI_SCRATCH_ADAPT,
                                          count * sizeof(float));
        if (shaped && gc_adapt_shape(ac->state, &cfg->adapt, in, shaped, count)) *send = shaped;
    } else if (ac->remembers && cfg->adapt.method == GC_ADAPT_GCT) {
        /* The same on the device, into a pool buffer; the first call has
         * no previous gradient and sends in itself. */
        float *shaped = gcmpi_device_buffer(GCMPI_DEV_BUF_SHAPED, count * sizeof(float));
        gc_gct_apply a;
        if (shaped && gc_adapt_shape_step(ac->state, &cfg->adapt, count, &a) && a.with_prev) {
            const double t0 = PMPI_Wtime();
            const size_t r = gcmpi_device_gpu()->adapt_gct_shape(
                gcmpi_device_ctx(), in, ac->history, count, 1, a.c, a.eps, a.eq9, shaped);
            if (gpu_ok(r, t0)) *send = shaped;
        }
    }
    if (ac->remembers) {
        ac->policy = gc_adapt_width_policy(ac->state, &cfg->adapt);
        if (ac->policy) gc_workspace_set_width_policy(st->ws, ac->policy);
        /* topkq's kernels take it from the GPU context. */
        if (ac->policy && on_dev) gcmpi_device_gpu()->set_width_policy(gcmpi_device_ctx(), ac->policy);
    }
    return MPI_SUCCESS;
}

/* The observation of a device buffer: the history's pass on the GPU
 * (GCT's mean, the variance method's sums), then the scalar step. */
static int observe_on_device(gcmpi_adapt_call *ac, const gcmpi_config *cfg,
                             gcmpi_comm_state *st, const float *out, size_t count,
                             const gcmpi_call_stats *cs)
{
    const gcmpi_gpu_table *gpu = gcmpi_device_gpu();
    double moved = 0.0, norm = 0.0;
    const double t0 = PMPI_Wtime();
    size_t r = 0;
    if (ac->history && cfg->adapt.method == GC_ADAPT_GCT)
        r = gpu->adapt_remember(gcmpi_device_ctx(), out, count, st->size, ac->history);
    else if (ac->history && cfg->adapt.method == GC_ADAPT_VARIANCE)
        r = gpu->adapt_var_moves(gcmpi_device_ctx(), out, count, st->size, ac->history, &moved,
                                 &norm);
    if (ac->history && !gpu_ok(r, t0)) return 0;
    gc_adapt_observe_apart(ac->state, &cfg->adapt, count, moved, norm, st->size,
                           (double)cs->bytes_sent, cs->comm_s);
    return 1;
}

void gcmpi_adapt_end(gcmpi_adapt_call *ac, const gcmpi_config *cfg, gcmpi_comm_state *st,
                     int ok, const float *out, size_t count, gcmpi_call_stats *cs,
                     gc_adapt_report *report)
{
    if (ac->policy) gc_workspace_set_width_policy(st->ws, NULL);
    if (ac->policy && ac->on_dev) gcmpi_device_gpu()->set_width_policy(gcmpi_device_ctx(), NULL);
    cs->comm_s += ac->agree_s;
    cs->bytes_sent += ac->agree_bytes;
    *report = (gc_adapt_report){NAN, NAN, NAN, NAN, NAN, NAN};
    if (!ok || !ac->remembers) return;
    if (!ac->on_dev) {
        gc_adapt_observe(ac->state, &cfg->adapt, out, count, st->size, (double)cs->bytes_sent,
                         cs->comm_s);
    } else if (!observe_on_device(ac, cfg, st, out, count, cs)) {
        return; /* the history could not be updated: no observation */
    }
    gc_adapt_report_of(ac->state, &cfg->adapt, report);
}
