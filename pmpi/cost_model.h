/* cost_model.h — predicted time of one allreduce per algorithm, from the
 * cost of the MPI primitives the algorithms are made of and the codec's
 * measured rates. Pure C, no MPI: the library fills it from measurements
 * on each communicator (coll_auto.c), the scale tool
 * (bench/scale_model.c) from link figures through the alpha-beta forms
 * below, so both predict with the same compositions.
 *
 * Every primitive is a line t(x) = a + b * x in bytes x:
 *   allreduce(x)  x: the vector each rank contributes;
 *   allgather(x)  x: the bytes each rank contributes (it receives (p-1) x);
 *   alltoall(x)   x: the bytes each rank sends in all (x/p to each peer);
 *   reduce_bcast(x) inside a node: PMPI_Reduce to a leader then PMPI_Bcast
 *                 of x bytes (hier's two node steps, leader style);
 *   node_allreduce(x) inside a node: allreduce of x bytes (what hier's
 *                 reduce-scatter + allgatherv inside a node moves). */
#ifndef GCMPI_COST_MODEL_H
#define GCMPI_COST_MODEL_H

#include "gcmpi_config.h"

#include <stdint.h>

/* Bends of a line: three from five measured points, one more for
 * gcmpi_lin_floor_mean past the last. */
#define GCMPI_LIN_KNEES 4

typedef struct gcmpi_lin {
    double a; /* seconds */
    double b; /* seconds per byte */
    /* Past knee[i] bytes (0: no such knee; increasing) the slope is
     * b_after[i]: a large message leaves the caches and MPI switches
     * algorithms, so the slope of the calibration's small sizes does not
     * reach 64 MiB. */
    double knee[GCMPI_LIN_KNEES], b_after[GCMPI_LIN_KNEES];
    /* Seconds per byte the whole call takes at least (0: no floor): the
     * bytes that must cross a link between nodes at its measured rate
     * (gcmpi_ring_crossing_floor), which a line fitted to small messages
     * does not see. */
    double floor_b;
} gcmpi_lin;

static inline double gcmpi_lin_at(gcmpi_lin l, double bytes)
{
    double t = l.a, from = 0.0, slope = l.b;
    for (int i = 0; i < GCMPI_LIN_KNEES && l.knee[i] > 0 && bytes > l.knee[i]; i++) {
        t += slope * (l.knee[i] - from);
        from = l.knee[i];
        slope = l.b_after[i];
    }
    t += slope * (bytes - from);
    return l.floor_b * bytes > t ? l.floor_b * bytes : t;
}

/* The slope of large messages. */
static inline double gcmpi_lin_slope(gcmpi_lin l)
{
    double b = l.b;
    for (int i = 0; i < GCMPI_LIN_KNEES && l.knee[i] > 0; i++) b = l.b_after[i];
    return b;
}

/* The primitives on one communicator. */
typedef struct gcmpi_prims {
    gcmpi_lin allreduce, allgather, alltoall;
} gcmpi_prims;

typedef struct gcmpi_cost_env {
    int p;                   /* ranks                                          */
    int n_nodes;             /* nodes (1: everything shares memory)            */
    gcmpi_prims flat;        /* over all p ranks                               */
    gcmpi_prims between;     /* over the n_nodes leaders                       */
    gcmpi_lin reduce_bcast;  /* inside the largest node                        */
    gcmpi_lin node_allreduce; /* inside a node                                 */
    int node_size;           /* ranks per node (largest)                       */
    int hier_scatter;        /* hier runs its reduce-scatter style (nodes of
                                equal size, codec not powersgd)             */
    int one_node_window;     /* one node sharing a window: hier is the
                                window's exact allreduce (node_allreduce)   */
    double column_share;     /* hier's q columns moving the payloads between
                                nodes all at once take this many times what
                                the leaders' lines give for the same bytes
                                (0: as the lines say)                       */
    size_t segment_floats;   /* hier's reduce-scatter style through the
                                node's window pipelines an allgather
                                between nodes in segments of at least this
                                many floats (gcmpi_hier_segment_count); 0:
                                it does not (no window)                     */
    /* Seconds per call of x input bytes (lines like the primitives': a
     * small vector is in cache, a large one streams from memory): */
    gcmpi_lin scan;            /* the inf/NaN check every compressed call
                                  makes of its input first                     */
    gcmpi_lin encode;          /* codec encode (with the residual under EF)    */
    gcmpi_lin decode;          /* decode_add of one payload, x output bytes    */
    gcmpi_lin sets;            /* sparse_rd's own passes: its set made from
                                  its payload (decode included) and a set
                                  placed in the output; zero: not measured,
                                  taken as passes at the scan's rate        */
    double payload_ratio;      /* payload bytes / input bytes                  */
    double native_ratio;       /* bytes MPI sums on the native path / input
                                  bytes; 0: the codec has no native path       */
    double density;            /* sparse codecs: kept fraction of elements
                                  (sparse_rd's union grows from it); 0: dense  */
    double kept_bound_ratio;   /* sparse codecs through the node's window: a
                                  segment payload's bound / its floats' bytes,
                                  for hier's node gather by payloads
                                  (gcmpi_hier_kept_fits); 0: floats gathered */
    size_t kept_part_bytes;    /* bytes a part of the node's window holds     */
} gcmpi_cost_env;

