/* sparse_index.c — exact top-k by radix select on magnitude bits, and the
 * sparse body (index coding + values) shared by topk and dgc; topkq reuses
 * its index coding alone.
 *
 * Selection never sorts: gc_mag_key(x) orders floats by |x|, so the k-th
 * largest magnitude is found digit by digit (11, 10, 10 bits from the top).
 *
 * Large vectors take one pass: a strided sample of v = g + r gives a key t
 * that about 1.3 k elements reach, and the pass that forms v collects the
 * elements at or above t. When at least k came (and not too many), the
 * k-th largest is among them, and all three digits and the tie count are
 * resolved on that short list. Otherwise (a sample that missed, ties by
 * the thousand) v's first-digit histogram is taken and the two-pass path
 * below runs: the same answer, later.
 *
 * The two-pass path: the first digit's histogram comes from the pass that
 * forms v; one more pass collects the elements at or above that digit's
 * bin, usually about k of them; the last two digits and the tie count are
 * resolved on that short candidate list, which a final filter turns into
 * the answer. */
#include "sparse_index.h"
#include "sparse_sample.h"

#include "bitstream.h"

#include <math.h>

/* Elements per block of the fused passes (add + histogram, add + collect):
 * small enough that the block is still in L1 when the second loop reads it
 * back. */
#define ACC_CHUNK 4096u  /* a multiple of 8 */


static const unsigned level_shift[3] = {20, 10, 0};
static const unsigned level_bits[3] = {11, 10, 10};

static void add_into(float *restrict r, const float *restrict g, size_t m)
{
    for (size_t i = 0; i < m; i++) r[i] = g[i] + r[i];
}

/* Four interleaved histograms: neighbouring elements usually share a bin
 * (gradients cluster in a few exponents), and one table would make every
 * increment wait for the previous one. */
static void histogram_chunk(const float *restrict x, size_t m,
                            uint32_t h[4][GC_SPARSE_HIST_BINS])
{
    size_t i = 0;
    for (; i + 4 <= m; i += 4) {
        h[0][gc_mag_key(x[i]) >> GC_SPARSE_HIST_SHIFT]++;
        h[1][gc_mag_key(x[i + 1]) >> GC_SPARSE_HIST_SHIFT]++;
        h[2][gc_mag_key(x[i + 2]) >> GC_SPARSE_HIST_SHIFT]++;
        h[3][gc_mag_key(x[i + 3]) >> GC_SPARSE_HIST_SHIFT]++;
    }
    for (; i < m; i++) h[0][gc_mag_key(x[i]) >> GC_SPARSE_HIST_SHIFT]++;
}

/* v's block [base, base + len): g's, or g + r stored into r. */
static const float *form_block(const float *g, float *r, size_t base, size_t len)
{
    if (!r) return g + base;
    add_into(r + base, g + base, len);
    return r + base;
}

const float *gc_sparse_accumulate(const float *g, float *r, size_t n,
                                  uint32_t hist[GC_SPARSE_HIST_BINS])
{
    uint32_t h[4][GC_SPARSE_HIST_BINS];
    memset(h, 0, sizeof h);
    for (size_t base = 0; base < n; base += ACC_CHUNK) {
        size_t m = n - base < ACC_CHUNK ? n - base : ACC_CHUNK;
        histogram_chunk(form_block(g, r, base, m), m, h);
    }
    for (unsigned b = 0; b < GC_SPARSE_HIST_BINS; b++)
        hist[b] = h[0][b] + h[1][b] + h[2][b] + h[3][b];
    return r ? r : g;
}

/* Walk bins from the top: the bin holding the need-th largest, and how
 * many elements lie in the bins above it. The counts always reach need. */
static unsigned bin_of_rank(const uint32_t *hist, unsigned bins, size_t need, size_t *above)
{
    size_t sum = 0;
    unsigned b = bins - 1;
    while (b > 0 && sum + hist[b] < need) sum += hist[b--];
    *above = sum;
    return b;
}

