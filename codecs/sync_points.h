/* sync_points.h — where a decoder may start inside a variable-length bit
 * stream (eg's Exp-Golomb body, qsgd's Elias body). The stream's buckets
 * are grouped into segments of S buckets, S = ceil(GC_SYNC_ELEMENTS / b)
 * for buckets of b elements (one bucket when b is larger), and the body
 * carries S (u32) and, for every segment after the first, the stream bit
 * where it starts (u64, little-endian): 64 bits per ~4096 elements. A
 * sequential decoder checks that each segment starts at its point; the
 * GPU decodes every segment at once, a thread each (gpu/gpu_stream.cuh),
 * and the two accept the same bodies.
 *
 * Plain C and C++ (gpu/ includes it). */
#ifndef GC_SYNC_POINTS_H
#define GC_SYNC_POINTS_H

#include <stddef.h>
#include <stdint.h>

#include "gcmpi_codec.h"

#define GC_SYNC_ELEMENTS 4096u

/* The GPU's kernels call these too. */
#if defined(__CUDACC__)
#define GC_SYNC_INLINE __host__ __device__ static inline
#else
#define GC_SYNC_INLINE static inline
#endif

/* Buckets of a segment for buckets of b >= 1 elements. */
static inline size_t gc_sync_segment_buckets(size_t b)
{
    return b >= GC_SYNC_ELEMENTS ? 1 : (GC_SYNC_ELEMENTS + b - 1) / b;
}

/* Segments of nb buckets in segments of s buckets. */
static inline size_t gc_sync_segments(size_t nb, size_t s) { return nb ? (nb - 1) / s + 1 : 0; }

/* Bytes of the sync points of nb buckets in segments of s. */
static inline size_t gc_sync_bytes(size_t nb, size_t s) { return nb ? 8 * ((nb - 1) / s) : 0; }

/* Whether bucket b (of segments of s buckets) starts a segment that has
 * a sync point, and where that point lies behind the segment size. */
GC_SYNC_INLINE int gc_sync_at(size_t b, size_t s) { return b && b % s == 0; }
GC_SYNC_INLINE size_t gc_sync_offset(size_t b, size_t s) { return 8 * (b / s - 1); }

/* A body's segment size at at[0..4) and the sync points behind it, with
 * avail bytes from at on, for nb buckets: their bytes (4 + the points)
 * and *s, or GC_ERR_TRUNCATED (no room for them) or GC_ERR_CORRUPT
 * (S = 0), the decoders' checks in their order. */
static inline size_t gc_sync_open(const uint8_t *at, size_t avail, size_t nb, size_t *s)
{
    if (avail < 4) return (size_t)0 - (size_t)GC_ERR_TRUNCATED;
    const size_t seg = (size_t)at[0] | (size_t)at[1] << 8 | (size_t)at[2] << 16
                       | (size_t)at[3] << 24;
    if (seg == 0) return (size_t)0 - (size_t)GC_ERR_CORRUPT;
    /* Counted before gc_sync_bytes, which a corrupt S cannot overflow then. */
    if (nb && (nb - 1) / seg > (avail - 4) / 8) return (size_t)0 - (size_t)GC_ERR_TRUNCATED;
    *s = seg;
    return 4 + gc_sync_bytes(nb, seg);
}

#endif /* GC_SYNC_POINTS_H */
