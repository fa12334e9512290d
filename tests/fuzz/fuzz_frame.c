/* fuzz_frame.c — building valid headers around fuzz bytes, and the checked
 * decode every harness calls. The header layout is the one documented in
 * codecs/payload.c; writing it here (not through gc_encode) is the point:
 * the body is whatever the fuzzer made, not what an encoder would write. */
#include "fuzz_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef GC_HAVE_ZSTD
#include <zstd.h>
#endif

static void put_le(uint8_t *d, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) d[i] = (uint8_t)(v >> (8 * i));
}

size_t fuzz_raw_count(const uint8_t *data, size_t size)
{
    gc_payload_info info;
    if (!gc_is_error(gc_payload_info_get(data, size, &info)) && info.n <= FUZZ_MAX_N)
        return (size_t)info.n;
    return size >= 2 ? ((size_t)data[0] | (size_t)data[1] << 8) : 0;
}

uint8_t *fuzz_frame_wrap(const gc_codec *codec, const uint8_t *data, size_t size,
                         size_t *len)
{
    unsigned want = data[0];
    const uint8_t *body = data + FUZZ_FRAME_PREFIX;
    size_t body_len = size - FUZZ_FRAME_PREFIX;
    unsigned hflags = 0;

    uint8_t *payload = NULL;
#ifdef GC_HAVE_ZSTD
    if (want & FUZZ_FRAME_ZSTD) {
        size_t cap = ZSTD_compressBound(body_len);
        payload = malloc(GC_HEADER_SIZE + cap);
        if (!payload) return NULL;
        size_t z = ZSTD_compress(payload + GC_HEADER_SIZE, cap, body, body_len, 1);
        if (ZSTD_isError(z)) {
            free(payload);
            return NULL;
        }
        body_len = z;
        hflags |= GC_HF_ZSTD;
        /* Shrink to the exact size so a read past the payload is caught. */
        uint8_t *exact = realloc(payload, GC_HEADER_SIZE + body_len);
        if (exact) payload = exact;
    }
#endif
    if (!payload) {
        payload = malloc(GC_HEADER_SIZE + body_len);
        if (!payload) return NULL;
        if (body_len) memcpy(payload + GC_HEADER_SIZE, body, body_len);
    }

    if ((want & FUZZ_FRAME_NONFINITE) && !(hflags & GC_HF_ZSTD)) hflags |= GC_HF_NONFINITE;
    uint32_t crc = 0;
    if (want & FUZZ_FRAME_CRC) {
        hflags |= GC_HF_CRC;
        crc = gc_crc32c(0, payload + GC_HEADER_SIZE, body_len);
    }
    memset(payload, 0, GC_HEADER_SIZE);
    payload[0] = 'G';
    payload[1] = 'C';
    payload[2] = GC_FORMAT_VERSION;
    payload[3] = (uint8_t)gc_codec_id(codec);
    payload[4] = (uint8_t)hflags;
    put_le(payload + 8, fuzz_frame_count(data), 8);
    put_le(payload + 16, GC_HEADER_SIZE + body_len, 8);
    put_le(payload + 24, crc, 4);
    *len = GC_HEADER_SIZE + body_len;
    return payload;
}

static void contract_violation(const char *what, size_t r)
{
    fprintf(stderr, "fuzz: contract violated: %s (result %zu: %s)\n", what, r,
            gc_error_name(r));
    abort();
}

void fuzz_decode_checked(const gc_codec *expect, const uint8_t *payload, size_t len,
                         size_t n, gc_workspace *ws)
{
    /* Exactly n floats: one element more and ASan reports the write. */
    float *acc = n ? malloc(n * sizeof(float)) : NULL;
    if (n && !acc) abort();
    if (n) memset(acc, 0, n * sizeof(float));

    size_t r = expect ? gc_decode_add_as(expect, payload, len, acc, n, ws)
                      : gc_decode_add(payload, len, acc, n, ws);
    if (r != 0 && !gc_is_error(r)) contract_violation("decode returned a size", r);
    if (r == 0) {
        /* A success must mean the header said this codec and this count. */
        gc_payload_info info;
        size_t h = gc_payload_info_get(payload, len, &info);
        if (gc_is_error(h)) contract_violation("decode accepted a bad header", h);
        if (info.n != n) contract_violation("decode accepted a wrong element count", r);
        if (expect && info.codec_id != gc_codec_id(expect))
            contract_violation("decode accepted another codec's payload", r);
    }
    free(acc);
}
