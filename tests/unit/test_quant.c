/* test_quant.c — the quantising codecs: fp16, bf16, int8, qsgd (fixed width
 * and Elias gamma), terngrad, sign (EF-signSGD), onebit (1-bit SGD) and
 * natural compression. */
#include "test_util.h"

#include "quant_common.h"

#include <float.h>
#include <stdio.h>

/* ---- helpers ---------------------------------------------------------------- */

typedef struct config {
    const char *codec;
    unsigned bits;    /* qsgd; 0 = default */
    unsigned flags;   /* GC_PF_* */
} config;

static const config all_configs[] = {
    {"fp16", 0, 0},     {"bf16", 0, 0},     {"int8", 0, 0},
    {"qsgd", 2, 0},     {"qsgd", 4, 0},     {"qsgd", 8, 0},
    {"qsgd", 4, GC_PF_QSGD_ELIAS},          {"qsgd", 8, GC_PF_QSGD_ELIAS},
    {"terngrad", 0, 0}, {"sign", 0, 0},     {"onebit", 0, 0}, {"natural", 0, 0},
};
#define CONFIG_COUNT (sizeof all_configs / sizeof all_configs[0])

static const char *const bucketed[] = {"int8", "qsgd", "terngrad", "sign", "onebit", "natural"};
#define BUCKETED_COUNT (sizeof bucketed / sizeof bucketed[0])

static gc_params params_for(const config *c, size_t bucket)
{
    gc_params p;
    gc_params_default(&p);
    if (c->bits) p.bits = c->bits;
    p.flags |= c->flags;
    if (bucket) p.bucket = bucket;
    return p;
}

typedef struct payload {
    uint8_t *data;
    size_t len;
} payload;

/* Encode g (+ r when r is not NULL); asserts success. */
static payload encode(const char *codec, const gc_params *p, const float *g, float *r, size_t n,
                      uint64_t seed)
{
    const gc_codec *c = gc_codec_by_name(codec);
    cr_assert_not_null(c, "codec %s not registered", codec);
    size_t cap = gc_bound(c, n, p);
    cr_assert(!gc_is_error(cap), "%s bound: %s", codec, gc_error_name(cap));
    payload pl = {malloc(cap), 0};
    cr_assert_not_null(pl.data);
    pl.len = gc_encode(c, g, r, n, p, seed, pl.data, cap, NULL);
    cr_assert(!gc_is_error(pl.len), "%s encode n=%zu: %s", codec, n, gc_error_name(pl.len));
    cr_assert_leq(pl.len, cap);
    return pl;
}

/* out = D(payload); asserts success. */
static void decode(const payload *pl, float *out, size_t n)
{
    memset(out, 0, n * sizeof(float));
    size_t r = gc_decode_add(pl->data, pl->len, out, n, NULL);
    cr_assert(!gc_is_error(r), "decode n=%zu: %s", n, gc_error_name(r));
}

/* The decoder's answer for a copy of the payload cut or extended to body
 * length body_len, with the header's length field made to agree. */
static size_t decode_resized(const payload *pl, size_t body_len, float *out, size_t n)
{
    size_t len = GC_HEADER_SIZE + body_len;
    uint8_t *copy = calloc(len, 1);
    cr_assert_not_null(copy);
    memcpy(copy, pl->data, len < pl->len ? len : pl->len);
    gc_put_u64(copy + 16, len);
    size_t r = gc_decode_add(copy, len, out, n, NULL);
    free(copy);
    return r;
}

static size_t bucket_len(size_t n, size_t bucket, size_t b)
{
    return n - b * bucket < bucket ? n - b * bucket : bucket;
}

static double bucket_absmax(const float *v, size_t len)
{
    double m = 0;
    for (size_t i = 0; i < len; i++) m = fmax(m, fabs((double)v[i]));
    return m;
}

static double bucket_l2(const float *v, size_t len)
{
    double s = 0;
    for (size_t i = 0; i < len; i++) s += (double)v[i] * v[i];
    return sqrt(s);
}

static bool is_power_of_two(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    b &= 0x7FFFFFFFu;
    return b >= 0x00800000u && b < 0x7F800000u && (b & 0x7FFFFFu) == 0;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- every codec -------------------------------------------------------------- */

Test(quant, flags_are_honest)
{
    const char *stochastic[] = {"qsgd", "terngrad", "natural"};
    for (size_t c = 0; c < CONFIG_COUNT; c++) {
        unsigned f = gc_codec_flags(gc_codec_by_name(all_configs[c].codec));
        cr_assert_eq(f & (GC_LINEAR | GC_LOSSLESS | GC_SPARSE), 0u, "%s", all_configs[c].codec);
        bool want = false;
        for (size_t s = 0; s < 3; s++) want |= strcmp(stochastic[s], all_configs[c].codec) == 0;
        cr_assert_eq((f & GC_STOCHASTIC) != 0, want, "%s", all_configs[c].codec);
    }
}

Test(quant, every_codec_round_trips_on_every_size)
{
    for (size_t c = 0; c < CONFIG_COUNT; c++) {
        gc_params p = params_for(&all_configs[c], 0);
        for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
            size_t n = test_sizes[s];
            float *g = test_alloc(n), *out = test_alloc(n);
            fill_laplace(g, n, 1.0, 100 + s);
            payload pl = encode(all_configs[c].codec, &p, g, NULL, n, 7);
            cr_assert_leq(pl.len, gc_bound(gc_codec_by_name(all_configs[c].codec), n, &p));
            decode(&pl, out, n);
            for (size_t i = 0; i < n; i++)
                cr_assert(isfinite(out[i]), "%s n=%zu element %zu is %g", all_configs[c].codec, n,
                          i, (double)out[i]);
            free(pl.data);
            free(g);
            free(out);
        }
    }
}

