/* test_sparse.c — topk, randk and dgc: which elements they keep, the index
 * coding, error feedback, momentum correction, parameter checks and
 * malformed bodies. */
#include "test_util.h"

#include <float.h>

#include "sparse_index.h"

/* ---- helpers -------------------------------------------------------------- */

static const gc_codec *codec(const char *name)
{
    const gc_codec *c = gc_codec_by_name(name);
    cr_assert_not_null(c, "codec %s not registered", name);
    return c;
}

/* The contract: ceil(ratio * n), at least 1 when n > 0, at most n. */
static size_t expected_k(size_t n, double ratio)
{
    if (n == 0) return 0;
    double k = ceil(ratio * (double)n);
    if (k < 1) return 1;
    return k >= (double)n ? n : (size_t)k;
}

typedef struct payload {
    uint8_t *buf;
    size_t len;
} payload;

static payload encode(const char *name, const gc_params *p, const float *g, float *r, size_t n,
                      uint64_t seed, gc_workspace *ws)
{
    const gc_codec *c = codec(name);
    size_t cap = gc_bound(c, n, p);
    cr_assert(!gc_is_error(cap), "%s bound: %s", name, gc_error_name(cap));
    payload pl = {malloc(cap), 0};
    cr_assert_not_null(pl.buf);
    pl.len = gc_encode(c, g, r, n, p, seed, pl.buf, cap, ws);
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

static size_t count_nonzero(const float *x, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += x[i] != 0.0f;
    return c;
}

/* Reference top-k by a full sort: magnitude descending, then index. */
static const float *sort_key;
static int by_magnitude_then_index(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    float x = fabsf(sort_key[i]), y = fabsf(sort_key[j]);
    if (x != y) return x > y ? -1 : 1;
    return i < j ? -1 : 1;
}

/* mask[i] = 1 for the k elements a top-k must keep. */
static uint8_t *reference_topk(const float *v, size_t n, size_t k)
{
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    uint8_t *mask = calloc(n ? n : 1, 1);
    cr_assert(order && mask);
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    sort_key = v;
    qsort(order, n, sizeof *order, by_magnitude_then_index);
    for (size_t j = 0; j < k; j++) mask[order[j]] = 1;
    free(order);
    return mask;
}

/* out must be v on the masked elements and zero elsewhere. */
static void assert_sparsified(const float *out, const float *v, const uint8_t *mask, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float want = mask[i] ? v[i] : 0.0f;
        cr_assert(out[i] == want, "element %zu of %zu: got %g, want %g", i, n, out[i], want);
    }
}

/* The sent elements are a magnitude threshold: none left out is larger. */
static void assert_threshold_set(const float *out, const float *v, size_t n)
{
    float min_sent = INFINITY, max_left = 0.0f;
    for (size_t i = 0; i < n; i++) {
        if (out[i] != 0.0f) {
            cr_assert(out[i] == v[i], "sent value %zu altered", i);
            min_sent = fminf(min_sent, fabsf(v[i]));
        } else {
            max_left = fmaxf(max_left, fabsf(v[i]));
        }
    }
    cr_assert_geq(min_sent, max_left);
}

static gc_params params(double ratio)
{
    gc_params p;
    gc_params_default(&p);
    p.ratio = ratio;
    return p;
}

/* A payload made by hand: header + body. */
static payload handmade(unsigned id, size_t n, const uint8_t *body, size_t blen)
{
    payload pl = {calloc(1, GC_HEADER_SIZE + blen), GC_HEADER_SIZE + blen};
    cr_assert_not_null(pl.buf);
    pl.buf[0] = 'G';
    pl.buf[1] = 'C';
    pl.buf[2] = GC_FORMAT_VERSION;
    pl.buf[3] = (uint8_t)id;
    for (int i = 0; i < 8; i++) {
        pl.buf[8 + i] = (uint8_t)((uint64_t)n >> (8 * i));
        pl.buf[16 + i] = (uint8_t)((uint64_t)pl.len >> (8 * i));
    }
    memcpy(pl.buf + GC_HEADER_SIZE, body, blen);
    return pl;
}

static size_t decode_error(payload pl, size_t n)
{
    float *out = test_alloc(n);
    size_t r = gc_decode_add(pl.buf, pl.len, out, n, NULL);
    free(out);
    return gc_error_code(r);
}

/* Every shorter body (header length adjusted) must be refused as truncated. */
static void assert_truncations_refused(payload pl, size_t n)
{
    uint8_t *cut = malloc(pl.len);
    float *out = test_alloc(n);
    for (size_t len = GC_HEADER_SIZE; len < pl.len; len++) {
        memcpy(cut, pl.buf, len);
        for (int i = 0; i < 8; i++) cut[16 + i] = (uint8_t)((uint64_t)len >> (8 * i));
        size_t r = gc_decode_add(cut, len, out, n, NULL);
        cr_assert_eq(gc_error_code(r), GC_ERR_TRUNCATED, "body cut to %zu of %zu bytes",
                     len - GC_HEADER_SIZE, pl.len - GC_HEADER_SIZE);
    }
    free(cut);
    free(out);
}

static const char *const sparse_codecs[] = {"topk", "dgc", "randk"};

/* ---- topk ----------------------------------------------------------------- */

