/* test_powersgd.c — rank-r compression by one power iteration: the shape,
 * the public step functions the native allreduce uses, and the codec. */
#include "test_util.h"

static const gc_codec *psgd(void) { return gc_codec_by_name("powersgd"); }

static gc_params rank_params(unsigned rank)
{
    gc_params p;
    gc_params_default(&p);
    p.rank = rank;
    return p;
}

/* Encode (with or without residual) into a fresh buffer; returns its length. */
static size_t encode_ps(unsigned rank, const float *g, float *r, size_t n, uint64_t seed,
                        uint8_t **out)
{
    gc_params p = rank_params(rank);
    size_t cap = gc_bound(psgd(), n, &p);
    cr_assert(!gc_is_error(cap));
    *out = malloc(cap);
    cr_assert_not_null(*out);
    size_t len = gc_encode(psgd(), g, r, n, &p, seed, *out, cap, NULL);
    cr_assert(!gc_is_error(len), "encode n=%zu rank=%u: %s", n, rank, gc_error_name(len));
    cr_assert_leq(len, cap);
    return len;
}

static double reconstruction_error(unsigned rank, const float *g, size_t n)
{
    float *out = test_alloc(n);
    gc_params p = rank_params(rank);
    roundtrip("powersgd", &p, g, n, 7, out);
    double e = rel_l2_error(g, out, n);
    free(out);
    return e;
}

/* M = A B^T with A rows x k, B cols x k (Laplace entries), n = rows * cols. */
static float *low_rank_matrix(size_t rows, size_t cols, size_t k, uint64_t seed)
{
    float *a = test_alloc(rows * k), *b = test_alloc(cols * k), *m = test_alloc(rows * cols);
    fill_laplace(a, rows * k, 1.0, seed);
    fill_laplace(b, cols * k, 1.0, seed + 1);
    for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < cols; c++) {
            double s = 0;
            for (size_t t = 0; t < k; t++) s += (double)a[i * k + t] * b[c * k + t];
            m[i * cols + c] = (float)s;
        }
    free(a); free(b);
    return m;
}

/* ---- shape -------------------------------------------------------------- */

Test(powersgd, shape_is_near_square_covers_n_and_clamps_rank)
{
    const size_t sizes[] = {1, 2, 7, 1000, 1009, 14520, (1u << 20) + 3, 4294967311ull};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        gc_powersgd_shape s = gc_powersgd_shape_of(n, 4);
        /* cols = ceil(sqrt(n)), rows the fewest that hold n. */
        cr_assert_geq((double)s.cols * s.cols, (double)n, "n=%zu", n);
        cr_assert_lt((double)(s.cols - 1) * (s.cols - 1), (double)n, "n=%zu", n);
        cr_assert_geq(s.rows * s.cols, n, "n=%zu", n);
        cr_assert_lt((s.rows - 1) * s.cols, n, "n=%zu", n);
        cr_assert_leq(s.rows, s.cols);
        cr_assert_eq(s.rank, s.rows < 4 ? s.rows : 4, "n=%zu", n);
    }
    gc_powersgd_shape z = gc_powersgd_shape_of(0, 4);
    cr_assert(z.rows == 0 && z.cols == 0 && z.rank == 0);
    gc_powersgd_shape seven = gc_powersgd_shape_of(7, 100);
    cr_assert(seven.rows == 3 && seven.cols == 3 && seven.rank == 3);
    gc_powersgd_shape prime = gc_powersgd_shape_of(1009, 8);
    cr_assert(prime.rows == 32 && prime.cols == 32 && prime.rank == 8);
}

/* ---- step functions ----------------------------------------------------- */

Test(powersgd, init_q_is_deterministic_and_roughly_standard_normal)
{
    gc_powersgd_shape s = gc_powersgd_shape_of(1u << 20, 8); /* 1024 x 8 */
    size_t count = s.cols * s.rank;
    float *q1 = test_alloc(count), *q2 = test_alloc(count), *q3 = test_alloc(count);
    gc_powersgd_init_q(s, 42, q1);
    gc_powersgd_init_q(s, 42, q2);
    gc_powersgd_init_q(s, 43, q3);
    cr_assert(memcmp(q1, q2, count * sizeof(float)) == 0);
    cr_assert(memcmp(q1, q3, count * sizeof(float)) != 0);
    double mean = 0, var = 0;
    for (size_t i = 0; i < count; i++) mean += q1[i];
    mean /= (double)count;
    for (size_t i = 0; i < count; i++) var += (q1[i] - mean) * (q1[i] - mean);
    var /= (double)count;
    cr_assert_lt(fabs(mean), 0.05, "mean %g", mean);
    cr_assert_lt(fabs(var - 1.0), 0.05, "variance %g", var);
    free(q1); free(q2); free(q3);
}

