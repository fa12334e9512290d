/* test_malformed.c — every registered codec against damaged payloads.
 *
 * Each test runs once per codec in the registry (parameterised over
 * gc_codec_at(i)), on payloads of several sizes and parameter sets, with the
 * CRC and the zstd stage on and off. Payloads and accumulators are heap
 * blocks of exactly the right size, so under ASan (the sanitised CI build)
 * any read or write past them fails the test even where the contract only
 * asks for "success or an error". */
#include "test_util.h"

#include "codec_impl.h"

#include <criterion/parameterized.h>

/* ---- the payloads every test damages ------------------------------------ */

static const size_t sample_sizes[] = {0, 1, 7, 1000, 4099};
#define SAMPLE_SIZE_COUNT (sizeof sample_sizes / sizeof sample_sizes[0])

enum { CFG_CRC = 1, CFG_ZSTD = 2, CFG_ALT_PARAMS = 4, CFG_COUNT = 8 };

typedef struct sample {
    const gc_codec *codec;
    size_t n;
    unsigned cfg;
    gc_params params;
    uint8_t *payload;  /* exactly len bytes */
    size_t len;
    size_t body_len;   /* len - GC_HEADER_SIZE */
    int zstd_applied;  /* the encoder kept the zstd stage (it helped) */
} sample;

static int zstd_built_in(void)
{
    gc_params p;
    gc_params_default(&p);
    p.zstd_level = 1;
    return !gc_is_error(gc_params_check(gc_codec_by_name("none"), &p, NULL, 0));
}

/* Make sample k (0 <= k < SAMPLE_SIZE_COUNT * CFG_COUNT) of codec c.
 * Returns 0 when the configuration does not apply (zstd not built in). */
static int sample_make(const gc_codec *c, size_t k, sample *s)
{
    memset(s, 0, sizeof *s);
    s->codec = c;
    s->n = sample_sizes[k / CFG_COUNT];
    s->cfg = (unsigned)(k % CFG_COUNT);
    if ((s->cfg & CFG_ZSTD) && !zstd_built_in()) return 0;

    gc_params *p = &s->params;
    gc_params_default(p);
    if (s->cfg & CFG_ALT_PARAMS) {
        /* Small buckets (a partial last one), a large kept fraction, the
         * widest qsgd levels, a second rank. */
        p->bucket = 7;
        p->ratio = 0.3;
        p->bits = 8;
        p->rank = 2;
    }
    if (s->cfg & CFG_CRC) p->flags |= GC_PF_CRC;
    if (s->cfg & CFG_ZSTD) p->zstd_level = 3;

    char msg[256];
    size_t chk = gc_params_check(c, p, msg, sizeof msg);
    cr_assert(!gc_is_error(chk), "%s rejects test parameters: %s", gc_codec_name(c), msg);

    float *g = test_alloc(s->n);
    fill_laplace(g, s->n, 0.01, 77 + s->n);
    size_t cap = gc_bound(c, s->n, p);
    cr_assert(!gc_is_error(cap), "%s bound: %s", gc_codec_name(c), gc_error_name(cap));
    uint8_t *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t len = gc_encode(c, g, NULL, s->n, p, 1234, buf, cap, NULL);
    free(g);
    if (gc_is_error(len)) free(buf);
    cr_assert(!gc_is_error(len), "%s encode n=%zu cfg=%u: %s", gc_codec_name(c), s->n, s->cfg,
              gc_error_name(len));
    s->payload = malloc(len);
    cr_assert_not_null(s->payload);
    memcpy(s->payload, buf, len);
    s->len = len;
    s->body_len = len - GC_HEADER_SIZE;
    s->zstd_applied = (buf[4] & GC_HF_ZSTD) != 0;
    free(buf);
    return 1;
}

static void sample_free(sample *s) { free(s->payload); }

#define SAMPLE_COUNT (SAMPLE_SIZE_COUNT * CFG_COUNT)

/* Iterate over the samples of codec c; each body runs with `s` set. */
#define FOR_EACH_SAMPLE(c, s)                                          \
    for (size_t sample_k_ = 0; sample_k_ < SAMPLE_COUNT; sample_k_++)  \
        for (sample s, *once_ = &s; once_ && sample_make(c, sample_k_, &s); \
             sample_free(&s), once_ = NULL)

