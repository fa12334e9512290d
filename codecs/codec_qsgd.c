/* codec_qsgd.c — QSGD (Alistarh et al., 2017): each element of a bucket is
 * rounded stochastically to one of s + 1 evenly spaced levels of the
 * bucket's l2 norm, so the decoded vector is an unbiased estimate of v.
 *
 * Levels: b = p->bits in [2, 8] bits per element, one sign bit and b - 1
 * bits of level, so s = 2^(b-1) - 1 levels above zero:
 *     b = 2 -> s = 1 (ternary), 3 -> 3, 4 -> 7, 5 -> 15, 7 -> 63, 8 -> 127.
 * Per bucket of L elements with norm N = ||v||_2 (the square root of a sum
 * in the fixed order of quant_common.h), x_i = min(|v_i| * (s / N), s) and
 *     level_i = min(floor(x_i + u_i), s),
 *     u_i = gc_rand_unit(gc_key32(seed), i), i the global element index,
 * so E[level_i] = x_i (up to the float rounding of x_i + u_i) and
 * D_i = sign(v_i) * level_i * (N / s) has E[D_i] = v_i.
 *
 * Body (little-endian):
 *     u32 bucket, u8 b, u8 coding (0 fixed width, 1 Elias gamma)
 *     f32 norm[nb]                       nb = ceil(n / bucket)
 *     fixed: per bucket, b bit planes (quant_common.h) of the codes
 *            level | signbit(v) << (b-1)  b * ceil(L / 8) bytes
 *     Elias (p->flags & GC_PF_QSGD_ELIAS): u32 S, then the sync points of
 *            sync_points.h (segments of S = ceil(4096 / bucket) buckets;
 *            u64 stream bit of each segment after the first), then one bit
 *            stream (bitstream.h) over all elements: Elias gamma of
 *            level + 1 (k zeros, a one, then the k low bits of level + 1 as
 *            one k-bit field), then the sign bit when level > 0; zero
 *            padded to a byte. The decoder answers TRUNCATED when the
 *            stream ends inside a code (or before n codes), CORRUPT for
 *            more than b - 1 zeros inside the stream, a level above s, a
 *            segment not starting at its sync point, S = 0, bytes after
 *            the last code or nonzero padding.
 * Bits per element: fixed b + 32/bucket (a partial last bucket pads to 8
 * elements); Elias 32/bucket + 64/4096 + mean of 2 floor(log2(level + 1))
 * + 1 + [level > 0], at most 2b, about 1 + 32/bucket when most levels are
 * 0. The sync points let a GPU decode the segments at once
 * (gpu/codec_qsgd.cu). */
#include "bitstream.h"
#include "quant_common.h"
#include "sync_points.h"

#define QSGD_FIELDS (GC_Q_BUCKET_FIELD + 2)
enum { QSGD_FIXED = 0, QSGD_ELIAS = 1 };

static size_t qsgd_check(const gc_params *p, char *msg, size_t msglen)
{
    size_t r = gc_check_bits(p, 2, 8, msg, msglen);
    return gc_is_error(r) ? r : gc_check_bucket(p, msg, msglen);
}

static size_t fixed_codes_bytes(size_t n, size_t bucket, unsigned bits)
{
    size_t nb = gc_bucket_count(n, bucket);
    if (nb == 0) return 0;
    return (nb - 1) * gc_planes_bytes(bucket, bits)
        + gc_planes_bytes(gc_q_bucket_len(n, bucket, nb - 1), bits);
}

/* The Elias body's segment size and sync points. */
static size_t elias_sync_bytes(size_t n, size_t bucket)
{
    return 4 + gc_sync_bytes(gc_bucket_count(n, bucket), gc_sync_segment_buckets(bucket));
}

static size_t qsgd_bound(size_t n, const gc_params *p)
{
    size_t head = QSGD_FIELDS + 4 * gc_bucket_count(n, p->bucket);
    if (p->flags & GC_PF_QSGD_ELIAS)
        return head + elias_sync_bytes(n, p->bucket) + (2 * p->bits * n + 7) / 8;
    return head + fixed_codes_bytes(n, p->bucket, p->bits);
}

/* Elias gamma of level + 1, then the sign when level > 0: at most 2b bits,
 * written as one field. */
static inline void put_elias(gc_bitw *w, uint8_t code, unsigned bits)
{
    uint32_t level = code & ((1u << (bits - 1)) - 1u);
    uint32_t x = level + 1;
    unsigned k = 31u - (unsigned)__builtin_clz(x);
    uint32_t field = (1u << k) | ((x ^ (1u << k)) << (k + 1));
    unsigned width = 2 * k + 1;
    if (level) {
        field |= (uint32_t)(code >> (bits - 1)) << width;
        width++;
    }
    gc_bitw_put(w, field, width);
}

