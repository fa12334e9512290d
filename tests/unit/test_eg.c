/* test_eg.c — the GCT Exp-Golomb codec: q = round(2^n v), zig-zag, order-k
 * Exp-Golomb codes with k per bucket (codecs/codec_eg.c for the layout).
 *
 * Bit strings below are written in stream order: the first character is
 * the first bit of the stream, which is bit 0 (the least significant) of
 * the first byte. */
#include "test_util.h"

#include "bitstream.h"
#include "expgolomb.h"

#include <stdio.h>

static const gc_codec *eg(void) { return gc_codec_by_name("eg"); }

static gc_params eg_params(int n_exp, int k, size_t bucket)
{
    gc_params p;
    gc_params_default(&p);
    p.eg_n = n_exp;
    p.eg_k = k;
    p.bucket = bucket;
    return p;
}

/* One encode with a workspace, so the report can be read. */
typedef struct encoded {
    uint8_t *buf;
    size_t len;
    gc_encode_report report;
} encoded;

static encoded encode_eg(const gc_params *p, const float *g, float *r, size_t n)
{
    encoded e;
    size_t cap = gc_bound(eg(), n, p);
    cr_assert(!gc_is_error(cap), "bound: %s", gc_error_name(cap));
    e.buf = malloc(cap);
    cr_assert_not_null(e.buf);
    gc_workspace *ws = gc_workspace_create();
    e.len = gc_encode(eg(), g, r, n, p, 1, e.buf, cap, ws);
    cr_assert(!gc_is_error(e.len), "encode n=%zu: %s", n, gc_error_name(e.len));
    e.report = *gc_workspace_report(ws);
    gc_workspace_free(ws);
    return e;
}

static void decode_eg(const encoded *e, float *out, size_t n)
{
    memset(out, 0, n * sizeof(float));
    size_t r = gc_decode_add(e->buf, e->len, out, n, NULL);
    cr_assert(!gc_is_error(r), "decode n=%zu: %s", n, gc_error_name(r));
}

/* ---- reference model, written independently of the codec ------------- */

static uint32_t ref_zigzag(long q) { return q >= 0 ? (uint32_t)(2 * q) : (uint32_t)(-2 * q - 1); }

static uint32_t ref_z(float v, int n_exp)
{
    double x = (double)v * ldexp(1.0, n_exp);
    return ref_zigzag((long)nearbyint(x)); /* ties to even in the default mode */
}

static unsigned ref_bit_length(uint64_t x)
{
    unsigned b = 0;
    while (x) { b++; x >>= 1; }
    return b;
}

/* Standard order-k Exp-Golomb length: x = z + 2^k, 2 bitlen(x) - 1 - k. */
static uint64_t ref_code_len(uint32_t z, unsigned k)
{
    return 2 * ref_bit_length((uint64_t)z + (1ull << k)) - 1 - k;
}

static uint64_t ref_bucket_bits(const float *v, size_t m, int n_exp, unsigned k)
{
    uint64_t bits = 5;
    for (size_t i = 0; i < m; i++) bits += ref_code_len(ref_z(v[i], n_exp), k);
    return bits;
}

/* The automatic order: the k with the shortest codes for the bucket's
 * sample, every s-th element with s = m / 64 (all of them below 128). */
static unsigned ref_auto_order(const float *v, size_t m, int n_exp)
{
    size_t stride = m >= 128 ? m / 64 : 1;
    uint64_t best = UINT64_MAX;
    unsigned best_k = 0;
    for (unsigned k = 0; k <= 30; k++) {
        uint64_t bits = 0;
        for (size_t i = 0; i < m; i += stride) bits += ref_code_len(ref_z(v[i], n_exp), k);
        if (bits < best) { best = bits; best_k = k; }
    }
    return best_k;
}

