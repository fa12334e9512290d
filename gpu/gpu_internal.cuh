/* gpu_internal.cuh — what every file of gpu/ shares: codec ids, the context,
 * per-call scratch from the context's pool, launch geometry, float
 * operations rounded as the CPU rounds them, and the table entry through
 * which gcmpi_gpu.cu reaches a codec's kernels (gpu_codecs.cu).
 *
 * Exactness: compiled with -fmad=false -ftz=false -prec-div=true, and every
 * float operation of a payload path goes through gx_add/gx_sub/gx_mul/
 * gx_div, which round once (IEEE, nearest even) and return NaNs as x86 SSE
 * does (the CPU build's hot loops are SSE/AVX): the first NaN operand made
 * quiet, else the default NaN 0xFFC00000 for an invalid operation. CUDA's
 * own rule (always 0x7FFFFFFF) would change the sign and payload bits that
 * fp16/bf16 keep and the sign that int8's clamp keeps. */
#ifndef GPU_INTERNAL_CUH
#define GPU_INTERNAL_CUH

#include "gcmpi_gpu.h"

#include <cuda_runtime.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- what the codec files define (codec_impl.h is C-only) -------------- */

#define GC_ERR(e) ((size_t) - (ptrdiff_t)(GC_ERR_##e))
enum {
    ID_NONE = 1, ID_FP16 = 2, ID_BF16 = 3, ID_INT8 = 4, ID_QSGD = 5, ID_TERNGRAD = 6,
    ID_SIGN = 7, ID_ONEBIT = 8, ID_NATURAL = 9, ID_TOPK = 10, ID_RANDK = 11, ID_DGC = 12,
    ID_POWERSGD = 13, ID_EG = 14, ID_TOPKQ = 15
};
#define BUCKET_FIELD 4   /* GC_Q_BUCKET_FIELD */
#define Q_LANES 16       /* GC_Q_LANES */
#define Q_CHUNK 2048     /* GC_Q_CHUNK */

static inline size_t bucket_count(size_t n, size_t b) { return b ? (n + b - 1) / b : 0; }
static inline size_t planes_stride(size_t len) { return (len + 7) / 8; }
__host__ __device__ static inline size_t bucket_len(size_t n, size_t bucket, size_t b)
{
    size_t start = b * bucket;
    return n - start < bucket ? n - start : bucket;
}

/* gc_kept_count (params.c): ceil(ratio * n), at least 1 when n > 0, at
 * most n. */
static inline size_t kept_count(size_t n, double ratio)
{
    if (n == 0) return 0;
    double k = ceil(ratio * (double)n);
    if (k < 1) return 1;
    if (k >= (double)n) return n;
    return (size_t)k;
}

static inline void put_u32(uint8_t *d, uint32_t v) { for (int i = 0; i < 4; i++) d[i] = (uint8_t)(v >> (8 * i)); }
static inline void put_u64(uint8_t *d, uint64_t v) { for (int i = 0; i < 8; i++) d[i] = (uint8_t)(v >> (8 * i)); }
static inline uint32_t get_u32(const uint8_t *s) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | s[i]; return v; }

/* ---- context and per-call scratch ----------------------------------------- */

/* A payload in device memory being decoded (gcmpi_gpu_decode_add): the
 * codec's decode_add gets body pointers into host, a host buffer as long
 * as the payload, of which only the first `valid` bytes
 * (header and the body bytes the codec reads on the host, its table entry's
 * host_head) are filled; body_to_device maps a pointer into host back to
 * the device payload dev instead of copying. NULL dev: no device payload. */
typedef struct gpu_shadow {
    uint8_t *host;
    size_t cap;           /* bytes allocated at host */
    const uint8_t *dev;   /* the payload in device memory */
    size_t len;           /* payload bytes (header included) */
    size_t valid;         /* host[0..valid) holds dev[0..valid) */
} gpu_shadow;

struct gcmpi_gpu_ctx {
    int device;
    cudaStream_t stream;
    cudaMemPool_t pool;   /* ours, release threshold: keep everything */
    unsigned *flag;       /* device word for decode errors */
    unsigned *host_word;  /* page-locked, mapped: the encode's input holds inf or NaN */
    unsigned *host_word_dev;  /* the same word as kernels address it */
    uint8_t *host_hdr;    /* page-locked header copied into a device dst */
    gpu_shadow shadow;    /* the device payload being decoded */
    gc_width_policy width_policy; /* topkq's per-bucket widths (gcmpi_gpu_set_width_policy) */
    int has_width_policy;
    uint8_t *host_buf;    /* host scratch of one call (host_scratch), grown, kept */
    size_t host_cap;
};