Test(topk, keeps_exactly_the_k_largest_magnitudes_on_every_size)
{
    const double ratios[] = {0.01, 0.1};
    gc_workspace *ws = gc_workspace_create();
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        for (size_t q = 0; q < 2; q++) {
            size_t n = test_sizes[s], k = expected_k(n, ratios[q]);
            gc_params p = params(ratios[q]);
            float *g = test_alloc(n);
            fill_laplace(g, n, 1.0, 11 + s);
            payload pl = encode("topk", &p, g, NULL, n, 0, ws);
            cr_assert_eq(gc_workspace_report(ws)->kept, k);
            float *out = decode(pl, n);
            uint8_t *mask = reference_topk(g, n, k);
            assert_sparsified(out, g, mask, n);
            free(mask); free(out); free(pl.buf); free(g);
        }
    }
    gc_workspace_free(ws);
}

Test(topk, equal_magnitudes_keep_the_lowest_indices)
{
    const size_t sizes[] = {7, 1000, (1u << 20) + 3};
    for (size_t s = 0; s < 3; s++) {
        size_t n = sizes[s], k = expected_k(n, 0.01);
        float *g = test_alloc(n);
        for (size_t i = 0; i < n; i++) g[i] = (i % 3) ? 2.5f : -2.5f;
        gc_params p = params(0.01);
        payload pl = encode("topk", &p, g, NULL, n, 0, NULL);
        float *out = decode(pl, n);
        for (size_t i = 0; i < n; i++)
            cr_assert(out[i] == (i < k ? g[i] : 0.0f), "n=%zu element %zu", n, i);
        free(out); free(pl.buf); free(g);
    }
}

Test(topk, ties_among_few_magnitudes_match_the_reference)
{
    /* Many equal magnitudes straddling the k-th: the tie rule decides. */
    size_t n = 100003;
    float *g = test_alloc(n);
    uint64_t st = 5;
    for (size_t i = 0; i < n; i++)
        g[i] = (float)(test_rng_next(&st) % 7) * ((test_rng_next(&st) & 1) ? 1.0f : -1.0f);
    const double ratios[] = {0.01, 0.3, 0.5, 0.9};
    for (size_t q = 0; q < 4; q++) {
        gc_params p = params(ratios[q]);
        payload pl = encode("topk", &p, g, NULL, n, 0, NULL);
        float *out = decode(pl, n);
        uint8_t *mask = reference_topk(g, n, expected_k(n, ratios[q]));
        assert_sparsified(out, g, mask, n);
        free(mask); free(out); free(pl.buf);
    }
    free(g);
}

/* Vectors of 64 Ki elements and more, keeping at most 1/16, are selected
 * in one pass from a threshold a strided sample sets (sparse_index.c);
 * where the sample misleads, the two-pass path takes over. Each way gives
 * the exact top k of v = g + r and leaves v less what was sent. The
 * sample reads every 64th element from the 32nd (n = 2^18): spikes there
 * set the threshold so high that fewer than k reach it, zeros there so
 * low that nearly every element does. */
Test(topk, one_pass_selection_is_exact_whatever_the_sample_saw)
{
    const size_t n = 1u << 18;
    const double ratios[] = {0.001, 0.01, 0.05, 0.2};
    gc_workspace *ws = gc_workspace_create();
    for (int shape = 0; shape < 3; shape++)
        for (size_t q = 0; q < 4; q++) {
            float *g = test_alloc(n), *r = test_alloc(n), *v = test_alloc(n);
            fill_laplace(g, n, 1.0, 31 + shape);
            fill_laplace(r, n, 0.25, 41 + shape);
            for (size_t i = 32; i < n; i += 64) {
                if (shape == 1) g[i] = 1000.0f + (float)i, r[i] = 0.0f;
                if (shape == 2) g[i] = r[i] = 0.0f;
            }
            for (size_t i = 0; i < n; i++) v[i] = g[i] + r[i];
            const size_t k = expected_k(n, ratios[q]);
            gc_params p = params(ratios[q]);
            payload pl = encode("topk", &p, g, r, n, 0, ws);
            cr_assert_eq(gc_workspace_report(ws)->kept, k);
            float *out = decode(pl, n);
            uint8_t *mask = reference_topk(v, n, k);
            assert_sparsified(out, v, mask, n);
            for (size_t i = 0; i < n; i++)
                cr_assert(r[i] == (mask[i] ? 0.0f : v[i]), "shape %d ratio %g: residual %zu",
                          shape, ratios[q], i);
            free(mask); free(out); free(pl.buf); free(g); free(r); free(v);
        }
    gc_workspace_free(ws);
}

Test(topk, extremes_and_zeros_are_ordered_by_magnitude)
{
    /* (inf and NaN: test_nonfinite.c, a flagged payload) */
    float g[10] = {0.0f, -0.0f, 1.0f, -FLT_MAX, 3.0f, FLT_MAX, -2.0f, 0.5f, 0.0f, 1e-40f};
    gc_params p = params(0.4);
    payload pl = encode("topk", &p, g, NULL, 10, 0, NULL);
    float *out = decode(pl, 10);
    uint8_t *mask = reference_topk(g, 10, 4);
    assert_sparsified(out, g, mask, 10);
    cr_assert(mask[3] && mask[5] && mask[4] && mask[6]);
    free(mask); free(out); free(pl.buf);
}