/* Stream bits with fixed k, or (k < 0) with the automatic k per bucket. */
static uint64_t ref_stream_bits(const float *v, size_t n, int n_exp, int k, size_t bucket)
{
    uint64_t bits = 0;
    for (size_t s = 0; s < n; s += bucket) {
        size_t m = n - s < bucket ? n - s : bucket;
        unsigned kk = k >= 0 ? (unsigned)k : ref_auto_order(v + s, m, n_exp);
        bits += ref_bucket_bits(v + s, m, n_exp, kk);
    }
    return bits;
}

/* The smallest stream any per-bucket k gives. */
static uint64_t ref_best_stream_bits(const float *v, size_t n, int n_exp, size_t bucket)
{
    uint64_t bits = 0;
    for (size_t s = 0; s < n; s += bucket) {
        size_t m = n - s < bucket ? n - s : bucket;
        uint64_t best = UINT64_MAX;
        for (unsigned k = 0; k <= 30; k++) {
            uint64_t b = ref_bucket_bits(v + s, m, n_exp, k);
            if (b < best) best = b;
        }
        bits += best;
    }
    return bits;
}

/* Pack a '0'/'1' string, first character first, LSB first in each byte. */
static size_t pack_bits(const char *bits, uint8_t *out, size_t cap)
{
    size_t nbits = strlen(bits), bytes = (nbits + 7) / 8;
    cr_assert_leq(bytes, cap);
    memset(out, 0, bytes);
    for (size_t i = 0; i < nbits; i++)
        if (bits[i] == '1') out[i / 8] |= (uint8_t)(1u << (i % 8));
    return bytes;
}

/* The segment size the encoder writes: ceil(4096 / bucket) buckets. */
static uint32_t ref_segment_buckets(uint32_t bucket)
{
    return bucket >= 4096 ? 1 : (4096 + bucket - 1) / bucket;
}

/* A payload around a hand-made body of one segment: header then n_exp,
 * bucket, the encoder's segment size (no sync points), stream. */
static size_t make_payload(uint8_t *buf, size_t cap, size_t n, int n_exp, uint32_t bucket,
                           const char *stream_bits)
{
    cr_assert_geq(cap, GC_HEADER_SIZE + 9);
    memset(buf, 0, GC_HEADER_SIZE);
    buf[0] = 'G'; buf[1] = 'C'; buf[2] = GC_FORMAT_VERSION; buf[3] = (uint8_t)gc_codec_id(eg());
    for (int i = 0; i < 8; i++) buf[8 + i] = (uint8_t)((uint64_t)n >> (8 * i));
    uint8_t *body = buf + GC_HEADER_SIZE;
    body[0] = (uint8_t)(int8_t)n_exp;
    uint32_t seg = bucket ? ref_segment_buckets(bucket) : 1;
    for (int i = 0; i < 4; i++) body[1 + i] = (uint8_t)(bucket >> (8 * i));
    for (int i = 0; i < 4; i++) body[5 + i] = (uint8_t)(seg >> (8 * i));
    size_t len = GC_HEADER_SIZE + 9 + pack_bits(stream_bits, body + 9, cap - GC_HEADER_SIZE - 9);
    for (int i = 0; i < 8; i++) buf[16 + i] = (uint8_t)((uint64_t)len >> (8 * i));
    return len;
}

static void set_length(uint8_t *buf, size_t len)
{
    for (int i = 0; i < 8; i++) buf[16 + i] = (uint8_t)((uint64_t)len >> (8 * i));
}

/* ---- the contract ------------------------------------------------------ */

Test(eg, error_is_at_most_half_a_step_on_every_size)
{
    const int n_exp = 10;
    for (int auto_k = 0; auto_k < 2; auto_k++) {
        gc_params p = eg_params(n_exp, auto_k ? GC_AUTO : 4, 512);
        for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
            size_t n = test_sizes[s];
            float *g = test_alloc(n), *out = test_alloc(n);
            fill_laplace(g, n, 0.05, 100 + s);
            encoded e = encode_eg(&p, g, NULL, n);
            decode_eg(&e, out, n);
            for (size_t i = 0; i < n; i++)
                cr_assert_leq(fabs((double)out[i] - g[i]), ldexp(1.0, -n_exp) / 2,
                              "n=%zu i=%zu: %g -> %g", n, i, g[i], out[i]);
            free(e.buf); free(g); free(out);
        }
    }
}

