/* codec_randk.cu — codecs/codec_randk.c on the device: the k indices of
 * (n, k, seed) drawn on the device as the CPU's Floyd sampler draws them
 * (below), the values gathered, scaled (unbiased mode) and written with
 * the residual; decoding draws the same indices and scatters. */
#include "gpu_sparse.cuh"

#define RANDK_HEAD 13u
#define RANDK_FLAG_UNBIASED 1u

__global__ void k_randk_head(uint8_t *body, uint64_t seed, uint32_t k, unsigned flag)
{
    st_u32(body, (uint32_t)seed);
    st_u32(body + 4, (uint32_t)(seed >> 32));
    st_u32(body + 8, k);
    body[12] = (uint8_t)flag;
}

__global__ void k_randk_values(const uint32_t *idx, size_t k, const float *v, float *r,
                               int unbiased, float scale, uint8_t *vals)
{
    GRID_STRIDE(j, k) {
        const float x = v[idx[j]], sent = unbiased ? gx_mul(x, scale) : x;
        st_f32(vals + 4 * j, sent);
        if (r) r[idx[j]] = unbiased ? gx_sub(x, sent) : 0.0f;
    }
}

/* ---- the k indices of (n, k, seed) ------------------------------------------
 * codec_randk.c's Floyd: draw m = 0..k-1 (j = n - k + m) takes
 * t_m = gc_rand_below(state, j + 1), splitmix64's (m + 1)-th output times
 * j + 1, high half, and adds t_m, or j when t_m is taken already. Here
 * every t_m is made at once (splitmix_at). Draw m added its j (c_m) when
 * t_m = j, or t_m was drawn before (an earlier draw holds the value: the
 * first draw of each value is kept in a hash table by atomic minimum), or
 * t_m >= n - k is the j of an earlier draw, x = t_m - (n - k), that added
 * its j (c_x): a chain to smaller draws, walked by each draw's thread
 * (short: a step needs t >= n - k, drawn with probability k / (j + 1)).
 * The set {t_m : not c_m} and {j : c_m} goes into a bitmap of n bits and
 * comes out in ascending order as a bitmap body's (gpu_bitmap_indices). */

#define RANDK_EMPTY (~0ull)

