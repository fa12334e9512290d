/* coll_hier_pipe.c — hier's reduce-scatter style as a pipeline: the
 * node's sum and the exchange between nodes overlap.
 *
 * Unpipelined (coll_hier.c), a rank sums its chunk inside the node
 * through the window, then encodes it and all-gathers the payloads with
 * its column, then decodes: the link between nodes idles while the node
 * sums, and the node idles while the link carries. Here the chunk goes in
 * S segments. Segment s is summed through the window, encoded with its
 * slice of the residual, and sent to every other member of the column by
 * nonblocking point-to-point messages; while it travels the node sums
 * segment s + 1 (whose barriers keep MPI progressing), and then segment
 * s's payloads are waited for and decoded in column rank order, as the
 * flat allgather decodes them. Two segments are in flight at most, so
 * their buffers are two, reused.
 *
 * Each message is an 8-byte header, the payload's size or -(gc error
 * code) where the encode failed (every member then sees the failure and
 * returns the same code, as the allgather's size exchange does), then
 * the payload. Receives are posted for the bound; a message shorter than
 * its header says is a local error.
 *
 * A segment is a compressed allreduce of its own: topk keeps the largest
 * of each segment, as it keeps the largest of each rank's chunk already,
 * and stochastic codecs draw with the segment's index in the seed. Every
 * rank still ends bit-identical: a segment's column members decode the
 * same payloads in the same order.
 *
 * Only where the column runs the flat allgather (the rule's and the
 * model's pick for sparse codecs on a few nodes, and for any codec on two)
 * on host vectors through the node's window; elsewhere hier keeps its
 * unpipelined order. */
#include "coll_impl.h"
#include "node_shm.h"

#include <stdlib.h>

/* A segment of a chunk: at least this many floats, at most 8 segments
 * (gcmpi_hier_segment_count, cost_model.h, which the model shares).
 * Smaller segments overlap more of the sum with the link but each costs
 * the node two barriers more and the column a message more. */
#define SEGMENT_FLOATS ((size_t)256 << 10)
/* The payload's header on the wire: its size as int64. */
#define HEADER ((size_t)sizeof(int64_t))
/* Messages between column members; the column communicator is the
 * library's own, so no tag of the application's can meet it. */
#define TAG 0x4763

static size_t segment_floats = SEGMENT_FLOATS;
static _Thread_local int last_segments;

void gcmpi_hier_set_segment_floats(size_t floats)
{
    segment_floats = floats > 0 ? floats : SEGMENT_FLOATS;
}

int gcmpi_hier_last_segments(void)
{
    return last_segments;
}

size_t gcmpi_hier_segment_floats(void)
{
    return segment_floats;
}

int gcmpi_hier_segments(size_t count, int q)
{
    return gcmpi_hier_segment_count(count, q, segment_floats);
}

/* One column's exchanges: two slots, each one segment's send buffer,
 * receive buffers (one per other member) and requests. */
typedef struct pipe {
    gcmpi_coll_ctx col; /* the column's context (rank: this node's index) */
    size_t bound;       /* most payload bytes of a segment               */
    size_t stride;      /* bytes of one message buffer: header + bound   */
    int peers;          /* other members of the column                   */
    uint8_t *send, *recv;
    MPI_Request *req;   /* per slot: peers receives, then peers sends    */
    MPI_Status *status; /* 2 * peers                                     */
    int64_t *sizes;     /* every member's payload size, column rank order */
    int posted[2];      /* slot holds a segment whose requests are open   */
} pipe;

/* Buffers for segments of at most `longest` floats; 0 when the messages
 * would not fit an int count or memory ran out (every rank of the column
 * computes the same bound, so they agree on the first). */
