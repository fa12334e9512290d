/* codec_eg.c — GCT's entropy coder (Algorithm 1 of the GCT paper):
 * fixed-point quantisation q = round(2^n v), zig-zag to unsigned, and an
 * order-k Exp-Golomb bit stream (expgolomb.h) with k chosen per bucket.
 *
 * Body (little-endian):
 *   0  i8   n, the exponent: the step is 2^-n, n in [-60, 60]
 *   1  u32  bucket size b >= 1: elements that share one order k
 *   5  u32  segment size S >= 1, in buckets (sync_points.h: the encoder
 *           writes ceil(4096 / b), a segment holds about 4096 elements)
 *   9  u64  sync points: for each segment after the first, the stream bit
 *           where its first bucket's k field starts; 8 (nseg - 1) bytes
 *   .. bit stream, LSB first; for each bucket of b elements (the last one
 *      may be shorter): k in 5 bits (0..30), then the order-k code of
 *      z = zigzag(q) for each element (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...);
 *      zero bits pad the last byte and the body ends there.
 * Buckets follow one another without alignment; the sync points let a
 * decoder start every segment at once (the GPU decodes a segment a thread,
 * gpu/codec_eg.cu) for 64 bits per 4096 elements (0.016 bits an element,
 * not counted in code_bits_per_element, which is GCT's measure of the
 * stream). This decoder walks the stream in order and checks that every
 * segment starts at its sync point, so a body either decoder accepts
 * decodes alike. Decoding adds 2^-n q. Inputs that are exact multiples
 * of 2^-n (within the clamp below) come back exactly (-0 as +0); otherwise
 * the error per element is at most 2^-n / 2. The decoder answers CORRUPT
 * for n outside [-60, 60], b = 0 or b > 2^31, S = 0, k > 30, a run of more
 * than 31 - k zeros (x would not fit 32 bits), a segment not starting at
 * its sync point, bytes past the padded last byte or nonzero padding;
 * TRUNCATED when the sync points or the stream end too soon.
 *
 * n: p->eg_n, or with GC_AUTO the n with max|v| 2^n in [2^11, 2^12)
 * (non-finite elements ignored; 0 when every element is zero), bounded to
 * [-60, 60]. The step is then at most max|v| / 2^11: 12-bit fixed point
 * relative to the largest element, about the 11 fixed-length bits per
 * element GCT's Table 1 reports for uncompressed training.
 * Rounding is half to even (the current rounding mode, never changed by
 * libgcmpi). |2^n v| is clamped to 2^30 before rounding, so zig-zag values
 * stay below 2^31 and codes within 63 bits; a clamped element's error stays
 * in the residual (NaN counts as +2^30, inf as +-2^30).
 *
 * k: p->eg_k, or with GC_AUTO the k in [0, 30] that gives the shortest
 * codes to a sample of the bucket of m elements: all of it when m < 128,
 * else every s-th element from the first, s = floor(m / 64) (64 to 127
 * elements; exact for the sample, see best_order). A full histogram cost
 * as much as writing the codes; on Laplace, Gaussian, uniform, sparse and
 * heavy-tailed buckets of 512 the sampled k's codes were 0.17% longer than
 * the best k's overall (6% in the worst bucket).
 *
 * Report: code_bits_per_element = bits of the stream (k fields included,
 * padding excluded) / n; fl_bits_per_element = what fixed-length codes of
 * the same zig-zag integers would take, per bucket the bit width of its
 * largest value (at least 1) times its elements, / n — the two columns of
 * GCT's Table 1; eg_n = the n used. */
#include "codec_impl.h"
#include "expgolomb.h"
#include "sync_points.h"

#include <math.h>

#define EG_HEAD 9
#define EG_N_LIMIT 60
#define EG_AUTO_RANGE_BITS 12
#define EG_K_BITS 5
#define EG_CLAMP 0x1p30f
#define EG_MAX_CODE_BITS 63u
#define EG_K_SAMPLES 64u

/* Round to nearest, ties to even, to int32 (|x| <= 2^30 here). gcc
 * vectorises __builtin_irintf, clang rintf, into one cvtps2dq. */
#if defined(__GNUC__) && !defined(__clang__)
#define EG_RINT_I32(x) __builtin_irintf(x)
#else
#define EG_RINT_I32(x) ((int32_t)rintf(x))
#endif