/* Scratch from the pool, freed at the end of the call (stream order). */
#define SCRATCH_SLOTS 16
/* check: when not NULL, the word (ctx->host_word_dev) an encode's kernels
 * may set to 1 if the input g holds inf or NaN while they read it anyway
 * (no residual: then v is g); an encode that did so sets checked, and
 * gcmpi_gpu_encode skips its own pass over g. */
typedef struct scratch {
    void *p[SCRATCH_SLOTS];
    unsigned used;
    unsigned *check;
    int checked;
} scratch;

/* The word for an encode kernel that folds the non-finite check into its
 * read of g (NULL with a residual or when not asked), noting the check as
 * done. */
static inline unsigned *encode_check(scratch *s, const float *r)
{
    if (r || !s->check) return NULL;
    s->checked = 1;
    return s->check;
}

/* The float bits of inf or NaN (exponent all ones): the non-finite check. */
__device__ static inline bool bits_nonfinite(uint32_t b) { return (b & 0x7F800000u) == 0x7F800000u; }

/* bytes (at least 4) of device memory for this call; NULL when the pool
 * is out of memory or every slot is taken. */
static inline void *scratch_get(gcmpi_gpu_ctx *ctx, scratch *s, size_t bytes)
{
    if (s->used == SCRATCH_SLOTS) return NULL;
    void *p = NULL;
    if (cudaMallocFromPoolAsync(&p, bytes ? bytes : 4, ctx->pool, ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    s->p[s->used++] = p;
    return p;
}

static inline void scratch_release(gcmpi_gpu_ctx *ctx, scratch *s)
{
    for (unsigned i = 0; i < s->used; i++) (void)cudaFreeAsync(s->p[i], ctx->stream);
    s->used = 0;
}

/* bytes of host memory for one call's figures that cross (topkq's
 * per-bucket statistics, powersgd's P and Q): the context's buffer, grown
 * and kept, so no allocation per call in steady state; NULL when it
 * cannot grow. Valid until the next call on the context. */
static inline uint8_t *host_scratch(gcmpi_gpu_ctx *ctx, size_t bytes)
{
    if (bytes > ctx->host_cap) {
        uint8_t *grown = (uint8_t *)realloc(ctx->host_buf, bytes);
        if (!grown) return NULL;
        ctx->host_buf = grown;
        ctx->host_cap = bytes;
    }
    return ctx->host_buf;
}

/* Wait for the stream; GC_ERR_GENERIC when anything queued failed. */
static inline size_t sync_status(gcmpi_gpu_ctx *ctx)
{
    cudaError_t e = cudaStreamSynchronize(ctx->stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return GC_ERR(GENERIC);
    }
    return 0;
}

/* Copy bytes from the device to the host and wait (small results such as
 * a count the host needs to go on). */
static inline size_t fetch(gcmpi_gpu_ctx *ctx, void *host, const void *dev, size_t bytes)
{
    if (cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return GC_ERR(GENERIC);
    }
    return sync_status(ctx);
}

/* The device payload's bytes at host[0..upto) filled (see gpu_shadow),
 * waited for; 0 or an error. */
static inline size_t shadow_fill(gcmpi_gpu_ctx *ctx, size_t upto)
{
    gpu_shadow *sh = &ctx->shadow;
    if (upto > sh->len) upto = sh->len;
    if (upto <= sh->valid) return 0;
    size_t r = fetch(ctx, sh->host + sh->valid, sh->dev + sh->valid, upto - sh->valid);
    if (!gc_is_error(r)) sh->valid = upto;
    return r;
}

/* The device address of a pointer into the shadow of a device payload
 * (body[0..len) inside it), or NULL when body is not one. */
static inline const uint8_t *shadow_device(const gcmpi_gpu_ctx *ctx, const uint8_t *body,
                                           size_t len)
{
    const gpu_shadow *sh = &ctx->shadow;
    if (!sh->dev || body < sh->host || body > sh->host + sh->len
        || len > (size_t)(sh->host + sh->len - body))
        return NULL;
    return sh->dev + (body - sh->host);
}

/* body[0..upto) readable on the host, body[0..len) a body decode_add was
 * handed: a device payload's shadow (see gpu_shadow) filled that far.
 * 0 or an error. */
static inline size_t body_on_host(gcmpi_gpu_ctx *ctx, const uint8_t *body, size_t len,
                                  size_t upto)
{
    if (!shadow_device(ctx, body, len)) return 0;
    return shadow_fill(ctx, (size_t)(body - ctx->shadow.host) + upto);
}

/* A body on the device, 16-byte aligned (kernels may load it in words or
 * vectors): where it already is for a device payload (its shadow, see
 * gpu_shadow: no copy) when that is aligned, else copied to device scratch
 * (NULL on failure). The result is only read by the kernels. */
static inline uint8_t *body_to_device(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body,
                                      size_t len)
{
    const uint8_t *on_device = shadow_device(ctx, body, len);
    if (on_device && ((uintptr_t)on_device & 15u) == 0) return (uint8_t *)on_device;
    if (on_device) body = on_device;  /* copied device to device */
    uint8_t *d = (uint8_t *)scratch_get(ctx, s, len);
    if (!d) return NULL;
    if (len && cudaMemcpyAsync(d, body, len, cudaMemcpyDefault, ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return d;
}

/* A copy queued on the context's stream unless *r already holds an error
 * (then nothing); a failure to queue sets *r. */
static inline void queue_copy(gcmpi_gpu_ctx *ctx, void *dst, const void *src, size_t bytes,
                              cudaMemcpyKind kind, size_t *r)
{
    if (gc_is_error(*r) || bytes == 0) return;
    if (cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        *r = GC_ERR(GENERIC);
    }
}

/* bytes of device memory at p zeroed, queued, unless *r already holds an
 * error; a failure to queue sets *r. */
static inline void queue_zero(gcmpi_gpu_ctx *ctx, void *p, size_t bytes, size_t *r)
{
    if (gc_is_error(*r) || bytes == 0) return;
    if (cudaMemsetAsync(p, 0, bytes, ctx->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        *r = GC_ERR(GENERIC);
    }
}

/* The end of a call: its scratch released (stream-ordered) and the stream
 * waited for; e, or the stream's failure. */
static inline size_t release_and_wait(gcmpi_gpu_ctx *ctx, scratch *s, size_t e)
{
    scratch_release(ctx, s);
    const size_t done = sync_status(ctx);
    return gc_is_error(e) ? e : done;
}

/* The context's decode error word: cleared before the kernels that may set
 * it, then read: GC_ERR_CORRUPT when one did. */
static inline size_t flag_clear(gcmpi_gpu_ctx *ctx)
{
    return cudaMemsetAsync(ctx->flag, 0, sizeof *ctx->flag, ctx->stream) == cudaSuccess
               ? 0 : GC_ERR(GENERIC);
}
static inline size_t flag_result(gcmpi_gpu_ctx *ctx)
{
    unsigned bad = 0;
    size_t r = fetch(ctx, &bad, ctx->flag, sizeof bad);
    return !gc_is_error(r) && bad ? GC_ERR(CORRUPT) : r;
}

/* Blocks for a grid-stride kernel over n items (at least 1). */
static inline unsigned blocks_for(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    if (b > 65535u * 16u) b = 65535u * 16u;
    return b ? (unsigned)b : 1u;
}

#define GPU_THREADS 256u

#define GRID_STRIDE(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

/* ---- float operations as the CPU rounds them ----------------------------- */

__device__ static inline uint32_t fbits(float f) { return __float_as_uint(f); }
__device__ static inline float bitsf(uint32_t u) { return __uint_as_float(u); }
__device__ static inline bool is_nan(float f) { return (fbits(f) & 0x7FFFFFFFu) > 0x7F800000u; }

__device__ static inline float x86_nan(float a, float b, float res)
{
    if (is_nan(a)) return bitsf(fbits(a) | 0x00400000u);
    if (is_nan(b)) return bitsf(fbits(b) | 0x00400000u);
    if (is_nan(res)) return bitsf(0xFFC00000u);
    return res;
}
__device__ static inline float gx_add(float a, float b) { return x86_nan(a, b, __fadd_rn(a, b)); }
__device__ static inline float gx_sub(float a, float b) { return x86_nan(a, b, __fsub_rn(a, b)); }
__device__ static inline float gx_mul(float a, float b) { return x86_nan(a, b, __fmul_rn(a, b)); }
__device__ static inline float gx_div(float a, float b) { return x86_nan(a, b, __fdiv_rn(a, b)); }
/* |x| as the CPU's andps: on the bits, NaNs included. */
__device__ static inline float gx_abs(float a) { return bitsf(fbits(a) & 0x7FFFFFFFu); }

/* Little-endian stores at any byte offset (bodies pack fields unaligned). */
__device__ static inline void st_u32(uint8_t *d, uint32_t v)
{
    d[0] = (uint8_t)v; d[1] = (uint8_t)(v >> 8); d[2] = (uint8_t)(v >> 16); d[3] = (uint8_t)(v >> 24);
}
__device__ static inline void st_f32(uint8_t *d, float f) { st_u32(d, fbits(f)); }
__device__ static inline uint32_t ld_u32(const uint8_t *s)
{
    return (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
}
__device__ static inline float ld_f32(const uint8_t *s) { return bitsf(ld_u32(s)); }
__device__ static inline void st_u64(uint8_t *d, uint64_t v)
{
    st_u32(d, (uint32_t)v);
    st_u32(d + 4, (uint32_t)(v >> 32));
}
__device__ static inline uint64_t ld_u64(const uint8_t *s)
{
    return (uint64_t)ld_u32(s) | (uint64_t)ld_u32(s + 4) << 32;
}

/* gc_key32 (host) and gc_rand32 / gc_rand_unit (device): the counter-based
 * random numbers of codec_impl.h, so stochastic codecs draw the CPU's
 * numbers. */
static inline uint32_t key32(uint64_t seed)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(z ^ (z >> 31));
}
__device__ static inline uint32_t rand32(uint32_t key, uint32_t i)
{
    uint32_t x = i * 0x9E3779B1u ^ key;
    x ^= x >> 16; x *= 0x85EBCA6Bu;
    x ^= x >> 13; x *= 0xC2B2AE35u;
    x ^= x >> 16;
    return x;
}
__device__ static inline float rand_unit(uint32_t key, uint32_t i)
{
    return gx_mul((float)(rand32(key, i) >> 8), 0x1p-24f);
}

/* gc_splitmix64's (j + 1)-th output from state seed: the sequential
 * generator of index sampling (randk, dgc) at any step, so draws made one
 * after another on the CPU are made at once here. */
__device__ static inline uint64_t splitmix_at(uint64_t seed, uint64_t j)
{
    uint64_t z = seed + (j + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* gc_round_even_small: nearest, ties to even, for |x| < 2^22. */
__device__ static inline float round_even_small(float x)
{
    const float magic = 0x1.8p23f;
    return gx_sub(gx_add(x, magic), magic);
}

/* gc_clamp_abs: |x| clamped to limit on the bits (NaN -> +-limit). */
__device__ static inline float clamp_abs(float x, float limit)
{
    uint32_t b = fbits(x), a = b & 0x7FFFFFFFu, l = fbits(limit);
    return bitsf((a < l ? a : l) | (b & 0x80000000u));
}

/* r = g + r (the CPU's "v = g + r into r" first pass), for any codec. */
void gpu_accumulate(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n);

/* ---- one codec on the device ------------------------------------------------ */

/* encode: v = g (+ r) into the device body[0..cap) (cap >= the codec's
 * bound; body may be the caller's dst, 16-byte aligned, so the codec must
 * write only inside its body), r left as the CPU codec leaves it; returns
 * body bytes or an error. Work may still be queued when it returns.
 * decode_add: body[0..len) is in host memory (validated here, as the CPU
 * codec validates it), acc[0..n) device memory; returns 0 or an error.
 * For a payload in device memory body points into its shadow (gpu_shadow):
 * only the first host_head bytes of the table entry (gpu_codecs.cu) hold the
 * body on the host; body_to_device and gpu_host_decode_add reach the rest. */
typedef struct gpu_codec {
    unsigned id;
    size_t (*encode)(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                     const gc_params *p, uint64_t seed, uint8_t *body, size_t cap);
    size_t (*decode_add)(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                         float *acc, size_t n);
} gpu_codec;

/* decode_add on the host: the CPU codec decodes the payload around body
 * (body is always GC_HEADER_SIZE bytes into it) into a host buffer of -0.0f
 * (-0 + d is d for every d, so the sum is bit for bit the CPU's), which is
 * then added on the device. For payloads of non-finite input (payload.c's
 * flagged encodes). */
size_t gpu_host_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *acc, size_t n);

/* The table (gpu_codecs.cu): the entry for a codec id, or NULL. */
const gpu_codec *gpu_codec_for(unsigned id);

/* How many leading body bytes the codec's decode_add reads on the host
 * (its checks of the fields before the bulk data) for a payload in device
 * memory; GPU_HOST_BODY_ALL: it parses the whole body on the host. Every
 * host read of body must lie inside it (tests/gpu decodes device payloads
 * of every codec). */
#define GPU_HOST_BODY_ALL ((size_t)-1)
size_t gpu_codec_host_head(unsigned id);

/* 1 when the codec's encode with params p may run on input holding inf
 * or NaN (whose payload is then made on the host), so the non-finite check
 * need not finish first (gpu_codecs.cu, any_input). */
int gpu_codec_encodes_any_input(unsigned id, const gc_params *p);

#endif /* GPU_INTERNAL_CUH */
