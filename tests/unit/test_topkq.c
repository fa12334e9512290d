/* test_topkq.c — topkq (top-k, then per-bucket sign + magnitude
 * quantisation of the kept values; codecs/codec_topkq.c) and the width
 * controller that drives it (codecs/adapt/bitctl.c). */
#include "test_util.h"

#include "adapt/gc_adapt.h"
#include "codec_impl.h"

#include <stdio.h>

/* ---- helpers -------------------------------------------------------------- */

static const gc_codec *codec(const char *name)
{
    const gc_codec *c = gc_codec_by_name(name);
    cr_assert_not_null(c, "codec %s not registered", name);
    return c;
}

static gc_params qparams(unsigned bits, size_t bucket, double ratio)
{
    gc_params p;
    gc_params_default(&p);
    p.bits = bits;
    p.bucket = bucket;
    p.ratio = ratio;
    return p;
}

typedef struct payload {
    uint8_t *buf;
    size_t len;
} payload;

static payload encode(const char *name, const gc_params *p, const float *g, float *r, size_t n,
                      gc_workspace *ws)
{
    const gc_codec *c = codec(name);
    size_t cap = gc_bound(c, n, p);
    cr_assert(!gc_is_error(cap), "%s bound: %s", name, gc_error_name(cap));
    payload pl = {malloc(cap), 0};
    cr_assert_not_null(pl.buf);
    pl.len = gc_encode(c, g, r, n, p, 9, pl.buf, cap, ws);
    cr_assert(!gc_is_error(pl.len), "%s encode n=%zu: %s", name, n, gc_error_name(pl.len));
    cr_assert_leq(pl.len, cap);
    return pl;
}

/* A zeroed vector with the payload added into it. */
static float *decode(payload pl, size_t n)
{
    float *out = test_alloc(n);
    size_t r = gc_decode_add(pl.buf, pl.len, out, n, NULL);
    cr_assert(!gc_is_error(r), "decode n=%zu: %s", n, gc_error_name(r));
    return out;
}

/* The elements topk keeps of g (no zeros in g, so topk's decoded vector is
 * nonzero exactly there): ascending indices and their exact values.
 * Returns the count; idx and x hold n entries. */
static size_t kept_by_topk(const float *g, size_t n, const gc_params *p, uint32_t *idx, float *x)
{
    payload pl = encode("topk", p, g, NULL, n, NULL);
    float *out = decode(pl, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (out[i] != 0.0f) {
            idx[k] = (uint32_t)i;
            x[k++] = out[i];
        }
    }
    free(out);
    free(pl.buf);
    return k;
}

static void fill_gaussian(float *x, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i += 2) {
        double r = sqrt(-2.0 * log(test_rng_unit(s))), a = 6.283185307179586 * test_rng_unit(s);
        x[i] = (float)(r * cos(a));
        if (i + 1 < n) x[i + 1] = (float)(r * sin(a));
    }
}

/* Levels of a b-bit bucket beyond the lowest: 2^(b-1) - 1. */
static double steps_of(unsigned b) { return (double)((1u << (b - 1)) - 1u); }

/* Check the decoded values of the kept elements bucket by bucket against
 * the quantiser's definition: the sign of x, and
 *   b = 1:  |d| = mean |x| of the bucket
 *   b >= 2: |x - d| <= step / 2, step = (max|x| - min|x|) / (2^(b-1) - 1),
 *           plus float rounding (1e-6 of the bucket's largest magnitude). */
static void check_buckets(const uint32_t *idx, const float *x, size_t k, size_t bucket,
                          const unsigned *widths, const float *dec, const char *what)
{
    for (size_t s = 0, bi = 0; s < k; s += bucket, bi++) {
        size_t len = k - s < bucket ? k - s : bucket;
        unsigned b = widths[bi];
        double lo = INFINITY, hi = 0, sum_abs = 0;
        for (size_t j = s; j < s + len; j++) {
            double a = fabs((double)x[j]);
            lo = a < lo ? a : lo;
            hi = a > hi ? a : hi;
            sum_abs += a;
        }
        for (size_t j = s; j < s + len; j++) {
            float d = dec[idx[j]];
            cr_assert_eq(signbit(d) != 0, signbit(x[j]) != 0, "%s bucket %zu element %u: sign",
                         what, bi, idx[j]);
            if (b == 1) {
                double mean = sum_abs / (double)len;
                cr_assert(fabs(fabs((double)d) - mean) <= 1e-6 * mean,
                          "%s bucket %zu b=1: |%g| is not the mean %g", what, bi, d, mean);
            } else {
                double step = (hi - lo) / steps_of(b);
                double err = fabs((double)x[j] - (double)d);
                cr_assert(err <= step / 2 + 1e-6 * hi,
                          "%s bucket %zu b=%u element %u: |%g - %g| > step/2 = %g", what, bi, b,
                          idx[j], x[j], d, step / 2);
            }
        }
    }
}