GC_VEC_CLONES
static size_t qsgd_encode_buckets(const float *g, float *r, size_t n, size_t bucket,
                                  unsigned bits, int coding, uint32_t key, uint8_t *dst,
                                  size_t cap, uint8_t *codes)
{
    const size_t nb = gc_bucket_count(n, bucket);
    const float s = (float)((1u << (bits - 1)) - 1u);
    uint8_t *norms = dst + QSGD_FIELDS;
    uint8_t *out = norms + 4 * nb;
    const size_t seg = gc_sync_segment_buckets(bucket);
    uint8_t *sync = out + 4;
    if (coding == QSGD_ELIAS) {
        gc_put_u32(out, (uint32_t)seg);
        out = sync + gc_sync_bytes(nb, seg);
    }
    gc_bitw w;
    gc_bitw_init(&w, out, cap - (size_t)(out - dst));

    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        if (coding == QSGD_ELIAS && gc_sync_at(b, seg))
            gc_put_u64(sync + gc_sync_offset(b, seg), gc_bitw_bits(&w));
        float *rb = r ? r + i0 : NULL;
        float norm = (float)sqrt(gc_q_sum_pow(g + i0, rb, len, 2));
        float inv = norm > 0.0f ? s / norm : 0.0f;
        gc_put_f32(norms + 4 * b, norm);
        gc_q_prefetch_next(g, r, i0 + len, n);
        gc_q_stochastic(g + i0, rb, len, key, (uint32_t)i0, s, inv, norm / s, bits, codes);
        if (coding == QSGD_FIXED) {
            size_t m = gc_planes_stride(len);
            memset(codes + len, 0, 8 * m - len);
            gc_planes_pack(codes, len, bits, out);
            out += bits * m;
        } else {
            for (size_t i = 0; i < len; i++) put_elias(&w, codes[i], bits);
        }
    }
    if (coding == QSGD_FIXED) return (size_t)(out - dst);
    size_t stream = gc_bitw_finish(&w);
    if (stream == (size_t)-1) return GC_ERROR(DST_TOO_SMALL);
    return (size_t)(out - dst) + stream;
}

static size_t qsgd_encode(const float *g, float *r, size_t n, const gc_params *p,
                          uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    /* Refuse before touching r: the residual stays valid on error. */
    if (cap < qsgd_bound(n, p)) return GC_ERROR(DST_TOO_SMALL);
    const size_t bucket = p->bucket;
    const int coding = (p->flags & GC_PF_QSGD_ELIAS) ? QSGD_ELIAS : QSGD_FIXED;
    size_t biggest = bucket < n ? bucket : n;
    uint8_t *codes = gc_ws_get(ws, GC_WS_A, 8 * gc_planes_stride(biggest));
    if (!codes) return GC_ERROR(ALLOC);
    gc_put_u32(dst, (uint32_t)bucket);
    dst[4] = (uint8_t)p->bits;
    dst[5] = (uint8_t)coding;
    return qsgd_encode_buckets(g, r, n, bucket, p->bits, coding, gc_key32(seed), dst, cap, codes);
}

GC_VEC_CLONES
static size_t decode_fixed(const uint8_t *src, size_t n, size_t bucket, unsigned bits,
                           float *acc, uint8_t *codes)
{
    const size_t nb = gc_bucket_count(n, bucket);
    const float s = (float)((1u << (bits - 1)) - 1u);
    const uint8_t *in = src + QSGD_FIELDS + 4 * nb;
    for (size_t b = 0; b < nb; b++) {
        const size_t i0 = b * bucket, len = gc_q_bucket_len(n, bucket, b);
        float step = gc_get_f32(src + QSGD_FIELDS + 4 * b) / s;
        if (!gc_planes_unpack(in, len, bits, codes)) return GC_ERROR(CORRUPT);
        in += gc_planes_bytes(len, bits);
        gc_q_signmag_add(codes, len, bits, step, acc + i0);
    }
    return 0;
}

/* One Elias code at stream bit *p of st[0..slen) (L = 8 slen bits): the
 * signed level into *q and *p past the code; or TRUNCATED when the code
 * runs past the stream (no one within b bits before the end, or its level
 * or sign bits past it), CORRUPT when b zeros come inside the stream or
 * the level is above s. gpu/codec_qsgd.cu reads codes the same way.
 * decode_elias reads well-formed codes inside the stream faster itself. */
static size_t elias_code(const uint8_t *st, size_t slen, uint64_t *p, unsigned bits, uint32_t s,
                         int32_t *q)
{
    const uint64_t L = (uint64_t)slen * 8, at = *p;
    const uint64_t v = gc_bits_peek64(st, slen, at);
    const uint64_t head = v & ((1u << bits) - 1u);  /* the one within b - 1 zeros */
    if (head == 0) return at + bits > L ? GC_ERROR(TRUNCATED) : GC_ERROR(CORRUPT);
    const unsigned k = (unsigned)__builtin_ctzll(head);
    unsigned width = 2 * k + 1;
    if (at + width > L) return GC_ERROR(TRUNCATED);
    const uint32_t level = ((1u << k) | (uint32_t)((v >> (k + 1)) & ((1u << k) - 1u))) - 1u;
    if (level > s) return GC_ERROR(CORRUPT);
    int32_t x = (int32_t)level;
    if (level) {
        if (at + width + 1 > L) return GC_ERROR(TRUNCATED);
        if ((v >> width) & 1u) x = -x;
        width++;
    }
    *p = at + width;
    *q = x;
    return 0;
}