Test(powersgd, orthonormalize_gives_orthonormal_columns)
{
    gc_powersgd_shape s = {.rows = 50, .cols = 50, .rank = 6};
    float *p = test_alloc(s.rows * s.rank);
    fill_laplace(p, s.rows * s.rank, 3.0, 51);
    gc_powersgd_orthonormalize(s, p);
    for (size_t a = 0; a < s.rank; a++)
        for (size_t b = 0; b < s.rank; b++) {
            double d = 0;
            for (size_t i = 0; i < s.rows; i++) d += (double)p[i * s.rank + a] * p[i * s.rank + b];
            cr_assert_lt(fabs(d - (a == b ? 1.0 : 0.0)), 1e-5, "P^T P[%zu][%zu] = %g", a, b, d);
        }
    free(p);
}

Test(powersgd, orthonormalize_zeroes_dependent_and_zero_columns)
{
    gc_powersgd_shape s = {.rows = 20, .cols = 20, .rank = 4};
    float p[80];
    fill_laplace(p, 80, 1.0, 52);
    for (size_t i = 0; i < 20; i++) {
        p[i * 4 + 2] = 2.0f * p[i * 4 + 0]; /* column 2 depends on column 0 */
        p[i * 4 + 3] = 0.0f;                /* column 3 is zero */
    }
    gc_powersgd_orthonormalize(s, p);
    double n1 = 0;
    for (size_t i = 0; i < 20; i++) {
        cr_assert_eq(p[i * 4 + 2], 0.0f);
        cr_assert_eq(p[i * 4 + 3], 0.0f);
        n1 += (double)p[i * 4 + 1] * p[i * 4 + 1];
    }
    cr_assert_lt(fabs(n1 - 1.0), 1e-5);
}

Test(powersgd, steps_are_linear_so_mpi_can_sum_the_factors)
{
    /* Native allreduce on two "ranks": sum of P_i = (M1 + M2) Q, and after a
     * shared orthonormal P the sum of Q_i = (M1 + M2)^T P. */
    size_t n = 3000;
    gc_powersgd_shape s = gc_powersgd_shape_of(n, 3);
    float *m1 = test_alloc(n), *m2 = test_alloc(n), *sum = test_alloc(n);
    fill_laplace(m1, n, 1.0, 61);
    fill_laplace(m2, n, 1.0, 62);
    for (size_t i = 0; i < n; i++) sum[i] = m1[i] + m2[i];
    size_t np = s.rows * s.rank, nq = s.cols * s.rank;
    float *q = test_alloc(nq), *p1 = test_alloc(np), *p2 = test_alloc(np), *ps = test_alloc(np);
    float *q1 = test_alloc(nq), *q2 = test_alloc(nq), *qs = test_alloc(nq);
    gc_powersgd_init_q(s, 9, q);
    gc_powersgd_p(s, m1, n, q, p1);
    gc_powersgd_p(s, m2, n, q, p2);
    gc_powersgd_p(s, sum, n, q, ps);
    for (size_t i = 0; i < np; i++) cr_assert_float_eq(p1[i] + p2[i], ps[i], 1e-3f * (1 + fabsf(ps[i])));
    gc_powersgd_orthonormalize(s, ps);
    gc_powersgd_q(s, m1, n, ps, q1);
    gc_powersgd_q(s, m2, n, ps, q2);
    gc_powersgd_q(s, sum, n, ps, qs);
    for (size_t i = 0; i < nq; i++) cr_assert_float_eq(q1[i] + q2[i], qs[i], 1e-3f * (1 + fabsf(qs[i])));
    free(m1); free(m2); free(sum); free(q); free(p1); free(p2); free(ps);
    free(q1); free(q2); free(qs);
}