Test(topk, sparse_sets_use_deltas_and_dense_sets_a_bitmap)
{
    size_t n = (1u << 20) + 3;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 21);
    const double ratios[] = {0.01, 0.5};
    const unsigned modes[] = {GC_SPARSE_DELTA, GC_SPARSE_BITMAP};
    for (size_t q = 0; q < 2; q++) {
        size_t k = expected_k(n, ratios[q]);
        gc_params p = params(ratios[q]);
        payload pl = encode("topk", &p, g, NULL, n, 0, NULL);
        cr_assert_eq(pl.buf[GC_HEADER_SIZE + 4], modes[q], "ratio %g", ratios[q]);
        size_t bitmap_len = GC_HEADER_SIZE + 5 + (n + 7) / 8 + 4 * k;
        if (modes[q] == GC_SPARSE_DELTA) {
            /* Gaps average 1/ratio = 100: about 9 bits an index, not 100. */
            cr_assert_lt(pl.len, GC_HEADER_SIZE + 5 + 4 * k + 2 * k);
            cr_assert_lt(pl.len, bitmap_len);
        } else {
            cr_assert_eq(pl.len, bitmap_len);
        }
        float *out = decode(pl, n);
        uint8_t *mask = reference_topk(g, n, k);
        assert_sparsified(out, g, mask, n);
        free(mask); free(out); free(pl.buf);
    }
    free(g);
}

Test(topk, wide_gaps_round_trip_in_delta_mode)
{
    /* Gaps from 1 to about 2^20 in one block: wide delta fields. */
    size_t n = (1u << 20) + 3;
    float *g = test_alloc(n);
    const size_t at[] = {0, 1, 3, 1000, 70000, (1u << 20), (1u << 20) + 2};
    for (size_t j = 0; j < 7; j++) g[at[j]] = (float)(j + 1);
    gc_params p = params(7.0 / (double)n);
    payload pl = encode("topk", &p, g, NULL, n, 0, NULL);
    cr_assert_eq(pl.buf[GC_HEADER_SIZE + 4], GC_SPARSE_DELTA);
    float *out = decode(pl, n);
    for (size_t i = 0; i < n; i++) cr_assert(out[i] == g[i], "element %zu", i);
    free(out); free(pl.buf); free(g);
}

/* ---- randk ---------------------------------------------------------------- */

Test(randk, keeps_exactly_k_distinct_indices_on_every_size)
{
    gc_workspace *ws = gc_workspace_create();
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s], k = expected_k(n, 0.01);
        gc_params p = params(0.01);
        float *g = test_alloc(n);
        for (size_t i = 0; i < n; i++) g[i] = (float)i + 1.0f;  /* all nonzero */
        cr_assert_eq(gc_randk_count(n, &p), k);
        uint32_t *idx = malloc((k ? k : 1) * sizeof *idx);
        cr_assert_eq(gc_randk_indices(n, &p, 77, idx, ws), k);
        for (size_t j = 1; j < k; j++) cr_assert_lt(idx[j - 1], idx[j]);
        if (k) cr_assert_lt(idx[k - 1], n);

        payload pl = encode("randk", &p, g, NULL, n, 77, ws);
        cr_assert_eq(gc_workspace_report(ws)->kept, k);
        cr_assert_eq(pl.len, GC_HEADER_SIZE + 13 + 4 * k);
        float *out = decode(pl, n);
        cr_assert_eq(count_nonzero(out, n), k);
        for (size_t j = 0; j < k; j++) cr_assert(out[idx[j]] == g[idx[j]]);
        free(out); free(pl.buf); free(idx); free(g);
    }
    gc_workspace_free(ws);
}

Test(randk, the_seed_alone_decides_the_indices)
{
    size_t n = 100000;
    gc_params p = params(0.01);
    size_t k = expected_k(n, p.ratio);
    uint32_t *a = malloc(k * 4), *b = malloc(k * 4), *c = malloc(k * 4);
    cr_assert_eq(gc_randk_indices(n, &p, 42, a, NULL), k);
    cr_assert_eq(gc_randk_indices(n, &p, 42, b, NULL), k);
    cr_assert_eq(gc_randk_indices(n, &p, 43, c, NULL), k);
    cr_assert(memcmp(a, b, k * 4) == 0);
    cr_assert(memcmp(a, c, k * 4) != 0);

    /* Two "ranks" with different data but the same seed send the same
     * indices: the decoded sum is the sparsified sum (what MPI computes). */
    float *g1 = test_alloc(n), *g2 = test_alloc(n), *sum = test_alloc(n);
    fill_laplace(g1, n, 1.0, 1);
    fill_laplace(g2, n, 1.0, 2);
    for (size_t i = 0; i < n; i++) sum[i] = g1[i] + g2[i];
    payload p1 = encode("randk", &p, g1, NULL, n, 42, NULL);
    payload p2 = encode("randk", &p, g2, NULL, n, 42, NULL);
    payload ps = encode("randk", &p, sum, NULL, n, 42, NULL);
    float *acc = decode(p1, n), *want = decode(ps, n);
    cr_assert(!gc_is_error(gc_decode_add(p2.buf, p2.len, acc, n, NULL)));
    for (size_t i = 0; i < n; i++) cr_assert(acc[i] == want[i], "element %zu", i);
    cr_assert(gc_codec_flags(codec("randk")) & GC_LINEAR);
    free(acc); free(want); free(p1.buf); free(p2.buf); free(ps.buf);
    free(g1); free(g2); free(sum); free(a); free(b); free(c);
}

