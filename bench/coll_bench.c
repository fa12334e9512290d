/* coll_bench.c — gcmpi-coll-bench: compressed allreduce against the native
 * PMPI_Allreduce, measured in the same run under mpirun.
 *
 *   mpirun -np 4 gcmpi-coll-bench [--sizes 1M,16M] [--max-size 64M]
 *       [--codec all|LIST] [--algo all|LIST] [--ratio R] [--bits B]
 *       [--bucket N] [--rank R] [--reps N] [--min-time S] [--warmup N] [--no-ef]
 *       [--json]
 *       [--node-size Q] [--node-shm 0|1] [--segment S] [--predict]
 *       [--op allreduce|allgather]
 *
 * The bench links the library's internals (config/ and the pmpi/ collective
 * algorithms) and calls gcmpi_allreduce_compressed with a configuration
 * built in-process for each codec and algorithm, on a private duplicate of
 * MPI_COMM_WORLD, exactly as the shim does after its eligibility check; the
 * baseline is PMPI_Allreduce on the same buffer. No preload is needed.
 *
 * Each rank's gradient is Laplace-distributed (heavy-ish tails, like real
 * gradients) and different per rank. Reported per size, codec, algorithm:
 *   native ms, compressed ms  median over --reps calls (more under --min-time:
 *                             timed_calls in the JSON) of the slowest rank's
 *                             time (a barrier before each call); each
 *                             compressed call is paired with a native one
 *                             right before it, so both see the same load
 *   speedup                   native / compressed
 *   sent B/rank               bytes each rank handed to PMPI (payloads and
 *                             sizes), measured by the algorithm, mean over
 *                             ranks
 *   ratio                     offered bytes / sent bytes
 *   rel err                   ||out - exact|| / ||exact|| of the first call
 *                             (fresh residual), exact = PMPI_Allreduce
 *   enc, dec, comm ms         the algorithm's own split, mean over calls,
 *                             slowest rank
 *   pred ms                   --predict (or --algo auto): the cost model's
 *                             time for the algorithm (pmpi/cost_model.h),
 *                             from figures measured once per codec on this
 *                             communicator as GCMPI_ALGO=auto does
 *
 * --op allgather times the compressed MPI_Allgather instead
 * (gcmpi_allgather_compressed, GCMPI_ALLGATHER_CODEC's path) against
 * PMPI_Allgather; a size is then each rank's block. Its algorithms: allgather
 * (payloads all-gathered over all ranks) and hier or auto (node by node). */
#include "coll_impl.h"
#include "gcmpi_config.h"
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 64

typedef struct options {
    size_t sizes[MAX_LIST];
    int n_sizes;
    size_t max_size;
    const gc_codec *codecs[MAX_LIST];
    int n_codecs;
    gcmpi_algo algos[GCMPI_ALGO_COUNT];
    int n_algos;
    int node_size, node_shm, predict;
    size_t segment; /* hier's pipeline: least bytes of a segment (0: default) */
    double ratio;
    unsigned bits, rank;
    size_t bucket;
    int reps, warmup, ef, json;
    double min_time;  /* --min-time: seconds a case's timed calls add up to */
    int allgather_op; /* --op allgather */
    int interleave;   /* --interleave */
} options;

static int world_rank, world_size;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N gcmpi-coll-bench [options]\n"
            "  --sizes LIST     message sizes in bytes, K/M/G suffixes (default\n"
            "                   64K,256K,1M,4M,16M,64M,256M)\n"
            "  --max-size S     drop sizes above S\n"
            "  --codec LIST     codec names or 'all' (default all)\n"
            "  --algo LIST      allgather, rsag, native, hier, sparse_rd, passthrough, auto,\n"
            "                   rule, or 'all' = allgather, rsag, native\n"
            "  --node-size Q    hier's and auto's nodes: Q consecutive ranks (default: the\n"
            "                   ranks sharing memory)\n"
            "  --node-shm 0|1   hier inside a node through a shared window (1, default) or\n"
            "                   MPI_Reduce_scatter and MPI_Allgatherv (0): GCMPI_NODE_SHM\n"
            "  --segment S      hier's pipeline between nodes: segments of a rank's chunk\n"
            "                   of at least S bytes (GCMPI_HIER_SEGMENT; default 1M); S\n"
            "                   above every chunk: hier unpipelined\n"
            "  --predict        print the cost model's prediction beside each time\n"
            "  --op OP          allreduce (default) or allgather: the compressed MPI_Allgather\n"
            "                   of a block of each size per rank (algorithms allgather: flat,\n"
            "                   hier: node by node, passthrough: PMPI_Allgather of the\n"
            "                   floats, auto: its trial of the three, then its pick)\n"
            "  --ratio R        topk/randk/dgc kept fraction (default 0.01)\n"
            "  --bits B         qsgd bits (default 4)\n"
            "  --bucket N       elements per scale (default 512)\n"
            "  --rank R         powersgd rank (default 4)\n"
            "  --reps N         timed calls per case (default 5)\n"
            "  --min-time S     more timed calls (up to 1024) where the first timed\n"
            "                   call was short: as many as make S seconds of the\n"
            "                   slowest case's native and compressed calls (default 0)\n"
            "  --warmup N       untimed calls before them (default 2)\n"
            "  --interleave     time the algorithms of a size and codec in rounds (one call\n"
            "                   of each per round, each round starting one later) instead\n"
            "                   of one after another; auto's trial runs in such rounds\n"
            "                   too (allreduce), untimed, before them\n"
            "  --no-ef          without error feedback\n"
            "  --json           one JSON array instead of tables\n");
}