static int pipe_open(pipe *pp, const gcmpi_coll_ctx *ctx, gcmpi_nodes *n, size_t longest,
                     int q, int *rc)
{
    const gcmpi_config *cfg = ctx->cfg;
    *rc = MPI_SUCCESS;
    memset(pp, 0, sizeof *pp);
    pp->col = *ctx;
    pp->col.comm = n->column;
    pp->col.rank = n->node_index;
    pp->col.size = n->n_nodes;
    pp->col.cache = NULL;
    pp->col.finite_in = NULL;
    pp->col.finite_n = 0;
    pp->peers = n->n_nodes - 1;
    pp->bound = gc_bound(cfg->codec, longest, &cfg->params);
    if (gc_is_error(pp->bound) || pp->bound > (size_t)INT_MAX - 64 - HEADER) return 0;
    pp->stride = (HEADER + pp->bound + 63) & ~(size_t)63;
    const size_t peers = (size_t)pp->peers;
    pp->send = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_SEND, 2 * pp->stride);
    pp->recv = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_RECV, 2 * peers * pp->stride);
    const size_t meta = 4 * peers * sizeof(MPI_Request) + 2 * peers * sizeof(MPI_Status) +
                        (size_t)n->n_nodes * sizeof(int64_t) + 2 * (size_t)q * sizeof(int);
    uint8_t *m = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_META, meta);
    if (!pp->send || !pp->recv || !m) {
        *rc = MPI_ERR_NO_MEM;
        return 0;
    }
    pp->req = (MPI_Request *)(void *)m;
    pp->status = (MPI_Status *)(void *)(pp->req + 4 * peers);
    pp->sizes = (int64_t *)(void *)(pp->status + 2 * peers);
    return 1;
}

/* The node's segment layout (q ints each, after the sizes). */
static int *pipe_counts(pipe *pp)
{
    return (int *)(void *)(pp->sizes + pp->col.size);
}

/* Encode segment s (m floats at seg, checked finite or not by the
 * window's sum) into its slot and post its messages. */
static int seg_start(pipe *pp, int s, float *seg, size_t m, int finite, float *r, float *u)
{
    gcmpi_coll_ctx *col = &pp->col;
    const int slot = s & 1;
    uint8_t *mine = pp->send + (size_t)slot * pp->stride;
    double t0 = PMPI_Wtime();
    if (finite) {
        col->finite_in = seg;
        col->finite_n = m;
    } else {
        /* An overflow step: sent flagged, and the residual does not take it. */
        col->stats->nonfinite_in = 1;
        r = NULL;
    }
    const size_t len = gcmpi_coll_encode(col, seg, r, u, m,
                                         gcmpi_coll_seed(col, GCMPI_STAGE_LOCAL, (size_t)s),
                                         mine + HEADER, pp->bound);
    col->finite_in = NULL;
    col->finite_n = 0;
    col->stats->encode_s += PMPI_Wtime() - t0;
    const int64_t w = gcmpi_coll_wire_size(len);
    memcpy(mine, &w, sizeof w);
    const int bytes = (int)(HEADER + (w > 0 ? (size_t)w : 0));

    MPI_Request *req = pp->req + (size_t)slot * 2 * (size_t)pp->peers;
    uint8_t *recv = pp->recv + (size_t)slot * (size_t)pp->peers * pp->stride;
    int rc = MPI_SUCCESS;
    for (int k = 0, j = 0; k < col->size && rc == MPI_SUCCESS; k++) {
        if (k == col->rank) continue;
        rc = PMPI_Irecv(recv + (size_t)j * pp->stride, (int)pp->stride, MPI_BYTE, k, TAG,
                        col->comm, &req[j]);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Isend(mine, bytes, MPI_BYTE, k, TAG, col->comm, &req[pp->peers + j]);
        j++;
    }
    if (rc != MPI_SUCCESS) return rc;
    pp->posted[slot] = 1;
    col->stats->bytes_sent += (uint64_t)pp->peers * (uint64_t)bytes;
    return MPI_SUCCESS;
}

/* Wait for segment s's messages and decode every member's payload into
 * out[0..m) in column rank order. */