Test(randk, indices_are_uniform_over_seeds)
{
    /* Chi-square of how often each of 1000 indices is picked by 10000
     * seeds (k = 10): mean 990, standard deviation about 45. */
    size_t n = 1000, seeds = 10000;
    gc_params p = params(0.01);
    size_t k = expected_k(n, p.ratio);
    uint32_t idx[10];
    cr_assert_eq(k, 10);
    double *count = calloc(n, sizeof *count);
    gc_workspace *ws = gc_workspace_create();
    for (uint64_t s = 0; s < seeds; s++) {
        cr_assert_eq(gc_randk_indices(n, &p, s, idx, ws), k);
        for (size_t j = 0; j < k; j++) count[idx[j]] += 1;
    }
    double expect = (double)seeds * (double)k / (double)n, chi2 = 0;
    for (size_t i = 0; i < n; i++) chi2 += (count[i] - expect) * (count[i] - expect) / expect;
    cr_assert(chi2 > 990 - 6 * 45 && chi2 < 990 + 6 * 45, "chi2 = %g", chi2);

    /* Large n: 64 equal buckets over 20 seeds, about 3277 picks each. */
    size_t big = (1u << 20) + 3, kb = expected_k(big, p.ratio);
    uint32_t *bidx = malloc(kb * sizeof *bidx);
    double bucket[64] = {0};
    for (uint64_t s = 0; s < 20; s++) {
        cr_assert_eq(gc_randk_indices(big, &p, 1000 + s, bidx, ws), kb);
        for (size_t j = 0; j < kb; j++) bucket[(uint64_t)bidx[j] * 64 / big] += 1;
    }
    double bexp = 20.0 * (double)kb / 64, bchi2 = 0;
    for (int b = 0; b < 64; b++) bchi2 += (bucket[b] - bexp) * (bucket[b] - bexp) / bexp;
    cr_assert_lt(bchi2, 63 + 6 * sqrt(126.0), "bucket chi2 = %g", bchi2);
    free(bidx); free(count);
    gc_workspace_free(ws);
}

Test(randk, unbiased_scaling_averages_to_the_input)
{
    size_t n = 100, seeds = 20000;
    gc_params p = params(0.1);
    p.flags = GC_PF_RANDK_UNBIASED;
    float g[100];
    for (size_t i = 0; i < n; i++) g[i] = (float)(i + 1) * ((i & 1) ? -0.01f : 0.01f);
    float *acc = test_alloc(n);
    gc_workspace *ws = gc_workspace_create();
    size_t cap = gc_bound(codec("randk"), n, &p);
    uint8_t *buf = malloc(cap);
    for (uint64_t s = 0; s < seeds; s++) {
        size_t len = gc_encode(codec("randk"), g, NULL, n, &p, s, buf, cap, ws);
        cr_assert(!gc_is_error(len));
        cr_assert(!gc_is_error(gc_decode_add(buf, len, acc, n, ws)));
    }
    /* Each mean has a standard deviation of |g| sqrt((n/k - 1) / seeds) = 0.021 |g|. */
    float mean[100];
    for (size_t i = 0; i < n; i++) {
        mean[i] = acc[i] / (float)seeds;
        cr_assert_leq(fabsf(mean[i] - g[i]), 0.1f * fabsf(g[i]), "element %zu: mean %g, g %g",
                      i, mean[i], g[i]);
    }
    cr_assert_lt(rel_l2_error(g, mean, n), 0.03);

    /* Without the flag the values are sent as they are. */
    p.flags = 0;
    payload pl = encode("randk", &p, g, NULL, n, 3, ws);
    float *out = decode(pl, n);
    for (size_t i = 0; i < n; i++) cr_assert(out[i] == 0.0f || out[i] == g[i]);
    free(out); free(pl.buf); free(buf); free(acc);
    gc_workspace_free(ws);
}

/* ---- dgc ------------------------------------------------------------------ */

static size_t dgc_lo(size_t k, double tol)
{
    double lo = ceil((double)k * (1.0 - tol));
    return lo < 1 ? 1 : (size_t)lo;
}

static size_t dgc_hi(size_t n, size_t k, double tol)
{
    double hi = floor((double)k * (1.0 + tol));
    return hi >= (double)n ? n : (size_t)hi;
}