Test(eg, exact_multiples_of_the_step_are_lossless_with_fixed_and_auto_k)
{
    const int n_exp = 6;
    for (int auto_k = 0; auto_k < 2; auto_k++) {
        gc_params p = eg_params(n_exp, auto_k ? GC_AUTO : 3, 100);
        for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
            size_t n = test_sizes[s];
            float *g = test_alloc(n), *out = test_alloc(n);
            fill_laplace(g, n, 40.0, 200 + s);
            for (size_t i = 0; i < n; i++) g[i] = ldexpf(rintf(ldexpf(g[i], n_exp)), -n_exp);
            encoded e = encode_eg(&p, g, NULL, n);
            decode_eg(&e, out, n);
            /* Equal values; -0 comes back as +0 (q = 0 has no sign). */
            for (size_t i = 0; i < n; i++)
                cr_assert_eq(out[i], g[i], "n=%zu auto_k=%d i=%zu", n, auto_k, i);
            free(e.buf); free(g); free(out);
        }
    }
}

Test(eg, reported_code_bits_are_the_stream_length)
{
    for (int auto_k = 0; auto_k < 2; auto_k++) {
        for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
            size_t n = test_sizes[s], bucket = 333;
            gc_params p = eg_params(8, auto_k ? GC_AUTO : 2, bucket);
            float *g = test_alloc(n);
            fill_laplace(g, n, 0.1, 300 + s);
            encoded e = encode_eg(&p, g, NULL, n);
            uint64_t want = ref_stream_bits(g, n, 8, auto_k ? -1 : 2, bucket);
            double got = e.report.code_bits_per_element * (double)n;
            cr_assert_eq((uint64_t)llround(got), want, "n=%zu auto_k=%d: %.1f bits, want %llu",
                         n, auto_k, got, (unsigned long long)want);
            /* The body is n, bucket, segment size, a sync point per
             * segment after the first, and the stream padded to bytes. */
            size_t nb = (n + bucket - 1) / bucket, seg = ref_segment_buckets((uint32_t)bucket);
            size_t sync = nb ? 8 * ((nb - 1) / seg) : 0;
            cr_assert_eq(e.len, GC_HEADER_SIZE + 9 + sync + (want + 7) / 8, "n=%zu", n);
            cr_assert_eq(e.report.eg_n, 8);
            free(e.buf); free(g);
        }
    }
}

Test(eg, fixed_length_bits_match_the_widest_value_of_each_bucket)
{
    size_t n = 10007, bucket = 256;
    gc_params p = eg_params(9, GC_AUTO, bucket);
    float *g = test_alloc(n);
    fill_laplace(g, n, 0.02, 17);
    for (size_t i = 0; i < 256; i++) g[i] = 0.0f; /* an all-zero bucket costs 1 bit each */
    encoded e = encode_eg(&p, g, NULL, n);
    uint64_t want = 0;
    for (size_t s = 0; s < n; s += bucket) {
        size_t m = n - s < bucket ? n - s : bucket;
        uint32_t widest = 0;
        for (size_t i = 0; i < m; i++) {
            uint32_t z = ref_z(g[s + i], 9);
            if (z > widest) widest = z;
        }
        unsigned w = ref_bit_length(widest);
        want += m * (w ? w : 1);
    }
    cr_assert_eq((uint64_t)llround(e.report.fl_bits_per_element * (double)n), want);
    free(e.buf); free(g);
}