/* ---- the codec ---------------------------------------------------------- */

Test(powersgd, rank_r_matrix_is_reconstructed_with_rank_at_least_r)
{
    size_t rows = 120, cols = 121, n = rows * cols; /* shape_of(n) is 120 x 121 */
    gc_powersgd_shape s = gc_powersgd_shape_of(n, 3);
    cr_assert(s.rows == rows && s.cols == cols);
    float *m = low_rank_matrix(rows, cols, 3, 71);
    for (unsigned rank = 3; rank <= 5; rank++) {
        double e = reconstruction_error(rank, m, n);
        cr_assert_lt(e, 1e-4, "rank %u: relative error %g", rank, e);
    }
    cr_assert_gt(reconstruction_error(2, m, n), 1e-2);
    free(m);
}

Test(powersgd, error_decreases_as_rank_grows)
{
    size_t n = 4096;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 81);
    double prev = INFINITY;
    for (unsigned rank = 1; rank <= 64; rank *= 2) {
        double e = reconstruction_error(rank, g, n);
        cr_assert_lt(e, prev, "rank %u: %g, not below %g", rank, e, prev);
        prev = e;
    }
    /* Rank = rows: P spans every row, so the projection is M itself. */
    cr_assert_lt(reconstruction_error(64, g, n), 1e-5);
    free(g);
}

Test(powersgd, every_size_round_trips_and_full_rank_is_exact)
{
    for (size_t s = 0; s < TEST_SIZE_COUNT; s++) {
        size_t n = test_sizes[s];
        float *g = test_alloc(n), *out = test_alloc(n);
        fill_laplace(g, n, 1.0, 90 + s);
        gc_params p = rank_params(4);
        size_t len = roundtrip("powersgd", &p, g, n, 3, out);
        gc_powersgd_shape sh = gc_powersgd_shape_of(n, 4);
        cr_assert_eq(len, GC_HEADER_SIZE + 12 + 4 * (sh.rows + sh.cols) * sh.rank, "n=%zu", n);
        if (sh.rank == sh.rows) /* n = 1 and 7: the rank clamps to rows */
            cr_assert_lt(rel_l2_error(g, out, n), 1e-5, "n=%zu", n);
        else
            cr_assert_lt(rel_l2_error(g, out, n), 1.0, "n=%zu", n);
        free(g); free(out);
    }
}

Test(powersgd, residual_plus_decoded_is_the_input)
{
    size_t n = 10007;
    float *g = test_alloc(n), *r = test_alloc(n), *r0 = test_alloc(n), *out = test_alloc(n);
    fill_laplace(g, n, 1.0, 101);
    fill_laplace(r, n, 0.3, 102);
    memcpy(r0, r, n * sizeof(float));
    uint8_t *buf;
    size_t len = encode_ps(4, g, r, n, 5, &buf);
    cr_assert(!gc_is_error(gc_decode_add(buf, len, out, n, NULL)));
    double scale = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)g[i] + r0[i]));
    for (size_t i = 0; i < n; i++) {
        double v = (double)g[i] + r0[i];
        cr_assert_leq(fabs((double)out[i] + r[i] - v), 1e-6 * scale, "i=%zu", i);
    }
    free(buf); free(g); free(r); free(r0); free(out);
}

Test(powersgd, same_seed_gives_identical_payload)
{
    size_t n = 5000;
    float *g = test_alloc(n);
    fill_laplace(g, n, 1.0, 111);
    uint8_t *a, *b, *c;
    size_t la = encode_ps(4, g, NULL, n, 77, &a);
    size_t lb = encode_ps(4, g, NULL, n, 77, &b);
    size_t lc = encode_ps(4, g, NULL, n, 78, &c);
    cr_assert_eq(la, lb);
    cr_assert(memcmp(a, b, la) == 0);
    cr_assert_eq(la, lc);
    cr_assert(memcmp(a, c, la) != 0);
    free(a); free(b); free(c); free(g);
}