static size_t eg_check(const gc_params *p, char *msg, size_t msglen)
{
    size_t r = gc_check_bucket(p, msg, msglen);
    if (gc_is_error(r)) return r;
    if (p->eg_n != GC_AUTO && (p->eg_n < -EG_N_LIMIT || p->eg_n > EG_N_LIMIT))
        return gc_param_error(msg, msglen,
                              "eg_n=%d is out of range; expected an integer in [-60, 60] or auto",
                              p->eg_n);
    if (p->eg_k != GC_AUTO && (p->eg_k < 0 || p->eg_k > (int)GC_EG_MAX_ORDER))
        return gc_param_error(msg, msglen,
                              "eg_k=%d is out of range; expected an integer in [0, 30] or auto",
                              p->eg_k);
    return 0;
}

static size_t eg_bound(size_t n, const gc_params *p)
{
    size_t buckets = gc_bucket_count(n, p->bucket);
    return EG_HEAD + gc_sync_bytes(buckets, gc_sync_segment_buckets(p->bucket))
        + (EG_K_BITS * buckets + EG_MAX_CODE_BITS * n + 7) / 8;
}

/* Bits of |x| when x is finite, else 0. For non-negative floats the
 * integer order of the bits is the numeric order, and an int32 max
 * reduction vectorises where a float one (NaN, -0) does not. */
static inline int32_t finite_abs_bits(float x)
{
    int32_t u;
    memcpy(&u, &x, sizeof u);
    u &= 0x7FFFFFFF;
    return u < 0x7F800000 ? u : 0;
}

/* Largest finite |g + r|. */
static float max_abs(const float *restrict g, const float *restrict r, size_t n)
{
    int32_t m = 0;
    if (r) {
        for (size_t i = 0; i < n; i++) {
            int32_t a = finite_abs_bits(g[i] + r[i]);
            m = a > m ? a : m;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            int32_t a = finite_abs_bits(g[i]);
            m = a > m ? a : m;
        }
    }
    float f;
    memcpy(&f, &m, sizeof f);
    return f;
}

static int auto_exponent(const float *g, const float *r, size_t n)
{
    float m = max_abs(g, r, n);
    if (m == 0.0f) return 0;
    int e;
    frexpf(m, &e);                    /* m = f 2^e, f in [0.5, 1) */
    int x = EG_AUTO_RANGE_BITS - e;   /* m 2^x = f 2^12 < 2^12 */
    return x < -EG_N_LIMIT ? -EG_N_LIMIT : x > EG_N_LIMIT ? EG_N_LIMIT : x;
}

static inline uint32_t zigzag(int32_t q)
{
    return ((uint32_t)q << 1) ^ (uint32_t)-(int32_t)((uint32_t)q >> 31);
}

static inline int32_t unzigzag(uint32_t z)
{
    /* z >> 1 < 2^31, so every uint32 maps into int32's range. */
    return (int32_t)(z >> 1) ^ -(int32_t)(z & 1u);
}

/* z[i] = zigzag(round(2^n v)) with v = g (+ r); if r, r = v - 2^-n q.
 * Returns the OR of the z (its bit width is that of the largest). */
static uint32_t quantise(const float *restrict g, float *restrict r, size_t m, float scale,
                         float step, uint32_t *restrict z)
{
    uint32_t any = 0;
    if (r) {
        for (size_t i = 0; i < m; i++) {
            float v = g[i] + r[i];
            float x = v * scale;
            x = x < EG_CLAMP ? x : EG_CLAMP;
            x = x > -EG_CLAMP ? x : -EG_CLAMP;
            int32_t q = EG_RINT_I32(x);
            r[i] = v - (float)q * step;
            z[i] = zigzag(q);
            any |= z[i];
        }
    } else {
        for (size_t i = 0; i < m; i++) {
            float x = g[i] * scale;
            x = x < EG_CLAMP ? x : EG_CLAMP;
            x = x > -EG_CLAMP ? x : -EG_CLAMP;
            int32_t q = EG_RINT_I32(x);
            z[i] = zigzag(q);
            any |= z[i];
        }
    }
    return any;
}

