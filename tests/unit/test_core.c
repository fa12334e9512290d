/* test_core.c — the payload frame, errors, CRC32C, bit stream, registry,
 * the lossless codec and the zstd stage. */
#include "test_util.h"

#include "bitstream.h"
#include "codec_impl.h"

Test(errors, codes_round_trip_through_size_t)
{
    size_t r = GC_ERROR(TRUNCATED);
    cr_assert(gc_is_error(r));
    cr_assert_eq(gc_error_code(r), GC_ERR_TRUNCATED);
    cr_assert_str_eq(gc_error_name(r), "payload truncated");
    cr_assert(!gc_is_error(12345));
    cr_assert_eq(gc_error_code(0), GC_OK);
}

Test(crc32c, matches_the_standard_check_value)
{
    /* RFC 3720 check value for "123456789". */
    cr_assert_eq(gc_crc32c(0, "123456789", 9), 0xE3069283u);
    /* Incremental equals one-shot. */
    uint32_t a = gc_crc32c(0, "12345", 5);
    cr_assert_eq(gc_crc32c(a, "6789", 4), 0xE3069283u);
}

Test(bitstream, values_read_back_in_order)
{
    uint8_t buf[256];
    gc_bitw w;
    gc_bitw_init(&w, buf, sizeof buf);
    for (unsigned i = 1; i <= 32; i++) gc_bitw_put(&w, 0xA5A5A5A5u + i, i);
    size_t bytes = gc_bitw_finish(&w);
    cr_assert_eq(bytes, (32 * 33 / 2 + 7) / 8);
    gc_bitr r;
    gc_bitr_init(&r, buf, bytes);
    for (unsigned i = 1; i <= 32; i++) {
        uint32_t mask = i == 32 ? 0xFFFFFFFFu : (1u << i) - 1;
        cr_assert_eq(gc_bitr_get(&r, i), (0xA5A5A5A5u + i) & mask, "width %u", i);
    }
    cr_assert(!r.overrun);
}

Test(bitstream, reading_past_the_end_sets_overrun)
{
    uint8_t buf[2] = {0xFF, 0x01};
    gc_bitr r;
    gc_bitr_init(&r, buf, 2);
    cr_assert_eq(gc_bitr_get(&r, 9), 0x1FFu);
    cr_assert(!r.overrun);
    gc_bitr_get(&r, 8);
    cr_assert(r.overrun);
}

Test(bitstream, writer_reports_overflow_instead_of_writing_past_cap)
{
    uint8_t buf[4];
    gc_bitw w;
    gc_bitw_init(&w, buf, 3);
    gc_bitw_put(&w, 0xFFFFFFFFu, 32);
    cr_assert_eq(gc_bitw_finish(&w), (size_t)-1);
}

Test(bitstream, unary_counts_zeros_and_stops_at_limit)
{
    uint8_t buf[8] = {0};
    gc_bitw w;
    gc_bitw_init(&w, buf, sizeof buf);
    gc_bitw_put(&w, 0, 13);
    gc_bitw_put(&w, 1, 1);
    gc_bitw_put(&w, 1, 1);
    size_t bytes = gc_bitw_finish(&w);
    gc_bitr r;
    gc_bitr_init(&r, buf, bytes);
    cr_assert_eq(gc_bitr_unary(&r, 40), 13u);
    cr_assert_eq(gc_bitr_unary(&r, 40), 0u);
    cr_assert(!r.overrun);
    uint8_t zeros[8] = {0};
    gc_bitr_init(&r, zeros, sizeof zeros);
    cr_assert_eq(gc_bitr_unary(&r, 20), 21u);
    cr_assert(r.overrun);
}

Test(registry, names_and_ids_are_unique_and_found)
{
    size_t n = gc_codec_count();
    cr_assert_geq(n, 14);
    for (size_t i = 0; i < n; i++) {
        const gc_codec *c = gc_codec_at(i);
        cr_assert_eq(gc_codec_by_name(gc_codec_name(c)), c);
        cr_assert_eq(gc_codec_by_id(gc_codec_id(c)), c);
        for (size_t j = i + 1; j < n; j++) {
            cr_assert_neq(gc_codec_id(c), gc_codec_id(gc_codec_at(j)));
            cr_assert_str_neq(gc_codec_name(c), gc_codec_name(gc_codec_at(j)));
        }
    }
    cr_assert_null(gc_codec_by_name("topkk"));
    cr_assert_null(gc_codec_by_id(0));
}

