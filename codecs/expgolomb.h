/* expgolomb.h — order-k Exp-Golomb codes in the LSB-first bit order of
 * bitstream.h, with a fast writer and a bounds-checked reader.
 *
 * The code of an unsigned z with order k (0..30), for z + 2^k < 2^32:
 *   x = z + 2^k, L = bit length of x (k+1..32), u = L - 1 - k
 *   stream order: u zero bits, one 1 bit, then the low L-1 bits of x,
 *   least significant first.
 * Length: 2L - 1 - k bits, at most 63. The lengths are those of the
 * standard (H.264) code; only the info bits come least significant first,
 * which is what an LSB-first reader takes with one mask (the MSB-first
 * order would need a bit reversal per code). Order 0, stream order:
 *   0 -> 1, 1 -> 010, 2 -> 011, 3 -> 00100, 4 -> 00110, 5 -> 00101.
 * As one integer written LSB first it is ((x - 2^(L-1)) << 1 | 1) << u.
 *
 * The bytes are exactly what gc_bitw would produce for the same bits: bit i
 * of the stream is bit (i % 8) of byte i / 8. The writer keeps a 64-bit
 * accumulator and stores 8 bytes at a time; the reader loads 8 bytes at a
 * time and treats bytes past the end as zeros, so it never reads out of
 * bounds and a caller checks the consumed length once at the end. */
#ifndef GC_EXPGOLOMB_H
#define GC_EXPGOLOMB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Largest order a body may carry (5-bit field, 31 is reserved). */
#define GC_EG_MAX_ORDER 30u

/* Bit length of x < 2^63: 0 for 0. */
static inline unsigned gc_eg_bitlen(uint64_t x)
{
    return 63u ^ (unsigned)__builtin_clzll((x << 1) | 1u);
}

/* Length in bits of the order-k code of z (z + 2^k < 2^32). */
static inline unsigned gc_eg_code_len(uint32_t z, unsigned k)
{
    return 2u * gc_eg_bitlen((uint64_t)z + (1ull << k)) - 1u - k;
}

