/* payload.c — the payload frame every codec shares: header, optional CRC32C,
 * optional lossless zstd stage; and the public encode/decode entry points
 * that dispatch to a codec's body functions.
 *
 * Header (32 bytes, little-endian):
 *   0  'G' 'C'     magic
 *   2  u8          format version (GC_FORMAT_VERSION)
 *   3  u8          codec id
 *   4  u8          flags: GC_HF_CRC, GC_HF_ZSTD, GC_HF_NONFINITE
 *   5  u8[3]       reserved, zero
 *   8  u64         element count n
 *   16 u64         total payload length, header included
 *   24 u32         CRC32C of the body as sent (0 when GC_HF_CRC is clear)
 *   28 u32         reserved, zero
 */
#include "codec_impl.h"

#include <math.h>
#include <stdlib.h>
#ifdef GC_HAVE_ZSTD
#include <zstd.h>
#endif

size_t gc_params_check(const gc_codec *c, const gc_params *p, char *msg, size_t msglen)
{
    if (msg && msglen) msg[0] = '\0';
    if (!c) return gc_param_error(msg, msglen, "no codec given");
    if (p->zstd_level < 0 || p->zstd_level > 19)
        return gc_param_error(msg, msglen,
                              "zstd_level=%d is out of range; expected an integer in [0, 19] (0 = off)",
                              p->zstd_level);
#ifndef GC_HAVE_ZSTD
    if (p->zstd_level > 0)
        return gc_param_error(msg, msglen,
                              "zstd_level=%d asks for the zstd stage, but this build has no zstd",
                              p->zstd_level);
#endif
    return c->check ? c->check(p, msg, msglen) : 0;
}

static size_t body_bound(const gc_codec *c, size_t n, const gc_params *p)
{
    return c->bound(n, p);
}

size_t gc_bound(const gc_codec *c, size_t n, const gc_params *p)
{
    if (!c) return GC_ERROR(UNKNOWN_CODEC);
    if (gc_is_error(gc_params_check(c, p, NULL, 0))) return GC_ERROR(PARAM);
    size_t b = body_bound(c, n, p);
#ifdef GC_HAVE_ZSTD
    if (p->zstd_level > 0) {
        size_t z = ZSTD_compressBound(b);
        if (z > b) b = z;
    }
#endif
    return GC_HEADER_SIZE + b;
}

static void write_header(uint8_t *d, const gc_codec *c, unsigned flags, uint64_t n,
                         uint64_t length, uint32_t crc)
{
    memset(d, 0, GC_HEADER_SIZE);
    d[0] = 'G';
    d[1] = 'C';
    d[2] = GC_FORMAT_VERSION;
    d[3] = c->id;
    d[4] = (uint8_t)flags;
    gc_put_u64(d + 8, n);
    gc_put_u64(d + 16, length);
    gc_put_u32(d + 24, crc);
}

size_t gc_payload_info_get(const void *src, size_t len, gc_payload_info *out)
{
    const uint8_t *s = src;
    if (!s || len < GC_HEADER_SIZE) return GC_ERROR(TRUNCATED);
    if (s[0] != 'G' || s[1] != 'C') return GC_ERROR(BAD_MAGIC);
    if (s[2] != GC_FORMAT_VERSION) return GC_ERROR(VERSION);
    if (!gc_codec_by_id(s[3])) return GC_ERROR(UNKNOWN_CODEC);
    if ((s[4] & ~(GC_HF_CRC | GC_HF_ZSTD | GC_HF_NONFINITE)) || s[5] || s[6] || s[7] ||
        gc_get_u32(s + 28))
        return GC_ERROR(CORRUPT);
    if ((s[4] & GC_HF_ZSTD) && (s[4] & GC_HF_NONFINITE)) return GC_ERROR(CORRUPT);
    uint64_t length = gc_get_u64(s + 16);
    if (length < GC_HEADER_SIZE) return GC_ERROR(CORRUPT);
    if (length > len) return GC_ERROR(TRUNCATED);
    if (!(s[4] & GC_HF_CRC) && gc_get_u32(s + 24)) return GC_ERROR(CORRUPT);
    if (out) {
        out->version = s[2];
        out->codec_id = s[3];
        out->flags = s[4];
        out->n = gc_get_u64(s + 8);
        out->length = length;
    }
    return 0;
}

