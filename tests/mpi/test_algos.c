/* test_algos.c — the compressed collective algorithms (pmpi/coll_*.c),
 * called directly, without the preloaded shim: run under mpirun with 2, 3
 * and 4 ranks. Each test states one property; a failed check prints the
 * rank and what differed, and the program exits non-zero on every rank.
 *
 * Checks never skip a collective call, so a failure on one rank cannot
 * make the others hang. */
#include "auto_cache.h"
#include "coll_impl.h" /* gcmpi_coll_supports */
#include "codec_impl.h" /* gc_codec_none's descriptor, for a codec that fails on purpose */
#include "node_shm.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
static int my_rank;
static const char *codec_filter; /* argv[2]: comma-separated codec names */
static int verbose;               /* TEST_ALGOS_VERBOSE=1: print measured errors */

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            if (++failures > 20) break;                                                   \
            fprintf(stderr, "[rank %d] %s:%d: ", my_rank, __func__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
        }                                                                                 \
    } while (0)

/* ---- harness -------------------------------------------------------------- */

typedef struct harness {
    gcmpi_config cfg;
    gcmpi_scratch scratch;
    gcmpi_call_stats stats;
    gcmpi_coll_cache cache; /* node split and auto model, kept like the shim does */
    gcmpi_coll_ctx ctx;
} harness;

static const gcmpi_algo all_algos[] = {GCMPI_ALGO_ALLGATHER, GCMPI_ALGO_RSAG, GCMPI_ALGO_NATIVE};
static const char *algo_name(gcmpi_algo a)
{
    return a == GCMPI_ALGO_ALLGATHER ? "allgather"
           : a == GCMPI_ALGO_RSAG    ? "rsag"
           : a == GCMPI_ALGO_NATIVE  ? "native"
           : a == GCMPI_ALGO_HIER    ? "hier"
           : a == GCMPI_ALGO_SPARSE_RD ? "sparse_rd"
                                     : "auto";
}

static void harness_init(harness *h, MPI_Comm comm)
{
    memset(h, 0, sizeof *h);
    gcmpi_config_defaults(&h->cfg);
    snprintf(h->cfg.auto_cache, sizeof h->cfg.auto_cache, "off"); /* measured by each test */
    PMPI_Comm_dup(comm, &h->ctx.comm);
    PMPI_Comm_rank(h->ctx.comm, &h->ctx.rank);
    PMPI_Comm_size(h->ctx.comm, &h->ctx.size);
    h->ctx.cfg = &h->cfg;
    h->ctx.ws = gc_workspace_create();
    h->ctx.scratch = &h->scratch;
    h->ctx.stats = &h->stats;
    h->ctx.cache = &h->cache;
    h->ctx.call_seed = 12345;
}

/* hier's nodes: q consecutive ranks each (0: ranks sharing memory). */
static void use_node_size(harness *h, int q)
{
    gcmpi_coll_cache_free(&h->cache);
    h->cfg.node_size = q;
}

static void harness_free(harness *h)
{
    gcmpi_coll_cache_free(&h->cache);
    gc_workspace_free(h->ctx.ws);
    gcmpi_scratch_free(&h->scratch);
    PMPI_Comm_free(&h->ctx.comm);
}

/* Codec by name with default parameters, ratio and momentum reset. */
static void use_codec(harness *h, const char *name)
{
    h->cfg.codec = gc_codec_by_name(name);
    gc_params_default(&h->cfg.params);
    h->cfg.ef_momentum = 0.0;
    if (!h->cfg.codec) {
        fprintf(stderr, "codec %s is not registered\n", name);
        abort();
    }
}

/* 1 when the codec at registry index i is selected by argv[2]. */
static int codec_selected(size_t i)
{
    if (!codec_filter) return 1;
    const char *name = gc_codec_name(gc_codec_at(i));
    size_t len = strlen(name);
    for (const char *s = codec_filter; *s;) {
        const char *e = strchr(s, ',');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if (l == len && strncmp(s, name, len) == 0) return 1;
        s += l + (e != NULL);
    }
    return 0;
}

/* An error-feedback slot sized as the shim would size it. */
typedef struct ef_buf {
    gcmpi_ef_slot slot;
} ef_buf;

static void ef_alloc(ef_buf *e, const harness *h, gcmpi_algo algo, size_t count)
{
    size_t server = 0, state = 0;
    gcmpi_coll_slot_sizes(&h->cfg, algo, count, h->ctx.size, &server, &state);
    memset(&e->slot, 0, sizeof e->slot);
    e->slot.residual = calloc(count ? count : 1, sizeof(float));
    e->slot.server = server ? calloc(server, sizeof(float)) : NULL;
    e->slot.state = state ? calloc(state, sizeof(float)) : NULL;
    e->slot.fresh = 1;
}

static void ef_free(ef_buf *e)
{
    free(e->slot.residual);
    free(e->slot.server);
    free(e->slot.state);
}

static int allreduce(harness *h, gcmpi_algo algo, const float *in, float *out, size_t n,
                     gcmpi_ef_slot *ef)
{
    int rc = gcmpi_allreduce_compressed(&h->ctx, algo, in, out, n, ef);
    h->ctx.call_seed = h->ctx.call_seed * 6364136223846793005ull + 1442695040888963407ull;
    if (ef) ef->fresh = 0;
    return rc;
}

/* ---- data ----------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Small integers, exactly summable in float: rank r's value at i. */
static float int_value(int r, size_t i)
{
    return (float)((long)((i * 7 + (size_t)r * 13) % 19) - 9);
}

/* Elements of out[0..n) that are not the exact sum of int_value over p ranks. */
static size_t wrong_int_sums(const float *out, size_t n, int p)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < p; r++) want += int_value(r, i);
        bad += out[i] != want;
    }
    return bad;
}

/* Laplace(0, 1) samples of rank r: heavy-ish tails like gradients. */
static void fill_laplace(float *x, size_t n, int r)
{
    uint64_t s = 1000 + (uint64_t)r;
    for (size_t i = 0; i < n; i++) {
        double u = ((double)(rng_next(&s) >> 11) + 0.5) * 0x1p-53 - 0.5;
        x[i] = (float)(-(u < 0 ? -1.0 : 1.0) * log(1.0 - 2.0 * fabs(u)));
    }
}

static double l2(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrt(s);
}

static double rel_err(const float *ref, const float *got, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)ref[i] - got[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* 1 when every rank holds the same bytes in x. */
static int same_on_all_ranks(const harness *h, const float *x, size_t n)
{
    uint64_t hash = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)x;
    for (size_t i = 0; i < n * sizeof(float); i++) hash = (hash ^ b[i]) * 1099511628211ull;
    uint64_t *all = malloc((size_t)h->ctx.size * sizeof *all);
    PMPI_Allgather(&hash, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, h->ctx.comm);
    int same = 1;
    for (int r = 0; r < h->ctx.size; r++) same &= all[r] == hash;
    free(all);
    return same;
}

/* ---- tests ------------------------------------------------------------------ */

/* Codec none through every algorithm sums integer-valued floats exactly, for
 * counts that are 0, below p, not divisible by p and large, in place or not. */
static void test_none_sums_exactly_with_every_algorithm(harness *h)
{
    const int p = h->ctx.size;
    const size_t counts[] = {0, 1, (size_t)p - 1, (size_t)p + 1, 1000, 65537};
    use_codec(h, "none");
    for (size_t a = 0; a < 3; a++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (int in_place = 0; in_place < 2; in_place++) {
                const size_t n = counts[c];
                float *in = malloc((n + 1) * sizeof(float));
                float *out = malloc((n + 1) * sizeof(float));
                float *want = calloc(n + 1, sizeof(float));
                for (size_t i = 0; i < n; i++) {
                    in[i] = int_value(h->ctx.rank, i);
                    for (int r = 0; r < p; r++) want[i] += int_value(r, i);
                }
                ef_buf ef;
                ef_alloc(&ef, h, all_algos[a], n);
                float *dst = in_place ? in : out;
                int rc = allreduce(h, all_algos[a], in, dst, n, &ef.slot);
                CHECK(rc == MPI_SUCCESS, "%s n=%zu: rc %d", algo_name(all_algos[a]), n, rc);
                size_t bad = 0;
                for (size_t i = 0; i < n; i++) bad += dst[i] != want[i];
                CHECK(bad == 0, "%s n=%zu in_place=%d: %zu elements differ from the exact sum",
                      algo_name(all_algos[a]), n, in_place, bad);
                CHECK(same_on_all_ranks(h, dst, n), "%s n=%zu: ranks differ",
                      algo_name(all_algos[a]), n);
                ef_free(&ef);
                free(in);
                free(out);
                free(want);
            }
}

/* Every codec through every algorithm it supports leaves bit-identical
 * results on all ranks, including counts below p, with error feedback
 * carried over two calls and, for sparse codecs, momentum correction. */
static void test_every_codec_gives_identical_bytes_on_every_rank(harness *h)
{
    const int p = h->ctx.size;
    const size_t counts[] = {1, (size_t)p + 1, 65537};
    for (size_t ci = 0; ci < gc_codec_count(); ci++)
        if (codec_selected(ci))
        for (int momentum = 0; momentum < 2; momentum++)
            for (size_t a = 0; a < 3; a++)
                for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                    const char *name = gc_codec_name(gc_codec_at(ci));
                    use_codec(h, name);
                    if (momentum && !(gc_codec_flags(h->cfg.codec) & GC_SPARSE)) continue;
                    h->cfg.ef_momentum = momentum ? 0.9 : 0.0;
                    h->cfg.params.ratio = 0.1;
                    if (!gcmpi_coll_supports(h->cfg.codec, all_algos[a])) continue;
                    const size_t n = counts[c];
                    float *in = malloc(n * sizeof(float));
                    float *out = malloc(n * sizeof(float));
                    fill_laplace(in, n, h->ctx.rank);
                    ef_buf ef;
                    ef_alloc(&ef, h, all_algos[a], n);
                    if (momentum) CHECK(ef.slot.state != NULL, "%s: no momentum state", name);
                    for (int call = 0; call < 2; call++) {
                        int rc = allreduce(h, all_algos[a], in, out, n, &ef.slot);
                        CHECK(rc == MPI_SUCCESS, "%s %s n=%zu momentum=%d: rc %d", name,
                              algo_name(all_algos[a]), n, momentum, rc);
                        CHECK(same_on_all_ranks(h, out, n), "%s %s n=%zu: ranks differ", name,
                              algo_name(all_algos[a]), n);
                    }
                    ef_free(&ef);
                    free(in);
                    free(out);
                }
}

/* Deterministic codecs: what a rank can compute alone from every rank's
 * input must equal the collective's result bit for bit. */
static int deterministic(const gc_codec *c)
{
    return !(gc_codec_flags(c) & (GC_STOCHASTIC | GC_LINEAR)) ||
           strcmp(gc_codec_name(c), "none") == 0;
}

/* acc += D(E(x)), encoded without error feedback. */
static void decode_own(const gc_codec *c, const gc_params *par, const float *x, size_t n,
                       float *acc)
{
    size_t cap = gc_bound(c, n, par);
    void *buf = malloc(cap);
    size_t len = gc_encode(c, x, NULL, n, par, 0, buf, cap, NULL);
    size_t r = gc_is_error(len) ? len : gc_decode_add_as(c, buf, len, acc, n, NULL);
    CHECK(!gc_is_error(r), "%s local round trip: %s", gc_codec_name(c), gc_error_name(r));
    free(buf);
}

/* allgather = the rank-order sum of each rank's decoded payload. */
static void test_allgather_equals_rank_order_sum_of_decoded_payloads(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 10007;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *x = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    for (size_t ci = 0; ci < gc_codec_count(); ci++) {
        const gc_codec *c = gc_codec_at(ci);
        if (!deterministic(c) || !codec_selected(ci)) continue;
        use_codec(h, gc_codec_name(c));
        fill_laplace(in, n, h->ctx.rank);
        memset(want, 0, n * sizeof(float));
        for (int r = 0; r < p; r++) {
            fill_laplace(x, n, r);
            decode_own(c, &h->cfg.params, x, n, want);
        }
        int rc = allreduce(h, GCMPI_ALGO_ALLGATHER, in, out, n, NULL);
        CHECK(rc == MPI_SUCCESS, "%s: rc %d", gc_codec_name(c), rc);
        CHECK(memcmp(out, want, n * sizeof(float)) == 0,
              "%s: allgather differs from the rank-order sum of decoded payloads (rel %g)",
              gc_codec_name(c), rel_err(want, out, n));
    }
    free(in), free(out), free(x), free(want);
}

/* rsag = per chunk: the rank-order sum of decoded chunk payloads, encoded
 * once more and decoded. Chunk j spans the balanced j-th part. */
static void test_rsag_equals_two_stage_chunk_reference(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 10007;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *x = malloc(n * sizeof(float)), *red = malloc(n * sizeof(float));
    float *want = malloc(n * sizeof(float));
    for (size_t ci = 0; ci < gc_codec_count(); ci++) {
        const gc_codec *c = gc_codec_at(ci);
        if (!deterministic(c) || !codec_selected(ci)) continue;
        use_codec(h, gc_codec_name(c));
        fill_laplace(in, n, h->ctx.rank);
        memset(red, 0, n * sizeof(float));
        memset(want, 0, n * sizeof(float));
        for (int j = 0; j < p; j++) {
            const size_t q = n / (size_t)p, rem = n % (size_t)p, jj = (size_t)j;
            const size_t lo = q * jj + (jj < rem ? jj : rem), len = q + (jj < rem);
            for (int r = 0; r < p; r++) {
                fill_laplace(x, n, r);
                decode_own(c, &h->cfg.params, x + lo, len, red + lo);
            }
            decode_own(c, &h->cfg.params, red + lo, len, want + lo);
        }
        int rc = allreduce(h, GCMPI_ALGO_RSAG, in, out, n, NULL);
        CHECK(rc == MPI_SUCCESS, "%s: rc %d", gc_codec_name(c), rc);
        CHECK(memcmp(out, want, n * sizeof(float)) == 0,
              "%s: rsag differs from the two-stage chunk reference (rel %g)", gc_codec_name(c),
              rel_err(want, out, n));
    }
    free(in), free(out), free(x), free(red), free(want);
}

/* A lossy codec's collective error is at most 3x the codec's own
 * round-trip error on the summed vector (independent errors of p
 * contributions, plus rsag's second stage, stay within that). */
static void test_lossy_codecs_stay_within_a_bound(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 20000;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *x = malloc(n * sizeof(float)), *sum = calloc(n, sizeof(float));
    float *own = malloc(n * sizeof(float));
    for (int r = 0; r < p; r++) {
        fill_laplace(x, n, r);
        for (size_t i = 0; i < n; i++) sum[i] += x[i];
    }
    fill_laplace(in, n, h->ctx.rank);
    for (size_t ci = 0; ci < gc_codec_count(); ci++)
        for (size_t a = 0; a < 3 && codec_selected(ci); a++) {
            const gc_codec *c = gc_codec_at(ci);
            use_codec(h, gc_codec_name(c));
            h->cfg.params.ratio = 0.1;
            /* native int8 trades levels for p: its own test below */
            if (!gcmpi_coll_supports(c, all_algos[a]) ||
                (all_algos[a] == GCMPI_ALGO_NATIVE && strcmp(gc_codec_name(c), "int8") == 0))
                continue;
            memset(own, 0, n * sizeof(float));
            decode_own(c, &h->cfg.params, sum, n, own);
            const double bound = 3.0 * rel_err(sum, own, n) + 1e-6;
            int rc = allreduce(h, all_algos[a], in, out, n, NULL);
            CHECK(rc == MPI_SUCCESS, "%s %s: rc %d", gc_codec_name(c), algo_name(all_algos[a]), rc);
            double e = rel_err(sum, out, n);
            if (verbose && my_rank == 0)
                printf("  %-8s %-9s relative error %.3g, bound %.3g\n", gc_codec_name(c),
                       algo_name(all_algos[a]), e, bound);
            CHECK(e <= bound, "%s %s: relative error %g above the bound %g", gc_codec_name(c),
                  algo_name(all_algos[a]), e, bound);
        }
    free(in), free(out), free(x), free(sum), free(own);
}

/* native int8: each of p contributions is off by at most half a step,
 * step = (bucket max over ranks) / L with L = floor(127/p) for p <= 8,
 * else 127. */
static void test_native_int8_error_is_at_most_half_a_step_per_rank(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 5000;
    use_codec(h, "int8");
    h->cfg.params.bucket = 256;
    const float L = p <= 8 ? (float)(127 / p) : 127.0f;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *x = malloc(n * sizeof(float)), *sum = calloc(n, sizeof(float));
    float *top = calloc(n / 256 + 1, sizeof(float));
    for (int r = 0; r < p; r++) {
        fill_laplace(x, n, r);
        for (size_t i = 0; i < n; i++) {
            sum[i] += x[i];
            top[i / 256] = fmaxf(top[i / 256], fabsf(x[i]));
        }
    }
    fill_laplace(in, n, h->ctx.rank);
    int rc = allreduce(h, GCMPI_ALGO_NATIVE, in, out, n, NULL);
    CHECK(rc == MPI_SUCCESS, "rc %d", rc);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double half_step = top[i / 256] / L / 2;
        bad += fabs((double)out[i] - sum[i]) > p * half_step * (1 + 1e-5) + 1e-6;
    }
    CHECK(bad == 0, "%zu elements off by more than p half steps", bad);
    CHECK(h->stats.bytes_sent < h->stats.bytes_offered, "sent %llu of %llu bytes",
          (unsigned long long)h->stats.bytes_sent, (unsigned long long)h->stats.bytes_offered);
    free(in), free(out), free(x), free(sum), free(top);
}

/* native randk: the exact sum on the k indices of the call seed, zero
 * elsewhere. */
static void test_native_randk_is_exact_on_the_chosen_indices(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 10000;
    use_codec(h, "randk");
    h->cfg.params.ratio = 0.05;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    char *kept = calloc(n, 1);
    const size_t k = gc_randk_count(n, &h->cfg.params);
    uint32_t *idx = malloc(k * sizeof *idx);
    CHECK(gc_randk_indices(n, &h->cfg.params, h->ctx.call_seed, idx, NULL) == k, "indices");
    for (size_t j = 0; j < k; j++) kept[idx[j]] = 1;
    for (size_t i = 0; i < n; i++) in[i] = int_value(h->ctx.rank, i);
    int rc = allreduce(h, GCMPI_ALGO_NATIVE, in, out, n, NULL);
    CHECK(rc == MPI_SUCCESS, "rc %d", rc);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < p && kept[i]; r++) want += int_value(r, i);
        bad += out[i] != want;
    }
    CHECK(bad == 0, "%zu elements differ", bad);
    /* the k values and one non-finite mark per 4096 elements */
    CHECK(h->stats.bytes_sent == (k + (n + 4095) / 4096) * sizeof(float),
          "sent %llu bytes for k=%zu", (unsigned long long)h->stats.bytes_sent, k);
    free(in), free(out), free(kept), free(idx);
}

