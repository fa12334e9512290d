/* coll_impl.h — what the collective algorithm files share: the scratch slot
 * names, per-encode seeds, the encode step with error feedback, chunk
 * boundaries, the wire unit that keeps PMPI_*v counts inside int, and the
 * mapping from codec errors to MPI error codes. Internal to pmpi/.
 *
 * Failures are agreed where they can be: a rank whose encode fails still
 * takes part in the size exchange and sends -(gc error code) as its size, so
 * every rank sees the failure, returns the same MPI error code and nobody
 * hangs in a later collective. Only local conditions after the last
 * exchange (a payload corrupted in transit) and running out of memory while
 * growing a scratch buffer are reported by one rank alone. */
#ifndef GCMPI_COLL_IMPL_H
#define GCMPI_COLL_IMPL_H

#include "coll.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

/* Slots of gcmpi_scratch the algorithms use; slots from
 * GCMPI_SCRATCH_SHIM_FIRST on belong to the shim. */
enum {
    GCMPI_SCR_SEND = 0, /* payloads this rank sends                      */
    GCMPI_SCR_RECV,     /* payloads it receives                          */
    GCMPI_SCR_META,     /* sizes, counts, displacements                  */
    GCMPI_SCR_CHUNK,    /* rsag: the reduced chunk; native: the values   */
    GCMPI_SCR_AUX,      /* native: randk indices, int8 scales, powersgd P */
    GCMPI_SCR_AUX2,     /* native: powersgd Q                            */
    GCMPI_SCR_END
};
_Static_assert(GCMPI_SCR_END <= GCMPI_SCRATCH_SHIM_FIRST, "algorithm slots overlap the shim's");

/* 1 if algo can carry codec: allgather and rsag carry every codec, native
 * those config/ lists (gcmpi_codec_has_native_path: none, randk, int8,
 * powersgd), which is also what GCMPI_ALGO=native is checked against. */
int gcmpi_coll_supports(const gc_codec *codec, gcmpi_algo algo);

/* The algorithms (coll_allgather.c, coll_rsag.c, coll_native.c). Each
 * expects count > 0 and a codec it supports (gcmpi_coll_supports). */
int gcmpi_allreduce_allgather(gcmpi_coll_ctx *ctx, const float *in, float *out,
                              size_t count, gcmpi_ef_slot *ef);
int gcmpi_allreduce_rsag(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                         gcmpi_ef_slot *ef);
int gcmpi_allreduce_native(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                           gcmpi_ef_slot *ef);
int gcmpi_allreduce_hier(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                         gcmpi_ef_slot *ef);

/* coll_native.c's pieces that its device twin (coll_device_native.c)
 * shares, so host and device ranks send the same messages and decide
 * alike:
 * PMPI_Allreduce over any count (pieces of at most INT_MAX elements; send
 * NULL: in place on recv), timed and counted in ctx->stats; and the wire
 * of native int8 at p ranks (the integer type MPI sums, its size, and the
 * levels L that p summed values cannot overflow). */
int gcmpi_native_allreduce_big(gcmpi_coll_ctx *ctx, const void *send, void *recv, size_t count,
                               MPI_Datatype type, size_t elem, MPI_Op op);
typedef struct gcmpi_int_wire {
    MPI_Datatype type;
    size_t elem;  /* bytes per level */
    float levels; /* L: values map to integers in [-L, L] */
} gcmpi_int_wire;
gcmpi_int_wire gcmpi_native_int_wire(int p);
/* powersgd's warm start: 0 when Q (n floats) is all zero (every gradient
 * was zero) or not finite, which would stay so: Q then restarts from the
 * seed. */
int gcmpi_native_q_usable(const float *q, size_t n);
/* randk's wire: after the k values, one float per block of this many
 * elements, what the block's inf and NaN inputs sum to (0: none). */
#define GCMPI_RANDK_MARK_BLOCK 4096
/* Where hier's vectors live: host vectors (stage NULL) go through the
 * node's phases as they are; device vectors (coll_device.c) are staged
 * into one host vector (host_vector: count floats, page-locked) by stage,
 * a copy in any direction (0 or an MPI error code), and the call between
 * nodes (a column's on its chunk, or the leaders' on the node sum) runs
 * on the vector with run (the host's gcmpi_coll_run, or the GPU
 * kernels). */