/* Segments hier's pipeline cuts a rank's chunk into for count floats on
 * nodes of q ranks, segments of at least segment_floats: as many as fit,
 * at most 8, none empty (1: unpipelined). The library's rule
 * (coll_hier_pipe.c) and the model's. */
static inline int gcmpi_hier_segment_count(size_t count, int q, size_t segment_floats)
{
    if (q < 1 || segment_floats == 0) return 1;
    const size_t longest = (count + (size_t)q - 1) / (size_t)q, shortest = count / (size_t)q;
    size_t s = (longest + segment_floats - 1) / segment_floats;
    if (s > 8) s = 8;
    if (s > shortest) s = shortest;
    return s > 1 ? (int)s : 1;
}

/* hier's node gather by payloads (pmpi/coll_hier_pipe.c): the room for
 * a rank's column payloads of every segment (each segment: the members'
 * sizes, then each payload, at 16-byte boundaries), and whether that
 * room is worth it and fits: at most a fifth of the chunk's bytes, and
 * within what a part of the node's window may grow to. The fifth is
 * measured, not derived: on the emulated cluster (8 ranks on 2 cores,
 * 64 MiB topk 0.01, whose bound is 0.041 of a 512 Ki-float segment) 2
 * nodes of 4 (a bound of 0.08 of the chunk) and 4 nodes of 2 (0.17) ran
 * faster by payloads. The decodes grow with the nodes (every rank
 * decodes every node's payload of every other chunk) while the copy
 * does not, so past a fifth the floats are copied (8 nodes: 0.33). */
/* The most bytes a part of the node's window is grown to for the
 * payloads (node_shm.h's gcmpi_node_shm_share): here, so that the model
 * and gcmpi-scale-model, which build without MPI, use the library's. */
#define GCMPI_NODE_SHM_SHARE_MAX_BYTES ((size_t)64 << 20)

static inline size_t gcmpi_hier_kept_align(size_t bytes)
{
    return (bytes + 15) & ~(size_t)15;
}

static inline size_t gcmpi_hier_kept_cap(int segs, size_t members, size_t segment_bound)
{
    return (size_t)segs * (gcmpi_hier_kept_align(members * sizeof(int64_t)) +
                           members * gcmpi_hier_kept_align(segment_bound));
}

static inline int gcmpi_hier_kept_fits(size_t cap, size_t chunk_bytes, size_t part_bytes)
{
    return cap <= part_bytes && cap <= chunk_bytes / 5;
}

/* Of the window's two phases inside a node (node_allreduce), the share of
 * the reduce-scatter, from the bytes each moves per rank's vector of N:
 * the copy in of the other ranks' chunks (read and write (q-1)N/q), the
 * sum (read N, write N/q) against the chunk's copy in (N/q) and the
 * others' copied out (read and write (q-1)N/q): (3q - 1) / (5q - 2).
 * gcmpi-node-bench, 2 x 4 ranks at 64 MiB: 55 ms against 33-35 (0.61-0.63;
 * this gives 0.61; 0.70 before a rank's own chunk stayed out of the
 * window, when the formula was (3 + 1/q) / 5). */
static inline double gcmpi_window_scatter_share(int q)
{
    return q > 0 ? (3.0 * q - 1.0) / (5.0 * q - 2.0) : 1.0;
}