/* native powersgd recovers a rank-1 sum (every rank a multiple of the same
 * a b^T), with and without error feedback, at rank 1 and rank 4. */
static void test_native_powersgd_is_exact_on_a_rank_one_sum(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 4000; /* 64 x 63 */
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *sum = calloc(n, sizeof(float));
    for (unsigned rank = 1; rank <= 4; rank += 3)
        for (int with_ef = 0; with_ef < 2; with_ef++) {
            use_codec(h, "powersgd");
            h->cfg.params.rank = rank;
            gc_powersgd_shape s = gc_powersgd_shape_of(n, rank);
            for (size_t i = 0; i < n; i++) {
                float a = (float)(i / s.cols % 5) - 2.0f, b = (float)(i % s.cols % 3) + 1.0f;
                in[i] = (float)(h->ctx.rank + 1) * a * b;
                sum[i] = (float)(p * (p + 1) / 2) * a * b;
            }
            ef_buf ef;
            ef_alloc(&ef, h, GCMPI_ALGO_NATIVE, n);
            int rc = allreduce(h, GCMPI_ALGO_NATIVE, in, out, n, with_ef ? &ef.slot : NULL);
            CHECK(rc == MPI_SUCCESS, "rc %d", rc);
            double e = rel_err(sum, out, n);
            CHECK(e <= 1e-4, "rank %u ef=%d: relative error %g", rank, with_ef, e);
            if (with_ef) CHECK(l2(ef.slot.residual, n) <= 1e-4 * l2(in, n), "residual left");
            ef_free(&ef);
        }
    free(in), free(out), free(sum);
}

/* Error feedback: sending the same gradient T times, the mean of the
 * outputs approaches the true sum like 1/T (what was not sent is carried,
 * not lost: mean = sum - residuals / T). Checked as: error after 64 calls
 * <= 0.35 x error after 8. One case per place a residual lives: the local
 * residual of allgather and rsag (a sparse and a dense codec), rsag's
 * server residual, and each native path (int8's own quantiser, randk's
 * shared indices, PowerSGD's low-rank residual with warm start). The codec
 * round trips alone converge like this too; scaled sign's residual takes
 * hundreds of calls to settle, and an unbiased quantiser with few levels
 * (qsgd at 4 bits) is not a contraction, so error feedback does not bound
 * its residual: those are not properties of the algorithms. */
static void test_error_feedback_mean_approaches_the_true_sum(harness *h)
{
    static const struct { const char *codec; gcmpi_algo algo; } cases[] = {
        {"topk", GCMPI_ALGO_ALLGATHER}, {"topk", GCMPI_ALGO_RSAG},
        {"int8", GCMPI_ALGO_ALLGATHER}, {"int8", GCMPI_ALGO_RSAG},
        {"int8", GCMPI_ALGO_NATIVE},    {"randk", GCMPI_ALGO_NATIVE},
        {"powersgd", GCMPI_ALGO_NATIVE}, {"topk", GCMPI_ALGO_SPARSE_RD},
        {"dgc", GCMPI_ALGO_SPARSE_RD},
    };
    const int p = h->ctx.size;
    const size_t n = 2000;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *x = malloc(n * sizeof(float)), *sum = calloc(n, sizeof(float));
    double *acc = malloc(n * sizeof(double));
    float *mean = malloc(n * sizeof(float));
    for (int r = 0; r < p; r++) {
        fill_laplace(x, n, r);
        for (size_t i = 0; i < n; i++) sum[i] += x[i];
    }
    fill_laplace(in, n, h->ctx.rank);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const gcmpi_algo algo = cases[c].algo;
        use_codec(h, cases[c].codec);
        h->cfg.params.ratio = 0.25;
        ef_buf ef;
        ef_alloc(&ef, h, algo, n);
        memset(acc, 0, n * sizeof(double));
        double e8 = 0, e64 = 0;
        for (int t = 1; t <= 64; t++) {
            int rc = allreduce(h, algo, in, out, n, &ef.slot);
            CHECK(rc == MPI_SUCCESS, "%s %s: rc %d", cases[c].codec, algo_name(algo), rc);
            for (size_t i = 0; i < n; i++) {
                acc[i] += out[i];
                mean[i] = (float)(acc[i] / t);
            }
            if (t == 8) e8 = rel_err(sum, mean, n);
            if (t == 64) e64 = rel_err(sum, mean, n);
        }
        if (verbose && my_rank == 0)
            printf("  %-8s %-9s mean error %.3g after 8 calls, %.3g after 64\n", cases[c].codec,
                   algo_name(algo), e8, e64);
        CHECK(e64 <= 0.35 * e8, "%s %s: mean error %g after 8 calls, %g after 64", cases[c].codec,
              algo_name(algo), e8, e64);
        ef_free(&ef);
    }
    free(in), free(out), free(x), free(sum), free(acc), free(mean);
}

/* ---- hier ------------------------------------------------------------------ */

/* The node split by GCMPI_NODE_SIZE: blocks of q ranks, the last one
 * smaller when q does not divide p; shape figures agree on all ranks. */
static void test_hier_node_split_follows_node_size(harness *h)
{
    const int p = h->ctx.size, me = h->ctx.rank;
    for (int q = 1; q <= p + 1; q++) {
        use_node_size(h, q);
        gcmpi_nodes *n = NULL;
        int rc = gcmpi_nodes_create(h->ctx.comm, q, &n);
        CHECK(rc == MPI_SUCCESS && n, "q=%d: rc %d", q, rc);
        if (!n) continue;
        const int nodes = (p + q - 1) / q;
        CHECK(n->n_nodes == nodes, "q=%d: %d nodes, want %d", q, n->n_nodes, nodes);
        CHECK(n->node_index == me / q, "q=%d: node %d, want %d", q, n->node_index, me / q);
        CHECK(n->node_rank == me % q, "q=%d: local rank %d", q, n->node_rank);
        CHECK(n->max_node_size == (q < p ? q : p), "q=%d: largest node %d", q, n->max_node_size);
        CHECK((n->leaders != MPI_COMM_NULL) == (me % q == 0), "q=%d: leader", q);
        gcmpi_nodes_free(n);
    }
    use_node_size(h, 0);
}

/* Codec none through hier sums integer-valued floats exactly for every
 * node size (one node, one rank per node, uneven nodes), in place or not,
 * with every rank holding the same bytes; inside a node through MPI, the
 * shared window, and a window of 7 floats a part (many rounds, uneven
 * last pieces), the window's chunks copied out through the cache and past
 * it (streaming stores from every alignment), and pipelined between nodes
 * (segments of 100 floats) through the window or MPI. */
static void test_hier_none_sums_exactly_for_every_node_size(harness *h)
{
    const int p = h->ctx.size;
    const size_t counts[] = {0, 1, (size_t)p + 1, 1000, 65537};
    static const char *ways[] = {"MPI", "window", "window of 7", "window streamed",
                                 "window of 7 streamed", "window pipelined",
                                 "window of 7 pipelined", "MPI pipelined"};
    use_codec(h, "none");
    for (int way = 0; way < 8; way++)
    for (int q = 1; q <= p; q++) {
        use_node_size(h, q);
        h->cfg.node_shm = way > 0 && way < 7;
        gcmpi_node_shm_set_max_floats(way == 2 || way == 4 || way == 6 ? 7
                                                                       : GCMPI_NODE_SHM_MAX_FLOATS);
        gcmpi_node_shm_set_streaming(way == 3 || way == 4 ? 1 : 0);
        h->cfg.hier_segment = way >= 5 ? 400 : 0;
        /* With a checksum codec none goes by the allgather between nodes
         * (without one by MPI's own sum), which the pipeline carries. */
        h->cfg.params.flags = way >= 5 ? GC_PF_CRC : 0;
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (int in_place = 0; in_place < 2; in_place++) {
                const size_t n = counts[c];
                float *in = malloc((n + 1) * sizeof(float));
                float *out = malloc((n + 1) * sizeof(float));
                for (size_t i = 0; i < n; i++) in[i] = int_value(h->ctx.rank, i);
                if (in_place) memcpy(out, in, n * sizeof(float));
                int rc = allreduce(h, GCMPI_ALGO_HIER, in_place ? out : in, out, n, NULL);
                CHECK(rc == MPI_SUCCESS, "%s q=%d n=%zu: rc %d", ways[way], q, n, rc);
                /* Two nodes of q (none goes by the allgather between
                 * two nodes, by rsag between more) and chunks of 200
                 * floats or more: in segments of 100 or more. */
                if (way >= 5 && q > 1 && p == 2 * q && n / (size_t)q >= 200)
                    CHECK(gcmpi_hier_last_segments() > 1, "%s q=%d n=%zu: not pipelined",
                          ways[way], q, n);
                const size_t bad = wrong_int_sums(out, n, p);
                CHECK(bad == 0, "%s q=%d n=%zu in_place=%d: %zu wrong sums", ways[way], q, n,
                      in_place, bad);
                CHECK(same_on_all_ranks(h, out, n), "%s q=%d n=%zu: ranks differ", ways[way], q, n);
                free(in);
                free(out);
            }
    }
    gcmpi_node_shm_set_max_floats(GCMPI_NODE_SHM_MAX_FLOATS);
    gcmpi_node_shm_set_streaming(-1);
    h->cfg.hier_segment = 1 << 20;
    h->cfg.params.flags = 0;
    h->cfg.node_shm = 1;
    use_node_size(h, 0);
}

/* A node whose shared memory has little room (a container's /dev/shm):
 * hier's window is made smaller and the vector goes in more rounds; with
 * no room for even 64 Ki floats a part it sums through MPI instead, on
 * every rank of the node alike (a window Open MPI cannot back hangs the
 * node's other ranks). Either way codec none's sums are exact and the
 * same on every rank, one node or several. */
static void test_hier_window_fits_the_room_or_goes(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = (size_t)1 << 20;
    /* room for parts of 80 Ki floats (the vector wants 1 Mi / q each),
     * then none */
    const size_t part = 64 + 4096 + ((size_t)80 << 10) * sizeof(float); /* header, page */
    const size_t rooms[] = {(size_t)p * part + ((size_t)256 << 10), 0};
    static const char *what[] = {"small window", "no room"};
    use_codec(h, "none");
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) in[i] = int_value(h->ctx.rank, i);
    for (int r = 0; r < 2; r++)
        for (int q = p > 1 ? 2 : 1; q <= p; q += p > 2 ? p - 2 : 1) {
            use_node_size(h, q);
            gcmpi_node_shm_set_room(rooms[r]);
            for (int call = 0; call < 2; call++) {
                memset(out, 0, n * sizeof(float));
                int rc = allreduce(h, GCMPI_ALGO_HIER, in, out, n, NULL);
                CHECK(rc == MPI_SUCCESS, "%s q=%d call %d: rc %d", what[r], q, call, rc);
                const size_t bad = wrong_int_sums(out, n, p);
                CHECK(bad == 0, "%s q=%d call %d: %zu wrong sums", what[r], q, call, bad);
                CHECK(same_on_all_ranks(h, out, n), "%s q=%d: ranks differ", what[r], q);
            }
            /* Nodes of one size use the window (uneven ones reduce to a
             * leader): kept where it fits, given up where not. */
            if (h->cache.nodes && p % q == 0)
                CHECK(h->cache.nodes->shm_possible == (r == 0),
                      "%s q=%d: window kept %d", what[r], q, h->cache.nodes->shm_possible);
        }
    gcmpi_node_shm_set_room(SIZE_MAX);
    use_node_size(h, 0);
    free(in);
    free(out);
}

/* hier's pipeline between nodes is taken by every rank alike, whatever
 * each node sums through: here node 0 has its window and node 1 finds no
 * room for one (4 ranks, nodes of 2), so node 1 sums each segment
 * through MPI while node 0 uses the window, and their columns still meet
 * segment by segment: codec none exact, every rank the same bytes, no
 * hang. */
static void test_hier_pipeline_meets_whatever_each_node_sums_through(harness *h)
{
    const int p = h->ctx.size;
    if (p != 4) return;
    const size_t n = 65537;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) in[i] = int_value(h->ctx.rank, i);
    use_codec(h, "none");
    h->cfg.params.flags = GC_PF_CRC; /* the allgather between nodes: pipelined */
    use_node_size(h, 2);
    h->cfg.hier_segment = 4000; /* chunks of 32768: 8 segments */
    gcmpi_node_shm_set_room(h->ctx.rank >= 2 ? 0 : SIZE_MAX);
    for (int call = 0; call < 2; call++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            if (in_place) memcpy(out, in, n * sizeof(float));
            const int rc = allreduce(h, GCMPI_ALGO_HIER, in_place ? out : in, out, n, NULL);
            CHECK(rc == MPI_SUCCESS && gcmpi_hier_last_segments() == 8,
                  "call %d: rc %d, %d segments", call, rc, gcmpi_hier_last_segments());
            const size_t bad = wrong_int_sums(out, n, p);
            CHECK(bad == 0, "call %d in_place=%d: %zu wrong sums", call, in_place, bad);
            CHECK(same_on_all_ranks(h, out, n), "call %d: ranks differ", call);
        }
    }
    CHECK(h->cache.nodes && h->cache.nodes->shm_possible == (h->ctx.rank < 2),
          "node %d: window kept %d", h->ctx.rank / 2,
          h->cache.nodes ? h->cache.nodes->shm_possible : -1);
    gcmpi_node_shm_set_room(SIZE_MAX);
    h->cfg.hier_segment = 1 << 20;
    use_codec(h, "none");
    use_node_size(h, 0);
    free(in), free(out);
}

/* The window's allgather tells every rank of the node the largest code
 * any rank brought (a column's failure reaches its whole node), and puts
 * every chunk in place; straight on the shared-memory primitives, on a
 * node of all ranks, in rounds of 3 floats a part. */
static void test_node_window_spreads_chunks_and_the_worst_code(harness *h)
{
    const int p = h->ctx.size, me = h->ctx.rank;
    int possible = 0;
    CHECK(gcmpi_node_shm_possible(h->ctx.comm, &possible) == MPI_SUCCESS && possible,
          "one host's ranks do not share memory");
    if (!possible) return;
    int *counts = malloc((size_t)p * sizeof *counts), *displs = malloc((size_t)p * sizeof *displs);
    const size_t n = 10 * (size_t)p + 3;
    float *out = malloc(n * sizeof(float));
    for (int i = 0; i < p; i++) {
        counts[i] = (int)gcmpi_chunk_len(n, p, i);
        displs[i] = (int)gcmpi_chunk_start(n, p, i);
    }
    for (size_t i = 0; i < n; i++) out[i] = -1.0f;
    for (int i = 0; i < counts[me]; i++) out[displs[me] + i] = (float)(displs[me] + i);
    gcmpi_node_shm *shm = NULL;
    gcmpi_node_shm_set_max_floats(3);
    int worst = -1;
    const int mine = me == p - 1 ? MPI_ERR_ARG : MPI_SUCCESS;
    int rc = gcmpi_node_shm_allgather(&shm, h->ctx.comm, out, counts, displs, mine, &worst);
    CHECK(rc == MPI_SUCCESS, "rc %d", rc);
    CHECK(worst == (p > 1 || mine ? MPI_ERR_ARG : MPI_SUCCESS), "worst code %d", worst);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += out[i] != (float)i;
    CHECK(bad == 0, "%zu elements not gathered", bad);
    gcmpi_node_shm_set_max_floats(GCMPI_NODE_SHM_MAX_FLOATS);
    gcmpi_node_shm_free(shm);
    free(counts), free(displs), free(out);
}

/* One node whose ranks share the window: hier compresses nothing (there
 * is no slow link) and is an exact allreduce summed in local rank order,
 * bit for bit, whatever the codec; the residual stays untouched. */
static void test_hier_on_one_node_is_exact_in_rank_order(harness *h)
{
    const int p = h->ctx.size;
    if (p < 2) return;
    const size_t n = 10007;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *theirs = malloc(n * sizeof(float)), *want = calloc(n, sizeof(float));
    for (int r = 0; r < p; r++) {
        fill_laplace(theirs, n, r);
        for (size_t i = 0; i < n; i++) want[i] = r == 0 ? theirs[i] : want[i] + theirs[i];
    }
    fill_laplace(in, n, h->ctx.rank);
    static const char *codecs[] = {"topk", "int8", "sign"};
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        use_codec(h, codecs[c]);
        use_node_size(h, p);
        ef_buf ef;
        ef_alloc(&ef, h, GCMPI_ALGO_HIER, n);
        int rc = allreduce(h, GCMPI_ALGO_HIER, in, out, n, &ef.slot);
        CHECK(rc == MPI_SUCCESS, "%s: rc %d", codecs[c], rc);
        size_t bad = 0, moved = 0;
        for (size_t i = 0; i < n; i++) {
            bad += memcmp(&out[i], &want[i], sizeof(float)) != 0;
            moved += ef.slot.residual && ef.slot.residual[i] != 0.0f;
        }
        CHECK(bad == 0, "%s: %zu sums differ from the rank-order sum", codecs[c], bad);
        CHECK(moved == 0, "%s: %zu residual entries changed", codecs[c], moved);
        ef_free(&ef);
    }
    use_node_size(h, 0);
    free(in), free(out), free(theirs), free(want);
}

/* Lossy codecs through hier (nodes of 2: uneven on 3 ranks): every rank
 * ends with the same bytes, and the sum is as close as the codec allows
 * (compressed once, between nodes, like a flat allgather of node sums). */