static int fail(const char *fmt, const char *arg)
{
    if (world_rank == 0) {
        fprintf(stderr, "gcmpi-coll-bench: ");
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
    return 0;
}

/* Calls item(token) for each comma-separated token of list. */
static int each_token(const char *list, int (*item)(options *, const char *), options *o)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!item(o, t)) return 0;
    return 1;
}

static int add_size(options *o, const char *t)
{
    size_t s = gcmpi_bench_parse_size(t);
    if (!s || o->n_sizes == MAX_LIST) return fail("bad size '%s'", t);
    o->sizes[o->n_sizes++] = s;
    return 1;
}

static int add_codec(options *o, const char *t)
{
    if (strcmp(t, "all") == 0) {
        for (size_t i = 0; i < gc_codec_count() && o->n_codecs < MAX_LIST; i++)
            o->codecs[o->n_codecs++] = gc_codec_at(i);
        return 1;
    }
    const gc_codec *c = gc_codec_by_name(t);
    if (!c || o->n_codecs == MAX_LIST) return fail("unknown codec '%s'", t);
    o->codecs[o->n_codecs++] = c;
    return 1;
}

static const char *algo_name(gcmpi_algo a)
{
    return gcmpi_algo_name(a);
}

static int add_algo(options *o, const char *t)
{
    if (strcmp(t, "all") == 0) {
        o->n_algos = 0;
        for (int a = GCMPI_ALGO_ALLGATHER; a <= GCMPI_ALGO_NATIVE; a++) o->algos[o->n_algos++] = a;
        return 1;
    }
    for (int a = GCMPI_ALGO_AUTO; a < GCMPI_ALGO_COUNT; a++)
        if (strcmp(t, algo_name(a)) == 0 && o->n_algos < GCMPI_ALGO_COUNT) {
            o->algos[o->n_algos++] = a;
            return 1;
        }
    return fail("unknown algorithm '%s' (allgather, rsag, native, hier, sparse_rd, "
                "passthrough, auto, rule, all)", t);
}

static int parse_options(options *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    gc_params d;
    gc_params_default(&d);
    o->ratio = d.ratio, o->bits = d.bits, o->bucket = d.bucket, o->rank = d.rank;
    o->reps = 5, o->warmup = 2, o->ef = 1, o->node_shm = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1, takes = 1;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (world_rank == 0) usage(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) o->json = 1, takes = 0;
        else if (strcmp(a, "--no-ef") == 0) o->ef = 0, takes = 0;
        else if (strcmp(a, "--predict") == 0) o->predict = 1, takes = 0;
        else if (strcmp(a, "--interleave") == 0) o->interleave = 1, takes = 0;
        else if (!v) ok = fail("%s needs a value", a);
        else if (strcmp(a, "--sizes") == 0) ok = each_token(v, add_size, o);
        else if (strcmp(a, "--max-size") == 0)
            ok = (o->max_size = gcmpi_bench_parse_size(v)) || fail("bad size '%s'", v);
        else if (strcmp(a, "--codec") == 0) ok = each_token(v, add_codec, o);
        else if (strcmp(a, "--algo") == 0) ok = each_token(v, add_algo, o);
        else if (strcmp(a, "--ratio") == 0) o->ratio = atof(v);
        else if (strcmp(a, "--bits") == 0) o->bits = (unsigned)atoi(v);
        else if (strcmp(a, "--bucket") == 0) o->bucket = (size_t)atol(v);
        else if (strcmp(a, "--rank") == 0) o->rank = (unsigned)atoi(v);
        else if (strcmp(a, "--node-size") == 0)
            ok = (o->node_size = atoi(v)) > 0 || fail("bad --node-size '%s'", v);
        else if (strcmp(a, "--node-shm") == 0)
            ok = ((o->node_shm = atoi(v)) == 0 || o->node_shm == 1) ||
                 fail("bad --node-shm '%s' (0 or 1)", v);
        else if (strcmp(a, "--segment") == 0)
            ok = (o->segment = gcmpi_bench_parse_size(v)) >= sizeof(float) ||
                 fail("bad --segment '%s'", v);
        else if (strcmp(a, "--op") == 0)
            ok = (o->allgather_op = strcmp(v, "allgather") == 0) || strcmp(v, "allreduce") == 0 ||
                 fail("bad --op '%s' (allreduce or allgather)", v);
        else if (strcmp(a, "--reps") == 0)
            ok = (o->reps = atoi(v)) > 0 || fail("bad --reps '%s'", v);
        else if (strcmp(a, "--min-time") == 0) {
            char *end = NULL;
            o->min_time = strtod(v, &end);
            ok = (end != v && *end == '\0' && o->min_time >= 0 && o->min_time <= 3600) ||
                 fail("bad --min-time '%s' (seconds, 0 to 3600)", v);
        }
        else if (strcmp(a, "--warmup") == 0) o->warmup = atoi(v) < 0 ? 0 : atoi(v);
        else ok = fail("unknown option '%s' (--help lists them)", a);
        if (!ok) return 0;
        i += takes;
    }
    if (!o->n_sizes) each_token("64K,256K,1M,4M,16M,64M,256M", add_size, o);
    if (!o->n_codecs) add_codec(o, "all");
    if (!o->n_algos) add_algo(o, "all");
    if (o->max_size) {
        int k = 0;
        for (int i = 0; i < o->n_sizes; i++)
            if (o->sizes[i] <= o->max_size) o->sizes[k++] = o->sizes[i];
        o->n_sizes = k;
    }
    return 1;
}

