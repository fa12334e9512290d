/* adapt_call.h — the adaptive layer (codecs/adapt/gc_adapt.h) around one
 * compressed MPI_Allreduce: initialise the buffer's block, agree with the
 * other ranks, decide this call's parameters, shape the gradient, install
 * topkq's width policy, and observe the result. Internal to pmpi/.
 *
 * Every rank makes exactly one agreement PMPI_Allreduce per compressed
 * allreduce when gc_adapt_agree_len() > 0, whether or not it holds the
 * buffer's state (it may have been evicted, or never fitted under
 * GCMPI_EF_MAX_BYTES): a rank without state proposes the configured
 * setting from a stand-in block, so no rank can wait for another.
 *
 * Device buffers (on_dev): the block is the header alone and the history
 * is slot->history in device memory; the element passes (EDGC's sample,
 * GCT's shaping and remembered mean, the variance sums) run on the GPU
 * (gcmpi_gpu.h "the adaptive layer"), so only the sample crosses to the
 * host, and the adaptation is bit for bit the host's. */
#ifndef GCMPI_ADAPT_CALL_H
#define GCMPI_ADAPT_CALL_H

#include "comm_state.h"

/* The shim's scratch slot for the GCT-shaped gradient, the stand-in
 * block, or a device buffer's EDGC sample. GCMPI_VERIFY of MPI_Allgather uses it too; MPI_Allgather never
 * adapts, and allreduce's verify copy is in GCMPI_SCRATCH_SHIM_FIRST. */
#define GCMPI_SCRATCH_ADAPT (GCMPI_SCRATCH_SHIM_FIRST + 1)

typedef struct gcmpi_adapt_call {
    void *state;                   /* the buffer's block, or the stand-in     */
    int remembers;                 /* the block lives in the slot             */
    const gc_width_policy *policy; /* installed on the workspace, or NULL     */
    int on_dev;                    /* the buffers are device memory           */
    float *history;                /* on_dev: the history in device memory    */
    double agree_s;                /* the agreement's seconds and bytes       */
    uint64_t agree_bytes;
} gcmpi_adapt_call;

/* Bytes of the adaptive block a slot needs for count floats (0 when the
 * layer is off), and the floats of history a device buffer's slot keeps
 * apart in device memory (0 on the host, where they are in the block). */
size_t gcmpi_adapt_slot_bytes(const gcmpi_config *cfg, size_t count, int on_dev);
size_t gcmpi_adapt_device_floats(const gcmpi_config *cfg, size_t count, int on_dev);

/* Before the collective. call holds a copy of cfg and receives this call's
 * parameters; *send is in, or the shaped gradient (device memory when
 * on_dev). Sets slot->state_reset when powersgd's rank changed. Returns
 * MPI_SUCCESS or the agreement's MPI error (the same call failed on every
 * rank). */
int gcmpi_adapt_begin(gcmpi_adapt_call *ac, const gcmpi_config *cfg, gcmpi_comm_state *st,
                      const gcmpi_coll_ctx *ctx, gcmpi_ef_slot *slot, const float *in,
                      size_t count, int on_dev, gcmpi_config *call, const float **send);

/* After the collective: removes the width policy, adds the agreement to
 * cs, and when the call succeeded lets the state observe out (the sum)
 * and fills *report (NaN fields where nothing applies). */
void gcmpi_adapt_end(gcmpi_adapt_call *ac, const gcmpi_config *cfg, gcmpi_comm_state *st,
                     int ok, const float *out, size_t count, gcmpi_call_stats *cs,
                     gc_adapt_report *report);

#endif /* GCMPI_ADAPT_CALL_H */