__device__ static inline uint32_t randk_slot(uint32_t t, uint32_t mask)
{
    return (uint32_t)(((uint64_t)t * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* t[m] for every draw, and table[] = (value << 32 | first draw) for each
 * value drawn (open addressing; the first draw by atomic minimum). */
__global__ void k_randk_draw(uint64_t seed, size_t n, size_t k, uint32_t *t,
                             unsigned long long *table, uint32_t mask)
{
    GRID_STRIDE(m, k) {
        const uint64_t j = n - k + m;
        const uint32_t v = (uint32_t)__umul64hi(splitmix_at(seed, m), j + 1);
        t[m] = v;
        const unsigned long long want = (unsigned long long)v << 32 | (uint32_t)m;
        for (uint32_t h = randk_slot(v, mask);; h = (h + 1) & mask) {
            unsigned long long cur = table[h];
            if (cur == RANDK_EMPTY) {
                cur = atomicCAS(&table[h], RANDK_EMPTY, want);
                if (cur == RANDK_EMPTY) break;
            }
            if ((uint32_t)(cur >> 32) == v) {
                atomicMin(&table[h], want);  /* same value: the smaller draw */
                break;
            }
        }
    }
}

/* The first draw of value v (v was drawn). */
__device__ static inline uint32_t randk_first(const unsigned long long *table, uint32_t mask,
                                              uint32_t v)
{
    for (uint32_t h = randk_slot(v, mask);; h = (h + 1) & mask)
        if ((uint32_t)(table[h] >> 32) == v) return (uint32_t)table[h];
}

/* Draw m's element (t_m, or its j when it added j) set in bits. */
__global__ void k_randk_resolve(const uint32_t *t, size_t n, size_t k,
                                const unsigned long long *table, uint32_t mask, unsigned *bits)
{
    GRID_STRIDE(m, k) {
        const size_t base = n - k;
        size_t x = m;
        bool adds_j;
        for (;;) {
            const uint32_t v = t[x];
            if (v == base + x || randk_first(table, mask, v) < x) { adds_j = true; break; }
            if (v < base) { adds_j = false; break; }
            x = v - base;  /* t >= n - k: taken iff that draw added its j */
        }
        const uint32_t e = adds_j ? (uint32_t)(base + m) : t[m];
        atomicOr(&bits[e >> 5], 1u << (e & 31u));
    }
}

/* Queue idx[0..k) = the indices of (n, k, seed), k >= 1, with scratch from
 * s. 0 or an error. */
static size_t randk_draw(gcmpi_gpu_ctx *ctx, scratch *s, size_t n, uint64_t seed, size_t k,
                         uint32_t *idx)
{
    uint32_t slots = 64;
    while (slots < 2 * k) slots <<= 1;
    const size_t words = (n + 31) / 32;
    uint32_t *t = (uint32_t *)scratch_get(ctx, s, k * sizeof(uint32_t));
    unsigned long long *table = (unsigned long long *)scratch_get(ctx, s, (size_t)slots * 8);
    unsigned *bits = (unsigned *)scratch_get(ctx, s, words * sizeof(unsigned));
    if (!t || !table || !bits) return GC_ERR(ALLOC);
    cudaStream_t st = ctx->stream;
    if (cudaMemsetAsync(table, 0xFF, (size_t)slots * 8, st) != cudaSuccess
        || cudaMemsetAsync(bits, 0, words * sizeof(unsigned), st) != cudaSuccess) {
        (void)cudaGetLastError();
        return GC_ERR(GENERIC);
    }
    k_randk_draw<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, st>>>(seed, n, k, t, table, slots - 1);
    k_randk_resolve<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, st>>>(t, n, k, table, slots - 1, bits);
    /* Little-endian words: bit i of byte i / 8 is index i, as a bitmap body. */
    return gpu_bitmap_indices(ctx, s, (const uint8_t *)bits, n, k, idx, NULL);
}

/* The indices of (n, k, seed) in device scratch (a 4-byte buffer for
 * k = 0), queued. NULL with *err set on failure. */
static uint32_t *randk_indices(gcmpi_gpu_ctx *ctx, scratch *s, size_t n, uint64_t seed,
                               size_t k, size_t *err)
{
    uint32_t *idx = (uint32_t *)scratch_get(ctx, s, (k ? k : 1) * sizeof(uint32_t));
    *err = idx ? 0 : GC_ERR(ALLOC);
    if (idx && k) *err = randk_draw(ctx, s, n, seed, k, idx);
    return gc_is_error(*err) ? NULL : idx;
}

extern "C" size_t gcmpi_gpu_randk_indices(gcmpi_gpu_ctx *ctx, size_t n, size_t k, uint64_t seed,
                                          uint32_t *idx)
{
    if (!ctx || k > n || n > UINT32_MAX || (k && !gcmpi_gpu_is_device_pointer(idx)))
        return GC_ERR(PARAM);
    if (k == 0) return 0;
    scratch s;
    memset(&s, 0, sizeof s);
    return release_and_wait(ctx, &s, randk_draw(ctx, &s, n, seed, k, idx));
}

static size_t randk_encode(gcmpi_gpu_ctx *ctx, scratch *s, const float *g, float *r, size_t n,
                           const gc_params *p, uint64_t seed, uint8_t *body, size_t cap)
{
    if (n > UINT32_MAX) return GC_ERR(PARAM);  /* indices are 32-bit */
    const size_t k = kept_count(n, p->ratio);
    if (cap < RANDK_HEAD + 4 * k) return GC_ERR(DST_TOO_SMALL);
    if (r) gpu_accumulate(ctx, g, r, n);
    size_t e;
    uint32_t *idx = randk_indices(ctx, s, n, seed, k, &e);
    if (!idx) return e;
    const int unbiased = (p->flags & GC_PF_RANDK_UNBIASED) != 0;
    const float scale = unbiased && k ? (float)((double)n / (double)k) : 1.0f;
    k_randk_head<<<1, 1, 0, ctx->stream>>>(body, seed, (uint32_t)k,
                                           unbiased ? RANDK_FLAG_UNBIASED : 0u);
    if (k)
        k_randk_values<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(
            idx, k, r ? r : g, r, unbiased, scale, body + RANDK_HEAD);
    return RANDK_HEAD + 4 * k;
}

__global__ void k_randk_scatter_add(const uint32_t *idx, size_t k, const uint8_t *vals, float *acc)
{
    GRID_STRIDE(j, k) acc[idx[j]] = gx_add(acc[idx[j]], ld_f32(vals + 4 * j));
}

/* randk_read's checks of a body (host bytes), then its k indices on the
 * device (*idx; NULL with k = 0). Returns k or an error. */
static size_t randk_open(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                         size_t n, uint32_t **idx)
{
    *idx = NULL;
    if (len < RANDK_HEAD) return GC_ERR(TRUNCATED);
    uint64_t seed = 0;
    for (int i = 7; i >= 0; i--) seed = seed << 8 | body[i];
    const size_t k = get_u32(body + 8);
    if ((body[12] & ~RANDK_FLAG_UNBIASED) || k > n || n > UINT32_MAX) return GC_ERR(CORRUPT);
    const size_t rest = len - RANDK_HEAD;
    if (k > rest / 4) return GC_ERR(TRUNCATED);
    if (rest != 4 * k) return GC_ERR(CORRUPT);
    if (k == 0) return 0;
    size_t e;
    *idx = randk_indices(ctx, s, n, seed, k, &e);
    return *idx ? k : e;
}

size_t gpu_randk_zero_sent(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                           float *x, size_t n)
{
    uint32_t *idx;
    const size_t k = randk_open(ctx, s, body, len, n, &idx);
    if (gc_is_error(k)) return k;
    gpu_zero_at(ctx, idx, k, x);
    return sync_status(ctx);
}

static size_t randk_decode_add(gcmpi_gpu_ctx *ctx, scratch *s, const uint8_t *body, size_t len,
                               float *acc, size_t n)
{
    uint32_t *idx;
    const size_t k = randk_open(ctx, s, body, len, n, &idx);
    if (gc_is_error(k) || k == 0) return gc_is_error(k) ? k : 0;
    uint8_t *vals = body_to_device(ctx, s, body + RANDK_HEAD, 4 * k);
    if (!vals) return GC_ERR(ALLOC);
    k_randk_scatter_add<<<blocks_for(k, GPU_THREADS), GPU_THREADS, 0, ctx->stream>>>(idx, k, vals,
                                                                                     acc);
    return 0;
}

extern const gpu_codec gpu_codec_randk;
const gpu_codec gpu_codec_randk = {ID_RANDK, randk_encode, randk_decode_add};