/* Where a failure happened: append AT to the message, AT_ARGS(&s) to its
 * arguments. */
#define AT " [%s n=%zu crc=%d zstd=%d alt-params=%d]"
#define AT_ARGS(s) gc_codec_name((s)->codec), (s)->n, !!((s)->cfg & CFG_CRC), \
    (s)->zstd_applied, !!((s)->cfg & CFG_ALT_PARAMS)

/* Decode src[0..len) as codec `as` into exactly n zeroed floats. Asserts the
 * contract every call must keep: the result is 0 or an error code. */
static size_t decode(const gc_codec *as, const uint8_t *src, size_t len, size_t n)
{
    float *acc = n ? calloc(n, sizeof(float)) : NULL;
    cr_assert(n == 0 || acc);
    size_t r = gc_decode_add_as(as, src, len, acc, n, NULL);
    free(acc);
    cr_assert(r == 0 || gc_is_error(r), "decode returned %zu, neither 0 nor an error", r);
    return r;
}

/* A copy of s's payload with the body replaced by body[0..blen) and the
 * header's length and CRC made consistent with it. */
static uint8_t *reframe(const sample *s, const uint8_t *body, size_t blen)
{
    uint8_t *p = malloc(GC_HEADER_SIZE + blen);
    cr_assert_not_null(p);
    memcpy(p, s->payload, GC_HEADER_SIZE);
    if (blen) memcpy(p + GC_HEADER_SIZE, body, blen);
    gc_put_u64(p + 16, GC_HEADER_SIZE + blen);
    if (p[4] & GC_HF_CRC) gc_put_u32(p + 24, gc_crc32c(0, p + GC_HEADER_SIZE, blen));
    return p;
}

/* Positions to try in [0, len): all of them when few, else both ends and an
 * even spread between. Returns the count written to out (<= 256). */
static size_t sample_positions(size_t len, size_t *out)
{
    if (len <= 256) {
        for (size_t i = 0; i < len; i++) out[i] = i;
        return len;
    }
    size_t k = 0;
    for (size_t i = 0; i < 64; i++) out[k++] = i;
    for (size_t i = 0; i < 128; i++) out[k++] = 64 + i * (len - 128) / 128;
    for (size_t i = len - 64; i < len; i++) out[k++] = i;
    return k;
}

/* The parameter generator: one test instance per registered codec. */
static struct criterion_test_params codec_params(void)
{
    static size_t index[256]; /* codec ids are one byte */
    size_t count = gc_codec_count();
    if (count > 256) count = 256;
    for (size_t i = 0; i < count; i++) index[i] = i;
    return cr_make_param_array(size_t, index, count);
}

#define CODEC_TEST(name)                                                  \
    ParameterizedTestParameters(malformed, name) { return codec_params(); } \
    ParameterizedTest(size_t *codec_index, malformed, name)

/* ---- the properties ------------------------------------------------------ */

CODEC_TEST(valid_payload_decodes)
{
    const gc_codec *c = gc_codec_at(*codec_index);
    FOR_EACH_SAMPLE(c, s) {
        float *acc = test_alloc(s.n);
        size_t r = gc_decode_add_as(c, s.payload, s.len, acc, s.n, NULL);
        cr_assert_eq(r, 0, "decode: %s" AT, gc_error_name(r), AT_ARGS(&s));
        for (size_t i = 0; i < s.n; i++)
            cr_assert(isfinite(acc[i]), "element %zu not finite" AT, i, AT_ARGS(&s));
        free(acc);
        cr_assert_eq(decode(NULL, s.payload, s.len, s.n), 0, "any-codec decode" AT, AT_ARGS(&s));
    }
}