/* Resolve the remaining digits of the threshold key among the candidate
 * keys that agree with *prefix on the digits already fixed. On return
 * *prefix is the exact key T of the need-th largest and *need the number
 * of elements with key T still to take (the first ones by index). */
static void refine(const uint32_t *restrict key, size_t m, unsigned level, uint32_t *prefix,
                   size_t *need)
{
    uint32_t hist[GC_SPARSE_HIST_BINS];
    for (; level < 3; level++) {
        unsigned shift = level_shift[level];
        unsigned top = shift + level_bits[level];
        unsigned bins = 1u << level_bits[level];
        uint32_t want = *prefix >> top;
        memset(hist, 0, bins * sizeof hist[0]);
        for (size_t j = 0; j < m; j++)
            if ((key[j] >> top) == want) hist[(key[j] >> shift) & (bins - 1)]++;
        size_t above;
        unsigned b = bin_of_rank(hist, bins, *need, &above);
        *need -= above;
        *prefix |= (uint32_t)b << shift;
    }
}

/* Keep, in place and in order, the candidates above key t and the first
 * `ties` of those equal to t. */
static size_t keep_above(const uint32_t *key, uint32_t *cand, size_t m, uint32_t t, size_t ties)
{
    size_t out = 0;
    for (size_t j = 0; j < m; j++) {
        if (key[j] > t || (key[j] == t && ties > 0)) {
            ties -= key[j] == t;
            cand[out++] = cand[j];
        }
    }
    return out;
}

/* Appends to out[m..], ascending, the indices base + i of x[0..len)
 * (len <= ACC_CHUNK) with key >= lo, and their keys to out_key (so the
 * digits that follow are resolved on a short contiguous list, not by
 * gathers from v). Returns the new count, or cap + 1 once more than cap
 * would be held. A vectorised loop flags the chunk (keys fit in 31 bits,
 * so a signed compare is exact), then the flags are read eight at a time:
 * the few selected elements cost a branch each. */
static size_t collect_chunk(const float *restrict x, size_t len, size_t base, uint32_t lo,
                            uint32_t *restrict out, uint32_t *restrict out_key, size_t m,
                            size_t cap)
{
    uint8_t flag[ACC_CHUNK + 8];
    for (size_t i = 0; i < len; i++) flag[i] = (int32_t)gc_mag_key(x[i]) >= (int32_t)lo;
    memset(flag + len, 0, (8 - len % 8) % 8);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w;
        memcpy(&w, flag + i, 8);
        for (; w; w &= w - 1) {
            if (m == cap) return cap + 1;
            size_t at = i + (size_t)__builtin_ctzll(w) / 8;
            out[m] = (uint32_t)(base + at);
            out_key[m++] = gc_mag_key(x[at]);
        }
    }
    return m;
}

/* Every index of v with key >= lo (m of them, room made by the caller). */
static size_t collect_at_least(const float *restrict v, size_t n, uint32_t lo,
                               uint32_t *restrict out, uint32_t *restrict out_key)
{
    size_t m = 0;
    for (size_t base = 0; base < n; base += ACC_CHUNK) {
        size_t len = n - base < ACC_CHUNK ? n - base : ACC_CHUNK;
        m = collect_chunk(v + base, len, base, lo, out, out_key, m, SIZE_MAX - 1);
    }
    return m;
}