/* ---- measuring ------------------------------------------------------------- */

static double max_over_ranks(double x, MPI_Comm comm)
{
    double m;
    PMPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
    return m;
}

static double mean_over_ranks(double x, MPI_Comm comm)
{
    double s;
    PMPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, comm);
    return s / world_size;
}

/* ||out - ref|| / ||ref|| over every rank's copy (they are identical). */
static double rel_error(const float *ref, const float *out, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)out[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void fill_laplace(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t z = gcmpi_coll_mix(seed ^ gcmpi_coll_mix(i));
        double u = ((double)(z >> 11) + 0.5) * 0x1p-53 - 0.5;
        x[i] = (float)(-(u < 0 ? -1.0 : 1.0) * log(1.0 - 2.0 * fabs(u)));
    }
}

typedef struct result {
    double native_ms, ms, enc_ms, dec_ms, comm_ms, predicted_ms;
    double offered, sent, rel_err;
    int timed_calls; /* the calls the medians are of */
    gcmpi_algo algo;
    char error[MPI_MAX_ERROR_STRING + 64];
} result;

/* One codec and algorithm at one size being timed: its configuration,
 * residuals and samples. Each timed call is paired with a native
 * PMPI_Allreduce (PMPI_Allgather) on the same buffer right before it, so
 * both see the same load on a shared machine. Every rank takes the same
 * path: failures are agreed by the algorithms, and checked here with a
 * MAX. */
enum { MAX_REPS = 1024 };
/* timed_case.settling */
enum { NOT_AUTO, SETTLING, SETTLED };
/* The most calls auto's trial of one size may take. */
#define SETTLE_CALLS (4 * GCMPI_AUTO_TRIALS * GCMPI_AUTO_TRIAL_CALLS)
typedef struct timed_case {
    gcmpi_config cfg;
    gcmpi_algo algo;     /* what the timed calls run (auto resolved) */
    gcmpi_ef_slot ef;
    double t[MAX_REPS], tn[MAX_REPS], enc, dec, comm, sent;
    int calls, rc;
    int settling; /* --interleave: auto's trial to run in rounds (below) */
    char label[32];
    result res;
} timed_case;

static void case_open(timed_case *tc, gcmpi_coll_ctx *ctx, size_t n, const options *o)
{
    ctx->cfg = &tc->cfg;
    size_t server = 0, state = 0;
    if (!o->allgather_op) gcmpi_coll_slot_sizes(&tc->cfg, tc->algo, n, ctx->size, &server, &state);
    memset(&tc->ef, 0, sizeof tc->ef);
    if (o->ef) {
        tc->ef.residual = calloc(n, sizeof(float));
        tc->ef.server = server ? calloc(server, sizeof(float)) : NULL;
        tc->ef.state = state ? calloc(state, sizeof(float)) : NULL;
        tc->ef.fresh = 1;
    }
    tc->enc = tc->dec = tc->comm = tc->sent = 0;
    tc->calls = 0;
    tc->rc = MPI_SUCCESS;
}

/* One native call of the bench's size, after a barrier: its seconds. */
static double timed_native(int gather, const float *in, float *out, size_t n, MPI_Comm comm)
{
    PMPI_Barrier(comm);
    const double t0 = PMPI_Wtime();
    if (gather) PMPI_Allgather(in, (int)n, MPI_FLOAT, out, (int)n, MPI_FLOAT, comm);
    else PMPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, comm);
    return PMPI_Wtime() - t0;
}

