/* codec_impl.h — what a codec file needs: the descriptor, the workspace, byte
 * order helpers, the counter-based random numbers and parameter checks.
 * Internal to codecs/ (and gpu/, which reproduces the same formats). */
#ifndef GC_CODEC_IMPL_H
#define GC_CODEC_IMPL_H

#include "gcmpi_codec.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define GC_INTERNAL __attribute__((visibility("hidden")))

/* Bodies hold little-endian floats copied with memcpy. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "libgcmpi payloads assume a little-endian host");

/* Errors are returned as (size_t)-code, zstd style. */
#define GC_ERROR(e) ((size_t) - (ptrdiff_t)(GC_ERR_##e))

/* A codec is a value: one constant descriptor per file (STYLE.md). All
 * sizes are of the body, the bytes after the GC_HEADER_SIZE header; the
 * header, CRC and zstd stage are handled once in payload.c. */
struct gc_codec {
    const char *name;  /* the GCMPI_CODEC value */
    uint8_t id;        /* stable: written into payload headers */
    unsigned flags;    /* GC_LINEAR | GC_LOSSLESS | GC_SPARSE | GC_STOCHASTIC */
    /* 0, or GC_ERROR(PARAM) with a message naming parameter, value, range. */
    size_t (*check)(const gc_params *p, char *msg, size_t msglen);
    /* Upper bound of the body for n elements (params already checked). */
    size_t (*bound)(size_t n, const gc_params *p);
    /* Encode v = g (+ r) into dst[0..cap); if r, leave r = v - D(body).
     * Returns body bytes or an error. n may be 0. */
    size_t (*encode)(const float *g, float *r, size_t n, const gc_params *p,
                     uint64_t seed, uint8_t *dst, size_t cap,
                     gc_workspace *ws);
    /* acc[0..n) += D(src[0..len)). Must check every length and index. */
    size_t (*decode_add)(const uint8_t *src, size_t len, float *acc, size_t n,
                         gc_workspace *ws);
    /* GC_SPARSE codecs: x[i] = 0 for every index i the body sends (used by
     * momentum correction). NULL for dense codecs. */
    size_t (*zero_sent)(const uint8_t *src, size_t len, float *x, size_t n,
                        gc_workspace *ws);
};

/* ---- workspace ---------------------------------------------------------- */

/* Scratch slots; a buffer grows to the largest size asked and is reused. */
enum {
    GC_WS_BODY = 0,  /* payload.c: the body before the zstd stage  */
    GC_WS_UNZSTD,    /* payload.c: the body after zstd decompression */
    GC_WS_A,         /* free for the codec */
    GC_WS_B,
    GC_WS_C,
    GC_WS_D,
    GC_WS_SLOTS
};

struct gc_workspace {
    void  *buf[GC_WS_SLOTS];
    size_t cap[GC_WS_SLOTS];
    void  *zstd_cctx;            /* ZSTD_CCtx*, made on first use */
    void  *zstd_dctx;            /* ZSTD_DCtx*                    */
    gc_encode_report report;
    /* topkq: per-bucket width policy (gc_workspace_set_width_policy). */
    gc_width_policy width_policy;
    bool has_width_policy;
};

/* A 64-byte aligned buffer of at least bytes in slot; NULL when out of
 * memory. The contents are not kept when it grows. */
GC_INTERNAL void *gc_ws_get(gc_workspace *ws, unsigned slot, size_t bytes);

/* ---- byte order (payloads are little-endian) ----------------------------- */