CODEC_TEST(cut_payload_is_truncated)
{
    const gc_codec *c = gc_codec_at(*codec_index);
    size_t at[256];
    FOR_EACH_SAMPLE(c, s) {
        size_t k = sample_positions(s.len, at);
        for (size_t i = 0; i < k; i++) {
            /* Exactly at[i] bytes on the heap: a read past them is caught. */
            uint8_t *cut = malloc(at[i] ? at[i] : 1);
            cr_assert_not_null(cut);
            memcpy(cut, s.payload, at[i]);
            size_t r = decode(c, cut, at[i], s.n);
            free(cut);
            cr_assert_eq(gc_error_code(r), GC_ERR_TRUNCATED, "cut to %zu of %zu: %s" AT, at[i],
                         s.len, gc_error_name(r), AT_ARGS(&s));
        }
    }
}

CODEC_TEST(shortened_body_is_an_error)
{
    /* The header is rewritten to claim the shorter body (and its CRC), so
     * the check falls to the body decoder itself. */
    const gc_codec *c = gc_codec_at(*codec_index);
    size_t at[256];
    FOR_EACH_SAMPLE(c, s) {
        size_t k = sample_positions(s.body_len, at);
        for (size_t i = 0; i < k; i++) {
            uint8_t *p = reframe(&s, s.payload + GC_HEADER_SIZE, at[i]);
            size_t r = decode(c, p, GC_HEADER_SIZE + at[i], s.n);
            free(p);
            cr_assert(gc_is_error(r), "body cut to %zu of %zu decoded" AT, at[i],
                      s.body_len, AT_ARGS(&s));
        }
    }
}

CODEC_TEST(trailing_bytes_after_the_body_are_corrupt)
{
    const gc_codec *c = gc_codec_at(*codec_index);
    FOR_EACH_SAMPLE(c, s) {
        for (size_t extra = 1; extra <= 9; extra += 4) {
            uint8_t *body = malloc(s.body_len + extra);
            cr_assert_not_null(body);
            memcpy(body, s.payload + GC_HEADER_SIZE, s.body_len);
            memset(body + s.body_len, 0, extra);
            uint8_t *p = reframe(&s, body, s.body_len + extra);
            size_t r = decode(c, p, s.len + extra, s.n);
            free(p);
            free(body);
            if (s.zstd_applied)
                cr_assert(gc_is_error(r), "%zu bytes after a zstd frame accepted" AT, extra,
                          AT_ARGS(&s));
            else
                cr_assert_eq(gc_error_code(r), GC_ERR_CORRUPT, "%zu trailing bytes: %s" AT, extra,
                             gc_error_name(r), AT_ARGS(&s));
        }
    }
}

CODEC_TEST(crc_catches_every_body_bit_flip)
{
    const gc_codec *c = gc_codec_at(*codec_index);
    size_t at[256];
    FOR_EACH_SAMPLE(c, s) {
        if (!(s.cfg & CFG_CRC)) continue;
        size_t k = sample_positions(s.body_len * 8, at);
        for (size_t i = 0; i < k; i++) {
            uint8_t *p = malloc(s.len);
            cr_assert_not_null(p);
            memcpy(p, s.payload, s.len);
            p[GC_HEADER_SIZE + at[i] / 8] ^= (uint8_t)(1u << (at[i] % 8));
            size_t r = decode(c, p, s.len, s.n);
            free(p);
            cr_assert_eq(gc_error_code(r), GC_ERR_CHECKSUM, "body bit %zu: %s" AT, at[i],
                         gc_error_name(r), AT_ARGS(&s));
        }
    }
}

CODEC_TEST(body_bit_flips_without_crc_keep_the_contract)
{
    /* Without a CRC a flipped bit may decode to other values; it must still
     * give 0 or an error and stay in bounds (decode() asserts the former,
     * ASan the latter). */
    const gc_codec *c = gc_codec_at(*codec_index);
    size_t at[256];
    size_t flips = 0;
    FOR_EACH_SAMPLE(c, s) {
        if (s.cfg & CFG_CRC) continue;
        size_t k = sample_positions(s.body_len * 8, at);
        for (size_t i = 0; i < k; i++) {
            uint8_t *p = malloc(s.len);
            cr_assert_not_null(p);
            memcpy(p, s.payload, s.len);
            p[GC_HEADER_SIZE + at[i] / 8] ^= (uint8_t)(1u << (at[i] % 8));
            decode(c, p, s.len, s.n);
            free(p);
            flips++;
        }
    }
    cr_assert_gt(flips, 0);
}

