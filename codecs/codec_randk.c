/* codec_randk.c — random-k sparsification: k = ceil(ratio * n) indices drawn
 * uniformly without replacement from the seed alone, so every rank using
 * the same seed picks the same indices and the k values can be summed by
 * MPI itself (GC_LINEAR: the `native` algorithm allreduces them).
 *
 * Body (little-endian): u64 seed, u32 k, u8 flags, k float32 values in
 * ascending index order. No indices: the decoder draws them again from
 * (seed, n, k).
 *
 * Indices: Floyd's algorithm over a bitmap of n bits, exact-k and uniform,
 * O(k + n/64). Draw j = n-k .. n-1 takes t = gc_rand_below(state, j + 1)
 * with state = seed (splitmix64) and adds t, or j if t is already taken;
 * the indices are the set bits in ascending order.
 *
 * GC_PF_RANDK_UNBIASED scales the sent values by n/k (flag bit 0 in the
 * body), making D(C(v)) an unbiased estimate of v (Stich et al.). Use it
 * without error feedback: with a residual, r = v - (n/k) v at the sent
 * indices, a large opposite error fed back next step. With error feedback
 * leave the flag clear; the residual is then v with the sent elements
 * cleared. */
#include "codec_impl.h"

#define RANDK_HEAD 13u
#define RANDK_FLAG_UNBIASED 1u
#define RANDK_BATCH 32u

static size_t randk_check(const gc_params *p, char *msg, size_t msglen)
{
    return gc_check_ratio(p, msg, msglen);
}

static size_t randk_bound(size_t n, const gc_params *p)
{
    return RANDK_HEAD + 4 * gc_kept_count(n, p->ratio);
}