Test(none, is_bit_exact_on_every_size)
{
    gc_params p;
    gc_params_default(&p);
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 7 + s);
        size_t len = roundtrip("none", &p, g, n, 1, out);
        cr_assert_eq(len, GC_HEADER_SIZE + 4 * n);
        cr_assert(memcmp(g, out, n * sizeof(float)) == 0);
        free(g);
        free(out);
    }
}

Test(none, residual_is_added_and_cleared)
{
    float g[5] = {1, 2, 3, 4, 5}, r[5] = {0.5f, -1, 0, 0.25f, 8}, out[5] = {0};
    uint8_t buf[GC_HEADER_SIZE + 20];
    gc_params p;
    gc_params_default(&p);
    size_t len = gc_encode(gc_codec_by_name("none"), g, r, 5, &p, 0, buf, sizeof buf, NULL);
    cr_assert(!gc_is_error(len));
    cr_assert(!gc_is_error(gc_decode_add(buf, len, out, 5, NULL)));
    float want[5] = {1.5f, 1, 3, 4.25f, 13};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(out[i], want[i]);
        cr_assert_eq(r[i], 0.0f);
    }
}

static size_t encode_none(float *g, size_t n, uint8_t *buf, size_t cap, unsigned flags, int zstd)
{
    gc_params p;
    gc_params_default(&p);
    p.flags = flags;
    p.zstd_level = zstd;
    return gc_encode(gc_codec_by_name("none"), g, NULL, n, &p, 0, buf, cap, NULL);
}

Test(payload, truncated_input_is_an_error)
{
    float g[100], out[100];
    fill_laplace(g, 100, 1, 3);
    uint8_t buf[GC_HEADER_SIZE + 400];
    size_t len = encode_none(g, 100, buf, sizeof buf, 0, 0);
    for (size_t cut = 0; cut < len; cut += 7)
        cr_assert(gc_is_error(gc_decode_add(buf, cut, out, 100, NULL)), "cut %zu", cut);
}

Test(payload, header_fields_are_checked)
{
    float g[10] = {0}, out[10];
    uint8_t buf[GC_HEADER_SIZE + 40];
    size_t len = encode_none(g, 10, buf, sizeof buf, 0, 0);
    uint8_t bad[sizeof buf];
    memcpy(bad, buf, len); bad[0] = 'X';
    cr_assert_eq(gc_error_code(gc_decode_add(bad, len, out, 10, NULL)), GC_ERR_BAD_MAGIC);
    memcpy(bad, buf, len); bad[2] = 99;
    cr_assert_eq(gc_error_code(gc_decode_add(bad, len, out, 10, NULL)), GC_ERR_VERSION);
    memcpy(bad, buf, len); bad[3] = 200;
    cr_assert_eq(gc_error_code(gc_decode_add(bad, len, out, 10, NULL)), GC_ERR_UNKNOWN_CODEC);
    cr_assert_eq(gc_error_code(gc_decode_add(buf, len, out, 11, NULL)), GC_ERR_SIZE_MISMATCH);
    cr_assert_eq(gc_error_code(gc_decode_add_as(gc_codec_by_name("int8"), buf, len, out, 10, NULL)),
                 GC_ERR_WRONG_CODEC);
}

Test(payload, crc_catches_a_flipped_bit)
{
    float g[64], out[64];
    fill_laplace(g, 64, 1, 9);
    uint8_t buf[GC_HEADER_SIZE + 256];
    size_t len = encode_none(g, 64, buf, sizeof buf, GC_PF_CRC, 0);
    cr_assert(!gc_is_error(gc_decode_add(buf, len, out, 64, NULL)));
    for (size_t bit = GC_HEADER_SIZE * 8; bit < len * 8; bit += 37) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        cr_assert_eq(gc_error_code(gc_decode_add(buf, len, out, 64, NULL)), GC_ERR_CHECKSUM);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
}