Test(quant, body_sizes_follow_the_documented_formulas)
{
    const size_t n = 1000, bucket = 300; /* buckets 300, 300, 300, 100 */
    const size_t nb = 4, planes_bytes = 3 * 38 + 13; /* sum of ceil(L / 8) */
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 5);
    struct { config c; size_t body; } cases[] = {
        {{"fp16", 0, 0}, 2 * n},
        {{"bf16", 0, 0}, 2 * n},
        {{"int8", 0, 0}, 4 + 4 * nb + n},
        {{"qsgd", 3, 0}, 6 + 4 * nb + 3 * planes_bytes},
        {{"qsgd", 8, 0}, 6 + 4 * nb + 8 * planes_bytes},
        {{"terngrad", 0, 0}, 4 + 4 * nb + 2 * planes_bytes},
        {{"sign", 0, 0}, 4 + 4 * nb + planes_bytes},
        {{"onebit", 0, 0}, 4 + 8 * nb + planes_bytes},
        {{"natural", 0, 0}, 4 + nb + n},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gc_params p = params_for(&cases[k].c, bucket);
        payload pl = encode(cases[k].c.codec, &p, g, NULL, n, 1);
        cr_assert_eq(pl.len, GC_HEADER_SIZE + cases[k].body, "%s bits=%u: %zu bytes",
                     cases[k].c.codec, p.bits, pl.len);
        cr_assert_eq(gc_bound(gc_codec_by_name(cases[k].c.codec), n, &p), pl.len);
        free(pl.data);
    }
    free(g);
}

Test(quant, error_feedback_identity_holds_for_every_codec)
{
    const size_t sizes[] = {7, 1000, 4099};
    for (size_t c = 0; c < CONFIG_COUNT; c++) {
        gc_params p = params_for(&all_configs[c], 0);
        for (size_t s = 0; s < 3; s++) {
            size_t n = sizes[s];
            float *g = test_alloc(n), *r = test_alloc(n), *v = test_alloc(n), *out = test_alloc(n);
            fill_laplace(g, n, 1.0, 11 + s);
            fill_laplace(r, n, 0.1, 23 + s);
            for (size_t i = 0; i < n; i++) v[i] = g[i] + r[i];
            payload pl = encode(all_configs[c].codec, &p, g, r, n, 3);
            decode(&pl, out, n);
            /* r_new = fl(v - D), so D + r_new = v up to one rounding of r_new. */
            for (size_t i = 0; i < n; i++) {
                double gap = fabs((double)out[i] + (double)r[i] - (double)v[i]);
                cr_assert_leq(gap, 0x1p-24 * fabs((double)r[i]),
                              "%s bits=%u n=%zu i=%zu: D=%a r=%a v=%a", all_configs[c].codec,
                              p.bits, n, i, (double)out[i], (double)r[i], (double)v[i]);
            }
            free(pl.data);
            free(g);
            free(r);
            free(v);
            free(out);
        }
    }
}

Test(quant, zero_residual_gives_the_payload_of_no_residual)
{
    const size_t n = 1000;
    float *g = test_alloc(n), *zero = test_alloc(n);
    fill_laplace(g, n, 1.0, 8);
    for (size_t c = 0; c < CONFIG_COUNT; c++) {
        gc_params p = params_for(&all_configs[c], 0);
        memset(zero, 0, n * sizeof(float));
        payload a = encode(all_configs[c].codec, &p, g, NULL, n, 5);
        payload b = encode(all_configs[c].codec, &p, g, zero, n, 5);
        cr_assert_eq(a.len, b.len, "%s", all_configs[c].codec);
        cr_assert(memcmp(a.data, b.data, a.len) == 0, "%s", all_configs[c].codec);
        free(a.data);
        free(b.data);
    }
    free(g);
    free(zero);
}

Test(quant, buckets_that_do_not_divide_n_round_trip)
{
    const size_t n = 1000;
    const size_t buckets[] = {1, 3, 7, 9, 333, 999, 1001, (size_t)1 << 31};
    float *g = test_alloc(n), *r = test_alloc(n), *v = test_alloc(n), *out = test_alloc(n);
    fill_laplace(g, n, 1.0, 9);
    for (size_t c = 0; c < CONFIG_COUNT; c++) {
        for (size_t k = 0; k < sizeof buckets / sizeof buckets[0]; k++) {
            gc_params p = params_for(&all_configs[c], buckets[k]);
            fill_laplace(r, n, 0.1, 10 + k);
            for (size_t i = 0; i < n; i++) v[i] = g[i] + r[i];
            payload pl = encode(all_configs[c].codec, &p, g, r, n, 2);
            decode(&pl, out, n);
            for (size_t i = 0; i < n; i++)
                cr_assert_leq(fabs((double)out[i] + r[i] - v[i]), 0x1p-24 * fabs((double)r[i]),
                              "%s bucket=%zu i=%zu", all_configs[c].codec, buckets[k], i);
            free(pl.data);
        }
    }
    free(g);
    free(r);
    free(v);
    free(out);
}

Test(quant, same_seed_gives_identical_payloads_and_only_stochastic_codecs_use_it)
{
    const size_t n = 1000;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 12);
    for (size_t c = 0; c < CONFIG_COUNT; c++) {
        const char *name = all_configs[c].codec;
        gc_params p = params_for(&all_configs[c], 0);
        payload a = encode(name, &p, g, NULL, n, 42);
        payload b = encode(name, &p, g, NULL, n, 42);
        payload d = encode(name, &p, g, NULL, n, 43);
        cr_assert(a.len == b.len && memcmp(a.data, b.data, a.len) == 0, "%s", name);
        bool same = a.len == d.len && memcmp(a.data, d.data, a.len) == 0;
        bool stochastic = gc_codec_flags(gc_codec_by_name(name)) & GC_STOCHASTIC;
        cr_assert_eq(same, !stochastic, "%s: seeds 42 and 43 %s", name,
                     same ? "gave the same payload" : "gave different payloads");
        free(a.data);
        free(b.data);
        free(d.data);
    }
    free(g);
}

