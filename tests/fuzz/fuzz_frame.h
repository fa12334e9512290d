/* fuzz_frame.h — what the fuzz harnesses and the seed-corpus writer share:
 * the input layout of the "framed" mode and the checked decode call. */
#ifndef GC_FUZZ_FRAME_H
#define GC_FUZZ_FRAME_H

#include "gcmpi_codec.h"

#include <stddef.h>
#include <stdint.h>

/* Largest element count a harness decodes into: keeps every run fast and
 * every accumulator small, far above any bucket or rank boundary. */
#define FUZZ_MAX_N ((size_t)1 << 16)

/* Framed mode: flags byte, u16 element count, then the body. */
#define FUZZ_FRAME_PREFIX 3
#define FUZZ_FRAME_CRC  (1u << 0)  /* the harness adds a CRC32C of the body   */
#define FUZZ_FRAME_ZSTD (1u << 1)  /* the harness zstd-compresses the body    */
#define FUZZ_FRAME_NONFINITE (1u << 2) /* flag the body as a non-finite one
                                          (GC_HF_NONFINITE; without zstd)  */

static inline void fuzz_frame_prefix(uint8_t out[FUZZ_FRAME_PREFIX], unsigned flags,
                                     uint16_t n)
{
    out[0] = (uint8_t)flags;
    out[1] = (uint8_t)n;
    out[2] = (uint8_t)(n >> 8);
}

static inline size_t fuzz_frame_count(const uint8_t *data)
{
    return (size_t)data[1] | (size_t)data[2] << 8;
}

/* The element count to decode a raw input with: the header's when it parses
 * and is at most FUZZ_MAX_N, else the first two bytes. */
size_t fuzz_raw_count(const uint8_t *data, size_t size);

/* A heap payload of exactly *len bytes: a valid header for codec (n, flags,
 * length, CRC as asked by data[0]) followed by data[3..size), zstd-compressed
 * first when data[0] asks and the build has zstd. NULL when out of memory or
 * when zstd cannot compress it. size must be >= FUZZ_FRAME_PREFIX. */
uint8_t *fuzz_frame_wrap(const gc_codec *codec, const uint8_t *data, size_t size,
                         size_t *len);

/* Decode payload into an accumulator of exactly n floats (expect: NULL for
 * any codec) and abort unless the result is 0 or an error code, and unless
 * a success agrees with the header (codec, count, length). */
void fuzz_decode_checked(const gc_codec *expect, const uint8_t *payload, size_t len,
                         size_t n, gc_workspace *ws);

#endif