Test(eg, auto_order_is_shorter_than_order_zero_and_near_the_best_on_laplace_data)
{
    size_t n = 100000;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 23);
    gc_params pa = eg_params(GC_AUTO, GC_AUTO, 512), p0 = eg_params(GC_AUTO, 0, 512);
    encoded ea = encode_eg(&pa, g, NULL, n), e0 = encode_eg(&p0, g, NULL, n);
    cr_assert_lt(ea.report.code_bits_per_element, e0.report.code_bits_per_element);
    cr_assert_lt(ea.len, e0.len);
    /* The sampled k is within 1% of the best k of every bucket. */
    double best = (double)ref_best_stream_bits(g, n, ea.report.eg_n, 512) / (double)n;
    cr_assert_leq(ea.report.code_bits_per_element, best * 1.01, "%.4f vs best %.4f",
                  ea.report.code_bits_per_element, best);
    /* Laplace integers at 12-bit range: the code beats fixed length. */
    cr_assert_lt(ea.report.code_bits_per_element, ea.report.fl_bits_per_element);
    free(ea.buf); free(e0.buf); free(g);
}

Test(eg, auto_exponent_puts_the_largest_value_in_the_top_binade_of_2_to_12)
{
    float g[5] = {0.3f, -7.5f, 2.0f, 0.0f, 1e-3f};
    gc_params p = eg_params(GC_AUTO, GC_AUTO, 512);
    encoded e = encode_eg(&p, g, NULL, 5);
    double top = 7.5 * ldexp(1.0, e.report.eg_n);
    cr_assert(top >= 2048.0 && top < 4096.0, "n=%d gives %g", e.report.eg_n, top);
    free(e.buf);
}