int gc_all_finite(const float *x, size_t n)
{
    /* Integer max over the bits of |x| (vectorises); inf and NaN are at or
     * above the bits of +inf. */
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &x[i], sizeof b);
        b &= 0x7FFFFFFFu;
        top = b > top ? b : top;
    }
    return top < 0x7F800000u;
}

/* ---- the non-finite body (GC_HF_NONFINITE) --------------------------------
 *   u8  log2 of the block B (B = 512 doubled until the body fits the
 *       codec's bound; at most 2 bytes for n >= 1, as small as any bound)
 *   2-bit codes, four to a byte, low bits first, one per block of B
 *   elements: 0 finite, 1 +inf, 2 -inf, 3 NaN (what the block's non-finite
 *   values sum to); the unused bits of the last byte are zero. */
enum { NF_FINITE = 0, NF_PINF = 1, NF_NINF = 2, NF_NAN = 3 };

static size_t nonfinite_body_size(size_t n, size_t block)
{
    const size_t nb = n / block + (n % block != 0);
    return 1 + (nb + 3) / 4;
}

static unsigned nonfinite_code(const float *x, size_t len)
{
    unsigned c = NF_FINITE;
    for (size_t i = 0; i < len && c != NF_NAN; i++) {
        if (isnan(x[i])) c = NF_NAN;
        else if (isinf(x[i])) {
            const unsigned s = x[i] > 0 ? NF_PINF : NF_NINF;
            c = c == NF_FINITE || c == s ? s : NF_NAN;
        }
    }
    return c;
}

static size_t encode_nonfinite(const float *g, size_t n, uint8_t *body, size_t cap)
{
    unsigned shift = 9;
    while (((size_t)1 << shift) < n && nonfinite_body_size(n, (size_t)1 << shift) > cap) shift++;
    const size_t block = (size_t)1 << shift;
    const size_t size = nonfinite_body_size(n, block);
    if (size > cap) return GC_ERROR(DST_TOO_SMALL);
    memset(body, 0, size);
    body[0] = (uint8_t)shift;
    for (size_t b = 0, lo = 0; lo < n; b++, lo += block) {
        const size_t len = n - lo < block ? n - lo : block;
        body[1 + b / 4] |= (uint8_t)(nonfinite_code(g + lo, len) << (2 * (b % 4)));
    }
    return size;
}

static size_t decode_nonfinite(const uint8_t *body, size_t blen, float *acc, size_t n)
{
    if (blen < 1) return GC_ERROR(TRUNCATED);
    if (body[0] >= 8 * sizeof(size_t)) return GC_ERROR(CORRUPT);
    const size_t block = (size_t)1 << body[0];
    if (blen != nonfinite_body_size(n, block)) return GC_ERROR(CORRUPT);
    const size_t nb = n / block + (n % block != 0);
    if (nb % 4 && (body[1 + nb / 4] >> (2 * (nb % 4)))) return GC_ERROR(CORRUPT);
    static const float value[4] = {0.0f, INFINITY, -INFINITY, NAN};
    for (size_t b = 0, lo = 0; lo < n; b++, lo += block) {
        const unsigned c = (body[1 + b / 4] >> (2 * (b % 4))) & 3u;
        if (c == NF_FINITE) continue;
        const size_t hi = n - lo < block ? n : lo + block;
        for (size_t i = lo; i < hi; i++) acc[i] += value[c];
    }
    return 0;
}

