/* gpu_bucket.cuh — per-bucket reductions in the CPU's order
 * (codecs/quant_common.h): sums of |v|, v^2 or one sign's part of v over
 * GC_Q_CHUNK-element chunks, 16 float lanes combined pairwise, chunk sums
 * added in order in double; and max |v| (order free). The first reduction
 * of a codec also forms v = g + r into r. */
#ifndef GPU_BUCKET_CUH
#define GPU_BUCKET_CUH

#include "gpu_internal.cuh"

enum {
    SUM_ABS,     /* |v|            (sign)   */
    SUM_SQUARE,  /* v * v          (qsgd)   */
    SUM_NONNEG,  /* v where v >= 0, else +0 (onebit) */
    SUM_NEG,     /* v where !(v >= 0), else +0       */
};

/* Per-bucket sums, device arrays of nb entries: total[b] the double sum,
 * nan[b] 0 or the bits of the first NaN chunk sum (quiet), which the CPU
 * carries through its double additions unchanged. */
typedef struct gpu_sums { double *total; uint32_t *nan; } gpu_sums;

/* Queue the sums of `what` over v = g (+ r, stored into r when r is not
 * NULL) per bucket; nb >= 1. 0 or GC_ERR_ALLOC / GENERIC. */
size_t gpu_bucket_sums(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                       size_t bucket, int what, gpu_sums *out);

/* amax[b] = max |v| of bucket b as float bits (NaN above infinity), v = g
 * (+ r into r). Queued. */
void gpu_bucket_absmax(gcmpi_gpu_ctx *ctx, const float *g, float *r, size_t n, size_t bucket,
                       uint32_t *amax);

/* The start every bucketed quantiser's decode_add shares (int8, sign,
 * onebit, natural, terngrad): the bucket field read and checked as the
 * CPU does, the length exactly body_size(n, bucket), the body where the
 * kernels read it, the decode flag cleared. 0 with *bucket and *d set;
 * DECODE_NOTHING when n is 0 (a valid body, nothing to add); else an
 * error. */
#define DECODE_NOTHING ((size_t)1)
static inline size_t bucketed_decode_begin(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body,
                                           size_t len, size_t n,
                                           size_t (*body_size)(size_t n, size_t bucket),
                                           size_t *bucket, uint8_t **d)
{
    if (len < BUCKET_FIELD) return GC_ERR(TRUNCATED);
    const uint32_t bf = get_u32(body);
    if (bf < 1 || bf > (UINT32_C(1) << 31)) return GC_ERR(CORRUPT);
    const size_t want = body_size(n, bf);
    if (len < want) return GC_ERR(TRUNCATED);
    if (len > want) return GC_ERR(CORRUPT);
    if (n == 0) return DECODE_NOTHING;
    *bucket = bf;
    *d = body_to_device(ctx, s, body, len);
    if (!*d) return GC_ERR(ALLOC);
    return flag_clear(ctx);
}

/* Writes the bucket field at the start of body (device). Queued. */
void gpu_bucket_field(gcmpi_gpu_ctx *ctx, uint8_t *body, size_t bucket);

/* count[b] = elements of bucket b with v >= 0 (NaN not). Queued. */
void gpu_bucket_count_nonneg(gcmpi_gpu_ctx *ctx, const float *v, size_t n, size_t bucket,
                             uint32_t *count);

/* i / d, in 32 bits when both fit (a 64-bit division is a long
 * instruction sequence on the GPU, and kernels divide per element). */
__device__ static inline size_t div_index(size_t i, size_t d)
{
    return ((i | d) >> 32) ? i / d : (size_t)((uint32_t)i / (uint32_t)d);
}

/* ---- one-pass bucket tiles --------------------------------------------------
 * Kernels for buckets of at most TILE_BUCKET elements (the default is 512) that
 * read g and r once and write r once: a block of TILE_THREADS threads loads
 * a tile of whole buckets, v = g + r, into shared memory (coalesced), forms
 * each bucket's statistic there with Q_LANES threads per bucket (thread j
 * over elements j, j+16, ... in order: quant_common.h's lanes, and a bucket
 * of at most Q_CHUNK elements is one summation chunk), then quantises from
 * shared memory.
 * Longer buckets take the multi-pass kernels above. Kernels using tiles
 * synchronise the block, so their names end in _sync (tests/gpu/emu). */
#define TILE_THREADS 256u
#define TILE_ELEMS 8192u        /* floats of v per tile: 32 KiB of shared memory */
#define TILE_BUCKET 2048u       /* the longest bucket a tile takes: one chunk */
#define TILE_MAX_BUCKETS 256u   /* buckets per tile (short buckets) */
#define TILE_GROUPS (TILE_THREADS / Q_LANES)

static_assert(TILE_BUCKET <= Q_CHUNK && TILE_BUCKET <= TILE_ELEMS,
              "a tile's bucket is one summation chunk and fits the tile");

static inline int tile_fits(size_t bucket) { return bucket >= 1 && bucket <= TILE_BUCKET; }