Test(quant, bad_parameters_are_refused_with_a_message)
{
    char msg[160];
    gc_params p;
    const gc_codec *qsgd = gc_codec_by_name("qsgd");
    const unsigned bad_bits[] = {1, 9};
    for (size_t k = 0; k < 2; k++) {
        gc_params_default(&p);
        p.bits = bad_bits[k];
        size_t r = gc_params_check(qsgd, &p, msg, sizeof msg);
        cr_assert_eq(gc_error_code(r), GC_ERR_PARAM);
        char want[160];
        snprintf(want, sizeof want, "bits=%u is out of range; expected an integer in [2, 8]",
                 bad_bits[k]);
        cr_assert_str_eq(msg, want);
        float g[4] = {1, 2, 3, 4};
        uint8_t buf[256];
        cr_assert_eq(gc_error_code(gc_encode(qsgd, g, NULL, 4, &p, 0, buf, sizeof buf, NULL)),
                     GC_ERR_PARAM);
        cr_assert(gc_is_error(gc_bound(qsgd, 4, &p)));
    }
    for (size_t c = 0; c < BUCKETED_COUNT; c++) {
        gc_params_default(&p);
        p.bucket = 0;
        size_t r = gc_params_check(gc_codec_by_name(bucketed[c]), &p, msg, sizeof msg);
        cr_assert_eq(gc_error_code(r), GC_ERR_PARAM, "%s", bucketed[c]);
        cr_assert_str_eq(msg, "bucket=0 is out of range; expected an integer in [1, 2^31]");
    }
    /* fp16 and bf16 have no parameters to refuse. */
    gc_params_default(&p);
    p.bucket = 0;
    p.bits = 0;
    cr_assert_eq(gc_params_check(gc_codec_by_name("fp16"), &p, msg, sizeof msg), 0u);
    cr_assert_eq(gc_params_check(gc_codec_by_name("bf16"), &p, msg, sizeof msg), 0u);
}

Test(quant, small_destination_is_refused_and_leaves_the_residual_alone)
{
    const size_t n = 1000;
    float *g = test_alloc(n), *r = test_alloc(n), *r0 = test_alloc(n);
    fill_laplace(g, n, 1.0, 13);
    fill_laplace(r0, n, 0.1, 14);
    for (size_t c = 0; c < CONFIG_COUNT; c++) {
        const gc_codec *codec = gc_codec_by_name(all_configs[c].codec);
        gc_params p = params_for(&all_configs[c], 0);
        size_t cap = gc_bound(codec, n, &p) - 1;
        uint8_t *buf = malloc(cap);
        memcpy(r, r0, n * sizeof(float));
        size_t len = gc_encode(codec, g, r, n, &p, 0, buf, cap, NULL);
        cr_assert_eq(gc_error_code(len), GC_ERR_DST_TOO_SMALL, "%s", all_configs[c].codec);
        cr_assert(memcmp(r, r0, n * sizeof(float)) == 0, "%s", all_configs[c].codec);
        free(buf);
    }
    free(g);
    free(r);
    free(r0);
}

Test(quant, truncated_body_is_an_error_and_trailing_bytes_are_corrupt)
{
    const size_t n = 1000;
    float *g = test_alloc(n), *out = test_alloc(n);
    fill_laplace(g, n, 1.0, 15);
    for (size_t c = 0; c < CONFIG_COUNT; c++) {
        gc_params p = params_for(&all_configs[c], 0);
        payload pl = encode(all_configs[c].codec, &p, g, NULL, n, 4);
        size_t body = pl.len - GC_HEADER_SIZE;
        for (size_t cut = 0; cut < body; cut += cut < 64 ? 1 : 61) {
            size_t r = decode_resized(&pl, cut, out, n);
            cr_assert_eq(gc_error_code(r), GC_ERR_TRUNCATED, "%s bits=%u flags=%#x cut %zu of %zu: %s",
                         all_configs[c].codec, p.bits, p.flags, cut, body, gc_error_name(r));
        }
        cr_assert_eq(gc_error_code(decode_resized(&pl, body + 1, out, n)), GC_ERR_CORRUPT,
                     "%s bits=%u: trailing byte", all_configs[c].codec, p.bits);
        free(pl.data);
    }
    free(g);
    free(out);
}

/* Decode a payload of n elements whose body bytes at[k] are set to
 * value[k]. */
static size_t decode_with_bytes(const char *codec, const gc_params *p, size_t n,
                                const size_t *at, const uint8_t *value, size_t count)
{
    float *g = test_alloc(n), *out = test_alloc(n);
    fill_laplace(g, n, 1.0, 16);
    payload pl = encode(codec, p, g, NULL, n, 1);
    for (size_t k = 0; k < count; k++) {
        cr_assert_lt(GC_HEADER_SIZE + at[k], pl.len);
        pl.data[GC_HEADER_SIZE + at[k]] = value[k];
    }
    size_t r = gc_decode_add(pl.data, pl.len, out, n, NULL);
    free(pl.data);
    free(g);
    free(out);
    return r;
}

static size_t decode_with_byte(const char *codec, const gc_params *p, size_t n, size_t at,
                               uint8_t value)
{
    return decode_with_bytes(codec, p, n, &at, &value, 1);
}

