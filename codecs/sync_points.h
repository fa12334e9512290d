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

#define GC_SYNC_ELEMENTS 4096u

/* Buckets of a segment for buckets of b >= 1 elements. */
static inline size_t gc_sync_segment_buckets(size_t b)
{
    return b >= GC_SYNC_ELEMENTS ? 1 : (GC_SYNC_ELEMENTS + b - 1) / b;
}

/* Segments of nb buckets in segments of s buckets. */
static inline size_t gc_sync_segments(size_t nb, size_t s) { return nb ? (nb - 1) / s + 1 : 0; }

/* Bytes of the sync points of nb buckets in segments of s. */
static inline size_t gc_sync_bytes(size_t nb, size_t s) { return nb ? 8 * ((nb - 1) / s) : 0; }

/* Whether the sync points of nb buckets in segments of s fit in avail
 * bytes (checked before gc_sync_bytes, which a corrupt s cannot overflow
 * then). */
static inline int gc_sync_fit(size_t nb, size_t s, size_t avail)
{
    return nb == 0 || (nb - 1) / s <= avail / 8;
}

#endif /* GC_SYNC_POINTS_H */
