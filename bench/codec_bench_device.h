/* codec_bench_device.h — `gcmpi-codec-bench --device cuda`: every chosen
 * codec's gcmpi_gpu_encode and gcmpi_gpu_decode_add on device buffers,
 * against a device-to-device copy of the same bytes in the same run. */
#ifndef CODEC_BENCH_DEVICE_H
#define CODEC_BENCH_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gcmpi_codec.h"

/* Measure codecs[0..count) on g[0..n) (host memory, copied to the device)
 * with params p (ef: with a device residual), best of reps; print one
 * table (or JSON with json) to stdout. Returns the number of codecs that
 * failed (messages on stderr), or -1 when there is no usable device. */
int codec_bench_device(const gc_codec *const *codecs, size_t count, const float *g, size_t n,
                       const gc_params *p, bool ef, unsigned reps, uint64_t seed, bool json);

#endif