/* gc_encode, with its pass over g for inf and NaN (scan) or without. */
static size_t encode_payload(const gc_codec *c, const float *g, float *residual, size_t n,
                             const gc_params *p, uint64_t seed, void *dst, size_t cap,
                             gc_workspace *ws, int scan)
{
    if (!c) return GC_ERROR(UNKNOWN_CODEC);
    if (gc_is_error(gc_params_check(c, p, NULL, 0))) return GC_ERROR(PARAM);
    if (n > 0 && !g) return GC_ERROR(GENERIC);
    if (!dst || cap < GC_HEADER_SIZE) return GC_ERROR(DST_TOO_SMALL);
    /* Codecs may form g + i even for n == 0; NULL + 0 is undefined in C. */
    static const float no_input;
    if (!g) g = &no_input;
    gc_workspace *own = NULL;
    if (!ws) {
        ws = own = gc_workspace_create();
        if (!ws) return GC_ERROR(ALLOC);
    }
    memset(&ws->report, 0, sizeof ws->report);
    uint8_t *d = dst;
    unsigned flags = 0;
    size_t body;
    size_t r;

    if (scan && !gc_all_finite(g, n)) {
        /* The residual is not touched: this step carries no usable values. */
        body = encode_nonfinite(g, n, d + GC_HEADER_SIZE, cap - GC_HEADER_SIZE);
        if (gc_is_error(body)) { r = body; goto out; }
        flags |= GC_HF_NONFINITE;
    } else if (p->zstd_level > 0) {
#ifdef GC_HAVE_ZSTD
        size_t raw_cap = body_bound(c, n, p);
        uint8_t *raw = gc_ws_get(ws, GC_WS_BODY, raw_cap);
        if (!raw) { r = GC_ERROR(ALLOC); goto out; }
        size_t raw_len = c->encode(g, residual, n, p, seed, raw, raw_cap, ws);
        if (gc_is_error(raw_len)) { r = raw_len; goto out; }
        if (!ws->zstd_cctx && !(ws->zstd_cctx = ZSTD_createCCtx())) { r = GC_ERROR(ALLOC); goto out; }
        size_t z = ZSTD_compressCCtx(ws->zstd_cctx, d + GC_HEADER_SIZE, cap - GC_HEADER_SIZE,
                                     raw, raw_len, p->zstd_level);
        if (!ZSTD_isError(z) && z < raw_len) {
            body = z;
            flags |= GC_HF_ZSTD;
        } else {
            /* zstd did not help (or no room): send the raw body. */
            if (raw_len > cap - GC_HEADER_SIZE) { r = GC_ERROR(DST_TOO_SMALL); goto out; }
            memcpy(d + GC_HEADER_SIZE, raw, raw_len);
            body = raw_len;
        }
#else
        r = GC_ERROR(UNSUPPORTED);
        goto out;
#endif
    } else {
        body = c->encode(g, residual, n, p, seed, d + GC_HEADER_SIZE, cap - GC_HEADER_SIZE, ws);
        if (gc_is_error(body)) { r = body; goto out; }
    }

    uint32_t crc = 0;
    if (p->flags & GC_PF_CRC) {
        flags |= GC_HF_CRC;
        crc = gc_crc32c(0, d + GC_HEADER_SIZE, body);
    }
    write_header(d, c, flags, n, GC_HEADER_SIZE + body, crc);
    r = GC_HEADER_SIZE + body;
    ws->report.n = n;
    ws->report.payload_bytes = r;
    ws->report.bits_per_element = n ? 8.0 * (double)r / (double)n : 0.0;
out:
    gc_workspace_free(own);
    return r;
}

size_t gc_encode(const gc_codec *c, const float *g, float *residual, size_t n,
                 const gc_params *p, uint64_t seed, void *dst, size_t cap,
                 gc_workspace *ws)
{
    return encode_payload(c, g, residual, n, p, seed, dst, cap, ws, 1);
}

size_t gc_encode_finite(const gc_codec *c, const float *g, float *residual, size_t n,
                        const gc_params *p, uint64_t seed, void *dst, size_t cap,
                        gc_workspace *ws)
{
    return encode_payload(c, g, residual, n, p, seed, dst, cap, ws, 0);
}

/* Validate the header against (c, n) and return the body, decompressed into
 * the workspace when the zstd stage was applied. */