struct gcmpi_gathered;
/* The payloads of this rank's column, segment by segment, kept by hier's
 * pipeline for the node's gather: len bytes at buf (NULL: not kept, or
 * they outgrew cap); cap, the room agreed by the node (its window's
 * parts are grown to it). */
typedef struct gcmpi_hier_kept {
    uint8_t *buf;
    size_t cap, len;
} gcmpi_hier_kept;

typedef struct gcmpi_hier_vec_ops {
    int (*stage)(void *dst, const void *src, size_t bytes);
    float *(*host_vector)(size_t count);
    int (*run)(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out, size_t count,
               gcmpi_ef_slot *ef);
    /* The pipeline's (coll_hier_pipe.c) pieces of the column's allgather,
     * where run works: host memory for the payloads (bytes; NULL: none
     * left), an encode of g[0..n) with the residual r and DGC's u into
     * host dst (gcmpi_coll_encode's choice), and out[0..n) zeroed then
     * every gathered payload added in rank order (a gc error or 0). */
    uint8_t *(*payloads)(gcmpi_coll_ctx *ctx, size_t bytes);
    size_t (*encode)(gcmpi_coll_ctx *ctx, const float *g, float *r, float *u, size_t n,
                     uint64_t seed, void *dst, size_t cap);
    size_t (*decode_all)(gcmpi_coll_ctx *ctx, const struct gcmpi_gathered *got, float *out,
                         size_t n);
} gcmpi_hier_vec_ops;
/* 1 when the communicator's node split is known (its cache; built here
 * collectively if need be; 0 without a cache), with the algorithm run
 * between nodes for hier's call of count floats in *inner: this rank's
 * column's (by chunks) or the leaders' (leader style), passthrough where
 * there is none (one node, an empty chunk). gcmpi_hier_with is that call
 * with ops, in either style. */
int gcmpi_hier_between(gcmpi_coll_ctx *ctx, size_t count, gcmpi_algo *inner);
int gcmpi_hier_with(gcmpi_coll_ctx *ctx, const gcmpi_hier_vec_ops *ops, const float *in,
                    float *out, size_t count, gcmpi_ef_slot *ef);
/* 1 when hier runs its reduce-scatter style for count on nodes n. */
int gcmpi_hier_scatter_style(const gcmpi_config *cfg, const gcmpi_nodes *n, size_t count);
/* The node's shared memory had no room for a window (on every rank of
 * n's node): n sums through MPI from now on, and the job is told once.
 * Returns 0 (no window). */
int gcmpi_hier_window_gone(gcmpi_nodes *n);
/* hier's reduce-scatter style as a pipeline (coll_hier_pipe.c): the
 * node's sum of hin (into hout, host vectors: through the window while
 * *shm, else MPI) and the columns' allgather of the chunks, in segments
 * that overlap. Each segment of this rank's chunk goes to out (where
 * ops->encode works: hout itself, or through ops->stage the device
 * vector) and comes back there summed over the whole communicator, then
 * to hout, whose chunks the caller gathers. *inner_rc: the columns'
 * agreed code; *local: a staging failure of this rank. Returns
 * MPI_SUCCESS or an MPI error of the node. segs: gcmpi_hier_segments
 * (at least 2), the same on every rank, which all run it alike. */
int gcmpi_hier_pipeline(gcmpi_coll_ctx *ctx, gcmpi_nodes *n, const gcmpi_hier_vec_ops *ops,
                        const float *hin, float *hout, float *out, size_t count, int segs,
                        gcmpi_ef_slot *ef, int *shm, int *local, int *inner_rc,
                        gcmpi_hier_kept *kept);
/* ctx narrowed to this rank's column of hier's reduce-scatter style: its
 * communicator, its place there (this node's index) and its size (the
 * nodes); no auto cache, and no finite-input note (the caller sets one
 * where the node's sum was checked). */
gcmpi_coll_ctx gcmpi_hier_column_ctx(const gcmpi_coll_ctx *ctx, const gcmpi_nodes *n);
/* 1 where hier's node gathers the pipeline's sums by the payloads its
 * columns decoded (gcmpi_hier_gather_kept) rather than by floats: through
 * the window, for the sparse codecs the columns all-gather (topk, dgc,
 * topkq), with payloads (by their bound) at most a fifth of the floats
 * they stand for and at most 64 MiB (gcmpi_hier_kept_fits);
 * decided from what every rank of the node shares. kept->buf: the room
 * for this rank's column's payloads of every segment (gcmpi_hier_pipeline
 * keeps them there as it decodes them), NULL where it keeps none (device
 * vectors, no memory). */