/* One paired call (the first o->warmup are not recorded). */
static void case_call(timed_case *tc, gcmpi_coll_ctx *ctx, const float *in, float *out,
                      const float *exact, size_t n, const options *o)
{
    if (tc->rc != MPI_SUCCESS || tc->res.error[0]) return;
    ctx->cfg = &tc->cfg;
    const int gather = o->allgather_op;
    const size_t total = gather ? n * (size_t)ctx->size : n;
    gcmpi_ef_slot *ef = o->ef ? &tc->ef : NULL;
    const int i = tc->calls++;
    /* The native call and the case's, in turn first: the first of the
     * pair follows the previous case's different traffic, and over shared
     * memory at 64 KiB (2 ranks) a PMPI_Allreduce after hier's window
     * took 41-46 us where one after another took 59, so a native call
     * always first put auto's passthrough at 1.2-1.4x native. */
    const int native_first = i % 2 == 0; /* the first call's result is checked */
    double dn = 0.0;
    if (native_first) dn = timed_native(gather, in, out, n, ctx->comm);
    PMPI_Barrier(ctx->comm);
    double t0 = PMPI_Wtime();
    int rc = gather ? gcmpi_allgather_compressed(ctx, tc->algo, in, out, n, ef)
                    : gcmpi_allreduce_compressed(ctx, tc->algo, in, out, n, ef);
    const double dt = PMPI_Wtime() - t0;
    if (!native_first) dn = timed_native(gather, in, out, n, ctx->comm);
    int any;
    PMPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, ctx->comm);
    tc->rc = any;
    ctx->call_seed = gcmpi_coll_mix(ctx->call_seed);
    tc->ef.fresh = 0;
    if (tc->rc != MPI_SUCCESS) return;
    if (i == 0) tc->res.rel_err = rel_error(exact, out, total);
    if (i < o->warmup) return;
    tc->t[i - o->warmup] = max_over_ranks(dt, ctx->comm);
    tc->tn[i - o->warmup] = max_over_ranks(dn, ctx->comm);
    tc->enc += ctx->stats->encode_s, tc->dec += ctx->stats->decode_s;
    tc->comm += ctx->stats->comm_s;
    tc->sent += (double)ctx->stats->bytes_sent;
}

/* The case's figures into tc->res; frees its residuals. */
static void case_close(timed_case *tc, gcmpi_coll_ctx *ctx, const options *o)
{
    result *res = &tc->res;
    const int reps = tc->calls - o->warmup;
    if (res->error[0]) {
        /* refused before any call */
    } else if (tc->rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        PMPI_Error_string(tc->rc, msg, &len);
        snprintf(res->error, sizeof res->error, "%s", msg);
    } else if (reps > 0) {
        res->timed_calls = reps;
        res->ms = 1e3 * gcmpi_bench_median(tc->t, reps);
        res->native_ms = 1e3 * gcmpi_bench_median(tc->tn, reps);
        res->enc_ms = 1e3 * max_over_ranks(tc->enc / reps, ctx->comm);
        res->dec_ms = 1e3 * max_over_ranks(tc->dec / reps, ctx->comm);
        res->comm_ms = 1e3 * max_over_ranks(tc->comm / reps, ctx->comm);
        res->sent = mean_over_ranks(tc->sent / reps, ctx->comm);
        res->offered = (double)ctx->stats->bytes_offered;
    }
    free(tc->ef.residual), free(tc->ef.server), free(tc->ef.state);
    memset(&tc->ef, 0, sizeof tc->ef);
}

static int case_total_calls(const options *o)
{
    return o->warmup + (o->reps < MAX_REPS ? o->reps : MAX_REPS);
}

/* The calls of cases[0 .. k) after their first timed round (--min-time):
 * as many rounds as make min_time seconds of the slowest case's pair of
 * calls (its native and compressed call, the slowest rank's: the same on
 * every rank), at least --reps and at most MAX_REPS. A median of three
 * 64 KiB calls on 8 ranks over 2 cores put the same passthrough code at
 * 1.1-1.2x native. */
static int case_calls_after_first(const timed_case *cases, int k, const options *o)
{
    double slowest = 0.0;
    for (int j = 0; j < k; j++)
        if (cases[j].calls > o->warmup && cases[j].t[0] + cases[j].tn[0] > slowest)
            slowest = cases[j].t[0] + cases[j].tn[0];
    const int least = case_total_calls(o);
    if (!(o->min_time > 0) || !(slowest > 0)) return least;
    const double fit = ceil(o->min_time / slowest);
    const int calls = o->warmup + (fit < MAX_REPS ? (int)fit : MAX_REPS);
    return calls > least ? calls : least;
}

/* Every call of one case in a row. */
static void time_case(timed_case *tc, gcmpi_coll_ctx *ctx, const float *in, float *out,
                      const float *exact, size_t n, const options *o)
{
    case_open(tc, ctx, n, o);
    for (int i = 0, total = case_total_calls(o); i < total; i++) {
        case_call(tc, ctx, in, out, exact, n, o);
        if (i == o->warmup) total = case_calls_after_first(tc, 1, o);
    }
    case_close(tc, ctx, o);
}

/* ---- output ---------------------------------------------------------------- */

static void print_header(size_t bytes)
{
    printf("\n%zu bytes (%zu floats), %d ranks\n", bytes, bytes / 4, world_size);
    printf("%-9s %-15s %10s %10s %8s %12s %8s %9s %8s %8s %8s %9s\n", "codec", "algo",
           "native ms", "gcmpi ms", "speedup", "sent B/rank", "ratio", "rel err", "enc ms",
           "dec ms", "comm ms", "pred ms");
}

