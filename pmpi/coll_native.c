/* coll_native.c — codecs whose compressed form MPI can sum itself, so the
 * exchange rides on the MPI library's own tuned PMPI_Allreduce:
 *
 *  none      the floats as they are.
 *  randk     k indices drawn from the call seed, the same on every rank;
 *            the k values go through one float allreduce. With
 *            GC_PF_RANDK_UNBIASED the kept values are scaled by n/k.
 *  int8      one scale per bucket agreed by PMPI_Allreduce(MPI_MAX) of the
 *            bucket's max |v|, then integer levels summed by MPI. The sum of
 *            p levels must not overflow the integer type sent, so the wire
 *            type and level count follow p:
 *                p <= 8     int8 on the wire, floor(127/p) levels (63 at
 *                           p=2, 31 at p=4, 15 at p=8): 4x smaller than
 *                           float, precision falls with p;
 *                p <= 258   int16, 127 levels (the int8 codec's): 2x;
 *                larger p   int32, 127 levels: no saving.
 *            Rounding is to nearest, ties to even. A bucket whose max is
 *            not finite on some rank (an fp16 loss-scale overflow) decodes
 *            as NaN on every rank, as a float allreduce would give a
 *            non-finite value, and its residual is cleared so the next step
 *            starts clean.
 *  powersgd  rank-r PowerSGD (Vogels et al.): M = v viewed as rows x cols,
 *            P = M Q, allreduce P, orthonormalise, Q = M^T P, allreduce Q,
 *            out = P Q^T. The residual keeps M - P Q_local^T (this rank's
 *            own approximation); the summed Q is the warm start of the next
 *            call. Without error feedback Q comes from the seed every call.
 *            The slot's state holds Q for the largest rank the adaptive
 *            layer can choose; when a call's rank differs from the last
 *            one (slot->state_reset) Q restarts from the seed.
 *
 * Native sends MPI datatypes, not payloads, so there is nothing for the zstd
 * stage or a CRC to work on: config/ refuses them with GCMPI_ALGO=native
 * and auto does not pick native when they are set. Results are identical
 * on all ranks as far as the MPI library's float allreduce is (Open MPI's
 * and MPICH's algorithms are); the int8 sum is exact. */
#include "coll_impl.h"

#include <float.h>
#include <math.h>

/* The elementwise loops are compiled for AVX-512 (x86-64-v4), AVX2 and the
 * x86-64 baseline, and the loader picks one (ifunc): the baseline lacks the
 * unsigned max and the narrowing packs these loops need (measured: int8
 * quantise of 16 Mi floats 43-67 ms baseline, 9-14 ms AVX2). Every rank
 * must decode the same bits whatever clone it runs, so no clone may fuse a
 * multiply and an add: gcc does not in ISO C mode, clang is told here. */
#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define VEC_CLONES
#endif
#ifdef __clang__
#pragma clang fp contract(off)
#endif

int gcmpi_native_allreduce_big(gcmpi_coll_ctx *ctx, const void *send, void *recv, size_t count,
                               MPI_Datatype type, size_t elem, MPI_Op op)
{
    double t0 = PMPI_Wtime();
    int rc = MPI_SUCCESS;
    for (size_t at = 0; at < count && rc == MPI_SUCCESS;) {
        size_t n = count - at < (size_t)INT_MAX ? count - at : (size_t)INT_MAX;
        const void *s = send ? (const char *)send + at * elem : MPI_IN_PLACE;
        rc = PMPI_Allreduce(s, (char *)recv + at * elem, (int)n, type, op, ctx->comm);
        at += n;
    }
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    ctx->stats->bytes_sent += (uint64_t)(count * elem);
    return rc;
}

/* ---- none ----------------------------------------------------------------- */

/* Lossless: the residual stays zero and is not read. */
static int native_none(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count)
{
    return gcmpi_native_allreduce_big(ctx, in == out ? NULL : in, out, count, MPI_FLOAT,
                                      sizeof(float), MPI_SUM);
}

/* ---- randk ---------------------------------------------------------------- */

/* Bits of |x|: as integers they order like the magnitudes, and every NaN or
 * infinity is >= the bits of +inf, so an integer max (which vectorises)
 * finds the largest magnitude and notices non-finite values at once. */
static inline __attribute__((always_inline)) uint32_t abs_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x7FFFFFFFu;
}
#define INF_BITS 0x7F800000u

/* r = v = r + g over the whole vector (with momentum: u = m u + g first,
 * v = r + u). Returns the largest |v| as bits. */