int gcmpi_hier_kept_room(gcmpi_coll_ctx *ctx, const gcmpi_nodes *n,
                         const gcmpi_hier_vec_ops *ops, size_t count, int segs, int shm,
                         gcmpi_hier_kept *kept);
/* The node's gather of the pipeline's sums by what it kept: every rank
 * publishes its column's payloads in the window and decodes every other
 * rank's into hout as that rank did, bit for bit, where every rank of
 * the node kept them (*gathered 1); else nothing is decoded (*gathered 0)
 * and the caller gathers the floats. *worst: the node's largest
 * inner_rc. Collective over the node. GCMPI_NODE_SHM_NO_ROOM (on every
 * rank of the node) where growing the window left none: the node gathers
 * through MPI. */
int gcmpi_hier_gather_kept(gcmpi_coll_ctx *ctx, gcmpi_nodes *n, const gcmpi_hier_kept *kept,
                           float *hout, size_t count, int segs, int inner_rc, int *worst,
                           int *gathered);
/* Tests and benchmarks: -1 (the default) shares payloads where
 * gcmpi_hier_kept_room's rule says, 0 never, 1 wherever they fit a part
 * of the window, whatever their size. The same on every rank. */
void gcmpi_hier_set_kept_mode(int mode);
/* Tests: whether this thread's last pipelined hier call gathered its
 * node by payloads (1) or by floats (0). */
int gcmpi_hier_last_gathered_kept(void);
/* Segments of a chunk for count floats on nodes of q ranks under cfg (1:
 * none; a segment's message must fit an int count): from what every rank
 * shares, so all take the same way. */
int gcmpi_hier_segments(const gcmpi_config *cfg, size_t count, int q);
/* Tests: how many segments this thread's last hier call of the
 * reduce-scatter style ran (0: unpipelined). */
int gcmpi_hier_last_segments(void);
/* ef for an overflow step (inf or NaN in the input): its slot without the
 * residual and the momentum, which must not take the value (in *bare), or
 * NULL without a slot. */
static inline gcmpi_ef_slot *gcmpi_ef_without_state(const gcmpi_ef_slot *ef, gcmpi_ef_slot *bare)
{
    if (!ef) return NULL;
    *bare = *ef;
    bare->residual = NULL;
    bare->momentum = NULL;
    return bare;
}

/* 1 for the algorithms that hand MPI_SUM the gradient itself, nothing
 * dropped: passthrough, and hier when gcmpi_hier_exact. */
int gcmpi_coll_exact(gcmpi_coll_ctx *ctx, gcmpi_algo algo, size_t count);
/* 1 when n is one node whose ranks share a window: hier is then the
 * window's exact allreduce, nothing compressed. */
int gcmpi_hier_one_node_window(const gcmpi_config *cfg, const gcmpi_nodes *n, size_t count);
/* 1 when hier's call of count floats on ctx is that exact window sum (the
 * communicator's cached split, built here collectively if need be; 0
 * without a cache). */
int gcmpi_hier_exact(gcmpi_coll_ctx *ctx, size_t count);
/* Sets ctx->gather_nodes for a compressed MPI_Allgather: the
 * communicator's node split (built on first use: collective) where way is
 * GCMPI_ALGO_HIER, ctx has a cache, and there are several nodes of which
 * one at least holds several ranks; else NULL. */
int gcmpi_coll_gather_by_node(gcmpi_coll_ctx *ctx, gcmpi_algo way);
/* 1 where gcmpi_coll_gather_by_node would go node by node (collective on
 * first use, as it is; *rc an MPI error when the split failed). */
int gcmpi_coll_can_gather_by_node(gcmpi_coll_ctx *ctx, int *rc);
int gcmpi_allreduce_sparse_rd(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                              gcmpi_ef_slot *ef);
/* sparse_rd's steps on the vectors' side (the rounds between them merge
 * host sets): host vectors (coll_sparse_rd.c's) or device vectors
 * (coll_device.c). A set of m entries is units[0..m) indices, ascending,
 * then units[m..2m) the values' float bits; GCMPI_SET_DENSE: units holds
 * the n floats. */