Test(eg, all_zero_input_uses_one_bit_per_element)
{
    size_t n = 1000;
    float *g = test_alloc(n), *out = test_alloc(n);
    gc_params p = eg_params(GC_AUTO, GC_AUTO, 100);
    encoded e = encode_eg(&p, g, NULL, n);
    cr_assert_eq(e.report.eg_n, 0);
    cr_assert_eq((uint64_t)llround(e.report.code_bits_per_element * n), n + 5 * 10);
    decode_eg(&e, out, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(out[i], 0.0f);
    free(e.buf); free(g); free(out);
}

Test(eg, order_0_codes_match_hand_computed_bits)
{
    /* q = 0, -1, 1, -2, 2 zig-zag to 0, 1, 2, 3, 4. Order 0 codes:
     * 0 -> 1, 1 -> 010, 2 -> 011, 3 -> 00100, 4 -> 00110 (info bits LSB first). */
    float g[5] = {0, -1, 1, -2, 2};
    gc_params p = eg_params(0, 0, 5);
    encoded e = encode_eg(&p, g, NULL, 5);
    uint8_t want[64];
    size_t want_len = make_payload(want, sizeof want, 5, 0, 5,
                                   "00000" "1" "010" "011" "00100" "00110");
    cr_assert_eq(e.len, want_len);
    cr_assert(memcmp(e.buf + GC_HEADER_SIZE, want + GC_HEADER_SIZE, want_len - GC_HEADER_SIZE) == 0);
    free(e.buf);
}

Test(eg, order_2_codes_match_hand_computed_bits)
{
    /* z = 0, 3, 4, 9 with k = 2: x = 4, 7, 8, 13.
     * 4 = 100 -> 1 00; 7 = 111 -> 1 11; 8 = 1000 -> 0 1 000; 13 = 1101 -> 0 1 101
     * (info bits are x's low bits, least significant first). k = 2 is 01000. */
    float g[4] = {0, -2, 2, -5};
    gc_params p = eg_params(0, 2, 4);
    encoded e = encode_eg(&p, g, NULL, 4);
    uint8_t want[64];
    size_t want_len = make_payload(want, sizeof want, 4, 0, 4,
                                   "01000" "100" "111" "01000" "01101");
    cr_assert_eq(e.len, want_len);
    cr_assert(memcmp(e.buf + GC_HEADER_SIZE, want + GC_HEADER_SIZE, want_len - GC_HEADER_SIZE) == 0);
    free(e.buf);
}

Test(eg, residual_plus_decoded_is_the_input)
{
    size_t n = 5000;
    float *g = test_alloc(n), *r = test_alloc(n), *r0 = test_alloc(n), *out = test_alloc(n);
    fill_laplace(g, n, 1.0, 31);
    fill_laplace(r, n, 0.01, 32);
    memcpy(r0, r, n * sizeof(float));
    gc_params p = eg_params(GC_AUTO, GC_AUTO, 512);
    encoded e = encode_eg(&p, g, r, n);
    decode_eg(&e, out, n);
    /* v - 2^-n q is exact (Sterbenz), so the identity holds bit for bit. */
    for (size_t i = 0; i < n; i++) {
        float v = g[i] + r0[i];
        cr_assert_eq(out[i] + r[i], v, "i=%zu", i);
        cr_assert_leq(fabsf(r[i]), ldexpf(1.0f, -e.report.eg_n) / 2);
    }
    free(e.buf); free(g); free(r); free(r0); free(out);
}

Test(eg, huge_values_are_clamped_and_the_rest_stays_in_the_residual)
{
    /* (inf and NaN: test_nonfinite.c) */
    float g[4] = {1e30f, -1e30f, 3e38f, 0.5f}, r[4] = {0}, out[4];
    gc_params p = eg_params(20, GC_AUTO, 4);
    encoded e = encode_eg(&p, g, r, 4);
    decode_eg(&e, out, 4);
    cr_assert_eq(out[0], ldexpf(1.0f, 10));  /* 2^30 steps of 2^-20 */
    cr_assert_eq(out[1], -ldexpf(1.0f, 10));
    cr_assert_eq(out[2], ldexpf(1.0f, 10));
    cr_assert_eq(out[3], 0.5f);
    cr_assert_eq(r[0], 1e30f - ldexpf(1.0f, 10));
    cr_assert_eq(r[3], 0.0f);
    free(e.buf);
}

Test(eg, bad_parameters_are_named_with_their_range)
{
    char msg[200];
    gc_params p = eg_params(61, GC_AUTO, 512);
    cr_assert_eq(gc_error_code(gc_params_check(eg(), &p, msg, sizeof msg)), GC_ERR_PARAM);
    cr_assert_str_eq(msg, "eg_n=61 is out of range; expected an integer in [-60, 60] or auto");
    p = eg_params(GC_AUTO, 31, 512);
    cr_assert_eq(gc_error_code(gc_params_check(eg(), &p, msg, sizeof msg)), GC_ERR_PARAM);
    cr_assert_str_eq(msg, "eg_k=31 is out of range; expected an integer in [0, 30] or auto");
    p = eg_params(GC_AUTO, GC_AUTO, 0);
    cr_assert_eq(gc_error_code(gc_params_check(eg(), &p, msg, sizeof msg)), GC_ERR_PARAM);
    p = eg_params(-60, 30, 1);
    cr_assert_eq(gc_params_check(eg(), &p, msg, sizeof msg), 0);
}

Test(eg, small_destination_is_an_error_and_leaves_the_residual)
{
    float g[100], r[100], r0[100];
    fill_laplace(g, 100, 1.0, 5);
    fill_laplace(r, 100, 0.1, 6);
    memcpy(r0, r, sizeof r);
    gc_params p = eg_params(GC_AUTO, GC_AUTO, 512);
    uint8_t buf[GC_HEADER_SIZE + 50];
    size_t len = gc_encode(eg(), g, r, 100, &p, 0, buf, sizeof buf, NULL);
    cr_assert_eq(gc_error_code(len), GC_ERR_DST_TOO_SMALL);
    cr_assert(memcmp(r, r0, sizeof r) == 0);
}

/* ---- the bit-level helpers against bitstream.h --------------------------- */

Test(eg, block_writer_and_reader_match_the_bitstream_reference)
{
    enum { M = 4000 };
    uint32_t *z = malloc(M * sizeof *z), *back = malloc(M * sizeof *back);
    uint8_t *fast = calloc(1, gc_egw_codes_room(M)), *slow = calloc(1, 8 * M), *ref = calloc(1, 8 * M);
    uint64_t seed = 77;
    for (unsigned k = 0; k <= 30; k += 3) {
        /* Magnitudes from 0 up to the largest the codec makes (2^31). */
        for (size_t i = 0; i < M; i++) {
            unsigned width = (unsigned)(test_rng_next(&seed) % 33);
            uint64_t v = test_rng_next(&seed) & ((1ull << width) - 1);
            z[i] = (uint32_t)(v > (1ull << 31) ? 1ull << 31 : v);
        }
        gc_egw w;
        gc_egw_init(&w, fast, gc_egw_codes_room(M));
        gc_egw_codes(&w, z, M, k);
        size_t fast_len = gc_egw_finish(&w);
        uint64_t fast_bits = gc_egw_bits(&w);
        gc_egw_init(&w, slow, 8 * M);
        for (size_t i = 0; i < M; i++) gc_egw_code(&w, z[i], k);
        size_t slow_len = gc_egw_finish(&w);
        /* Reference: zeros, a 1, the low L-1 bits of x, LSB first. */
        gc_bitw b;
        gc_bitw_init(&b, ref, 8 * M);
        uint64_t ref_bits = 0;
        for (size_t i = 0; i < M; i++) {
            uint64_t x = (uint64_t)z[i] + (1ull << k);
            unsigned len = ref_bit_length(x);
            for (unsigned t = 0; t < len - 1 - k; t++) gc_bitw_put(&b, 0, 1);
            gc_bitw_put(&b, 1, 1);
            gc_bitw_put64(&b, x & ((1ull << (len - 1)) - 1), len - 1);
            ref_bits += gc_eg_code_len(z[i], k);
            cr_assert_eq(gc_eg_code_len(z[i], k), ref_code_len(z[i], k));
        }
        size_t ref_len = gc_bitw_finish(&b);
        cr_assert_eq(fast_bits, ref_bits, "k=%u", k);
        cr_assert_eq(fast_len, ref_len, "k=%u", k);
        cr_assert_eq(slow_len, ref_len, "k=%u", k);
        cr_assert(memcmp(fast, ref, ref_len) == 0, "k=%u", k);
        cr_assert(memcmp(slow, ref, ref_len) == 0, "k=%u", k);

        gc_egr r;
        gc_egr_init(&r, ref, ref_len);
        gc_eg_order o;
        gc_eg_order_init(&o, k);
        cr_assert_eq(gc_egr_codes(&r, back, M, &o), 0);
        cr_assert_eq(gc_egr_bits_used(&r), ref_bits);
        cr_assert(memcmp(back, z, M * sizeof *z) == 0, "k=%u", k);
    }
    free(z); free(back); free(fast); free(slow); free(ref);
}

/* ---- malformed bodies --------------------------------------------------- */

static gc_error decode_code(const uint8_t *buf, size_t len, size_t n)
{
    float out[64] = {0};
    cr_assert_leq(n, 64);
    return gc_error_code(gc_decode_add(buf, len, out, n, NULL));
}

Test(eg, hand_made_payload_decodes)
{
    uint8_t buf[64];
    float out[3] = {0};
    /* n = 1 (step 1/2), k = 1: z = 0, 5, 2 -> q = 0, -3, 1. */
    size_t len = make_payload(buf, sizeof buf, 3, 1, 3, "10000" "10" "0111" "0100");
    cr_assert(!gc_is_error(gc_decode_add(buf, len, out, 3, NULL)));
    cr_assert_eq(out[0], 0.0f);
    cr_assert_eq(out[1], -1.5f);
    cr_assert_eq(out[2], 0.5f);
}

/* A payload of several segments: 5000 elements in buckets of 16 are 313
 * buckets, segments of 256 buckets, so two segments and one sync point. */
static encoded two_segments(float *g, size_t n)
{
    fill_laplace(g, n, 1.0, 47);
    gc_params p = eg_params(GC_AUTO, GC_AUTO, 16);
    return encode_eg(&p, g, NULL, n);
}

static uint64_t get_le64(const uint8_t *s)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | s[i];
    return v;
}

