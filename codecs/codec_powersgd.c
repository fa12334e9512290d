/* codec_powersgd.c — rank-r compression by one power iteration (PowerSGD,
 * Vogels et al. 2019): the vector is viewed as a rows x cols matrix M and
 * sent as P (rows x r) and Q (cols x r) with M ~ P Q^T.
 *
 * Shape: cols = ceil(sqrt(n)), rows = ceil(n / cols), M row-major and zero
 * padded past n (only the last row can be partial); r = min(rank, rows)
 * (rows <= cols always); n = 0 gives 0 x 0 with r = 0.
 *
 * Encode (one payload per rank, as the allgather and rsag algorithms need):
 * Q from the seed (standard normal), P = M Q, orthonormalise P's columns,
 * Q = M^T P; then P Q^T is the projection of M onto span(P). With error
 * feedback M = g + residual and the residual becomes M - P Q^T.
 *
 * Body (little-endian):
 *   0   u32  rows
 *   4   u32  cols
 *   8   u32  r
 *   12  f32  P, rows x r row-major
 *   ..  f32  Q, cols x r row-major
 * 12 + 4 (rows + cols) r bytes in all. The decoder demands exactly the
 * shape gc_powersgd_shape_of(n, r) gives and exactly that length.
 *
 * Flags: GC_LINEAR. A payload is not summable as bytes, but P and Q are
 * linear in M for a fixed Q and a fixed orthonormal P, so the MPI layer
 * runs the native PowerSGD allreduce with the step functions below: sum P
 * over ranks, orthonormalise (every rank the same summed P, so the same
 * result), sum Q, decompress. Those steps are deterministic: with the same
 * build, equal inputs give bit-identical outputs on every rank. */
#include "codec_impl.h"

#include <float.h>
#include <math.h>

#define PS_HEAD 12
#define PS_MAX_RANK 1024u

/* c * c < n, without overflow (c > 0). */
static int square_below(size_t c, size_t n)
{
    return c < n / c + (n % c != 0);
}

gc_powersgd_shape gc_powersgd_shape_of(size_t n, unsigned rank)
{
    gc_powersgd_shape s = {0, 0, 0};
    if (n == 0) return s;
    size_t c = (size_t)sqrt((double)n);
    if (c == 0) c = 1;
    while (square_below(c, n)) c++;
    while (c > 1 && !square_below(c - 1, n)) c--;
    s.cols = c;                        /* ceil(sqrt(n)) */
    s.rows = n / c + (n % c != 0);     /* <= cols */
    s.rank = rank < s.rows ? rank : s.rows;
    return s;
}

/* 64-bit mix (splitmix64's finaliser). */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void gc_powersgd_init_q(gc_powersgd_shape s, uint64_t seed, float *q)
{
    /* Element i of Q is a Box-Muller normal of one hash of (seed, i): no
     * sequential state, so nearby seeds give unrelated matrices. */
    uint64_t key = mix64(seed + 0x9E3779B97F4A7C15ull);
    size_t count = s.cols * s.rank;
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix64(key + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1));
        double u1 = ((double)(h >> 40) + 1.0) * 0x1p-24; /* (0, 1] */
        double u2 = (double)(h & 0xFFFFFFu) * 0x1p-24;   /* [0, 1) */
        q[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
}

/* Rows of M whose elements are all below n, and the elements of the
 * partial last row (0 when there is none). */
static void split_rows(gc_powersgd_shape s, size_t n, size_t *full, size_t *tail)
{
    *full = s.cols ? n / s.cols : 0;
    *tail = s.cols ? n % s.cols : 0;
}

/* p_row[0..r) = m_row[0..c) Q. */
static void row_times_q(const float *restrict m, size_t c, const float *restrict q, size_t r,
                        float *restrict p)
{
    for (size_t j = 0; j < r; j++) p[j] = 0.0f;
    for (size_t k = 0; k < c; k++) {
        float a = m[k];
        const float *restrict qk = q + k * r;
        for (size_t j = 0; j < r; j++) p[j] += a * qk[j];
    }
}

/* Four rows at once: four independent accumulation chains, Q read once. */
static void rows4_times_q(const float *restrict m0, const float *restrict m1,
                          const float *restrict m2, const float *restrict m3, size_t c,
                          const float *restrict q, size_t r, float *restrict p0,
                          float *restrict p1, float *restrict p2, float *restrict p3)
{
    for (size_t j = 0; j < r; j++) p0[j] = p1[j] = p2[j] = p3[j] = 0.0f;
    for (size_t k = 0; k < c; k++) {
        float a0 = m0[k], a1 = m1[k], a2 = m2[k], a3 = m3[k];
        const float *restrict qk = q + k * r;
        for (size_t j = 0; j < r; j++) {
            float x = qk[j];
            p0[j] += a0 * x;
            p1[j] += a1 * x;
            p2[j] += a2 * x;
            p3[j] += a3 * x;
        }
    }
}