#define GCMPI_SET_DENSE (-1)
typedef struct gcmpi_sparse_rd_ops {
    /* in encoded with the slot's residual into dst (cap bytes): the
     * payload's length or a gc error */
    size_t (*encode)(gcmpi_coll_ctx *ctx, const float *in, gcmpi_ef_slot *ef, size_t n,
                     void *dst, size_t cap);
    /* out (n floats, used as scratch) = the decode of payload; units and
     * *m = its non-zero entries (dense where more than n/2); 0 or a gc
     * error code */
    int (*local_set)(gcmpi_coll_ctx *ctx, const void *payload, size_t len, float *out, size_t n,
                     uint32_t *units, int64_t *m);
    /* out[0..n) = the set; 0 or a gc error code */
    int (*place)(const uint32_t *units, int64_t m, float *out, size_t n);
} gcmpi_sparse_rd_ops;
/* Host vectors' steps (coll_sparse_rd.c); auto's calibration times their
 * local_set and place, sparse_rd's own passes over the vector. */
extern const gcmpi_sparse_rd_ops gcmpi_sparse_rd_host;
int gcmpi_allreduce_sparse_rd_with(gcmpi_coll_ctx *ctx, const gcmpi_sparse_rd_ops *ops,
                                   const float *in, float *out, size_t count, gcmpi_ef_slot *ef);

/* Runs algo (not auto) on ctx without the statistics reset of
 * gcmpi_allreduce_compressed (hier's call between nodes uses it): refuses
 * an algo the codec lacks, sends a non-finite input without residual or
 * momentum, then gcmpi_coll_dispatch. */
int gcmpi_coll_run(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                   size_t count, gcmpi_ef_slot *ef);

/* ---- payload all-gather (coll_allgather.c), shared with rsag and the
 * compressed MPI_Allgather ------------------------------------------------ */

/* What every rank holds after gcmpi_coll_allgather_payloads: payload r is
 * len[r] bytes at buf + off[r]. */
typedef struct gcmpi_gathered {
    const uint8_t *buf;
    const int64_t *len;
    const size_t *off;
} gcmpi_gathered;

/* All-gather one payload per rank. send holds len bytes and has room up to
 * the next multiple of gcmpi_wire_unit(p, max_len); len may be a gc error
 * (then every rank returns that error). Every rank passes the same max_len,
 * an upper bound of any rank's payload. Returns MPI_SUCCESS or an error
 * code that is the same on all ranks. */
int gcmpi_coll_allgather_payloads(gcmpi_coll_ctx *ctx, uint8_t *send, size_t len,
                                  size_t max_len, gcmpi_gathered *got);

/* Encode in[0..count) (with the slot's residual) and all-gather every
 * rank's payload: the first half of both allgather-based collectives.
 * in is fully consumed when this returns, so the caller's output may
 * alias it. */
int gcmpi_coll_encode_and_gather(gcmpi_coll_ctx *ctx, const float *in, size_t count,
                                 gcmpi_ef_slot *ef, gcmpi_gathered *got);

/* out[0..count) = 0, then every rank's gathered payload added in rank
 * order (ctx->size of them). Returns 0 or a gc error. */
size_t gcmpi_coll_decode_all(gcmpi_coll_ctx *ctx, const gcmpi_gathered *got, float *out,
                             size_t count);

/* ---- errors -------------------------------------------------------------- */

static inline int gcmpi_coll_mpi_error(gc_error e)
{
    switch (e) {
    case GC_OK: return MPI_SUCCESS;
    case GC_ERR_ALLOC: return MPI_ERR_NO_MEM;
    case GC_ERR_PARAM:
    case GC_ERR_UNKNOWN_CODEC: return MPI_ERR_ARG;
    case GC_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    default: return MPI_ERR_OTHER;
    }
}

/* A gc error as a size_t (codecs/ keeps its GC_ERROR macro internal). */
#define GCMPI_GC_ERROR(e) ((size_t)0 - (size_t)(e))

/* A payload size as exchanged: bytes, or -(gc error code) for a failure. */
static inline int64_t gcmpi_coll_wire_size(size_t len)
{
    return gc_is_error(len) ? -(int64_t)gc_error_code(len) : (int64_t)len;
}

/* The MPI error for the first failure in sizes[0..n) (rank order, so all
 * ranks that see the same sizes agree), MPI_SUCCESS if none. */
static inline int gcmpi_coll_first_failure(const int64_t *sizes, int n)
{
    for (int r = 0; r < n; r++)
        if (sizes[r] < 0) return gcmpi_coll_mpi_error((gc_error)-sizes[r]);
    return MPI_SUCCESS;
}

/* ---- seeds ---------------------------------------------------------------- */