static void test_hier_lossy_codecs_agree_and_stay_close(harness *h)
{
    static const struct { const char *codec; double bound; } cases[] = {
        {"int8", 0.02}, {"fp16", 2e-3}, {"topk", 0.9}, {"sign", 1.0}, {"qsgd", 0.5},
        {"randk", 1.0}, {"dgc", 0.9},
    };
    const int p = h->ctx.size;
    const size_t n = 20000;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *x = malloc(n * sizeof(float)), *sum = calloc(n, sizeof(float));
    for (int r = 0; r < p; r++) {
        fill_laplace(x, n, r);
        for (size_t i = 0; i < n; i++) sum[i] += x[i];
    }
    fill_laplace(in, n, h->ctx.rank);
    use_node_size(h, p > 2 ? 2 : 1);
    for (int piped = 0; piped < 2; piped++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        h->cfg.hier_segment = piped ? 12000 : 0;
        use_codec(h, cases[c].codec);
        h->cfg.params.ratio = 0.25;
        if (strcmp(cases[c].codec, "qsgd") == 0) h->cfg.params.bits = 8;
        ef_buf ef;
        ef_alloc(&ef, h, GCMPI_ALGO_HIER, n);
        for (int call = 0; call < 2; call++) {
            int rc = allreduce(h, GCMPI_ALGO_HIER, in, out, n, &ef.slot);
            CHECK(rc == MPI_SUCCESS, "%s: rc %d", cases[c].codec, rc);
            CHECK(same_on_all_ranks(h, out, n), "%s call %d: ranks differ", cases[c].codec, call);
        }
        /* randk goes by MPI's own sum between nodes, not the allgather */
        const int want = piped && strcmp(cases[c].codec, "randk") != 0 ? 4 : 0;
        if (p == 4)
            CHECK(gcmpi_hier_last_segments() == want, "%s: %d segments, want %d",
                  cases[c].codec, gcmpi_hier_last_segments(), want);
        const double e = rel_err(sum, out, n);
        if (verbose && my_rank == 0)
            printf("  hier%s %-8s relative error %.3g\n", piped ? " pipelined" : "",
                   cases[c].codec, e);
        CHECK(e <= cases[c].bound, "%s%s: relative error %g above %g", cases[c].codec,
              piped ? " pipelined" : "", e, cases[c].bound);
        ef_free(&ef);
    }
    h->cfg.hier_segment = 1 << 20;
    use_node_size(h, 0);
    free(in), free(out), free(x), free(sum);
}

/* hier's node gathers the pipeline's sums by the payloads its columns
 * decoded (each rank decodes the other ranks' chunks) where those are
 * small: byte for byte what gathering the floats gives, call after call
 * and residuals included, in place or not. By its rule it is taken for
 * sparse codecs at 1 % and not for topk at 25 % nor for int8; forced, for
 * those too. */
static void test_hier_gather_by_payloads_equals_by_floats(harness *h)
{
    static const struct { const char *codec; double ratio; int by_rule; } cases[] = {
        {"topk", 0.01, 1}, {"dgc", 0.01, 1}, {"topkq", 0.01, 1}, {"topk", 0.25, 0}, {"int8", 0.01, 0},
    };
    const int p = h->ctx.size;
    const size_t n = 40003; /* chunks and segments of two lengths */
    float *in = malloc(n * sizeof(float)), *by_floats = malloc(n * sizeof(float));
    float *by_payloads = malloc(n * sizeof(float));
    use_node_size(h, p > 2 ? 2 : 1);
    /* The window's parts are grown for the payloads (the forced cases'
     * outgrow what the sums' rounds made). */
    h->cfg.hier_segment = 12000; /* chunks of about 10000 or 20000 floats: 4 to 7 segments */
    for (int forced = 0; forced < 2; forced++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        use_codec(h, cases[c].codec);
        h->cfg.params.ratio = cases[c].ratio;
        ef_buf a, b;
        ef_alloc(&a, h, GCMPI_ALGO_HIER, n);
        ef_alloc(&b, h, GCMPI_ALGO_HIER, n);
        for (int call = 0; call < 3; call++) {
            fill_laplace(in, n, h->ctx.rank + 17 * call);
            const uint64_t seed = h->ctx.call_seed;
            gcmpi_hier_set_kept_mode(0);
            int rc = allreduce(h, GCMPI_ALGO_HIER, in, by_floats, n, &a.slot);
            CHECK(rc == MPI_SUCCESS && !gcmpi_hier_last_gathered_kept(),
                  "%s %g floats: rc %d, gathered by payloads %d", cases[c].codec,
                  cases[c].ratio, rc, gcmpi_hier_last_gathered_kept());
            h->ctx.call_seed = seed;
            gcmpi_hier_set_kept_mode(forced ? 1 : -1);
            const int in_place = call == 1;
            if (in_place) memcpy(by_payloads, in, n * sizeof(float));
            rc = allreduce(h, GCMPI_ALGO_HIER, in_place ? by_payloads : in, by_payloads, n,
                           &b.slot);
            const int piped = gcmpi_hier_last_segments() > 1;
            const int want = piped && (forced || cases[c].by_rule);
            CHECK(rc == MPI_SUCCESS && gcmpi_hier_last_gathered_kept() == want,
                  "%s %g%s call %d: rc %d, gathered by payloads %d, want %d", cases[c].codec,
                  cases[c].ratio, forced ? " forced" : "", call, rc,
                  gcmpi_hier_last_gathered_kept(), want);
            CHECK(memcmp(by_floats, by_payloads, n * sizeof(float)) == 0,
                  "%s %g%s call %d: the sums differ from the floats' gather", cases[c].codec,
                  cases[c].ratio, forced ? " forced" : "", call);
            CHECK(memcmp(a.slot.residual, b.slot.residual, n * sizeof(float)) == 0,
                  "%s %g%s call %d: the residuals differ", cases[c].codec, cases[c].ratio,
                  forced ? " forced" : "", call);
            CHECK(same_on_all_ranks(h, by_payloads, n), "%s %g call %d: ranks differ",
                  cases[c].codec, cases[c].ratio, call);
        }
        if (p == 4)
            CHECK(gcmpi_hier_last_segments() > 1, "%s: not pipelined", cases[c].codec);
        ef_free(&a);
        ef_free(&b);
    }
    /* Where the node's shared memory has no room to grow the window for
     * the payloads: a window too small for them (the floats are gathered
     * through it), or, the window made for the sums first and then no
     * room at all, none (through MPI from then on); the sums stay those
     * of the floats' gather. */
    use_codec(h, "topk");
    h->cfg.params.ratio = 0.25; /* about 80 KB of payloads a rank */
    /* parts of 28 KiB: room for the sums' rounds (22 KiB), not for the
     * payloads */
    const size_t small = ((size_t)256 << 10) + (size_t)(p > 2 ? 2 : 1) * (64 + 4096 + (28 << 10));
    const size_t rooms[] = {small, 0};
    for (size_t r = 0; r < 2; r++) {
        ef_buf a, b;
        ef_alloc(&a, h, GCMPI_ALGO_HIER, n);
        ef_alloc(&b, h, GCMPI_ALGO_HIER, n);
        fill_laplace(in, n, h->ctx.rank);
        use_node_size(h, p > 2 ? 2 : 1); /* a new window */
        gcmpi_node_shm_set_room(rooms[r] ? rooms[r] : SIZE_MAX);
        const uint64_t seed = h->ctx.call_seed;
        gcmpi_hier_set_kept_mode(0);
        int rc = allreduce(h, GCMPI_ALGO_HIER, in, by_floats, n, &a.slot);
        CHECK(rc == MPI_SUCCESS, "room %zu, floats: rc %d", rooms[r], rc);
        gcmpi_node_shm_set_room(rooms[r]);
        h->ctx.call_seed = seed;
        gcmpi_hier_set_kept_mode(1);
        rc = allreduce(h, GCMPI_ALGO_HIER, in, by_payloads, n, &b.slot);
        CHECK(rc == MPI_SUCCESS && !gcmpi_hier_last_gathered_kept(),
              "room %zu: rc %d, gathered by payloads %d", rooms[r], rc,
              gcmpi_hier_last_gathered_kept());
        CHECK(memcmp(by_floats, by_payloads, n * sizeof(float)) == 0,
              "room %zu: the sums differ from the floats' gather", rooms[r]);
        CHECK(same_on_all_ranks(h, by_payloads, n), "room %zu: ranks differ", rooms[r]);
        ef_free(&a);
        ef_free(&b);
    }
    gcmpi_node_shm_set_room(SIZE_MAX);
    gcmpi_hier_set_kept_mode(-1);
    h->cfg.hier_segment = 1 << 20;
    use_node_size(h, 0);
    free(in), free(by_floats), free(by_payloads);
}

/* Error feedback through hier: each leader keeps the residual of its
 * node's sum, so the running mean converges even when nodes differ in
 * size (3 ranks in nodes of 2 and 1). */
static void test_hier_error_feedback_converges_with_uneven_nodes(harness *h)
{
    static const char *const codecs[] = {"topk", "int8", "sign"};
    const int p = h->ctx.size;
    const size_t n = 2000;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *x = malloc(n * sizeof(float)), *sum = calloc(n, sizeof(float));
    double *acc = malloc(n * sizeof(double));
    float *mean = malloc(n * sizeof(float));
    for (int r = 0; r < p; r++) {
        fill_laplace(x, n, r);
        for (size_t i = 0; i < n; i++) sum[i] += x[i];
    }
    fill_laplace(in, n, h->ctx.rank);
    use_node_size(h, p > 2 ? 2 : 1);
    for (int piped = 0; piped < 2; piped++)
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        h->cfg.hier_segment = piped ? 1200 : 0; /* 4 ranks: 4 segments of 250 floats */
        use_codec(h, codecs[c]);
        h->cfg.params.ratio = 0.25;
        ef_buf ef;
        ef_alloc(&ef, h, GCMPI_ALGO_HIER, n);
        memset(acc, 0, n * sizeof(double));
        double e8 = 0, e64 = 0;
        const int calls = strcmp(codecs[c], "sign") == 0 ? 256 : 64;
        for (int t = 1; t <= calls; t++) {
            int rc = allreduce(h, GCMPI_ALGO_HIER, in, out, n, &ef.slot);
            CHECK(rc == MPI_SUCCESS, "%s: rc %d", codecs[c], rc);
            for (size_t i = 0; i < n; i++) {
                acc[i] += out[i];
                mean[i] = (float)(acc[i] / t);
            }
            if (t == 8) e8 = rel_err(sum, mean, n);
            if (t == calls) e64 = rel_err(sum, mean, n);
        }
        if (piped && p == 4)
            CHECK(gcmpi_hier_last_segments() == 4, "%s: %d segments, want 4", codecs[c],
                  gcmpi_hier_last_segments());
        if (verbose && my_rank == 0)
            printf("  hier%s %-6s mean error %.3g after 8 calls, %.3g after %d\n",
                   piped ? " pipelined" : "", codecs[c], e8, e64, calls);
        CHECK(e8 > 0 || p == 1, "%s: nothing was compressed", codecs[c]);
        CHECK(e64 <= 0.35 * e8, "%s%s: mean error %g after 8 calls, %g after %d", codecs[c],
              piped ? " pipelined" : "", e8, e64, calls);
        ef_free(&ef);
    }
    h->cfg.hier_segment = 1 << 20;
    use_node_size(h, 0);
    free(in), free(out), free(x), free(sum), free(acc), free(mean);
}

/* ---- sparse_rd --------------------------------------------------------------- */

/* sparse_rd sums what every rank's codec kept: on integer-valued inputs
 * (exact in any order) the result is the sum of the ranks' decoded
 * payloads, for sets that stay sparse, turn dense midway, or start dense;
 * counts below p, odd, large; in place or not; every rank the same bytes. */
static void test_sparse_rd_equals_the_sum_of_decoded_sets(harness *h)
{
    const int p = h->ctx.size;
    const size_t counts[] = {1, (size_t)p + 1, 1000, 65537};
    const double ratios[] = {0.02, 0.3, 0.7};
    for (size_t rt = 0; rt < 3; rt++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (int in_place = 0; in_place < 2; in_place++) {
                use_codec(h, "topk");
                h->cfg.params.ratio = ratios[rt];
                const size_t n = counts[c];
                float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
                float *x = malloc(n * sizeof(float)), *want = calloc(n, sizeof(float));
                for (int r = 0; r < p; r++) {
                    for (size_t i = 0; i < n; i++) x[i] = int_value(r, i * (size_t)(r + 1));
                    decode_own(h->cfg.codec, &h->cfg.params, x, n, want);
                }
                for (size_t i = 0; i < n; i++) in[i] = int_value(h->ctx.rank, i * (size_t)(h->ctx.rank + 1));
                if (in_place) memcpy(out, in, n * sizeof(float));
                int rc = allreduce(h, GCMPI_ALGO_SPARSE_RD, in_place ? out : in, out, n, NULL);
                CHECK(rc == MPI_SUCCESS, "ratio %g n=%zu: rc %d", ratios[rt], n, rc);
                size_t bad = 0;
                for (size_t i = 0; i < n; i++) bad += out[i] != want[i];
                CHECK(bad == 0, "ratio %g n=%zu in_place=%d: %zu sums differ", ratios[rt], n,
                      in_place, bad);
                CHECK(same_on_all_ranks(h, out, n), "ratio %g n=%zu: ranks differ", ratios[rt], n);
                free(in), free(out), free(x), free(want);
            }
}

/* Values that round differently in another order: every rank must still
 * hold the same bytes (one summation tree for all), for every sparse codec,
 * with momentum correction too. */
static void test_sparse_rd_gives_identical_bytes_on_every_rank(harness *h)
{
    static const char *const codecs[] = {"topk", "dgc", "randk", "topkq"};
    const size_t n = 50000;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    fill_laplace(in, n, h->ctx.rank);
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++)
        for (int momentum = 0; momentum < 2; momentum++)
            for (double ratio = 0.005; ratio < 1; ratio *= 8) {
                use_codec(h, codecs[c]);
                h->cfg.params.ratio = ratio;
                h->cfg.ef_momentum = momentum ? 0.9 : 0.0;
                ef_buf ef;
                ef_alloc(&ef, h, GCMPI_ALGO_SPARSE_RD, n);
                for (int call = 0; call < 2; call++) {
                    int rc = allreduce(h, GCMPI_ALGO_SPARSE_RD, in, out, n, &ef.slot);
                    CHECK(rc == MPI_SUCCESS, "%s ratio %g: rc %d", codecs[c], ratio, rc);
                    CHECK(same_on_all_ranks(h, out, n), "%s ratio %g momentum %d: ranks differ",
                          codecs[c], ratio, momentum);
                }
                ef_free(&ef);
            }
    free(in), free(out);
}

/* A sparse codec whose encode fails on rank 0 only: the error travels
 * with the sets, every rank returns it, and the next call works. */
static size_t failing_topk_encode(const float *g, float *r, size_t n, const gc_params *par,
                                  uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    if (n && g[0] < 0) return (size_t)0 - (size_t)GC_ERR_PARAM;
    return gc_codec_topk.encode(g, r, n, par, seed, dst, cap, ws);
}

static void test_sparse_rd_failed_encode_on_one_rank_fails_everywhere(harness *h)
{
    static gc_codec failing;
    failing = gc_codec_topk;
    failing.name = "failing_topk";
    failing.encode = failing_topk_encode;
    const size_t n = 1000;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) in[i] = h->ctx.rank == 0 ? -1.0f : 1.0f;
    use_codec(h, "topk");
    h->cfg.codec = &failing;
    int rc = allreduce(h, GCMPI_ALGO_SPARSE_RD, in, out, n, NULL);
    CHECK(rc == MPI_ERR_ARG, "rc %d, want MPI_ERR_ARG on every rank", rc);
    use_codec(h, "topk");
    h->cfg.params.ratio = 1.0;
    for (size_t i = 0; i < n; i++) in[i] = 1.0f;
    rc = allreduce(h, GCMPI_ALGO_SPARSE_RD, in, out, n, NULL);
    CHECK(rc == MPI_SUCCESS && out[0] == (float)h->ctx.size, "after a failure: rc %d, out[0] %g",
          rc, out[0]);
    free(in), free(out);
}

/* ---- auto ------------------------------------------------------------------ */

/* Every rank measures something else (here: figures drawn per rank, one
 * rank far slower); after the agreement every rank holds the same model
 * and picks the same algorithm for every size. */
static void test_auto_pick_is_the_same_on_every_rank_whatever_each_measured(harness *h)
{
    static const char *const codecs[] = {"topk", "int8", "sign", "none"};
    const int me = h->ctx.rank;
    use_node_size(h, h->ctx.size > 2 ? 2 : 1);
    gcmpi_nodes *nodes = NULL;
    int rc = gcmpi_nodes_create(h->ctx.comm, h->cfg.node_size, &nodes);
    CHECK(rc == MPI_SUCCESS, "nodes: rc %d", rc);
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0] && nodes; c++) {
        use_codec(h, codecs[c]);
        h->cfg.algo = GCMPI_ALGO_AUTO;
        double local[GCMPI_AUTO_FIGURES];
        uint64_t s = 77 + (uint64_t)me * 1000 + c;
        for (int i = 0; i < GCMPI_AUTO_FIGURES; i++) {
            double u = (double)(rng_next(&s) >> 11) * 0x1p-53;
            const int times = GCMPI_AUTO_FIGURES - 1; /* then the payload ratio */
            local[i] = i < times ? 1e-5 * (1 + 1000 * u) : 0.01 + 0.5 * u;
            if (me == 1) local[i] *= 20; /* one slow rank */
        }
        gcmpi_auto_model m;
        memset(&m, 0, sizeof m);
        rc = gcmpi_auto_agree(&h->ctx, nodes, local, &m);
        CHECK(rc == MPI_SUCCESS, "%s: agree rc %d", codecs[c], rc);
        int picks[16];
        for (int k = 0; k < 16; k++)
            picks[k] = (int)gcmpi_auto_pick(&h->cfg, &m, (size_t)1 << k, NULL);
        CHECK(same_on_all_ranks(h, (const float *)picks, 16), "%s: picks differ", codecs[c]);
        CHECK(same_on_all_ranks(h, (const float *)&m.env, sizeof m.env / sizeof(float)),
              "%s: models differ", codecs[c]);
        /* The agreed ratio is the lower median of the ranks' ratios. */
        const int p = h->ctx.size;
        double *ratios = malloc((size_t)p * sizeof *ratios);
        PMPI_Allgather(&local[GCMPI_AUTO_FIGURES - 1], 1, MPI_DOUBLE, ratios, 1, MPI_DOUBLE,
                       h->ctx.comm);
        int below = 0, at_or_below = 0;
        for (int r = 0; r < p; r++) {
            below += ratios[r] < m.env.payload_ratio;
            at_or_below += ratios[r] <= m.env.payload_ratio;
        }
        CHECK(below <= (p - 1) / 2 && at_or_below >= (p - 1) / 2 + 1,
              "%s: agreed ratio %g is not the lower median", codecs[c], m.env.payload_ratio);
        free(ratios);
    }
    gcmpi_nodes_free(nodes);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_node_size(h, 0);
}