static void print_row(const char *codec, const char *algo, const result *r, int first_json,
                      size_t bytes, int json)
{
    if (json) {
        printf("%s\n  {\"size_bytes\": %zu, \"ranks\": %d, \"codec\": \"%s\", \"algo\": \"%s\", ",
               first_json ? "" : ",", bytes, world_size, codec, algo);
        if (r->error[0])
            printf("\"error\": \"%s\"}", r->error);
        else
            printf("\"native_ms\": %.6g, \"compressed_ms\": %.6g, \"speedup\": %.6g, "
                   "\"bytes_offered\": %.0f, \"bytes_sent\": %.0f, \"ratio\": %.6g, "
                   "\"rel_error\": %.6g, "
                   "\"encode_ms\": %.6g, \"decode_ms\": %.6g, \"comm_ms\": %.6g, "
                   "\"timed_calls\": %d, \"predicted_ms\": ",
                   r->native_ms, r->ms, r->native_ms / r->ms, r->offered, r->sent,
                   r->offered / r->sent, r->rel_err, r->enc_ms, r->dec_ms, r->comm_ms,
                   r->timed_calls);
        /* JSON has no inf or NaN: no prediction is null. */
        if (isfinite(r->predicted_ms)) printf("%.6g", r->predicted_ms);
        else printf("null");
        printf(", \"error\": null}");
        return;
    }
    if (r->error[0]) {
        printf("%-9s %-15s   error: %s\n", codec, algo, r->error);
        return;
    }
    printf("%-9s %-15s %10.3f %10.3f %7.2fx %12.0f %8.2f %9.2e %8.3f %8.3f %8.3f %9.3f\n", codec,
           algo, r->native_ms, r->ms, r->native_ms / r->ms, r->sent, r->offered / r->sent,
           r->rel_err, r->enc_ms, r->dec_ms, r->comm_ms, r->predicted_ms);
}

/* 1 when auto's choice for count n is settled (or n has no row: nothing
 * to try), printing the trial's figures beside the rows once: why auto
 * settled there. */
static int auto_settled(const gcmpi_coll_ctx *ctx, size_t n)
{
    const gcmpi_auto_model *m = ctx->cache ? ctx->cache->model : NULL;
    const gcmpi_auto_choice *c = NULL;
    for (int i = 0; m && i < m->n_choices; i++)
        if (m->choices[i].count == n) c = &m->choices[i];
    if (!c) return 1;
    if (!c->settled) return 0;
    if (world_rank == 0 && c->n_trial > 1 && !c->from_cache) {
        fprintf(stderr, "gcmpi-coll-bench: auto %s, %zu floats: trial",
                gc_codec_name(ctx->cfg->codec), n);
        for (int t = 0; t < c->n_trial; t++)
            fprintf(stderr, "%s %s %.3f ms (%d calls)", t ? "," : "", algo_name(c->trial[t]),
                    1e3 * c->trial_median_s[t], c->trial_calls[t]);
        fprintf(stderr, " -> %s\n", algo_name(c->algo));
    }
    return 1;
}

/* Runs auto's trial for count n (compressed calls without residuals, as
 * many as it takes) so that its choice for n is settled. */
static int settle_auto(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t n)
{
    for (int call = 0; call < SETTLE_CALLS; call++) {
        int rc = gcmpi_allreduce_compressed(ctx, GCMPI_ALGO_AUTO, in, out, n, NULL);
        if (rc != MPI_SUCCESS) return rc;
        if (auto_settled(ctx, n)) return MPI_SUCCESS;
    }
    return MPI_SUCCESS;
}

/* The configuration of one row: the options' parameters, codec and
 * algorithm, as the shim would build it from GCMPI_* variables. */
static void configure(gcmpi_config *cfg, const options *o, const gc_codec *codec, gcmpi_algo algo)
{
    gcmpi_config_defaults(cfg);
    cfg->codec = codec;
    cfg->params.ratio = o->ratio, cfg->params.bits = o->bits;
    cfg->params.bucket = o->bucket, cfg->params.rank = o->rank;
    cfg->ef = o->ef;
    cfg->algo = algo;
    cfg->node_size = o->node_size;
    cfg->node_shm = o->node_shm;
    if (o->segment) cfg->hier_segment = o->segment;
    /* The model of this run, measured here: --predict checks it against
     * this run's times. */
    snprintf(cfg->auto_cache, sizeof cfg->auto_cache, "off");
}

/* One row of --op allgather: flat (allgather) or node by node (hier,
 * auto); other algorithms do not apply to MPI_Allgather. */