Test(eg, sync_points_are_the_stream_bits_before_each_segment)
{
    enum { N = 20000 };
    float *g = test_alloc(N), *out = test_alloc(N);
    fill_laplace(g, N, 0.1, 51);
    for (unsigned b = 1; b <= 4096; b *= 8) {
        gc_params p = eg_params(8, GC_AUTO, b);
        encoded e = encode_eg(&p, g, NULL, N);
        const uint8_t *body = e.buf + GC_HEADER_SIZE;
        uint32_t seg = (uint32_t)body[5] | (uint32_t)body[6] << 8 | (uint32_t)body[7] << 16
                       | (uint32_t)body[8] << 24;
        cr_assert_eq(seg, ref_segment_buckets(b), "b=%u", b);
        size_t nb = (N + b - 1) / b, points = (nb - 1) / seg;
        cr_assert_geq(points, 1, "b=%u", b);
        for (size_t j = 1; j <= points; j++) {
            size_t upto = j * seg * b;  /* elements before segment j */
            uint64_t want = ref_stream_bits(g, upto, 8, -1, b);
            cr_assert_eq(get_le64(body + 9 + 8 * (j - 1)), want, "b=%u segment %zu", b, j);
        }
        decode_eg(&e, out, N);
        free(e.buf);
    }
    free(g); free(out);
}