size_t gc_sparse_topk(const float *v, size_t n, size_t k,
                      const uint32_t hist[GC_SPARSE_HIST_BINS], gc_workspace *ws,
                      uint32_t **idx)
{
    if (k >= n) {
        uint32_t *all = gc_ws_get(ws, GC_WS_A, n * sizeof(uint32_t));
        if (!all) return GC_ERROR(ALLOC);
        for (size_t i = 0; i < n; i++) all[i] = (uint32_t)i;
        *idx = all;
        return n;
    }
    if (k == 0) {
        *idx = gc_ws_get(ws, GC_WS_A, sizeof(uint32_t));
        return *idx ? 0 : GC_ERROR(ALLOC);
    }
    size_t above;
    unsigned b = bin_of_rank(hist, GC_SPARSE_HIST_BINS, k, &above);
    size_t m = above + hist[b];
    uint32_t *cand = gc_ws_get(ws, GC_WS_A, m * sizeof(uint32_t));
    uint32_t *key = gc_ws_get(ws, GC_WS_C, m * sizeof(uint32_t));
    if (!cand || !key) return GC_ERROR(ALLOC);
    uint32_t prefix = (uint32_t)b << GC_SPARSE_HIST_SHIFT;
    collect_at_least(v, n, prefix, cand, key);
    size_t need = k - above;
    refine(key, m, 1, &prefix, &need);
    keep_above(key, cand, m, prefix, need);
    *idx = cand;
    return k;
}

/* Keeps, in place and in order, the k of the m candidates (keys key) with
 * the largest keys, the lowest indices among equal ones (0 < k <= m). */
static void select_among(const uint32_t *key, uint32_t *cand, size_t m, size_t k)
{
    uint32_t prefix = 0;
    size_t need = k;
    refine(key, m, 0, &prefix, &need);
    keep_above(key, cand, m, prefix, need);
}

size_t gc_sparse_topk_among(const float *v, uint32_t *cand, size_t m, size_t k,
                            gc_workspace *ws)
{
    if (k >= m || k == 0) return k < m ? k : m;
    uint32_t *key = gc_ws_get(ws, GC_WS_C, m * sizeof(uint32_t));
    if (!key) return GC_ERROR(ALLOC);
    for (size_t j = 0; j < m; j++) key[j] = gc_mag_key(v[cand[j]]);
    select_among(key, cand, m, k);
    return k;
}

uint32_t gc_sparse_kth_largest(uint32_t *keys, size_t m, size_t k)
{
    uint32_t hist[GC_SPARSE_HIST_BINS];
    uint32_t prefix = 0;
    size_t need = k;
    for (unsigned level = 0; level < 3; level++) {
        unsigned shift = level_shift[level];
        unsigned bins = 1u << level_bits[level];
        memset(hist, 0, bins * sizeof hist[0]);
        for (size_t j = 0; j < m; j++) hist[(keys[j] >> shift) & (bins - 1)]++;
        size_t above;
        unsigned b = bin_of_rank(hist, bins, need, &above);
        need -= above;
        prefix |= (uint32_t)b << shift;
        /* Keep only the bin that holds the answer for the next digit. */
        size_t kept = 0;
        for (size_t j = 0; j < m; j++)
            if (((keys[j] >> shift) & (bins - 1)) == b) keys[kept++] = keys[j];
        m = kept;
    }
    return prefix;
}

/* ---- the body ----------------------------------------------------------- */

static unsigned bit_width(uint32_t x)
{
    return x ? 32u - (unsigned)__builtin_clz(x) : 0u;
}

/* Width of block b's deltas (OR of the deltas has the width of their max). */
static unsigned block_width(const uint32_t *idx, size_t start, size_t cnt)
{
    uint32_t prev = start ? idx[start - 1] : 0, bits = 0;
    for (size_t j = start; j < start + cnt; j++) {
        bits |= idx[j] - prev;
        prev = idx[j];
    }
    return bit_width(bits);
}

static size_t delta_bytes(const uint32_t *idx, size_t k)
{
    size_t bytes = 0;
    for (size_t s = 0; s < k; s += GC_SPARSE_BLOCK) {
        size_t cnt = k - s < GC_SPARSE_BLOCK ? k - s : GC_SPARSE_BLOCK;
        bytes += 1 + (cnt * block_width(idx, s, cnt) + 7) / 8;
    }
    return bytes;
}

size_t gc_sparse_body_bound(size_t n, size_t kmax)
{
    /* The encoder never writes more index bytes than the bitmap takes. */
    return GC_SPARSE_HEAD + (n + 7) / 8 + 4 * kmax;
}