static int seg_finish(pipe *pp, int s, float *out, size_t m)
{
    gcmpi_coll_ctx *col = &pp->col;
    const int slot = s & 1;
    if (!pp->posted[slot]) return MPI_SUCCESS;
    pp->posted[slot] = 0;
    const int peers = pp->peers;
    MPI_Request *req = pp->req + (size_t)slot * 2 * (size_t)peers;
    const uint8_t *recv = pp->recv + (size_t)slot * (size_t)peers * pp->stride;
    const uint8_t *mine = pp->send + (size_t)slot * pp->stride;
    double t0 = PMPI_Wtime();
    int rc = PMPI_Waitall(2 * peers, req, pp->status);
    col->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;

    int corrupt = 0;
    for (int k = 0, j = 0; k < col->size; k++) {
        const uint8_t *msg = k == col->rank ? mine : recv + (size_t)(j++) * pp->stride;
        memcpy(&pp->sizes[k], msg, sizeof(int64_t));
        if (k == col->rank) continue;
        int got = 0;
        PMPI_Get_count(&pp->status[j - 1], MPI_BYTE, &got);
        const int64_t want = (int64_t)HEADER + (pp->sizes[k] > 0 ? pp->sizes[k] : 0);
        corrupt |= got < (int)HEADER || (int64_t)got < want || pp->sizes[k] > (int64_t)pp->bound;
    }
    if (corrupt) return MPI_ERR_OTHER;
    rc = gcmpi_coll_first_failure(pp->sizes, col->size);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    memset(out, 0, m * sizeof(float));
    size_t r = 0;
    for (int k = 0, j = 0; k < col->size && !gc_is_error(r); k++) {
        const uint8_t *msg = k == col->rank ? mine : recv + (size_t)(j++) * pp->stride;
        r = gc_decode_add_as(col->cfg->codec, msg + HEADER, (size_t)pp->sizes[k], out, m,
                             col->ws);
    }
    col->stats->decode_s += PMPI_Wtime() - t0;
    return gcmpi_coll_mpi_error(gc_error_code(r));
}

int gcmpi_hier_pipeline(gcmpi_coll_ctx *ctx, gcmpi_nodes *n, const float *in, float *out,
                        size_t count, gcmpi_ef_slot *ef, int *inner_rc)
{
    const int q = n->node_size, me = n->node_rank;
    const int segs = gcmpi_hier_segments(count, q);
    *inner_rc = MPI_SUCCESS;
    last_segments = 0;
    pipe pp;
    int rc = MPI_SUCCESS;
    /* Out of memory is this rank's alone, as in the flat allgather
     * (coll_impl.h): the others wait for it. */
    if (segs < 2 || !pipe_open(&pp, ctx, n, gcmpi_chunk_len(gcmpi_chunk_len(count, q, 0), segs, 0),
                               q, &rc))
        return rc == MPI_SUCCESS ? GCMPI_HIER_UNPIPELINED : rc;
    int *cs = pipe_counts(&pp), *ds = cs + q;
    const size_t lo = gcmpi_chunk_start(count, q, me), len = gcmpi_chunk_len(count, q, me);
    gcmpi_call_stats *st = ctx->stats;
    rc = MPI_SUCCESS;
    int first = MPI_SUCCESS; /* the first failure of a segment between nodes */
    int started = 0;
    for (int s = 0; s < segs; s++) {
        /* Segment s of every chunk; segment 0 is the longest, so the
         * window made for it holds every later one. */
        for (int i = 0; i < q; i++) {
            const size_t c = gcmpi_chunk_len(count, q, i);
            cs[i] = (int)gcmpi_chunk_len(c, segs, s);
            ds[i] = (int)(gcmpi_chunk_start(count, q, i) + gcmpi_chunk_start(c, segs, s));
        }
        int finite = 0;
        double t0 = PMPI_Wtime();
        rc = gcmpi_node_shm_reduce_scatter(&n->shm, n->node, in, out, cs, ds, &finite);
        st->comm_s += PMPI_Wtime() - t0;
        if (rc == GCMPI_NODE_SHM_NO_ROOM && s == 0) return rc; /* nothing sent yet */
        if (rc != MPI_SUCCESS) break;
        const size_t at = lo + gcmpi_chunk_start(len, segs, s);
        rc = seg_start(&pp, s, out + at, (size_t)cs[me], finite,
                       ef && ef->residual ? ef->residual + at : NULL,
                       ef && ef->state ? ef->state + at : NULL);
        if (rc != MPI_SUCCESS) break;
        started = s + 1;
        if (s > 0) {
            const int r = seg_finish(&pp, s - 1, out + lo + gcmpi_chunk_start(len, segs, s - 1),
                                     gcmpi_chunk_len(len, segs, s - 1));
            if (first == MPI_SUCCESS) first = r;
        }
    }
    /* The last segment started is still in flight (after a failure in the
     * node too: no request is left open). */
    if (started > 0) {
        const int r = seg_finish(&pp, started - 1,
                                 out + lo + gcmpi_chunk_start(len, segs, started - 1),
                                 gcmpi_chunk_len(len, segs, started - 1));
        if (first == MPI_SUCCESS) first = r;
    }
    st->bytes_sent += (uint64_t)(count - len) * sizeof(float);
    last_segments = segs;
    *inner_rc = first;
    return rc;
}
