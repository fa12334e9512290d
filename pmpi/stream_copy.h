/* stream_copy.h — copying a large result out past the cache.
 *
 * A plain copy into memory that is not cached first reads every
 * destination line in (to own it), then writes it back: for an output far
 * larger than the last-level cache that read is wasted. Non-temporal
 * stores write whole lines without reading them. Measured on hier's
 * window allgather (pmpi/node_shm.c) by bench/node_bench.c, 64 MiB
 * vectors on this 2-core host, medians of 15 calls in turns, two runs:
 * 8 ranks 27.3-28.0 ms -> 22.6-22.7 ms (1.21-1.23x), 4 ranks 19.7-21.5 ->
 * 19.3-21.1 ms (1.02x). For an output that fits the
 * cache it would push out what the caller reads next: callers ask
 * gcmpi_outgrows_cache first. */
#ifndef GCMPI_STREAM_COPY_H
#define GCMPI_STREAM_COPY_H

#include <stddef.h>

/* Whether bytes written by the ranks of one host (together) are more than
 * its last-level cache holds (Linux sysfs's size for CPU 0, else
 * sysconf's, else 32 MiB). */
int gcmpi_outgrows_cache(size_t bytes);

/* dst[0..n) = src[0..n), with non-temporal stores where the CPU has them
 * (x86-64), else memcpy. dst and src do not overlap. */
void gcmpi_copy_past_cache(float *dst, const float *src, size_t n);

#endif