VEC_CLONES static uint32_t accumulate(float *restrict r, float *restrict u,
                                      const float *restrict g, size_t n, float m)
{
    uint32_t top = 0;
    if (u) {
        for (size_t i = 0; i < n; i++) {
            float ui = m * u[i] + g[i];
            float v = r[i] + ui;
            u[i] = ui;
            r[i] = v;
            uint32_t b = abs_bits(v);
            top = b > top ? b : top;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            float v = r[i] + g[i];
            r[i] = v;
            uint32_t b = abs_bits(v);
            top = b > top ? b : top;
        }
    }
    return top;
}

/* mark[b] = sum of the non-finite values of block b of in (0: none); all
 * zero without a scan when the caller found in finite. */
static void nonfinite_marks(const float *in, size_t n, int nonfinite, float *mark)
{
    const size_t marks = (n + GCMPI_RANDK_MARK_BLOCK - 1) / GCMPI_RANDK_MARK_BLOCK;
    memset(mark, 0, marks * sizeof(float));
    if (!nonfinite) return;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(in[i])) mark[i / GCMPI_RANDK_MARK_BLOCK] += in[i];
}

static int native_randk(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                        gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    const size_t k = gc_randk_count(count, &cfg->params);
    if (gc_is_error(k)) return gcmpi_coll_mpi_error(gc_error_code(k));
    /* After the k values, one float per block of GCMPI_RANDK_MARK_BLOCK elements:
     * what the block's non-finite inputs sum to (0 when finite), so MPI_SUM
     * makes the result non-finite in every block where its own sum of the
     * inputs would be, although randk sends none of those elements. */
    const size_t marks = (count + GCMPI_RANDK_MARK_BLOCK - 1) / GCMPI_RANDK_MARK_BLOCK;
    uint32_t *idx = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_AUX, k * sizeof(uint32_t));
    float *val = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_CHUNK, (k + marks) * sizeof(float));
    if (!idx || !val) return MPI_ERR_NO_MEM;
    float *mark = val + k;
    nonfinite_marks(in, count, ctx->stats->nonfinite_in, mark);

    double t0 = PMPI_Wtime();
    /* The indices depend only on shared values: the same on every rank, and
     * so is any failure. */
    size_t got = gc_randk_indices(count, &cfg->params, ctx->call_seed, idx, ctx->ws);
    if (gc_is_error(got)) return gcmpi_coll_mpi_error(gc_error_code(got));
    if (got != k) return MPI_ERR_INTERN;
    const float scale =
        (cfg->params.flags & GC_PF_RANDK_UNBIASED) ? (float)((double)count / (double)k) : 1.0f;

    float *res = ef ? ef->residual : NULL;
    float *mom = ef && res && gcmpi_coll_momentum_on(cfg) ? ef->state : NULL;
    if (res) {
        const uint32_t top = accumulate(res, mom, in, count, gcmpi_coll_momentum(cfg));
        /* Sent: scale * v. Left: v - scale * v (zero without scaling).
         * Momentum is cleared where sent (DGC's momentum factor masking). */
        for (size_t j = 0; j < k; j++) {
            const float v = res[idx[j]];
            val[j] = scale * v;
            res[idx[j]] = v - scale * v;
            if (mom) mom[idx[j]] = 0.0f;
        }
        /* A non-finite value would stay in the residual for good: drop it. */
        if (top >= INF_BITS) {
            memset(res, 0, count * sizeof(float));
            if (mom) memset(mom, 0, count * sizeof(float));
        }
    } else {
        for (size_t j = 0; j < k; j++) val[j] = scale * in[idx[j]];
    }
    st->encode_s += PMPI_Wtime() - t0;

    int rc = gcmpi_native_allreduce_big(ctx, NULL, val, k + marks, MPI_FLOAT, sizeof(float),
                                        MPI_SUM);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    memset(out, 0, count * sizeof(float));
    for (size_t j = 0; j < k; j++) out[idx[j]] = val[j];
    for (size_t b = 0; b < marks; b++) {
        if (mark[b] == 0.0f) continue;
        const size_t lo = b * GCMPI_RANDK_MARK_BLOCK;
        const size_t hi = count - lo < GCMPI_RANDK_MARK_BLOCK ? count : lo + GCMPI_RANDK_MARK_BLOCK;
        for (size_t i = lo; i < hi; i++) out[i] += mark[b];
    }
    st->decode_s += PMPI_Wtime() - t0;
    return MPI_SUCCESS;
}

/* ---- int8 ----------------------------------------------------------------- */

gcmpi_int_wire gcmpi_native_int_wire(int p)
{
    if (p <= 8) return (gcmpi_int_wire){MPI_INT8_T, 1, (float)(127 / p)};
    if (p <= 258) return (gcmpi_int_wire){MPI_INT16_T, 2, 127.0f};
    const int cap = INT32_MAX / p;
    return (gcmpi_int_wire){MPI_INT32_T, 4, (float)(cap < 127 ? cap : 127)};
}

