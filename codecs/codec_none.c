/* codec_none.c — float32 as is: the lossless reference, and what the zstd
 * stage alone compresses. Body: n little-endian float32. */
#include "codec_impl.h"

static size_t none_bound(size_t n, const gc_params *p)
{
    (void)p;
    return n * 4;
}

static size_t none_encode(const float *g, float *r, size_t n, const gc_params *p,
                          uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)p; (void)seed; (void)ws;
    if (cap < n * 4) return GC_ERROR(DST_TOO_SMALL);
    if (r) {
        /* v = g + r is sent exactly, so the residual becomes zero. */
        float *restrict rr = r;
        for (size_t i = 0; i < n; i++) {
            float v = g[i] + rr[i];
            memcpy(dst + 4 * i, &v, 4);
            rr[i] = 0.0f;
        }
    } else {
        memcpy(dst, g, n * 4);
    }
    return n * 4;
}

static size_t none_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                              gc_workspace *ws)
{
    (void)ws;
    if (len != n * 4) return len < n * 4 ? GC_ERROR(TRUNCATED) : GC_ERROR(CORRUPT);
    float *restrict a = acc;
    for (size_t i = 0; i < n; i++) {
        float v;
        memcpy(&v, src + 4 * i, 4);
        a[i] += v;
    }
    return 0;
}

const gc_codec gc_codec_none = {
    .name = "none",
    .id = GC_ID_NONE,
    .flags = GC_LINEAR | GC_LOSSLESS,
    .check = NULL,
    .bound = none_bound,
    .encode = none_encode,
    .decode_add = none_decode_add,
    .zero_sent = NULL,
};