Test(dgc, sends_a_threshold_set_within_tolerance_on_every_size)
{
    gc_params p = params(0.01);
    gc_workspace *ws = gc_workspace_create();
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s], k = expected_k(n, p.ratio);
        float *g = test_alloc(n);
        fill_laplace(g, n, 1.0, 31 + s);
        for (uint64_t seed = 1; seed <= 4; seed++) {
            payload pl = encode("dgc", &p, g, NULL, n, seed, ws);
            size_t sent = gc_workspace_report(ws)->kept;
            float *out = decode(pl, n);
            cr_assert_eq(count_nonzero(out, n), sent);
            if (n <= 1024) {
                /* The sample would be all of v: the exact top-k is sent. */
                uint8_t *mask = reference_topk(g, n, k);
                assert_sparsified(out, g, mask, n);
                free(mask);
            } else {
                cr_assert(sent >= dgc_lo(k, p.dgc_tolerance) && sent <= dgc_hi(n, k, p.dgc_tolerance),
                          "n=%zu seed=%llu: sent %zu, k %zu", n, (unsigned long long)seed, sent, k);
                assert_threshold_set(out, g, n);
            }
            free(out); free(pl.buf);
        }
        free(g);
    }
    gc_workspace_free(ws);
}

Test(dgc, the_threshold_comes_from_the_sample)
{
    /* With a wide tolerance the sampled threshold is accepted as it is, so
     * the count varies with the seed around k instead of being exactly k. */
    size_t n = (1u << 20) + 3;
    gc_params p = params(0.01);
    p.dgc_tolerance = 10;
    size_t k = expected_k(n, p.ratio), differs = 0;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 41);
    gc_workspace *ws = gc_workspace_create();
    for (uint64_t seed = 1; seed <= 4; seed++) {
        payload pl = encode("dgc", &p, g, NULL, n, seed, ws);
        size_t sent = gc_workspace_report(ws)->kept;
        differs += sent != k;
        cr_assert(sent > k / 2 && sent < 2 * k, "sent %zu, k %zu", sent, k);
        float *out = decode(pl, n);
        assert_threshold_set(out, g, n);
        free(out); free(pl.buf);
    }
    cr_assert_geq(differs, 3);
    free(g);
    gc_workspace_free(ws);
}

Test(dgc, zero_tolerance_refines_to_the_exact_top_k)
{
    /* Every seed's sampled count misses k (above or below); each miss must
     * be refined to the exact top-k. */
    size_t n = (1u << 20) + 3;
    gc_params p = params(0.01);
    p.dgc_tolerance = 0;
    size_t k = expected_k(n, p.ratio);
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 51);
    uint8_t *mask = reference_topk(g, n, k);
    gc_workspace *ws = gc_workspace_create();
    for (uint64_t seed = 1; seed <= 6; seed++) {
        payload pl = encode("dgc", &p, g, NULL, n, seed, ws);
        cr_assert_eq(gc_workspace_report(ws)->kept, k);
        float *out = decode(pl, n);
        assert_sparsified(out, g, mask, n);
        free(out); free(pl.buf);
    }
    free(mask); free(g);
    gc_workspace_free(ws);
}

Test(dgc, equal_magnitudes_are_refined_to_the_lowest_indices)
{
    size_t n = (1u << 20) + 3, k = expected_k(n, 0.01);
    float *g = test_alloc(n);
    for (size_t i = 0; i < n; i++) g[i] = (i & 1) ? -0.75f : 0.75f;
    gc_params p = params(0.01);
    gc_workspace *ws = gc_workspace_create();
    payload pl = encode("dgc", &p, g, NULL, n, 9, ws);
    cr_assert_eq(gc_workspace_report(ws)->kept, k);
    float *out = decode(pl, n);
    for (size_t i = 0; i < n; i++) cr_assert(out[i] == (i < k ? g[i] : 0.0f), "element %zu", i);
    free(out); free(pl.buf); free(g);
    gc_workspace_free(ws);
}

Test(dgc, mostly_zero_vectors_are_refined_to_the_exact_top_k)
{
    /* 100 nonzeros, k = 10486: the sampled threshold is 0 and selects all. */
    size_t n = (1u << 20) + 3, k = expected_k(n, 0.01);
    float *g = test_alloc(n);
    for (size_t j = 0; j < 100; j++) g[(j * 10007 + 13) % n] = (float)(j + 1) * 0.01f;
    gc_params p = params(0.01);
    gc_workspace *ws = gc_workspace_create();
    payload pl = encode("dgc", &p, g, NULL, n, 9, ws);
    cr_assert_eq(gc_workspace_report(ws)->kept, k);
    float *out = decode(pl, n);
    uint8_t *mask = reference_topk(g, n, k);
    assert_sparsified(out, g, mask, n);
    for (size_t j = 0; j < 100; j++) cr_assert(mask[(j * 10007 + 13) % n]);
    free(mask); free(out); free(pl.buf); free(g);
    gc_workspace_free(ws);
}

Test(dgc, huge_outliers_are_always_sent)
{
    size_t n = (1u << 20) + 3, k = expected_k(n, 0.01);
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 61);
    const size_t at[] = {5, 77777, 500000, (1u << 20) + 2};
    for (size_t j = 0; j < 4; j++) g[at[j]] = (j & 1 ? -1e30f : 1e30f) * (float)(j + 1);
    gc_params p = params(0.01);
    gc_workspace *ws = gc_workspace_create();
    for (uint64_t seed = 1; seed <= 3; seed++) {
        payload pl = encode("dgc", &p, g, NULL, n, seed, ws);
        size_t sent = gc_workspace_report(ws)->kept;
        cr_assert(sent >= dgc_lo(k, p.dgc_tolerance) && sent <= dgc_hi(n, k, p.dgc_tolerance));
        float *out = decode(pl, n);
        for (size_t j = 0; j < 4; j++) cr_assert(out[at[j]] == g[at[j]]);
        assert_threshold_set(out, g, n);
        free(out); free(pl.buf);
    }
    free(g);
    gc_workspace_free(ws);
}

