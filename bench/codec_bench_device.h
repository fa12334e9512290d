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
 * with params p, best of reps: encode without and with a device residual,
 * decode_add from a payload in device memory and from one in page-locked
 * host memory; print one table (or JSON with json) to stdout. JSON keys
 * per codec: codec, device, n, bits_per_element, copy_gbps, and GB/s of
 * input with its ratio to the copy for each figure: encode_gbps /
 * encode_vs_copy, encode_ef_gbps / encode_ef_vs_copy (with a residual),
 * decode_gbps / decode_vs_copy (payload in device memory),
 * decode_host_gbps / decode_host_vs_copy (payload in page-locked host
 * memory). Returns the number of codecs that failed (messages on stderr),
 * or -1 when there is no usable device. */
int codec_bench_device(const gc_codec *const *codecs, size_t count, const float *g, size_t n,
                       const gc_params *p, unsigned reps, uint64_t seed, bool json);

#endif