static inline uint64_t gc_eg_load_le64(const uint8_t *s)
{
    uint64_t v;
    memcpy(&v, s, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void gc_eg_store_le64(uint8_t *d, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(d, &v, 8);
}

/* ---- writer ------------------------------------------------------------- */

typedef struct gc_egw {
    uint8_t *dst;
    size_t cap;      /* bytes available at dst */
    size_t pos;      /* whole bytes written */
    uint64_t acc;    /* pending bits (< 8 between puts), LSB first */
    unsigned nacc;
} gc_egw;

static inline void gc_egw_init(gc_egw *w, uint8_t *dst, size_t cap)
{
    w->dst = dst; w->cap = cap; w->pos = 0; w->acc = 0; w->nacc = 0;
}

/* Store the accumulator and advance by its whole bytes. Near the end of
 * dst the bytes are stored one by one, never past cap; gc_egw_finish
 * reports whether everything fitted. */
static inline void gc_egw_flush(gc_egw *w)
{
    if (w->pos + 8 <= w->cap) {
        gc_eg_store_le64(w->dst + w->pos, w->acc);
    } else {
        for (size_t i = 0; i < 8 && w->pos + i < w->cap; i++)
            w->dst[w->pos + i] = (uint8_t)(w->acc >> (8 * i));
    }
    unsigned bytes = w->nacc >> 3;
    w->pos += bytes;
    w->acc >>= 8 * bytes;
    w->nacc &= 7;
}

/* Append the nbits (<= 56) of value; value has no bits above nbits. */
static inline void gc_egw_put(gc_egw *w, uint64_t value, unsigned nbits)
{
    w->acc |= value << w->nacc;
    w->nacc += nbits;
    gc_egw_flush(w);
}

/* One code as a word whose low nbits (<= 63) are the code in stream order. */
static inline uint64_t gc_eg_word(uint32_t z, unsigned k, unsigned *nbits)
{
    uint64_t x = (uint64_t)z + (1ull << k);
    unsigned h = 63u ^ (unsigned)__builtin_clzll(x);   /* L - 1 */
    unsigned u = h - k;                                 /* leading zeros */
    *nbits = u + h + 1;
    return (((x ^ (1ull << h)) << 1) | 1u) << u;
}

/* Append the order-k code of z (z + 2^k < 2^32), stores checked. */
static inline void gc_egw_code(gc_egw *w, uint32_t z, unsigned k)
{
    unsigned nbits;
    uint64_t word = gc_eg_word(z, k, &nbits);
    if (nbits <= 56) {
        gc_egw_put(w, word, nbits);
    } else {
        gc_egw_put(w, word & 0xFFFFFFFFu, 32);
        gc_egw_put(w, word >> 32, nbits - 32);
    }
}

/* Room gc_egw_codes needs at dst + pos for m codes: the longest codes
 * plus the 8-byte store that runs ahead of the last whole byte. */
static inline size_t gc_egw_codes_room(size_t m) { return (63 * m + 7) / 8 + 9; }

/* gc_egw_codes' state, kept in registers: stores are unchecked. */
typedef struct gc_egw_run {
    uint8_t *d;
    uint64_t acc;
    unsigned nacc;   /* < 8 between appends */
} gc_egw_run;

static inline void gc_egw_run_flush(gc_egw_run *s)
{
    gc_eg_store_le64(s->d, s->acc);
    s->d += s->nacc >> 3;
    s->acc >>= 8 * (s->nacc >> 3);
    s->nacc &= 7;
}

/* Append a word of nbits <= 56. */
static inline void gc_egw_run_put(gc_egw_run *s, uint64_t word, unsigned nbits)
{
    s->acc |= word << s->nacc;
    s->nacc += nbits;
    gc_egw_run_flush(s);
}

/* Append any code: the zeros (at most 31), then the 1 and the info bits
 * (at most 32), each followed by a store. */
static inline void gc_egw_run_code(gc_egw_run *s, uint32_t z, unsigned k)
{
    uint64_t x = (uint64_t)z + (1ull << k);
    unsigned h = 63u ^ (unsigned)__builtin_clzll(x);
    s->nacc += h - k;
    gc_egw_run_flush(s);
    gc_egw_run_put(s, ((x ^ (1ull << h)) << 1) | 1u, h + 1);
}

/* Append the order-k codes of z[0..m) (each z + 2^k < 2^32) with
 * unchecked 8-byte stores: the caller guarantees gc_egw_codes_room(m)
 * bytes at dst + pos. Up to four short codes share one store. */
static inline void gc_egw_codes(gc_egw *w, const uint32_t *restrict z, size_t m, unsigned k)
{
    gc_egw_run s = {w->dst + w->pos, w->acc, w->nacc};
    size_t whole = m - m % 4;
    for (size_t i = 0; i < whole; i += 4) {
        unsigned n0, n1, n2, n3;
        uint64_t w0 = gc_eg_word(z[i], k, &n0);
        uint64_t w1 = gc_eg_word(z[i + 1], k, &n1);
        uint64_t w2 = gc_eg_word(z[i + 2], k, &n2);
        uint64_t w3 = gc_eg_word(z[i + 3], k, &n3);
        if (__builtin_expect(n0 + n1 + n2 + n3 <= 56, 1)) {
            gc_egw_run_put(&s, w0 | (w1 << n0) | ((w2 | (w3 << n2)) << (n0 + n1)),
                           n0 + n1 + n2 + n3);
        } else if (n0 + n1 <= 56 && n2 + n3 <= 56) {
            gc_egw_run_put(&s, w0 | (w1 << n0), n0 + n1);
            gc_egw_run_put(&s, w2 | (w3 << n2), n2 + n3);
        } else {
            for (unsigned t = 0; t < 4; t++) gc_egw_run_code(&s, z[i + t], k);
        }
    }
    for (size_t i = whole; i < m; i++) gc_egw_run_code(&s, z[i], k);
    w->pos = (size_t)(s.d - w->dst);
    w->acc = s.acc;
    w->nacc = s.nacc;
}

/* Bits written so far. */
static inline uint64_t gc_egw_bits(const gc_egw *w) { return (uint64_t)w->pos * 8 + w->nacc; }

/* Bytes of the stream (last byte zero padded), or (size_t)-1 when they
 * do not fit in cap. The padding byte was stored by the last flush. */
static inline size_t gc_egw_finish(const gc_egw *w)
{
    size_t bytes = w->pos + (w->nacc ? 1u : 0u);
    return bytes <= w->cap ? bytes : (size_t)-1;
}

/* ---- reader ------------------------------------------------------------- */

/* A refill ORs the next 8 stream bytes in above the bits held, then counts
 * whole bytes only (F. Giesen's "variant 4"): the load address is known one
 * refill ahead, so the load does not wait for the codes being decoded. The
 * bits above `count` are stream bits or zeros, never anything else. */
typedef struct gc_egr {
    const uint8_t *src;
    size_t len;       /* bytes available */
    size_t next;      /* next byte to load */
    uint64_t buf;     /* the next `count` stream bits, LSB first */
    unsigned count;   /* 56..63 after a refill */
} gc_egr;

/* 8 bytes from byte offset at, zeros past the end. */
static inline uint64_t gc_egr_load(const gc_egr *r, size_t at)
{
    if (at + 8 <= r->len) return gc_eg_load_le64(r->src + at);
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        if (at + i < r->len) v |= (uint64_t)r->src[at + i] << (8 * i);
    return v;
}

static inline void gc_egr_refill(gc_egr *r)
{
    r->buf |= gc_egr_load(r, r->next) << r->count;
    r->next += (63 - r->count) >> 3;
    r->count |= 56;
}

static inline void gc_egr_init(gc_egr *r, const uint8_t *src, size_t len)
{
    r->src = src; r->len = len; r->next = 0; r->buf = 0; r->count = 0;
    gc_egr_refill(r);
}

/* Bits consumed so far; more than 8 len when the reader ran past the end
 * (it reads zeros there). */
static inline uint64_t gc_egr_bits_used(const gc_egr *r)
{
    return (uint64_t)r->next * 8 - r->count;
}

/* Read nbits (<= 32). Past the end: zeros. */
static inline uint32_t gc_egr_get(gc_egr *r, unsigned nbits)
{
    if (r->count < nbits) gc_egr_refill(r);
    uint32_t v = (uint32_t)(r->buf & ((1ull << nbits) - 1u));
    r->buf >>= nbits;
    r->count -= nbits;
    return v;
}

/* What decoding order k needs, made once per k: the longest zero run and,
 * per zero count u, the info bits' mask and the z whose info bits are 0. */
typedef struct gc_eg_order {
    unsigned k;
    uint64_t limit;        /* 1 bits where the 1 after the zeros may be */
    uint32_t mask[32], base[32];
} gc_eg_order;

static inline void gc_eg_order_init(gc_eg_order *o, unsigned k)
{
    o->k = k;
    o->limit = (2ull << (31u - k)) - 1u;        /* at most 31 - k zeros */
    for (unsigned u = 0; u < 32; u++) {
        unsigned info = u + k < 32 ? u + k : 0;  /* entries past 31 - k unused */
        o->mask[u] = (uint32_t)((1ull << info) - 1u);
        o->base[u] = (uint32_t)((1ull << info) - (1ull << k));
    }
}

/* Read m codes of order o->k into z[0..m). Returns 0, or -1 when a run of
 * zeros is longer than a code whose x fits 32 bits allows (31 - k): a
 * corrupt stream, or one that ends too soon (gc_egr_bits_used tells which).
 * The state stays in registers; short codes take one shift. */
static inline int gc_egr_codes(gc_egr *r, uint32_t *restrict z, size_t m,
                               const gc_eg_order *restrict o)
{
    gc_egr s = *r;
    const unsigned k = o->k;
    int status = 0;
    for (size_t i = 0; i < m; i++) {
        if (s.count < 32) gc_egr_refill(&s);
        uint64_t head = s.buf & o->limit;
        if (__builtin_expect(head == 0, 0)) { status = -1; break; }
        unsigned u = (unsigned)__builtin_ctzll(head);   /* u <= 31 - k */
        unsigned total = 2 * u + 1 + k;
        uint32_t low;
        if (__builtin_expect(total <= s.count, 1)) {
            low = (uint32_t)(s.buf >> (u + 1)) & o->mask[u];
            s.buf >>= total;
            s.count -= total;
        } else {
            s.buf >>= u + 1;
            s.count -= u + 1;
            gc_egr_refill(&s);
            low = (uint32_t)s.buf & o->mask[u];
            s.buf >>= u + k;
            s.count -= u + k;
        }
        z[i] = o->base[u] + low;
    }
    *r = s;
    return status;
}

#endif /* GC_EXPGOLOMB_H */