/* The same for the compressed MPI_Allgather's trial (coll_auto_gather.c). */
static int settle_auto_gather(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t n)
{
    for (int call = 0; call < 4 * GCMPI_AUTO_TRIALS * GCMPI_AUTO_TRIAL_CALLS; call++) {
        int rc = gcmpi_allgather_compressed(ctx, GCMPI_ALGO_AUTO, in, out, n, NULL);
        if (rc != MPI_SUCCESS) return rc;
        gcmpi_gather_choices *g = ctx->cache ? ctx->cache->gather : NULL;
        const gcmpi_auto_choice *c = g ? gcmpi_auto_row(g->rows, &g->n, n, 0) : NULL;
        if (!c) return MPI_SUCCESS;
        if (c->settled) {
            if (world_rank == 0) {
                fprintf(stderr, "gcmpi-coll-bench: auto allgather %s, %zu floats a rank: trial",
                        gc_codec_name(ctx->cfg->codec), n);
                for (int t = 0; t < c->n_trial; t++)
                    fprintf(stderr, "%s %s %.3f ms (%d calls)", t ? "," : "",
                            algo_name(c->trial[t]), 1e3 * c->trial_median_s[t],
                            c->trial_calls[t]);
                fprintf(stderr, " -> %s\n", algo_name(c->algo));
            }
            return MPI_SUCCESS;
        }
    }
    return MPI_SUCCESS;
}


/* Prints the agreed figures behind every prediction of a codec, once. */
static void print_model(const gcmpi_auto_model *model, const gc_codec *codec)
{
    const gcmpi_cost_env *e = &model->env;
    fprintf(stderr,
            "gcmpi-coll-bench: model %s: %d ranks, %d nodes of <= %d; encode "
            "%.3g GB/s, decode %.3g GB/s, payload %.4g of the input; allreduce "
            "of 16 MiB %.3g ms, allgather of 1 MiB blocks %.3g ms, in a node "
            "(16 MiB) %.3g ms, hier's columns %.3gx the leaders' time\n",
            gc_codec_name(codec), e->p, e->n_nodes, e->node_size,
            1e-9 * gcmpi_lin_rate_of(e->encode), 1e-9 * gcmpi_lin_rate_of(e->decode),
            e->payload_ratio, 1e3 * gcmpi_lin_at(e->flat.allreduce, 16 << 20),
            1e3 * gcmpi_lin_at(e->flat.allgather, 1 << 20),
            1e3 * gcmpi_lin_at(e->node_allreduce, 16 << 20),
            e->column_share > 0 ? e->column_share : 1.0);
}

static int case_resolve(timed_case *tc, gcmpi_coll_ctx *ctx, const options *o,
                        const gc_codec *codec, gcmpi_algo algo, gcmpi_coll_cache *cache,
                        int *printed_model, size_t n);

/* Readies the compressed MPI_Allgather's case of codec and way at n
 * floats a rank: auto runs its trial first, and its timed calls run the
 * way it settled on. 0 when the case does not apply. */
static int gather_case_prepare(timed_case *tc, gcmpi_coll_ctx *ctx, const options *o,
                               const gc_codec *codec, gcmpi_algo algo, const float *in,
                               float *out, size_t n)
{
    if (algo != GCMPI_ALGO_ALLGATHER && algo != GCMPI_ALGO_HIER && algo != GCMPI_ALGO_PASS &&
        algo != GCMPI_ALGO_AUTO)
        return 0;
    configure(&tc->cfg, o, codec, algo);
    ctx->cfg = &tc->cfg;
    tc->algo = algo;
    tc->res = (result){.algo = algo, .predicted_ms = NAN};
    char msg[256];
    int rc = MPI_SUCCESS, len = 0;
    if (gc_is_error(gc_params_check(tc->cfg.codec, &tc->cfg.params, msg, sizeof msg))) {
        snprintf(tc->res.error, sizeof tc->res.error, "%s", msg);
    } else if (algo == GCMPI_ALGO_AUTO) {
        rc = settle_auto_gather(ctx, in, out, n);
        if (rc == MPI_SUCCESS) tc->algo = tc->res.algo = gcmpi_gather_pick(ctx, n, &rc);
        if (rc != MPI_SUCCESS) PMPI_Error_string(rc, tc->res.error, &len);
    }
    snprintf(tc->label, sizeof tc->label, "%s%s", algo == GCMPI_ALGO_AUTO ? "auto:" : "",
             algo_name(tc->algo));
    return 1;
}

/* Readies the case of codec and algorithm at n floats (--op allgather:
 * gather_case_prepare): auto measures its model on the first call for a
 * codec, then tries its candidates on the first calls of a size, and the
 * timed calls run what it settles on. 0 when the case does not apply (an
 * algorithm the codec lacks). */