/* The head (k, mode) and the index section in the smaller coding, for
 * dbytes = delta_bytes(idx, k); the caller has checked the room. */
static size_t index_emit(const uint32_t *idx, size_t k, size_t n, size_t dbytes, uint8_t *dst)
{
    size_t mbytes = (n + 7) / 8;
    unsigned mode = mbytes < dbytes ? GC_SPARSE_BITMAP : GC_SPARSE_DELTA;
    gc_put_u32(dst, (uint32_t)k);
    dst[4] = (uint8_t)mode;
    uint8_t *ix = dst + GC_SPARSE_HEAD;
    if (mode == GC_SPARSE_BITMAP) {
        memset(ix, 0, mbytes);
        for (size_t j = 0; j < k; j++) ix[idx[j] >> 3] |= (uint8_t)(1u << (idx[j] & 7));
        return GC_SPARSE_HEAD + mbytes;
    }
    size_t pos = 0;
    for (size_t s = 0; s < k; s += GC_SPARSE_BLOCK) {
        size_t cnt = k - s < GC_SPARSE_BLOCK ? k - s : GC_SPARSE_BLOCK;
        unsigned w = block_width(idx, s, cnt);
        ix[pos++] = (uint8_t)w;
        gc_bitw bw;
        gc_bitw_init(&bw, ix + pos, dbytes - pos);
        uint32_t prev = s ? idx[s - 1] : 0;
        for (size_t j = s; j < s + cnt; j++) {
            gc_bitw_put(&bw, idx[j] - prev, w);
            prev = idx[j];
        }
        pos += gc_bitw_finish(&bw);
    }
    return GC_SPARSE_HEAD + pos;
}

/* Bytes of the head and index section index_emit writes. */
static size_t index_size(size_t n, size_t dbytes)
{
    size_t mbytes = (n + 7) / 8;
    return GC_SPARSE_HEAD + (mbytes < dbytes ? mbytes : dbytes);
}

size_t gc_sparse_index_write(const uint32_t *idx, size_t k, size_t n, uint8_t *dst, size_t cap)
{
    size_t dbytes = delta_bytes(idx, k);
    if (index_size(n, dbytes) > cap) return GC_ERROR(DST_TOO_SMALL);
    return index_emit(idx, k, n, dbytes, dst);
}

size_t gc_sparse_body_write(const uint32_t *idx, size_t k, const float *v, float *r,
                            size_t n, uint8_t *dst, size_t cap)
{
    size_t dbytes = delta_bytes(idx, k);
    size_t total = index_size(n, dbytes) + 4 * k;
    if (total > cap) return GC_ERROR(DST_TOO_SMALL);
    uint8_t *vals = dst + index_emit(idx, k, n, dbytes, dst);
    if (r) {
        for (size_t j = 0; j < k; j++) {
            gc_put_f32(vals + 4 * j, v[idx[j]]);
            r[idx[j]] = 0.0f;
        }
    } else {
        for (size_t j = 0; j < k; j++) gc_put_f32(vals + 4 * j, v[idx[j]]);
    }
    return total;
}

/* What a walk over the sent indices does at the j-th index i: the two
 * gc_sparse_op, or (OP_LIST, gc_sparse_index_decode) list[j] = i. */
enum { OP_ADD = GC_SPARSE_ADD, OP_ZERO = GC_SPARSE_ZERO, OP_LIST };

static inline void apply_one(float *x, uint32_t *list, size_t i, const uint8_t *vals, size_t j,
                             unsigned op)
{
    if (op == OP_ADD) x[i] += gc_get_f32(vals + 4 * j);
    else if (op == OP_ZERO) x[i] = 0.0f;
    else list[j] = (uint32_t)i;
}

/* Bytes of the delta index section, checking each block's width. */
static size_t delta_section_bytes(const uint8_t *ix, size_t avail, size_t k)
{
    size_t pos = 0;
    for (size_t s = 0; s < k; s += GC_SPARSE_BLOCK) {
        size_t cnt = k - s < GC_SPARSE_BLOCK ? k - s : GC_SPARSE_BLOCK;
        if (pos >= avail) return GC_ERROR(TRUNCATED);
        unsigned w = ix[pos];
        if (w > 32) return GC_ERROR(CORRUPT);
        pos += 1 + (cnt * w + 7) / 8;
        if (pos > avail) return GC_ERROR(TRUNCATED);
    }
    return pos;
}

