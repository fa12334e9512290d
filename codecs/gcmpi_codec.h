/* gcmpi_codec.h — gradient compressors over float arrays (public API).
 *
 * Usable without MPI: encode a float vector into a self-describing payload,
 * decode a payload and add it into an accumulator. Errors are values: every
 * function that returns a size returns an error code at the top of the size_t
 * range instead; test it with gc_is_error() and name it with gc_error_name().
 *
 * Payload = 32-byte header (see gc_payload_info) + codec body. The header
 * carries magic "GC", format version, codec id, element count, total length,
 * flags (CRC32C present, zstd stage applied) and the CRC32C of the body.
 *
 * Thread safety: codecs are pure functions of their arguments; a gc_workspace
 * must not be shared by two threads at once.
 */
#ifndef GCMPI_CODEC_H
#define GCMPI_CODEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GC_API __attribute__((visibility("default")))
#else
#define GC_API
#endif

#define GC_VERSION_MAJOR 0
#define GC_VERSION_MINOR 1
#define GC_VERSION_PATCH 0
#define GC_VERSION_STRING "0.1.0"

/* Payload format version written into every header. 2: eg's and qsgd's
 * Elias bodies carry sync points (sync_points.h), so a GPU decodes their
 * streams a segment a thread. */
#define GC_FORMAT_VERSION 2
/* Size of the fixed payload header in bytes. */
#define GC_HEADER_SIZE 32

/* ---- errors ------------------------------------------------------------ */

typedef enum gc_error {
    GC_OK = 0,
    GC_ERR_GENERIC,
    GC_ERR_PARAM,          /* a parameter is outside the codec's range      */
    GC_ERR_UNKNOWN_CODEC,  /* no codec of that name or id                   */
    GC_ERR_DST_TOO_SMALL,  /* destination capacity below gc_bound()          */
    GC_ERR_TRUNCATED,      /* payload shorter than its header or body says  */
    GC_ERR_CORRUPT,        /* body inconsistent (index out of range, ...)   */
    GC_ERR_BAD_MAGIC,      /* not a libgcmpi payload                        */
    GC_ERR_VERSION,        /* payload format version not supported          */
    GC_ERR_WRONG_CODEC,    /* payload made by another codec than expected   */
    GC_ERR_SIZE_MISMATCH,  /* payload element count differs from caller's   */
    GC_ERR_CHECKSUM,       /* CRC32C of the body does not match             */
    GC_ERR_ALLOC,          /* memory allocation failed                      */
    GC_ERR_ZSTD,           /* the zstd stage failed                         */
    GC_ERR_UNSUPPORTED,    /* feature not compiled in (zstd)                */
    GC_ERR_MAX_CODE
} gc_error;

/* 1 if r is an error code rather than a size. */
GC_API int gc_is_error(size_t r);
/* The gc_error value of r (GC_OK when r is not an error). */
GC_API gc_error gc_error_code(size_t r);
/* A short English description of r ("payload truncated", ...). */
GC_API const char *gc_error_name(size_t r);

/* ---- parameters -------------------------------------------------------- */

/* Codec parameters. Start from gc_params_default(); each codec reads the
 * fields it documents and ignores the others. */
typedef struct gc_params {
    double   ratio;        /* topk, randk, dgc: kept fraction, (0, 1]          */
    unsigned bits;         /* qsgd: bits per element incl. sign, 2..8          */
    size_t   bucket;       /* int8, qsgd, terngrad, sign, onebit, natural, eg:
                              elements sharing one scale, >= 1                 */
    unsigned rank;         /* powersgd: rank r, >= 1                           */
    int      eg_n;         /* eg: quantisation step 2^-n; GC_AUTO: from range  */
    int      eg_k;         /* eg: Exp-Golomb order 0..30; GC_AUTO: per bucket  */
    double   dgc_sample;   /* dgc: fraction of elements sampled, (0, 1]        */
    double   dgc_tolerance;/* dgc: refine when count misses k by more, [0, 10] */
    int      zstd_level;   /* lossless zstd stage after the codec: 0 off, 1..19 */
    unsigned flags;        /* GC_PF_* below                                    */
} gc_params;