static int case_prepare(timed_case *tc, gcmpi_coll_ctx *ctx, const options *o,
                        const gc_codec *codec, gcmpi_algo algo, gcmpi_coll_cache *cache,
                        int *printed_model, const float *in, float *out, size_t n)
{
    ctx->cache = cache;
    if (o->allgather_op) return gather_case_prepare(tc, ctx, o, codec, algo, in, out, n);
    configure(&tc->cfg, o, codec, algo);
    ctx->cfg = &tc->cfg;
    if (tc->cfg.algo == GCMPI_ALGO_AUTO && o->interleave) {
        /* Its trial runs in rounds with the other cases (settle_in_rounds),
         * under the traffic its timed calls will see: before them, a
         * 64 MiB PMPI_Allreduce at 2 ranks over shared memory took
         * 12-15 ms, in the rounds 26-33, and the trial kept passthrough
         * where hier took 17. The model is made now, as a call would. */
        gcmpi_auto_model *model = NULL;
        if (gcmpi_auto_model_of(ctx, &model) != MPI_SUCCESS) return 0;
        tc->settling = SETTLING;
        snprintf(tc->label, sizeof tc->label, "auto");
        return 1;
    }
    int pick_rc = MPI_SUCCESS;
    if (tc->cfg.algo == GCMPI_ALGO_AUTO) pick_rc = settle_auto(ctx, in, out, n);
    if (pick_rc != MPI_SUCCESS) return 0;
    return case_resolve(tc, ctx, o, codec, algo, cache, printed_model, n);
}

/* The rest of a case's preparation once auto (if it is auto) has settled:
 * the algorithm its timed calls run, its prediction and label; 0 when it
 * cannot run (as case_prepare). */
static int case_resolve(timed_case *tc, gcmpi_coll_ctx *ctx, const options *o,
                        const gc_codec *codec, gcmpi_algo algo, gcmpi_coll_cache *cache,
                        int *printed_model, size_t n)
{
    ctx->cache = cache;
    ctx->cfg = &tc->cfg;
    int pick_rc = MPI_SUCCESS;
    const gcmpi_algo run = gcmpi_coll_pick(ctx, n, &pick_rc);
    if (pick_rc != MPI_SUCCESS || !gcmpi_coll_supports(tc->cfg.codec, run)) return 0;
    tc->algo = run;
    tc->res = (result){.algo = run, .predicted_ms = NAN};
    gcmpi_auto_model *model = cache->model;
    if (!model && o->predict) {
        tc->cfg.algo = GCMPI_ALGO_AUTO;
        if (gcmpi_auto_model_of(ctx, &model) != MPI_SUCCESS) model = NULL;
        tc->cfg.algo = algo;
    }
    if (model && !*printed_model && world_rank == 0) print_model(model, codec);
    if (model) *printed_model = 1;
    if (model)
        tc->res.predicted_ms = 1e3 * gcmpi_cost_predict(&model->env, run, model->inner,
                                                        (double)n * sizeof(float));
    /* The timed calls run the resolved algorithm. */
    if (tc->cfg.algo == GCMPI_ALGO_AUTO || tc->cfg.algo == GCMPI_ALGO_RULE) tc->cfg.algo = run;
    char msg[256];
    if (gc_is_error(gc_params_check(tc->cfg.codec, &tc->cfg.params, msg, sizeof msg)))
        snprintf(tc->res.error, sizeof tc->res.error, "%s", msg);
    snprintf(tc->label, sizeof tc->label, "%s%s", algo == GCMPI_ALGO_AUTO ? "auto:" : "",
             algo_name(run));
    return 1;
}

/* --interleave: the rounds of cases[0 .. k) (untimed, without residuals)
 * until every auto case among them has settled, each auto call its trial's
 * next; then those cases are resolved. The calls are paired with a native
 * one and rotated as the timed rounds are. */