/* ---- registry and parameters -------------------------------------------- */

Test(topkq, is_registered_as_a_deterministic_sparse_codec_with_id_15)
{
    const gc_codec *c = codec("topkq");
    cr_assert_eq(gc_codec_id(c), 15);
    cr_assert_eq(gc_codec_flags(c), GC_SPARSE);
    cr_assert_eq(gc_codec_by_id(15), c);
    cr_assert_eq(gc_codec_at(gc_codec_count() - 1), c, "registered after eg");
}

Test(topkq, bad_bits_are_named_with_their_range)
{
    const unsigned bad[] = {0, 9, 32};
    const char *const text[] = {
        "bits=0 is out of range; expected an integer in [1, 8]",
        "bits=9 is out of range; expected an integer in [1, 8]",
        "bits=32 is out of range; expected an integer in [1, 8]",
    };
    float g[4] = {1, 2, 3, 4};
    uint8_t buf[256];
    for (size_t i = 0; i < 3; i++) {
        gc_params p = qparams(bad[i], 4, 0.5);
        char msg[200] = "";
        size_t r = gc_params_check(codec("topkq"), &p, msg, sizeof msg);
        cr_assert_eq(gc_error_code(r), GC_ERR_PARAM);
        cr_assert_str_eq(msg, text[i]);
        r = gc_encode(codec("topkq"), g, NULL, 4, &p, 0, buf, sizeof buf, NULL);
        cr_assert_eq(gc_error_code(r), GC_ERR_PARAM);
    }
    for (unsigned b = 1; b <= 8; b++) {
        gc_params p = qparams(b, 4, 0.5);
        cr_assert_eq(gc_params_check(codec("topkq"), &p, NULL, 0), 0, "bits=%u", b);
    }
    char msg[200] = "";
    gc_params p = qparams(4, 0, 0.5);
    cr_assert_eq(gc_error_code(gc_params_check(codec("topkq"), &p, msg, sizeof msg)), GC_ERR_PARAM);
    cr_assert_str_eq(msg, "bucket=0 is out of range; expected an integer in [1, 2^31]");
    p = qparams(4, 4, 1.5);
    cr_assert_eq(gc_error_code(gc_params_check(codec("topkq"), &p, msg, sizeof msg)), GC_ERR_PARAM);
    cr_assert_str_eq(msg, "ratio=1.5 is out of range; expected a number in (0, 1]");
}

Test(topkq, bound_assumes_eight_bits_per_value)
{
    /* n = 1000, ratio 0.1, bucket 16: k = 100 in 7 buckets. Head 5, bitmap
     * 125, bucket field 4, 7 bucket heads of 9, 100 bytes of values. */
    gc_params p = qparams(2, 16, 0.1);
    cr_assert_eq(gc_bound(codec("topkq"), 1000, &p), GC_HEADER_SIZE + 5 + 125 + 4 + 63 + 100);
    p.bits = 8;
    cr_assert_eq(gc_bound(codec("topkq"), 1000, &p), GC_HEADER_SIZE + 5 + 125 + 4 + 63 + 100);
}

/* ---- round trips ------------------------------------------------------------ */

Test(topkq, every_width_keeps_topks_indices_within_half_a_step)
{
    gc_workspace *ws = gc_workspace_create();
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *x = test_alloc(n);
        uint32_t *idx = calloc(n ? n : 1, sizeof *idx);
        fill_laplace(g, n, 1.0, 300 + s);
        for (size_t i = 0; i < n; i++) cr_assert(g[i] != 0.0f);
        for (unsigned b = 1; b <= 8; b++) {
            gc_params p = qparams(b, 16, 0.1);
            size_t k = kept_by_topk(g, n, &p, idx, x);
            payload pl = encode("topkq", &p, g, NULL, n, ws);
            cr_assert_eq(gc_workspace_report(ws)->kept, k, "n=%zu b=%u", n, b);
            float *dec = decode(pl, n);
            size_t j = 0;
            for (size_t i = 0; i < n; i++) {
                if (dec[i] == 0.0f) continue;
                cr_assert(j < k && idx[j] == i, "n=%zu b=%u: element %zu sent, not by topk", n,
                          b, i);
                j++;
            }
            cr_assert_eq(j, k, "n=%zu b=%u: %zu of topk's %zu sent", n, b, j, k);
            unsigned *widths = malloc((k / 16 + 1) * sizeof *widths);
            for (size_t t = 0; t <= k / 16; t++) widths[t] = b;
            char what[64];
            snprintf(what, sizeof what, "n=%zu b=%u", n, b);
            check_buckets(idx, x, k, 16, widths, dec, what);
            free(widths); free(dec); free(pl.buf);
        }
        free(g); free(x); free(idx);
    }
    gc_workspace_free(ws);
}

