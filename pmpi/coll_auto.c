/* coll_auto.c — GCMPI_ALGO=auto: per communicator, measure once what the
 * cost model needs, agree on it, then pick per call size the algorithm it
 * predicts fastest.
 *
 * At the first auto call on a communicator (the same call on every rank,
 * because eligibility is), every rank times the MPI primitives the
 * algorithms are made of at two to four sizes — over the whole
 * communicator, inside its node, and between node leaders —, the input
 * scan's rate, the codec's encode and decode on a synthetic gradient, and
 * the payload it produces. Each run is timed on its slowest rank, and a
 * figure is the typical run after a warm-up (settled()). One
 * PMPI_Allgather of all figures and the median over ranks of each (the
 * lower one for an even count) makes them the same on every rank without
 * letting one rank's hiccup decide, so the pick, a pure function of the
 * agreed figures and the call's count, is the same everywhere.
 *
 * A model can be wrong (a loaded machine, a link it did not measure well),
 * and auto must not lose to native: per call size the model's pick, its
 * two runners-up and passthrough each run 3 to GCMPI_AUTO_TRIAL_CALLS
 * calls (as many as fit GCMPI_AUTO_TRIAL_BUDGET_S), in turn, and the fastest by its median call on the slowest rank is kept from
 * then on; a lossy one only when it beats passthrough by GCMPI_AUTO_MARGIN;
 * among candidates within GCMPI_AUTO_TIE of the fastest, the model's.
 * Calls on device buffers are timed whole (staging through host memory
 * included) by the device path; the model's figures are the host's, so
 * where any rank's trial calls were on device buffers it only proposes
 * the candidates and the trial alone decides.
 *
 * A job run again finds both in GCMPI_AUTO_CACHE (auto_cache.h): the
 * agreed figures, checked against one link figure measured again, and
 * each size's settled trial, taken without trying it again. */
#include "coll_impl.h"
#include "auto_cache.h"
#include "cost_model.h"
#include "adapt/gc_adapt.h"
#include "node_shm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SMALL_BYTES ((size_t)16 << 10)
#define LARGE_BYTES ((size_t)1 << 20)
/* And an allreduce between them (of all ranks, of the leaders, inside a
 * node), at the smallest size auto is judged at: over a loopback shaped
 * to 10 Gbit/s a 64 KiB call goes in the token bucket's burst, and the
 * line from 16 KiB to 1 MiB put a 64 KiB passthrough at 1.6 to 3 times
 * its time; the node's window from 16 KiB to 4 MiB put hier's 64 KiB at
 * 0.5 to 0.8 of its. */
#define SMALL_MID_BYTES ((size_t)64 << 10)
/* Inside a node and in the codec the large point is past the caches, as a
 * gradient is: at 1 MiB both ran from cache and the model put hier's
 * 64 MiB at a quarter of its measured time. */
#define NODE_LARGE_BYTES ((size_t)16 << 20)
/* And a point between: through a 16 KiB point that pays several barriers
 * on a busy node, the line's slope came out too low (the 2 x 4 emulated
 * cluster's hier predicted at 0.5-0.6x its 64 MiB time). */
#define NODE_MID_BYTES ((size_t)4 << 20)
/* And one at 1 MiB, where a node's sum still runs from cache: the line
 * from 64 KiB to 4 MiB put hier's 1 MiB calls over shared memory (its
 * window alone) at 1.26-1.48x their time in 6 of 9 rows. */
#define NODE_CACHED_BYTES ((size_t)1 << 20)
#define LARGE_GATHER_BYTES ((size_t)128 << 10) /* each rank's block */
#define REPEATS 5
#define CODEC_FLOATS (NODE_LARGE_BYTES / sizeof(float))

/* A third, larger point: the 1 MiB allreduce scaled up to about this
 * long, at most BIG_FACTOR times, at least SLOW_FACTOR times. Over
 * shared memory the 1 MiB points run from cache and put a 64 MiB
 * passthrough at a third of its time. */
#define BIG_TARGET_S 0.03
#define BIG_FACTOR 16
#define BIG_REPEATS 3 /* runs of every large point: each costs more */
#define SLOW_FACTOR 4 /* the least third point, where the link is slow */
#define SLOW_REPEATS 3 /* its runs (the first warms up): one was 1.7x off at 1 Gbit/s */
/* Where the 1 MiB allreduce scaled to BUCKET_BYTES stays under
 * BUCKET_BUDGET_S, a fourth point at BUCKET_BYTES, a framework's fused
 * gradient bucket and past a last-level cache: over shared memory the
 * allreduce's slope grows by half from 16 to 32 MiB (4 ranks, 32 MiB
 * L3: 1.16 ms/MiB at 16 MiB, 1.63 at 32, 1.82 at 64), and the 16 MiB
 * point's slope put the 64 MiB passthrough at 0.55-0.65x its time. */
#define BUCKET_BYTES ((size_t)32 << 20)
#define BUCKET_BUDGET_S 0.1

/* The points of the sum inside a node, in size order: bytes, runs. */
static const struct {
    size_t bytes;
    int runs;
} NODE_POINTS[] = {
    {SMALL_BYTES, REPEATS},         {SMALL_MID_BYTES, REPEATS},
    {NODE_CACHED_BYTES, REPEATS},   {NODE_MID_BYTES, BIG_REPEATS},
    {NODE_LARGE_BYTES, BIG_REPEATS},
};
enum { NODE_N_POINTS = sizeof NODE_POINTS / sizeof NODE_POINTS[0] };
_Static_assert(NODE_N_POINTS <= GCMPI_LIN_KNEES + 1, "a line through every node point");

/* The figures that are agreed, as one array of doubles: per communicator
 * (flat, between leaders) the three primitives at two sizes, at the large
 * third point and that point's sizes (allreduce and alltoall, allgather
 * block), allreduce and alltoall at the fourth and its size (0: not
 * measured); inside a node; the scan's, encode's, decode's and (sparse
 * codecs) sparse_rd's own passes' seconds at each of CODEC_POINTS, and the
 * payload ratio. */
#define CODEC_NP 4 /* the codec's points (CODEC_POINTS) */
enum {
    F_AR1, F_AR2, F_AG1, F_AG2, F_A2A1, F_A2A2, F_AR3, F_AG3, F_A2A3, F_X, F_XG, /* flat */
    F_AR4, F_A2A4, F_X4, F_ARS,
    B_AR1, B_AR2, B_AG1, B_AG2, B_A2A1, B_A2A2, B_AR3, B_AG3, B_A2A3, B_X, B_XG, /* between */
    B_AR4, B_A2A4, B_X4, B_ARS,
    N_RB1, N_RB2, N_AR, /* in a node: the sum at NODE_POINTS from N_AR on */
    H_COLS = N_AR + NODE_N_POINTS, /* hier's columns all at once (column_share) */
    C_SCAN, C_ENC = C_SCAN + CODEC_NP, C_DEC = C_ENC + CODEC_NP, /* codec, at CODEC_POINTS */
    C_SET = C_DEC + CODEC_NP, /* sparse codecs: sparse_rd's own passes, at CODEC_POINTS */
    C_RATIO = C_SET + CODEC_NP,
    FIGURES
};
enum { COMM_FIGURES = F_ARS - F_AR1 + 1 };
_Static_assert(B_AR1 == F_AR1 + COMM_FIGURES, "flat and between figures alike");
_Static_assert(FIGURES == GCMPI_AUTO_FIGURES, "coll.h's figure count");

void gcmpi_coll_cache_free(gcmpi_coll_cache *c)
{
    if (!c) return;
    gcmpi_nodes_free(c->nodes);
    if (c->model) free(c->model->cache);
    free(c->model);
    if (c->gather) free(c->gather->cache);
    free(c->gather);
    c->nodes = NULL;
    c->model = NULL;
    c->gather = NULL;
}

/* ---- measuring --------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A figure from n timed runs, as a typical call sees it: the first run
 * warms up (pages, connections, MPI's buffers) and is dropped, the rest
 * give their lower median. The fastest run, taken before, was the lucky
 * one: 4 ranks on 2 cores put a 1 MiB allreduce at 0.7 ms whose calls'
 * median took 1.3 to 1.5. Sorts t. */
static double settled(double *t, int n)
{
    if (n <= 1) return n == 1 ? t[0] : INFINITY;
    qsort(t + 1, (size_t)(n - 1), sizeof *t, cmp_double);
    return t[1 + (n - 2) / 2];
}

/* A point's runs past the third stop once they took this long: on the
 * emulated 2 x 4 cluster, 8 ranks on 2 cores, a 16 KiB allreduce of all
 * ranks took 87 ms, and five runs of each point of all ranks 4.7 s. */
#define POINT_BUDGET_S 0.1

static int over_budget(const double *t, int runs)
{
    double sum = 0.0;
    for (int i = 0; i < runs; i++) sum += t[i];
    return runs >= 3 && sum > POINT_BUDGET_S;
}

typedef enum { PRIM_ALLREDUCE, PRIM_ALLGATHER, PRIM_ALLTOALL, PRIM_REDUCE_BCAST } prim;

/* Writes the bytes a timing reads from a. The buffer is calloc'd, and a
 * page never written reads from the kernel's one zero page, always in
 * cache: the node window summed 16 MiB of such pages in 8.4 ms that took
 * 24 ms written (8 ranks as two nodes of 4 on 2 cores), and the model put
 * hier's 64 MiB call at 0.55x its time. 0x3c bytes: finite floats. */
static void fill_input(uint8_t *a, size_t bytes)
{
    memset(a, 0x3c, bytes);
}