/* Bucket maxima of |v|, v = g (+ r, stored into r): as floats, +inf for a
 * bucket holding a non-finite value (MPI_MAX then spreads it to all ranks
 * without NaN comparisons). */
VEC_CLONES static void bucket_max(const float *restrict g, float *restrict r, size_t n,
                                  size_t bucket, float *restrict top)
{
    for (size_t b = 0, lo = 0; lo < n; b++, lo += bucket) {
        const size_t hi = n - lo < bucket ? n : lo + bucket;
        uint32_t m = 0;
        if (r) {
            for (size_t i = lo; i < hi; i++) {
                const float v = g[i] + r[i];
                r[i] = v;
                const uint32_t a = abs_bits(v);
                m = a > m ? a : m;
            }
        } else {
            for (size_t i = lo; i < hi; i++) {
                const uint32_t a = abs_bits(g[i]);
                m = a > m ? a : m;
            }
        }
        if (m > INF_BITS) m = INF_BITS;
        memcpy(&top[b], &m, sizeof m);
    }
}

/* Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22
 * to the nearest integer, ties to even, in the default rounding mode; unlike
 * rintf it vectorises without SSE4.1. Levels are at most 127 in magnitude. */
#define ROUND_MAGIC 12582912.0f

/* q = round(v * L / max) per bucket. With a residual r, v is r itself
 * (bucket_max stored it there) and r becomes v - q * max / L; without, v
 * is g. One function per wire type; each inner loop is branch-free so it
 * vectorises. */
#define DEFINE_QUANTISE(T)                                                                    \
    VEC_CLONES static void quantise_##T(const float *restrict g, float *restrict r,          \
                                        T *restrict q, size_t n, size_t bucket,              \
                                        const float *restrict top, float L)                  \
    {                                                                                         \
        for (size_t b = 0, lo = 0; lo < n; b++, lo += bucket) {                              \
            const size_t hi = n - lo < bucket ? n : lo + bucket;                             \
            const float m = top[b];                                                           \
            if (!(m > 0.0f && m <= FLT_MAX)) {                                                \
                /* zero bucket: nothing to send; non-finite: drop the residual */            \
                for (size_t i = lo; i < hi; i++) q[i] = 0;                                    \
                if (r && m != 0.0f)                                                           \
                    for (size_t i = lo; i < hi; i++) r[i] = 0.0f;                             \
                continue;                                                                     \
            }                                                                                 \
            const float inv = L / m, step = m / L;                                            \
            if (r) {                                                                          \
                for (size_t i = lo; i < hi; i++) {                                            \
                    float x = (r[i] * inv + ROUND_MAGIC) - ROUND_MAGIC;                       \
                    x = x > L ? L : x;                                                        \
                    x = x < -L ? -L : x;                                                      \
                    q[i] = (T)x;                                                              \
                    r[i] -= x * step;                                                         \
                }                                                                             \
            } else {                                                                          \
                for (size_t i = lo; i < hi; i++) {                                            \
                    float x = (g[i] * inv + ROUND_MAGIC) - ROUND_MAGIC;                       \
                    x = x > L ? L : x;                                                        \
                    x = x < -L ? -L : x;                                                      \
                    q[i] = (T)x;                                                              \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    VEC_CLONES static void dequantise_##T(const T *restrict q, float *restrict out,          \
                                          size_t n, size_t bucket,                           \
                                          const float *restrict top, float L)                \
    {                                                                                         \
        for (size_t b = 0, lo = 0; lo < n; b++, lo += bucket) {                              \
            const size_t hi = n - lo < bucket ? n : lo + bucket;                             \
            const float m = top[b];                                                           \
            const float step = m <= FLT_MAX ? m / L : NAN;                                    \
            for (size_t i = lo; i < hi; i++) out[i] = (float)q[i] * step;                    \
        }                                                                                     \
    }
DEFINE_QUANTISE(int8_t)
DEFINE_QUANTISE(int16_t)
DEFINE_QUANTISE(int32_t)

static int native_int8(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                       gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    if (gc_is_error(gc_params_check(cfg->codec, &cfg->params, NULL, 0)) ||
        cfg->params.bucket == 0)
        return MPI_ERR_ARG;
    const size_t bucket = cfg->params.bucket;
    const size_t nb = (count + bucket - 1) / bucket;
    const gcmpi_int_wire w = gcmpi_native_int_wire(ctx->size);
    float *top = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_AUX, nb * sizeof(float));
    void *q = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_CHUNK, count * w.elem);
    if (!top || !q) return MPI_ERR_NO_MEM;
    float *res = ef ? ef->residual : NULL;

    double t0 = PMPI_Wtime();
    bucket_max(in, res, count, bucket, top);
    st->encode_s += PMPI_Wtime() - t0;
    int rc = gcmpi_native_allreduce_big(ctx, NULL, top, nb, MPI_FLOAT, sizeof(float), MPI_MAX);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    if (w.elem == 1) quantise_int8_t(in, res, q, count, bucket, top, w.levels);
    else if (w.elem == 2) quantise_int16_t(in, res, q, count, bucket, top, w.levels);
    else quantise_int32_t(in, res, q, count, bucket, top, w.levels);
    st->encode_s += PMPI_Wtime() - t0;

    rc = gcmpi_native_allreduce_big(ctx, NULL, q, count, w.type, w.elem, MPI_SUM);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    if (w.elem == 1) dequantise_int8_t(q, out, count, bucket, top, w.levels);
    else if (w.elem == 2) dequantise_int16_t(q, out, count, bucket, top, w.levels);
    else dequantise_int32_t(q, out, count, bucket, top, w.levels);
    st->decode_s += PMPI_Wtime() - t0;
    return MPI_SUCCESS;
}

/* ---- powersgd ------------------------------------------------------------- */

int gcmpi_native_q_usable(const float *q, size_t n)
{
    int nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(q[i])) return 0;
        nonzero |= q[i] != 0.0f;
    }
    return nonzero;
}