Test(topkq, error_feedback_identity_holds)
{
    /* D(C(v)) + r == v: exact for the dropped elements (r = v), to the
     * rounding of r = x - d and of the check's own sum for the kept ones.
     * With r = 0 beforehand the payload is the one without a residual. */
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        for (unsigned b = 1; b <= 8; b += 3) {
            gc_params p = qparams(b, 64, 0.05);
            float *g = test_alloc(n), *r = test_alloc(n);
            fill_laplace(g, n, 1.0, 400 + s);
            payload plain = encode("topkq", &p, g, NULL, n, NULL);
            payload fed = encode("topkq", &p, g, r, n, NULL);
            cr_assert_eq(fed.len, plain.len);
            cr_assert(memcmp(fed.buf, plain.buf, fed.len) == 0, "n=%zu b=%u", n, b);
            float *dec = decode(fed, n);
            for (size_t i = 0; i < n; i++) {
                if (dec[i] == 0.0f) {
                    cr_assert(r[i] == g[i], "n=%zu b=%u dropped %zu", n, b, i);
                    continue;
                }
                float back = dec[i] + r[i];
                double tol = 0x1p-23 * (fabs((double)g[i]) + fabs((double)g[i] - dec[i]));
                cr_assert(fabs((double)back - g[i]) <= tol, "n=%zu b=%u kept %zu: %a + %a != %a",
                          n, b, i, dec[i], r[i], g[i]);
            }
            free(dec); free(plain.buf); free(fed.buf); free(g); free(r);
        }
    }
}

Test(topkq, residual_is_exactly_v_minus_what_decode_adds)
{
    /* The encoder's reconstruction is the decoder's float expression: so
     * r == v - D(C(v)) bit for bit, with v = g + r0. */
    size_t n = 20000;
    for (unsigned b = 1; b <= 8; b++) {
        gc_params p = qparams(b, 100, 0.03);
        float *g = test_alloc(n), *r = test_alloc(n), *v = test_alloc(n);
        fill_laplace(g, n, 1.0, 500 + b);
        fill_laplace(r, n, 0.3, 600 + b);
        for (size_t i = 0; i < n; i++) v[i] = g[i] + r[i];
        payload pl = encode("topkq", &p, g, r, n, NULL);
        float *dec = decode(pl, n);
        for (size_t i = 0; i < n; i++)
            cr_assert(r[i] == v[i] - dec[i], "b=%u element %zu", b, i);
        free(dec); free(pl.buf); free(g); free(r); free(v);
    }
}

Test(topkq, momentum_correction_clears_u_where_sent)
{
    size_t n = 5000;
    const float m = 0.9f;
    gc_params p = qparams(3, 32, 0.02);
    float *g = test_alloc(n), *u = test_alloc(n), *v = test_alloc(n);
    float *u1 = test_alloc(n), *v1 = test_alloc(n), *out = test_alloc(n);
    fill_laplace(g, n, 1.0, 701);
    fill_laplace(u, n, 1.0, 702);
    fill_laplace(v, n, 3.0, 703);
    for (size_t i = 0; i < n; i++) {
        u1[i] = m * u[i] + g[i];
        v1[i] = v[i] + u1[i];
    }
    const gc_codec *c = codec("topkq");
    size_t cap = gc_bound(c, n, &p);
    uint8_t *buf = malloc(cap);
    gc_workspace *ws = gc_workspace_create();
    size_t len = gc_encode_momentum(c, g, u, v, n, m, &p, 17, buf, cap, ws);
    cr_assert(!gc_is_error(len), "%s", gc_error_name(len));
    size_t kept = gc_workspace_report(ws)->kept;
    cr_assert(!gc_is_error(gc_decode_add(buf, len, out, n, ws)));
    size_t sent = 0;
    for (size_t i = 0; i < n; i++) {
        if (out[i] != 0.0f) {
            sent++;
            cr_assert(u[i] == 0.0f && v[i] == v1[i] - out[i], "sent element %zu", i);
        } else {
            cr_assert(u[i] == u1[i] && v[i] == v1[i], "kept element %zu", i);
        }
    }
    cr_assert_eq(sent, kept);
    cr_assert_eq(kept, 100);
    gc_workspace_free(ws);
    free(buf); free(g); free(u); free(v); free(u1); free(v1); free(out);
}

/* ---- the body, byte by byte --------------------------------------------------- */

/* A payload for n elements with the given topkq body: the header of a real
 * topkq payload (no CRC, no zstd) with its length rewritten. */
