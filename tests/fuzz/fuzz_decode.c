/* fuzz_decode.c — libFuzzer harness for one codec's decoder, compiled once
 * per codec with -DFUZZ_CODEC="name" (tests/fuzz/meson.build).
 *
 * Every input is tried two ways:
 *  (a) as a whole payload, through gc_decode_add_as(codec, ...): exercises
 *      the header checks, CRC and zstd stage, then the body decoder when the
 *      input is (a mutation of) a real payload;
 *  (b) as a body wrapped in a VALID header for this codec, so mutations reach
 *      the body decoder instead of dying at the magic check. Layout:
 *        byte 0      frame flags: bit 0 CRC32C, bit 1 zstd-compress the body
 *        bytes 1..2  element count n, little-endian
 *        bytes 3..   the body
 * The accumulator is a heap block of exactly n floats, so AddressSanitizer
 * reports any write or read past it. The decoder must return 0 or an error
 * code; anything else is a contract violation and aborts. */
#include "fuzz_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_CODEC
#error "compile with -DFUZZ_CODEC=\"codec name\""
#endif

static const gc_codec *fuzz_codec(void)
{
    static const gc_codec *codec;
    if (!codec) {
        codec = gc_codec_by_name(FUZZ_CODEC);
        if (!codec) {
            fprintf(stderr, "fuzz_decode: codec '%s' is not registered\n", FUZZ_CODEC);
            abort();
        }
    }
    return codec;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const gc_codec *codec = fuzz_codec();
    gc_workspace *ws = gc_workspace_create();
    if (!ws) abort();

    /* (a) the raw bytes as a payload. */
    fuzz_decode_checked(codec, data, size, fuzz_raw_count(data, size), ws);

    /* (b) the bytes after a 3-byte prefix as the body of a valid payload. */
    if (size >= FUZZ_FRAME_PREFIX) {
        size_t len = 0;
        uint8_t *payload = fuzz_frame_wrap(codec, data, size, &len);
        if (payload) {
            fuzz_decode_checked(codec, payload, len, fuzz_frame_count(data), ws);
            free(payload);
        }
    }

    gc_workspace_free(ws);
    return 0;
}