Test(quant, malformed_fields_are_corrupt)
{
    gc_params p;
    gc_params_default(&p);
    p.bucket = 8;
    /* Bucket field 0 (its low byte; the default-sized field is 8). */
    for (size_t c = 0; c < BUCKETED_COUNT; c++)
        cr_assert_eq(gc_error_code(decode_with_byte(bucketed[c], &p, 100, 0, 0)), GC_ERR_CORRUPT,
                     "%s", bucketed[c]);
    /* qsgd: bits outside [2, 8], unknown coding. */
    cr_assert_eq(gc_error_code(decode_with_byte("qsgd", &p, 100, 4, 1)), GC_ERR_CORRUPT);
    cr_assert_eq(gc_error_code(decode_with_byte("qsgd", &p, 100, 4, 9)), GC_ERR_CORRUPT);
    cr_assert_eq(gc_error_code(decode_with_byte("qsgd", &p, 100, 5, 2)), GC_ERR_CORRUPT);
    /* int8: code -128 (body: bucket, 13 scales, codes). */
    cr_assert_eq(gc_error_code(decode_with_byte("int8", &p, 100, 4 + 4 * 13 + 5, 0x80)),
                 GC_ERR_CORRUPT);
    /* natural: exponent 0 or 255; a code below the bucket's range; a
     * signed zero. Body: bucket, 13 exponents, codes. */
    cr_assert_eq(gc_error_code(decode_with_byte("natural", &p, 100, 4, 0)), GC_ERR_CORRUPT);
    cr_assert_eq(gc_error_code(decode_with_byte("natural", &p, 100, 4, 255)), GC_ERR_CORRUPT);
    /* E = 10 allows codes 118..127 (2^-126 and up); code 117 is below. */
    const size_t at[2] = {4, 4 + 13};
    const uint8_t low[2] = {10, 117}, lowest[2] = {10, 118};
    cr_assert_eq(gc_error_code(decode_with_bytes("natural", &p, 100, at, low, 2)), GC_ERR_CORRUPT);
    cr_assert(!gc_is_error(decode_with_bytes("natural", &p, 100, at, lowest, 2)));
    cr_assert(!gc_is_error(decode_with_byte("natural", &p, 100, 4, 130)));
    cr_assert_eq(gc_error_code(decode_with_byte("natural", &p, 100, 4 + 13, 128)), GC_ERR_CORRUPT);
    /* Padding bits of bit planes: n = 7 is one bucket, one byte per plane,
     * whose bit 7 is element 7, past the end. */
    const char *planar[] = {"qsgd", "terngrad", "sign", "onebit"};
    const size_t first_plane[] = {6 + 4, 4 + 4, 4 + 4, 4 + 8};
    for (size_t c = 0; c < 4; c++)
        cr_assert_eq(gc_error_code(decode_with_byte(planar[c], &p, 7, first_plane[c], 0x80)),
                     GC_ERR_CORRUPT, "%s", planar[c]);
    /* Elias gamma (body: bucket, bits, coding, 13 norms, segment size,
     * no sync point for one segment, the stream): a run of b zeros inside
     * the stream, a segment size of 0. */
    p.flags |= GC_PF_QSGD_ELIAS;
    const size_t seg_at = 6 + 4 * 13, stream_at = seg_at + 4;
    cr_assert_eq(gc_error_code(decode_with_byte("qsgd", &p, 100, stream_at, 0)), GC_ERR_CORRUPT);
    const size_t seg_bytes[4] = {seg_at, seg_at + 1, seg_at + 2, seg_at + 3};
    const uint8_t zeros[4] = {0};
    cr_assert_eq(gc_error_code(decode_with_bytes("qsgd", &p, 100, seg_bytes, zeros, 4)),
                 GC_ERR_CORRUPT);
}

/* A qsgd payload of n elements (at most 80) in one bucket of `bucket`,
 * 2 bits, Elias coding, norm `norm`, whose stream is stream[0..bytes):
 * the header, bucket, bits, coding, the norm, the segment size (one
 * segment: no sync point), the stream. */
static payload elias_by_hand(size_t n, uint32_t bucket, float norm, const uint8_t *stream,
                             size_t bytes)
{
    gc_params p;
    gc_params_default(&p);
    p.bucket = bucket;
    p.bits = 2;
    p.flags = GC_PF_QSGD_ELIAS;
    float zeros[80] = {0};
    cr_assert_leq(n, 80);
    payload made = encode("qsgd", &p, zeros, NULL, n, 1);
    payload pl = {calloc(1, GC_HEADER_SIZE + 14 + bytes), GC_HEADER_SIZE + 14 + bytes};
    memcpy(pl.data, made.data, GC_HEADER_SIZE);
    free(made.data);
    uint8_t *b = pl.data + GC_HEADER_SIZE;
    gc_put_u32(b, bucket);
    b[4] = 2;
    b[5] = 1;
    gc_put_f32(b + 6, norm);
    gc_put_u32(b + 10, (4096 + bucket - 1) / bucket);
    memcpy(b + 14, stream, bytes);
    gc_put_u64(pl.data + 16, pl.len);
    return pl;
}

/* A hand-made Elias body whose last code's sign bit is the stream's only
 * bit in its last byte: n = 3, bits = 2 (s = 1), levels +1, 0, -1 are
 * 0100, 1, 0101 in stream order (Elias gamma of level + 1, then the sign),
 * nine bits. Cut to its first byte, the stream ends inside that code:
 * TRUNCATED, not a body that ends too early. */
Test(qsgd, elias_sign_bit_past_the_end_is_truncated)
{
    const uint8_t stream[2] = {0x52, 0x01};  /* 0100 1 010 | 1, LSB first */
    payload pl = elias_by_hand(3, 3, 2.0f, stream, 2);  /* step 2 / s = 2 */
    float out[3] = {0};
    cr_assert(!gc_is_error(gc_decode_add(pl.data, pl.len, out, 3, NULL)));
    cr_assert_eq(out[0], 2.0f);
    cr_assert_eq(out[1], 0.0f);
    cr_assert_eq(out[2], -2.0f);
    cr_assert_eq(gc_error_code(decode_resized(&pl, pl.len - GC_HEADER_SIZE - 1, out, 3)),
                 GC_ERR_TRUNCATED);
    free(pl.data);
}

/* A level above s (bits = 2: s = 1; the code 011 is level 2) is CORRUPT,
 * first among 80 codes (read from a whole 8-byte window) and alone (read
 * near the end of the stream). */
Test(qsgd, elias_level_above_s_is_corrupt)
{
    float out[80] = {0};
    for (size_t n = 1; n <= 80; n += 79) {
        /* 011, then n ones: enough for the rest if 011 took a sign bit. */
        uint8_t stream[11] = {0x06};
        for (size_t i = 1; i <= n; i++) stream[(i + 2) / 8] |= (uint8_t)(1u << ((i + 2) % 8));
        payload pl = elias_by_hand(n, 80, 1.0f, stream, (3 + n + 7) / 8);
        cr_assert_eq(gc_error_code(gc_decode_add(pl.data, pl.len, out, n, NULL)), GC_ERR_CORRUPT,
                     "n=%zu", n);
        free(pl.data);
    }
}

/* A qsgd Elias body of several segments (sync_points.h): 9000 elements in
 * buckets of 64, segments of 64 buckets, so three segments and two sync
 * points. The body decodes (the decoder checks that each segment starts
 * at its point); either point one bit off is CORRUPT; every cut of the
 * body is TRUNCATED. */