void gc_powersgd_p(gc_powersgd_shape s, const float *m, size_t n, const float *q, float *p)
{
    size_t r = s.rank, c = s.cols, full, tail;
    if (r == 0) return;
    split_rows(s, n, &full, &tail);
    size_t i = 0;
    for (; i + 4 <= full; i += 4)
        rows4_times_q(m + i * c, m + (i + 1) * c, m + (i + 2) * c, m + (i + 3) * c, c, q, r,
                      p + i * r, p + (i + 1) * r, p + (i + 2) * r, p + (i + 3) * r);
    for (; i < full; i++) row_times_q(m + i * c, c, q, r, p + i * r);
    if (tail) row_times_q(m + i * c, tail, q, r, p + i * r);
}

/* Modified Gram-Schmidt on the columns of P (stride r): dot products in
 * double, each column projected twice so P^T P = I to float precision
 * even for 64 or more columns. A column left with less than 1e-6 of its
 * norm after removing the earlier ones (or none at all, or not finite)
 * carries no new direction: it is set to zero rather than normalised
 * noise, so nothing becomes NaN. */
void gc_powersgd_orthonormalize(gc_powersgd_shape s, float *p)
{
    size_t rows = s.rows, r = s.rank;
    for (size_t j = 0; j < r; j++) {
        double before = 0.0;
        for (size_t i = 0; i < rows; i++) before += (double)p[i * r + j] * p[i * r + j];
        /* Twice: one pass leaves float rounding of the earlier columns'
         * components ("twice is enough", Giraud et al. 2005). */
        for (int pass = 0; pass < 2; pass++) {
            for (size_t l = 0; l < j; l++) {
                double d = 0.0;
                for (size_t i = 0; i < rows; i++) d += (double)p[i * r + l] * p[i * r + j];
                for (size_t i = 0; i < rows; i++)
                    p[i * r + j] = (float)((double)p[i * r + j] - d * p[i * r + l]);
            }
        }
        double after = 0.0;
        for (size_t i = 0; i < rows; i++) after += (double)p[i * r + j] * p[i * r + j];
        double norm = sqrt(after);
        if (norm > 0.0 && norm <= DBL_MAX && after > 1e-12 * before) {
            double inv = 1.0 / norm;
            for (size_t i = 0; i < rows; i++) p[i * r + j] = (float)(p[i * r + j] * inv);
        } else {
            for (size_t i = 0; i < rows; i++) p[i * r + j] = 0.0f;
        }
    }
}

/* q[k][0..r) += m_row[k] p_row, k < c. */
static void row_into_q(const float *restrict m, size_t c, const float *restrict p, size_t r,
                       float *restrict q)
{
    for (size_t k = 0; k < c; k++) {
        float a = m[k];
        float *restrict qk = q + k * r;
        for (size_t j = 0; j < r; j++) qk[j] += a * p[j];
    }
}

static void rows4_into_q(const float *restrict m0, const float *restrict m1,
                         const float *restrict m2, const float *restrict m3, size_t c,
                         const float *restrict p0, const float *restrict p1,
                         const float *restrict p2, const float *restrict p3, size_t r,
                         float *restrict q)
{
    for (size_t k = 0; k < c; k++) {
        float a0 = m0[k], a1 = m1[k], a2 = m2[k], a3 = m3[k];
        float *restrict qk = q + k * r;
        for (size_t j = 0; j < r; j++)
            qk[j] += (a0 * p0[j] + a1 * p1[j]) + (a2 * p2[j] + a3 * p3[j]);
    }
}

void gc_powersgd_q(gc_powersgd_shape s, const float *m, size_t n, const float *p, float *q)
{
    size_t r = s.rank, c = s.cols, full, tail;
    if (r == 0) return;
    memset(q, 0, c * r * sizeof(float));
    split_rows(s, n, &full, &tail);
    size_t i = 0;
    for (; i + 4 <= full; i += 4)
        rows4_into_q(m + i * c, m + (i + 1) * c, m + (i + 2) * c, m + (i + 3) * c, c,
                     p + i * r, p + (i + 1) * r, p + (i + 2) * r, p + (i + 3) * r, r, q);
    for (; i < full; i++) row_into_q(m + i * c, c, p + i * r, r, q);
    if (tail) row_into_q(m + i * c, tail, p + i * r, r, q);
}

/* out[i c + k] += sign (P Q^T)[i][k] for the first n elements. sign is +1
 * (decode) or -1 (residual): both give the same product, bit for bit. */
