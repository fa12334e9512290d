/* gpu_stream.cuh — variable-length bit streams with sync points
 * (codecs/sync_points.h: eg's Exp-Golomb and qsgd's Elias bodies) on the
 * device. A codec's decode runs a thread per segment from its sync point
 * (segment 0 from bit 0), noting where the segment ended and the error
 * its CPU decoder would answer inside it; gpu_stream_verdict then finds
 * what the CPU decoder, walking the stream in order, answers for the
 * whole body, and the codec adds its decoded values only when that is
 * STREAM_OK, so a body the CPU refuses changes nothing. */
#ifndef GPU_STREAM_CUH
#define GPU_STREAM_CUH

#include "gpu_internal.cuh"
#include "sync_points.h"

/* A segment's, and a body's, verdict. */
enum { STREAM_OK = 0, STREAM_CORRUPT = 1, STREAM_TRUNCATED = 2 };

/* The stream of a body on the device: the body's words w (16-byte
 * aligned, len bytes), the stream from byte off to the end, avail its
 * bits. */
typedef struct gpu_stream {
    const uint64_t *w;
    size_t len, off;
    uint64_t avail;
} gpu_stream;

/* The 64-bit word at of w[0..len), bytes past len read as zeros. */
__device__ static inline uint64_t stream_word_at(const uint64_t *w, size_t len, size_t at)
{
    if (8 * at + 8 <= len) return w[at];
    const uint8_t *b = (const uint8_t *)w;
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        if (8 * at + i < len) v |= (uint64_t)b[8 * at + i] << (8 * i);
    return v;
}

/* 64 stream bits from stream bit p, LSB first; zeros past the stream's
 * end, as the CPU's readers read there. */
__device__ static inline uint64_t stream_peek(const gpu_stream *s, uint64_t p)
{
    if (p >= s->avail) return 0;
    const uint64_t q = (uint64_t)s->off * 8 + p;
    const size_t at = (size_t)(q >> 6);
    const unsigned sh = (unsigned)(q & 63u);
    const uint64_t lo = stream_word_at(s->w, s->len, at);
    return sh ? (lo >> sh) | (stream_word_at(s->w, s->len, at + 1) << (64u - sh)) : lo;
}

/* The sync point of segment sg >= 1 (sync: the body's u64 points). */
__device__ static inline uint64_t stream_sync_point(const uint8_t *sync, size_t sg)
{
    return ld_u64(sync + 8 * (sg - 1));
}

/* Queue, into *verdict (device): the first error in stream order among
 * nseg >= 1 segments — a segment's own status, or STREAM_CORRUPT where a
 * segment does not end at the next one's sync point — else the CPU's
 * checks of the end: no bit used past the stream, no whole byte after the
 * last bit used, zero padding. */
void gpu_stream_verdict(gcmpi_gpu_ctx *ctx, const gpu_stream *s, const uint8_t *sync,
                        const uint64_t *end, const unsigned *status, size_t nseg,
                        unsigned *verdict);

/* Wait for the stream and read *verdict: 0, GC_ERR_TRUNCATED or
 * GC_ERR_CORRUPT (or the stream's failure). */
size_t gpu_stream_result(gcmpi_gpu_ctx *ctx, const unsigned *verdict);

/* Segments are few (one per ~4096 elements, 4096 for 64 MiB of floats):
 * a warp a block spreads a decode's threads over every SM. */
#define STREAM_DECODE_THREADS 32u

#endif