/* ---- all three: error feedback, momentum, parameters, bounds ------------- */

Test(sparse, error_feedback_loses_nothing)
{
    gc_workspace *ws = gc_workspace_create();
    for (size_t c = 0; c < 3; c++) {
        for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
            size_t n = test_sizes[s];
            gc_params p = params(0.05);
            float *g = test_alloc(n), *r = test_alloc(n), *v = test_alloc(n);
            fill_laplace(g, n, 1.0, 71 + s);
            fill_laplace(r, n, 0.5, 81 + s);
            for (size_t i = 0; i < n; i++) v[i] = g[i] + r[i];
            payload pl = encode(sparse_codecs[c], &p, g, r, n, 5, ws);
            float *out = decode(pl, n);
            size_t sent = 0;
            for (size_t i = 0; i < n; i++) {
                cr_assert(out[i] + r[i] == v[i], "%s n=%zu element %zu", sparse_codecs[c], n, i);
                /* Each element is either sent exactly or kept whole. */
                cr_assert((out[i] == v[i] && r[i] == 0.0f) || (out[i] == 0.0f && r[i] == v[i]));
                sent += out[i] != 0.0f;
            }
            cr_assert_eq(sent, gc_workspace_report(ws)->kept, "%s n=%zu", sparse_codecs[c], n);
            free(out); free(pl.buf); free(g); free(r); free(v);
        }
    }
    gc_workspace_free(ws);
}

Test(sparse, momentum_correction_clears_u_and_v_exactly_where_sent)
{
    const size_t sizes[] = {1, 1000, (1u << 20) + 3};
    const float m = 0.9f;
    for (size_t c = 0; c < 3; c++) {
        for (size_t s = 0; s < 3; s++) {
            size_t n = sizes[s];
            gc_params p = params(0.01);
            const gc_codec *cd = codec(sparse_codecs[c]);
            float *g = test_alloc(n), *u = test_alloc(n), *v = test_alloc(n);
            float *u1 = test_alloc(n), *v1 = test_alloc(n), *out = test_alloc(n);
            fill_laplace(g, n, 1.0, 91 + s);
            fill_laplace(u, n, 1.0, 92 + s);
            fill_laplace(v, n, 3.0, 93 + s);
            for (size_t i = 0; i < n; i++) {
                u1[i] = m * u[i] + g[i];
                v1[i] = v[i] + u1[i];
            }
            size_t cap = gc_bound(cd, n, &p);
            uint8_t *buf = malloc(cap);
            gc_workspace *ws = gc_workspace_create();
            size_t len = gc_encode_momentum(cd, g, u, v, n, m, &p, 17, buf, cap, ws);
            cr_assert(!gc_is_error(len), "%s: %s", sparse_codecs[c], gc_error_name(len));
            cr_assert(!gc_is_error(gc_decode_add(buf, len, out, n, ws)));
            cr_assert_eq(count_nonzero(out, n), gc_workspace_report(ws)->kept);

            uint8_t *sent = calloc(n, 1);
            if (c == 0) {
                uint8_t *mask = reference_topk(v1, n, expected_k(n, p.ratio));
                memcpy(sent, mask, n);
                free(mask);
            } else if (c == 2) {
                size_t k = expected_k(n, p.ratio);
                uint32_t *idx = malloc(k * sizeof *idx);
                cr_assert_eq(gc_randk_indices(n, &p, 17, idx, NULL), k);
                for (size_t j = 0; j < k; j++) sent[idx[j]] = 1;
                free(idx);
            } else {
                for (size_t i = 0; i < n; i++) sent[i] = out[i] != 0.0f;
            }
            for (size_t i = 0; i < n; i++) {
                if (sent[i]) {
                    cr_assert(out[i] == v1[i] && u[i] == 0.0f && v[i] == 0.0f,
                              "%s n=%zu sent element %zu", sparse_codecs[c], n, i);
                } else {
                    cr_assert(out[i] == 0.0f && u[i] == u1[i] && v[i] == v1[i],
                              "%s n=%zu kept element %zu", sparse_codecs[c], n, i);
                }
            }
            gc_workspace_free(ws);
            free(sent); free(buf); free(g); free(u); free(v); free(u1); free(v1); free(out);
        }
    }
}