CODEC_TEST(header_bit_flips_are_errors)
{
    const gc_codec *c = gc_codec_at(*codec_index);
    FOR_EACH_SAMPLE(c, s) {
        for (size_t bit = 0; bit < 8 * GC_HEADER_SIZE; bit++) {
            size_t byte = bit / 8;
            /* Clearing the zstd flag hands the codec a zstd frame as its
             * body: that must keep the contract, but may decode. */
            int zstd_cleared = byte == 4 && bit % 8 == 1 && s.zstd_applied;
            /* Toggling the CRC flag is undetectable when the body's CRC is
             * 0, the value the field holds without a CRC (the empty body). */
            int crc_matches_zero = byte == 4 && bit % 8 == 0 &&
                gc_crc32c(0, s.payload + GC_HEADER_SIZE, s.body_len) == 0;
            uint8_t *p = malloc(s.len);
            cr_assert_not_null(p);
            memcpy(p, s.payload, s.len);
            p[byte] ^= (uint8_t)(1u << (bit % 8));
            gc_error e = gc_error_code(decode(c, p, s.len, s.n));
            free(p);
            if (zstd_cleared || crc_matches_zero) continue;
            cr_assert_neq(e, GC_OK, "header bit %zu flipped and decoded" AT, bit, AT_ARGS(&s));
            if (byte < 2)
                cr_assert_eq(e, GC_ERR_BAD_MAGIC, "magic bit %zu" AT, bit, AT_ARGS(&s));
            else if (byte == 2)
                cr_assert_eq(e, GC_ERR_VERSION, "version bit %zu" AT, bit, AT_ARGS(&s));
            else if (byte == 3)
                cr_assert(e == GC_ERR_WRONG_CODEC || e == GC_ERR_UNKNOWN_CODEC,
                          "codec id bit %zu: %d" AT, bit, (int)e, AT_ARGS(&s));
            else if ((byte >= 5 && byte < 8) || byte >= 28)
                cr_assert_eq(e, GC_ERR_CORRUPT, "reserved bit %zu" AT, bit, AT_ARGS(&s));
            else if (byte >= 8 && byte < 16)
                cr_assert_eq(e, GC_ERR_SIZE_MISMATCH, "count bit %zu" AT, bit, AT_ARGS(&s));
        }
    }
}

CODEC_TEST(another_codecs_payload_is_refused)
{
    const gc_codec *c = gc_codec_at(*codec_index);
    FOR_EACH_SAMPLE(c, s) {
        for (size_t j = 0; j < gc_codec_count(); j++) {
            const gc_codec *other = gc_codec_at(j);
            if (other == c) continue;
            size_t r = decode(other, s.payload, s.len, s.n);
            cr_assert_eq(gc_error_code(r), GC_ERR_WRONG_CODEC, "decoded as %s: %s" AT,
                         gc_codec_name(other), gc_error_name(r), AT_ARGS(&s));
        }
    }
}

CODEC_TEST(wrong_element_count_is_a_size_mismatch)
{
    const gc_codec *c = gc_codec_at(*codec_index);
    FOR_EACH_SAMPLE(c, s) {
        size_t wrong[] = {s.n + 1, s.n ? s.n - 1 : 2, 2 * s.n + 5};
        for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
            size_t r = decode(c, s.payload, s.len, wrong[i]);
            cr_assert_eq(gc_error_code(r), GC_ERR_SIZE_MISMATCH, "n=%zu: %s" AT, wrong[i],
                         gc_error_name(r), AT_ARGS(&s));
        }
    }
}