#define GC_AUTO (-1000000)

/* gc_params.flags */
#define GC_PF_CRC           (1u << 0) /* write and check a CRC32C of the body  */
#define GC_PF_QSGD_ELIAS    (1u << 1) /* qsgd: Elias-gamma levels, not fixed   */
#define GC_PF_RANDK_UNBIASED (1u << 2)/* randk: scale kept values by n/k       */

GC_API void gc_params_default(gc_params *p);

/* ---- codecs ------------------------------------------------------------ */

typedef struct gc_codec gc_codec;     /* opaque descriptor, one per codec */
typedef struct gc_workspace gc_workspace;

/* gc_codec_flags() bits */
#define GC_LINEAR   (1u << 0) /* MPI may sum the compressed form (with a shared
                                 seed / scale / basis; see README)            */
#define GC_LOSSLESS (1u << 1) /* decode(encode(v)) == v bit for bit            */
#define GC_SPARSE   (1u << 2) /* body holds a subset of elements              */
#define GC_STOCHASTIC (1u << 3) /* uses the seed for stochastic rounding       */

GC_API size_t          gc_codec_count(void);
GC_API const gc_codec *gc_codec_at(size_t i);
GC_API const gc_codec *gc_codec_by_name(const char *name);
GC_API const gc_codec *gc_codec_by_id(unsigned id);
GC_API const char     *gc_codec_name(const gc_codec *c);
GC_API unsigned        gc_codec_id(const gc_codec *c);
GC_API unsigned        gc_codec_flags(const gc_codec *c);

/* Check p for codec c. Returns 0 or GC_ERR_PARAM as a size_t error; when msg
 * is not NULL it receives a sentence naming the parameter, the value and the
 * allowed range, e.g. "ratio=1.5 is out of range; expected a number in (0, 1]". */
GC_API size_t gc_params_check(const gc_codec *c, const gc_params *p,
                              char *msg, size_t msglen);

/* Upper bound on the payload size (header included) for n elements. */
GC_API size_t gc_bound(const gc_codec *c, size_t n, const gc_params *p);

/* Encode g[0..n) into dst (capacity cap >= gc_bound()). Returns payload bytes.
 *
 * Error feedback, fused: when residual is not NULL the codec compresses
 * v = g + residual and leaves residual = v - D(payload) (to float rounding),
 * reading each buffer once where the codec allows. residual may alias g only
 * if g is not needed afterwards. seed drives stochastic rounding and random
 * selection: equal seeds give equal payloads.
 * ws: scratch reused across calls (NULL: a temporary one is made per call).
 *
 * Non-finite input (an overflow step of mixed-precision training): when g
 * holds inf or NaN the payload is flagged GC_HF_NONFINITE and its body
 * says, per block of B elements (B = 512, doubled until it fits in cap),
 * whether the block's non-finite values sum to +inf, -inf or NaN; the
 * finite values are not sent and residual is left untouched, so the sum
 * over ranks is non-finite in every block where MPI_SUM's is, and no state
 * keeps a non-finite value. */
GC_API size_t gc_encode(const gc_codec *c, const float *g, float *residual,
                        size_t n, const gc_params *p, uint64_t seed,
                        void *dst, size_t cap, gc_workspace *ws);

/* gc_encode for a g the caller has already found finite (gc_all_finite):
 * the same payload and residual, without gc_encode's own pass over g. For
 * a caller that checks a whole input once and then encodes it or parts of
 * it (the shim does; the pass was a fifth of topk's encode). A g holding
 * inf or NaN gives an unspecified payload and residual. */
GC_API size_t gc_encode_finite(const gc_codec *c, const float *g, float *residual,
                               size_t n, const gc_params *p, uint64_t seed,
                               void *dst, size_t cap, gc_workspace *ws);

