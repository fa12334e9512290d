/* coll_device.h — gcmpi_allreduce_compressed and gcmpi_allgather_compressed
 * (coll.h) for device buffers: in, out and the slot's residual, server and
 * state are device memory (pmpi/device.h; the slot from a GCMPI_EF_DEVICE
 * entry). Same contract, same messages, bit-identical results on all ranks.
 * Callers hold the device lock. */
#ifndef GCMPI_COLL_DEVICE_H
#define GCMPI_COLL_DEVICE_H

#include "coll.h"

/* 1 when the GPU kernels carry the call (algorithm allgather or rsag with
 * a codec gcmpi_gpu_supports and no zstd stage, or native with none, int8,
 * randk or powersgd; no DGC momentum); otherwise it is compressed on the
 * host from page-locked copies. hier (by chunks) is asked per call in
 * coll_device.c: its column runs one of these. */
int gcmpi_device_has_kernels(const gcmpi_config *cfg, gcmpi_algo algo);

/* The native algorithm on device buffers (coll_device_native.c): 1 for
 * the codecs it carries (none, int8, randk, powersgd), and the call itself
 * (count > 0, in and out device memory, the slot's residual too). */
int gcmpi_device_native_supports(const gc_codec *codec);
int gcmpi_device_allreduce_native(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                                  gcmpi_ef_slot *ef);

int gcmpi_device_allreduce_compressed(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in,
                                      float *out, size_t count, gcmpi_ef_slot *ef);
/* gcmpi_allgather_compressed on buffers of which one at least is device
 * memory: passthrough staged (or handed to a CUDA-aware MPI), compressed
 * by the kernels where they carry the codec and both buffers are on the
 * device, else through host copies; each call timed whole for auto's
 * trial. */
int gcmpi_device_allgather_compressed(gcmpi_coll_ctx *ctx, gcmpi_algo way, const float *block,
                                      float *out, size_t count, gcmpi_ef_slot *ef);

#endif /* GCMPI_COLL_DEVICE_H */