CODEC_TEST(garbage_bodies_with_a_valid_header_keep_the_contract)
{
    /* Random bodies of many lengths, and real bodies with a few bytes
     * overwritten; with the CRC on, the CRC is made to match so the body
     * decoder sees them. Only the contract (0 or an error, in bounds) is
     * required. */
    const gc_codec *c = gc_codec_at(*codec_index);
    uint64_t rng = 0x5EEDull + *codec_index;
    size_t tried = 0;
    FOR_EACH_SAMPLE(c, s) {
        if (s.zstd_applied) continue; /* garbage is not a zstd frame */
        size_t lens[] = {0, 1, 2, 3, 4, 5, 8, 13, 64, s.body_len, s.body_len + 1,
                         s.body_len ? s.body_len - 1 : 7, 2 * s.body_len + 7};
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            size_t blen = lens[li];
            uint8_t *body = malloc(blen ? blen : 1);
            cr_assert_not_null(body);
            for (int round = 0; round < 4; round++) {
                for (size_t i = 0; i < blen; i++) body[i] = (uint8_t)test_rng_next(&rng);
                uint8_t *p = reframe(&s, body, blen);
                decode(c, p, GC_HEADER_SIZE + blen, s.n);
                free(p);
                tried++;
            }
            free(body);
        }
        /* Structured garbage: the real body with up to 8 random bytes. */
        if (s.body_len == 0) continue;
        uint8_t *body = malloc(s.body_len);
        cr_assert_not_null(body);
        for (int round = 0; round < 64; round++) {
            memcpy(body, s.payload + GC_HEADER_SIZE, s.body_len);
            int hits = 1 + (int)(test_rng_next(&rng) % 8);
            for (int h = 0; h < hits; h++)
                body[test_rng_next(&rng) % s.body_len] = (uint8_t)test_rng_next(&rng);
            uint8_t *p = reframe(&s, body, s.body_len);
            decode(c, p, s.len, s.n);
            free(p);
            tried++;
        }
        free(body);
    }
    cr_assert_gt(tried, 0);
}

/* ---- topkq: damage aimed at its body layout -------------------------------
 * Body (codecs/codec_topkq.c): u32 k, u8 mode, indices (sparse_index.h),
 * u32 bucket, then per bucket u8 width, f32 lo, f32 hi and the packed
 * values. The helpers below find those fields independently of the codec. */

static const gc_codec *topkq_codec(void)
{
    const gc_codec *c = gc_codec_by_name("topkq");
    cr_assert_not_null(c, "topkq is not registered");
    return c;
}

/* Offset of the u32 bucket field: after the head and index section. */
static size_t topkq_bucket_field_at(const uint8_t *body, size_t n)
{
    size_t k = gc_get_u32(body);
    if (body[4] == 1) return 5 + (n + 7) / 8;
    size_t pos = 5;
    for (size_t s = 0; s < k; s += 128) {
        size_t cnt = k - s < 128 ? k - s : 128;
        pos += 1 + (cnt * body[pos] + 7) / 8;
    }
    return pos;
}

/* Offsets of the width bytes of the (at most max) first buckets, and each
 * bucket's value bits; returns the count. */
static size_t topkq_buckets(const uint8_t *body, size_t n, size_t *at, size_t *bits, size_t max)
{
    size_t k = gc_get_u32(body), pos = topkq_bucket_field_at(body, n);
    size_t bucket = gc_get_u32(body + pos), count = 0;
    pos += 4;
    for (size_t s = 0; s < k && count < max; s += bucket) {
        size_t len = k - s < bucket ? k - s : bucket;
        at[count] = pos;
        bits[count++] = len * body[pos];
        pos += 9 + (len * body[pos] + 7) / 8;
    }
    return count;
}

/* Decode s's body with one byte replaced. */
static size_t decode_with_byte(const sample *s, size_t at, uint8_t value)
{
    uint8_t *body = malloc(s->body_len);
    cr_assert_not_null(body);
    memcpy(body, s->payload + GC_HEADER_SIZE, s->body_len);
    body[at] = value;
    uint8_t *p = reframe(s, body, s->body_len);
    size_t r = decode(s->codec, p, s->len, s->n);
    free(p);
    free(body);
    return r;
}