/* auto for real: measure once, pick per size, and every rank ends with
 * the same bytes whatever it picked; codec none stays exact. */
static void test_auto_measures_once_and_results_agree(harness *h)
{
    const int p = h->ctx.size;
    use_node_size(h, p > 2 ? 2 : 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    static const char *const codecs[] = {"none", "topk", "int8"};
    const size_t counts[] = {1000, 65537, 1 << 20};
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        use_codec(h, codecs[c]);
        gcmpi_coll_cache_free(&h->cache); /* measure this codec */
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
            const size_t n = counts[k];
            float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
            for (size_t i = 0; i < n; i++) in[i] = int_value(h->ctx.rank, i);
            ef_buf ef;
            int rc = MPI_SUCCESS;
            gcmpi_algo algo = gcmpi_coll_pick(&h->ctx, n, &rc);
            CHECK(rc == MPI_SUCCESS && h->cache.model, "%s: no model (rc %d)", codecs[c], rc);
            int a = (int)algo;
            CHECK(same_on_all_ranks(h, (const float *)&a, 1), "%s n=%zu: picks differ", codecs[c], n);
            ef_alloc(&ef, h, algo, n);
            rc = allreduce(h, GCMPI_ALGO_AUTO, in, out, n, &ef.slot);
            CHECK(rc == MPI_SUCCESS, "%s n=%zu: rc %d", codecs[c], n, rc);
            CHECK(same_on_all_ranks(h, out, n), "%s n=%zu (%s): ranks differ", codecs[c], n,
                  gcmpi_algo_name(algo));
            if (strcmp(codecs[c], "none") == 0) {
                size_t bad = 0;
                for (size_t i = 0; i < n; i++) {
                    float want = 0;
                    for (int r = 0; r < p; r++) want += int_value(r, i);
                    bad += out[i] != want;
                }
                CHECK(bad == 0, "none n=%zu (%s): %zu wrong sums", n, gcmpi_algo_name(algo), bad);
            }
            if (verbose && my_rank == 0)
                printf("  auto %-5s n=%-8zu %s\n", codecs[c], n, gcmpi_algo_name(algo));
            ef_free(&ef);
            free(in), free(out);
        }
        CHECK(h->cache.model && h->cache.model->n_choices == 3, "%s: choices %d", codecs[c],
              h->cache.model ? h->cache.model->n_choices : -1);
        /* Only node leaders time the links between nodes: their figures,
         * not the others' zeros, make the agreed line. */
        const gcmpi_cost_env *e = h->cache.model ? &h->cache.model->env : NULL;
        if (e && e->n_nodes > 1)
            CHECK((e->between.allgather.a > 0 || e->between.allgather.b > 0) &&
                      (e->between.allreduce.a > 0 || e->between.allreduce.b > 0),
                  "%s: the link between nodes was agreed as free (a %g, b %g)", codecs[c],
                  e->between.allgather.a, e->between.allgather.b);
        /* hier's columns were timed all at once where it runs them (nodes
         * of 2, several nodes), and only there. */
        if (e) {
            const int columns = e->n_nodes > 1 && e->hier_scatter;
            CHECK(columns ? e->column_share > 0 && isfinite(e->column_share)
                          : e->column_share == 0,
                  "%s: columns' share %g with %d nodes (scatter style %d)", codecs[c],
                  e->column_share, e->n_nodes, e->hier_scatter);
        }
    }
    gcmpi_coll_cache_free(&h->cache);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_node_size(h, 0);
}

/* GCMPI_AUTO_CACHE's file: figures come back bit for bit under their key;
 * another key or count, a changed byte, a cut file or none reads as a
 * miss. Rank 0's files. */
static void test_auto_cache_file_round_trips_and_refuses_damage(harness *h)
{
    if (h->ctx.rank != 0) return;
    char dir[] = "/tmp/gcmpi-cache-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    char path[256], text[8192];
    snprintf(path, sizeof path, "%s/auto-test.txt", dir);
    static gcmpi_auto_cached want, got; /* static: zero padding, comparable */
    for (int i = 0; i < GCMPI_AUTO_FIGURES; i++)
        want.figures[i] = i % 3 == 0 ? 0.0 : ldexp(1.0 + i / 64.0, i - 20); /* 0 and odd bits */
    want.figures[1] = 0x1.fffffffffffffp-3;
    want.n_settled = 2;
    want.settled[0] = (gcmpi_auto_settled){535818, 0.25, GCMPI_ALGO_PASS, 0x1.0624dd2f1a9fcp-10};
    want.settled[1] = (gcmpi_auto_settled){(size_t)1 << 24, 0.01, GCMPI_ALGO_SPARSE_RD, 0.0};
    const char *key = "libgcmpi=test ranks=4 hosts=0123";
    CHECK(gcmpi_auto_cache_write_file(path, key, &want, 1.5) == 0, "write failed");
    CHECK(gcmpi_auto_cache_read_file(path, key, &got) == 0, "read failed");
    CHECK(memcmp(got.figures, want.figures, sizeof got.figures) == 0,
          "figures changed on their way through the file");
    CHECK(got.n_settled == 2 && got.settled[0].count == 535818 && got.settled[0].ratio == 0.25 &&
              got.settled[0].algo == GCMPI_ALGO_PASS && got.settled[1].count == (size_t)1 << 24 &&
              got.settled[1].ratio == 0.01 && got.settled[1].algo == GCMPI_ALGO_SPARSE_RD &&
              got.settled[0].median_s == want.settled[0].median_s && got.settled[1].median_s == 0.0,
          "settled trials changed on their way through the file");
    CHECK(gcmpi_auto_cache_read_file(path, "libgcmpi=test ranks=8 hosts=0123", &got) != 0,
          "another key's file was taken");

    FILE *f = fopen(path, "r");
    const size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[len] = '\0';
    char *figure = strstr(text, "\nfigures ");
    figure = figure ? strchr(figure + 1, '\n') : NULL; /* the first figure's line */
    CHECK(figure != NULL && len > 0, "no figures in the file");
    if (!figure) return;
    const char *algo = strstr(text, " sparse_rd 0x0p+0\n");
    const char *median = strstr(text, " passthrough 0x1.");
    CHECK(algo != NULL && median != NULL, "no settled lines in the file");
    if (!algo || !median) return;
    const struct {
        const char *what;
        size_t at, keep; /* byte to change (0: none); bytes kept */
    } damage[] = {
        {"a changed figure", (size_t)(figure - text) + 5, len},
        {"a changed algorithm", (size_t)(algo - text) + 2, len},
        {"a changed median", (size_t)(median - text) + 16, len},
        {"a cut file", 0, len - 3},
        {"a file without its last line", 0, (size_t)(strrchr(text, 'c') - text)},
    };
    for (size_t d = 0; d < sizeof damage / sizeof damage[0]; d++) {
        f = fopen(path, "w");
        CHECK(f != NULL, "rewrite failed");
        if (!f) continue;
        char copy[8192];
        memcpy(copy, text, len + 1);
        if (damage[d].at) copy[damage[d].at] = copy[damage[d].at] == '1' ? '2' : '1';
        fwrite(copy, 1, damage[d].keep, f);
        fclose(f);
        CHECK(gcmpi_auto_cache_read_file(path, key, &got) != 0, "%s was taken", damage[d].what);
    }
    unlink(path);
    CHECK(gcmpi_auto_cache_read_file(path, key, &got) != 0, "a missing file was read");
    CHECK(gcmpi_auto_cache_agrees(1.0, 1.9) && gcmpi_auto_cache_agrees(1.0, 0.6) &&
              !gcmpi_auto_cache_agrees(1.0, 2.5) && !gcmpi_auto_cache_agrees(1.0, 0.3) &&
              !gcmpi_auto_cache_agrees(1.0, 0.0),
          "the check's tolerance is not a factor of %g", GCMPI_AUTO_CACHE_TOLERANCE);
    rmdir(dir);
}

/* The model of a fresh calibration, with the predicted times at a few
 * sizes (one row per size). */
static gcmpi_auto_model *fresh_model(harness *h, double *predicted)
{
    gcmpi_coll_cache_free(&h->cache);
    gcmpi_auto_model *m = NULL;
    const int rc = gcmpi_auto_model_of(&h->ctx, &m);
    CHECK(rc == MPI_SUCCESS && m, "no model (rc %d)", rc);
    const size_t counts[] = {1000, 65537, 1 << 20, 1 << 24};
    for (size_t k = 0; m && k < sizeof counts / sizeof counts[0]; k++)
        (void)gcmpi_auto_pick(&h->cfg, m, counts[k], &predicted[k]);
    return m;
}

/* Auto calls of n floats until auto settled for n (a trial is a few
 * calls a candidate); the algorithm it settled on. */
static gcmpi_algo settle_auto(harness *h, size_t n)
{
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) in[i] = int_value(h->ctx.rank, i);
    gcmpi_algo algo = GCMPI_ALGO_AUTO;
    for (int call = 0; call < 4 * GCMPI_AUTO_TRIALS * GCMPI_AUTO_TRIAL_CALLS; call++) {
        CHECK(allreduce(h, GCMPI_ALGO_AUTO, in, out, n, NULL) == MPI_SUCCESS, "auto call failed");
        const gcmpi_auto_model *m = h->cache.model;
        for (int i = 0; m && i < m->n_choices; i++)
            if (m->choices[i].count == n && m->choices[i].settled) algo = m->choices[i].algo;
        if (algo != GCMPI_ALGO_AUTO) break;
    }
    free(in), free(out);
    CHECK(algo != GCMPI_ALGO_AUTO, "auto did not settle for %zu floats", n);
    return algo;
}

/* GCMPI_AUTO_CACHE: the first calibration is measured and saved by rank 0,
 * and so is a trial's outcome; the next job reads them on every rank,
 * checks the figures, gives the same model and settles that size without
 * a trial; cached figures its check finds off by 1000x are measured again
 * (their outcomes dropped) and saved over; a damaged file is measured
 * again. */
static void test_auto_keeps_its_calibration_between_jobs(harness *h)
{
    char dir[64] = "/tmp/gcmpi-cache-job-XXXXXX";
    int made = h->ctx.rank != 0 || mkdtemp(dir) != NULL;
    PMPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, h->ctx.comm);
    CHECK(made, "mkdtemp failed");
    const int root = h->ctx.rank == 0;
    const int p = h->ctx.size;
    const size_t n = 65537;
    use_node_size(h, p > 2 ? 2 : 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "topk");
    /* One job's calibration and the next one's check run at the same point
     * of their processes; here one process plays both, and its first
     * trial (hier's window among others) slowed the leaders' allreduce
     * that the check times by 2.2x for the rest of the process. So the
     * trial runs once first, with the cache off. */
    gcmpi_coll_cache_free(&h->cache);
    (void)settle_auto(h, n);
    snprintf(h->cfg.auto_cache, sizeof h->cfg.auto_cache, "%s/cache", dir); /* made on save */
    double first[4], again[4];
    static gcmpi_auto_cached file;

    gcmpi_auto_model *m = fresh_model(h, first);
    CHECK(m && m->source == GCMPI_AUTO_MEASURED, "an empty cache gave figures");
    char path[GCMPI_AUTO_CACHE_FILE_LEN] = "", key[GCMPI_AUTO_CACHE_KEY_LEN] = "";
    if (m && root) {
        CHECK(m->cache_saved == 1 && m->cache && m->cache_file[0],
              "rank 0 did not save the calibration");
        snprintf(path, sizeof path, "%s", m->cache_file);
        snprintf(key, sizeof key, "%s", m->cache ? m->cache->key : "");
        CHECK(strncmp(path, dir, strlen(dir)) == 0, "saved to %s, outside %s", path, dir);
    }
    /* The next job: its check of the figures is a timing, which a busy
     * machine can fail; then it measures again and saves, legitimately,
     * and the job after it must take that. */
    gcmpi_algo settled = GCMPI_ALGO_AUTO;
    for (int job = 0; job < 3; job++) {
        settled = settle_auto(h, n);
        if (root)
            CHECK(gcmpi_auto_cache_read_file(path, key, &file) == 0 && file.n_settled == 1 &&
                      file.settled[0].count == n && file.settled[0].algo == settled,
                  "the trial's outcome (%s) was not saved", gcmpi_algo_name(settled));
        m = fresh_model(h, again);
        if (!m || m->source != GCMPI_AUTO_REMEASURED) break;
        if (root) printf("  the check failed: %.3f ms cached, %.3f ms now\n",
                         1e3 * m->check_cached_s, 1e3 * m->check_fresh_s);
        memcpy(first, again, sizeof first); /* the model saved now */
    }
    CHECK(m && m->source == GCMPI_AUTO_CACHED, "the saved calibration was not used");
    CHECK(m && m->check_fresh_s > 0 && m->check_cached_s > 0,
          "the cached figures were not checked");
    CHECK(memcmp(first, again, sizeof first) == 0, "the cached model predicts otherwise");
    int rc = MPI_SUCCESS;
    const gcmpi_algo picked = gcmpi_coll_pick(&h->ctx, n, &rc);
    const gcmpi_auto_choice *c = m && m->n_choices == 1 ? &m->choices[0] : NULL;
    CHECK(rc == MPI_SUCCESS && picked == settled && c && c->settled && c->from_cache &&
              c->n_trial == 0,
          "the next job tried %zu floats again (picked %s, cached %s)", n,
          gcmpi_algo_name(picked), gcmpi_algo_name(settled));
    int a = (int)picked;
    CHECK(same_on_all_ranks(h, (const float *)&a, 1), "ranks settled differently from the cache");

    /* Every figure 1000x: its check cannot hold. */
    if (root) {
        CHECK(gcmpi_auto_cache_read_file(path, key, &file) == 0, "the file does not read back");
        for (int i = 0; i < GCMPI_AUTO_FIGURES; i++) file.figures[i] *= 1000.0;
        CHECK(gcmpi_auto_cache_write_file(path, key, &file, 1.0) == 0,
              "could not rewrite the file");
    }
    m = fresh_model(h, again);
    CHECK(m && m->source == GCMPI_AUTO_REMEASURED,
          "figures 1000x off were used (source %d, check %g s cached, %g s now)",
          m ? (int)m->source : -1, m ? m->check_cached_s : 0, m ? m->check_fresh_s : 0);
    CHECK(m && m->cached.n_settled == 0, "outcomes of the stale figures were kept");
    if (root) {
        static gcmpi_auto_cached now;
        CHECK(m && m->cache_saved == 1, "the fresh calibration was not saved over");
        CHECK(gcmpi_auto_cache_read_file(path, key, &now) == 0 &&
                  memcmp(now.figures, file.figures, sizeof now.figures) != 0 && now.n_settled == 0,
              "the stale figures stayed in the file");
        FILE *out = fopen(path, "w");
        if (out) fputs("not a calibration\n", out), fclose(out);
    }
    m = fresh_model(h, again);
    CHECK(m && m->source == GCMPI_AUTO_MEASURED, "a damaged file was not measured again");
    if (root) {
        CHECK(m && m->cache_saved == 1, "the damaged file was not replaced");
        unlink(path);
        char sub[96];
        snprintf(sub, sizeof sub, "%s/cache", dir);
        rmdir(sub);
        rmdir(dir);
    }
    snprintf(h->cfg.auto_cache, sizeof h->cfg.auto_cache, "off");
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* The calls a trial ran, all candidates together. */
static int trial_calls_of(const gcmpi_auto_choice *c)
{
    int n = 0;
    for (int i = 0; i < c->n_trial; i++) n += c->trial_calls[i];
    return n;
}

/* auto's trial: per call size the model's pick, its runners-up and
 * passthrough each run the same calls in turn, then the fastest by
 * the slowest rank's median call is kept on every rank, even when the ranks
 * measured opposite things; a settled size runs its choice from then on. */