static size_t apply_delta(const uint8_t *ix, size_t k, const uint8_t *vals, float *x,
                          uint32_t *list, size_t n, unsigned op)
{
    size_t pos = 0, j = 0;
    uint64_t prev = 0;
    for (size_t s = 0; s < k; s += GC_SPARSE_BLOCK) {
        size_t cnt = k - s < GC_SPARSE_BLOCK ? k - s : GC_SPARSE_BLOCK;
        unsigned w = ix[pos++];
        size_t bits = cnt * w, nbytes = (bits + 7) / 8;
        /* Padding bits must be zero: one body per index set. */
        if ((bits & 7) && (ix[pos + nbytes - 1] >> (bits & 7)) != 0) return GC_ERROR(CORRUPT);
        gc_bitr br;
        gc_bitr_init(&br, ix + pos, nbytes);
        for (size_t t = 0; t < cnt; t++, j++) {
            uint64_t d = gc_bitr_get(&br, w);
            if (j > 0 && d == 0) return GC_ERROR(CORRUPT);  /* not increasing */
            uint64_t i = prev + d;
            if (i >= n) return GC_ERROR(CORRUPT);
            apply_one(x, list, (size_t)i, vals, j, op);
            prev = i;
        }
        pos += nbytes;
    }
    return 0;
}

static size_t apply_bitmap(const uint8_t *ix, size_t k, const uint8_t *vals, float *x,
                           uint32_t *list, size_t n, unsigned op)
{
    size_t nbytes = (n + 7) / 8, j = 0;
    for (size_t byte = 0; byte < nbytes; byte += 8) {
        size_t take = nbytes - byte < 8 ? nbytes - byte : 8;
        uint64_t word = 0;
        if (take == 8) word = gc_get_u64(ix + byte);
        else
            for (size_t t = 0; t < take; t++) word |= (uint64_t)ix[byte + t] << (8 * t);
        while (word) {
            size_t i = byte * 8 + (size_t)__builtin_ctzll(word);
            if (i >= n || j >= k) return GC_ERROR(CORRUPT);
            apply_one(x, list, i, vals, j++, op);
            word &= word - 1;
        }
    }
    return j == k ? 0 : GC_ERROR(CORRUPT);
}

size_t gc_sparse_body_apply(const uint8_t *src, size_t len, float *x, size_t n,
                            gc_sparse_op op)
{
    if (len < GC_SPARSE_HEAD) return GC_ERROR(TRUNCATED);
    size_t k = gc_get_u32(src);
    unsigned mode = src[4];
    if (k > n || mode > GC_SPARSE_BITMAP) return GC_ERROR(CORRUPT);
    size_t rest = len - GC_SPARSE_HEAD;
    if (k > rest / 4) return GC_ERROR(TRUNCATED);
    const uint8_t *ix = src + GC_SPARSE_HEAD;
    size_t ibytes = mode == GC_SPARSE_BITMAP ? (n + 7) / 8 : delta_section_bytes(ix, rest, k);
    if (gc_is_error(ibytes)) return ibytes;
    if (ibytes > rest - 4 * k) return GC_ERROR(TRUNCATED);
    if (ibytes < rest - 4 * k) return GC_ERROR(CORRUPT);
    const uint8_t *vals = ix + ibytes;
    return mode == GC_SPARSE_BITMAP ? apply_bitmap(ix, k, vals, x, NULL, n, op)
                                    : apply_delta(ix, k, vals, x, NULL, n, op);
}