/* Predicted seconds of one allreduce of `bytes` bytes with algo on env
 * (every compressed one also scans what it encodes for inf and NaN
 * first: its input, or under hier the node's sum):
 *   passthrough  allreduce(bytes)
 *   allgather    encode + allgather(payload) + p decodes
 *   rsag         p encodes of 1/p + alltoall(payload) + p decodes of 1/p
 *                + scan and encode of 1/p + allgather(payload/p) + p
 *                decodes of 1/p
 *   native       encode + allreduce(native bytes) + decode
 *   hier         one node with a window: node_allreduce(bytes), exact
 *                (no scan: like passthrough it is MPI_SUM's arithmetic);
 *                leader style: reduce_bcast(bytes) + the rule's algorithm
 *                between nodes on the whole vector; reduce-scatter style:
 *                node_allreduce(bytes) + the inner algorithm's compute on
 *                bytes/q per rank + its communication of the whole vector's
 *                payload (q columns share the link between nodes,
 *                column_share times the leaders' time for its bytes);
 *                pipelined (segment_floats, the allgather between nodes,
 *                S segments): the window's gather + max(A, B) + min(A, B)/S,
 *                A the window's reduce-scatter and the compute, B the
 *                communication
 *   sparse_rd    encode + its own set's passes (sets) + recursive
 *                doubling: round r exchanges the union of 2^r payloads,
 *                dense once the union is denser than half + the result's
 *                entries beyond its own set placed
 * Returns INFINITY for an algorithm env cannot run (native without a
 * native path, hier or sparse_rd where they do not apply). inner is the
 * algorithm hier runs between nodes. */
double gcmpi_cost_predict(const gcmpi_cost_env *env, gcmpi_algo algo, gcmpi_algo inner,
                          double bytes);

/* The candidate with the smallest prediction (ties: the earlier one in
 * candidates), and that prediction in *predicted (may be NULL). */
gcmpi_algo gcmpi_cost_pick(const gcmpi_cost_env *env, const gcmpi_algo *candidates, int n,
                           gcmpi_algo inner, double bytes, double *predicted);

/* Alpha-beta forms of the primitives over p ranks with per-message
 * latency alpha (s) and bandwidth beta (bytes/s) of the link between
 * ranks: recursive doubling latency, ring/pairwise bandwidth terms. q ranks
 * per node share a node's link: alltoall sends q times more through it. */
gcmpi_prims gcmpi_prims_alpha_beta(int p, int q, double alpha, double beta);
/* Reduce then broadcast of x bytes among q ranks (binomial latency,
 * reduce-scatter + gather, scatter + allgather bandwidth). */
gcmpi_lin gcmpi_reduce_bcast_alpha_beta(int q, double alpha, double beta);

/* The floor (gcmpi_lin.floor_b) of an allreduce of p ranks on n nodes
 * (1 < n < p; ranks placed node by node) from the primitives of the n
 * node leaders: MPI's large allreduce is a ring, whose every hop carries
 * 2 (p - 1) / p of the vector, so each node's link carries that. A byte
 * across the link costs what the leaders' allreduce (2 (n - 1) / n of its
 * vector across) or alltoall ((n - 1) / n) paid for one, the cheaper of
 * the two: a floor takes the link at its fastest, and one slow run of
 * the leaders' allreduce once put it at 1.5 times its rate. 0 where it
 * does not apply. On the emulated 2 x 4 cluster at 1 Gbit/s a line
 * through 1 and 4 MiB put a 64 MiB allreduce of the 8 ranks at 0.73 to
 * 0.9 of its time. */
double gcmpi_ring_crossing_floor(const gcmpi_prims *between, int p, int n);

/* A pure rate: bytes_per_s bytes a second, no fixed cost. */
static inline gcmpi_lin gcmpi_lin_rate(double bytes_per_s)
{
    return (gcmpi_lin){.b = bytes_per_s > 0 ? 1.0 / bytes_per_s : 0.0};
}

/* Its large messages' rate in bytes a second (0: none measured). */
static inline double gcmpi_lin_rate_of(gcmpi_lin l)
{
    const double b = gcmpi_lin_slope(l);
    return b > 0 ? 1.0 / b : 0.0;
}

/* The line through (x1, t1) and (x2, t2), x1 < x2, with a, b >= 0. */
gcmpi_lin gcmpi_lin_fit(double x1, double t1, double x2, double t2);

/* The line through the first two of n (at most GCMPI_LIN_KNEES + 1)
 * points (x[i], t[i]), x increasing, then from point to point (slopes
 * >= 0; each point's time read off the line so far where a slope would be
 * negative); a point whose t is 0 (not measured) or whose x is not above
 * the one before ends the line there. */
gcmpi_lin gcmpi_lin_through(const double *x, const double *t, int n);

/* l, but past x bytes (its last measured point) a byte costs at least
 * what one cost on average up to x (l's time there less its fixed cost):
 * for an allreduce, whose large messages MPI sends by a ring that costs
 * per byte what the last point cost on average, where the chord from a
 * smaller point (recursive doubling, dearer per byte) is too flat.
 * Between two emulated nodes at 1 Gbit/s that chord put a 64 MiB
 * passthrough at 0.1-0.4x its time. */
gcmpi_lin gcmpi_lin_floor_mean(gcmpi_lin l, double x);

#endif /* GCMPI_COST_MODEL_H */