static inline uint64_t gcmpi_coll_mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Stages of an encode, for the seed. */
enum { GCMPI_STAGE_LOCAL = 0, GCMPI_STAGE_SERVER = 1 };

/* Seed of one encode of part (a chunk index). Stochastic codecs get the
 * rank and stage mixed in: their rounding or sampling must be independent
 * per rank. Linear codecs (randk) are summable only because every rank
 * draws the same indices: they, like deterministic codecs, get the same
 * seed on every rank and at both stages, so the server re-encode of chunk j
 * keeps exactly the indices the ranks sent. */
static inline uint64_t gcmpi_coll_seed(const gcmpi_coll_ctx *ctx, unsigned stage, size_t part)
{
    uint64_t s = gcmpi_coll_mix(ctx->call_seed ^ gcmpi_coll_mix((uint64_t)part));
    const unsigned flags = gc_codec_flags(ctx->cfg->codec);
    if ((flags & GC_STOCHASTIC) && !(flags & GC_LINEAR))
        s = gcmpi_coll_mix(s ^ gcmpi_coll_mix(((uint64_t)(unsigned)ctx->rank << 1) | stage));
    return s;
}

/* ---- error feedback ------------------------------------------------------- */

/* GCMPI_EF_MOMENTUM: DGC momentum correction inside the encodes, with
 * momentum factor masking, for sparse codecs; dense codecs have no "sent"
 * set to clear. (GCMPI_MOMENTUM is handled around the algorithms instead,
 * coll_momentum.c.) */
static inline float gcmpi_coll_momentum(const gcmpi_config *cfg)
{
    return (float)cfg->ef_momentum;
}

static inline int gcmpi_coll_momentum_on(const gcmpi_config *cfg)
{
    return gcmpi_coll_momentum(cfg) > 0.0f && (gc_codec_flags(cfg->codec) & GC_SPARSE);
}

/* The algorithm for algo (never auto), without momentum handling. */
int gcmpi_coll_dispatch(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                        size_t count, gcmpi_ef_slot *ef);

/* Transparent momentum correction around the lossy algorithm algo
 * (coll_momentum.c): every rank under GCMPI_MOMENTUM calls it, with or
 * without room for the state (ef or ef->momentum NULL). Collective. */
int gcmpi_coll_momentum_allreduce(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in,
                                  float *out, size_t count, gcmpi_ef_slot *ef);

/* Where the correction's vectors live: host arrays (coll_momentum.c), or
 * device arrays through the GPU kernels (coll_device.c). The agreement
 * and its messages are the same for both, so a rank on device buffers and
 * one on host buffers meet in one call. Each returns MPI_SUCCESS or an MPI
 * error code, the error local to the rank. */
typedef struct gcmpi_momentum_ops {
    int (*finite)(const float *g, size_t n, int *yes);
    int (*accumulate)(float *u, const float *g, size_t n, float beta); /* u = beta*u + g */
    /* The algorithm on in, which may hold inf or NaN (sent without state). */
    int (*run)(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
               size_t count, gcmpi_ef_slot *ef);
    /* The same on a vector known to be finite. */
    int (*run_finite)(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                      size_t count, gcmpi_ef_slot *ef);
    int (*unfold)(float *s, float *m, size_t n, float beta); /* gc_momentum_unfold */
    int (*zero)(float *x, size_t n);
    /* PMPI_Bcast of x[0..n) from root in pieces of piece floats; x NULL:
     * received and dropped (piece is then at most GCMPI_MOMENTUM_SINK). */
    int (*bcast)(float *x, size_t n, int root, size_t piece, MPI_Comm comm);
} gcmpi_momentum_ops;
enum { GCMPI_MOMENTUM_SINK = 16384 };

/* gcmpi_coll_momentum_allreduce with the vectors where ops keeps them. */
int gcmpi_coll_momentum_with(gcmpi_coll_ctx *ctx, const gcmpi_momentum_ops *ops,
                             gcmpi_algo algo, const float *in, float *out, size_t count,
                             gcmpi_ef_slot *ef);
/* The host's bcast op (the device's stages through it). */
int gcmpi_coll_momentum_bcast_host(float *x, size_t n, int root, size_t piece, MPI_Comm comm);