static payload frame(size_t n, const uint8_t *body, size_t blen)
{
    float *zero = test_alloc(n);
    gc_params p = qparams(4, 4, 0.5);
    payload real = encode("topkq", &p, zero, NULL, n, NULL);
    free(zero);
    payload pl = {malloc(GC_HEADER_SIZE + blen), GC_HEADER_SIZE + blen};
    cr_assert_not_null(pl.buf);
    memcpy(pl.buf, real.buf, GC_HEADER_SIZE);
    memcpy(pl.buf + GC_HEADER_SIZE, body, blen);
    gc_put_u64(pl.buf + 16, pl.len);
    free(real.buf);
    return pl;
}

/* Policy answering a fixed list of widths, one per bucket. */
typedef struct fixed_widths {
    const unsigned *widths;
    size_t count;
} fixed_widths;

static unsigned choose_listed(void *ctx, const gc_bucket_stats *s)
{
    const fixed_widths *f = ctx;
    cr_assert_lt(s->index, f->count);
    return f->widths[s->index];
}

/* n = 10, kept {1: +1, 4: -4, 9: +2.5}, buckets of 2: the first 3 bits
 * over [1, 4] (step 1: +1 is level 0, -4 level 3 with the sign), the
 * second 1 bit (the mean magnitude 2.5). The bitmap (2 bytes) is smaller
 * than the delta coding (1 width byte + 9 bits). */
static const uint8_t hand_body[] = {
    0x03, 0x00, 0x00, 0x00,  /* k = 3 */
    0x01,                    /* bitmap */
    0x12, 0x02,              /* bits 1, 4 | 9 */
    0x02, 0x00, 0x00, 0x00,  /* bucket = 2 */
    0x03, 0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x80, 0x40,  /* b 3, lo 1, hi 4 */
    0x38,                    /* codes 000 (+, q 0), 111 (-, q 3) */
    0x01, 0x00, 0x00, 0x20, 0x40, 0x00, 0x00, 0x20, 0x40,  /* b 1, lo = hi = 2.5 */
    0x00,                    /* code 0 (+) */
};

Test(topkq, hand_built_body_decodes_to_hand_computed_values)
{
    payload pl = frame(10, hand_body, sizeof hand_body);
    float *out = decode(pl, 10);
    const float want[10] = {0, 1, 0, 0, -4, 0, 0, 0, 0, 2.5f};
    for (size_t i = 0; i < 10; i++) cr_assert_eq(out[i], want[i], "element %zu", i);
    free(out);
    free(pl.buf);
}

Test(topkq, encoder_writes_the_documented_layout)
{
    const float g[10] = {0.1f, 1, -0.2f, 0.3f, -4, 0.4f, -0.5f, 0.6f, 0.7f, 2.5f};
    const unsigned widths[] = {3, 1};
    fixed_widths f = {widths, 2};
    gc_width_policy pol = {&f, choose_listed, NULL};
    gc_workspace *ws = gc_workspace_create();
    gc_workspace_set_width_policy(ws, &pol);
    gc_params p = qparams(8, 2, 0.25);  /* k = ceil(2.5) = 3 */
    payload pl = encode("topkq", &p, g, NULL, 10, ws);
    cr_assert_eq(pl.len, GC_HEADER_SIZE + sizeof hand_body);
    for (size_t i = 0; i < sizeof hand_body; i++)
        cr_assert_eq(pl.buf[GC_HEADER_SIZE + i], hand_body[i], "body byte %zu: %02x, want %02x",
                     i, pl.buf[GC_HEADER_SIZE + i], hand_body[i]);
    gc_workspace_free(ws);
    free(pl.buf);
}

/* ---- width policies ------------------------------------------------------------ */

/* Answers index % 10 (0 and 9 must be clamped to 1 and 8) and records what
 * it was asked and told. */
typedef struct recorder {
    size_t chosen, observed;
    gc_bucket_stats asked[4096], told[4096];
    unsigned bits[4096];
    double err_sq[4096];
} recorder;

static unsigned choose_cycling(void *ctx, const gc_bucket_stats *s)
{
    recorder *r = ctx;
    cr_assert_lt(r->chosen, 4096);
    r->asked[r->chosen++] = *s;
    return (unsigned)(s->index % 10);
}

static void observe_recorded(void *ctx, const gc_bucket_stats *s, unsigned bits, double err_sq)
{
    recorder *r = ctx;
    cr_assert_lt(r->observed, 4096);
    r->told[r->observed] = *s;
    r->bits[r->observed] = bits;
    r->err_sq[r->observed++] = err_sq;
}