Test(qsgd, elias_sync_points_mark_the_segments)
{
    const size_t n = 9000, nb = (n + 63) / 64;
    float *g = test_alloc(n), *out = test_alloc(n);
    fill_laplace(g, n, 1.0, 17);
    gc_params p;
    gc_params_default(&p);
    p.bucket = 64;
    p.bits = 3;
    p.flags = GC_PF_QSGD_ELIAS;
    payload pl = encode("qsgd", &p, g, NULL, n, 8);
    const uint8_t *body = pl.data + GC_HEADER_SIZE;
    const size_t seg_at = 6 + 4 * nb, sync_at = seg_at + 4;
    cr_assert_eq(gc_get_u32(body + seg_at), 64u);
    cr_assert(!gc_is_error(gc_decode_add(pl.data, pl.len, out, n, NULL)));
    for (size_t j = 0; j < 2; j++)
    for (int delta = -1; delta <= 1; delta += 2) {
        const uint64_t v = gc_get_u64(body + sync_at + 8 * j) + (uint64_t)(int64_t)delta;
        payload bad = {malloc(pl.len), pl.len};
        memcpy(bad.data, pl.data, pl.len);
        gc_put_u64(bad.data + GC_HEADER_SIZE + sync_at + 8 * j, v);
        cr_assert_eq(gc_error_code(gc_decode_add(bad.data, bad.len, out, n, NULL)), GC_ERR_CORRUPT,
                     "point %zu, delta %d", j, delta);
        free(bad.data);
    }
    size_t body_len = pl.len - GC_HEADER_SIZE;
    for (size_t cut = 0; cut < body_len; cut++)
        cr_assert_eq(gc_error_code(decode_resized(&pl, cut, out, n)), GC_ERR_TRUNCATED,
                     "cut at %zu of %zu", cut, body_len);
    cr_assert(!gc_is_error(decode_resized(&pl, body_len, out, n)));
    free(pl.data); free(g); free(out);
}

/* ---- fp16 ----------------------------------------------------------------------- */

/* Every finite half as a float (exact), in half order. */
static size_t every_finite_half(float *out)
{
    size_t k = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7C00u) == 0x7C00u) continue;
        uint16_t u = (uint16_t)h;
        gc_f16_decode_portable(&u, &out[k++], 1);
    }
    return k;
}

Test(fp16, portable_conversion_rounds_to_nearest_even_and_overflows_to_infinity)
{
    struct { float in; uint16_t want; } cases[] = {
        {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3C00}, {-2.0f, 0xC000},
        {1.0f + 0x1p-11f, 0x3C00},          /* tie, even stays */
        {1.0f + 3 * 0x1p-11f, 0x3C02},      /* tie, odd rounds up */
        {1.0f + 0x1p-11f + 0x1p-23f, 0x3C01},
        {65504.0f, 0x7BFF}, {65519.99f, 0x7BFF}, {65520.0f, 0x7C00}, {1e30f, 0x7C00},
        {-1e30f, 0xFC00}, {INFINITY, 0x7C00}, {-INFINITY, 0xFC00},
        {0x1p-14f, 0x0400},                 /* smallest normal */
        {0x1p-24f, 0x0001},                 /* smallest subnormal */
        {0x1p-25f, 0x0000},                 /* tie between 0 and 2^-24: even */
        {3 * 0x1p-25f, 0x0002},             /* tie between 1 and 2 units: even */
        {0x1p-25f + 0x1p-40f, 0x0001},
        {1e-30f, 0x0000}, {-1e-40f, 0x8000},  /* a float subnormal */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint16_t h;
        gc_f16_encode_portable(&cases[k].in, &h, 1);
        cr_assert_eq(h, cases[k].want, "%a -> 0x%04x, want 0x%04x", (double)cases[k].in, h,
                     cases[k].want);
    }
    /* A NaN stays a NaN, quiet, with its sign and top payload bits. */
    float nan_in = float_of(0xFF812345u); /* signalling, payload 0x012345 */
    uint16_t h;
    gc_f16_encode_portable(&nan_in, &h, 1);
    cr_assert_eq(h, 0xFE00u | (0x012345u >> 13));
}

Test(fp16, f16c_and_portable_agree_on_every_half)
{
    if (!gc_f16c_available()) cr_skip_test("no F16C on this CPU");
    uint16_t *h = malloc(0x10000 * sizeof(uint16_t));
    float *a = test_alloc(0x10000), *b = test_alloc(0x10000);
    for (uint32_t i = 0; i < 0x10000; i++) h[i] = (uint16_t)i;
    gc_f16_decode_portable(h, a, 0x10000);
    gc_f16_decode_f16c(h, b, 0x10000);
    for (uint32_t i = 0; i < 0x10000; i++)
        cr_assert_eq(bits_of(a[i]), bits_of(b[i]), "half 0x%04x: portable %08x, F16C %08x", i,
                     bits_of(a[i]), bits_of(b[i]));
    free(h);
    free(a);
    free(b);
}

Test(fp16, f16c_and_portable_agree_on_special_and_boundary_floats)
{
    if (!gc_f16c_available()) cr_skip_test("no F16C on this CPU");
    size_t cap = 6 * 0x10000 + 64 + (1u << 20);
    float *in = test_alloc(cap);
    size_t n = every_finite_half(in);
    /* Midpoints between neighbouring halves (ties) and a float ulp around them. */
    size_t halves = n;
    for (size_t k = 0; k + 1 < halves; k++) {
        float mid = (float)(((double)in[k] + (double)in[k + 1]) / 2);
        in[n++] = mid;
        in[n++] = nextafterf(mid, INFINITY);
        in[n++] = nextafterf(mid, -INFINITY);
    }
    const uint32_t specials[] = {
        0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF812345u,
        0x7FBFFFFFu, 0x7FFFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x00000001u, 0x807FFFFFu,
        0x00400000u, 0x477FEFFFu, 0x477FF000u, 0x477FF001u, 0x47800000u, 0x33000000u,
        0x33000001u, 0xB3000000u, 0x387FE000u, 0x387FF000u, 0x38800000u,
    };
    for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) in[n++] = float_of(specials[k]);
    /* Random bit patterns: every exponent, sign and payload. */
    uint64_t s = 99;
    for (size_t k = 0; k < (1u << 20); k++) in[n++] = float_of((uint32_t)test_rng_next(&s));
    cr_assert_leq(n, cap);
    uint16_t *a = malloc(n * sizeof(uint16_t)), *b = malloc(n * sizeof(uint16_t));
    gc_f16_encode_portable(in, a, n);
    gc_f16_encode_f16c(in, b, n);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(a[k], b[k], "float %08x: portable 0x%04x, F16C 0x%04x", bits_of(in[k]), a[k],
                     b[k]);
    free(in);
    free(a);
    free(b);
}