static size_t decode_elias(const uint8_t *src, size_t len, size_t n, size_t bucket,
                           unsigned bits, float *acc)
{
    const size_t nb = gc_bucket_count(n, bucket);
    const uint32_t s = (1u << (bits - 1)) - 1u;
    const size_t off = QSGD_FIELDS + 4 * nb;
    size_t seg = 0;
    const size_t sync_len = gc_sync_open(src + off, len - off, nb, &seg);
    if (gc_is_error(sync_len)) return sync_len;
    const uint8_t *sync = src + off + 4, *st = src + off + sync_len;
    const size_t slen = len - (size_t)(st - src);
    /* Codes are read from a window v, loaded 8 bytes at a time at stream
     * bit base while whole loads fit, of which `have` bits are left (so
     * the stream bit is base + loaded - have); near the end, and wherever
     * a code may not be well formed, by elias_code. */
    const unsigned longest = 2 * bits;
    const uint64_t head_mask = (1u << bits) - 1u;
    uint64_t base = 0, v = 0;
    unsigned have = 0, loaded = 0;
    for (size_t b = 0; b < nb; b++) {
        if (gc_sync_at(b, seg) && base + loaded - have != gc_get_u64(sync + gc_sync_offset(b, seg)))
            return GC_ERROR(CORRUPT);
        const size_t i0 = b * bucket, blen = gc_q_bucket_len(n, bucket, b);
        float step = gc_get_f32(src + QSGD_FIELDS + 4 * b) / (float)s;
        for (size_t i = 0; i < blen; i++) {
            if (have < longest) {
                base += loaded - have;
                loaded = have = 0;
                if ((base >> 3) + 8 <= slen) {
                    v = gc_bits_peek64(st, slen, base);
                    loaded = have = 64 - (unsigned)(base & 7);
                }
            }
            const uint64_t head = v & head_mask;
            int32_t q = 0;
            if (have >= longest && head) {
                /* Branches, not selects: level is mostly 0 at few bits, and a
                 * predicted branch keeps the next code off this one's
                 * dependency chain. */
                const unsigned k = (unsigned)__builtin_ctzll(head);
                unsigned width = 2 * k + 1;
                if (k) {  /* level 0 has k = 0 and no sign */
                    const uint32_t level = ((1u << k) | (uint32_t)((v >> (k + 1)) & ((1u << k) - 1u))) - 1u;
                    if (level > s) return GC_ERROR(CORRUPT);
                    q = (v >> width) & 1u ? -(int32_t)level : (int32_t)level;
                    width++;
                }
                v >>= width;
                have -= width;
            } else {
                base += loaded - have;
                loaded = have = 0;
                size_t e = elias_code(st, slen, &base, bits, s, &q);
                if (gc_is_error(e)) return e;
            }
            acc[i0 + i] += (float)q * step;
        }
    }
    const uint64_t p = base + loaded - have;
    /* The stream must end here: no further bytes, and zero padding. */
    if ((p + 7) / 8 != slen) return GC_ERROR(CORRUPT);
    if ((p & 7) && (st[slen - 1] >> (p & 7)) != 0) return GC_ERROR(CORRUPT);
    return 0;
}

static size_t qsgd_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                              gc_workspace *ws)
{
    size_t bucket = 0;
    size_t e = gc_q_get_bucket(src, len, &bucket);
    if (gc_is_error(e)) return e;
    if (len < QSGD_FIELDS) return GC_ERROR(TRUNCATED);
    const unsigned bits = src[4];
    const int coding = src[5];
    if (bits < 2 || bits > 8 || (coding != QSGD_FIXED && coding != QSGD_ELIAS))
        return GC_ERROR(CORRUPT);
    const size_t head = QSGD_FIELDS + 4 * gc_bucket_count(n, bucket);
    if (coding == QSGD_ELIAS) {
        if (len < head) return GC_ERROR(TRUNCATED);
        return decode_elias(src, len, n, bucket, bits, acc);
    }
    e = gc_q_expect_len(len, head + fixed_codes_bytes(n, bucket, bits));
    if (gc_is_error(e)) return e;
    size_t biggest = bucket < n ? bucket : n;
    uint8_t *codes = gc_ws_get(ws, GC_WS_A, 8 * gc_planes_stride(biggest));
    if (!codes) return GC_ERROR(ALLOC);
    return decode_fixed(src, n, bucket, bits, acc, codes);
}

const gc_codec gc_codec_qsgd = {
    .name = "qsgd",
    .id = GC_ID_QSGD,
    .flags = GC_STOCHASTIC,
    .check = qsgd_check,
    .bound = qsgd_bound,
    .encode = qsgd_encode,
    .decode_add = qsgd_decode_add,
    .zero_sent = NULL,
};