Test(topkq, per_bucket_widths_from_a_policy_decode_and_are_reported)
{
    size_t n = 100000, bucket = 50;
    gc_params p = qparams(8, bucket, 0.02);  /* k = 2000: 40 buckets */
    float *g = test_alloc(n), *x = test_alloc(n);
    uint32_t *idx = calloc(n, sizeof *idx);
    fill_laplace(g, n, 1.0, 801);
    size_t k = kept_by_topk(g, n, &p, idx, x);
    cr_assert_eq(k, 2000);

    recorder *rec = calloc(1, sizeof *rec);
    gc_width_policy pol = {rec, choose_cycling, observe_recorded};
    gc_workspace *ws = gc_workspace_create();
    gc_workspace_set_width_policy(ws, &pol);
    payload pl = encode("topkq", &p, g, NULL, n, ws);
    float *dec = decode(pl, n);

    size_t nb = k / bucket;
    cr_assert_eq(rec->chosen, nb);
    cr_assert_eq(rec->observed, nb);
    unsigned widths[40];
    for (size_t b = 0; b < nb; b++) {
        unsigned asked = (unsigned)(b % 10);
        widths[b] = asked < 1 ? 1 : asked > 8 ? 8 : asked;
        cr_assert_eq(rec->bits[b], widths[b], "bucket %zu", b);
        /* Statistics of the bucket's kept values, recomputed here. */
        double l2 = 0, sum = 0, maxabs = 0, err = 0;
        for (size_t j = b * bucket; j < (b + 1) * bucket; j++) {
            double v = x[j], e = v - (double)dec[idx[j]];
            l2 += v * v;
            sum += v;
            maxabs = fabs(v) > maxabs ? fabs(v) : maxabs;
            err += e * e;
        }
        double mean = sum / (double)bucket;
        const gc_bucket_stats *a = &rec->asked[b], *t = &rec->told[b];
        cr_assert_eq(a->index, b);
        cr_assert_eq(a->len, bucket);
        cr_assert(fabs(a->l2sq - l2) <= 1e-9 * l2, "bucket %zu l2sq %g, want %g", b, a->l2sq, l2);
        cr_assert_eq(a->maxabs, maxabs, "bucket %zu maxabs", b);
        cr_assert(fabs(a->mean - mean) <= 1e-9 * sqrt(l2), "bucket %zu mean", b);
        cr_assert(fabs(a->var - (l2 / (double)bucket - mean * mean)) <= 1e-9 * l2,
                  "bucket %zu var", b);
        cr_assert(memcmp(a, t, sizeof *a) == 0, "bucket %zu: observe got other stats", b);
        cr_assert(fabs(rec->err_sq[b] - err) <= 1e-6 * err + 1e-30,
                  "bucket %zu err_sq %g, want %g", b, rec->err_sq[b], err);
    }
    check_buckets(idx, x, k, bucket, widths, dec, "policy");
    /* Narrower buckets sent fewer bytes: the widths really are per bucket. */
    gc_workspace_set_width_policy(ws, NULL);
    payload eight = encode("topkq", &p, g, NULL, n, ws);
    size_t saved = 0;
    for (size_t b = 0; b < nb; b++) saved += bucket - (bucket * widths[b] + 7) / 8;
    cr_assert_eq(eight.len - pl.len, saved);

    gc_workspace_free(ws);
    free(rec); free(dec); free(pl.buf); free(eight.buf); free(g); free(x); free(idx);
}

static unsigned choose_two(void *ctx, const gc_bucket_stats *s)
{
    (void)ctx; (void)s;
    return 2;
}

Test(topkq, removing_the_policy_restores_params_bits)
{
    size_t n = 3000;
    gc_params p = qparams(6, 10, 0.05);
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 901);
    payload ref = encode("topkq", &p, g, NULL, n, NULL);
    gc_workspace *ws = gc_workspace_create();
    gc_width_policy pol = {NULL, choose_two, NULL};
    gc_workspace_set_width_policy(ws, &pol);
    payload two = encode("topkq", &p, g, NULL, n, ws);
    cr_assert_lt(two.len, ref.len);
    gc_workspace_set_width_policy(ws, NULL);
    payload back = encode("topkq", &p, g, NULL, n, ws);
    cr_assert_eq(back.len, ref.len);
    cr_assert(memcmp(back.buf, ref.buf, ref.len) == 0);
    gc_workspace_free(ws);
    free(g); free(ref.buf); free(two.buf); free(back.buf);
}

/* ---- the width controller ---------------------------------------------------- */

static gc_var_params ctl_params(double target)
{
    gc_var_params vp;
    memset(&vp, 0, sizeof vp);
    for (unsigned i = 0; i < 8; i++) vp.widths[i] = i + 1;
    vp.n_widths = 8;
    vp.target = target;
    return vp;
}

/* Stats of a bucket with crest factor maxabs^2 len / l2sq = len / l2sq. */
static gc_bucket_stats crest_stats(size_t len, double l2sq)
{
    gc_bucket_stats s = {.index = 0, .len = len, .l2sq = l2sq, .maxabs = 1.0};
    return s;
}