static int run_prim(prim k, MPI_Comm comm, int p, uint8_t *a, uint8_t *b, size_t bytes)
{
    const int floats = (int)(bytes / sizeof(float));
    switch (k) {
    case PRIM_ALLREDUCE:
        return PMPI_Allreduce(a, b, floats, MPI_FLOAT, MPI_SUM, comm);
    case PRIM_ALLGATHER:
        return PMPI_Allgather(a, (int)bytes, MPI_BYTE, b, (int)bytes, MPI_BYTE, comm);
    case PRIM_ALLTOALL:
        return PMPI_Alltoall(a, (int)(bytes / (size_t)p), MPI_BYTE, b, (int)(bytes / (size_t)p),
                             MPI_BYTE, comm);
    case PRIM_REDUCE_BCAST: {
        int rank, rc;
        PMPI_Comm_rank(comm, &rank);
        rc = PMPI_Reduce(rank == 0 ? MPI_IN_PLACE : (void *)a, a, floats, MPI_FLOAT, MPI_SUM, 0, comm);
        return rc == MPI_SUCCESS ? PMPI_Bcast(a, floats, MPI_FLOAT, 0, comm) : rc;
    }
    }
    return MPI_ERR_ARG;
}

/* settled() of `repeats` runs, each after a barrier and timed on the
 * slowest rank (one PMPI_Allreduce, MAX), as a call is paid; after the
 * third, no more once the runs took POINT_BUDGET_S (every rank sees the
 * same times, so all stop together). The same figure on every rank of
 * comm. */
static double time_prim_n(prim k, MPI_Comm comm, uint8_t *a, uint8_t *b, size_t bytes,
                          int repeats)
{
    int p;
    PMPI_Comm_size(comm, &p);
    fill_input(a, bytes);
    double t[REPEATS];
    if (repeats > REPEATS) repeats = REPEATS;
    for (int i = 0; i < repeats; i++) {
        PMPI_Barrier(comm);
        double t0 = PMPI_Wtime();
        if (run_prim(k, comm, p, a, b, bytes) != MPI_SUCCESS) return 0.0;
        const double mine = PMPI_Wtime() - t0;
        if (PMPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS) return 0.0;
        if (over_budget(t, i + 1)) return settled(t, i + 1);
    }
    return settled(t, repeats);
}

static double time_prim(prim k, MPI_Comm comm, uint8_t *a, uint8_t *b, size_t bytes)
{
    return time_prim_n(k, comm, a, b, bytes, REPEATS);
}

/* Waits on the node until every rank of it gets here, sleeping between
 * tests. Where only the node leaders time the link between nodes, the
 * others would otherwise spin in their next collective on the node (MPI
 * polls) and take the cores the leaders' runs need: on the emulated
 * 2 x 4 cluster, 8 ranks on 2 cores, six spinning ranks put a 128 KiB
 * allgather of the two leaders at 15 ms and a 512 KiB one no dearer, and
 * the model then sent 16 MB across the 1 Gbit/s link in 33 ms. Collective
 * over node. */
static int node_wait_quietly(MPI_Comm node)
{
    MPI_Request req;
    int rc = PMPI_Ibarrier(node, &req), done = 0;
    const struct timespec nap = {.tv_sec = 0, .tv_nsec = 100000};
    while (rc == MPI_SUCCESS && !done) {
        rc = PMPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && !done) nanosleep(&nap, NULL);
    }
    return rc;
}

/* hier's two phases inside the node through its shared window, as
 * hier_scatter runs them: settled() of `repeats` runs on the slowest rank;
 * -1 on every rank of the node when the node's shared memory has no room
 * for a window. */
static double time_node_window(gcmpi_nodes *n, uint8_t *a, uint8_t *b, size_t bytes,
                               int repeats)
{
    const size_t count = bytes / sizeof(float);
    fill_input(a, bytes);
    for (int i = 0; i < n->node_size; i++) {
        n->counts[i] = (int)gcmpi_chunk_len(count, n->node_size, i);
        n->displs[i] = (int)gcmpi_chunk_start(count, n->node_size, i);
    }
    double t[REPEATS];
    if (repeats > REPEATS) repeats = REPEATS;
    for (int i = 0; i < repeats; i++) {
        PMPI_Barrier(n->node);
        const double t0 = PMPI_Wtime();
        int worst = MPI_SUCCESS;
        int rc = gcmpi_node_shm_reduce_scatter(&n->shm, n->node, (const float *)a, (float *)b,
                                               n->counts, n->displs, 0, NULL);
        if (rc == GCMPI_NODE_SHM_NO_ROOM) return -1.0;
        if (rc == MPI_SUCCESS)
            rc = gcmpi_node_shm_allgather(&n->shm, n->node, (float *)b, n->counts, n->displs,
                                          MPI_SUCCESS, &worst);
        if (rc != MPI_SUCCESS) return 0.0;
        const double mine = PMPI_Wtime() - t0;
        if (PMPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE, MPI_MAX, n->node) != MPI_SUCCESS)
            return 0.0;
        if (over_budget(t, i + 1)) return settled(t, i + 1);
    }
    return settled(t, repeats);
}

/* hier's q columns all-gathering at once, each member a block of
 * lead/q bytes: the seconds of the slowest rank, the median of up to
 * COLS_RUNS runs. The model holds it against the leaders' allgather line
 * at blocks of lead (the same bytes across the link) and scales hier's
 * traffic between nodes by the ratio. On the emulated 2 x 4 cluster
 * (1 Gbit/s, 8 ranks on 2 cores) the leaders alone moved 110-118 MB/s at
 * 8-32 MiB and the four columns 72-90 MB/s, and the model, which had only
 * the leaders' line, put hier's int8 call at 0.67x its time. Timing the
 * leaders again beside the columns gave no steadier ratio: their 8 MiB
 * runs took either 70-86 or 139-163 ms. Collective over comm (every rank
 * on a node of n); the same figure on every rank. */
#define COLS_BYTES ((size_t)8 << 20)
#define COLS_RUNS 5
#define COLS_BUDGET_S 0.5

static size_t columns_lead_bytes(int n_nodes)
{
    /* Each leader would receive about COLS_BYTES whatever the node count. */
    const size_t lead = COLS_BYTES / (size_t)(n_nodes > 1 ? n_nodes - 1 : 1);
    return lead < LARGE_GATHER_BYTES ? LARGE_GATHER_BYTES : lead;
}

static double time_columns(gcmpi_nodes *n, MPI_Comm comm, uint8_t *a, uint8_t *b)
{
    const size_t col = columns_lead_bytes(n->n_nodes) / (size_t)n->node_size;
    fill_input(a, col);
    /* Connections first: Open MPI opens them at a pair's first message. */
    int rc = PMPI_Allgather(a, 1, MPI_BYTE, b, 1, MPI_BYTE, n->column);
    double t[COLS_RUNS], spent = 0.0;
    int runs = 0;
    while (rc == MPI_SUCCESS && runs < COLS_RUNS) {
        rc = PMPI_Barrier(comm);
        const double t0 = PMPI_Wtime();
        if (rc == MPI_SUCCESS)
            rc = PMPI_Allgather(a, (int)col, MPI_BYTE, b, (int)col, MPI_BYTE, n->column);
        const double mine = PMPI_Wtime() - t0;
        if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&mine, &t[runs], 1, MPI_DOUBLE, MPI_MAX, comm);
        if (rc != MPI_SUCCESS) break;
        spent += t[runs++];
        if (runs >= 3 && spent > COLS_BUDGET_S) break; /* the same on every rank */
    }
    if (rc != MPI_SUCCESS || runs == 0) return 0.0;
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    return t[(runs - 1) / 2];
}

/* f[0 .. COMM_FIGURES-1] in the order of the flat block. Collective over
 * comm: the large point's factor is agreed (the slowest rank's 1 MiB). */
static void measure_comm(MPI_Comm comm, double *f, uint8_t *a, uint8_t *b, size_t cap)
{
    int p;
    PMPI_Comm_size(comm, &p);
    /* Five runs of the 1 MiB points too: with three, 4 ranks on 2 cores
     * once put the 1 MiB allreduce at twice its settled time. */
    f[0] = time_prim(PRIM_ALLREDUCE, comm, a, b, SMALL_BYTES);
    f[1] = time_prim(PRIM_ALLREDUCE, comm, a, b, LARGE_BYTES);
    f[F_ARS - F_AR1] = time_prim(PRIM_ALLREDUCE, comm, a, b, SMALL_MID_BYTES);
    f[2] = time_prim(PRIM_ALLGATHER, comm, a, b, SMALL_BYTES / (size_t)p);
    f[3] = time_prim(PRIM_ALLGATHER, comm, a, b, LARGE_GATHER_BYTES);
    f[4] = time_prim(PRIM_ALLTOALL, comm, a, b, SMALL_BYTES);
    f[5] = time_prim(PRIM_ALLTOALL, comm, a, b, LARGE_BYTES);
    /* f[1] is already the slowest rank's (time_prim_n), the same on all. */
    const double slowest = f[1];
    const size_t bucket = BUCKET_BYTES / LARGE_BYTES;
    size_t factor = slowest > 0 ? (size_t)(BIG_TARGET_S / slowest) : 0;
    if (factor > BIG_FACTOR) factor = BIG_FACTOR;
    const int fourth = slowest > 0 && slowest * (double)bucket <= BUCKET_BUDGET_S &&
                       BUCKET_BYTES <= cap;
    int repeats = BIG_REPEATS;
    if (factor < SLOW_FACTOR) {
        /* A slow link: SLOW_REPEATS runs at SLOW_FACTOR x. Its large calls take
         * another algorithm than 1 MiB (Open MPI: ring, not recursive
         * doubling, which sends the whole vector across the node link
         * log2(p) times), and the 1 MiB slope put a 64 MiB passthrough
         * between two emulated nodes at 2x its measured time. */
        factor = SLOW_FACTOR;
        repeats = SLOW_REPEATS;
    }
    size_t gfactor = factor;
    while (gfactor > 1 && LARGE_GATHER_BYTES * gfactor * (size_t)p > cap) gfactor /= 2;
    const size_t x = LARGE_BYTES * factor;
    f[F_X - F_AR1] = (double)x;
    f[F_AR3 - F_AR1] = time_prim_n(PRIM_ALLREDUCE, comm, a, b, x, repeats);
    f[F_A2A3 - F_AR1] = time_prim_n(PRIM_ALLTOALL, comm, a, b, x, repeats);
    if (gfactor >= 2) {
        const size_t xg = LARGE_GATHER_BYTES * gfactor;
        f[F_XG - F_AR1] = (double)xg;
        f[F_AG3 - F_AR1] = time_prim_n(PRIM_ALLGATHER, comm, a, b, xg, repeats);
    }
    if (fourth) {
        f[F_X4 - F_AR1] = (double)BUCKET_BYTES;
        f[F_AR4 - F_AR1] = time_prim_n(PRIM_ALLREDUCE, comm, a, b, BUCKET_BYTES, BIG_REPEATS);
        f[F_A2A4 - F_AR1] = time_prim_n(PRIM_ALLTOALL, comm, a, b, BUCKET_BYTES, BIG_REPEATS);
    }
}