/* 1 when every x[i] is finite (no inf, no NaN), else 0. One pass. */
GC_API int gc_all_finite(const float *x, size_t n);

/* acc[0..n) += decode(src). The codec is read from the header; n must equal
 * its element count. Never reads or writes out of bounds: a malformed payload
 * returns an error (acc may then be partly updated). */
GC_API size_t gc_decode_add(const void *src, size_t len, float *acc, size_t n,
                            gc_workspace *ws);

/* Like gc_decode_add but refuse payloads of any codec other than c. */
GC_API size_t gc_decode_add_as(const gc_codec *c, const void *src, size_t len,
                               float *acc, size_t n, gc_workspace *ws);

typedef struct gc_payload_info {
    unsigned codec_id;
    unsigned version;
    unsigned flags;        /* GC_HF_* */
    uint64_t n;            /* element count */
    uint64_t length;       /* total payload bytes, header included */
} gc_payload_info;

#define GC_HF_CRC  (1u << 0)
#define GC_HF_ZSTD (1u << 1)
/* The encoded vector held inf or NaN: instead of the codec's body the
 * payload carries, per block of elements, what its non-finite values sum
 * to (gc_encode's comment); decoding adds that to every element of the
 * block. Never combined with GC_HF_ZSTD. */
#define GC_HF_NONFINITE (1u << 2)

/* Parse and validate a header (magic, version, codec id, length <= len). */
GC_API size_t gc_payload_info_get(const void *src, size_t len,
                                  gc_payload_info *out);

/* ---- workspace and encoder report --------------------------------------- */

GC_API gc_workspace *gc_workspace_create(void);
GC_API void          gc_workspace_free(gc_workspace *ws);

/* What the last gc_encode on this workspace measured. */
typedef struct gc_encode_report {
    uint64_t n;               /* elements encoded                              */
    uint64_t payload_bytes;   /* header included, after the zstd stage         */
    uint64_t kept;            /* sparse codecs: elements sent                   */
    double   bits_per_element;/* 8 * payload_bytes / n                         */
    double   code_bits_per_element; /* eg: bits of the Exp-Golomb stream / n    */
    double   fl_bits_per_element;   /* eg: fixed-length bits of the same ints / n */
    int      eg_n;            /* eg: the n used                                */
} gc_encode_report;

GC_API const gc_encode_report *gc_workspace_report(const gc_workspace *ws);

/* ---- per-bucket bit width (topkq) ----------------------------------------
 * topkq quantises its kept values in buckets of gc_params.bucket values, each
 * with its own width (carried in the payload). Without a policy every bucket
 * gets gc_params.bits; with one, the encoder asks choose() per bucket and
 * reports the quantisation error it got to observe(). */
typedef struct gc_bucket_stats {
    size_t index;      /* bucket number within this encode     */
    size_t len;        /* values in the bucket                 */
    double l2sq;       /* sum of squares                       */
    double maxabs;     /* largest magnitude                    */
    double mean, var;  /* of the values                        */
} gc_bucket_stats;

typedef struct gc_width_policy {
    void *ctx;
    /* A width in 1..8 (other values are clamped); 1 = sign and the
     * bucket's mean magnitude. */
    unsigned (*choose)(void *ctx, const gc_bucket_stats *s);
    /* err_sq = sum over the bucket of (x - Q(x))^2 for the width used. */
    void (*observe)(void *ctx, const gc_bucket_stats *s, unsigned bits, double err_sq);
} gc_width_policy;

/* Install (or, with NULL, remove) the policy topkq encodes on ws use. The
 * policy is copied; its ctx must outlive the encodes. */
GC_API void gc_workspace_set_width_policy(gc_workspace *ws, const gc_width_policy *p);

/* ---- checksums ---------------------------------------------------------- */

/* CRC32C (Castagnoli), hardware-accelerated where the CPU has SSE4.2. */
GC_API uint32_t gc_crc32c(uint32_t crc, const void *buf, size_t len);

/* ---- error feedback variants -------------------------------------------- */