Test(powersgd, codec_decode_equals_the_public_steps)
{
    size_t n = 2000;
    float *g = test_alloc(n), *out = test_alloc(n), *ref = test_alloc(n);
    fill_laplace(g, n, 1.0, 121);
    uint8_t *buf;
    size_t len = encode_ps(3, g, NULL, n, 11, &buf);
    cr_assert(!gc_is_error(gc_decode_add(buf, len, out, n, NULL)));
    gc_powersgd_shape s = gc_powersgd_shape_of(n, 3);
    float *p = test_alloc(s.rows * s.rank), *q = test_alloc(s.cols * s.rank);
    gc_powersgd_init_q(s, 11, q);
    gc_powersgd_p(s, g, n, q, p);
    gc_powersgd_orthonormalize(s, p);
    gc_powersgd_q(s, g, n, p, q);
    gc_powersgd_decompress_add(s, p, q, ref, n);
    cr_assert(memcmp(out, ref, n * sizeof(float)) == 0);
    free(buf); free(g); free(out); free(ref); free(p); free(q);
}

Test(powersgd, bad_rank_is_named_with_its_range)
{
    char msg[200];
    gc_params p = rank_params(0);
    cr_assert_eq(gc_error_code(gc_params_check(psgd(), &p, msg, sizeof msg)), GC_ERR_PARAM);
    cr_assert_str_eq(msg, "rank=0 is out of range; expected an integer in [1, 1024]");
}

/* ---- malformed bodies --------------------------------------------------- */

static void put32(uint8_t *d, uint32_t v) { for (int i = 0; i < 4; i++) d[i] = (uint8_t)(v >> (8 * i)); }

static gc_error decode_with_length(uint8_t *buf, size_t len, float *out, size_t n)
{
    for (int i = 0; i < 8; i++) buf[16 + i] = (uint8_t)((uint64_t)len >> (8 * i));
    return gc_error_code(gc_decode_add(buf, len, out, n, NULL));
}

Test(powersgd, malformed_bodies_are_errors)
{
    size_t n = 1000;
    float g[1000], out[1000];
    fill_laplace(g, n, 1.0, 131);
    uint8_t *buf;
    size_t len = encode_ps(4, g, NULL, n, 1, &buf);
    uint8_t *bad = calloc(1, len + 4);
    uint8_t *body = bad + GC_HEADER_SIZE;

    for (size_t cut = GC_HEADER_SIZE; cut < len; cut += 13) {
        memcpy(bad, buf, cut);
        cr_assert_eq(decode_with_length(bad, cut, out, n), GC_ERR_TRUNCATED, "cut %zu", cut);
    }
    memcpy(bad, buf, len);
    cr_assert_eq(decode_with_length(bad, len + 4, out, n), GC_ERR_CORRUPT); /* trailing */

    memcpy(bad, buf, len);
    put32(body, 31);                                   /* rows */
    cr_assert_eq(decode_with_length(bad, len, out, n), GC_ERR_CORRUPT);
    memcpy(bad, buf, len);
    put32(body + 4, 33);                               /* cols */
    cr_assert_eq(decode_with_length(bad, len, out, n), GC_ERR_CORRUPT);
    memcpy(bad, buf, len);
    put32(body + 8, 0);                                /* rank 0 */
    cr_assert_eq(decode_with_length(bad, len, out, n), GC_ERR_CORRUPT);
    memcpy(bad, buf, len);
    put32(body + 8, 0xFFFFFFFFu);                      /* forged huge rank */
    cr_assert_eq(decode_with_length(bad, len, out, n), GC_ERR_CORRUPT);
    memcpy(bad, buf, len);
    put32(body + 8, 5);                                /* valid rank, wrong length */
    cr_assert_eq(decode_with_length(bad, len, out, n), GC_ERR_TRUNCATED);
    free(bad); free(buf);
}

Test(powersgd, empty_vector_has_a_header_only_body)
{
    uint8_t *buf;
    size_t len = encode_ps(4, NULL, NULL, 0, 1, &buf);
    cr_assert_eq(len, GC_HEADER_SIZE + 12);
    cr_assert(!gc_is_error(gc_decode_add(buf, len, NULL, 0, NULL)));
    buf[GC_HEADER_SIZE + 8] = 1; /* a rank for no elements */
    cr_assert_eq(gc_error_code(gc_decode_add(buf, len, NULL, 0, NULL)), GC_ERR_CORRUPT);
    free(buf);
}