/* Laplace-like values, the same on every rank (the payload of a sparse or
 * entropy-coded codec depends on them). */
static void synthetic_gradient(float *x, size_t n)
{
    uint64_t s = 0x5EEDull;
    for (size_t i = 0; i < n; i++) {
        s = gcmpi_coll_mix(s);
        double u = ((double)(s >> 11) + 0.5) * 0x1p-53 - 0.5;
        x[i] = (float)(-(u < 0 ? -1.0 : 1.0) * log(1.0 - 2.0 * fabs(u)));
    }
}

/* With error feedback on (lossy codecs), the encode adds and updates a
 * residual as every call does: about twice the work of a bare encode, which
 * the model once took for the call's and so put compressed calls at half
 * their measured time.
 *
 * A call waits for its slowest rank, and every rank encodes at once there:
 * ranks of a node share its cores and memory bandwidth and slow each other.
 * So each run starts the ranks of a node at a barrier and ends at the next
 * one: the time until a node's ranks have all encoded, the same on each of
 * them up to a barrier's skew; the figures are then the longest over all
 * ranks (one PMPI_Allreduce, MAX, on the communicator). Timed alone on
 * each rank, 8 ranks on 2 cores ran their short encodes one time slice
 * each, unpreempted, and the model put a sign encode of 16 MiB at 4 ms
 * where the call's took 17. Only the node's ranks take part in a run: over
 * a slow link a collective of all ranks after each run cost the emulated
 * 2 x 4 cluster 2 s of calibration. Collective over the node; every rank
 * runs the same calls whatever its codec returns. The codec's runs take as
 * their node the ranks that share the host (measure_codec), which is more
 * than hier's node where one host emulates several. */
static int time_node_ranks(MPI_Comm node, double t0, double *elapsed, double *own)
{
    *own = PMPI_Wtime() - t0; /* this rank's part alone */
    const int rc = PMPI_Barrier(node);
    *elapsed = PMPI_Wtime() - t0;
    return rc;
}

/* At the points that fit a cache, after the first run each step's calls
 * a run are raised until the wait at the run's closing barrier is at most
 * a tenth of it (WAIT_SHARE; the run at most CODEC_RUN_S, at most
 * CODEC_MAX_CALLS calls): 8 ranks on 2 cores finish a short step up to
 * 10 ms apart, time slices, and at 16 and 4 calls a run the model put
 * topk's 64 KiB and 1 MiB allgather at 2.3-4.3x their time (8 ranks over
 * shared memory: 35 of 56 predictions within 25 %, 42 with the waits
 * outweighed). Ranks with cores of their own wait microseconds and keep
 * the first counts.
 *
 * The largest point raises only a step whose wait outweighed its own part
 * (RAISE_IF_SKEWED), to a run of at most SKEWED_RUN_S. There, 8 ranks on
 * 2 cores decoded topk's 16 MiB in 1-2 ms each and waited up to 18 ms
 * more at the barrier, and the allgather's model, p decodes, counted that
 * wait p times (topk allgather at 8 ranks, 16 and 64 MiB: 7 of 8 rows of
 * four runs predicted at 1.3-2.3x; 2 of 8 missed after, both under).
 * Where no step waits longer than it works, it keeps one call a
 * run: repeated, its vectors stay in the cache a large gradient misses,
 * and the model put int8's 64 MiB calls at 2 ranks at 0.52-0.62x. */
#define CODEC_RUN_S 0.02
#define SKEWED_RUN_S 0.1
#define WAIT_SHARE 10
#define CODEC_MAX_CALLS 16384
typedef enum { RAISE_WHILE_WAITS, RAISE_IF_SKEWED } raise_rule;
enum { STEP_SCAN, STEP_ENC, STEP_DEC, STEP_SET, STEPS };

/* The codec's points, as the primitives' (a small vector is in cache, a
 * large one streams from memory): its floats, calls a run (short calls
 * repeated so the node's barriers stay a small part of a run, and a run
 * is already a mean), runs. */
static const struct {
    size_t floats;
    int calls, runs;
    raise_rule raise; /* how calls are raised after the first run */
} CODEC_POINTS[] = {
    /* rsag's chunks (64 KiB over 8 ranks) and hier's columns' parts: the
     * line from 64 KiB to 1 MiB gave topk's encode of 8 KiB a fixed cost
     * of 83 us, and rsag's 25 encodes and decodes a call put its 64 KiB
     * calls at 8 ranks at 2-4x their time (0.7-1.45x with this point and
     * the calls a run of more_calls, six runs each). */
    {((size_t)8 << 10) / sizeof(float), 16, REPEATS, RAISE_WHILE_WAITS},
    {((size_t)64 << 10) / sizeof(float), 16, BIG_REPEATS, RAISE_WHILE_WAITS},
    {((size_t)1 << 20) / sizeof(float), 4, BIG_REPEATS, RAISE_WHILE_WAITS},
    {CODEC_FLOATS, 1, BIG_REPEATS, RAISE_IF_SKEWED},
};
enum { CODEC_N_POINTS = sizeof CODEC_POINTS / sizeof CODEC_POINTS[0] };
_Static_assert(CODEC_N_POINTS == CODEC_NP, "a scan, encode and decode figure a point");
_Static_assert(CODEC_N_POINTS <= GCMPI_LIN_KNEES + 1, "a line through every codec point");

/* What sparse_rd does to its vector besides encoding and exchanging: its
 * own set made from its payload (the vector cleared, decoded into, read
 * twice) and a set placed in its output. Its model once counted these as
 * four passes at the input scan's rate, which put sparse_rd at 1.3 to 3.4
 * times its measured time at 34 of 36 points: the scan checks every
 * float, a clear or a count only streams them. */
static int set_passes(gcmpi_coll_ctx *ctx, const void *payload, size_t len, float *out,
                      size_t n, uint32_t *units)
{
    int64_t m = 0;
    const int err = gcmpi_sparse_rd_host.local_set(ctx, payload, len, out, n, units, &m);
    return err ? err : gcmpi_sparse_rd_host.place(units, m, out, n);
}

/* Each step's calls a run from its first run's (the warm-up's): enough
 * that the wait at its closing barrier (took - own: the other ranks
 * finishing later) is at most 1/WAIT_SHARE of the run, and the run at
 * most CODEC_RUN_S long (SKEWED_RUN_S, and only where the wait outweighed
 * the rank's own part, under RAISE_IF_SKEWED); the same on every rank of
 * host, its most. Collective over host. */
static void more_calls(MPI_Comm host, const double *took, const double *own, raise_rule rule,
                       int *calls)
{
    const double cap = rule == RAISE_IF_SKEWED ? SKEWED_RUN_S : CODEC_RUN_S;
    int ranks = 1, want[STEPS], agreed[STEPS];
    PMPI_Comm_size(host, &ranks);
    for (int j = 0; j < STEPS; j++) {
        const double wait = took[j] - own[j];
        /* A call's time in the run: under RAISE_WHILE_WAITS the rank's own
         * work times the host's ranks, as if they shared one core (the
         * time to the barrier holds the wait being outweighed: a step of
         * 1 us calls that waited 10 ms kept 32 calls, and topk's decode of
         * 64 KiB at 8 ranks on 2 cores came out at 50 us, 30 times what it
         * takes in a call). */
        const double per_call =
            (rule == RAISE_WHILE_WAITS ? own[j] * ranks : took[j]) / calls[j];
        double run = WAIT_SHARE * wait;
        if (run > cap) run = cap;
        want[j] = calls[j];
        if (per_call > 0 && per_call * calls[j] < run &&
            (rule == RAISE_WHILE_WAITS || wait > own[j]))
            want[j] = per_call * CODEC_MAX_CALLS < run ? CODEC_MAX_CALLS
                                                       : (int)ceil(run / per_call);
    }
    if (PMPI_Allreduce(want, agreed, STEPS, MPI_INT, MPI_MAX, host) == MPI_SUCCESS)
        memcpy(calls, agreed, sizeof agreed);
}