Test(sparse, bad_ratios_are_named_with_their_range)
{
    const double bad[] = {0.0, 1.5, NAN, -0.25};
    const char *const text[] = {
        "ratio=0 is out of range; expected a number in (0, 1]",
        "ratio=1.5 is out of range; expected a number in (0, 1]",
        "ratio=nan is out of range; expected a number in (0, 1]",
        "ratio=-0.25 is out of range; expected a number in (0, 1]",
    };
    float g[4] = {1, 2, 3, 4};
    uint8_t buf[256];
    for (size_t c = 0; c < 3; c++) {
        for (size_t b = 0; b < 4; b++) {
            gc_params p = params(bad[b]);
            char msg[200] = "";
            size_t r = gc_params_check(codec(sparse_codecs[c]), &p, msg, sizeof msg);
            cr_assert_eq(gc_error_code(r), GC_ERR_PARAM);
            cr_assert_str_eq(msg, text[b]);
            r = gc_encode(codec(sparse_codecs[c]), g, NULL, 4, &p, 0, buf, sizeof buf, NULL);
            cr_assert_eq(gc_error_code(r), GC_ERR_PARAM);
        }
    }
    gc_params p = params(1.5);
    uint32_t idx[4];
    cr_assert_eq(gc_error_code(gc_randk_count(4, &p)), GC_ERR_PARAM);
    cr_assert_eq(gc_error_code(gc_randk_indices(4, &p, 0, idx, NULL)), GC_ERR_PARAM);
    p = params(1.0);
    cr_assert_eq(gc_params_check(codec("topk"), &p, NULL, 0), 0);
}

Test(dgc, bad_sample_and_tolerance_are_named_with_their_range)
{
    char msg[200];
    gc_params p = params(0.01);
    p.dgc_sample = 0;
    cr_assert_eq(gc_error_code(gc_params_check(codec("dgc"), &p, msg, sizeof msg)), GC_ERR_PARAM);
    cr_assert_str_eq(msg, "dgc_sample=0 is out of range; expected a number in (0, 1]");
    p = params(0.01);
    p.dgc_tolerance = 11;
    cr_assert_eq(gc_error_code(gc_params_check(codec("dgc"), &p, msg, sizeof msg)), GC_ERR_PARAM);
    cr_assert_str_eq(msg, "dgc_tolerance=11 is out of range; expected a number in [0, 10]");
    p.dgc_tolerance = NAN;
    cr_assert_eq(gc_error_code(gc_params_check(codec("dgc"), &p, msg, sizeof msg)), GC_ERR_PARAM);
    p = params(0.01);
    p.dgc_sample = 1.0;
    p.dgc_tolerance = 0.0;
    cr_assert_eq(gc_params_check(codec("dgc"), &p, NULL, 0), 0);
}

Test(sparse, small_destination_is_refused_and_leaves_the_residual)
{
    size_t n = 1000;
    float *g = test_alloc(n), *r = test_alloc(n), *r0 = test_alloc(n);
    fill_laplace(g, n, 1.0, 3);
    fill_laplace(r, n, 1.0, 4);
    memcpy(r0, r, n * sizeof(float));
    for (size_t c = 0; c < 3; c++) {
        gc_params p = params(0.01);
        size_t cap = gc_bound(codec(sparse_codecs[c]), n, &p);
        uint8_t *buf = malloc(cap);
        size_t len = gc_encode(codec(sparse_codecs[c]), g, r, n, &p, 0, buf, cap - 1, NULL);
        cr_assert_eq(gc_error_code(len), GC_ERR_DST_TOO_SMALL, "%s", sparse_codecs[c]);
        cr_assert(memcmp(r, r0, n * sizeof(float)) == 0, "%s", sparse_codecs[c]);
        free(buf);
    }
    free(g); free(r); free(r0);
}

Test(sparse, payloads_never_exceed_the_bound_at_any_ratio)
{
    size_t n = 4099;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 8);
    const double ratios[] = {1e-9, 0.001, 0.05, 0.2, 0.5, 0.9, 1.0};
    for (size_t c = 0; c < 3; c++) {
        for (size_t q = 0; q < 7; q++) {
            gc_params p = params(ratios[q]);
            p.dgc_tolerance = 10;
            payload pl = encode(sparse_codecs[c], &p, g, NULL, n, q, NULL);
            float *out = decode(pl, n);
            if (ratios[q] == 1.0 && c == 0)
                for (size_t i = 0; i < n; i++) cr_assert(out[i] == g[i]);
            free(out); free(pl.buf);
        }
    }
    free(g);
}

/* ---- malformed bodies ------------------------------------------------------ */

Test(sparse, truncated_bodies_are_refused)
{
    size_t n = 3000;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 12);
    const struct { const char *name; double ratio; } cases[] = {
        {"topk", 0.01}, {"topk", 0.5}, {"dgc", 0.01}, {"randk", 0.01},
    };
    for (size_t c = 0; c < 4; c++) {
        gc_params p = params(cases[c].ratio);
        payload pl = encode(cases[c].name, &p, g, NULL, n, 1, NULL);
        assert_truncations_refused(pl, n);
        free(pl.buf);
    }
    free(g);
}

Test(sparse, trailing_bytes_are_refused)
{
    size_t n = 3000;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 13);
    for (size_t c = 0; c < 3; c++) {
        gc_params p = params(0.01);
        payload pl = encode(sparse_codecs[c], &p, g, NULL, n, 1, NULL);
        size_t blen = pl.len - GC_HEADER_SIZE;
        uint8_t *body = calloc(blen + 1, 1);
        memcpy(body, pl.buf + GC_HEADER_SIZE, blen);
        payload longer = handmade(pl.buf[3], n, body, blen + 1);
        free(body);
        cr_assert_eq(decode_error(longer, n), GC_ERR_CORRUPT, "%s", sparse_codecs[c]);
        free(longer.buf); free(pl.buf);
    }
    free(g);
}