Test(fp16, relative_error_is_at_most_2_pow_minus_11_and_halves_are_exact)
{
    gc_params p;
    gc_params_default(&p);
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 30 + s);
        roundtrip("fp16", &p, g, n, 0, out);
        for (size_t i = 0; i < n; i++) {
            double v = g[i], err = fabs((double)out[i] - v);
            if (fabs(v) >= 0x1p-14) /* normal range of halves */
                cr_assert_leq(err, 0x1p-11 * fabs(v), "%a -> %a", v, (double)out[i]);
            else /* subnormal halves: half a step of 2^-24 */
                cr_assert_leq(err, 0x1p-25, "%a -> %a", v, (double)out[i]);
        }
        free(g);
        free(out);
    }
    float *h = test_alloc(0x10000), *out = test_alloc(0x10000);
    size_t n = every_finite_half(h);
    roundtrip("fp16", &p, h, n, 0, out);
    for (size_t i = 0; i < n; i++) cr_assert_eq(out[i], h[i], "%a -> %a", (double)h[i], (double)out[i]);
    free(h);
    free(out);
}

Test(fp16, overflow_sends_infinity_and_keeps_the_residual_finite)
{
    float g[9] = {1e6f, -1e6f, 65520.0f, 65504.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
    float r[9] = {0}, out[9];
    gc_params p;
    gc_params_default(&p);
    payload pl = encode("fp16", &p, g, r, 9, 0);
    decode(&pl, out, 9);
    cr_assert(isinf(out[0]) && out[0] > 0);
    cr_assert(isinf(out[1]) && out[1] < 0);
    cr_assert(isinf(out[2]));
    cr_assert_eq(out[3], 65504.0f);
    for (size_t i = 0; i < 9; i++) cr_assert(isfinite(r[i]), "r[%zu] = %g", i, (double)r[i]);
    cr_assert_eq(r[0], 0.0f);
    free(pl.data);
}

/* ---- bf16 ----------------------------------------------------------------------- */

Test(bf16, rounds_to_nearest_even_and_overflows_to_inf)
{
    struct { uint32_t in; uint16_t want; } cases[] = {
        {0x3F800000u, 0x3F80}, {0x3F808000u, 0x3F80}, /* tie, even stays */
        {0x3F818000u, 0x3F82},                        /* tie, odd rounds up */
        {0x3F808001u, 0x3F81}, {0x80000000u, 0x8000},
        {0x7F7FFFFFu, 0x7F80},                        /* past the largest: inf */
        {0x00000001u, 0x0000},
    };
    gc_params p;
    gc_params_default(&p);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        float g = float_of(cases[k].in);
        payload pl = encode("bf16", &p, &g, NULL, 1, 0);
        uint16_t h = gc_get_u16(pl.data + GC_HEADER_SIZE);
        cr_assert_eq(h, cases[k].want, "%08x -> %04x, want %04x", cases[k].in, h, cases[k].want);
        free(pl.data);
    }
    /* inf and NaN inputs: test_nonfinite.c (a flagged payload). */
}

Test(bf16, relative_error_is_at_most_2_pow_minus_8_and_representable_values_are_exact)
{
    gc_params p;
    gc_params_default(&p);
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 40 + s);
        roundtrip("bf16", &p, g, n, 0, out);
        for (size_t i = 0; i < n; i++)
            cr_assert_leq(fabs((double)out[i] - g[i]), 0x1p-8 * fabs((double)g[i]), "%a -> %a",
                          (double)g[i], (double)out[i]);
        /* Clearing the low 16 bits makes a bf16 value: sent exactly. */
        for (size_t i = 0; i < n; i++) g[i] = float_of(bits_of(g[i]) & 0xFFFF0000u);
        roundtrip("bf16", &p, g, n, 0, out);
        for (size_t i = 0; i < n; i++) cr_assert_eq(out[i], g[i]);
        free(g);
        free(out);
    }
}

/* ---- int8 ----------------------------------------------------------------------- */

Test(int8, error_is_at_most_half_a_step)
{
    const size_t buckets[] = {1, 7, 512, 1000};
    gc_params p;
    gc_params_default(&p);
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 50 + s);
        for (size_t k = 0; k < 4; k++) {
            p.bucket = buckets[k];
            roundtrip("int8", &p, g, n, 0, out);
            for (size_t b = 0; b * p.bucket < n; b++) {
                size_t i0 = b * p.bucket, len = bucket_len(n, p.bucket, b);
                double amax = bucket_absmax(g + i0, len), step = amax / 127;
                for (size_t i = i0; i < i0 + len; i++)
                    cr_assert_leq(fabs((double)out[i] - g[i]), step / 2 + 0x1p-21 * amax,
                                  "n=%zu bucket=%zu i=%zu: %a -> %a, step %a", n, p.bucket, i,
                                  (double)g[i], (double)out[i], step);
            }
        }
        free(g);
        free(out);
    }
}

Test(int8, zero_bucket_decodes_to_zero_and_steps_round_to_even)
{
    /* Second bucket: max |v| = 127/64, so the step is 1/64 exactly. */
    const float units[8] = {-127, -64, -1, 0, 2.5f, 3.5f, 100, 126.5f};
    const float want[8] = {-127, -64, -1, 0, 2, 4, 100, 126};
    float g[16] = {0}, out[16];
    for (size_t i = 0; i < 8; i++) g[8 + i] = units[i] / 64;
    gc_params p;
    gc_params_default(&p);
    p.bucket = 8;
    roundtrip("int8", &p, g, 16, 0, out);
    for (size_t i = 0; i < 8; i++) cr_assert_eq(out[i], 0.0f);
    for (size_t i = 0; i < 8; i++)
        cr_assert_eq(out[8 + i], want[i] / 64, "%g/64 -> %g/64", (double)units[i],
                     (double)out[8 + i] * 64);
}