static inline void gc_put_u16(uint8_t *d, uint16_t v) { d[0] = (uint8_t)v; d[1] = (uint8_t)(v >> 8); }
static inline void gc_put_u32(uint8_t *d, uint32_t v) { for (int i = 0; i < 4; i++) d[i] = (uint8_t)(v >> (8 * i)); }
static inline void gc_put_u64(uint8_t *d, uint64_t v) { for (int i = 0; i < 8; i++) d[i] = (uint8_t)(v >> (8 * i)); }
static inline uint16_t gc_get_u16(const uint8_t *s) { return (uint16_t)(s[0] | (s[1] << 8)); }
static inline uint32_t gc_get_u32(const uint8_t *s) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | s[i]; return v; }
static inline uint64_t gc_get_u64(const uint8_t *s) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = (v << 8) | s[i]; return v; }
static inline void gc_put_f32(uint8_t *d, float f) { uint32_t u; memcpy(&u, &f, 4); gc_put_u32(d, u); }
static inline float gc_get_f32(const uint8_t *s) { uint32_t u = gc_get_u32(s); float f; memcpy(&f, &u, 4); return f; }

/* ---- counter-based random numbers ---------------------------------------
 * Stochastic rounding draws one number per element from (key, index) so the
 * result does not depend on loop order or vector width, the loop vectorises
 * (32-bit multiplies only), and the CUDA kernels reproduce it bit for bit. */
static inline uint32_t gc_key32(uint64_t seed)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(z ^ (z >> 31));
}
static inline uint32_t gc_rand32(uint32_t key, uint32_t i)
{
    uint32_t x = i * 0x9E3779B1u ^ key;
    x ^= x >> 16; x *= 0x85EBCA6Bu;
    x ^= x >> 13; x *= 0xC2B2AE35u;
    x ^= x >> 16;
    return x;
}
/* Uniform in [0, 1): 24 random bits. */
static inline float gc_rand_unit(uint32_t key, uint32_t i)
{
    return (float)(gc_rand32(key, i) >> 8) * 0x1p-24f;
}

/* Sequential generator (splitmix64) for index sampling (randk, dgc). */
static inline uint64_t gc_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform integer in [0, bound) without modulo bias worth measuring (Lemire). */
static inline uint64_t gc_rand_below(uint64_t *state, uint64_t bound)
{
    return (uint64_t)(((unsigned __int128)gc_splitmix64(state) * bound) >> 64);
}

/* ---- parameter checks shared by codecs ----------------------------------- */

GC_INTERNAL size_t gc_check_ratio(const gc_params *p, char *msg, size_t msglen);
GC_INTERNAL size_t gc_check_bucket(const gc_params *p, char *msg, size_t msglen);
GC_INTERNAL size_t gc_check_bits(const gc_params *p, unsigned lo, unsigned hi,
                                 char *msg, size_t msglen);
GC_INTERNAL size_t gc_check_rank(const gc_params *p, char *msg, size_t msglen);
/* msg = formatted text (snprintf); returns GC_ERROR(PARAM). */
GC_INTERNAL size_t gc_param_error(char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Elements kept by topk / randk / dgc for n elements: ceil(ratio * n),
 * at least 1 when n > 0, at most n. */
GC_INTERNAL size_t gc_kept_count(size_t n, double ratio);

/* Number of buckets of size b over n elements. */
static inline size_t gc_bucket_count(size_t n, size_t b) { return b ? (n + b - 1) / b : 0; }

/* ---- the registry ------------------------------------------------------- */

extern const gc_codec gc_codec_none, gc_codec_fp16, gc_codec_bf16,
    gc_codec_int8, gc_codec_qsgd, gc_codec_terngrad, gc_codec_sign,
    gc_codec_onebit, gc_codec_natural, gc_codec_topk, gc_codec_randk,
    gc_codec_dgc, gc_codec_powersgd, gc_codec_eg, gc_codec_topkq;

/* Stable codec ids (written into payloads; never renumber). */
enum {
    GC_ID_NONE = 1, GC_ID_FP16 = 2, GC_ID_BF16 = 3, GC_ID_INT8 = 4,
    GC_ID_QSGD = 5, GC_ID_TERNGRAD = 6, GC_ID_SIGN = 7, GC_ID_ONEBIT = 8,
    GC_ID_NATURAL = 9, GC_ID_TOPK = 10, GC_ID_RANDK = 11, GC_ID_DGC = 12,
    GC_ID_POWERSGD = 13, GC_ID_EG = 14, GC_ID_TOPKQ = 15
};

#endif /* GC_CODEC_IMPL_H */
