/* bitstream.h — LSB-first bit writer and bounds-checked bit reader.
 * Bits fill each byte from the least significant end; the stream is read
 * back in the same order. The writer never writes past cap (it sets
 * `overflow`); the reader never reads past len (it sets `overrun` and
 * returns zeros), so a decoder checks one flag at the end of a block
 * rather than every read. */
#ifndef GC_BITSTREAM_H
#define GC_BITSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct gc_bitw {
    uint8_t *dst;
    size_t cap;      /* bytes available at dst */
    size_t pos;      /* bytes written so far   */
    uint64_t acc;    /* pending bits, LSB first */
    unsigned nacc;   /* number of pending bits (< 64) */
    int overflow;
} gc_bitw;

static inline void gc_bitw_init(gc_bitw *w, uint8_t *dst, size_t cap)
{
    w->dst = dst; w->cap = cap; w->pos = 0; w->acc = 0; w->nacc = 0; w->overflow = 0;
}

/* Append the low nbits (0..32) of value. */
static inline void gc_bitw_put(gc_bitw *w, uint32_t value, unsigned nbits)
{
    if (nbits == 0) return;
    w->acc |= (uint64_t)(value & (uint32_t)((nbits == 32) ? 0xFFFFFFFFu : ((1u << nbits) - 1u))) << w->nacc;
    w->nacc += nbits;
    if (w->nacc >= 32) {
        if (w->pos + 4 <= w->cap) {
            uint32_t lo = (uint32_t)w->acc;
            w->dst[w->pos] = (uint8_t)lo; w->dst[w->pos + 1] = (uint8_t)(lo >> 8);
            w->dst[w->pos + 2] = (uint8_t)(lo >> 16); w->dst[w->pos + 3] = (uint8_t)(lo >> 24);
        } else {
            w->overflow = 1;
        }
        w->pos += 4;
        w->acc >>= 32;
        w->nacc -= 32;
    }
}

/* Append up to 64 bits (split in two puts). */
static inline void gc_bitw_put64(gc_bitw *w, uint64_t value, unsigned nbits)
{
    if (nbits > 32) {
        gc_bitw_put(w, (uint32_t)value, 32);
        gc_bitw_put(w, (uint32_t)(value >> 32), nbits - 32);
    } else {
        gc_bitw_put(w, (uint32_t)value, nbits);
    }
}

/* Flush pending bits (zero padded to a byte). Returns bytes written, or
 * (size_t)-1 on overflow. */
static inline size_t gc_bitw_finish(gc_bitw *w)
{
    while (w->nacc > 0) {
        if (w->pos < w->cap) w->dst[w->pos] = (uint8_t)w->acc; else w->overflow = 1;
        w->pos++;
        w->acc >>= 8;
        w->nacc = w->nacc > 8 ? w->nacc - 8 : 0;
    }
    return w->overflow ? (size_t)-1 : w->pos;
}

/* Bits written so far (before finish). */
static inline uint64_t gc_bitw_bits(const gc_bitw *w) { return (uint64_t)w->pos * 8 + w->nacc; }

typedef struct gc_bitr {
    const uint8_t *src;
    size_t len;      /* bytes available */
    size_t pos;      /* next byte to load */
    uint64_t acc;
    unsigned nacc;
    int overrun;
} gc_bitr;

static inline void gc_bitr_init(gc_bitr *r, const uint8_t *src, size_t len)
{
    r->src = src; r->len = len; r->pos = 0; r->acc = 0; r->nacc = 0; r->overrun = 0;
}

static inline void gc_bitr_refill(gc_bitr *r)
{
    while (r->nacc <= 56 && r->pos < r->len) {
        r->acc |= (uint64_t)r->src[r->pos++] << r->nacc;
        r->nacc += 8;
    }
}

/* Read nbits (0..32). Past the end: zeros and overrun set. */
static inline uint32_t gc_bitr_get(gc_bitr *r, unsigned nbits)
{
    if (nbits == 0) return 0;
    if (r->nacc < nbits) gc_bitr_refill(r);
    if (r->nacc < nbits) { r->overrun = 1; r->nacc = 0; r->acc = 0; return 0; }
    uint32_t v = (uint32_t)(r->acc & ((nbits == 32) ? 0xFFFFFFFFull : ((1ull << nbits) - 1)));
    r->acc >>= nbits;
    r->nacc -= nbits;
    return v;
}

/* Count zero bits before the next one bit and consume them and the one bit.
 * Returns the count, or limit+1 (and overrun) when no one bit comes within
 * limit zeros or the stream ends. Used by Exp-Golomb and Elias-gamma. */
static inline unsigned gc_bitr_unary(gc_bitr *r, unsigned limit)
{
    unsigned zeros = 0;
    for (;;) {
        if (r->nacc == 0) gc_bitr_refill(r);
        if (r->nacc == 0) { r->overrun = 1; return limit + 1; }
        uint64_t a = r->acc;
        if (a == 0) {
            zeros += r->nacc;
            r->acc = 0; r->nacc = 0;
            if (zeros > limit) { r->overrun = 1; return limit + 1; }
            continue;
        }
        unsigned tz = (unsigned)__builtin_ctzll(a);
        zeros += tz;
        if (zeros > limit) { r->overrun = 1; return limit + 1; }
        r->acc >>= tz + 1;
        r->nacc -= tz + 1;
        return zeros;
    }
}

/* 64 bits of src[0..len) from bit p, LSB first, zeros past len: at least
 * the first 57 are the stream's (a stateless read for decoders that start
 * anywhere, as at a sync point). */
static inline uint64_t gc_bits_peek64(const uint8_t *src, size_t len, uint64_t p)
{
    const uint64_t at = p >> 3;
    uint64_t v = 0;
    if (at + 8 <= len) {
        memcpy(&v, src + at, 8);  /* one load */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
#endif
    } else {
        for (unsigned i = 0; at + i < len; i++) v |= (uint64_t)src[at + i] << (8 * i);
    }
    return v >> (p & 7);
}

/* Bytes consumed so far, rounded up to whole bytes. */
static inline size_t gc_bitr_bytes_used(const gc_bitr *r)
{
    return (r->pos * 8 - r->nacc + 7) / 8;
}

#endif /* GC_BITSTREAM_H */