/* idx[0..k) = the k indices of (n, seed), ascending. Uses slot GC_WS_B. */
static size_t randk_select(size_t n, size_t k, uint64_t seed, uint32_t *idx,
                           gc_workspace *ws)
{
    size_t words = (n + 63) / 64;
    uint64_t *taken = gc_ws_get(ws, GC_WS_B, words * sizeof(uint64_t));
    if (!taken) return GC_ERROR(ALLOC);
    memset(taken, 0, words * sizeof(uint64_t));
    /* Draws are made RANDK_BATCH at a time and their words prefetched:
     * the bitmap outgrows the caches, and each draw would otherwise wait
     * for its own miss. The result is that of the one-by-one loop. */
    uint64_t state = seed;
    size_t draw[RANDK_BATCH];
    for (size_t j0 = n - k; j0 < n; j0 += RANDK_BATCH) {
        size_t cnt = n - j0 < RANDK_BATCH ? n - j0 : RANDK_BATCH;
        for (size_t b = 0; b < cnt; b++) {
            draw[b] = (size_t)gc_rand_below(&state, (uint64_t)(j0 + b) + 1);
            __builtin_prefetch(&taken[draw[b] >> 6], 1);
        }
        for (size_t b = 0; b < cnt; b++) {
            size_t t = draw[b];
            if ((taken[t >> 6] >> (t & 63)) & 1u) t = j0 + b;
            taken[t >> 6] |= 1ull << (t & 63);
        }
    }
    size_t m = 0;
    for (size_t w = 0; w < words; w++)
        for (uint64_t bits = taken[w]; bits; bits &= bits - 1)
            idx[m++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
    return m;
}

static void add_into(float *restrict r, const float *restrict g, size_t n)
{
    for (size_t i = 0; i < n; i++) r[i] = g[i] + r[i];
}

static size_t randk_encode(const float *g, float *r, size_t n, const gc_params *p,
                           uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    if (n > UINT32_MAX) return GC_ERROR(PARAM);  /* indices are 32-bit */
    size_t k = gc_kept_count(n, p->ratio);
    if (cap < RANDK_HEAD + 4 * k) return GC_ERROR(DST_TOO_SMALL);
    uint32_t *idx = gc_ws_get(ws, GC_WS_A, k * sizeof(uint32_t));
    if (!idx) return GC_ERROR(ALLOC);
    size_t got = randk_select(n, k, seed, idx, ws);
    if (gc_is_error(got)) return got;

    int unbiased = (p->flags & GC_PF_RANDK_UNBIASED) != 0;
    float scale = unbiased && k ? (float)((double)n / (double)k) : 1.0f;
    const float *v = g;
    if (r) {
        add_into(r, g, n);
        v = r;
    }
    uint8_t *vals = dst + RANDK_HEAD;
    for (size_t j = 0; j < k; j++) {
        float x = v[idx[j]];
        float sent = unbiased ? x * scale : x;
        gc_put_f32(vals + 4 * j, sent);
        if (r) r[idx[j]] = unbiased ? x - sent : 0.0f;
    }
    gc_put_u64(dst, seed);
    gc_put_u32(dst + 8, (uint32_t)k);
    dst[12] = (uint8_t)(unbiased ? RANDK_FLAG_UNBIASED : 0u);
    ws->report.kept = k;
    return RANDK_HEAD + 4 * k;
}

/* Validate the body and draw its indices into slot GC_WS_A. */
static size_t randk_read(const uint8_t *src, size_t len, size_t n, gc_workspace *ws,
                         uint32_t **idx)
{
    if (len < RANDK_HEAD) return GC_ERROR(TRUNCATED);
    uint64_t seed = gc_get_u64(src);
    size_t k = gc_get_u32(src + 8);
    if ((src[12] & ~RANDK_FLAG_UNBIASED) || k > n || n > UINT32_MAX) return GC_ERROR(CORRUPT);
    size_t rest = len - RANDK_HEAD;
    if (k > rest / 4) return GC_ERROR(TRUNCATED);
    if (rest != 4 * k) return GC_ERROR(CORRUPT);
    *idx = gc_ws_get(ws, GC_WS_A, k * sizeof(uint32_t));
    if (!*idx) return GC_ERROR(ALLOC);
    return randk_select(n, k, seed, *idx, ws);
}

static size_t randk_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                               gc_workspace *ws)
{
    uint32_t *idx;
    size_t k = randk_read(src, len, n, ws, &idx);
    if (gc_is_error(k)) return k;
    const uint8_t *vals = src + RANDK_HEAD;
    for (size_t j = 0; j < k; j++) acc[idx[j]] += gc_get_f32(vals + 4 * j);
    return 0;
}

static size_t randk_zero_sent(const uint8_t *src, size_t len, float *x, size_t n,
                              gc_workspace *ws)
{
    uint32_t *idx;
    size_t k = randk_read(src, len, n, ws, &idx);
    if (gc_is_error(k)) return k;
    for (size_t j = 0; j < k; j++) x[idx[j]] = 0.0f;
    return 0;
}

size_t gc_randk_count(size_t n, const gc_params *p)
{
    if (!p || gc_is_error(gc_check_ratio(p, NULL, 0)) || n > UINT32_MAX)
        return GC_ERROR(PARAM);
    return gc_kept_count(n, p->ratio);
}

size_t gc_randk_indices(size_t n, const gc_params *p, uint64_t seed, uint32_t *idx,
                        gc_workspace *ws)
{
    size_t k = gc_randk_count(n, p);
    if (gc_is_error(k)) return k;
    if (k > 0 && !idx) return GC_ERROR(GENERIC);
    gc_workspace *own = NULL;
    if (!ws) {
        ws = own = gc_workspace_create();
        if (!ws) return GC_ERROR(ALLOC);
    }
    size_t r = randk_select(n, k, seed, idx, ws);
    gc_workspace_free(own);
    return r;
}

const gc_codec gc_codec_randk = {
    .name = "randk",
    .id = GC_ID_RANDK,
    .flags = GC_LINEAR | GC_SPARSE | GC_STOCHASTIC,
    .check = randk_check,
    .bound = randk_bound,
    .encode = randk_encode,
    .decode_add = randk_decode_add,
    .zero_sent = randk_zero_sent,
};