/* A step's end: its time until every rank of host is done, and this
 * rank's own (after an error, neither). */
static void end_step(MPI_Comm host, double t0, double *took, double *own, int *rc)
{
    if (*rc == MPI_SUCCESS) *rc = time_node_ranks(host, t0, took, own);
}

static double settled_or_0(double *t, int runs)
{
    const double s = settled(t, runs);
    return isfinite(s) ? s : 0.0;
}

/* The codec's figures, each run started and ended by the ranks of host
 * together: the ranks that share this host's cores and memory (MPI's
 * shared-memory split of the communicator), whatever nodes hier was told
 * they form. One host emulating nodes of one rank (bench/netem, 4 ranks
 * on 2 cores) otherwise timed each rank's 16 MiB decode alone, inside one
 * time slice: 12.9 GB/s, where its calls, every rank decoding at once,
 * ran at half that (topk allgather at 64 MiB predicted at 0.62x). */
static void measure_codec(gcmpi_coll_ctx *ctx, MPI_Comm host, double *f, float *x, float *acc,
                          float *residual, uint8_t *payload, size_t cap)
{
    const gcmpi_config *cfg = ctx->cfg;
    const int ef = cfg->ef && !(gc_codec_flags(cfg->codec) & GC_LOSSLESS);
    const int sparse = (gc_codec_flags(cfg->codec) & GC_SPARSE) != 0;
    synthetic_gradient(x, CODEC_FLOATS);
    size_t len = 0;
    int failed = 0;
    for (int k = 0; k < CODEC_N_POINTS; k++) {
        const size_t n = CODEC_POINTS[k].floats;
        const int runs = CODEC_POINTS[k].runs;
        int calls[STEPS];
        for (int j = 0; j < STEPS; j++) calls[j] = CODEC_POINTS[k].calls;
        double t[STEPS][REPEATS];
        for (int i = 0; i < runs; i++) {
            if (ef) memset(residual, 0, n * sizeof(float));
            memset(acc, 0, n * sizeof(float));
            double took[STEPS] = {0}, own[STEPS] = {0};
            int rc = PMPI_Barrier(host);
            double t0 = PMPI_Wtime();
            /* what every compressed call does first */
            for (int c = 0; c < calls[STEP_SCAN]; c++) failed = failed || !gc_all_finite(x, n);
            end_step(host, t0, &took[STEP_SCAN], &own[STEP_SCAN], &rc);
            t0 = PMPI_Wtime();
            for (int c = 0; c < calls[STEP_ENC] && !failed; c++) {
                /* scanned above, as a call's check does: not again */
                len = gc_encode_finite(cfg->codec, x, ef ? residual : NULL, n, &cfg->params, 1,
                                       payload, cap, ctx->ws);
                failed = gc_is_error(len);
            }
            end_step(host, t0, &took[STEP_ENC], &own[STEP_ENC], &rc);
            t0 = PMPI_Wtime();
            for (int c = 0; c < calls[STEP_DEC] && !failed; c++)
                gc_decode_add_as(cfg->codec, payload, len, acc, n, ctx->ws);
            end_step(host, t0, &took[STEP_DEC], &own[STEP_DEC], &rc);
            if (sparse) {
                /* The residual is cleared before the next run's encode:
                 * here it holds the set's units. */
                t0 = PMPI_Wtime();
                for (int c = 0; c < calls[STEP_SET] && !failed; c++)
                    failed = set_passes(ctx, payload, len, acc, n, (uint32_t *)residual) != 0;
                end_step(host, t0, &took[STEP_SET], &own[STEP_SET], &rc);
            }
            const int ok = !failed && rc == MPI_SUCCESS;
            for (int j = 0; j < STEPS; j++) t[j][i] = ok ? took[j] / calls[j] : INFINITY;
            if (i == 0) more_calls(host, took, own, CODEC_POINTS[k].raise, calls);
        }
        f[C_SCAN + k] = settled_or_0(t[STEP_SCAN], runs);
        f[C_ENC + k] = settled_or_0(t[STEP_ENC], runs);
        f[C_DEC + k] = settled_or_0(t[STEP_DEC], runs);
        f[C_SET + k] = sparse ? settled_or_0(t[STEP_SET], runs) : 0.0;
    }
    double slowest_node[C_RATIO - C_SCAN];
    if (PMPI_Allreduce(&f[C_SCAN], slowest_node, C_RATIO - C_SCAN, MPI_DOUBLE, MPI_MAX,
                       ctx->comm) == MPI_SUCCESS)
        memcpy(&f[C_SCAN], slowest_node, sizeof slowest_node);
    const double bytes = (double)(CODEC_FLOATS * sizeof(float));
    f[C_RATIO] = failed || gc_is_error(len) ? 1.0 : (double)len / bytes;
}

/* Bytes MPI sums on the native path per input byte (coll_native.c). */
static double native_ratio(const gcmpi_config *cfg, int p, double payload_ratio)
{
    const char *name = gc_codec_name(cfg->codec);
    if (!gcmpi_codec_has_native_path(cfg->codec) || cfg->params.zstd_level > 0 ||
        (cfg->params.flags & GC_PF_CRC))
        return 0.0;
    if (strcmp(name, "none") == 0) return 1.0;
    if (strcmp(name, "randk") == 0) return cfg->params.ratio;
    if (strcmp(name, "int8") == 0) return (p <= 8 ? 1.0 : p <= 258 ? 2.0 : 4.0) / 4.0;
    return payload_ratio; /* powersgd: P and Q, as its payload */
}

/* This rank's figures (every rank takes part in every measurement). */
static int measure(gcmpi_coll_ctx *ctx, gcmpi_nodes *nodes, double *f)
{
    const gcmpi_config *cfg = ctx->cfg;
    const size_t codec_cap = gc_bound(cfg->codec, CODEC_FLOATS, &cfg->params);
    if (gc_is_error(codec_cap)) return gcmpi_coll_mpi_error(gc_error_code(codec_cap));
    size_t big = LARGE_BYTES > LARGE_GATHER_BYTES * (size_t)ctx->size
                     ? LARGE_BYTES
                     : LARGE_GATHER_BYTES * (size_t)ctx->size;
    if (big < CODEC_FLOATS * sizeof(float)) big = CODEC_FLOATS * sizeof(float);
    if (big < BUCKET_BYTES) big = BUCKET_BYTES; /* pages untouched unless it is timed */
    uint8_t *a = calloc(big, 1), *b = calloc(big, 1), *pay = malloc(codec_cap);
    float *residual = malloc(CODEC_FLOATS * sizeof(float));
    int ok = a && b && pay && residual, all_ok = 0;
    int rc = PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx->comm);
    memset(f, 0, GCMPI_AUTO_FIGURES * sizeof *f);
    if (rc == MPI_SUCCESS && all_ok) {
        measure_comm(ctx->comm, &f[F_AR1], a, b, big);
        if (nodes->leaders != MPI_COMM_NULL && nodes->n_nodes > 1)
            measure_comm(nodes->leaders, &f[B_AR1], a, b, big);
        if (nodes->n_nodes > 1 && nodes->node_size > 1) rc = node_wait_quietly(nodes->node);
        if (rc == MPI_SUCCESS && nodes->n_nodes > 1 && nodes->node_size > 1 &&
            gcmpi_hier_scatter_style(cfg, nodes, 1))
            f[H_COLS] = time_columns(nodes, ctx->comm, a, b);
        if (nodes->node_size > 1 && !gcmpi_hier_scatter_style(cfg, nodes, 1) &&
            !gcmpi_hier_one_node_window(cfg, nodes, 1)) {
            /* Only hier's leader style reduces and broadcasts. */
            f[N_RB1] = time_prim(PRIM_REDUCE_BCAST, nodes->node, a, b, SMALL_BYTES);
            f[N_RB2] = time_prim_n(PRIM_REDUCE_BCAST, nodes->node, a, b, NODE_LARGE_BYTES,
                                   BIG_REPEATS);
        }
        if (nodes->node_size > 1) {
            /* hier's reduce-scatter style costs what its two phases inside
             * the node cost: an allreduce's worth through MPI, or the
             * shared window's (several times less) where hier uses it. */
            if (nodes->shm_possible && cfg->node_shm) {
                int no_room = 0;
                for (int i = 0; i < NODE_N_POINTS; i++) {
                    f[N_AR + i] = time_node_window(nodes, a, b, NODE_POINTS[i].bytes,
                                                   NODE_POINTS[i].runs);
                    no_room = no_room || f[N_AR + i] < 0;
                }
                /* No room for a window (the same on every rank of the
                 * node): hier will go through MPI, timed as such below. */
                if (no_room) gcmpi_hier_window_gone(nodes);
            }
            if (!(nodes->shm_possible && cfg->node_shm))
                for (int i = 0; i < NODE_N_POINTS; i++)
                    f[N_AR + i] = time_prim_n(PRIM_ALLREDUCE, nodes->node, a, b,
                                              NODE_POINTS[i].bytes, NODE_POINTS[i].runs);
        }
        MPI_Comm host = MPI_COMM_NULL;
        const int split = PMPI_Comm_split_type(ctx->comm, MPI_COMM_TYPE_SHARED, 0,
                                               MPI_INFO_NULL, &host);
        if (split == MPI_SUCCESS) {
            measure_codec(ctx, host, f, (float *)a, (float *)b, residual, pay, codec_cap);
            PMPI_Comm_free(&host);
        } else if (rc == MPI_SUCCESS) {
            rc = split;
        }
    } else if (rc == MPI_SUCCESS) {
        rc = MPI_ERR_NO_MEM;
    }
    free(a), free(b), free(pay), free(residual);
    return rc;
}