/* DGC momentum correction (Lin et al.): u = m*u + g; v = v + u; encode the
 * top of v with codec c (a sparse codec: topk, dgc, randk); clear u and v
 * where an element was sent. u and v persist across calls (zero initially). */
GC_API size_t gc_encode_momentum(const gc_codec *c, const float *g, float *u,
                                 float *v, size_t n, float momentum,
                                 const gc_params *p, uint64_t seed, void *dst,
                                 size_t cap, gc_workspace *ws);

/* gc_encode_momentum for a g the caller has already found finite
 * (gc_all_finite): the same payload, u and v, without the pass over g (the
 * shim checks a call's input once). A g holding inf or NaN gives an
 * unspecified payload, u and v. */
GC_API size_t gc_encode_momentum_finite(const gc_codec *c, const float *g, float *u,
                                        float *v, size_t n, float momentum,
                                        const gc_params *p, uint64_t seed, void *dst,
                                        size_t cap, gc_workspace *ws);

/* Transparent momentum correction (libgcmpi's GCMPI_MOMENTUM), the two
 * steps around a compressed sum for an application whose own optimizer
 * applies momentum beta (m = beta*m + g, dampening 0).
 *
 * gc_momentum_accumulate: u = beta*u + g over n elements (DGC's local
 * momentum; a dense codec then compresses u with error feedback).
 *
 * gc_momentum_unfold: s holds S_t, the sum over ranks of what was sent; m
 * holds the application's momentum as it stands before this step (zero
 * initially), kept by the caller. Writes into s the gradient
 * g_hat = S_t - beta*m, and sets m = beta*m + g_hat, computed as the
 * application will compute it, so its momentum ends equal to S_t up to one
 * rounding of that step (rounding does not accumulate: m mirrors the
 * application's value, not S_t). Returns 1. When any s[i] is not finite,
 * leaves s and m untouched and returns 0: the step is one the application
 * skips (a loss scaler's overflow), and m must not take a non-finite
 * value. */
GC_API void gc_momentum_accumulate(float *u, const float *g, size_t n, float beta);
GC_API int gc_momentum_unfold(float *s, float *m, size_t n, float beta);

/* ---- codec-specific entry points used by collective algorithms ----------- */

/* randk: the k sorted indices chosen by seed for n elements (k from ratio).
 * idx must hold gc_randk_count(n, p) entries. Returns k or an error. */
GC_API size_t gc_randk_count(size_t n, const gc_params *p);
GC_API size_t gc_randk_indices(size_t n, const gc_params *p, uint64_t seed,
                               uint32_t *idx, gc_workspace *ws);

/* powersgd: the vector viewed as a rows x cols matrix M (row-major, zero
 * padded). Step by step, for a native allreduce (PowerSGD, Vogels et al.):
 *   P = M Q            gc_powersgd_p       (then sum P over ranks)
 *   orthonormalise P   gc_powersgd_orthonormalize
 *   Q = M^T P          gc_powersgd_q       (then sum Q over ranks)
 *   acc += P Q^T       gc_powersgd_decompress_add
 * Q is rows=cols x r, P is rows x r, both row-major. */
typedef struct gc_powersgd_shape { size_t rows, cols, rank; } gc_powersgd_shape;
GC_API gc_powersgd_shape gc_powersgd_shape_of(size_t n, unsigned rank);
GC_API void gc_powersgd_init_q(gc_powersgd_shape s, uint64_t seed, float *q);
GC_API void gc_powersgd_p(gc_powersgd_shape s, const float *m, size_t n,
                          const float *q, float *p);
GC_API void gc_powersgd_orthonormalize(gc_powersgd_shape s, float *p);
GC_API void gc_powersgd_q(gc_powersgd_shape s, const float *m, size_t n,
                          const float *p, float *q);
GC_API void gc_powersgd_decompress_add(gc_powersgd_shape s, const float *p,
                                       const float *q, float *acc, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* GCMPI_CODEC_H */
