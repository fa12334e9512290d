/* cost_model.c — the compositions of cost_model.h. */
#include "cost_model.h"

#include <math.h>

/* sparse_rd's own work: dense adds once its union is dense are memory
 * bound (~5 GB/s of vector), a merge of two sorted (index, value) lists
 * streams each entry once (~3 ns). Besides, its own set goes through the
 * dense vector DENSE_PASSES times (cleared, two reads to make the sorted
 * set, cleared for the result): where the library measured those passes
 * (env->sets) it takes them; else each a pass like the input scan, or at
 * 5 GB/s with the result's copy on top where no scan was measured (the
 * scale tool's alpha-beta figures). */
#define DENSE_ADD_S_PER_BYTE 2e-10
#define MERGE_S_PER_ENTRY 3e-9
#define DENSE_PASSES 4
/* A sparse entry on the wire: uint32 index + float value. */
#define SPARSE_ENTRY_BYTES 8.0
/* Bytes of a payload-size exchange. */
#define SIZE_BYTES 8.0

static double log2_ceil(int p)
{
    return p > 1 ? ceil(log2((double)p)) : 0.0;
}

/* A point-to-point message of x bytes, read off the allgather line: its
 * latency term is log2(p) messages, its bandwidth term p - 1 blocks. */
static double p2p(const gcmpi_cost_env *e, double x)
{
    const double l = log2_ceil(e->p);
    const gcmpi_lin ag = e->flat.allgather;
    return (l > 0 ? ag.a / l : ag.a) + (e->p > 1 ? ag.b / (e->p - 1) : ag.b) * x;
}

static double enc(const gcmpi_cost_env *e, double bytes)
{
    return gcmpi_lin_at(e->encode, bytes);
}

static double dec(const gcmpi_cost_env *e, double bytes)
{
    return gcmpi_lin_at(e->decode, bytes);
}

/* The codec work of a flat algorithm on bytes, with its scan of them. */
static double flat_compute(const gcmpi_cost_env *e, int p, gcmpi_algo algo, double bytes)
{
    const double scan = gcmpi_lin_at(e->scan, bytes);
    switch (algo) {
    case GCMPI_ALGO_ALLGATHER: return scan + enc(e, bytes) + p * dec(e, bytes);
    case GCMPI_ALGO_RSAG: /* p chunks encoded, p decoded into this rank's, it
                             scanned (a sum, not the checked input) and
                             re-encoded, p reduced chunks decoded */
        return scan + gcmpi_lin_at(e->scan, bytes / p) + (p + 1) * enc(e, bytes / p) +
               2 * p * dec(e, bytes / p);
    case GCMPI_ALGO_NATIVE: return scan + enc(e, bytes) + dec(e, bytes);
    default: return 0.0;
    }
}

/* Its communication. */
static double flat_comm(const gcmpi_cost_env *e, const gcmpi_prims *pr, int p, gcmpi_algo algo,
                        double bytes)
{
    const double c = e->payload_ratio * bytes;
    switch (algo) {
    case GCMPI_ALGO_PASS: return gcmpi_lin_at(pr->allreduce, bytes);
    case GCMPI_ALGO_ALLGATHER:
        return gcmpi_lin_at(pr->allgather, SIZE_BYTES) + gcmpi_lin_at(pr->allgather, c);
    case GCMPI_ALGO_RSAG:
        return gcmpi_lin_at(pr->alltoall, SIZE_BYTES * p) + gcmpi_lin_at(pr->alltoall, c) +
               gcmpi_lin_at(pr->allgather, SIZE_BYTES) + gcmpi_lin_at(pr->allgather, c / p);
    case GCMPI_ALGO_NATIVE:
        if (e->native_ratio <= 0) return INFINITY;
        return gcmpi_lin_at(pr->allreduce, e->native_ratio * bytes);
    default: return INFINITY;
    }
}

static double flat_cost(const gcmpi_cost_env *e, const gcmpi_prims *pr, int p, gcmpi_algo algo,
                        double bytes)
{
    return flat_compute(e, p, algo, bytes) + flat_comm(e, pr, p, algo, bytes);
}

/* SparCML's SSAR_Rec_Dbl / DSAR: round r exchanges the union of 2^r
 * contributions; with independent supports its density is
 * 1 - (1 - d)^(2^r). A union travels as entries until entries would
 * outweigh the dense vector, then dense. p not a power of two: one extra
 * exchange folds the ranks above the power in, and one sends them the
 * result. */