Test(malformed_topkq, every_cut_of_the_body_is_truncated)
{
    /* Every field's length follows from those before it, so a body that
     * stops early is always short of something. */
    size_t at[256];
    FOR_EACH_SAMPLE(topkq_codec(), s) {
        if (s.zstd_applied) continue;
        size_t k = sample_positions(s.body_len, at);
        for (size_t i = 0; i < k; i++) {
            uint8_t *p = reframe(&s, s.payload + GC_HEADER_SIZE, at[i]);
            size_t r = decode(s.codec, p, GC_HEADER_SIZE + at[i], s.n);
            free(p);
            cr_assert_eq(gc_error_code(r), GC_ERR_TRUNCATED, "body cut to %zu of %zu: %s" AT,
                         at[i], s.body_len, gc_error_name(r), AT_ARGS(&s));
        }
    }
}

Test(malformed_topkq, widths_outside_1_to_8_are_corrupt)
{
    size_t at[64], bits[64], tried = 0;
    const uint8_t bad[] = {0, 9, 255};
    FOR_EACH_SAMPLE(topkq_codec(), s) {
        if (s.zstd_applied || s.n == 0) continue;
        const uint8_t *body = s.payload + GC_HEADER_SIZE;
        size_t nb = topkq_buckets(body, s.n, at, bits, 64);
        cr_assert_gt(nb, 0);
        for (size_t b = 0; b < nb; b++) {
            for (size_t v = 0; v < sizeof bad; v++) {
                size_t r = decode_with_byte(&s, at[b], bad[v]);
                cr_assert_eq(gc_error_code(r), GC_ERR_CORRUPT, "bucket %zu width %u: %s" AT, b,
                             bad[v], gc_error_name(r), AT_ARGS(&s));
                tried++;
            }
        }
    }
    cr_assert_gt(tried, 0);
}

Test(malformed_topkq, set_padding_bits_are_corrupt)
{
    size_t at[64], bits[64], tried = 0;
    FOR_EACH_SAMPLE(topkq_codec(), s) {
        if (s.zstd_applied || s.n == 0) continue;
        const uint8_t *body = s.payload + GC_HEADER_SIZE;
        size_t nb = topkq_buckets(body, s.n, at, bits, 64);
        for (size_t b = 0; b < nb; b++) {
            if (bits[b] % 8 == 0) continue;
            size_t last = at[b] + 9 + (bits[b] + 7) / 8 - 1;
            size_t r = decode_with_byte(&s, last, (uint8_t)(body[last] | 0x80));
            cr_assert_eq(gc_error_code(r), GC_ERR_CORRUPT, "bucket %zu: %s" AT, b,
                         gc_error_name(r), AT_ARGS(&s));
            tried++;
        }
    }
    cr_assert_gt(tried, 0);
}

Test(malformed_topkq, k_above_n_and_bad_bucket_fields_are_corrupt)
{
    FOR_EACH_SAMPLE(topkq_codec(), s) {
        if (s.zstd_applied) continue;
        const uint8_t *body = s.payload + GC_HEADER_SIZE;
        uint8_t *copy = malloc(s.body_len);
        cr_assert_not_null(copy);
        const uint32_t ks[] = {(uint32_t)s.n + 1, UINT32_MAX};
        const uint32_t buckets[] = {0, (UINT32_C(1) << 31) + 1};
        for (size_t i = 0; i < 2; i++) {
            memcpy(copy, body, s.body_len);
            gc_put_u32(copy, ks[i]);
            uint8_t *p = reframe(&s, copy, s.body_len);
            size_t r = decode(s.codec, p, s.len, s.n);
            free(p);
            cr_assert_eq(gc_error_code(r), GC_ERR_CORRUPT, "k=%u: %s" AT, ks[i],
                         gc_error_name(r), AT_ARGS(&s));

            memcpy(copy, body, s.body_len);
            gc_put_u32(copy + topkq_bucket_field_at(body, s.n), buckets[i]);
            p = reframe(&s, copy, s.body_len);
            r = decode(s.codec, p, s.len, s.n);
            free(p);
            cr_assert_eq(gc_error_code(r), GC_ERR_CORRUPT, "bucket=%u: %s" AT, buckets[i],
                         gc_error_name(r), AT_ARGS(&s));
        }
        free(copy);
    }
}