static void test_auto_trial_settles_on_the_measured_fastest(harness *h)
{
    const int me = h->ctx.rank;
    use_node_size(h, 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "topk");
    gcmpi_coll_cache_free(&h->cache);
    const size_t n = 1 << 16;
    int rc = MPI_SUCCESS;
    gcmpi_algo first = gcmpi_coll_pick(&h->ctx, n, &rc);
    CHECK(rc == MPI_SUCCESS && h->cache.model, "no model (rc %d)", rc);
    gcmpi_auto_choice *c = h->cache.model ? &h->cache.model->choices[0] : NULL;
    if (!c) return;
    CHECK(first == c->model, "the first call runs the model's pick, not %s",
          gcmpi_algo_name(first));
    CHECK((c->n_trial >= 2 && c->trial[c->n_trial - 1] == GCMPI_ALGO_PASS) ||
              c->model == GCMPI_ALGO_PASS,
          "passthrough is tried (%d candidates)", c->n_trial);
    /* Fake times: rank 0 finds candidate 0 fastest, the others find the
     * last one fastest by far; MAX over ranks must pick the last one when
     * rank 0's time for it is below the others' for candidate 0. */
    const int last = c->n_trial - 1;
    int runs = 0;
    for (;;) {
        gcmpi_algo a = gcmpi_coll_pick(&h->ctx, n, &rc);
        CHECK(rc == MPI_SUCCESS, "pick rc %d", rc);
        if (c->settled || rc != MPI_SUCCESS) break;
        int idx = 0;
        while (idx < c->n_trial && c->trial[idx] != a) idx++;
        CHECK(idx < c->n_trial, "%s is not a candidate", gcmpi_algo_name(a));
        if (idx == c->n_trial) break;
        CHECK(runs >= c->n_trial || idx == runs, "trial call %d ran candidate %d: not in turn",
              runs, idx);
        const double t = me == 0 ? (idx == 0 ? 1e-3 : 2e-3) : (idx == last ? 1e-4 : 5e-3);
        gcmpi_auto_note(&h->ctx, n, a, t);
        runs++;
    }
    CHECK(runs == (c->n_trial > 1 ? c->n_trial * c->trial_rounds : 0) &&
              runs == (c->n_trial > 1 ? trial_calls_of(c) : 0),
          "%d trial calls", runs);
    int settled = (int)c->algo;
    CHECK(same_on_all_ranks(h, (const float *)&settled, 1), "settled choices differ");
    if (h->ctx.size > 1 && c->n_trial > 1)
        CHECK(c->algo == c->trial[last], "settled on %s, want %s", gcmpi_algo_name(c->algo),
              gcmpi_algo_name(c->trial[last]));
    /* The report's trial figures: each candidate's median, the slowest rank's. */
    for (int i = 0; i < c->n_trial && c->n_trial > 1; i++) {
        const double want = h->ctx.size == 1 ? (i == 0 ? 1e-3 : 2e-3)
                            : i == last      ? (i == 0 ? 1e-3 : 2e-3)
                                             : 5e-3;
        CHECK(c->trial_median_s[i] == want, "candidate %d's agreed median %g, want %g", i,
              c->trial_median_s[i], want);
    }
    CHECK(gcmpi_coll_pick(&h->ctx, n, &rc) == c->algo, "a settled size keeps its choice");
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* After two rounds a candidate more than GCMPI_AUTO_PRUNE times slower
 * than the fastest (by the slowest rank's better call of the two: here
 * only the last rank finds passthrough slow) is left out on every rank,
 * and its calls go to the others as more rounds; one a little slower
 * stays. Times faked: candidate i takes 20 + 5i ms, passthrough `pass` ms
 * on the last rank and 20 on the others, so a first round takes over a
 * third of GCMPI_AUTO_TRIAL_BUDGET_S and the trial starts at three
 * rounds. */
static void test_auto_trial_leaves_out_a_far_slower_candidate(harness *h)
{
    const int last_rank = h->ctx.rank == h->ctx.size - 1;
    use_node_size(h, 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "topk");
    const size_t n = 1 << 16;
    static const double pass_ms[] = {100.0, 50.0}; /* 5x: left out; 2.5x: stays */
    for (int k = 0; k < 2; k++) {
        gcmpi_coll_cache_free(&h->cache);
        int rc = MPI_SUCCESS, runs = 0;
        gcmpi_coll_pick(&h->ctx, n, &rc);
        gcmpi_auto_choice *c = h->cache.model ? &h->cache.model->choices[0] : NULL;
        int pass = -1, fastest = -1;
        double ms[GCMPI_AUTO_TRIALS], live_ms = 0;
        for (int i = 0, lossy = 0; c && i < c->n_trial; i++) {
            if (c->trial[i] == GCMPI_ALGO_PASS) {
                pass = i;
                ms[i] = last_rank ? pass_ms[k] : 20.0;
                continue;
            }
            if (lossy == 0) fastest = i;
            ms[i] = 20.0 + 5 * lossy++;
            live_ms += ms[i];
        }
        CHECK(rc == MPI_SUCCESS && c && pass >= 0 && fastest >= 0,
              "no trial of passthrough and a lossy candidate (rc %d)", rc);
        if (!c || pass < 0 || fastest < 0) break;
        while (runs < GCMPI_AUTO_TRIALS * GCMPI_AUTO_TRIAL_CALLS) {
            const gcmpi_algo a = gcmpi_coll_pick(&h->ctx, n, &rc);
            if (c->settled || rc != MPI_SUCCESS) break;
            int idx = 0;
            while (idx < c->n_trial && c->trial[idx] != a) idx++;
            if (idx == c->n_trial) break;
            gcmpi_auto_note(&h->ctx, n, a, 1e-3 * ms[idx]);
            runs++;
        }
        CHECK(c->settled && rc == MPI_SUCCESS, "case %d: not settled (rc %d)", k, rc);
        CHECK(runs == trial_calls_of(c), "case %d: %d calls, %d counted", k, runs,
              trial_calls_of(c));
        const int dropped = k == 0;
        int want_rounds = 3;
        if (dropped && c->n_trial == 2) want_rounds = 2; /* one candidate left: settled */
        else if (dropped)
            want_rounds += (int)floor((want_rounds - 2) * pass_ms[k] / live_ms);
        CHECK(c->trial_dropped[pass] == dropped && c->trial_calls[pass] == (dropped ? 2 : 3),
              "case %d: passthrough %s after %d calls", k,
              c->trial_dropped[pass] ? "left out" : "kept", c->trial_calls[pass]);
        CHECK(c->trial_rounds == want_rounds, "case %d: %d rounds, want %d", k, c->trial_rounds,
              want_rounds);
        for (int i = 0; i < c->n_trial; i++)
            if (i != pass)
                CHECK(!c->trial_dropped[i] && c->trial_calls[i] == want_rounds,
                      "case %d: candidate %d ran %d calls", k, i, c->trial_calls[i]);
        CHECK(c->algo == c->trial[fastest], "case %d: settled on %s", k,
              gcmpi_algo_name(c->algo));
        int agreed[2] = {(int)c->algo, c->trial_rounds};
        CHECK(same_on_all_ranks(h, (const float *)agreed, 2), "case %d: ranks differ", k);
    }
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* Call sizes within GCMPI_AUTO_BAND of a row at the same kept fraction
 * take that row, as Horovod's fusion buffer changes size from step to
 * step: its trial's candidates in turn while it runs, its settled choice
 * after, their times scaled to the row's size by the model; every rank
 * alike. A size past the band, or at a fraction 2x away, gets a row of
 * its own. Times faked: the model's pick 1 ms, the others 2 ms, both
 * growing with the size. */
static void test_auto_nearby_sizes_share_a_row(harness *h)
{
    use_node_size(h, 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "topk");
    gcmpi_coll_cache_free(&h->cache);
    const size_t n = 1 << 16;
    const size_t sizes[] = {n, n + n / 10, n - n / 10, n + n / 5};
    int rc = MPI_SUCCESS, runs = 0, band_runs = 0;
    gcmpi_coll_pick(&h->ctx, n, &rc);
    gcmpi_auto_choice *c = h->cache.model ? &h->cache.model->choices[0] : NULL;
    CHECK(rc == MPI_SUCCESS && c, "no model (rc %d)", rc);
    if (!c) return;
    while (runs <= GCMPI_AUTO_TRIALS * GCMPI_AUTO_TRIAL_CALLS) { /* and the settling pick */
        const size_t s = sizes[runs % 4];
        const gcmpi_algo a = gcmpi_coll_pick(&h->ctx, s, &rc);
        if (c->settled || rc != MPI_SUCCESS) break;
        CHECK(gcmpi_auto_in_trial(&h->ctx, s), "size %zu is not timed as a trial call", s);
        int idx = 0;
        while (idx < c->n_trial && c->trial[idx] != a) idx++;
        if (idx == c->n_trial) break;
        gcmpi_auto_note(&h->ctx, s, a, (idx == 0 ? 1e-3 : 2e-3) * (double)s / (double)n);
        runs++;
        band_runs += s != n;
    }
    const int n_rows = h->cache.model->n_choices;
    CHECK(c->settled && rc == MPI_SUCCESS && n_rows == 1, "%d rows, settled %d (rc %d)", n_rows,
          c->settled, rc);
    CHECK(runs == trial_calls_of(c), "%d calls of the four sizes, %d counted in the trial", runs,
          trial_calls_of(c));
    CHECK(c->band_calls == (uint64_t)band_runs && c->band_min == n - n / 10 &&
              c->band_max == n + n / 5,
          "band: %llu calls of %zu-%zu, want %d of %zu-%zu", (unsigned long long)c->band_calls,
          c->band_min, c->band_max, band_runs, n - n / 10, n + n / 5);
    if (c->n_trial > 1)
        CHECK(c->algo == c->trial[0], "settled on %s, want the 1 ms %s", gcmpi_algo_name(c->algo),
              gcmpi_algo_name(c->trial[0]));
    /* A settled call of a neighbour: the row's choice, its time as the
     * model scales it to the row's size. */
    const size_t s = n + n / 5;
    CHECK(gcmpi_coll_pick(&h->ctx, s, &rc) == c->algo && !gcmpi_auto_in_trial(&h->ctx, s),
          "a neighbour does not take the settled choice");
    const double before = c->measured_s, t = 3e-3;
    gcmpi_auto_note(&h->ctx, s, c->algo, t);
    const gcmpi_cost_env env = gcmpi_auto_env_at(&h->cfg, h->cache.model, c->ratio);
    const double want = t *
                        gcmpi_cost_predict(&env, c->algo, h->cache.model->inner,
                                           (double)n * sizeof(float)) /
                        gcmpi_cost_predict(&env, c->algo, h->cache.model->inner,
                                           (double)s * sizeof(float));
    CHECK(fabs((c->measured_s - before) / want - 1.0) < 1e-9 && want < t,
          "a settled neighbour's %g s was added as %g, want %g", t, c->measured_s - before,
          want);
    /* Past the band, and at a fraction 2x away: rows of their own. */
    gcmpi_coll_pick(&h->ctx, n + n / 3, &rc);
    const int past = h->cache.model->n_choices;
    const double configured = h->cfg.params.ratio;
    h->cfg.params.ratio = configured * 4;
    gcmpi_coll_pick(&h->ctx, n + n / 10, &rc);
    h->cfg.params.ratio = configured;
    int agreed[3] = {(int)c->algo, past, h->cache.model->n_choices};
    CHECK(past == 2 && agreed[2] == 3, "rows %d past the band, %d at another fraction", past,
          agreed[2]);
    CHECK(same_on_all_ranks(h, (const float *)agreed, 3), "ranks differ");
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* Trial medians within GCMPI_AUTO_TIE of the fastest are a tie, which
 * the model settles (the first lossy candidate in the trial's order, the
 * model's); a gap past it is the trial's. Times faked per candidate, the
 * same on all ranks: passthrough slow, the lossy ones 0.50 ms but the
 * model's last one 0.49 (a tie) or 0.40 (faster). */
static void test_auto_trial_ties_go_to_the_model(harness *h)
{
    use_node_size(h, 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "topk");
    const size_t n = 1 << 16;
    for (int gap = 0; gap < 2; gap++) {
        gcmpi_coll_cache_free(&h->cache);
        int rc = MPI_SUCCESS;
        gcmpi_algo a = gcmpi_coll_pick(&h->ctx, n, &rc);
        gcmpi_auto_choice *c = h->cache.model ? &h->cache.model->choices[0] : NULL;
        CHECK(c && rc == MPI_SUCCESS, "no trial (rc %d)", rc);
        if (!c) return;
        int first = -1, last = -1;
        for (int i = 0; i < c->n_trial; i++)
            if (c->trial[i] != GCMPI_ALGO_PASS) {
                if (first < 0) first = i;
                last = i;
            }
        CHECK(first >= 0 && last > first, "%d candidates: no two lossy ones", c->n_trial);
        if (!(first >= 0 && last > first)) return;
        while (!c->settled && rc == MPI_SUCCESS) {
            int idx = 0;
            while (idx < c->n_trial && c->trial[idx] != a) idx++;
            const double t = a == GCMPI_ALGO_PASS ? 1e-3 : idx == last ? (gap ? 0.40e-3 : 0.49e-3)
                                                                        : 0.50e-3;
            gcmpi_auto_note(&h->ctx, n, a, t);
            a = gcmpi_coll_pick(&h->ctx, n, &rc);
        }
        const gcmpi_algo want = c->trial[gap ? last : first];
        CHECK(c->algo == want, "%s: settled on %s, want %s", gap ? "a gap" : "a tie",
              gcmpi_algo_name(c->algo), gcmpi_algo_name(want));
        int settled = (int)c->algo;
        CHECK(same_on_all_ranks(h, (const float *)&settled, 1), "settled choices differ");
    }
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* The margin: a lossy candidate whose best trial call is within
 * GCMPI_AUTO_MARGIN of passthrough's is not kept (passthrough is); one that
 * is clearly faster is. Times are faked per candidate, the same on all
 * ranks. */
static gcmpi_algo settle_with(harness *h, size_t n, double lossy_over_pass)
{
    gcmpi_coll_cache_free(&h->cache);
    int rc = MPI_SUCCESS;
    gcmpi_algo a = gcmpi_coll_pick(&h->ctx, n, &rc);
    gcmpi_auto_choice *c = h->cache.model ? &h->cache.model->choices[0] : NULL;
    if (!c || rc != MPI_SUCCESS) return GCMPI_ALGO_COUNT;
    while (!c->settled && rc == MPI_SUCCESS) {
        gcmpi_auto_note(&h->ctx, n, a, a == GCMPI_ALGO_PASS ? 1e-3 : 1e-3 * lossy_over_pass);
        a = gcmpi_coll_pick(&h->ctx, n, &rc);
    }
    return c->n_trial > 1 ? c->algo : GCMPI_ALGO_COUNT;
}

/* Runs count's trial to its end as the shim does under GCMPI_WARMUP: the
 * pick sees the configured ratio, the call (and its note) the warm-up's;
 * made-up times (passthrough slower). Returns the calls it took. */
static int run_trial(harness *h, size_t n, double configured, double call_ratio)
{
    int rc = MPI_SUCCESS, calls = 0;
    for (; calls < 64; calls++) {
        h->cfg.params.ratio = configured;
        const gcmpi_algo a = gcmpi_coll_pick(&h->ctx, n, &rc);
        if (rc != MPI_SUCCESS || !gcmpi_auto_in_trial(&h->ctx, n)) break;
        h->cfg.params.ratio = call_ratio;
        gcmpi_auto_note(&h->ctx, n, a, a == GCMPI_ALGO_PASS ? 2e-3 : 1e-3);
    }
    h->cfg.params.ratio = call_ratio;
    return calls;
}

/* A sparse codec whose kept fraction moved 2x since its size's trial
 * (GCMPI_WARMUP decays it from 0.25) is tried again: on every rank at the
 * same call, with the model at the new fraction; not for a move under 2x,
 * a quantiser, or under the adaptive layer. */
static void test_auto_tries_again_when_a_warm_up_ratio_moved(harness *h)
{
    use_node_size(h, 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    const size_t n = 1 << 14;
    static const struct {
        const char *codec;
        gc_adapt_method adapt; /* GCMPI_ADAPT */
        double later;          /* the ratio of the calls after the trial */
        int again;
    } cases[] = {
        {"topk", GC_ADAPT_NONE, 0.25 / 2.5, 1},
        {"topk", GC_ADAPT_NONE, 0.25 / 1.5, 0},
        {"int8", GC_ADAPT_NONE, 0.25 / 2.5, 0},
        {"topk", GC_ADAPT_EDGC, 0.25 / 2.5, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        use_codec(h, cases[k].codec);
        h->cfg.adapt.method = cases[k].adapt;
        gcmpi_coll_cache_free(&h->cache);
        const double configured = h->cfg.params.ratio;
        const int calls = run_trial(h, n, configured, 0.25); /* the warm-up's first calls */
        gcmpi_auto_choice *c = h->cache.model ? &h->cache.model->choices[0] : NULL;
        CHECK(c && c->settled && calls > 1, "%s: no trial (%d calls)", cases[k].codec, calls);
        if (!c) continue;
        h->cfg.params.ratio = cases[k].later;
        const gcmpi_algo settled = c->algo;
        gcmpi_auto_note(&h->ctx, n, settled, 1e-3); /* a settled call at the new ratio */
        const int again = gcmpi_auto_in_trial(&h->ctx, n) || !c->settled;
        int both[2] = {again, c->retrials};
        CHECK(same_on_all_ranks(h, (const float *)both, 2), "%s: ranks disagree",
              cases[k].codec);
        CHECK(again == cases[k].again, "%s (adapt %d) ratio 0.25 -> %g: tried again %d, want %d",
              cases[k].codec, (int)cases[k].adapt, cases[k].later, again, cases[k].again);
        if (cases[k].again) {
            CHECK(c->retrials == 1 && c->ratio == cases[k].later, "retrials %d ratio %g",
                  c->retrials, c->ratio);
            /* The new trial predicts at the new fraction: a sparse payload
             * 2.5x smaller than at 0.25. */
            int rc = MPI_SUCCESS;
            h->cfg.params.ratio = configured;
            (void)gcmpi_coll_pick(&h->ctx, n, &rc);
            const gcmpi_cost_env at = gcmpi_auto_env_at(&h->cfg, h->cache.model, cases[k].later);
            CHECK(fabs(at.payload_ratio / h->cache.model->env.payload_ratio -
                       cases[k].later / configured) < 1e-12 &&
                      at.density == cases[k].later,
                  "the model at ratio %g: payload %g, density %g", cases[k].later,
                  at.payload_ratio, at.density);
            double want;
            gcmpi_algo cand[GCMPI_ALGO_COUNT];
            const int nc = gcmpi_auto_candidates(&h->cfg, &at, cand);
            (void)gcmpi_cost_pick(&at, cand, nc, h->cache.model->inner, (double)n * sizeof(float),
                                  &want);
            CHECK(c->n_trial > 0 && c->predicted_s == want,
                  "the new trial's prediction %g is not the model's at ratio %g (%g)",
                  c->predicted_s, cases[k].later, want);
            CHECK(run_trial(h, n, configured, cases[k].later) > 1 && c->settled,
                  "the second trial did not run");
        }
        h->cfg.params.ratio = configured;
        h->cfg.adapt.method = GC_ADAPT_NONE;
    }
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* A settled size whose calls fall behind its trial is tried again: at the
 * GCMPI_AUTO_DRIFT_CALLS-th settled pick the slowest rank's median call is
 * above (1 + GCMPI_AUTO_DRIFT) times the trial's median and slower than
 * another candidate's. Calls that keep their trial's pace, or fall behind
 * but stay ahead of every other candidate, keep their algorithm. One slow
 * rank is enough, and every rank decides alike; the new trial is measured,
 * not settled from the outcome that fell behind. */
static void test_auto_tries_again_when_settled_calls_fall_behind(harness *h)
{
    use_node_size(h, 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "int8");
    const size_t n = 1 << 14;
    static const struct {
        double settled_ms; /* the settled calls (the trial's median: 1 ms) */
        double others_ms;  /* every other candidate's trial median */
        int last_rank_only; /* only the last rank's calls are that slow */
        int again;
        double last_ms;    /* the last candidate's median, when not others_ms */
    } cases[] = {
        {1.0, 1.2, 0, 0, 0},
        {1.8, 3.0, 0, 0, 0},
        {1.8, 1.2, 0, 1, 0},
        {1.8, 1.2, 1, 1, 0},
        {1.4, 1.2, 0, 0, 0},
        /* 16 calls 0.8 ms slower do not pay for a trial whose last
         * candidate's calls cost 4 ms more each */
        {1.8, 1.2, 0, 0, 5.0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gcmpi_coll_cache_free(&h->cache);
        const double ratio = h->cfg.params.ratio;
        const int calls = run_trial(h, n, ratio, ratio);
        gcmpi_auto_choice *c = h->cache.model ? &h->cache.model->choices[0] : NULL;
        CHECK(c && c->settled && calls > 1, "case %zu: no trial (%d calls)", k, calls);
        if (!c || !c->settled) continue;
        for (int i = 0; i < c->n_trial; i++)
            c->trial_median_s[i] = c->trial[i] == c->algo ? 1e-3 : cases[k].others_ms * 1e-3;
        if (cases[k].last_ms > 0 && c->trial[c->n_trial - 1] != c->algo)
            c->trial_median_s[c->n_trial - 1] = cases[k].last_ms * 1e-3;
        const gcmpi_algo settled = c->algo;
        const int slow = !cases[k].last_rank_only || my_rank == h->ctx.size - 1;
        int rc = MPI_SUCCESS, picks = 0, again = 0;
        for (; picks < GCMPI_AUTO_DRIFT_CALLS && rc == MPI_SUCCESS && !again; picks++) {
            const gcmpi_algo a = gcmpi_coll_pick(&h->ctx, n, &rc);
            again = gcmpi_auto_in_trial(&h->ctx, n);
            if (!again) gcmpi_auto_note(&h->ctx, n, a, (slow ? cases[k].settled_ms : 1.0) * 1e-3);
        }
        int both[3] = {again, c->retrials, picks};
        CHECK(rc == MPI_SUCCESS, "case %zu: pick failed (%d)", k, rc);
        CHECK(same_on_all_ranks(h, (const float *)both, 3), "case %zu: ranks disagree", k);
        CHECK(again == cases[k].again,
              "case %zu: settled calls %g ms against the trial's 1 (others %g, %s): tried "
              "again %d, want %d",
              k, cases[k].settled_ms, cases[k].others_ms,
              cases[k].last_rank_only ? "the last rank" : "every rank", again, cases[k].again);
        if (again) {
            CHECK(picks == GCMPI_AUTO_DRIFT_CALLS && c->retrials == 1 && c->drifted &&
                      c->drift_retrials == 1,
                  "case %zu: at pick %d, retrials %d, drifted %d (%d)", k, picks, c->retrials,
                  c->drifted, c->drift_retrials);
            CHECK(run_trial(h, n, ratio, ratio) > 1 && c->settled && !c->from_cache,
                  "case %zu: the new trial was not measured", k);
        } else {
            CHECK(c->settled && c->algo == settled && c->retrials == 0,
                  "case %zu: the settled algorithm changed", k);
        }
    }
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

static void test_auto_keeps_a_lossy_pick_only_when_clearly_faster(harness *h)
{
    use_node_size(h, 1);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "topk");
    const size_t n = 1 << 16;
    const gcmpi_algo close = settle_with(h, n, 1.0 - GCMPI_AUTO_MARGIN / 2);
    const gcmpi_algo clear = settle_with(h, n, 1.0 - 2 * GCMPI_AUTO_MARGIN);
    if (close != GCMPI_ALGO_COUNT) { /* a model that tries only passthrough tests nothing */
        CHECK(close == GCMPI_ALGO_PASS, "%.1f%% faster than passthrough kept %s",
              100 * GCMPI_AUTO_MARGIN / 2, gcmpi_algo_name(close));
        CHECK(clear != GCMPI_ALGO_PASS && clear != GCMPI_ALGO_COUNT,
              "%.0f%% faster than passthrough was not kept", 200 * GCMPI_AUTO_MARGIN);
    }
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* A codec whose encode fails on rank 0 only: every rank must return the
 * same error (nobody waits in an exchange the others left), and the next
 * call on the same communicator works. */
static size_t failing_encode(const float *g, float *r, size_t n, const gc_params *par,
                             uint64_t seed, uint8_t *dst, size_t cap, gc_workspace *ws)
{
    if (n && g[0] < 0) return (size_t)0 - (size_t)GC_ERR_PARAM;
    return gc_codec_none.encode(g, r, n, par, seed, dst, cap, ws);
}

static void test_a_failed_encode_on_one_rank_fails_the_call_everywhere(harness *h)
{
    static gc_codec failing;
    failing = gc_codec_none;
    failing.name = "failing";
    failing.encode = failing_encode;
    const size_t n = 1000;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) in[i] = h->ctx.rank == 0 ? -1.0f : 1.0f;
    for (size_t a = 0; a < 2; a++) {
        use_codec(h, "none");
        h->cfg.codec = &failing;
        int rc = allreduce(h, all_algos[a], in, out, n, NULL);
        CHECK(rc == MPI_ERR_ARG, "%s: rc %d, want MPI_ERR_ARG on every rank",
              algo_name(all_algos[a]), rc);
        use_codec(h, "none");
        for (size_t i = 0; i < n; i++) in[i] = 1.0f;
        rc = allreduce(h, all_algos[a], in, out, n, NULL);
        CHECK(rc == MPI_SUCCESS && out[0] == (float)h->ctx.size && out[n - 1] == (float)h->ctx.size,
              "%s: the call after a failure gives rc %d, out[0] %g", algo_name(all_algos[a]), rc,
              out[0]);
        for (size_t i = 0; i < n; i++) in[i] = h->ctx.rank == 0 ? -1.0f : 1.0f;
    }
    /* hier's pipeline (nodes of 2, segments of 100): node 0's sums are
     * negative, so its failing encodes reach every column through the
     * messages' headers, and each column's failure its node. */
    /* The same with the node gathering the payloads its columns kept
     * (forced): the failed columns' ranks kept none, so their nodes gather
     * floats. */
    for (int kept = 0; kept < 2 && h->ctx.size == 4; kept++) {
        use_node_size(h, 2);
        gcmpi_hier_set_kept_mode(kept ? 1 : -1);
        for (size_t i = 0; i < n; i++) in[i] = h->ctx.rank == 0 ? -3.0f : 1.0f;
        h->cfg.hier_segment = 400;
        use_codec(h, "none");
        h->cfg.codec = &failing;
        int rc = allreduce(h, GCMPI_ALGO_HIER, in, out, n, NULL);
        CHECK(rc == MPI_ERR_ARG && gcmpi_hier_last_segments() == 5 &&
                  !gcmpi_hier_last_gathered_kept(),
              "hier pipelined%s: rc %d after %d segments, gathered by payloads %d, want "
              "MPI_ERR_ARG after 5, by floats", kept ? " (kept)" : "", rc,
              gcmpi_hier_last_segments(), gcmpi_hier_last_gathered_kept());
        use_codec(h, "none");
        /* With a checksum codec none goes by the allgather between the
         * nodes, pipelined. */
        h->cfg.params.flags = GC_PF_CRC;
        for (size_t i = 0; i < n; i++) in[i] = 1.0f;
        rc = allreduce(h, GCMPI_ALGO_HIER, in, out, n, NULL);
        h->cfg.params.flags = 0;
        CHECK(rc == MPI_SUCCESS && out[0] == 4.0f && out[n - 1] == 4.0f &&
                  gcmpi_hier_last_gathered_kept() == kept,
              "hier pipelined%s: the call after a failure gives rc %d, out[0] %g, gathered "
              "by payloads %d", kept ? " (kept)" : "", rc, out[0],
              gcmpi_hier_last_gathered_kept());
        h->cfg.hier_segment = 1 << 20;
        gcmpi_hier_set_kept_mode(-1);
        use_node_size(h, 0);
    }
    free(in), free(out);
}

/* Bytes handed to MPI, as measured: exactly the floats for native none,
 * payload + header + size for allgather none, less than half the floats for
 * int8 through rsag. */
static void test_bytes_sent_are_what_went_to_mpi(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 65536;
    float *in = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    fill_laplace(in, n, h->ctx.rank);
    use_codec(h, "none");
    allreduce(h, GCMPI_ALGO_NATIVE, in, out, n, NULL);
    CHECK(h->stats.bytes_offered == n * 4 && h->stats.bytes_sent == n * 4, "native none sent %llu",
          (unsigned long long)h->stats.bytes_sent);
    allreduce(h, GCMPI_ALGO_ALLGATHER, in, out, n, NULL);
    CHECK(h->stats.bytes_sent == n * 4 + GC_HEADER_SIZE + sizeof(int64_t),
          "allgather none sent %llu", (unsigned long long)h->stats.bytes_sent);
    use_codec(h, "int8");
    allreduce(h, GCMPI_ALGO_RSAG, in, out, n, NULL);
    CHECK(h->stats.bytes_sent < n * 4 / 2 && h->stats.bytes_sent > n, "rsag int8 sent %llu of %zu",
          (unsigned long long)h->stats.bytes_sent, n * 4);
    CHECK(h->stats.encode_s >= 0 && h->stats.decode_s >= 0 && h->stats.comm_s > 0, "times");
    (void)p;
    free(in), free(out);
}

/* The compressed MPI_Allgather, each way its payloads can travel (flat,
 * node by node, or the floats passed through): codec none puts every
 * rank's block in place exactly (in place too); a lossy codec leaves
 * identical bytes, and passthrough the exact blocks. */
static void test_allgather_op_places_every_block(harness *h)
{
    const int p = h->ctx.size;
    const size_t counts[] = {1, 1000, 4099};
    static const gcmpi_algo ways[] = {GCMPI_ALGO_ALLGATHER, GCMPI_ALGO_HIER, GCMPI_ALGO_PASS};
    use_node_size(h, 2);
    for (size_t w = 0; w < 3; w++)
    for (size_t c = 0; c < 3; c++)
        for (int in_place = 0; in_place < 2; in_place++) {
            const gcmpi_algo way = ways[w];
            const size_t n = counts[c];
            float *block = malloc(n * sizeof(float));
            float *out = malloc((size_t)p * n * sizeof(float));
            use_codec(h, "none");
            for (size_t i = 0; i < n; i++) block[i] = int_value(h->ctx.rank, i);
            const float *src = block;
            if (in_place) {
                memcpy(out + (size_t)h->ctx.rank * n, block, n * sizeof(float));
                src = out + (size_t)h->ctx.rank * n;
            }
            int rc = gcmpi_allgather_compressed(&h->ctx, way, src, out, n, NULL);
            CHECK(rc == MPI_SUCCESS, "none %s n=%zu: rc %d", gcmpi_algo_name(way), n, rc);
            size_t bad = 0;
            for (int r = 0; r < p; r++)
                for (size_t i = 0; i < n; i++) bad += out[(size_t)r * n + i] != int_value(r, i);
            CHECK(bad == 0, "none %s n=%zu in_place=%d: %zu elements misplaced",
                  gcmpi_algo_name(way), n, in_place, bad);

            use_codec(h, "int8");
            fill_laplace(block, n, h->ctx.rank);
            float *res = calloc(n, sizeof(float));
            gcmpi_ef_slot ef = {.residual = res, .fresh = 1};
            rc = gcmpi_allgather_compressed(&h->ctx, way, block, out, n, &ef);
            CHECK(rc == MPI_SUCCESS, "int8 n=%zu: rc %d", n, rc);
            CHECK(same_on_all_ranks(h, out, (size_t)p * n), "int8 n=%zu: ranks differ", n);
            const double err = rel_err(block, out + (size_t)h->ctx.rank * n, n);
            CHECK(way == GCMPI_ALGO_PASS ? err == 0.0 : err < 0.02, "int8 %s own block: %g",
                  gcmpi_algo_name(way), err);
            if (way == GCMPI_ALGO_PASS)
                CHECK(res[0] == 0.0f && res[n - 1] == 0.0f, "passthrough wrote the residual");
            free(res), free(block), free(out);
        }
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* The compressed MPI_Allgather node by node leaves the same
 * bytes as the flat one, from the same fresh residuals, whatever the
 * nodes: consecutive blocks, an uneven last node, and nodes that are not
 * consecutive ranks (round robin); a leader then hands MPI more than its
 * own payload, which shows the node path ran. */
static void test_allgather_op_by_node_equals_flat(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 2051;
    static const char *const codecs[] = {"none", "int8", "topk"};
    float *block = malloc(n * sizeof(float));
    float *flat = malloc((size_t)p * n * sizeof(float)), *out = malloc((size_t)p * n * sizeof(float));
    float *res = malloc(n * sizeof(float));
    for (int split = 0; split < 3 && p > 2; split++) {
        /* 0: nodes of 2, 1: nodes of p-1 and 1, 2: even and odd ranks */
        gcmpi_coll_cache_free(&h->cache);
        gcmpi_nodes *nodes = NULL;
        const int color = split == 0 ? h->ctx.rank / 2
                          : split == 1 ? h->ctx.rank / (p - 1)
                                       : h->ctx.rank % 2;
        int rc = gcmpi_nodes_create_by_color(h->ctx.comm, color, &nodes);
        CHECK(rc == MPI_SUCCESS && nodes, "split %d: nodes rc %d", split, rc);
        if (!nodes) break;
        h->cache.nodes = nodes;
        for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
            use_codec(h, codecs[c]);
            fill_laplace(block, n, h->ctx.rank + 10 * (int)c);
            const uint64_t seed = h->ctx.call_seed;
            gcmpi_ef_slot ef = {.residual = res, .fresh = 1};

            memset(res, 0, n * sizeof(float));
            rc = gcmpi_allgather_compressed(&h->ctx, GCMPI_ALGO_ALLGATHER, block, flat, n, &ef);
            CHECK(rc == MPI_SUCCESS, "%s flat: rc %d", codecs[c], rc);
            const uint64_t flat_sent = h->stats.bytes_sent;

            h->ctx.call_seed = seed;
            memset(res, 0, n * sizeof(float));
            ef.fresh = 1;
            rc = gcmpi_allgather_compressed(&h->ctx, GCMPI_ALGO_HIER, block, out, n, &ef);
            CHECK(rc == MPI_SUCCESS, "%s split %d: rc %d", codecs[c], split, rc);
            CHECK(memcmp(flat, out, (size_t)p * n * sizeof(float)) == 0,
                  "%s split %d: node by node differs from flat", codecs[c], split);
            if (nodes->node_rank == 0 && nodes->node_size > 1)
                CHECK(h->stats.bytes_sent > flat_sent,
                      "%s split %d: leader sent %llu, flat %llu: node path not taken", codecs[c],
                      split, (unsigned long long)h->stats.bytes_sent,
                      (unsigned long long)flat_sent);
            if (strcmp(codecs[c], "none") == 0)
                CHECK(memcmp(out + (size_t)h->ctx.rank * n, block, n * sizeof(float)) == 0,
                      "none split %d: own block changed", split);
        }
    }
    gcmpi_coll_cache_free(&h->cache);
    h->cfg.algo = GCMPI_ALGO_AUTO;
    free(block), free(flat), free(out), free(res);
}

enum { WAY_NODE, WAY_FLAT, WAY_PASS };

/* Runs count n's MPI_Allgather trial under auto to its end with faked
 * times, seconds[WAY_*] for each call of that way, checking the ways take
 * turns. Returns the row (NULL: none) and the trial's calls in *runs. */
static gcmpi_auto_choice *fake_gather_trial(harness *h, size_t n, const double seconds[3],
                                            int *runs)
{
    int rc = MPI_SUCCESS;
    gcmpi_auto_choice *c = NULL;
    *runs = 0;
    while (*runs <= 4 * GCMPI_AUTO_TRIALS * GCMPI_AUTO_TRIAL_CALLS) {
        const gcmpi_algo way = gcmpi_gather_pick(&h->ctx, n, &rc);
        CHECK(rc == MPI_SUCCESS, "pick rc %d", rc);
        if (!c && h->cache.gather)
            c = gcmpi_auto_row(h->cache.gather->rows, &h->cache.gather->n, n, 0);
        if (!c || c->settled || rc != MPI_SUCCESS) break;
        CHECK(gcmpi_gather_in_trial(&h->ctx, n), "in its trial, not said to be");
        CHECK(way == c->trial[*runs % c->n_trial], "call %d ran %s: not in turn", *runs,
              gcmpi_algo_name(way));
        const int kind = way == GCMPI_ALGO_HIER ? WAY_NODE
                         : way == GCMPI_ALGO_PASS ? WAY_PASS : WAY_FLAT;
        gcmpi_gather_note(&h->ctx, n, way, seconds[kind]);
        (*runs)++;
    }
    return c;
}

/* auto's MPI_Allgather trial: node by node (where nodes hold several
 * ranks), flat and passthrough each run the same calls in turn, and every rank keeps the fastest by the slowest rank's median
 * call, a lossy way only when it beats passthrough by the margin. Times
 * faked per way, the last rank's apart. */
static void test_gather_auto_trial_keeps_the_fastest(harness *h)
{
    const int p = h->ctx.size, last_rank = h->ctx.rank == p - 1;
    static const struct {
        double all[3], last[3];
        gcmpi_algo want_nodes, want_flat; /* nodes of 2; a node per rank */
    } cases[] = {
        /* node by node fastest; flat beats passthrough by a third */
        {{1e-3, 2e-3, 3e-3}, {1e-3, 2e-3, 3e-3}, GCMPI_ALGO_HIER, GCMPI_ALGO_ALLGATHER},
        /* flat fastest but on the last rank, whose call everyone waits for */
        {{2e-3, 1e-3, 3e-3}, {2e-3, 4e-3, 3e-3}, GCMPI_ALGO_HIER, GCMPI_ALGO_PASS},
        /* compressing gains 3 %: inside the margin */
        {{2.9e-3, 2.9e-3, 3e-3}, {2.9e-3, 2.9e-3, 3e-3}, GCMPI_ALGO_PASS, GCMPI_ALGO_PASS},
    };
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "int8");
    for (int q = 1; q <= 2 && p > 2; q++) {
        use_node_size(h, q);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const size_t n = 100 + k;
            int runs;
            gcmpi_auto_choice *c =
                fake_gather_trial(h, n, last_rank ? cases[k].last : cases[k].all, &runs);
            CHECK(c, "q=%d case %zu: no row", q, k);
            if (!c) continue;
            const int want_n = q == 2 ? 3 : 2;
            CHECK(c->n_trial == want_n && c->trial[c->n_trial - 1] == GCMPI_ALGO_PASS &&
                      (q == 1 || c->trial[0] == GCMPI_ALGO_HIER),
                  "q=%d: %d candidates", q, c->n_trial);
            CHECK(runs == want_n * c->trial_rounds, "q=%d case %zu: %d trial calls", q, k, runs);
            const gcmpi_algo want = q == 2 ? cases[k].want_nodes : cases[k].want_flat;
            CHECK(c->algo == want, "q=%d case %zu: settled on %s, want %s", q, k,
                  gcmpi_algo_name(c->algo), gcmpi_algo_name(want));
            int settled = (int)c->algo;
            CHECK(same_on_all_ranks(h, (const float *)&settled, 1), "settled choices differ");
            for (int i = 0; i < c->n_trial; i++) {
                const int kind = c->trial[i] == GCMPI_ALGO_HIER ? WAY_NODE
                                 : c->trial[i] == GCMPI_ALGO_PASS ? WAY_PASS : WAY_FLAT;
                const double worst = fmax(cases[k].all[kind], cases[k].last[kind]);
                CHECK(c->trial_median_s[i] == worst, "candidate %d's agreed median %g, want %g",
                      i, c->trial_median_s[i], worst);
            }
            int rc = MPI_SUCCESS;
            CHECK(!gcmpi_gather_in_trial(&h->ctx, n) && gcmpi_gather_pick(&h->ctx, n, &rc) == want,
                  "a settled size keeps its choice");
        }
    }
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* Gather calls of n floats under auto with faked times (seconds[WAY_*] a
 * call of that way) until the row settles: the row, and the calls in
 * *runs. Unlike fake_gather_trial, takes the ways in whatever order the
 * pick gives (a cached way's check comes first). */
static gcmpi_auto_choice *gather_until_settled(harness *h, size_t n, const double seconds[3],
                                               int *runs)
{
    gcmpi_auto_choice *c = NULL;
    for (*runs = 0; *runs <= 4 * GCMPI_AUTO_TRIALS * GCMPI_AUTO_TRIAL_CALLS; (*runs)++) {
        int rc = MPI_SUCCESS;
        const gcmpi_algo way = gcmpi_gather_pick(&h->ctx, n, &rc);
        CHECK(rc == MPI_SUCCESS, "pick rc %d", rc);
        if (!c && h->cache.gather)
            c = gcmpi_auto_row(h->cache.gather->rows, &h->cache.gather->n, n, 0);
        if (!c || c->settled || rc != MPI_SUCCESS) break;
        const int kind = way == GCMPI_ALGO_HIER ? WAY_NODE
                         : way == GCMPI_ALGO_PASS ? WAY_PASS : WAY_FLAT;
        gcmpi_gather_note(&h->ctx, n, way, seconds[kind]);
    }
    return c;
}

/* GCMPI_AUTO_CACHE for MPI_Allgather: a job's settled row is saved by
 * rank 0 with its median call; the next job runs that way's first call
 * and settles on it when the call is within the tolerance of the median
 * (one call, no trial); a job whose two check calls miss (the link got
 * 10x slower) tries the ways again and saves the new outcome over the
 * old. Times faked, nodes of one rank (flat and passthrough). */
static void test_gather_auto_cache_checks_the_cached_way(harness *h)
{
    char dir[64] = "/tmp/gcmpi-gather-cache-XXXXXX";
    const int root = h->ctx.rank == 0;
    int made = !root || mkdtemp(dir) != NULL;
    PMPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, h->ctx.comm);
    CHECK(made, "mkdtemp failed");
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "int8");
    use_node_size(h, 1);
    snprintf(h->cfg.auto_cache, sizeof h->cfg.auto_cache, "%s", dir);
    const size_t n = 4099;
    const double fast_flat[3] = {0, 1e-3, 3e-3}, slow_flat[3] = {0, 1e-2, 1e-3};
    static gcmpi_auto_cached file;
    char path[GCMPI_AUTO_CACHE_FILE_LEN] = "";
    int runs;

    gcmpi_coll_cache_free(&h->cache);
    gcmpi_auto_choice *c = gather_until_settled(h, n, fast_flat, &runs);
    CHECK(c && c->settled && !c->from_cache && c->algo == GCMPI_ALGO_ALLGATHER,
          "the first job did not settle on flat");
    const gcmpi_gather_choices *g = h->cache.gather;
    if (root && g) {
        CHECK(g->cache_saved == 1 && g->cache_file[0], "rank 0 did not save the outcome");
        snprintf(path, sizeof path, "%s", g->cache_file);
        CHECK(g->cache && gcmpi_auto_cache_read_file(path, g->cache->key, &file) == 0 &&
                  file.n_settled == 1 && file.settled[0].count == n &&
                  file.settled[0].algo == GCMPI_ALGO_ALLGATHER &&
                  file.settled[0].median_s == fast_flat[WAY_FLAT],
              "the file does not hold the outcome and its median");
        CHECK(g->cache && strstr(g->cache->key, "collective=allgather") != NULL,
              "the key does not name the collective: %s", g->cache ? g->cache->key : "");
    }

    /* The next job: its first call (flat, 1.5x the median) holds. */
    const double a_bit_slower[3] = {0, 1.5e-3, 3e-3};
    gcmpi_coll_cache_free(&h->cache);
    c = gather_until_settled(h, n, a_bit_slower, &runs);
    CHECK(c && c->settled && c->from_cache && c->algo == GCMPI_ALGO_ALLGATHER && runs == 1,
          "the cached way was not taken after one check call (%d calls)", runs);
    CHECK(c && c->checked_s == a_bit_slower[WAY_FLAT] && c->cached_s == fast_flat[WAY_FLAT],
          "the check compared %g with %g", c ? c->checked_s : 0, c ? c->cached_s : 0);

    /* The link 10x slower: two check calls miss, the trial runs again and
     * passthrough, now the fastest, is saved over flat. */
    gcmpi_coll_cache_free(&h->cache);
    c = gather_until_settled(h, n, slow_flat, &runs);
    CHECK(c && c->settled && !c->from_cache && c->algo == GCMPI_ALGO_PASS && c->checks == 2,
          "a missed check did not try again (settled on %s)",
          c ? gcmpi_algo_name(c->algo) : "nothing");
    int algo = c ? (int)c->algo : -1;
    CHECK(same_on_all_ranks(h, (const float *)&algo, 1), "ranks settled differently");
    if (root && h->cache.gather && h->cache.gather->cache)
        CHECK(gcmpi_auto_cache_read_file(path, h->cache.gather->cache->key, &file) == 0 &&
                  file.n_settled == 1 && file.settled[0].algo == GCMPI_ALGO_PASS &&
                  file.settled[0].median_s == slow_flat[WAY_PASS],
              "the new outcome was not saved over the old");
    if (root) {
        unlink(path);
        rmdir(dir);
    }
    snprintf(h->cfg.auto_cache, sizeof h->cfg.auto_cache, "off");
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* A trial runs as many rounds (a call of each candidate) as fit
 * GCMPI_AUTO_TRIAL_BUDGET_S by its first round on the slowest rank, from
 * GCMPI_AUTO_TRIAL_MIN_CALLS to GCMPI_AUTO_TRIAL_CALLS: every rank the
 * same, whatever it timed itself. Times faked: the last rank's round
 * takes `slow` seconds, every other rank's a thousandth of it. */
static void test_auto_trial_rounds_fit_the_budget(harness *h)
{
    const int last_rank = h->ctx.rank == h->ctx.size - 1;
    static const struct {
        double slow;
        int rounds;
    } cases[] = {
        {1e-4, GCMPI_AUTO_TRIAL_CALLS},
        {GCMPI_AUTO_TRIAL_BUDGET_S / 4.5, 4},
        {GCMPI_AUTO_TRIAL_BUDGET_S / 6.2, 6},
        {GCMPI_AUTO_TRIAL_BUDGET_S, GCMPI_AUTO_TRIAL_MIN_CALLS},
    };
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "int8");
    use_node_size(h, 1);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        /* Nodes of one rank: flat and passthrough, half the round each. */
        const double call = (last_rank ? cases[k].slow : cases[k].slow / 1000) / 2;
        const double seconds[3] = {call, call, call};
        int runs;
        gcmpi_auto_choice *c = fake_gather_trial(h, 200 + k, seconds, &runs);
        CHECK(c && c->settled && c->trial_rounds == cases[k].rounds,
              "case %zu: %d rounds, want %d", k, c ? c->trial_rounds : -1, cases[k].rounds);
        if (c) CHECK(runs == c->n_trial * c->trial_rounds, "case %zu: %d calls", k, runs);
    }
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* The same trial on real calls: every call of it, whichever way it ran,
 * leaves identical bytes on every rank and each block near its rank's
 * input, and afterwards the size runs what was settled. */
static void test_gather_auto_calls_stay_correct(harness *h)
{
    const int p = h->ctx.size, me = h->ctx.rank;
    const size_t n = 3001;
    h->cfg.algo = GCMPI_ALGO_AUTO;
    use_codec(h, "int8");
    use_node_size(h, p > 2 ? 2 : 1);
    float *block = malloc(n * sizeof(float)), *out = malloc((size_t)p * n * sizeof(float));
    float *res = calloc(n, sizeof(float));
    gcmpi_ef_slot ef = {.residual = res, .fresh = 1};
    int calls = 0, rc = MPI_SUCCESS;
    const gcmpi_auto_choice *c = NULL;
    while (rc == MPI_SUCCESS && calls < 4 * GCMPI_AUTO_TRIALS * GCMPI_AUTO_TRIAL_CALLS) {
        fill_laplace(block, n, me + 7 * calls);
        rc = gcmpi_allgather_compressed(&h->ctx, GCMPI_ALGO_AUTO, block, out, n, &ef);
        ef.fresh = 0;
        CHECK(rc == MPI_SUCCESS, "call %d: rc %d", calls, rc);
        CHECK(same_on_all_ranks(h, out, (size_t)p * n), "call %d: ranks differ", calls);
        const double err = rel_err(block, out + (size_t)me * n, n);
        CHECK(err < 0.05, "call %d: own block off by %g", calls, err);
        calls++;
        c = h->cache.gather ? gcmpi_auto_row(h->cache.gather->rows, &h->cache.gather->n, n, 0)
                            : NULL;
        if (c && c->settled) break;
    }
    CHECK(c && c->settled, "not settled after %d calls", calls);
    if (c && c->settled) {
        /* Real calls: a way more than GCMPI_AUTO_PRUNE times slower may
         * have been left out after two rounds. */
        CHECK(calls == trial_calls_of(c) + 1, "settled after %d calls", calls);
        for (int i = 0; i < c->n_trial; i++)
            CHECK(c->trial_median_s[i] > 0, "candidate %s untimed", gcmpi_algo_name(c->trial[i]));
        const gcmpi_algo kept = c->algo;
        rc = gcmpi_allgather_compressed(&h->ctx, GCMPI_ALGO_AUTO, block, out, n, &ef);
        CHECK(rc == MPI_SUCCESS && c->calls == 2 && c->algo == kept,
              "settled calls: %llu counted, %s", (unsigned long long)c->calls,
              gcmpi_algo_name(c->algo));
        if (kept == GCMPI_ALGO_PASS)
            CHECK(memcmp(out + (size_t)me * n, block, n * sizeof(float)) == 0,
                  "passthrough changed the block");
    }
    free(block), free(out), free(res);
    gcmpi_coll_cache_free(&h->cache);
    use_node_size(h, 0);
}

/* A slot as the shim makes it under GCMPI_MOMENTUM: codec state, then u and
 * the application's momentum (2n floats). */
static void ef_alloc_momentum(ef_buf *e, harness *h, gcmpi_algo algo, size_t n)
{
    size_t server = 0, state = 0;
    gcmpi_coll_slot_sizes(&h->cfg, algo, n, h->ctx.size, &server, &state);
    const size_t mom = gcmpi_coll_momentum_floats(&h->cfg, n);
    memset(&e->slot, 0, sizeof e->slot);
    e->slot.residual = calloc(n, sizeof(float));
    e->slot.server = server ? calloc(server, sizeof(float)) : NULL;
    e->slot.state = calloc(state + mom, sizeof(float));
    e->slot.fresh = 1;
    gcmpi_coll_slot_split(&e->slot, state, mom, 0);
}

/* GCMPI_MOMENTUM with fp16 (nearly exact, error feedback on): the library
 * sends u = beta*u + g and returns S_t - beta*m, so the application's
 * momentum m = beta*m + out is the momentum of the exact sums to within
 * fp16's rounding, which error feedback keeps from accumulating, on every
 * algorithm fp16 runs on. */
static void test_transparent_momentum_tracks_the_exact_momentum(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 3000;
    const float beta = 0.9f;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *m = malloc(n * sizeof(float));
    double *ref = malloc(n * sizeof(double)), *sum = malloc(n * sizeof(double));
    for (size_t a = 0; a < 2; a++) {
        const gcmpi_algo algo = all_algos[a];
        use_codec(h, "fp16");
        h->cfg.momentum = beta;
        ef_buf ef;
        ef_alloc_momentum(&ef, h, algo, n);
        CHECK(ef.slot.momentum != NULL, "no momentum part");
        memset(m, 0, n * sizeof(float));
        memset(ref, 0, n * sizeof(double));
        double worst = 0;
        for (int t = 0; t < 12; t++) {
            memset(sum, 0, n * sizeof(double));
            for (int r = 0; r < p; r++) {
                fill_laplace(g, n, r + 17 * t);
                for (size_t i = 0; i < n; i++) sum[i] += g[i];
            }
            fill_laplace(g, n, h->ctx.rank + 17 * t);
            int rc = allreduce(h, algo, g, out, n, &ef.slot);
            CHECK(rc == MPI_SUCCESS, "%s: rc %d", algo_name(algo), rc);
            CHECK(same_on_all_ranks(h, out, n), "%s: ranks differ", algo_name(algo));
            for (size_t i = 0; i < n; i++) {
                m[i] = beta * m[i] + out[i];
                ref[i] = beta * ref[i] + sum[i];
                double e = fabs(m[i] - ref[i]) / (fabs(ref[i]) + 1.0);
                if (e > worst) worst = e;
            }
        }
        /* fp16 keeps 11 bits of u (about 10 times the gradient): ~5e-3
         * here; without the correction the error is of order 1 */
        CHECK(worst < 2e-2, "%s: application momentum off by %g", algo_name(algo), worst);
        h->cfg.momentum = 0.0;
        free(ef.slot.residual), free(ef.slot.server), free(ef.slot.state ? ef.slot.state
                                                                          : ef.slot.momentum);
    }
    free(g), free(out), free(m), free(ref), free(sum);
}

/* GCMPI_MOMENTUM when one rank's state is new (a new buffer address or an
 * eviction, per rank) or has no room: every rank returns the same ĝ and
 * keeps the same m, the ranks that kept m unfold as usual and the others
 * take the result from one of them (so ĝ is Sₜ − βm, not the restart's
 * Sₜ, which would equal m); when no rank kept m, all restart. */
static void test_momentum_of_a_rank_that_lost_its_state_comes_from_one_that_kept_it(harness *h)
{
    const int p = h->ctx.size, me = h->ctx.rank;
    const size_t n = 3000;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    use_codec(h, "topk");
    h->cfg.params.ratio = 0.1;
    h->cfg.momentum = 0.9;
    ef_buf ef;
    ef_alloc_momentum(&ef, h, GCMPI_ALGO_ALLGATHER, n);
    float *mom = ef.slot.momentum;
    const int lost = p - 1; /* the rank that loses its state */
    for (int t = 0; t < 7; t++) {
        gcmpi_ef_slot *slot = &ef.slot;
        const char *what = "kept";
        if (t == 3 && me == lost) { /* a new entry: zeroed, fresh */
            memset(mom, 0, 2 * n * sizeof(float));
            memset(ef.slot.residual, 0, n * sizeof(float));
            ef.slot.fresh = 1;
        }
        if (t == 3) what = "one rank's state new";
        if (t == 5) what = "one rank without room";
        gcmpi_ef_slot bare = {0};
        if (t == 5 && me == lost) slot = &bare; /* no entry at all this call */
        if (t == 6 && me == lost) {              /* and a new one the next */
            memset(mom, 0, 2 * n * sizeof(float));
            ef.slot.fresh = 1;
        }
        fill_laplace(g, n, me + 31 * t);
        const int rc = allreduce(h, GCMPI_ALGO_ALLGATHER, g, out, n, slot);
        CHECK(rc == MPI_SUCCESS, "step %d (%s): rc %d", t, what, rc);
        CHECK(same_on_all_ranks(h, out, n), "step %d (%s): ranks returned different sums", t, what);
        const int has_m = !(t == 5 && me == lost);
        /* every rank that holds m holds the same: compare it where held */
        float *m = has_m ? mom + n : out;
        CHECK(same_on_all_ranks(h, m, n) || !has_m || t == 5,
              "step %d (%s): the ranks' momenta differ", t, what);
        if (t == 3 && p > 1) {
            size_t differ = 0;
            for (size_t i = 0; i < n; i++) differ += out[i] != mom[n + i];
            CHECK(differ > 0, "step 3: the call restarted every rank (ĝ = m = Sₜ)");
        }
        if (t == 0)
            CHECK(memcmp(out, mom + n, n * sizeof(float)) == 0,
                  "step 0, every rank new: ĝ is not Sₜ (= m)");
    }
    h->cfg.momentum = 0.0;
    free(ef.slot.residual), free(ef.slot.server), free(ef.slot.state ? ef.slot.state : mom);
    free(g), free(out);
}

/* GCMPI_MOMENTUM under auto, whose calls on one key may run passthrough
 * (a trial, or its pick) between lossy ones: the exact call sums g as
 * MPI does, with no agreement of its own and u and m left as they were;
 * the next lossy call restarts them (its m is then its own sum). */
static void test_an_exact_call_skips_momentum_correction_and_the_next_restarts(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 2048;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    float *before = malloc(2 * n * sizeof(float));
    use_codec(h, "topk");
    h->cfg.params.ratio = 0.05;
    h->cfg.momentum = 0.9;
    ef_buf ef;
    ef_alloc_momentum(&ef, h, GCMPI_ALGO_ALLGATHER, n);
    int lapsed = 0;
    ef.slot.momentum_lapsed = &lapsed;
    for (int t = 0; t < 2; t++) { /* u and m under way */
        fill_laplace(g, n, h->ctx.rank + 31 * t);
        CHECK(allreduce(h, GCMPI_ALGO_ALLGATHER, g, out, n, &ef.slot) == MPI_SUCCESS, "lossy call");
    }
    memcpy(before, ef.slot.momentum, 2 * n * sizeof(float));

    for (size_t i = 0; i < n; i++) g[i] = int_value(h->ctx.rank, i);
    CHECK(allreduce(h, GCMPI_ALGO_PASS, g, out, n, &ef.slot) == MPI_SUCCESS, "passthrough call");
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        float sum = 0;
        for (int r = 0; r < p; r++) sum += int_value(r, i);
        wrong += out[i] != sum;
    }
    CHECK(wrong == 0, "passthrough with momentum: %zu of %zu sums are not MPI's", wrong, n);
    CHECK(h->stats.bytes_sent == n * sizeof(float), "passthrough sent %llu bytes, not %zu",
          (unsigned long long)h->stats.bytes_sent, n * sizeof(float));
    CHECK(memcmp(before, ef.slot.momentum, 2 * n * sizeof(float)) == 0,
          "passthrough changed u or m");
    CHECK(lapsed == 1, "passthrough did not mark the momentum lapsed");

    fill_laplace(g, n, h->ctx.rank + 97);
    CHECK(allreduce(h, GCMPI_ALGO_ALLGATHER, g, out, n, &ef.slot) == MPI_SUCCESS, "lossy call");
    CHECK(lapsed == 0, "the lossy call left the lapse set");
    CHECK(memcmp(out, ef.slot.momentum + n, n * sizeof(float)) == 0,
          "after the lapse m is not the call's own sum: u and m did not restart");
    h->cfg.momentum = 0.0;
    free(ef.slot.residual), free(ef.slot.server), free(ef.slot.state ? ef.slot.state
                                                                      : ef.slot.momentum);
    free(g), free(out), free(before);
}

/* Every codec the algorithm carries, with and without GCMPI_MOMENTUM: a
 * call where one rank's gradient holds NaN and another's +inf gives a
 * result that is NaN / non-finite there on every rank (the rest finite,
 * except powersgd, whose low-rank factors spread it), leaves every
 * residual and momentum finite, and the next finite call is finite. */
static void test_nonfinite_inputs_behave_like_mpi_sum(harness *h)
{
    const int p = h->ctx.size;
    const size_t n = 20000, at_nan = 777, at_inf = 18000;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    for (size_t ci = 0; ci < gc_codec_count(); ci++) {
        if (!codec_selected(ci)) continue;
        const char *name = gc_codec_name(gc_codec_at(ci));
        const int spreads = strcmp(name, "powersgd") == 0;
        for (size_t a = 0; a < 3; a++)
            for (int mom = 0; mom < 2; mom++) {
                const gcmpi_algo algo = all_algos[a];
                use_codec(h, name);
                h->cfg.params.ratio = 0.05;
                if (!gcmpi_coll_supports(h->cfg.codec, algo)) continue;
                h->cfg.momentum = mom ? 0.9 : 0.0;
                ef_buf ef;
                ef_alloc_momentum(&ef, h, algo, n);
                fill_laplace(g, n, h->ctx.rank);
                int rc = allreduce(h, algo, g, out, n, &ef.slot);
                CHECK(rc == MPI_SUCCESS, "%s %s: rc %d", name, algo_name(algo), rc);
                fill_laplace(g, n, h->ctx.rank + 5);
                if (h->ctx.rank == p - 1) g[at_nan] = NAN;
                if (h->ctx.rank == 0) g[at_inf] = INFINITY;
                h->stats.nonfinite_in = 0;
                rc = allreduce(h, algo, g, out, n, &ef.slot);
                CHECK(rc == MPI_SUCCESS, "%s %s: rc %d", name, algo_name(algo), rc);
                CHECK(isnan(out[at_nan]), "%s %s m%d: out[nan] = %g", name, algo_name(algo), mom,
                      (double)out[at_nan]);
                CHECK(!isfinite(out[at_inf]), "%s %s m%d: out[inf] = %g", name, algo_name(algo),
                      mom, (double)out[at_inf]);
                size_t finite_far = 0, far = 0;
                for (size_t i = 0; i < n; i++)
                    /* outside a 512-bucket (of a chunk) and randk's 4096-blocks */
                    if (i > at_nan + 4096 && i + 4096 < at_inf)
                        far++, finite_far += isfinite(out[i]) != 0;
                CHECK(spreads || finite_far == far, "%s %s m%d: %zu of %zu far elements not finite",
                      name, algo_name(algo), mom, far - finite_far, far);
                CHECK(h->stats.nonfinite_in == (h->ctx.rank == 0 || h->ctx.rank == p - 1),
                      "%s %s: nonfinite_in %d", name, algo_name(algo), h->stats.nonfinite_in);
                CHECK(gc_all_finite(ef.slot.residual, n), "%s %s m%d: residual not finite", name,
                      algo_name(algo), mom);
                if (ef.slot.momentum)
                    CHECK(gc_all_finite(ef.slot.momentum, 2 * n), "%s %s: momentum not finite",
                          name, algo_name(algo));
                fill_laplace(g, n, h->ctx.rank + 9);
                rc = allreduce(h, algo, g, out, n, &ef.slot);
                CHECK(rc == MPI_SUCCESS && gc_all_finite(out, n), "%s %s m%d: next call not finite",
                      name, algo_name(algo), mom);
                CHECK(same_on_all_ranks(h, out, n), "%s %s: ranks differ", name, algo_name(algo));
                h->cfg.momentum = 0.0;
                free(ef.slot.residual), free(ef.slot.server),
                    free(ef.slot.state ? ef.slot.state : ef.slot.momentum);
            }
    }
    free(g), free(out);
}

/* Finite inputs whose sum overflows: rsag's reduced chunk holds +inf
 * though every input passed the call's check, so its re-encode must scan
 * it again (only the input's parts may skip the scan). The result is +inf
 * there on every rank, as MPI_SUM's, the rest finite, and the owner's
 * server residual finite. */
static void test_rsag_reencode_sees_a_sum_overflow(harness *h)
{
    const int p = h->ctx.size;
    if (p < 2) return;
    const size_t n = 20000, at = 9000;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    use_codec(h, "int8");
    ef_buf ef;
    ef_alloc_momentum(&ef, h, GCMPI_ALGO_RSAG, n);
    fill_laplace(g, n, h->ctx.rank);
    g[at] = 0.75f * FLT_MAX;
    int rc = allreduce(h, GCMPI_ALGO_RSAG, g, out, n, &ef.slot);
    CHECK(rc == MPI_SUCCESS, "rc %d", rc);
    CHECK(out[at] == INFINITY, "out[at] = %g, MPI_SUM gives +inf", (double)out[at]);
    size_t finite_far = 0, far = 0;
    for (size_t i = 0; i < n; i++)
        if (i + 4096 < at || i > at + 4096) far++, finite_far += isfinite(out[i]) != 0;
    CHECK(finite_far == far, "%zu of %zu far elements not finite", far - finite_far, far);
    size_t server = 0, state = 0;
    gcmpi_coll_slot_sizes(&h->cfg, GCMPI_ALGO_RSAG, n, p, &server, &state);
    CHECK(gc_all_finite(ef.slot.residual, n), "residual not finite");
    CHECK(!ef.slot.server || gc_all_finite(ef.slot.server, server), "server residual not finite");
    CHECK(same_on_all_ranks(h, out, n), "ranks differ");
    free(ef.slot.residual), free(ef.slot.server), free(ef.slot.state);
    free(g), free(out);
}

/* hier between nodes (nodes of 2: uneven on 3 ranks, a node a rank on 2)
 * with and without GCMPI_MOMENTUM: one rank's NaN and another's +inf
 * reach the result where MPI_SUM puts them, on every rank, though only
 * node sums are scanned (by the rank that encodes each); residuals and
 * momenta stay finite, some encoding rank counts the overflow, and the
 * next call is finite everywhere. */
static void test_hier_nonfinite_inputs_behave_like_mpi_sum(harness *h)
{
    static const char *const codecs[] = {"topk", "int8", "sign", "qsgd"};
    const int p = h->ctx.size;
    const size_t n = 20000, at_nan = 777, at_inf = 18000;
    float *g = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    use_node_size(h, p > 2 ? 2 : 1);
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++)
        for (int mom = 0; mom < 4; mom++) {
            /* 2 and 3: pipelined, segments of 2500 (the NaN and the inf
             * in the first and the last) */
            h->cfg.hier_segment = mom >= 2 ? 10000 : 0;
            use_codec(h, codecs[c]);
            h->cfg.params.ratio = 0.05;
            h->cfg.momentum = mom % 2 ? 0.9 : 0.0;
            ef_buf ef;
            ef_alloc_momentum(&ef, h, GCMPI_ALGO_HIER, n);
            fill_laplace(g, n, h->ctx.rank);
            int rc = allreduce(h, GCMPI_ALGO_HIER, g, out, n, &ef.slot);
            CHECK(rc == MPI_SUCCESS, "%s m%d: rc %d", codecs[c], mom, rc);
            fill_laplace(g, n, h->ctx.rank + 5);
            if (h->ctx.rank == p - 1) g[at_nan] = NAN;
            if (h->ctx.rank == 0) g[at_inf] = INFINITY;
            h->stats.nonfinite_in = 0;
            rc = allreduce(h, GCMPI_ALGO_HIER, g, out, n, &ef.slot);
            CHECK(rc == MPI_SUCCESS, "%s m%d: rc %d", codecs[c], mom, rc);
            CHECK(isnan(out[at_nan]), "%s m%d: out[nan] = %g", codecs[c], mom, (double)out[at_nan]);
            CHECK(!isfinite(out[at_inf]), "%s m%d: out[inf] = %g", codecs[c], mom,
                  (double)out[at_inf]);
            size_t finite_far = 0, far = 0;
            for (size_t i = at_nan + 4096 + 1; i + 4096 < at_inf; i++)
                far++, finite_far += isfinite(out[i]) != 0;
            CHECK(finite_far == far, "%s m%d: %zu of %zu far elements not finite", codecs[c], mom,
                  far - finite_far, far);
            int counted = 0;
            MPI_Allreduce(&h->stats.nonfinite_in, &counted, 1, MPI_INT, MPI_SUM, h->ctx.comm);
            CHECK(counted >= 1, "%s m%d: no rank counted the overflow", codecs[c], mom);
            CHECK(gc_all_finite(ef.slot.residual, n), "%s m%d: residual not finite", codecs[c], mom);
            if (ef.slot.momentum)
                CHECK(gc_all_finite(ef.slot.momentum, 2 * n), "%s: momentum not finite", codecs[c]);
            fill_laplace(g, n, h->ctx.rank + 9);
            rc = allreduce(h, GCMPI_ALGO_HIER, g, out, n, &ef.slot);
            CHECK(rc == MPI_SUCCESS && gc_all_finite(out, n), "%s m%d: next call not finite",
                  codecs[c], mom);
            CHECK(same_on_all_ranks(h, out, n), "%s m%d: ranks differ", codecs[c], mom);
            h->cfg.momentum = 0.0;
            free(ef.slot.residual), free(ef.slot.server),
                free(ef.slot.state ? ef.slot.state : ef.slot.momentum);
        }
    h->cfg.hier_segment = 1 << 20;
    use_node_size(h, 0);
    free(g), free(out);
}

/* Auto picks by codec and p; forced algorithms are returned as given. */
static void test_auto_choice_follows_the_documented_rule(harness *h)
{
    gcmpi_config cfg = h->cfg;
    cfg.algo = GCMPI_ALGO_AUTO;
    gc_params_default(&cfg.params);
    struct { const char *codec; int p; gcmpi_algo want; } rule[] = {
        {"none", 4, GCMPI_ALGO_NATIVE},     {"randk", 64, GCMPI_ALGO_NATIVE},
        {"powersgd", 2, GCMPI_ALGO_NATIVE}, {"topk", 8, GCMPI_ALGO_ALLGATHER},
        {"topk", 9, GCMPI_ALGO_RSAG},       {"dgc", 4, GCMPI_ALGO_ALLGATHER},
        {"int8", 4, GCMPI_ALGO_RSAG},       {"qsgd", 3, GCMPI_ALGO_RSAG},
        {"fp16", 16, GCMPI_ALGO_RSAG},      {"int8", 2, GCMPI_ALGO_ALLGATHER},
        {"topk", 2, GCMPI_ALGO_ALLGATHER},  {"sign", 4, GCMPI_ALGO_ALLGATHER},
        {"onebit", 8, GCMPI_ALGO_ALLGATHER}, {"sign", 16, GCMPI_ALGO_RSAG},
    };
    for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) {
        cfg.codec = gc_codec_by_name(rule[i].codec);
        gcmpi_algo got = gcmpi_coll_choose(&cfg, 1 << 20, rule[i].p);
        CHECK(got == rule[i].want, "%s p=%d: %s", rule[i].codec, rule[i].p, algo_name(got));
    }
    /* Native has no payload: asking for zstd or a CRC moves auto off it. */
    cfg.codec = gc_codec_by_name("none");
    cfg.params.zstd_level = 3;
    CHECK(gcmpi_coll_choose(&cfg, 1 << 20, 4) == GCMPI_ALGO_RSAG, "none + zstd");
    CHECK(gcmpi_coll_choose(&cfg, 1 << 20, 2) == GCMPI_ALGO_ALLGATHER, "none + zstd, p = 2");
    cfg.params.zstd_level = 0;
    cfg.params.flags = GC_PF_CRC;
    cfg.codec = gc_codec_by_name("powersgd");
    CHECK(gcmpi_coll_choose(&cfg, 1 << 20, 4) == GCMPI_ALGO_ALLGATHER, "powersgd + crc");
    cfg.codec = gc_codec_by_name("randk");
    CHECK(gcmpi_coll_choose(&cfg, 1 << 20, 16) == GCMPI_ALGO_RSAG, "randk + crc");
    cfg.params.flags = 0;
    cfg.algo = GCMPI_ALGO_ALLGATHER;
    CHECK(gcmpi_coll_choose(&cfg, 1 << 20, 64) == GCMPI_ALGO_ALLGATHER, "forced");
    CHECK(!gcmpi_coll_supports(gc_codec_by_name("topk"), GCMPI_ALGO_NATIVE), "topk native");

    size_t server, state;
    cfg.codec = gc_codec_by_name("int8");
    gcmpi_coll_slot_sizes(&cfg, GCMPI_ALGO_RSAG, 10, 4, &server, &state);
    CHECK(server == 3 && state == 0, "rsag slot: server %zu state %zu", server, state);
    cfg.codec = gc_codec_by_name("powersgd");
    gcmpi_coll_slot_sizes(&cfg, GCMPI_ALGO_NATIVE, 4000, 4, &server, &state);
    gc_powersgd_shape s = gc_powersgd_shape_of(4000, cfg.params.rank);
    CHECK(server == 0 && state == s.cols * s.rank, "powersgd slot: state %zu", state);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    harness h;
    harness_init(&h, MPI_COMM_WORLD);
    my_rank = h.ctx.rank;
    struct { const char *name; void (*run)(harness *); } tests[] = {
#define T(f) {#f, f}
        T(test_none_sums_exactly_with_every_algorithm),
        T(test_every_codec_gives_identical_bytes_on_every_rank),
        T(test_allgather_equals_rank_order_sum_of_decoded_payloads),
        T(test_rsag_equals_two_stage_chunk_reference),
        T(test_lossy_codecs_stay_within_a_bound),
        T(test_native_int8_error_is_at_most_half_a_step_per_rank),
        T(test_native_randk_is_exact_on_the_chosen_indices),
        T(test_native_powersgd_is_exact_on_a_rank_one_sum),
        T(test_error_feedback_mean_approaches_the_true_sum),
        T(test_a_failed_encode_on_one_rank_fails_the_call_everywhere),
        T(test_bytes_sent_are_what_went_to_mpi),
        T(test_allgather_op_places_every_block),
        T(test_allgather_op_by_node_equals_flat),
        T(test_gather_auto_trial_keeps_the_fastest),
        T(test_gather_auto_cache_checks_the_cached_way),
        T(test_auto_trial_rounds_fit_the_budget),
        T(test_gather_auto_calls_stay_correct),
        T(test_auto_choice_follows_the_documented_rule),
        T(test_transparent_momentum_tracks_the_exact_momentum),
        T(test_an_exact_call_skips_momentum_correction_and_the_next_restarts),
        T(test_momentum_of_a_rank_that_lost_its_state_comes_from_one_that_kept_it),
        T(test_nonfinite_inputs_behave_like_mpi_sum),
        T(test_hier_nonfinite_inputs_behave_like_mpi_sum),
        T(test_rsag_reencode_sees_a_sum_overflow),
        T(test_hier_node_split_follows_node_size),
        T(test_hier_none_sums_exactly_for_every_node_size),
        T(test_hier_window_fits_the_room_or_goes),
        T(test_hier_pipeline_meets_whatever_each_node_sums_through),
        T(test_node_window_spreads_chunks_and_the_worst_code),
        T(test_hier_on_one_node_is_exact_in_rank_order),
        T(test_hier_lossy_codecs_agree_and_stay_close),
        T(test_hier_gather_by_payloads_equals_by_floats),
        T(test_hier_error_feedback_converges_with_uneven_nodes),
        T(test_sparse_rd_equals_the_sum_of_decoded_sets),
        T(test_sparse_rd_gives_identical_bytes_on_every_rank),
        T(test_sparse_rd_failed_encode_on_one_rank_fails_everywhere),
        T(test_auto_pick_is_the_same_on_every_rank_whatever_each_measured),
        T(test_auto_measures_once_and_results_agree),
        T(test_auto_trial_settles_on_the_measured_fastest),
        T(test_auto_trial_ties_go_to_the_model),
        T(test_auto_trial_leaves_out_a_far_slower_candidate),
        T(test_auto_nearby_sizes_share_a_row),
        T(test_auto_cache_file_round_trips_and_refuses_damage),
        T(test_auto_keeps_its_calibration_between_jobs),
        T(test_auto_keeps_a_lossy_pick_only_when_clearly_faster),
        T(test_auto_tries_again_when_a_warm_up_ratio_moved),
        T(test_auto_tries_again_when_settled_calls_fall_behind),
#undef T
    };
    /* test_algos [[!]test-name-part] [codec,codec...]: the tests whose
     * name has the part, or with '!' those whose name has it not. */
    const char *only = argc > 1 && argv[1][0] ? argv[1] : NULL;
    const int exclude = only && only[0] == '!';
    if (exclude) only++;
    codec_filter = argc > 2 ? argv[2] : NULL;
    verbose = getenv("TEST_ALGOS_VERBOSE") != NULL;
    int total = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (only && (strstr(tests[i].name, only) != NULL) == exclude) continue;
        int before = failures;
        double t0 = PMPI_Wtime();
        tests[i].run(&h);
        int mine = failures - before, any = 0;
        PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (my_rank == 0)
            printf("%-62s %-4s %6.2f s\n", tests[i].name, any ? "FAIL" : "ok", PMPI_Wtime() - t0);
        total += any;
    }
    if (my_rank == 0) printf("%d ranks: %s\n", h.ctx.size, total ? "FAILED" : "passed");
    harness_free(&h);
    MPI_Finalize();
    return total ? 1 : 0;
}