/* Buckets per tile for a bucket size that fits. */
static inline size_t tile_buckets(size_t bucket)
{
    const size_t b = TILE_ELEMS / bucket;
    return b < TILE_MAX_BUCKETS ? b : TILE_MAX_BUCKETS;
}

/* Blocks for nb buckets (the kernels stride over tiles). */
static inline unsigned tile_grid(size_t nb, size_t bpt)
{
    const size_t tiles = (nb + bpt - 1) / bpt;
    return tiles > 65535u ? 65535u : (unsigned)tiles;
}

/* Tile t: buckets b0 .. b0 + nbt - 1, elements i0 .. i0 + cnt - 1. */
typedef struct tile { size_t b0, nbt, i0, cnt; } tile;

__device__ static inline tile tile_at(size_t n, size_t bucket, size_t nb, size_t bpt, size_t t)
{
    tile tl;
    tl.b0 = t * bpt;
    tl.nbt = nb - tl.b0 < bpt ? nb - tl.b0 : bpt;
    tl.i0 = tl.b0 * bucket;
    tl.cnt = n - tl.i0 < tl.nbt * bucket ? n - tl.i0 : tl.nbt * bucket;
    return tl;
}

/* Four floats moved as one 16-byte access (tile loads). */
struct alignas(16) vec4f { float x, y, z, w; };

/* A tile's shared memory: v of up to TILE_ELEMS elements (aligned for vec4f). */
#define TILE_SHARED_V(sv) \
    __shared__ vec4f sv##_4[TILE_ELEMS / 4]; \
    float *const sv = (float *)sv##_4

__device__ static inline vec4f vec4_add(vec4f a, vec4f b)
{
    vec4f v = {gx_add(a.x, b.x), gx_add(a.y, b.y), gx_add(a.z, b.z), gx_add(a.w, b.w)};
    return v;
}

/* sv[k] = g[i0 + k] (+ r[i0 + k]) for the tile, then a block barrier. A
 * full tile with 16-byte aligned rows is moved in 16-byte loads, all of a
 * thread's issued before the first store, so enough bytes are in flight
 * to keep the memory busy while other blocks compute. check (no residual
 * only, scratch.check): set to 1 when the tile's g holds inf or NaN. */
__device__ static inline void tile_load(const float *g, const float *r, const tile *tl, float *sv,
                                        unsigned *check)
{
    enum { PER_THREAD = TILE_ELEMS / 4 / TILE_THREADS };
    const float *gt = g + tl->i0, *rt = r ? r + tl->i0 : NULL;
    bool bad = false;
    if (tl->cnt == TILE_ELEMS && ((uintptr_t)gt & 15u) == 0 && ((uintptr_t)rt & 15u) == 0) {
        const vec4f *g4 = (const vec4f *)gt, *r4 = (const vec4f *)rt;
        vec4f *s4 = (vec4f *)sv, a[PER_THREAD];
        for (unsigned it = 0; it < PER_THREAD; it++) a[it] = g4[it * TILE_THREADS + threadIdx.x];
        if (r4) {
            for (unsigned it = 0; it < PER_THREAD; it++)
                a[it] = vec4_add(a[it], r4[it * TILE_THREADS + threadIdx.x]);
        } else if (check) {
            for (unsigned it = 0; it < PER_THREAD; it++)
                bad |= bits_nonfinite(fbits(a[it].x)) | bits_nonfinite(fbits(a[it].y))
                       | bits_nonfinite(fbits(a[it].z)) | bits_nonfinite(fbits(a[it].w));
        }
        for (unsigned it = 0; it < PER_THREAD; it++) s4[it * TILE_THREADS + threadIdx.x] = a[it];
    } else if (rt) {
        for (size_t k = threadIdx.x; k < tl->cnt; k += TILE_THREADS) sv[k] = gx_add(gt[k], rt[k]);
    } else {
        for (size_t k = threadIdx.x; k < tl->cnt; k += TILE_THREADS) {
            sv[k] = gt[k];
            bad |= bits_nonfinite(fbits(gt[k]));
        }
    }
    if (bad && check && !rt) *check = 1u;
    __syncthreads();
}

/* gc_q_lanes_total: 16 lane sums combined pairwise, w = 8, 4, 2, 1. */
__device__ static inline float lanes_total(const float *s)
{
    float t[8], u[4];
    for (unsigned j = 0; j < 8; j++) t[j] = gx_add(s[j], s[j + 8]);
    for (unsigned j = 0; j < 4; j++) u[j] = gx_add(t[j], t[j + 4]);
    return gx_add(gx_add(u[0], u[2]), gx_add(u[1], u[3]));
}

/* A one-chunk bucket's double total (gc_q_sum_pow) from its chunk sum f;
 * *nan = the quiet NaN f carries, or 0 (as k_bucket_totals). */
__device__ static inline double chunk_total(float f, uint32_t *nan)
{
    *nan = is_nan(f) ? fbits(f) | 0x00400000u : 0u;
    return __dadd_rn(0.0, (double)f);
}

#endif