/* Adds what the encoder measured (eg bits) to the call's statistics. */
static inline void gcmpi_coll_note_encode(gcmpi_coll_ctx *ctx)
{
    const gc_encode_report *rep = gc_workspace_report(ctx->ws);
    if (rep->code_bits_per_element > 0.0 || rep->fl_bits_per_element > 0.0) {
        ctx->stats->eg_code_bits += rep->code_bits_per_element * (double)rep->n;
        ctx->stats->eg_fl_bits += rep->fl_bits_per_element * (double)rep->n;
        ctx->stats->eg_elements += rep->n;
    }
}

/* 1 when g[0..n) lies inside what gcmpi_coll_run found finite. */
static inline int gcmpi_coll_known_finite(const gcmpi_coll_ctx *ctx, const float *g, size_t n)
{
    if (!ctx->finite_in) return 0;
    const uintptr_t lo = (uintptr_t)ctx->finite_in, at = (uintptr_t)g;
    return at >= lo && (at - lo) / sizeof(float) + n <= ctx->finite_n;
}

/* Encode g[0..n) with this rank's error feedback into dst[0..cap): v = g + r
 * (r may be NULL), or the momentum-corrected v when u is given and momentum
 * is on. Returns payload bytes or a gc error. A g the call's check found
 * finite is not scanned again. */
static inline size_t gcmpi_coll_encode(gcmpi_coll_ctx *ctx, const float *g, float *r,
                                       float *u, size_t n, uint64_t seed, void *dst,
                                       size_t cap)
{
    const gcmpi_config *cfg = ctx->cfg;
    size_t len;
    const int checked = gcmpi_coll_known_finite(ctx, g, n);
    if (r && u && gcmpi_coll_momentum_on(cfg))
        len = (checked ? gc_encode_momentum_finite : gc_encode_momentum)(
            cfg->codec, g, u, r, n, gcmpi_coll_momentum(cfg), &cfg->params, seed, dst, cap,
            ctx->ws);
    else if (checked)
        len = gc_encode_finite(cfg->codec, g, r, n, &cfg->params, seed, dst, cap, ctx->ws);
    else
        len = gc_encode(cfg->codec, g, r, n, &cfg->params, seed, dst, cap, ctx->ws);
    if (!gc_is_error(len)) gcmpi_coll_note_encode(ctx);
    return len;
}

/* ---- chunks (rsag) ------------------------------------------------------- */

/* Chunk j of p over count elements: balanced, the first count % p chunks
 * one element longer; identical on all ranks. */
static inline size_t gcmpi_chunk_start(size_t count, int p, int j)
{
    size_t q = count / (size_t)p, rem = count % (size_t)p, jj = (size_t)j;
    return q * jj + (jj < rem ? jj : rem);
}
static inline size_t gcmpi_chunk_len(size_t count, int p, int j)
{
    return count / (size_t)p + ((size_t)j < count % (size_t)p);
}

/* ---- the wire unit ------------------------------------------------------
 * PMPI_*v counts and displacements are int. Payloads travel as elements of
 * unit bytes, unit the smallest power of two with which p payloads of up to
 * max_len bytes fit in INT_MAX elements: 1 (MPI_BYTE) below 2 GiB in all, a
 * contiguous type above. Every rank derives the unit from values all ranks
 * share, so both sides of each transfer agree on it. */
static inline size_t gcmpi_wire_unit(int p, size_t max_len)
{
    size_t unit = 1;
    while ((size_t)p * ((max_len + unit - 1) / unit) > (size_t)INT_MAX) unit *= 2;
    return unit;
}

static inline size_t gcmpi_wire_units(size_t bytes, size_t unit)
{
    return (bytes + unit - 1) / unit;
}

/* The MPI type of one wire unit; free with gcmpi_wire_type_free. */
static inline int gcmpi_wire_type(size_t unit, MPI_Datatype *type)
{
    *type = MPI_BYTE;
    if (unit == 1) return MPI_SUCCESS;
    if (unit > (size_t)INT_MAX) return MPI_ERR_COUNT;
    int rc = PMPI_Type_contiguous((int)unit, MPI_BYTE, type);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_commit(type);
    return rc;
}

static inline void gcmpi_wire_type_free(MPI_Datatype *type)
{
    if (*type != MPI_BYTE) PMPI_Type_free(type);
}

/* Zero the bytes between a payload's end and its last wire unit, so no
 * uninitialised memory goes on the wire. */
static inline void gcmpi_wire_pad(uint8_t *payload, size_t len, size_t unit)
{
    size_t padded = gcmpi_wire_units(len, unit) * unit;
    if (padded > len) memset(payload + len, 0, padded - len);
}

#endif /* GCMPI_COLL_IMPL_H */