/* The primitives' lines from one communicator's block of agreed figures
 * (flat or between; gs: the small allgather block on it). */
static gcmpi_prims prims_fit(const double *f, double gs)
{
    const double s = (double)SMALL_BYTES, l = (double)LARGE_BYTES;
    const double gl = (double)LARGE_GATHER_BYTES;
#define AT(fig) f[(fig) - F_AR1]
    const double xr[] = {s, l, AT(F_X), AT(F_X4)}, xg[] = {gs, gl, AT(F_XG)};
    const double xa[] = {s, (double)SMALL_MID_BYTES, l, AT(F_X), AT(F_X4)};
    const double ar[] = {AT(F_AR1), AT(F_ARS), AT(F_AR2), AT(F_AR3), AT(F_AR4)};
    const double ag[] = {AT(F_AG1), AT(F_AG2), AT(F_AG3)};
    const double a2a[] = {AT(F_A2A1), AT(F_A2A2), AT(F_A2A3), AT(F_A2A4)};
    /* The allreduce's largest measured point: past it a byte costs at
     * least its mean (MPI's ring for large messages). */
    double last = l;
    for (int i = 3; i < 5 && xa[i] > last && ar[i] > 0; i++) last = xa[i];
    gcmpi_prims pr = {
        .allreduce = gcmpi_lin_floor_mean(gcmpi_lin_through(xa, ar, 5), last),
        .allgather = gcmpi_lin_through(xg, ag, 3),
        .alltoall = gcmpi_lin_through(xr, a2a, 4),
    };
#undef AT
    return pr;
}

/* Every rank's figures all-gathered, each replaced by its median over the
 * ranks that measured it: the same agreed[] on every rank. */
static int median_over_ranks(gcmpi_coll_ctx *ctx, const double *local, double *agreed)
{
    const int p = ctx->size;
    double *all = malloc((size_t)p * FIGURES * sizeof *all), *col = malloc((size_t)p * sizeof *col);
    int ok = all && col, all_ok = 0;
    int rc = PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (rc == MPI_SUCCESS && !all_ok) rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allgather(local, FIGURES, MPI_DOUBLE, all, FIGURES, MPI_DOUBLE, ctx->comm);
    if (rc == MPI_SUCCESS)
        for (int f = 0; f < FIGURES; f++) {
            /* Over the ranks that measured the figure: only node leaders
             * time the links between nodes, and the others' 0 would
             * otherwise outvote them (a median of 0 is a free link). */
            int k = 0;
            for (int r = 0; r < p; r++)
                if (all[(size_t)r * FIGURES + f] > 0.0) col[k++] = all[(size_t)r * FIGURES + f];
            qsort(col, (size_t)k, sizeof *col, cmp_double);
            agreed[f] = k ? col[(k - 1) / 2] : 0.0; /* every rank sorts the same values */
        }
    free(all);
    free(col);
    return rc;
}

/* The model from agreed figures, measured now or read from the cache. */
static void model_from(gcmpi_coll_ctx *ctx, const gcmpi_nodes *nodes, const double *agreed,
                       gcmpi_auto_model *m)
{
    const gcmpi_config *cfg = ctx->cfg;
    const int p = ctx->size;
    const int nn = nodes->n_nodes;
    const double s = (double)SMALL_BYTES;
    const double gs = (double)(SMALL_BYTES / (size_t)p);
    const double bgs = (double)(SMALL_BYTES / (size_t)(nn > 0 ? nn : 1));
    gcmpi_cost_env *e = &m->env;
    e->p = p;
    e->n_nodes = nn;
    e->flat = prims_fit(&agreed[F_AR1], gs);
    e->between = prims_fit(&agreed[B_AR1], bgs);
    /* Over several nodes a large allreduce of all ranks crosses the link
     * between them: at least at the rate the leaders measured there. */
    e->flat.allreduce.floor_b = gcmpi_ring_crossing_floor(&e->between, p, nn);
    const double nl = (double)NODE_LARGE_BYTES;
    e->reduce_bcast = gcmpi_lin_fit(s, agreed[N_RB1], nl, agreed[N_RB2]);
    double xn[NODE_N_POINTS];
    for (int i = 0; i < NODE_N_POINTS; i++) xn[i] = (double)NODE_POINTS[i].bytes;
    e->node_allreduce = gcmpi_lin_through(xn, &agreed[N_AR], NODE_N_POINTS);
    e->node_size = nodes->max_node_size;
    e->hier_scatter = gcmpi_hier_scatter_style(cfg, nodes, 1);
    e->one_node_window = gcmpi_hier_one_node_window(cfg, nodes, 1);
    /* hier pipelines its allgather between nodes (coll_hier_pipe.c); only
     * the configuration decides, the same on every rank. */
    e->segment_floats = (size_t)(cfg->hier_segment / sizeof(float));
    /* The columns' point against the leaders' line for the same bytes. */
    const double leaders = gcmpi_lin_at(e->between.allgather, (double)columns_lead_bytes(nn));
    e->column_share = agreed[H_COLS] > 0 && leaders > 0 ? agreed[H_COLS] / leaders : 0.0;
    double xc[CODEC_N_POINTS];
    for (int k = 0; k < CODEC_N_POINTS; k++)
        xc[k] = (double)(CODEC_POINTS[k].floats * sizeof(float));
    e->scan = gcmpi_lin_through(xc, &agreed[C_SCAN], CODEC_N_POINTS);
    e->encode = gcmpi_lin_through(xc, &agreed[C_ENC], CODEC_N_POINTS);
    e->decode = gcmpi_lin_through(xc, &agreed[C_DEC], CODEC_N_POINTS);
    e->sets = gcmpi_lin_through(xc, &agreed[C_SET], CODEC_N_POINTS);
    e->payload_ratio = agreed[C_RATIO];
    e->native_ratio = native_ratio(cfg, p, agreed[C_RATIO]);
    e->density = (gc_codec_flags(cfg->codec) & GC_SPARSE) ? cfg->params.ratio : 0.0;
    /* hier's node gather by payloads (coll_hier_pipe.c), from the
     * configuration alone so that every rank's model is the same: a
     * sparse codec's bound per float byte, and the most a window's part
     * is grown to for it. */
    e->kept_part_bytes = GCMPI_NODE_SHM_SHARE_MAX_BYTES;
    e->kept_bound_ratio = 0.0;
    if (e->density > 0 && cfg->node_shm) {
        const size_t floats = (size_t)1 << 18;
        const size_t bound = gc_bound(cfg->codec, floats, &cfg->params);
        if (!gc_is_error(bound)) e->kept_bound_ratio = (double)bound / (double)(floats * sizeof(float));
    }
    m->inner = gcmpi_coll_rule(cfg, 0, nn);
}

int gcmpi_auto_agree(gcmpi_coll_ctx *ctx, const gcmpi_nodes *nodes, const double *local,
                     gcmpi_auto_model *m)
{
    double agreed[FIGURES];
    const int rc = median_over_ranks(ctx, local, agreed);
    if (rc == MPI_SUCCESS) model_from(ctx, nodes, agreed, m);
    return rc;
}

/* ---- choosing ---------------------------------------------------------- */

static gcmpi_nodes *cached_nodes(gcmpi_coll_ctx *ctx, int *rc)
{
    *rc = MPI_SUCCESS;
    if (ctx->cache->nodes) return ctx->cache->nodes;
    *rc = gcmpi_nodes_create(ctx->comm, ctx->cfg->node_size, &ctx->cache->nodes);
    return ctx->cache->nodes;
}

/* Whether cached figures still describe this communicator's link: an
 * allreduce at the block's largest settled point past 1 MiB, run again as
 * the calibration ran it. Between node leaders where there are several
 * nodes: the link between nodes is what changes under the same hosts (a
 * transport, a rate), and on the emulated 2 x 4 cluster the allreduce of
 * all 8 ranks took as long at 10 Gbit/s as at 1 (2 cores' scheduling),
 * where the leaders' alone differ by the link. f is one block (flat or
 * between). Collective over comm; *fresh is the slowest rank's time, the
 * same on all of comm. */
static int check_block(MPI_Comm comm, const double *f, double *cached, double *fresh)
{
    size_t x = (size_t)f[F_X - F_AR1];
    *cached = f[F_AR3 - F_AR1];
    if (!(x > LARGE_BYTES && *cached > 0) || x > BUCKET_BYTES) {
        x = LARGE_BYTES;
        *cached = f[F_AR2 - F_AR1];
    }
    uint8_t *a = calloc(x, 1), *b = calloc(x, 1);
    int ok = a && b, all_ok = 0;
    int rc = PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    *fresh = 0.0;
    if (rc == MPI_SUCCESS && all_ok)
        *fresh = time_prim_n(PRIM_ALLREDUCE, comm, a, b, x, BIG_REPEATS);
    free(a), free(b);
    return rc;
}