size_t gc_sparse_index_open(const uint8_t *src, size_t len, size_t n, size_t *k)
{
    if (len < GC_SPARSE_HEAD) return GC_ERROR(TRUNCATED);
    size_t kk = gc_get_u32(src);
    unsigned mode = src[4];
    if (kk > n || mode > GC_SPARSE_BITMAP) return GC_ERROR(CORRUPT);
    size_t rest = len - GC_SPARSE_HEAD;
    size_t ibytes = mode == GC_SPARSE_BITMAP ? (n + 7) / 8
                                             : delta_section_bytes(src + GC_SPARSE_HEAD, rest, kk);
    if (gc_is_error(ibytes)) return ibytes;
    if (ibytes > rest) return GC_ERROR(TRUNCATED);
    *k = kk;
    return GC_SPARSE_HEAD + ibytes;
}

size_t gc_sparse_index_decode(const uint8_t *src, size_t n, uint32_t *idx)
{
    size_t k = gc_get_u32(src);
    const uint8_t *ix = src + GC_SPARSE_HEAD;
    return src[4] == GC_SPARSE_BITMAP ? apply_bitmap(ix, k, NULL, NULL, idx, n, OP_LIST)
                                      : apply_delta(ix, k, NULL, NULL, idx, n, OP_LIST);
}

/* The one-pass path's threshold (sparse_sample.h): the key of the
 * want-th largest of a strided sample of v = g + r (in slot GC_WS_B).
 * *expect is the count to expect, 0 where the path does not apply. */
static uint32_t sampled_threshold(const float *g, const float *r, size_t n, size_t k,
                                  gc_workspace *ws, size_t *expect)
{
    *expect = 0;
    gc_sample_plan pl;
    if (!gc_sample_plan_for(n, k, &pl)) return 0;
    uint32_t *key = gc_ws_get(ws, GC_WS_B, pl.ns * sizeof(uint32_t));
    if (!key) return 0;
    for (size_t j = 0, i = pl.stride / 2; j < pl.ns; j++, i += pl.stride)
        key[j] = gc_mag_key(r ? g[i] + r[i] : g[i]);
    *expect = pl.expect;
    return gc_sparse_kth_largest(key, pl.ns, pl.want);
}

/* v = g (+ r, stored into r), collecting the elements with key >= t as
 * they are formed, while at most cap have come (cap + 1: more did). */
static size_t accumulate_collect(const float *g, float *r, size_t n, uint32_t t,
                                 uint32_t *cand, uint32_t *key, size_t cap)
{
    size_t m = 0;
    for (size_t base = 0; base < n; base += ACC_CHUNK) {
        size_t len = n - base < ACC_CHUNK ? n - base : ACC_CHUNK;
        const float *x = form_block(g, r, base, len);
        if (m <= cap) m = collect_chunk(x, len, base, t, cand, key, m, cap);
    }
    return m;
}

size_t gc_sparse_accumulate_topk(const float *g, float *r, size_t n, size_t k,
                                 gc_workspace *ws, const float **v, uint32_t **idx)
{
    uint32_t hist[GC_SPARSE_HIST_BINS];
    size_t expect;
    const uint32_t t = sampled_threshold(g, r, n, k, ws, &expect);
    if (expect) {
        /* Room for twice the expected count: past it the sample missed. */
        const size_t cap = 2 * expect + ACC_CHUNK;
        uint32_t *cand = gc_ws_get(ws, GC_WS_A, cap * sizeof(uint32_t));
        uint32_t *key = gc_ws_get(ws, GC_WS_C, cap * sizeof(uint32_t));
        if (!cand || !key) return GC_ERROR(ALLOC);
        const size_t m = accumulate_collect(g, r, n, t, cand, key, cap);
        *v = r ? r : g;
        if (m >= k && m <= cap) {
            select_among(key, cand, m, k);
            *idx = cand;
            return k;
        }
        gc_sparse_accumulate(*v, NULL, n, hist);
        return gc_sparse_topk(*v, n, k, hist, ws, idx);
    }
    *v = gc_sparse_accumulate(g, r, n, hist);
    return gc_sparse_topk(*v, n, k, hist, ws, idx);
}