/* The order k in [0, 30] with the shortest codes for the sample of
 * z[0..m) taken every `stride` elements, exactly. The order-k code of z is
 * 2 bitlen((z >> k) + 1) - 1 + k bits. With b = bitlen(z) and
 * j = bitlen(z ^ (2^b - 1)) (the bits below z's leading run of ones),
 * bitlen((z >> k) + 1) = max(b - k, 0) + [j <= k]: the +1 carries out
 * exactly when the bits from k up are all ones. So c samples cost
 * 2 S(k) + 2 C(k) + c (k - 1) bits, S(k) = sum of max(b - k, 0),
 * C(k) = #{j <= k}: two histograms of 33 bins give every k. */
static unsigned best_order(const uint32_t *restrict z, size_t m, size_t stride)
{
    enum { COPIES = 4 };
    /* Copies for consecutive samples let increments of one bin overlap. */
    uint32_t hb[COPIES][33] = {{0}}, hj[COPIES][33] = {{0}};
    size_t c = 0;
    for (size_t i = 0; i < m; i += stride, c++) {
        uint64_t v = z[i];
        unsigned b = gc_eg_bitlen(v);
        hb[c % COPIES][b]++;
        hj[c % COPIES][gc_eg_bitlen(v ^ ((1ull << b) - 1u))]++;
    }
    uint64_t cb[33], cj[33];
    for (unsigned b = 0; b <= 32; b++) {
        cb[b] = cj[b] = 0;
        for (unsigned t = 0; t < COPIES; t++) { cb[b] += hb[t][b]; cj[b] += hj[t][b]; }
    }
    uint64_t s = 0;                       /* S(0) = sum of b */
    for (unsigned b = 0; b <= 32; b++) s += (uint64_t)b * cb[b];
    uint64_t b_at_most = 0, j_at_most = 0; /* #{b <= k}, #{j <= k} */
    uint64_t best_bits = UINT64_MAX;
    unsigned best = 0;
    for (unsigned k = 0; k <= GC_EG_MAX_ORDER; k++) {
        j_at_most += cj[k];
        uint64_t bits = 2 * s + 2 * j_at_most + (uint64_t)c * k - c;
        if (bits < best_bits) { best_bits = bits; best = k; }
        b_at_most += cb[k];
        s -= (uint64_t)c - b_at_most;     /* S(k+1) = S(k) - #{b > k} */
    }
    return best;
}

/* Every element of buckets below 2 EG_K_SAMPLES, else about EG_K_SAMPLES
 * evenly spaced ones. */
static size_t order_stride(size_t m)
{
    return m >= 2 * EG_K_SAMPLES ? m / EG_K_SAMPLES : 1;
}

static size_t eg_encode(const float *g, float *r, size_t n, const gc_params *p, uint64_t seed,
                        uint8_t *dst, size_t cap, gc_workspace *ws)
{
    (void)seed;
    /* Checked before anything is touched, so an error leaves r as it was. */
    if (cap < eg_bound(n, p)) return GC_ERROR(DST_TOO_SMALL);
    size_t b = p->bucket;
    uint32_t *z = gc_ws_get(ws, GC_WS_A, (b < n ? b : n) * sizeof(uint32_t));
    if (!z) return GC_ERROR(ALLOC);

    int e = p->eg_n == GC_AUTO ? auto_exponent(g, r, n) : p->eg_n;
    float scale = ldexpf(1.0f, e), step = ldexpf(1.0f, -e);
    const size_t seg = gc_sync_segment_buckets(b);
    const size_t table = gc_sync_bytes(gc_bucket_count(n, b), seg);
    dst[0] = (uint8_t)(int8_t)e;
    gc_put_u32(dst + 1, (uint32_t)b);
    gc_put_u32(dst + 5, (uint32_t)seg);
    uint8_t *sync = dst + EG_HEAD;  /* behind the segment size */

    gc_egw w;
    gc_egw_init(&w, sync + table, cap - EG_HEAD - table);
    uint64_t fl_bits = 0;
    for (size_t s = 0, bi = 0; s < n; s += b, bi++) {
        size_t m = n - s < b ? n - s : b;
        if (gc_sync_at(bi, seg)) gc_put_u64(sync + gc_sync_offset(bi, seg), gc_egw_bits(&w));
        uint32_t any = quantise(g + s, r ? r + s : NULL, m, scale, step, z);
        unsigned width = gc_eg_bitlen(any);
        fl_bits += (uint64_t)m * (width ? width : 1u);
        unsigned k = p->eg_k == GC_AUTO ? best_order(z, m, order_stride(m)) : (unsigned)p->eg_k;
        gc_egw_put(&w, k, EG_K_BITS);
        if (w.pos <= w.cap && w.cap - w.pos >= gc_egw_codes_room(m)) {
            gc_egw_codes(&w, z, m, k);
        } else {
            /* Near the end of dst: stores checked one by one. */
            for (size_t i = 0; i < m; i++) gc_egw_code(&w, z[i], k);
        }
    }
    uint64_t code_bits = gc_egw_bits(&w);
    size_t bytes = gc_egw_finish(&w);
    if (bytes == (size_t)-1) return GC_ERROR(DST_TOO_SMALL);

    ws->report.eg_n = e;
    ws->report.code_bits_per_element = n ? (double)code_bits / (double)n : 0.0;
    ws->report.fl_bits_per_element = n ? (double)fl_bits / (double)n : 0.0;
    return EG_HEAD + table + bytes;
}