/* A delta body for n = 100: k one-byte deltas in one block, each value 1. */
static payload delta_body(unsigned id, size_t k, const uint8_t *deltas, unsigned width)
{
    uint8_t body[6 + 5 * 128] = {0};
    body[0] = (uint8_t)k;
    body[4] = GC_SPARSE_DELTA;
    body[5] = (uint8_t)width;
    memcpy(body + 6, deltas, k);
    for (size_t j = 0; j < k; j++) {
        float one = 1.0f;
        memcpy(body + 6 + k + 4 * j, &one, 4);
    }
    return handmade(id, 100, body, 6 + k + 4 * k);
}

Test(sparse, indices_out_of_range_or_not_increasing_are_refused)
{
    const unsigned ids[] = {GC_ID_TOPK, GC_ID_DGC};
    for (size_t c = 0; c < 2; c++) {
        /* The well-formed control: indices 5 and 8. */
        payload ok = delta_body(ids[c], 2, (const uint8_t[]){5, 3}, 8);
        float out[100] = {0};
        cr_assert(!gc_is_error(gc_decode_add(ok.buf, ok.len, out, 100, NULL)));
        cr_assert(out[5] == 1.0f && out[8] == 1.0f && count_nonzero(out, 100) == 2);

        payload far = delta_body(ids[c], 2, (const uint8_t[]){5, 95}, 8);  /* index 100 */
        payload same = delta_body(ids[c], 2, (const uint8_t[]){5, 0}, 8);  /* 5 twice */
        payload first = delta_body(ids[c], 1, (const uint8_t[]){100}, 8);  /* index 100 */
        payload wide = delta_body(ids[c], 1, (const uint8_t[]){1}, 33);    /* width 33 */
        payload many = delta_body(ids[c], 101, (const uint8_t[101]){1}, 8); /* k > n */
        cr_assert_eq(decode_error(far, 100), GC_ERR_CORRUPT);
        cr_assert_eq(decode_error(same, 100), GC_ERR_CORRUPT);
        cr_assert_eq(decode_error(first, 100), GC_ERR_CORRUPT);
        cr_assert_eq(decode_error(wide, 100), GC_ERR_CORRUPT);
        cr_assert_eq(decode_error(many, 100), GC_ERR_CORRUPT);
        free(ok.buf); free(far.buf); free(same.buf); free(first.buf); free(wide.buf); free(many.buf);
    }
}

Test(sparse, malformed_bitmaps_and_modes_are_refused)
{
    /* n = 100: a 13-byte bitmap; bits 100..103 lie past the end. */
    uint8_t body[5 + 13 + 8] = {0};
    body[0] = 2;
    body[4] = GC_SPARSE_BITMAP;
    body[5] = 0x21;  /* indices 0 and 5 */
    payload ok = handmade(GC_ID_TOPK, 100, body, sizeof body);
    float out[100] = {0};
    cr_assert(!gc_is_error(gc_decode_add(ok.buf, ok.len, out, 100, NULL)));

    ok.buf[GC_HEADER_SIZE + 5 + 12] = 0x10;  /* index 100 */
    ok.buf[GC_HEADER_SIZE + 5] = 0x01;
    cr_assert_eq(decode_error(ok, 100), GC_ERR_CORRUPT);
    ok.buf[GC_HEADER_SIZE + 5 + 12] = 0;
    ok.buf[GC_HEADER_SIZE + 5] = 0x07;       /* three bits, k = 2 */
    cr_assert_eq(decode_error(ok, 100), GC_ERR_CORRUPT);
    ok.buf[GC_HEADER_SIZE + 5] = 0x01;       /* one bit, k = 2 */
    cr_assert_eq(decode_error(ok, 100), GC_ERR_CORRUPT);
    ok.buf[GC_HEADER_SIZE + 5] = 0x21;
    ok.buf[GC_HEADER_SIZE + 4] = 2;          /* no such mode */
    cr_assert_eq(decode_error(ok, 100), GC_ERR_CORRUPT);
    free(ok.buf);
}

Test(randk, malformed_bodies_are_refused)
{
    size_t n = 100;
    float g[100];
    fill_laplace(g, n, 1.0, 14);
    gc_params p = params(0.03);
    payload pl = encode("randk", &p, g, NULL, n, 5, NULL);
    uint8_t *body = pl.buf + GC_HEADER_SIZE;
    cr_assert_eq(body[8], 3);            /* k */
    body[12] = 2;                        /* unknown flag */
    cr_assert_eq(decode_error(pl, n), GC_ERR_CORRUPT);
    body[12] = 0;
    body[8] = 101;                       /* k > n */
    cr_assert_eq(decode_error(pl, n), GC_ERR_CORRUPT);
    body[8] = 2;                         /* k disagrees with the values sent */
    cr_assert_eq(decode_error(pl, n), GC_ERR_CORRUPT);
    body[8] = 0xFF; body[9] = 0xFF; body[10] = 0xFF; body[11] = 0xFF;  /* forged huge k */
    cr_assert_eq(decode_error(pl, n), GC_ERR_CORRUPT);
    body[8] = 3; body[9] = 0; body[10] = 0; body[11] = 0;
    cr_assert_eq(decode_error(pl, n), GC_OK);
    free(pl.buf);
}