static void settle_in_rounds(timed_case *cases, int k, gcmpi_coll_ctx *ctx, const options *o,
                             const gc_codec *codec, gcmpi_coll_cache *cache, int *printed_model,
                             const float *in, float *out, size_t n)
{
    int left = 0;
    for (int j = 0; j < k; j++) left += cases[j].settling == SETTLING;
    for (int round = 0; left && round < SETTLE_CALLS; round++)
        for (int jj = 0; jj < k; jj++) {
            timed_case *tc = &cases[(jj + round) % k];
            if (tc->rc != MPI_SUCCESS || tc->res.error[0]) continue;
            ctx->cfg = &tc->cfg;
            timed_native(0, in, out, n, ctx->comm);
            PMPI_Barrier(ctx->comm);
            if (tc->settling != SETTLING) {
                gcmpi_allreduce_compressed(ctx, tc->algo, in, out, n, NULL);
                continue;
            }
            tc->rc = gcmpi_allreduce_compressed(ctx, GCMPI_ALGO_AUTO, in, out, n, NULL);
            if (tc->rc == MPI_SUCCESS && !auto_settled(ctx, n)) continue;
            tc->settling = SETTLED, left--;
        }
    for (int j = 0; j < k; j++) {
        timed_case *tc = &cases[j];
        if (tc->settling == NOT_AUTO) continue;
        tc->settling = NOT_AUTO; /* settled, or past SETTLE_CALLS: its pick */
        int len = 0;
        if (tc->rc != MPI_SUCCESS) /* worded as the gather's auto */
            PMPI_Error_string(tc->rc, tc->res.error, &len);
        else if (!case_resolve(tc, ctx, o, codec, GCMPI_ALGO_AUTO, cache, printed_model, n))
            snprintf(tc->res.error, sizeof tc->res.error, "auto settled on what the codec lacks");
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    options o;
    if (!parse_options(&o, argc, argv)) {
        MPI_Finalize();
        return argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) ? 0 : 2;
    }
    size_t max_bytes = 0;
    for (int i = 0; i < o.n_sizes; i++) max_bytes = o.sizes[i] > max_bytes ? o.sizes[i] : max_bytes;
    const size_t max_n = max_bytes / sizeof(float);
    const size_t out_n = o.allgather_op ? max_n * (size_t)world_size : max_n;
    float *in = malloc(max_n * sizeof(float)), *out = malloc(out_n * sizeof(float));
    float *exact = malloc(out_n * sizeof(float));
    if (!in || !out || !exact) {
        fprintf(stderr, "gcmpi-coll-bench: rank %d: out of memory for %zu bytes\n", world_rank,
                max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fill_laplace(in, max_n, 0x5EED0000ull + (uint64_t)world_rank);

    gcmpi_config cfg;
    gcmpi_scratch scratch = {0};
    gcmpi_call_stats stats;
    gcmpi_coll_cache caches[MAX_LIST] = {{0}}; /* per codec: node split, auto's model */
    gcmpi_coll_ctx ctx = {.cfg = &cfg, .scratch = &scratch, .stats = &stats,
                          .ws = gc_workspace_create(), .call_seed = 42};
    PMPI_Comm_dup(MPI_COMM_WORLD, &ctx.comm);
    ctx.rank = world_rank, ctx.size = world_size;

    int first_json = 1, printed_model[MAX_LIST] = {0};
    timed_case *cases = calloc((size_t)o.n_algos, sizeof *cases);
    if (!cases) MPI_Abort(MPI_COMM_WORLD, 1);
    if (o.json && world_rank == 0) printf("[");
    for (int s = 0; s < o.n_sizes; s++) {
        const size_t n = o.sizes[s] / sizeof(float);
        if (n > (size_t)INT_MAX) {
            if (world_rank == 0)
                fprintf(stderr, "gcmpi-coll-bench: %zu bytes is above PMPI_Allreduce's int count; "
                                "skipped\n", o.sizes[s]);
            continue;
        }
        if (o.allgather_op)
            PMPI_Allgather(in, (int)n, MPI_FLOAT, exact, (int)n, MPI_FLOAT, ctx.comm);
        else
            PMPI_Allreduce(in, exact, (int)n, MPI_FLOAT, MPI_SUM, ctx.comm);
        if (!o.json && world_rank == 0) print_header(o.sizes[s]);
        for (int c = 0; c < o.n_codecs; c++) {
            /* Cases one after another, or (--interleave) every case's
             * calls in rounds, so each sees the same drift of the
             * machine's load: auto's row runs its pick's code, and two
             * timings of one algorithm far apart differed by up to 1.6x
             * on this 2-core machine. */
            int k = 0;
            for (int a = 0; a < o.n_algos; a++) {
                timed_case *tc = &cases[k];
                memset(tc, 0, sizeof *tc);
                if (!case_prepare(tc, &ctx, &o, o.codecs[c], o.algos[a], &caches[c],
                                  &printed_model[c], in, out, n))
                    continue;
                if (o.interleave) {
                    k++;
                    continue;
                }
                time_case(tc, &ctx, in, out, exact, n, &o);
                if (world_rank == 0) print_row(gc_codec_name(tc->cfg.codec), tc->label, &tc->res,
                                               first_json, o.sizes[s], o.json);
                first_json = 0;
                fflush(stdout);
            }
            settle_in_rounds(cases, k, &ctx, &o, o.codecs[c], &caches[c], &printed_model[c], in,
                             out, n);
            for (int j = 0; j < k; j++) case_open(&cases[j], &ctx, n, &o);
            /* Each round starts one case later: the first case of a round
             * follows the last one's traffic (over a shaped link the auto
             * row, first in every round, took 2x its own forced row at
             * 64 KiB), and rotating spreads that over all of them. */
            for (int i = 0, total = case_total_calls(&o); i < total; i++) {
                for (int jj = 0; jj < k; jj++)
                    case_call(&cases[(jj + i) % k], &ctx, in, out, exact, n, &o);
                if (i == o.warmup) total = case_calls_after_first(cases, k, &o);
            }
            for (int j = 0; j < k; j++) {
                case_close(&cases[j], &ctx, &o);
                if (world_rank == 0) print_row(gc_codec_name(cases[j].cfg.codec), cases[j].label,
                                               &cases[j].res, first_json, o.sizes[s], o.json);
                first_json = 0;
                fflush(stdout);
            }
        }
    }
    if (o.json && world_rank == 0) printf("\n]\n");

    for (int c = 0; c < o.n_codecs; c++) gcmpi_coll_cache_free(&caches[c]);
    free(cases);
    gc_workspace_free(ctx.ws);
    gcmpi_scratch_free(&scratch);
    PMPI_Comm_free(&ctx.comm);
    free(in), free(out), free(exact);
    MPI_Finalize();
    return 0;
}