/* acc[i] += 2^-n unzigzag(z[i]); vectorises. */
static void add_dequantised(float *restrict acc, const uint32_t *restrict z, size_t m, float step)
{
    for (size_t i = 0; i < m; i++) acc[i] += (float)unzigzag(z[i]) * step;
}

static size_t eg_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                            gc_workspace *ws)
{
    if (len < EG_HEAD) return GC_ERROR(TRUNCATED);
    int e = (int8_t)src[0];
    if (e < -EG_N_LIMIT || e > EG_N_LIMIT) return GC_ERROR(CORRUPT);
    uint32_t b = gc_get_u32(src + 1);
    if (b == 0 || b > (1u << 31)) return GC_ERROR(CORRUPT);
    size_t buckets = gc_bucket_count(n, b), seg = 0;
    size_t sync_len = gc_sync_open(src + 5, len - 5, buckets, &seg);
    if (gc_is_error(sync_len)) return sync_len;
    const uint8_t *sync = src + EG_HEAD, *s = src + 5 + sync_len;
    size_t slen = len - (size_t)(s - src);
    uint64_t avail_bits = (uint64_t)slen * 8;
    /* Every bucket takes at least 5 bits and every element 1. */
    if ((uint64_t)n + (uint64_t)EG_K_BITS * buckets > avail_bits) return GC_ERROR(TRUNCATED);

    uint32_t *z = gc_ws_get(ws, GC_WS_A, (b < n ? b : n) * sizeof(uint32_t));
    if (!z) return GC_ERROR(ALLOC);
    float step = ldexpf(1.0f, -e);
    gc_egr rd;
    gc_egr_init(&rd, s, slen);
    gc_eg_order order;
    gc_eg_order_init(&order, 0);
    for (size_t start = 0, bi = 0; start < n; start += b, bi++) {
        size_t m = n - start < b ? n - start : b;
        if (gc_sync_at(bi, seg) && gc_egr_bits_used(&rd) != gc_get_u64(sync + gc_sync_offset(bi, seg)))
            return GC_ERROR(CORRUPT);
        unsigned k = gc_egr_get(&rd, EG_K_BITS);
        if (k > GC_EG_MAX_ORDER) return GC_ERROR(CORRUPT);
        if (k != order.k) gc_eg_order_init(&order, k);
        if (gc_egr_codes(&rd, z, m, &order) != 0)
            return gc_egr_bits_used(&rd) + 32 - k > avail_bits ? GC_ERROR(TRUNCATED) : GC_ERROR(CORRUPT);
        if (gc_egr_bits_used(&rd) > avail_bits) return GC_ERROR(TRUNCATED);
        add_dequantised(acc + start, z, m, step);
    }
    uint64_t used = gc_egr_bits_used(&rd);
    if (used > avail_bits) return GC_ERROR(TRUNCATED);
    if ((used + 7) / 8 != slen) return GC_ERROR(CORRUPT);
    if ((used & 7) && (s[slen - 1] >> (used & 7)) != 0) return GC_ERROR(CORRUPT);
    return 0;
}

const gc_codec gc_codec_eg = {
    .name = "eg",
    .id = GC_ID_EG,
    .flags = 0,
    .check = eg_check,
    .bound = eg_bound,
    .encode = eg_encode,
    .decode_add = eg_decode_add,
    .zero_sent = NULL,
};