/* One check of the cached figures f; *holds the same on every rank. */
static int check_once(gcmpi_coll_ctx *ctx, const gcmpi_nodes *nodes, const double *f,
                      double *cached, double *fresh, int *holds)
{
    int rc;
    if (nodes->n_nodes > 1) {
        double t[2] = {0.0, 0.0};
        rc = MPI_SUCCESS;
        if (nodes->leaders != MPI_COMM_NULL)
            rc = check_block(nodes->leaders, &f[B_AR1], &t[0], &t[1]);
        const int wrc = node_wait_quietly(nodes->node);
        if (rc == MPI_SUCCESS) rc = wrc;
        /* Each leader hands its node the leaders' figures; a failed
         * check reads as 0, which never holds. */
        const int brc = PMPI_Bcast(t, 2, MPI_DOUBLE, 0, nodes->node);
        if (rc == MPI_SUCCESS) rc = brc;
        *cached = t[0], *fresh = t[1];
    } else {
        rc = check_block(ctx->comm, &f[F_AR1], cached, fresh);
    }
    /* Every rank must agree on the verdict, a failure included. */
    int mine = rc == MPI_SUCCESS && gcmpi_auto_cache_agrees(*cached, *fresh), all = 0;
    const int arc = PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, ctx->comm);
    *holds = arc == MPI_SUCCESS && all;
    return arc;
}

/* Rank 0 writes the model's figures and settled trials to its cache file
 * (GCMPI_AUTO_CACHE); m->cache_saved says how it went. */
static void save_cached(gcmpi_auto_model *m)
{
    if (!m->cache) return;
    m->cache_saved = gcmpi_auto_cache_save(m->cache, &m->cached, m->calibration_s) == 0 ? 1 : -1;
}

/* The check, and once more if it failed: three runs can be slowed by a
 * passing load, which a second check is unlikely to meet again, where a
 * changed link fails both. */
static int cached_figures_hold(gcmpi_coll_ctx *ctx, const gcmpi_nodes *nodes, const double *f,
                               double *cached, double *fresh, int *holds)
{
    int rc = check_once(ctx, nodes, f, cached, fresh, holds);
    if (rc == MPI_SUCCESS && !*holds) rc = check_once(ctx, nodes, f, cached, fresh, holds);
    return rc;
}

int gcmpi_auto_model_of(gcmpi_coll_ctx *ctx, gcmpi_auto_model **out)
{
    *out = NULL;
    if (!ctx->cache) return MPI_ERR_INTERN;
    if (ctx->cache->model) {
        *out = ctx->cache->model;
        return MPI_SUCCESS;
    }
    int rc;
    gcmpi_nodes *nodes = cached_nodes(ctx, &rc);
    if (rc != MPI_SUCCESS) return rc;
    gcmpi_auto_model *m = calloc(1, sizeof *m);
    gcmpi_auto_cache *cache = malloc(sizeof *cache);
    int ok = m != NULL && cache != NULL, all_ok = 0;
    rc = PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (rc == MPI_SUCCESS && !all_ok) rc = MPI_ERR_NO_MEM;
    const double t0 = PMPI_Wtime();
    int found = 0;
    if (rc == MPI_SUCCESS)
        rc = gcmpi_auto_cache_lookup(ctx->cfg, ctx->comm, nodes, "allreduce", cache, &m->cached,
                                     &found);
    if (rc == MPI_SUCCESS && found) {
        rc = cached_figures_hold(ctx, nodes, m->cached.figures, &m->check_cached_s,
                                 &m->check_fresh_s, &found);
        m->source = found ? GCMPI_AUTO_CACHED : GCMPI_AUTO_REMEASURED;
    }
    if (rc == MPI_SUCCESS && !found) {
        /* Measured now: no trial's outcome of the old figures holds. */
        double local[FIGURES];
        memset(&m->cached, 0, sizeof m->cached);
        rc = measure(ctx, nodes, local);
        if (rc == MPI_SUCCESS) rc = median_over_ranks(ctx, local, m->cached.figures);
    }
    if (rc == MPI_SUCCESS) {
        model_from(ctx, nodes, m->cached.figures, m);
        m->calibration_s = PMPI_Wtime() - t0;
        if (cache->on) {
            snprintf(m->cache_file, sizeof m->cache_file, "%s", cache->path);
            m->cache = cache;
            cache = NULL;
            if (!found) save_cached(m);
        }
    }
    free(cache);
    if (rc != MPI_SUCCESS) {
        free(m->cache);
        free(m);
        return rc;
    }
    ctx->cache->model = m;
    *out = m;
    return MPI_SUCCESS;
}

int gcmpi_auto_candidates(const gcmpi_config *cfg, const gcmpi_cost_env *e, gcmpi_algo *out)
{
    int n = 0;
    out[n++] = GCMPI_ALGO_PASS;
    out[n++] = GCMPI_ALGO_ALLGATHER;
    out[n++] = GCMPI_ALGO_RSAG;
    if (e->native_ratio > 0 && gcmpi_coll_supports(cfg->codec, GCMPI_ALGO_NATIVE))
        out[n++] = GCMPI_ALGO_NATIVE;
    out[n++] = GCMPI_ALGO_HIER;
    if (gcmpi_coll_supports(cfg->codec, GCMPI_ALGO_SPARSE_RD)) out[n++] = GCMPI_ALGO_SPARSE_RD;
    return n;
}

gcmpi_algo gcmpi_auto_pick(const gcmpi_config *cfg, const gcmpi_auto_model *m, size_t count,
                           double *predicted)
{
    gcmpi_algo cand[GCMPI_ALGO_COUNT];
    const int n = gcmpi_auto_candidates(cfg, &m->env, cand);
    return gcmpi_cost_pick(&m->env, cand, n, m->inner, (double)count * sizeof(float), predicted);
}

gcmpi_auto_choice *gcmpi_auto_row(gcmpi_auto_choice *rows, int *n, size_t count, int add)
{
    for (int i = 0; i < *n; i++)
        if (rows[i].count == count) return &rows[i];
    if (!add || *n == GCMPI_AUTO_MAX_CHOICES) return NULL;
    gcmpi_auto_choice *c = &rows[(*n)++];
    memset(c, 0, sizeof *c);
    c->count = count;
    return c;
}

gcmpi_cost_env gcmpi_auto_env_at(const gcmpi_config *cfg, const gcmpi_auto_model *m, double ratio)
{
    gcmpi_cost_env e = m->env;
    const double configured = cfg->params.ratio;
    if (e.density > 0 && ratio > 0 && configured > 0 && ratio != configured) {
        e.payload_ratio *= ratio / configured;
        e.kept_bound_ratio *= ratio / configured;
        e.density = ratio;
    }
    return e;
}

/* A new row (or one whose ratio moved): the model's pick, its runners-up
 * and passthrough to try. */
/* Whether a's kept fraction is within a re-trial of b's (both the same
 * for codecs without one). */
static int same_ratio(double a, double b)
{
    if (!(a > 0) || !(b > 0)) return a == b;
    return (a > b ? a / b : b / a) < GCMPI_AUTO_RETRIAL_FACTOR;
}

/* How far apart two call sizes are, as a factor (>= 1). */
static double sizes_apart(size_t a, size_t b)
{
    return a > b ? (double)a / (double)b : (double)b / (double)a;
}

/* Whether size is within GCMPI_AUTO_BAND of count and nearer to it than
 * best (0: none yet; of two as near, the earlier stays). */
static int nearer_in_band(size_t size, size_t count, size_t best)
{
    const double apart = sizes_apart(size, count);
    return apart <= GCMPI_AUTO_BAND && (!best || apart < sizes_apart(best, count));
}

/* The row a call of count floats at kept fraction ratio takes: its own
 * size's, else the nearest within GCMPI_AUTO_BAND tried at the same
 * fraction (the earlier of two as near), else, with add and room, a new
 * row of its own; NULL otherwise. The same on every rank: the table, the
 * count and the ratio are. */
static gcmpi_auto_choice *choice_row(gcmpi_auto_model *m, size_t count, double ratio, int add)
{
    gcmpi_auto_choice *near = NULL;
    for (int i = 0; i < m->n_choices; i++) {
        gcmpi_auto_choice *c = &m->choices[i];
        if (c->count == count) return c;
        if (same_ratio(c->ratio, ratio) && nearer_in_band(c->count, count, near ? near->count : 0))
            near = c;
    }
    if (near || !add) return near;
    return gcmpi_auto_row(m->choices, &m->n_choices, count, 1); /* a new row */
}

/* The cached trial outcome for count at the call's kept fraction: its
 * own size's, else (neighbours) the nearest within GCMPI_AUTO_BAND as
 * choice_row finds rows; NULL for none. The same on every rank: the
 * table and the ratio are. */
static const gcmpi_auto_settled *cached_outcome(const gcmpi_auto_model *m, size_t count,
                                                double ratio, int neighbours)
{
    const gcmpi_auto_settled *near = NULL;
    for (int i = 0; i < m->cached.n_settled; i++) {
        const gcmpi_auto_settled *s = &m->cached.settled[i];
        if (!same_ratio(s->ratio, ratio)) continue;
        if (s->count == count) return s;
        if (neighbours && nearer_in_band(s->count, count, near ? near->count : 0)) near = s;
    }
    return near;
}

/* A call of count floats timed at seconds on algo, as a call of row c's
 * size would have taken by the model (linearly where it predicts
 * nothing): a band's calls then compare and add up as the row's own. */
static double scaled_to_row(const gcmpi_coll_ctx *ctx, const gcmpi_auto_model *m,
                            const gcmpi_auto_choice *c, size_t count, gcmpi_algo algo,
                            double seconds)
{
    const gcmpi_cost_env env = gcmpi_auto_env_at(ctx->cfg, m, c->ratio);
    const double own = gcmpi_cost_predict(&env, algo, m->inner, (double)c->count * sizeof(float));
    const double at = gcmpi_cost_predict(&env, algo, m->inner, (double)count * sizeof(float));
    if (own > 0 && at > 0 && isfinite(own) && isfinite(at)) return seconds * own / at;
    return seconds * (double)c->count / (double)count;
}