static double sparse_rd_cost(const gcmpi_cost_env *e, double bytes)
{
    const double d = e->density;
    if (d <= 0 || e->p < 2) return INFINITY;
    const double n = bytes / 4.0;
    const int rounds = (int)floor(log2((double)e->p));
    const int folded = e->p != (1 << rounds);
    const double per_entry = MERGE_S_PER_ENTRY;
    /* the scan, this rank's own set encoded and added, its dense passes */
    const double scan = gcmpi_lin_at(e->scan, bytes);
    const double pass = scan > 0 ? scan : DENSE_ADD_S_PER_BYTE * bytes;
    const double sets = gcmpi_lin_at(e->sets, bytes);
    const int measured = sets > 0;
    double t = scan + enc(e, bytes) + (measured ? sets : dec(e, bytes) + DENSE_PASSES * pass);
    double dens = d;
    for (int r = -folded; r < rounds; r++) {
        const double entries = dens * n;
        const int dense = entries * SPARSE_ENTRY_BYTES > bytes;
        const double wire = dense ? bytes : entries * SPARSE_ENTRY_BYTES;
        t += 2 * p2p(e, SIZE_BYTES) + p2p(e, wire);
        t += dense ? DENSE_ADD_S_PER_BYTE * bytes : per_entry * 2 * entries;
        dens = 1.0 - (1.0 - dens) * (1.0 - dens);
    }
    if (folded) t += p2p(e, dens * n * SPARSE_ENTRY_BYTES > bytes ? bytes : dens * n * SPARSE_ENTRY_BYTES);
    /* The result placed in the output: the measured passes placed this
     * rank's own set, the union's further entries cost their scatter (a
     * dense union's copy streams like the clear it replaces). */
    if (measured)
        return t + (dens * SPARSE_ENTRY_BYTES * n > bytes ? 0.0 : per_entry * (dens - d) * n);
    return t + DENSE_ADD_S_PER_BYTE * bytes; /* the final scatter into the output */
}

/* The pipelined node's gather of the sums: the window's allgather of
 * floats (floats, its share of the node's measured allreduce), or where
 * the columns' payloads are kept and small enough the other chunks
 * decoded from them: each segment of each zeroed (a pass like the scan)
 * and every member's payload added. */
static double gather_cost(const gcmpi_cost_env *e, double bytes, int segs, double floats)
{
    const int q = e->node_size;
    if (e->kept_bound_ratio <= 0 || q < 2) return floats;
    const double chunk = bytes / q, seg = chunk / segs;
    const size_t cap = gcmpi_hier_kept_cap(segs, (size_t)e->n_nodes,
                                           (size_t)(e->kept_bound_ratio * seg));
    if (!gcmpi_hier_kept_fits(cap, (size_t)chunk, e->kept_part_bytes)) return floats;
    return (q - 1) * (segs * (gcmpi_lin_at(e->scan, seg) + e->n_nodes * dec(e, seg)));
}

/* hier's reduce-scatter style: the window's two phases, the inner
 * algorithm's compute on a chunk and its communication of the whole
 * vector's payload; pipelined, the reduce-scatter and the compute of one
 * segment overlap the communication of the one before. */
static double hier_scatter_cost(const gcmpi_cost_env *e, gcmpi_algo inner, double bytes)
{
    const double node = gcmpi_lin_at(e->node_allreduce, bytes);
    const double compute = flat_compute(e, e->n_nodes, inner, bytes / e->node_size);
    const double share = e->column_share > 0 ? e->column_share : 1.0;
    const double comm = share * flat_comm(e, &e->between, e->n_nodes, inner, bytes);
    const int segs = inner == GCMPI_ALGO_ALLGATHER
                         ? gcmpi_hier_segment_count((size_t)(bytes / 4), e->node_size,
                                                    e->segment_floats)
                         : 1;
    if (segs < 2) return node + compute + comm;
    const double scatter = gcmpi_window_scatter_share(e->node_size) * node;
    const double a = scatter + compute, b = comm;
    return gather_cost(e, bytes, segs, node - scatter) + (a > b ? a : b) +
           (a > b ? b : a) / segs;
}