/* ---- qsgd ----------------------------------------------------------------------- */

Test(qsgd, error_is_below_one_level_for_every_width)
{
    for (unsigned bits = 2; bits <= 8; bits++) {
        for (unsigned elias = 0; elias < 2; elias++) {
            gc_params p;
            gc_params_default(&p);
            p.bits = bits;
            p.bucket = 100;
            p.flags = elias ? GC_PF_QSGD_ELIAS : 0;
            for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
                size_t n = test_sizes[s];
                if (n > 1000 && bits != 4) continue; /* one large size per coding */
                float *g = test_alloc(n), *out = test_alloc(n);
                fill_laplace(g, n, 1.0, 60 + s);
                roundtrip("qsgd", &p, g, n, bits, out);
                double levels = (double)((1u << (bits - 1)) - 1);
                for (size_t b = 0; b * p.bucket < n; b++) {
                    size_t i0 = b * p.bucket, len = bucket_len(n, p.bucket, b);
                    double step = bucket_l2(g + i0, len) / levels;
                    for (size_t i = i0; i < i0 + len; i++) {
                        cr_assert_leq(fabs((double)out[i] - g[i]), step * (1 + 1e-6),
                                      "bits=%u elias=%u i=%zu", bits, elias, i);
                        double level = fabs((double)out[i]) / step;
                        cr_assert_leq(fabs(level - round(level)), 1e-4, "not on a level");
                    }
                }
                free(g);
                free(out);
            }
        }
    }
}

Test(qsgd, elias_and_fixed_width_decode_to_the_same_values)
{
    const size_t n = 5000;
    float *g = test_alloc(n), *a = test_alloc(n), *b = test_alloc(n);
    fill_laplace(g, n, 1.0, 61);
    for (unsigned bits = 2; bits <= 8; bits++) {
        gc_params p;
        gc_params_default(&p);
        p.bits = bits;
        size_t fixed = roundtrip("qsgd", &p, g, n, 77, a);
        p.flags = GC_PF_QSGD_ELIAS;
        size_t elias = roundtrip("qsgd", &p, g, n, 77, b);
        cr_assert(memcmp(a, b, n * sizeof(float)) == 0, "bits=%u", bits);
        /* Small levels are common at 4 bits and fewer: gamma codes are short. */
        if (bits <= 4) cr_assert_lt(elias, fixed, "bits=%u: Elias %zu, fixed %zu", bits, elias, fixed);
    }
    free(g);
    free(a);
    free(b);
}

/* Mean of `seeds` decodes of g; asserts that it is within 5 standard
 * deviations of g, where gap[i] bounds the distance between the two values
 * element i can round to (variance <= gap^2 / 4). A bias too small to see
 * in one element shows in the sum over all of them of the error towards
 * |g|, in units of gap: a sum of n terms of deviation <= 1/(2 sqrt(seeds)),
 * also held to 5 standard deviations. */
static void assert_unbiased(const char *codec, const gc_params *p, const float *g,
                            const double *gap, size_t n, unsigned seeds)
{
    double *mean = calloc(n, sizeof(double));
    float *out = test_alloc(n);
    for (unsigned s = 0; s < seeds; s++) {
        roundtrip(codec, p, g, n, 1000 + s, out);
        for (size_t i = 0; i < n; i++) mean[i] += (double)out[i] / seeds;
    }
    double outward = 0;
    for (size_t i = 0; i < n; i++) {
        double sigma = gap[i] / 2 / sqrt((double)seeds);
        cr_assert_leq(fabs(mean[i] - g[i]), 5 * sigma + 1e-12 * fabs((double)g[i]),
                      "%s bits=%u flags=%u: element %zu, mean %g of %g (sigma %g)", codec,
                      p->bits, p->flags, i, mean[i], (double)g[i], sigma);
        outward += copysign(1.0, (double)g[i]) * (mean[i] - g[i]) / gap[i];
    }
    double sigma_sum = sqrt((double)n) / 2 / sqrt((double)seeds);
    cr_assert_leq(fabs(outward), 5 * sigma_sum, "%s bits=%u flags=%u: summed bias %g (sigma %g)",
                  codec, p->bits, p->flags, outward, sigma_sum);
    free(mean);
    free(out);
}

Test(qsgd, is_unbiased)
{
    const size_t n = 256;
    float *g = test_alloc(n);
    double *gap = calloc(n, sizeof(double));
    fill_laplace(g, n, 1.0, 62);
    const struct { unsigned bits, flags; } cases[] = {
        {2, 0}, {4, 0}, {8, 0}, {4, GC_PF_QSGD_ELIAS}, {3, GC_PF_QSGD_ELIAS}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gc_params p;
        gc_params_default(&p);
        p.bits = cases[k].bits;
        p.flags = cases[k].flags;
        p.bucket = 64;
        for (size_t i = 0; i < n; i++)
            gap[i] = bucket_l2(g + i / 64 * 64, 64) / ((1u << (p.bits - 1)) - 1);
        assert_unbiased("qsgd", &p, g, gap, n, 200);
    }
    free(g);
    free(gap);
}

/* ---- terngrad --------------------------------------------------------------------- */

Test(terngrad, sends_zero_or_the_bucket_maximum_with_the_sign_of_v)
{
    gc_params p;
    gc_params_default(&p);
    p.bucket = 300;
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 70 + s);
        roundtrip("terngrad", &p, g, n, 5, out);
        for (size_t b = 0; b * p.bucket < n; b++) {
            size_t i0 = b * p.bucket, len = bucket_len(n, p.bucket, b);
            float smax = (float)bucket_absmax(g + i0, len);
            for (size_t i = i0; i < i0 + len; i++) {
                cr_assert(out[i] == 0.0f || fabsf(out[i]) == smax, "i=%zu: %g, max %g", i,
                          (double)out[i], (double)smax);
                if (out[i] != 0.0f) cr_assert_eq(signbit(out[i]), signbit(g[i]));
            }
        }
        free(g);
        free(out);
    }
}