Test(eg, a_segment_off_its_sync_point_is_corrupt)
{
    enum { N = 5000 };
    float g[N];
    encoded e = two_segments(g, N);
    const uint8_t *sync = e.buf + GC_HEADER_SIZE + 9;
    for (int delta = -1; delta <= 1; delta += 2) {
        uint64_t v = get_le64(sync) + (uint64_t)(int64_t)delta;
        uint8_t *copy = malloc(e.len);
        memcpy(copy, e.buf, e.len);
        for (int i = 0; i < 8; i++) copy[GC_HEADER_SIZE + 9 + i] = (uint8_t)(v >> (8 * i));
        cr_assert_eq(gc_error_code(gc_decode_add(copy, e.len, (float[N]){0}, N, NULL)),
                     GC_ERR_CORRUPT, "delta %d", delta);
        free(copy);
    }
    /* A segment size of 0 is corrupt. */
    memset(e.buf + GC_HEADER_SIZE + 5, 0, 4);
    cr_assert_eq(gc_error_code(gc_decode_add(e.buf, e.len, (float[N]){0}, N, NULL)), GC_ERR_CORRUPT);
    free(e.buf);
}

Test(eg, every_truncation_of_a_two_segment_body_is_truncated)
{
    enum { N = 5000 };
    float g[N];
    encoded e = two_segments(g, N);
    uint8_t *copy = malloc(e.len);
    float *out = test_alloc(N);
    for (size_t cut = GC_HEADER_SIZE; cut < e.len; cut++) {
        memcpy(copy, e.buf, cut);
        set_length(copy, cut);
        cr_assert_eq(gc_error_code(gc_decode_add(copy, cut, out, N, NULL)), GC_ERR_TRUNCATED,
                     "cut at %zu", cut);
    }
    free(copy); free(out); free(e.buf);
}

