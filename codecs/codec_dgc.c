/* codec_dgc.c — Deep Gradient Compression's selection (Lin et al.): the
 * top-k threshold is estimated from a random sample of |v| instead of a
 * selection over all of v, then every element at or above it is sent.
 * Body: the sparse body of topk (sparse_index.h). Momentum correction and
 * factor masking are gc_encode_momentum (momentum.c) over this codec.
 *
 * The rule, with k = ceil(ratio * n) and tol = dgc_tolerance:
 *   s = max(ceil(dgc_sample * n), min(n, 1024)) samples, one uniform index
 *       in each of s equal strata of [0, n), drawn by splitmix64 from the
 *       seed (stratified: a lower-variance estimate, and memory read in
 *       order). If s >= n sampling saves nothing: send the exact top-k.
 *   T = the k_s-th largest sampled magnitude, k_s = ceil(ratio * s).
 *   c = number of elements with |v| >= T (found in the pass forming v).
 *   lo = max(1, ceil(k (1 - tol))), hi = min(n, floor(k (1 + tol))):
 *   lo <= c <= hi  send those c elements;
 *   c > hi         send the exact top-k among them (DGC's hierarchical
 *                  second selection); as c >= k elements reach T this is
 *                  the exact top-k of v (when c is huge, e.g. all
 *                  magnitudes equal, it is taken from v directly rather
 *                  than from a candidate list as long as v);
 *   c < lo         the sample put T too high: send the exact top-k of v
 *                  (a radix select over v), which cannot miss again as a
 *                  re-estimate could.
 * So at most hi elements are sent, and exactly k whenever c misses. */
#include "sparse_index.h"

#include <math.h>

#define DGC_MIN_SAMPLES 1024u
/* Candidates kept for the second selection: max(4 hi, this). */
#define DGC_MIN_CANDIDATES 65536u
#define DGC_CHUNK 4096u  /* a multiple of 8 */

static size_t dgc_check(const gc_params *p, char *msg, size_t msglen)
{
    size_t r = gc_check_ratio(p, msg, msglen);
    if (gc_is_error(r)) return r;
    if (!(p->dgc_sample > 0.0 && p->dgc_sample <= 1.0))
        return gc_param_error(msg, msglen,
                              "dgc_sample=%g is out of range; expected a number in (0, 1]",
                              p->dgc_sample);
    if (!(p->dgc_tolerance >= 0.0 && p->dgc_tolerance <= 10.0))
        return gc_param_error(msg, msglen,
                              "dgc_tolerance=%g is out of range; expected a number in [0, 10]",
                              p->dgc_tolerance);
    return 0;
}

static size_t dgc_hi(size_t n, size_t k, const gc_params *p)
{
    double hi = floor((double)k * (1.0 + p->dgc_tolerance));
    return hi >= (double)n ? n : (size_t)hi;
}

static size_t dgc_lo(size_t k, const gc_params *p)
{
    double lo = ceil((double)k * (1.0 - p->dgc_tolerance));
    return lo < 1.0 ? 1 : (size_t)lo;
}

static size_t dgc_samples(size_t n, const gc_params *p)
{
    double s = ceil(p->dgc_sample * (double)n);
    size_t floor_s = n < DGC_MIN_SAMPLES ? n : DGC_MIN_SAMPLES;
    if (s >= (double)n) return n;
    return (size_t)s > floor_s ? (size_t)s : floor_s;
}

static size_t dgc_bound(size_t n, const gc_params *p)
{
    return gc_sparse_body_bound(n, dgc_hi(n, gc_kept_count(n, p->ratio), p));
}

/* Magnitude keys of v = g (+ r) at one random index per stratum: stratum j
 * is [floor(j n / s), floor((j + 1) n / s)), its start stepped without a
 * division. Indices are drawn first so the gathers that follow are
 * independent loads the CPU overlaps. */
static void sample_keys(const float *g, const float *r, size_t n, size_t s, uint64_t seed,
                        uint32_t *keys)
{
    uint64_t state = seed;
    size_t q = n / s, rem = n % s, lo = 0, err = 0;
    for (size_t j = 0; j < s; j++) {
        size_t width = q + (err + rem >= s);
        keys[j] = (uint32_t)(lo + gc_rand_below(&state, width));
        lo += width;
        err = err + rem >= s ? err + rem - s : err + rem;
    }
    if (r)
        for (size_t j = 0; j < s; j++) keys[j] = gc_mag_key(g[keys[j]] + r[keys[j]]);
    else
        for (size_t j = 0; j < s; j++) keys[j] = gc_mag_key(g[keys[j]]);
}