/* A settled trial into the cache's table (replacing the outcome of the
 * same size and kept fraction, not a neighbour's), saved by rank 0. */
static void remember_outcome(gcmpi_auto_model *m, const gcmpi_auto_choice *c)
{
    gcmpi_auto_settled *row = (gcmpi_auto_settled *)cached_outcome(m, c->count, c->ratio, 0);
    if (!row && m->cached.n_settled < GCMPI_AUTO_MAX_CHOICES)
        row = &m->cached.settled[m->cached.n_settled++];
    if (!row) return;
    row->count = c->count;
    row->ratio = c->ratio;
    row->algo = c->algo;
    row->median_s = gcmpi_auto_settled_median(c);
    save_cached(m);
}

/* A settled row back to an untried one at kept fraction ratio (its next
 * pick starts a trial), one more retrial counted. */
static void start_over(gcmpi_auto_choice *c, double ratio)
{
    const int retrials = c->retrials + 1, drift_retrials = c->drift_retrials;
    const size_t count = c->count;
    memset(c, 0, sizeof *c);
    c->count = count;
    c->ratio = ratio;
    c->retrials = retrials;
    c->drift_retrials = drift_retrials;
}

_Static_assert((GCMPI_AUTO_DRIFT_CALLS & (GCMPI_AUTO_DRIFT_CALLS - 1)) == 0,
               "checks fall on powers of two");

/* At a settled pick (every rank picks every call, so every rank gets here
 * at the same call): at the checking counts, the slowest rank's median of
 * its latest settled calls against the trial's medians, and the size
 * tried again where the settled algorithm has fallen behind
 * (GCMPI_AUTO_DRIFT in coll.h). Not for a cached outcome (no trial
 * medians) nor under the adaptive layer, whose ratio moves call by call
 * on each rank's own link time. Returns an MPI error code. */