Test(eg, every_truncation_is_an_error)
{
    size_t n = 50;
    float g[50];
    fill_laplace(g, n, 1.0, 41);
    gc_params p = eg_params(GC_AUTO, GC_AUTO, 16);
    encoded e = encode_eg(&p, g, NULL, n);
    uint8_t *copy = malloc(e.len);
    for (size_t cut = GC_HEADER_SIZE; cut < e.len; cut++) {
        memcpy(copy, e.buf, cut);
        set_length(copy, cut);
        cr_assert_eq(decode_code(copy, cut, n), GC_ERR_TRUNCATED, "cut at %zu", cut);
    }
    free(copy); free(e.buf);
}

Test(eg, trailing_bytes_are_corrupt)
{
    float g[10];
    fill_laplace(g, 10, 1.0, 43);
    gc_params p = eg_params(GC_AUTO, GC_AUTO, 512);
    encoded e = encode_eg(&p, g, NULL, 10);
    uint8_t *longer = calloc(1, e.len + 1);
    memcpy(longer, e.buf, e.len);
    set_length(longer, e.len + 1);
    cr_assert_eq(decode_code(longer, e.len + 1, 10), GC_ERR_CORRUPT);
    free(longer); free(e.buf);
}

Test(eg, order_above_30_is_corrupt)
{
    uint8_t buf[64];
    size_t len = make_payload(buf, sizeof buf, 4, 0, 4, "11111" "1111");  /* k = 31 */
    cr_assert_eq(decode_code(buf, len, 4), GC_ERR_CORRUPT);
    /* k = 30: z = 0 is x = 2^30, a 1 then 30 info bits. */
    char bits[5 + 4 * 31 + 1] = "01111";
    for (int i = 0; i < 4; i++) strcat(bits, "1000000000000000000000000000000");
    len = make_payload(buf, sizeof buf, 4, 0, 4, bits);
    cr_assert_eq(decode_code(buf, len, 4), GC_OK);
}

Test(eg, zero_run_past_the_32_bit_limit_is_corrupt)
{
    uint8_t buf[64];
    char bits[128];
    /* k = 0: 31 zeros give a 32-bit x, the longest code allowed. */
    snprintf(bits, sizeof bits, "00000%s1%s", "0000000000000000000000000000000",
             "1111111111111111111111111111111");
    size_t len = make_payload(buf, sizeof buf, 1, 0, 1, bits);
    cr_assert_eq(decode_code(buf, len, 1), GC_OK);
    snprintf(bits, sizeof bits, "00000%s1%s", "00000000000000000000000000000000",
             "11111111111111111111111111111111");
    len = make_payload(buf, sizeof buf, 1, 0, 1, bits);
    cr_assert_eq(decode_code(buf, len, 1), GC_ERR_CORRUPT);
    /* k = 30 allows one zero at most. */
    len = make_payload(buf, sizeof buf, 1, 0, 1, "01111" "001" "111111111111111111111111111111111");
    cr_assert_eq(decode_code(buf, len, 1), GC_ERR_CORRUPT);
}

Test(eg, bad_header_fields_are_corrupt)
{
    uint8_t buf[64];
    size_t len = make_payload(buf, sizeof buf, 1, 61, 1, "00000" "1");
    cr_assert_eq(decode_code(buf, len, 1), GC_ERR_CORRUPT);
    len = make_payload(buf, sizeof buf, 1, 0, 0, "00000" "1");
    cr_assert_eq(decode_code(buf, len, 1), GC_ERR_CORRUPT);
    /* Padding bits must be zero. */
    len = make_payload(buf, sizeof buf, 1, 0, 1, "00000" "1" "01");
    cr_assert_eq(decode_code(buf, len, 1), GC_ERR_CORRUPT);
    /* A body shorter than n bits cannot hold n codes. */
    len = make_payload(buf, sizeof buf, 40, 0, 64, "00000" "1");
    cr_assert_eq(decode_code(buf, len, 40), GC_ERR_TRUNCATED);
}