double gcmpi_cost_predict(const gcmpi_cost_env *e, gcmpi_algo algo, gcmpi_algo inner, double bytes)
{
    switch (algo) {
    case GCMPI_ALGO_HIER: {
        if (e->n_nodes == 1 && e->one_node_window && bytes / 4 <= 2147483647.0)
            return gcmpi_lin_at(e->node_allreduce, bytes);
        if (e->n_nodes < 2 || e->n_nodes == e->p) return INFINITY; /* flat does the same */
        if (inner == GCMPI_ALGO_HIER || inner == GCMPI_ALGO_SPARSE_RD) return INFINITY;
        /* Only the node's sum is scanned: by each column its part (or by
         * the leader all of it), in flat_compute. */
        if (e->hier_scatter && e->node_size > 1 && bytes / 4 <= 2147483647.0)
            return hier_scatter_cost(e, inner, bytes);
        return gcmpi_lin_at(e->reduce_bcast, bytes) +
               flat_cost(e, &e->between, e->n_nodes, inner, bytes);
    }
    case GCMPI_ALGO_SPARSE_RD: return sparse_rd_cost(e, bytes);
    default: return flat_cost(e, &e->flat, e->p, algo, bytes);
    }
}

gcmpi_algo gcmpi_cost_pick(const gcmpi_cost_env *e, const gcmpi_algo *cand, int n,
                           gcmpi_algo inner, double bytes, double *predicted)
{
    gcmpi_algo best = GCMPI_ALGO_PASS;
    double best_t = INFINITY;
    for (int i = 0; i < n; i++) {
        const double t = gcmpi_cost_predict(e, cand[i], inner, bytes);
        if (t < best_t) {
            best_t = t;
            best = cand[i];
        }
    }
    if (predicted) *predicted = best_t;
    return best;
}

gcmpi_prims gcmpi_prims_alpha_beta(int p, int q, double alpha, double beta)
{
    const double l = log2_ceil(p);
    const double pm = p > 1 ? (double)(p - 1) : 0.0;
    gcmpi_prims pr = {
        .allreduce = {.a = 2 * l * alpha, .b = 2 * pm / (p * beta)},
        .allgather = {.a = l * alpha, .b = pm / beta},
        .alltoall = {.a = pm * alpha, .b = (q > 1 ? q : 1) * pm / (p * beta)},
    };
    return pr;
}

gcmpi_lin gcmpi_reduce_bcast_alpha_beta(int q, double alpha, double beta)
{
    if (q < 2) return (gcmpi_lin){.a = 0, .b = 0};
    const double l = log2_ceil(q);
    return (gcmpi_lin){.a = 2 * l * alpha, .b = 4.0 * (q - 1) / (q * beta)};
}

double gcmpi_ring_crossing_floor(const gcmpi_prims *between, int p, int n)
{
    if (n < 2 || p <= n) return 0.0;
    const double across = (double)(n - 1) / n; /* of a leaders' alltoall */
    const double by_allreduce = gcmpi_lin_slope(between->allreduce) / (2 * across);
    const double by_alltoall = gcmpi_lin_slope(between->alltoall) / across;
    double per_byte = by_allreduce > 0 ? by_allreduce : 0.0;
    if (by_alltoall > 0 && (per_byte == 0.0 || by_alltoall < per_byte)) per_byte = by_alltoall;
    return per_byte * 2 * (double)(p - 1) / p;
}

gcmpi_lin gcmpi_lin_through(const double *x, const double *t, int n)
{
    if (n < 2) return (gcmpi_lin){0};
    gcmpi_lin l = gcmpi_lin_fit(x[0], t[0], x[1], t[1]);
    for (int i = 2, k = 0; i < n && i < GCMPI_LIN_KNEES + 1; i++, k++) {
        if (!(x[i] > x[i - 1]) || !(t[i] > 0)) break;
        l.knee[k] = x[i - 1];
        const double at_knee = gcmpi_lin_at(l, x[i - 1]);
        l.b_after[k] = (t[i] - at_knee) / (x[i] - x[i - 1]);
        if (!(l.b_after[k] > 0)) l.b_after[k] = 0.0;
    }
    return l;
}

gcmpi_lin gcmpi_lin_floor_mean(gcmpi_lin l, double x)
{
    if (!(x > 0)) return l;
    int k = 0;
    while (k < GCMPI_LIN_KNEES && l.knee[k] > 0 && l.knee[k] < x) k++;
    if (k == GCMPI_LIN_KNEES || l.knee[k] > 0) return l; /* no room, or x is not the last */
    const double mean = (gcmpi_lin_at(l, x) - l.a) / x;
    if (gcmpi_lin_slope(l) < mean) {
        l.knee[k] = x;
        l.b_after[k] = mean;
    }
    return l;
}

gcmpi_lin gcmpi_lin_fit(double x1, double t1, double x2, double t2)
{
    double b = x2 > x1 ? (t2 - t1) / (x2 - x1) : 0.0;
    if (!(b > 0)) b = 0.0;
    double a = t1 - b * x1;
    if (!(a > 0)) a = 0.0;
    return (gcmpi_lin){.a = a, .b = b};
}