static void flag_sum(float *restrict r, const float *restrict g, size_t m, int32_t t,
                     uint8_t *restrict flag)
{
    for (size_t i = 0; i < m; i++) {
        float x = g[i] + r[i];
        r[i] = x;
        flag[i] = (int32_t)gc_mag_key(x) >= t;
    }
}

static void flag_only(const float *restrict g, size_t m, int32_t t, uint8_t *restrict flag)
{
    for (size_t i = 0; i < m; i++) flag[i] = (int32_t)gc_mag_key(g[i]) >= t;
}

/* v = g (+ r, stored into r) and the indices with key >= t: returns their
 * count, storing the first cap of them. Per chunk, one vectorised loop
 * forms v and a byte flag per element (keys fit in 31 bits, so a signed
 * compare is exact); the flags are then read eight at a time, so the rare
 * selected elements cost a branch and the others almost nothing. */
static size_t accumulate_select(const float *g, float *r, size_t n, uint32_t t,
                                uint32_t *cand, size_t cap)
{
    uint8_t flag[DGC_CHUNK];
    size_t c = 0;
    for (size_t base = 0; base < n; base += DGC_CHUNK) {
        size_t m = n - base < DGC_CHUNK ? n - base : DGC_CHUNK;
        if (r) flag_sum(r + base, g + base, m, (int32_t)t, flag);
        else flag_only(g + base, m, (int32_t)t, flag);
        memset(flag + m, 0, (8 - m % 8) % 8);
        for (size_t i = 0; i < m; i += 8) {
            uint64_t w;
            memcpy(&w, flag + i, 8);
            for (; w; w &= w - 1) {
                if (c < cap) cand[c] = (uint32_t)(base + i + (size_t)__builtin_ctzll(w) / 8);
                c++;
            }
        }
    }
    return c;
}

static size_t exact_topk(const float *v, size_t n, size_t k, gc_workspace *ws,
                         uint32_t **idx)
{
    const float *same;
    return gc_sparse_accumulate_topk(v, NULL, n, k, ws, &same, idx);
}

static size_t dgc_encode(const float *g, float *r, size_t n, const gc_params *p,
                         uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    if (n > UINT32_MAX) return GC_ERROR(PARAM);  /* indices are 32-bit */
    if (cap < dgc_bound(n, p)) return GC_ERROR(DST_TOO_SMALL);
    size_t k = gc_kept_count(n, p->ratio);
    size_t s = dgc_samples(n, p);
    uint32_t *idx;
    size_t sent;
    const float *v;

    if (s >= n) {
        sent = gc_sparse_accumulate_topk(g, r, n, k, ws, &v, &idx);
    } else {
        uint32_t *keys = gc_ws_get(ws, GC_WS_B, s * sizeof(uint32_t));
        if (!keys) return GC_ERROR(ALLOC);
        sample_keys(g, r, n, s, seed, keys);
        uint32_t t = gc_sparse_kth_largest(keys, s, gc_kept_count(s, p->ratio));

        size_t lo = dgc_lo(k, p), hi = dgc_hi(n, k, p);
        size_t cap_c = 4 * hi > DGC_MIN_CANDIDATES ? 4 * hi : DGC_MIN_CANDIDATES;
        if (cap_c > n) cap_c = n;
        idx = gc_ws_get(ws, GC_WS_A, cap_c * sizeof(uint32_t));
        if (!idx) return GC_ERROR(ALLOC);
        size_t c = accumulate_select(g, r, n, t, idx, cap_c);
        v = r ? r : g;
        if (c >= lo && c <= hi) {
            sent = c;
        } else if (c > hi && c <= cap_c) {
            sent = gc_sparse_topk_among(v, idx, c, k, ws);
        } else {
            sent = exact_topk(v, n, k, ws, &idx);
        }
    }
    if (gc_is_error(sent)) return sent;
    ws->report.kept = sent;
    return gc_sparse_body_write(idx, sent, v, r, n, dst, cap);
}

static size_t dgc_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                             gc_workspace *ws)
{
    (void)ws;
    return gc_sparse_body_apply(src, len, acc, n, GC_SPARSE_ADD);
}

static size_t dgc_zero_sent(const uint8_t *src, size_t len, float *x, size_t n,
                            gc_workspace *ws)
{
    (void)ws;
    return gc_sparse_body_apply(src, len, x, n, GC_SPARSE_ZERO);
}

const gc_codec gc_codec_dgc = {
    .name = "dgc",
    .id = GC_ID_DGC,
    .flags = GC_SPARSE | GC_STOCHASTIC,
    .check = dgc_check,
    .bound = dgc_bound,
    .encode = dgc_encode,
    .decode_add = dgc_decode_add,
    .zero_sent = dgc_zero_sent,
};