static int check_drift(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c)
{
    const double chosen = gcmpi_auto_settled_median(c);
    if (!(chosen > 0) || c->retrials >= GCMPI_AUTO_RETRIALS ||
        gc_adapt_active(&ctx->cfg->adapt))
        return MPI_SUCCESS;
    /* At settled picks 16, 32, 64, ...: a handful of checks in a long job. */
    const uint64_t picks = ++c->picks;
    if (picks < GCMPI_AUTO_DRIFT_CALLS || (picks & (picks - 1)) != 0) return MPI_SUCCESS;
    double t[GCMPI_AUTO_DRIFT_CALLS], mine = 0.0, agreed = 0.0;
    const unsigned k = c->drift_n < GCMPI_AUTO_DRIFT_CALLS ? c->drift_n : GCMPI_AUTO_DRIFT_CALLS;
    memcpy(t, c->drift_s, k * sizeof t[0]);
    qsort(t, k, sizeof t[0], cmp_double);
    if (k) mine = t[(k - 1) / 2];
    c->drift_n = 0;
    const double t0 = PMPI_Wtime();
    const int rc = PMPI_Allreduce(&mine, &agreed, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    if (ctx->stats) ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;
    double other = INFINITY, cost = 0.0;
    for (int i = 0; i < c->n_trial; i++) {
        if (c->trial[i] == c->algo || c->trial_calls[i] <= 0) continue;
        if (c->trial_median_s[i] < other) other = c->trial_median_s[i];
        if (c->trial_median_s[i] > chosen)
            cost += c->trial_calls[i] * (c->trial_median_s[i] - chosen);
    }
    /* A new trial costs about what the last one's other candidates took
     * beyond the settled algorithm; it runs only when the calls since the
     * previous check lost at least that against their trial, so re-trials
     * never cost more than the drift they answer: a size of 0.02 ms calls
     * whose candidates take 0.15 ms is not tried again over 16 calls that
     * took 0.1 ms. */
    const double since = picks > GCMPI_AUTO_DRIFT_CALLS ? (double)picks / 2 : (double)picks;
    if (agreed > (1.0 + GCMPI_AUTO_DRIFT) * chosen &&
        agreed > (1.0 + GCMPI_AUTO_MARGIN) * other && (agreed - chosen) * since >= cost) {
        start_over(c, c->ratio);
        c->drifted = 1;
        c->drift_retrials++;
    }
    return MPI_SUCCESS;
}

static void start_trial(gcmpi_coll_ctx *ctx, gcmpi_auto_model *m, gcmpi_auto_choice *c)
{
    gcmpi_algo cand[GCMPI_ALGO_COUNT], rest[GCMPI_ALGO_COUNT];
    /* The call's kept fraction (GCMPI_WARMUP's, or the configured one). */
    if (!(c->ratio > 0)) c->ratio = ctx->cfg->params.ratio;
    const gcmpi_cost_env env = gcmpi_auto_env_at(ctx->cfg, m, c->ratio);
    const int n = gcmpi_auto_candidates(ctx->cfg, &env, cand);
    const double bytes = (double)c->count * sizeof(float);
    c->model = gcmpi_cost_pick(&env, cand, n, m->inner, bytes, &c->predicted_s);
    c->algo = c->model;
    /* A job with the same key tried this size at this fraction and
     * settled: its outcome, without the trial's calls of the slower
     * candidates (on the emulated cluster 2-3 s of a 14 s epoch). */
    const gcmpi_auto_settled *known =
        c->drifted ? NULL : cached_outcome(m, c->count, c->ratio, 1);
    if (known) {
        c->algo = known->algo;
        c->settled = 1;
        c->from_cache = 1;
        return;
    }
    c->trial[c->n_trial++] = c->model;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (cand[i] != c->model && cand[i] != GCMPI_ALGO_PASS) rest[k++] = cand[i];
    /* The runners-up in the model's order, as many as leave room for
     * passthrough: at 1 Gbit/s and 8 ranks the model put allgather first
     * and rsag third, and rsag was 3x faster. */
    const int room = GCMPI_AUTO_TRIALS - (c->model != GCMPI_ALGO_PASS);
    while (c->n_trial < room && k > 0) {
        double t;
        const gcmpi_algo next = gcmpi_cost_pick(&env, rest, k, m->inner, bytes, &t);
        if (!isfinite(t)) break; /* none of the rest can run */
        c->trial[c->n_trial++] = next;
        int j = 0;
        for (int i = 0; i < k; i++)
            if (rest[i] != next) rest[j++] = rest[i];
        k = j;
    }
    if (c->model != GCMPI_ALGO_PASS) c->trial[c->n_trial++] = GCMPI_ALGO_PASS;
    c->settled = c->n_trial == 1;
}

/* Every candidate has had its calls: the fastest by the slowest rank's
 * median call (one PMPI_Allreduce, MAX), the same choice on every rank.
 * The median, not the best call: with 8 ranks on 2 cores a CPU-heavy
 * candidate's calls vary most, and its one lucky call won the trial while
 * its typical call lost to passthrough by 1.8x. */
int gcmpi_auto_agree_medians(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c)
{
    /* The medians, and last whether this rank's calls were on device
     * buffers (MAX: any rank's). */
    double mine[GCMPI_AUTO_TRIALS + 1], agreed[GCMPI_AUTO_TRIALS + 1];
    for (int i = 0; i < c->n_trial; i++) {
        double t[GCMPI_AUTO_TRIAL_CALLS];
        const int k = c->trial_calls[i];
        memcpy(t, c->trial_s[i], (size_t)k * sizeof t[0]);
        qsort(t, (size_t)k, sizeof t[0], cmp_double);
        mine[i] = k ? t[(k - 1) / 2] : 0.0;
    }
    mine[c->n_trial] = c->device;
    const double t0 = PMPI_Wtime();
    int rc = PMPI_Allreduce(mine, agreed, c->n_trial + 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    if (ctx->stats) ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;
    memcpy(c->trial_median_s, agreed, (size_t)c->n_trial * sizeof agreed[0]);
    c->device = agreed[c->n_trial] > 0;
    return MPI_SUCCESS;
}

static int settle(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c)
{
    int rc = gcmpi_auto_agree_medians(ctx, c);
    if (rc != MPI_SUCCESS) return rc;
    const double *agreed = c->trial_median_s;
    /* What may be kept: passthrough and the exact candidates (hier inside
     * one node's window) as they are, a lossy one only when it beats
     * passing through by the margin: a gain inside the noise of a few
     * calls is not worth the codec's error, and a wrong call there loses
     * to native. */
    int pass = -1;
    for (int i = 0; i < c->n_trial; i++)
        if (c->trial[i] == GCMPI_ALGO_PASS) pass = i;
    int ok[GCMPI_AUTO_TRIALS], best = -1;
    for (int i = 0; i < c->n_trial; i++) {
        ok[i] = pass < 0 || gcmpi_coll_exact(ctx, c->trial[i], c->count) ||
                agreed[i] < (1.0 - GCMPI_AUTO_MARGIN) * agreed[pass];
        if (ok[i] && (best < 0 || agreed[i] < agreed[best])) best = i;
    }
    /* Three calls each do not tell apart candidates within GCMPI_AUTO_TIE
     * of the fastest (at 64 MiB over shared memory, 2 ranks, the trial put
     * hier, native and passthrough within 3 %, and their settled calls then
     * took 16.8, 21.1 and 35 ms): among those the model's fastest, a
     * figure measured apart from those few calls. Not where a rank's
     * calls were on device buffers: the model's codec rates and its
     * passthrough are the host's (no GPU kernels, no staging), so there
     * the trial's fastest stands. */
    const gcmpi_auto_model *m = ctx->cache->model;
    const gcmpi_cost_env env = gcmpi_auto_env_at(ctx->cfg, m, c->ratio);
    const double bytes = (double)c->count * sizeof(float);
    double best_model = gcmpi_cost_predict(&env, c->trial[best], m->inner, bytes);
    const double band = (1.0 + GCMPI_AUTO_TIE) * agreed[best];
    for (int i = 0; i < c->n_trial && !c->device; i++) {
        if (i == best || !ok[i] || !(agreed[i] <= band)) continue;
        const double t = gcmpi_cost_predict(&env, c->trial[i], m->inner, bytes);
        if (t < best_model) {
            best_model = t;
            best = i;
        }
    }
    c->algo = c->trial[best];
    c->settled = 1;
    remember_outcome(ctx->cache->model, c);
    return MPI_SUCCESS;
}

/* Calls each candidate may run so far: one until the rounds are agreed. */
static int rounds_of(const gcmpi_auto_choice *c)
{
    return c->trial_rounds ? c->trial_rounds : 1;
}

/* After the first round: as many rounds as fit the budget by the slowest
 * rank's round (every rank's trial calls are the same calls). */
static int agree_rounds(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c)
{
    double mine = 0.0, round = 0.0;
    for (int i = 0; i < c->n_trial; i++) mine += c->trial_s[i][0];
    const double t0 = PMPI_Wtime();
    const int rc = PMPI_Allreduce(&mine, &round, 1, MPI_DOUBLE, MPI_MAX, ctx->comm);
    if (ctx->stats) ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;
    const double fit = round > 0 ? GCMPI_AUTO_TRIAL_BUDGET_S / round : GCMPI_AUTO_TRIAL_CALLS;
    c->trial_rounds = fit >= GCMPI_AUTO_TRIAL_CALLS       ? GCMPI_AUTO_TRIAL_CALLS
                      : fit <= GCMPI_AUTO_TRIAL_MIN_CALLS ? GCMPI_AUTO_TRIAL_MIN_CALLS
                                                          : (int)fit;
    return MPI_SUCCESS;
}

/* After the second round (every rank at the same call): each candidate's
 * better call of the two, the slowest rank's (one PMPI_Allreduce, MAX);
 * those more than GCMPI_AUTO_PRUNE times the fastest's are left out, and
 * their remaining calls' time goes to the others as more rounds. The same
 * on every rank. */
static int prune(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c)
{
    double mine[GCMPI_AUTO_TRIALS], best[GCMPI_AUTO_TRIALS];
    for (int i = 0; i < c->n_trial; i++) mine[i] = fmin(c->trial_s[i][0], c->trial_s[i][1]);
    const double t0 = PMPI_Wtime();
    const int rc = PMPI_Allreduce(mine, best, c->n_trial, MPI_DOUBLE, MPI_MAX, ctx->comm);
    if (ctx->stats) ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;
    c->trial_pruned = 1;
    double fastest = INFINITY, saved = 0.0, live = 0.0;
    int left = 0;
    for (int i = 0; i < c->n_trial; i++) fastest = fmin(fastest, best[i]);
    for (int i = 0; i < c->n_trial; i++) {
        c->trial_dropped[i] = best[i] > GCMPI_AUTO_PRUNE * fastest;
        if (c->trial_dropped[i]) saved += (c->trial_rounds - 2) * best[i];
        else live += best[i], left++;
    }
    if (left == 1) {
        c->trial_rounds = 2; /* nothing left to tell apart */
    } else if (saved > 0 && live > 0) {
        const double more = floor(saved / live);
        const int room = GCMPI_AUTO_TRIAL_CALLS - c->trial_rounds;
        c->trial_rounds += more < room ? (int)more : room;
    }
    return MPI_SUCCESS;
}

int gcmpi_auto_next_candidate(gcmpi_coll_ctx *ctx, gcmpi_auto_choice *c, int *rc)
{
    *rc = MPI_SUCCESS;
    for (;;) {
        if (c->trial_rounds > 2 && !c->trial_pruned) {
            int second = 1;
            for (int i = 0; i < c->n_trial; i++) second = second && c->trial_calls[i] >= 2;
            if (second) {
                *rc = prune(ctx, c);
                if (*rc != MPI_SUCCESS) return -1;
            }
        }
        /* Round robin (the candidate with the fewest calls so far): a load
         * that comes and goes then falls on every candidate alike instead
         * of on whichever ran in its block of calls. */
        int next = -1;
        for (int i = 0; i < c->n_trial; i++)
            if (!c->trial_dropped[i] && c->trial_calls[i] < rounds_of(c) &&
                (next < 0 || c->trial_calls[i] < c->trial_calls[next]))
                next = i;
        if (next >= 0 || c->trial_rounds) return next;
        *rc = agree_rounds(ctx, c);
        if (*rc != MPI_SUCCESS) return -1;
    }
}

gcmpi_algo gcmpi_coll_pick(gcmpi_coll_ctx *ctx, size_t count, int *rc)
{
    *rc = MPI_SUCCESS;
    if (ctx->cfg->algo != GCMPI_ALGO_AUTO || !ctx->cache || count == 0)
        return gcmpi_coll_choose(ctx->cfg, count, ctx->size);
    gcmpi_auto_model *m;
    *rc = gcmpi_auto_model_of(ctx, &m);
    if (*rc != MPI_SUCCESS) return GCMPI_ALGO_PASS;
    gcmpi_auto_choice *c = choice_row(m, count, ctx->cfg->params.ratio, 1);
    if (!c) return gcmpi_auto_pick(ctx->cfg, m, count, NULL); /* table full: the model */
    if (c->settled) {
        *rc = check_drift(ctx, c);
        if (*rc != MPI_SUCCESS) return GCMPI_ALGO_PASS;
    }
    if (c->n_trial == 0) start_trial(ctx, m, c);
    if (c->settled) return c->algo;
    const int next = gcmpi_auto_next_candidate(ctx, c, rc);
    if (*rc != MPI_SUCCESS) return GCMPI_ALGO_PASS;
    if (next >= 0) return c->trial[next];
    *rc = settle(ctx, c);
    return *rc == MPI_SUCCESS ? c->algo : GCMPI_ALGO_PASS;
}

int gcmpi_auto_in_trial(gcmpi_coll_ctx *ctx, size_t count)
{
    if (ctx->cfg->algo != GCMPI_ALGO_AUTO || !ctx->cache || !ctx->cache->model) return 0;
    const gcmpi_auto_choice *c = choice_row(ctx->cache->model, count, ctx->cfg->params.ratio, 0);
    return c && !c->settled;
}

/* A settled row whose sparse codec now keeps another fraction than in its
 * trial starts over at the next call. ratio is the call's, the same on
 * every rank under GCMPI_WARMUP (a function of the call's position), so
 * every rank starts over at once; not under the adaptive layer, whose
 * GCMPI_RATIO=auto follows each rank's own link time. */
static void retrial_if_moved(const gcmpi_config *cfg, gcmpi_auto_choice *c, double ratio)
{
    if (!(gc_codec_flags(cfg->codec) & GC_SPARSE) || gc_adapt_active(&cfg->adapt) ||
        !(c->ratio > 0) || !(ratio > 0))
        return;
    const double moved = ratio > c->ratio ? ratio / c->ratio : c->ratio / ratio;
    if (moved < GCMPI_AUTO_RETRIAL_FACTOR || c->retrials >= GCMPI_AUTO_RETRIALS) return;
    start_over(c, ratio);
}

void gcmpi_auto_note(gcmpi_coll_ctx *ctx, size_t count, gcmpi_algo algo, double seconds)
{
    if (ctx->cfg->algo != GCMPI_ALGO_AUTO || !ctx->cache || !ctx->cache->model) return;
    gcmpi_auto_model *m = ctx->cache->model;
    const double ratio = ctx->cfg->params.ratio;
    gcmpi_auto_choice *c = choice_row(m, count, ratio, 0);
    if (!c) return;
    if (c->count != count) { /* a neighbour's row: its band */
        seconds = scaled_to_row(ctx, m, c, count, algo, seconds);
        if (!c->band_calls++) c->band_min = c->band_max = count;
        if (count < c->band_min) c->band_min = count;
        if (count > c->band_max) c->band_max = count;
        gcmpi_auto_record(c, algo, seconds, ctx->on_device);
        return; /* the row's own calls move its fraction and retrials */
    }
    if (!c->settled) c->ratio = ratio;
    gcmpi_auto_record(c, algo, seconds, ctx->on_device);
    if (c->settled && c->algo == algo) retrial_if_moved(ctx->cfg, c, ratio);
}

double gcmpi_auto_settled_median(const gcmpi_auto_choice *c)
{
    if (!c->settled || c->from_cache) return 0.0;
    for (int i = 0; i < c->n_trial; i++)
        if (c->trial[i] == c->algo && c->trial_calls[i] > 0) return c->trial_median_s[i];
    return 0.0;
}

void gcmpi_auto_record(gcmpi_auto_choice *c, gcmpi_algo algo, double seconds, int on_device)
{
    if (!c->settled) {
        if (on_device) c->device = 1;
        for (int i = 0; i < c->n_trial; i++)
            if (c->trial[i] == algo && c->trial_calls[i] < rounds_of(c)) {
                c->trial_s[i][c->trial_calls[i]++] = seconds;
                return;
            }
        return;
    }
    if (c->algo != algo) return;
    c->calls++;
    c->measured_s += seconds;
    c->drift_s[c->drift_n++ % GCMPI_AUTO_DRIFT_CALLS] = seconds;
}