static void negate(float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = -x[i];
}

static int native_powersgd(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                           gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    if (gc_is_error(gc_params_check(cfg->codec, &cfg->params, NULL, 0))) return MPI_ERR_ARG;
    const gc_powersgd_shape s = gc_powersgd_shape_of(count, cfg->params.rank);
    const size_t np = s.rows * s.rank, nq = s.cols * s.rank;
    float *res = ef ? ef->residual : NULL;
    float *warm = ef ? ef->state : NULL;
    float *pm = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_AUX, np * sizeof(float));
    float *q_buf = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_AUX2, 2 * nq * sizeof(float));
    if (!pm || !q_buf) return MPI_ERR_NO_MEM;
    float *q_local = q_buf;
    float *q_sum = warm ? warm : q_buf + nq;

    double t0 = PMPI_Wtime();
    /* The warm Q is last call's allreduce, identical on all ranks, so all
     * ranks take the same branch. */
    if (!warm || ef->fresh || ef->state_reset || !gcmpi_native_q_usable(warm, nq))
        gc_powersgd_init_q(s, ctx->call_seed, q_sum);
    const float *m = in;
    int finite = 1;
    if (res) {
        finite = accumulate(res, NULL, in, count, 0.0f) < INF_BITS;
        m = res;
    }
    gc_powersgd_p(s, m, count, q_sum, pm);
    st->encode_s += PMPI_Wtime() - t0;

    int rc = gcmpi_native_allreduce_big(ctx, NULL, pm, np, MPI_FLOAT, sizeof(float), MPI_SUM);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    /* Another rank's input was not finite: P is not, and the residual
     * must not take it: it keeps M (nothing usable was sent). */
    const int p_finite = gc_all_finite(pm, np);
    gc_powersgd_orthonormalize(s, pm);
    gc_powersgd_q(s, m, count, pm, q_local);
    if (res && !finite) {
        /* A non-finite value would stay in the residual for good: drop it. */
        memset(res, 0, count * sizeof(float));
    } else if (res && p_finite) {
        /* residual = M - P Q_local^T: decompress_add with -Q_local. */
        negate(q_local, nq);
        gc_powersgd_decompress_add(s, pm, q_local, res, count);
        negate(q_local, nq);
    }
    st->encode_s += PMPI_Wtime() - t0;

    rc = gcmpi_native_allreduce_big(ctx, q_local, q_sum, nq, MPI_FLOAT, sizeof(float), MPI_SUM);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    memset(out, 0, count * sizeof(float));
    gc_powersgd_decompress_add(s, pm, q_sum, out, count);
    st->decode_s += PMPI_Wtime() - t0;
    return MPI_SUCCESS;
}

/* ---- dispatch ------------------------------------------------------------- */

int gcmpi_allreduce_native(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                           gcmpi_ef_slot *ef)
{
    const char *name = gc_codec_name(ctx->cfg->codec);
    if (strcmp(name, "none") == 0) return native_none(ctx, in, out, count);
    if (strcmp(name, "randk") == 0) return native_randk(ctx, in, out, count, ef);
    if (strcmp(name, "int8") == 0) return native_int8(ctx, in, out, count, ef);
    if (strcmp(name, "powersgd") == 0) return native_powersgd(ctx, in, out, count, ef);
    return MPI_ERR_ARG;
}