static size_t open_body(const gc_codec *expect, const void *src, size_t len, size_t n,
                        gc_workspace *ws, const gc_codec **codec,
                        const uint8_t **body, size_t *body_len, unsigned *flags)
{
    gc_payload_info info;
    size_t r = gc_payload_info_get(src, len, &info);
    if (gc_is_error(r)) return r;
    const gc_codec *c = gc_codec_by_id(info.codec_id);
    if (expect && c != expect) return GC_ERROR(WRONG_CODEC);
    if (info.n != (uint64_t)n) return GC_ERROR(SIZE_MISMATCH);
    const uint8_t *b = (const uint8_t *)src + GC_HEADER_SIZE;
    size_t blen = (size_t)info.length - GC_HEADER_SIZE;
    if (info.flags & GC_HF_CRC) {
        if (gc_crc32c(0, b, blen) != gc_get_u32((const uint8_t *)src + 24))
            return GC_ERROR(CHECKSUM);
    }
    if (info.flags & GC_HF_ZSTD) {
#ifdef GC_HAVE_ZSTD
        unsigned long long raw = ZSTD_getFrameContentSize(b, blen);
        if (raw == ZSTD_CONTENTSIZE_ERROR || raw == ZSTD_CONTENTSIZE_UNKNOWN)
            return GC_ERROR(ZSTD);
        /* A body can never need more than 64 bytes an element plus slack:
         * refuse frames that claim more, so a forged size cannot make us
         * allocate without limit. */
        if (raw > (unsigned long long)n * 64 + 4096) return GC_ERROR(CORRUPT);
        uint8_t *dst = gc_ws_get(ws, GC_WS_UNZSTD, (size_t)raw);
        if (!dst) return GC_ERROR(ALLOC);
        if (!ws->zstd_dctx && !(ws->zstd_dctx = ZSTD_createDCtx())) return GC_ERROR(ALLOC);
        size_t got = ZSTD_decompressDCtx(ws->zstd_dctx, dst, (size_t)raw, b, blen);
        if (ZSTD_isError(got) || got != raw) return GC_ERROR(ZSTD);
        b = dst;
        blen = got;
#else
        (void)ws;
        return GC_ERROR(UNSUPPORTED);
#endif
    }
    *codec = c;
    *body = b;
    *body_len = blen;
    *flags = info.flags;
    return 0;
}

size_t gc_decode_add_as(const gc_codec *expect, const void *src, size_t len, float *acc,
                        size_t n, gc_workspace *ws)
{
    if (n > 0 && !acc) return GC_ERROR(GENERIC);
    float no_output;
    if (!acc) acc = &no_output; /* n == 0: codecs may still form acc + 0 */
    gc_workspace *own = NULL;
    if (!ws) {
        ws = own = gc_workspace_create();
        if (!ws) return GC_ERROR(ALLOC);
    }
    const gc_codec *c = NULL;
    const uint8_t *body = NULL;
    size_t blen = 0;
    unsigned flags = 0;
    size_t r = open_body(expect, src, len, n, ws, &c, &body, &blen, &flags);
    if (!gc_is_error(r))
        r = (flags & GC_HF_NONFINITE) ? decode_nonfinite(body, blen, acc, n)
                                      : c->decode_add(body, blen, acc, n, ws);
    gc_workspace_free(own);
    return gc_is_error(r) ? r : 0;
}

size_t gc_decode_add(const void *src, size_t len, float *acc, size_t n, gc_workspace *ws)
{
    return gc_decode_add_as(NULL, src, len, acc, n, ws);
}

/* Used by momentum correction: clear x where the payload sent an element. */
GC_INTERNAL size_t gc_payload_zero_sent(const void *src, size_t len, float *x, size_t n,
                                        gc_workspace *ws);
size_t gc_payload_zero_sent(const void *src, size_t len, float *x, size_t n, gc_workspace *ws)
{
    const gc_codec *c = NULL;
    const uint8_t *body = NULL;
    size_t blen = 0;
    unsigned flags = 0;
    size_t r = open_body(NULL, src, len, n, ws, &c, &body, &blen, &flags);
    if (gc_is_error(r)) return r;
    if (!c->zero_sent) return GC_ERROR(PARAM);
    if (flags & GC_HF_NONFINITE) return 0; /* nothing was sent */
    return c->zero_sent(body, blen, x, n, ws);
}