/* A topkq payload for n = 10 around a hand-made body. */
static size_t decode_topkq_body(const uint8_t *body, size_t blen)
{
    float g[10] = {0};
    gc_params p;
    gc_params_default(&p);
    uint8_t head[512];
    size_t len = gc_encode(topkq_codec(), g, NULL, 10, &p, 0, head, sizeof head, NULL);
    cr_assert(!gc_is_error(len));
    uint8_t *pl = malloc(GC_HEADER_SIZE + blen);
    cr_assert_not_null(pl);
    memcpy(pl, head, GC_HEADER_SIZE);
    memcpy(pl + GC_HEADER_SIZE, body, blen);
    gc_put_u64(pl + 16, GC_HEADER_SIZE + blen);
    size_t r = decode(topkq_codec(), pl, GC_HEADER_SIZE + blen, 10);
    free(pl);
    return r;
}

Test(malformed_topkq, indices_out_of_range_or_not_increasing_are_corrupt)
{
    /* n = 10, k = 2, one bucket of 2 at 2 bits (values: 1 byte). Delta
     * blocks: width 4, deltas LSB first. */
    uint8_t body[] = {
        0x02, 0x00, 0x00, 0x00, 0x00,  /* k = 2, delta          */
        0x04, 0x00,                    /* width 4, deltas: set  */
        0x02, 0x00, 0x00, 0x00,        /* bucket = 2            */
        0x02, 0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40,  /* b 2, lo 1, hi 2 */
        0x08,                          /* +lo, +hi              */
    };
    body[6] = 0x43;  /* deltas 3, 4: indices 3, 7 */
    cr_assert_eq(decode_topkq_body(body, sizeof body), 0, "the valid body");
    body[6] = 0x73;  /* deltas 3, 7: index 10 >= n */
    cr_assert_eq(gc_error_code(decode_topkq_body(body, sizeof body)), GC_ERR_CORRUPT);
    body[6] = 0x03;  /* deltas 3, 0: index 3 twice */
    cr_assert_eq(gc_error_code(decode_topkq_body(body, sizeof body)), GC_ERR_CORRUPT);
    body[6] = 0xFA;  /* deltas 10, 15: index 10 first */
    cr_assert_eq(gc_error_code(decode_topkq_body(body, sizeof body)), GC_ERR_CORRUPT);

    /* The same in bitmap mode (2 bytes for n = 10). */
    uint8_t map[] = {
        0x02, 0x00, 0x00, 0x00, 0x01,  /* k = 2, bitmap          */
        0x88, 0x00,                    /* bits 3, 7              */
        0x02, 0x00, 0x00, 0x00,
        0x02, 0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0x40,
        0x08,
    };
    cr_assert_eq(decode_topkq_body(map, sizeof map), 0, "the valid bitmap body");
    map[6] = 0x04;  /* bit 10 >= n */
    cr_assert_eq(gc_error_code(decode_topkq_body(map, sizeof map)), GC_ERR_CORRUPT);
    map[6] = 0x01;  /* three bits for k = 2 */
    cr_assert_eq(gc_error_code(decode_topkq_body(map, sizeof map)), GC_ERR_CORRUPT);
    map[5] = 0x08;
    map[6] = 0x00;  /* one bit for k = 2 */
    cr_assert_eq(gc_error_code(decode_topkq_body(map, sizeof map)), GC_ERR_CORRUPT);
}

Test(malformed_topkq, one_bit_buckets_need_lo_equal_to_hi)
{
    /* Width 1 carries one magnitude: lo and hi must be the same float. */
    uint8_t body[] = {
        0x02, 0x00, 0x00, 0x00, 0x01, 0x88, 0x00,  /* k = 2: indices 3, 7 */
        0x02, 0x00, 0x00, 0x00,                    /* bucket = 2          */
        0x01, 0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x80, 0x3F,  /* b 1, lo = hi = 1 */
        0x02,                                      /* +1, -1              */
    };
    cr_assert_eq(decode_topkq_body(body, sizeof body), 0, "the valid body");
    body[19] = 0x40;  /* hi = 4 */
    cr_assert_eq(gc_error_code(decode_topkq_body(body, sizeof body)), GC_ERR_CORRUPT);
}