Test(payload, small_destination_is_an_error)
{
    float g[10] = {0};
    uint8_t buf[GC_HEADER_SIZE + 39];
    cr_assert_eq(gc_error_code(encode_none(g, 10, buf, sizeof buf, 0, 0)), GC_ERR_DST_TOO_SMALL);
}

Test(params, bad_values_are_named_with_their_range)
{
    char msg[200];
    gc_params p;
    gc_params_default(&p);
    p.ratio = 1.5;
    size_t r = gc_params_check(gc_codec_by_name("topk"), &p, msg, sizeof msg);
    cr_assert_eq(gc_error_code(r), GC_ERR_PARAM);
    cr_assert_str_eq(msg, "ratio=1.5 is out of range; expected a number in (0, 1]");
    gc_params_default(&p);
    p.bucket = 0;
    r = gc_params_check(gc_codec_by_name("int8"), &p, msg, sizeof msg);
    cr_assert_eq(gc_error_code(r), GC_ERR_PARAM);
    cr_assert(strstr(msg, "bucket=0") != NULL, "%s", msg);
    gc_params_default(&p);
    p.zstd_level = 40;
    r = gc_params_check(gc_codec_by_name("none"), &p, msg, sizeof msg);
    cr_assert_eq(gc_error_code(r), GC_ERR_PARAM);
    cr_assert(strstr(msg, "zstd_level=40") != NULL, "%s", msg);
}

#ifdef GC_HAVE_ZSTD
Test(zstd_stage, is_lossless_and_shrinks_redundant_data)
{
    size_t n = 100000;
    float *g = test_alloc(n), *out = test_alloc(n);
    for (size_t i = 0; i < n; i++) g[i] = (float)(i % 17) * 0.25f;
    size_t cap = gc_bound(gc_codec_by_name("none"), n, &(gc_params){.zstd_level = 3, .bucket = 1, .ratio = 1});
    uint8_t *buf = malloc(cap);
    size_t len = encode_none(g, n, buf, cap, GC_PF_CRC, 3);
    cr_assert(!gc_is_error(len));
    cr_assert_lt(len, n * 4 / 10, "zstd left %zu of %zu bytes", len, n * 4);
    gc_payload_info info;
    cr_assert(!gc_is_error(gc_payload_info_get(buf, len, &info)));
    cr_assert(info.flags & GC_HF_ZSTD);
    cr_assert(!gc_is_error(gc_decode_add(buf, len, out, n, NULL)));
    cr_assert(memcmp(g, out, n * 4) == 0);
    free(g); free(out); free(buf);
}

Test(zstd_stage, incompressible_body_is_sent_raw)
{
    size_t n = 4096;
    float *g = test_alloc(n), *out = test_alloc(n);
    fill_laplace(g, n, 1.0, 11);
    size_t cap = GC_HEADER_SIZE + 4 * n + 1024;
    uint8_t *buf = malloc(cap);
    size_t len = encode_none(g, n, buf, cap, 0, 19);
    cr_assert(!gc_is_error(len));
    cr_assert_leq(len, GC_HEADER_SIZE + 4 * n);
    cr_assert(!gc_is_error(gc_decode_add(buf, len, out, n, NULL)));
    cr_assert(memcmp(g, out, n * 4) == 0);
    free(g); free(out); free(buf);
}
#endif

/* Found by the fp16 fuzzer: n == 0 with NULL buffers must not form NULL + i. */
Test(payload, empty_vectors_with_null_buffers_round_trip_for_every_codec)
{
    for (size_t i = 0; i < gc_codec_count(); i++) {
        const gc_codec *c = gc_codec_at(i);
        gc_params p;
        gc_params_default(&p);
        uint8_t buf[1024];
        size_t len = gc_encode(c, NULL, NULL, 0, &p, 1, buf, sizeof buf, NULL);
        cr_assert(!gc_is_error(len), "%s: %s", gc_codec_name(c), gc_error_name(len));
        size_t r = gc_decode_add(buf, len, NULL, 0, NULL);
        cr_assert(!gc_is_error(r), "%s: %s", gc_codec_name(c), gc_error_name(r));
    }
}