Test(terngrad, is_unbiased)
{
    const size_t n = 256;
    float *g = test_alloc(n);
    double *gap = calloc(n, sizeof(double));
    fill_laplace(g, n, 1.0, 71);
    gc_params p;
    gc_params_default(&p);
    p.bucket = 64;
    for (size_t i = 0; i < n; i++) gap[i] = bucket_absmax(g + i / 64 * 64, 64);
    assert_unbiased("terngrad", &p, g, gap, n, 200);
    free(g);
    free(gap);
}

/* ---- sign and onebit --------------------------------------------------------------- */

Test(sign, keeps_every_sign_and_scales_by_the_mean_magnitude)
{
    const size_t buckets[] = {7, 512};
    gc_params p;
    gc_params_default(&p);
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 80 + s);
        for (size_t k = 0; k < 2; k++) {
            p.bucket = buckets[k];
            roundtrip("sign", &p, g, n, 0, out);
            for (size_t b = 0; b * p.bucket < n; b++) {
                size_t i0 = b * p.bucket, len = bucket_len(n, p.bucket, b);
                double l1 = 0;
                for (size_t i = i0; i < i0 + len; i++) l1 += fabs((double)g[i]);
                double scale = l1 / (double)len;
                for (size_t i = i0; i < i0 + len; i++) {
                    cr_assert_eq(signbit(out[i]), signbit(g[i]), "i=%zu", i);
                    cr_assert_leq(fabs(fabs((double)out[i]) - scale), 1e-6 * scale);
                }
            }
        }
        free(g);
        free(out);
    }
}

Test(onebit, keeps_every_sign_and_decodes_to_the_mean_of_its_part)
{
    const size_t buckets[] = {7, 512};
    gc_params p;
    gc_params_default(&p);
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 90 + s);
        for (size_t k = 0; k < 2; k++) {
            p.bucket = buckets[k];
            roundtrip("onebit", &p, g, n, 0, out);
            for (size_t b = 0; b * p.bucket < n; b++) {
                size_t i0 = b * p.bucket, len = bucket_len(n, p.bucket, b);
                double sum[2] = {0, 0};
                size_t count[2] = {0, 0};
                for (size_t i = i0; i < i0 + len; i++) {
                    sum[g[i] < 0] += g[i];
                    count[g[i] < 0]++;
                }
                for (size_t i = i0; i < i0 + len; i++) {
                    int part = g[i] < 0;
                    double mean = sum[part] / (double)count[part];
                    cr_assert_eq(signbit(out[i]), signbit(g[i]), "i=%zu", i);
                    cr_assert_leq(fabs((double)out[i] - mean), 1e-6 * fabs(mean), "i=%zu", i);
                }
            }
        }
        free(g);
        free(out);
    }
}

Test(onebit, a_bucket_of_one_sign_has_a_zero_mean_for_the_other)
{
    float g[4] = {1, 2, 3, 6}, out[4];
    gc_params p;
    gc_params_default(&p);
    payload pl = encode("onebit", &p, g, NULL, 4, 0);
    cr_assert_eq(gc_get_f32(pl.data + GC_HEADER_SIZE + 4), 3.0f);
    cr_assert_eq(gc_get_f32(pl.data + GC_HEADER_SIZE + 8), 0.0f);
    decode(&pl, out, 4);
    for (size_t i = 0; i < 4; i++) cr_assert_eq(out[i], 3.0f);
    free(pl.data);
}

/* ---- natural ----------------------------------------------------------------------- */

Test(natural, decodes_to_a_neighbouring_power_of_two_with_the_sign_of_v)
{
    gc_params p;
    gc_params_default(&p);
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 100 + s);
        roundtrip("natural", &p, g, n, 9, out);
        for (size_t i = 0; i < n; i++) {
            cr_assert(is_power_of_two(out[i]), "%a -> %a", (double)g[i], (double)out[i]);
            cr_assert_eq(signbit(out[i]), signbit(g[i]));
            double lo = exp2(floor(log2(fabs((double)g[i]))));
            double a = fabs((double)out[i]);
            cr_assert(a == lo || a == 2 * lo, "%a -> %a", (double)g[i], (double)out[i]);
        }
        free(g);
        free(out);
    }
}

Test(natural, values_below_the_range_go_to_zero_or_the_smallest_power)
{
    /* Bucket max 1.0: E = 128, smallest power 2^(128 - 126 - 127) = 2^-125. */
    const size_t n = 4;
    float g[4] = {1.0f, 0x1p-140f, -1e-40f, 0x1p-125f};
    double hits[4] = {0};
    float out[4];
    gc_params p;
    gc_params_default(&p);
    for (unsigned s = 0; s < 400; s++) {
        roundtrip("natural", &p, g, n, s, out);
        for (size_t i = 1; i < 3; i++) {
            cr_assert(out[i] == 0.0f || fabsf(out[i]) == 0x1p-125f, "%a", (double)out[i]);
            hits[i] += out[i] != 0.0f;
        }
        cr_assert_eq(out[3], 0x1p-125f); /* exactly the smallest power */
        cr_assert(out[0] == 1.0f);
    }
    /* P(up) = 2^-15 for 2^-140: at most a few hits in 400 draws. */
    cr_assert_leq(hits[1], 3);
}

Test(natural, is_unbiased)
{
    const size_t n = 256;
    float *g = test_alloc(n);
    double *gap = calloc(n, sizeof(double));
    fill_laplace(g, n, 1.0, 101);
    /* The second bucket is below its range but for its max, 1.0: E = 128,
     * lo = 2, and the rest round to 0 or 2^-125 (float subnormals too). */
    g[64] = 1.0f;
    for (size_t i = 65; i < 128; i++) g[i] = (float)(i - 64) / 64 * ((i & 1) ? 0x1p-125f : -0x1p-125f);
    gc_params p;
    gc_params_default(&p);
    p.bucket = 64;
    for (size_t i = 0; i < n; i++) gap[i] = i > 64 && i < 128 ? 0x1p-125 : fabs((double)g[i]);
    assert_unbiased("natural", &p, g, gap, n, 200);
    free(g);
    free(gap);
}