static void lowrank_add(gc_powersgd_shape s, const float *restrict p, const float *restrict q,
                        float *restrict out, size_t n, float sign)
{
    size_t r = s.rank, c = s.cols;
    if (r == 0) return;
    for (size_t i = 0; i < s.rows; i++) {
        size_t start = i * c;
        size_t len = n - start < c ? n - start : c;
        const float *restrict pi = p + i * r;
        float *restrict o = out + start;
        for (size_t k = 0; k < len; k++) {
            const float *restrict qk = q + k * r;
            float d = 0.0f;
            for (size_t j = 0; j < r; j++) d += pi[j] * qk[j];
            o[k] += sign * d;
        }
    }
}

void gc_powersgd_decompress_add(gc_powersgd_shape s, const float *p, const float *q, float *acc,
                                size_t n)
{
    lowrank_add(s, p, q, acc, n, 1.0f);
}

static size_t ps_check(const gc_params *p, char *msg, size_t msglen)
{
    return gc_check_rank(p, msg, msglen);
}

static size_t body_size(gc_powersgd_shape s)
{
    return PS_HEAD + 4 * (s.rows + s.cols) * s.rank;
}

static size_t ps_bound(size_t n, const gc_params *p)
{
    return body_size(gc_powersgd_shape_of(n, p->rank));
}

static void put_floats(uint8_t *d, const float *x, size_t count)
{
    for (size_t i = 0; i < count; i++) gc_put_f32(d + 4 * i, x[i]);
}

static void get_floats(const uint8_t *s, float *x, size_t count)
{
    for (size_t i = 0; i < count; i++) x[i] = gc_get_f32(s + 4 * i);
}

static size_t ps_encode(const float *g, float *r, size_t n, const gc_params *p, uint64_t seed,
                        uint8_t *dst, size_t cap, gc_workspace *ws)
{
    gc_powersgd_shape s = gc_powersgd_shape_of(n, p->rank);
    size_t body = body_size(s);
    if (cap < body) return GC_ERROR(DST_TOO_SMALL);
    float *pm = gc_ws_get(ws, GC_WS_A, s.rows * s.rank * sizeof(float));
    float *qm = gc_ws_get(ws, GC_WS_B, s.cols * s.rank * sizeof(float));
    if (!pm || !qm) return GC_ERROR(ALLOC);

    /* With error feedback the residual buffer holds M = g + r in place;
     * afterwards it becomes M - P Q^T. */
    const float *m = g;
    if (r) {
        float *restrict rr = r;
        for (size_t i = 0; i < n; i++) rr[i] += g[i];
        m = r;
    }
    gc_powersgd_init_q(s, seed, qm);
    gc_powersgd_p(s, m, n, qm, pm);
    gc_powersgd_orthonormalize(s, pm);
    gc_powersgd_q(s, m, n, pm, qm);
    if (r) lowrank_add(s, pm, qm, r, n, -1.0f);

    gc_put_u32(dst, (uint32_t)s.rows);
    gc_put_u32(dst + 4, (uint32_t)s.cols);
    gc_put_u32(dst + 8, (uint32_t)s.rank);
    put_floats(dst + PS_HEAD, pm, s.rows * s.rank);
    put_floats(dst + PS_HEAD + 4 * s.rows * s.rank, qm, s.cols * s.rank);
    return body;
}

static size_t ps_decode_add(const uint8_t *src, size_t len, float *acc, size_t n,
                            gc_workspace *ws)
{
    if (len < PS_HEAD) return GC_ERROR(TRUNCATED);
    uint32_t rows = gc_get_u32(src), cols = gc_get_u32(src + 4), rank = gc_get_u32(src + 8);
    if (rank > PS_MAX_RANK || (n > 0 && rank == 0)) return GC_ERROR(CORRUPT);
    /* The shape is a function of (n, r): nothing else is accepted, so a
     * forged body cannot ask for more memory than n implies. */
    gc_powersgd_shape s = gc_powersgd_shape_of(n, rank);
    if (s.rows != rows || s.cols != cols || s.rank != rank) return GC_ERROR(CORRUPT);
    size_t body = body_size(s);
    if (len < body) return GC_ERROR(TRUNCATED);
    if (len > body) return GC_ERROR(CORRUPT);
    if (n == 0) return 0;
    float *pm = gc_ws_get(ws, GC_WS_A, s.rows * s.rank * sizeof(float));
    float *qm = gc_ws_get(ws, GC_WS_B, s.cols * s.rank * sizeof(float));
    if (!pm || !qm) return GC_ERROR(ALLOC);
    get_floats(src + PS_HEAD, pm, s.rows * s.rank);
    get_floats(src + PS_HEAD + 4 * s.rows * s.rank, qm, s.cols * s.rank);
    lowrank_add(s, pm, qm, acc, n, 1.0f);
    return 0;
}

const gc_codec gc_codec_powersgd = {
    .name = "powersgd",
    .id = GC_ID_POWERSGD,
    .flags = GC_LINEAR,
    .check = ps_check,
    .bound = ps_bound,
    .encode = ps_encode,
    .decode_add = ps_decode_add,
    .zero_sent = NULL,
};