Test(bitctl, crest_factor_bins_are_half_octaves)
{
    /* c = 1000 / l2sq; bin = floor(log2(c^2)) clamped to 0..7. */
    const struct { double c; unsigned bin; } cases[] = {
        {1.0, 0}, {1.4, 0}, {1.5, 1}, {1.99, 1}, {2.0, 2}, {2.5, 2}, {3.0, 3}, {4.0, 4},
        {5.0, 4}, {6.0, 5}, {8.0, 6}, {11.0, 6}, {12.0, 7}, {1000.0, 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gc_var_params vp = ctl_params(0.01);
        gc_bitctl c;
        gc_bitctl_init(&c, &vp);
        gc_width_policy pol = gc_bitctl_policy(&c);
        gc_bucket_stats s = crest_stats(1000, 1000.0 / cases[i].c);
        pol.choose(pol.ctx, &s);
        pol.observe(pol.ctx, &s, 4, 0.0);
        for (unsigned b = 0; b < GC_BITCTL_BINS; b++) {
            unsigned want = b == cases[i].bin;
            cr_assert_eq(c.decisions[b], want, "c=%g: decisions in bin %u", cases[i].c, b);
            cr_assert_eq(c.seen[b][3], want, "c=%g: observations in bin %u", cases[i].c, b);
        }
    }
    /* An all-zero bucket (l2sq 0) counts as flat: bin 0. */
    gc_var_params vp = ctl_params(0.01);
    gc_bitctl c;
    gc_bitctl_init(&c, &vp);
    gc_width_policy pol = gc_bitctl_policy(&c);
    gc_bucket_stats z = {.index = 0, .len = 8, .l2sq = 0, .maxabs = 0};
    pol.choose(pol.ctx, &z);
    cr_assert_eq(c.decisions[0], 1);
}

Test(bitctl, untried_widths_use_the_uniform_quantisation_prior)
{
    /* c = 4: prior c / (12 M^2), M = 2^(b-1) - 1 (1 for b = 1): b 1, 2:
     * 0.333, b 3: 0.037, b 4: 0.0068, b 5: 0.00148. Target 0.01 -> 4. */
    gc_var_params vp = ctl_params(0.01);
    gc_bitctl c;
    gc_bitctl_init(&c, &vp);
    gc_width_policy pol = gc_bitctl_policy(&c);
    cr_assert_eq(pol.ctx, &c);
    gc_bucket_stats s = crest_stats(1000, 250.0);
    cr_assert_eq(pol.choose(pol.ctx, &s), 4);
    /* Width 4 measured at 0.02 (err_sq / l2sq) -> 5, still on its prior. */
    pol.observe(pol.ctx, &s, 4, 0.02 * 250.0);
    cr_assert_eq(pol.choose(pol.ctx, &s), 5);
    /* Width 5 measured above target too -> 6, then 3's prior (0.037) is
     * too high even at a looser 0.03: 4 stays measured at 0.02. */
    pol.observe(pol.ctx, &s, 5, 0.015 * 250.0);
    cr_assert_eq(pol.choose(pol.ctx, &s), 6);
    c.p.target = 0.03;
    cr_assert_eq(pol.choose(pol.ctx, &s), 4);
    cr_assert_eq(c.chosen_buckets, 4);
    cr_assert_eq(c.chosen_bits, 4 + 5 + 6 + 4);
}

Test(bitctl, no_width_within_target_gives_the_largest)
{
    gc_var_params vp = ctl_params(1e-12);
    vp.widths[0] = 2; vp.widths[1] = 5; vp.widths[2] = 7;
    vp.n_widths = 3;
    gc_bitctl c;
    gc_bitctl_init(&c, &vp);
    gc_width_policy pol = gc_bitctl_policy(&c);
    gc_bucket_stats s = crest_stats(100, 50.0);
    for (int i = 1; i <= 15; i++) cr_assert_eq(pol.choose(pol.ctx, &s), 7, "decision %d", i);
}

Test(bitctl, every_16th_decision_in_a_bin_tries_a_smaller_width_in_turn)
{
    gc_var_params vp = ctl_params(0.01);
    gc_bitctl c;
    gc_bitctl_init(&c, &vp);
    gc_width_policy pol = gc_bitctl_policy(&c);
    gc_bucket_stats s4 = crest_stats(1000, 250.0);   /* bin 4: chooses 4 */
    gc_bucket_stats s0 = crest_stats(1000, 1000.0);  /* bin 0: c = 1 */
    for (int d = 1; d <= 40; d++) {
        /* Decisions in another bin do not move bin 4's count. */
        pol.choose(pol.ctx, &s0);
        unsigned w = pol.choose(pol.ctx, &s4);
        /* widths {1,2,3,4,6,8}: explorations try 3, then 2, then 1 bit. */
        static const unsigned tried[] = {3, 2, 1};
        cr_assert_eq(w, d % 16 == 0 ? tried[(d / 16 - 1) % 3] : 4u, "decision %d", d);
    }
    for (int d = 41; d <= 63; d++) pol.choose(pol.ctx, &s4);
    cr_assert_eq(pol.choose(pol.ctx, &s4), 3, "the 64th decision starts the cycle again");
    cr_assert_eq(c.decisions[4], 64);
    cr_assert_eq(c.decisions[0], 40);
    /* Nothing smaller to try when the choice is the smallest width. */
    gc_var_params one = ctl_params(0.01);
    one.widths[0] = 4; one.widths[1] = 6;
    one.n_widths = 2;
    gc_bitctl_init(&c, &one);
    pol = gc_bitctl_policy(&c);
    for (int d = 1; d <= 32; d++) cr_assert_eq(pol.choose(pol.ctx, &s4), 4, "decision %d", d);
}

Test(bitctl, running_mean_learns_fast_then_tracks)
{
    /* Weight max(1/seen, 0.1): the plain mean of the first ten, then 0.1. */
    gc_var_params vp = ctl_params(0.01);
    gc_bitctl c;
    gc_bitctl_init(&c, &vp);
    gc_width_policy pol = gc_bitctl_policy(&c);
    gc_bucket_stats s = crest_stats(1000, 250.0);  /* bin 4 */
    for (int i = 1; i <= 10; i++) pol.observe(pol.ctx, &s, 3, i * 250.0);
    cr_assert(fabs(c.err[4][2] - 5.5) < 1e-12, "mean of 1..10: %g", c.err[4][2]);
    pol.observe(pol.ctx, &s, 3, 16.5 * 250.0);
    cr_assert(fabs(c.err[4][2] - 6.6) < 1e-12, "5.5 + 0.1 (16.5 - 5.5): %g", c.err[4][2]);
    cr_assert_eq(c.seen[4][2], 11);
    /* A width that is not a candidate teaches nothing. */
    vp.widths[0] = 2; vp.widths[1] = 4;
    vp.n_widths = 2;
    gc_bitctl_init(&c, &vp);
    pol = gc_bitctl_policy(&c);
    pol.observe(pol.ctx, &s, 3, 250.0);
    for (unsigned a = 0; a < GC_VAR_MAX_WIDTHS; a++) cr_assert_eq(c.seen[4][a], 0);
}

Test(bitctl, init_keeps_the_valid_ascending_widths)
{
    gc_var_params vp = ctl_params(0.01);
    vp.widths[0] = 3; vp.widths[1] = 2; vp.widths[2] = 9; vp.widths[3] = 5;
    vp.n_widths = 4;
    gc_bitctl c;
    gc_bitctl_init(&c, &vp);
    cr_assert_eq(c.p.n_widths, 2);
    cr_assert_eq(c.p.widths[0], 3);
    cr_assert_eq(c.p.widths[1], 5);
    cr_assert_eq(c.p.target, 0.01);
    vp.n_widths = 0;
    gc_bitctl_init(&c, &vp);
    cr_assert_eq(c.p.n_widths, 1);
    cr_assert_eq(c.p.widths[0], 8);
}

/* A stationary stream: each step a fresh N(0, 1) vector of n = 81920,
 * ratio 0.05, buckets of 256: 16 buckets of the top 5% per step. */
#define STREAM_N 81920
#define STREAM_BUCKET 256
#define STREAM_BUCKETS 16
#define STREAM_STEPS 60

typedef struct stream_log {
    gc_width_policy inner;  /* choose() is NULL: record only */
    unsigned fixed;         /* width to answer without inner */
    size_t count;
    unsigned chosen[STREAM_BUCKETS * STREAM_STEPS];
    double rel_sum[9];      /* sum of err_sq / l2sq per width */
    size_t rel_count[9];
} stream_log;

static unsigned stream_choose(void *ctx, const gc_bucket_stats *s)
{
    stream_log *l = ctx;
    unsigned b = l->inner.choose ? l->inner.choose(l->inner.ctx, s) : l->fixed;
    cr_assert_lt(l->count, STREAM_BUCKETS * STREAM_STEPS);
    l->chosen[l->count++] = b;
    return b;
}

static void stream_observe(void *ctx, const gc_bucket_stats *s, unsigned bits, double err_sq)
{
    stream_log *l = ctx;
    if (l->inner.observe) l->inner.observe(l->inner.ctx, s, bits, err_sq);
    l->rel_sum[bits] += err_sq / s->l2sq;
    l->rel_count[bits]++;
}

static void run_stream(stream_log *l)
{
    gc_params p = qparams(8, STREAM_BUCKET, 0.05);
    float *g = test_alloc(STREAM_N);
    gc_workspace *ws = gc_workspace_create();
    gc_width_policy pol = {l, stream_choose, stream_observe};
    gc_workspace_set_width_policy(ws, &pol);
    uint64_t rng = 2024;
    for (int step = 0; step < STREAM_STEPS; step++) {
        fill_gaussian(g, STREAM_N, &rng);
        payload pl = encode("topkq", &p, g, NULL, STREAM_N, ws);
        free(pl.buf);
    }
    cr_assert_eq(l->count, STREAM_BUCKETS * STREAM_STEPS);
    gc_workspace_free(ws);
    free(g);
}

/* Mean relative error energy of width b over the stream. */
static double measured_error(unsigned b)
{
    stream_log *l = calloc(1, sizeof *l);
    l->fixed = b;
    run_stream(l);
    double e = l->rel_sum[b] / (double)l->rel_count[b];
    free(l);
    return e;
}

/* Run the controller with target over the stream; the share of decisions
 * from `from` on that chose `want`, and the first decision. */
static double controller_share(double target, size_t from, unsigned want, unsigned *first,
                               unsigned *widest_late)
{
    gc_var_params vp = ctl_params(target);
    gc_bitctl c;
    gc_bitctl_init(&c, &vp);
    stream_log *l = calloc(1, sizeof *l);
    l->inner = gc_bitctl_policy(&c);
    run_stream(l);
    size_t hits = 0;
    *widest_late = 0;
    for (size_t i = from; i < l->count; i++) {
        hits += l->chosen[i] == want;
        *widest_late = l->chosen[i] > *widest_late ? l->chosen[i] : *widest_late;
    }
    *first = l->chosen[0];
    double share = (double)hits / (double)(l->count - from);
    cr_assert_eq(c.chosen_buckets, l->count);
    free(l);
    return share;
}

Test(bitctl, converges_to_the_cheapest_width_that_meets_the_target)
{
    /* Measured on the stream itself: target 0.0035 is met by 4 bits on
     * average but not by 3 (nor 1, 2). */
    const double target = 0.0035;
    double e[5];
    for (unsigned b = 1; b <= 4; b++) e[b] = measured_error(b);
    cr_assert_leq(e[4], target, "4 bits: %g", e[4]);
    for (unsigned b = 1; b <= 3; b++) cr_assert_gt(e[b], target, "%u bits: %g", b, e[b]);
    /* The prior (pessimistic for top-k buckets) starts wider; after 320
     * decisions (20 steps) the controller sits on 4 at least 90% of the
     * time, the rest being exploration of 3 and rare wide buckets. */
    unsigned first, widest;
    double share = controller_share(target, 320, 4, &first, &widest);
    cr_assert_gt(first, 4, "the prior chose %u", first);
    cr_assert_geq(share, 0.9, "4 bits in %.3f of the decisions", share);
    cr_assert_leq(widest, 5, "a width of %u after convergence", widest);
}

Test(bitctl, a_looser_target_converges_to_a_cheaper_width)
{
    /* Target 0.01: 3 bits meet it on average, 1 and 2 do not. */
    const double target = 0.01;
    double e[4];
    for (unsigned b = 1; b <= 3; b++) e[b] = measured_error(b);
    cr_assert_leq(e[3], target, "3 bits: %g", e[3]);
    cr_assert_gt(e[1], target, "1 bit: %g", e[1]);
    cr_assert_gt(e[2], target, "2 bits: %g", e[2]);
    unsigned first, widest;
    double share = controller_share(target, 320, 3, &first, &widest);
    cr_assert_geq(share, 0.9, "3 bits in %.3f of the decisions", share);
    cr_assert_leq(widest, 4, "a width of %u after convergence", widest);
}

Test(bitctl, exploration_finds_a_cheaper_width_below_a_too_coarse_one)
{
    /* On top-k buckets 1 bit (sign and mean magnitude) has less error than
     * 2 bits (magnitude levels lo and hi only): with a target between
     * them, 1 bit is the cheapest width that meets it, below one that
     * does not. */
    double e[4];
    for (unsigned b = 1; b <= 3; b++) e[b] = measured_error(b);
    cr_assert_lt(e[1], e[2], "1 bit %g, 2 bits %g", e[1], e[2]);
    const double target = (e[1] + e[2]) / 2;
    cr_assert_leq(e[3], target, "3 bits: %g", e[3]);
    unsigned first, widest;
    double share = controller_share(target, 320, 1, &first, &widest);
    cr_assert_geq(share, 0.9, "1 bit in %.3f of the decisions", share);
}
