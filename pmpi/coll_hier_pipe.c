/* coll_hier_pipe.c — hier's reduce-scatter style as a pipeline: the
 * node's sum and the exchange between nodes overlap.
 *
 * Unpipelined (coll_hier.c), a rank sums its chunk inside the node, then
 * encodes it and all-gathers the payloads with its column, then decodes:
 * the link between nodes idles while the node sums, and the node idles
 * while the link carries. Here the chunk goes in S segments. Segment s is
 * summed in the node, encoded with its slice of the residual, and sent to
 * every other member of the column by nonblocking point-to-point
 * messages; while it travels the node sums segment s + 1 (whose barriers
 * keep MPI progressing), and then segment s's payloads are waited for and
 * decoded in column rank order, as the flat allgather decodes them. Two
 * segments are in flight at most, so their buffers are two, reused.
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
 * Where the column runs the flat allgather (the rule's and the model's
 * pick for sparse codecs on a few nodes, and for any codec on two). The
 * choice rests only on what every rank shares (the count, the node size,
 * the configuration, the agreed algorithm between nodes), never on what
 * one node or one rank has: a node without room for its window sums each
 * segment through MPI, and a rank on device buffers encodes and decodes
 * each segment with the GPU's kernels (ops), so columns always meet in
 * the same messages. */
#include "coll_impl.h"
#include "node_shm.h"

#include <stdlib.h>

/* The payload's header on the wire: its size as int64. */
#define HEADER ((size_t)sizeof(int64_t))
/* Messages between column members; the column communicator is the
 * library's own, so no tag of the application's can meet it. */
#define TAG 0x4763

int gcmpi_hier_segments(const gcmpi_config *cfg, size_t count, int q)
{
    const int segs = gcmpi_hier_segment_count(count, q, (size_t)(cfg->hier_segment / sizeof(float)));
    if (segs < 2) return 1;
    /* A segment's message must fit an int count. */
    const size_t longest = gcmpi_chunk_len(gcmpi_chunk_len(count, q, 0), segs, 0);
    const size_t bound = gc_bound(cfg->codec, longest, &cfg->params);
    return gc_is_error(bound) || bound > (size_t)INT_MAX - 64 - HEADER ? 1 : segs;
}

/* One column's exchanges: two slots of a segment's messages each, one
 * stride per member in column rank order (this rank's the one it sends),
 * and the slot's requests. */
typedef struct pipe {
    gcmpi_coll_ctx col; /* the column's context (rank: this node's index) */
    const gcmpi_hier_vec_ops *ops;
    size_t bound;       /* most payload bytes of a segment               */
    size_t stride;      /* bytes of one message: header + bound, rounded */
    int peers;          /* other members of the column                   */
    uint8_t *msgs;      /* 2 slots x col.size strides                    */
    MPI_Request *req;   /* per slot: peers receives, then peers sends    */
    MPI_Status *status; /* 2 * peers                                     */
    int64_t *sizes;     /* every member's payload size, column rank order */
    size_t *off;        /* where each member's payload starts in a slot   */
    int posted[2];      /* slot holds a segment whose requests are open   */
    gcmpi_hier_kept *kept; /* where decoded segments' payloads are kept
                              for the node's gather (NULL: nowhere)      */
} pipe;

/* Buffers for segments of at most `longest` floats (whose messages fit
 * an int count: gcmpi_hier_segments); MPI_ERR_NO_MEM when memory ran out
 * (this rank's alone, as in the flat allgather: coll_impl.h). */
static int pipe_open(pipe *pp, const gcmpi_coll_ctx *ctx, gcmpi_nodes *n,
                     const gcmpi_hier_vec_ops *ops, size_t longest, int q,
                     gcmpi_hier_kept *kept)
{
    const gcmpi_config *cfg = ctx->cfg;
    memset(pp, 0, sizeof *pp);
    pp->kept = kept && kept->buf ? kept : NULL;
    if (pp->kept) pp->kept->len = 0;
    pp->col = gcmpi_hier_column_ctx(ctx, n);
    pp->ops = ops;
    pp->peers = n->n_nodes - 1;
    pp->bound = gc_bound(cfg->codec, longest, &cfg->params);
    pp->stride = (HEADER + pp->bound + 63) & ~(size_t)63;
    const size_t members = (size_t)n->n_nodes, peers = (size_t)pp->peers;
    pp->msgs = ops->payloads(&pp->col, 2 * members * pp->stride);
    const size_t meta = 4 * peers * sizeof(MPI_Request) + 2 * peers * sizeof(MPI_Status) +
                        members * (sizeof(int64_t) + sizeof(size_t)) + 2 * (size_t)q * sizeof(int);
    uint8_t *m = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_META, meta);
    if (!pp->msgs || !m) return MPI_ERR_NO_MEM;
    pp->req = (MPI_Request *)(void *)m;
    pp->status = (MPI_Status *)(void *)(pp->req + 4 * peers);
    pp->sizes = (int64_t *)(void *)(pp->status + 2 * peers);
    pp->off = (size_t *)(void *)(pp->sizes + members);
    for (size_t k = 0; k < members; k++) pp->off[k] = k * pp->stride + HEADER;
    return MPI_SUCCESS;
}

/* The node's segment layout (q ints each, after the offsets). */
static int *pipe_counts(pipe *pp)
{
    return (int *)(void *)(pp->off + pp->col.size);
}

static uint8_t *slot_of(const pipe *pp, int s)
{
    return pp->msgs + (size_t)(s & 1) * (size_t)pp->col.size * pp->stride;
}

/* Encode segment s (m floats at seg, where ops->encode works; checked
 * finite or not by the node's sum) into its slot and post its messages. */
static int seg_start(pipe *pp, int s, float *seg, size_t m, int finite, float *r, float *u)
{
    gcmpi_coll_ctx *col = &pp->col;
    uint8_t *slot = slot_of(pp, s);
    uint8_t *mine = slot + (size_t)col->rank * pp->stride;
    double t0 = PMPI_Wtime();
    if (finite) {
        col->finite_in = seg;
        col->finite_n = m;
    } else {
        /* An overflow step: sent flagged, and the residual does not take it. */
        col->stats->nonfinite_in = 1;
        r = NULL;
    }
    const size_t len = pp->ops->encode(col, seg, r, u, m,
                                       gcmpi_coll_seed(col, GCMPI_STAGE_LOCAL, (size_t)s),
                                       mine + HEADER, pp->bound);
    col->finite_in = NULL;
    col->finite_n = 0;
    col->stats->encode_s += PMPI_Wtime() - t0;
    const int64_t w = gcmpi_coll_wire_size(len);
    memcpy(mine, &w, sizeof w);
    const int bytes = (int)(HEADER + (w > 0 ? (size_t)w : 0));

    MPI_Request *req = pp->req + (size_t)(s & 1) * 2 * (size_t)pp->peers;
    int rc = MPI_SUCCESS;
    for (int k = 0, j = 0; k < col->size && rc == MPI_SUCCESS; k++) {
        if (k == col->rank) continue;
        rc = PMPI_Irecv(slot + (size_t)k * pp->stride, (int)pp->stride, MPI_BYTE, k, TAG,
                        col->comm, &req[j]);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Isend(mine, bytes, MPI_BYTE, k, TAG, col->comm, &req[pp->peers + j]);
        j++;
    }
    if (rc != MPI_SUCCESS) return rc;
    pp->posted[s & 1] = 1;
    col->stats->bytes_sent += (uint64_t)pp->peers * (uint64_t)bytes;
    return MPI_SUCCESS;
}

/* A decoded segment's record in pp->kept: the members' payload sizes,
 * then each payload, all at 16-byte boundaries (zero padding). Past its
 * room nothing more is kept, and the node gathers floats. */
static void keep_segment(pipe *pp, const uint8_t *slot)
{
    gcmpi_hier_kept *kept = pp->kept;
    if (!kept || !kept->buf) return;
    const size_t members = (size_t)pp->col.size, head = members * sizeof(int64_t);
    size_t need = gcmpi_hier_kept_align(head);
    for (size_t k = 0; k < members; k++) need += gcmpi_hier_kept_align((size_t)pp->sizes[k]);
    if (need > kept->cap - kept->len) {
        kept->buf = NULL;
        return;
    }
    uint8_t *at = kept->buf + kept->len;
    memcpy(at, pp->sizes, head);
    memset(at + head, 0, gcmpi_hier_kept_align(head) - head);
    at += gcmpi_hier_kept_align(head);
    for (size_t k = 0; k < members; k++) {
        const size_t len = (size_t)pp->sizes[k];
        memcpy(at, slot + pp->off[k], len);
        memset(at + len, 0, gcmpi_hier_kept_align(len) - len);
        at += gcmpi_hier_kept_align(len);
    }
    kept->len += need;
}

/* Wait for segment s's messages and decode every member's payload into
 * out[0..m) (where ops decodes) in column rank order. */
static int seg_finish(pipe *pp, int s, float *out, size_t m)
{
    gcmpi_coll_ctx *col = &pp->col;
    if (!pp->posted[s & 1]) return MPI_SUCCESS;
    pp->posted[s & 1] = 0;
    const int peers = pp->peers;
    MPI_Request *req = pp->req + (size_t)(s & 1) * 2 * (size_t)peers;
    const uint8_t *slot = slot_of(pp, s);
    double t0 = PMPI_Wtime();
    int rc = PMPI_Waitall(2 * peers, req, pp->status);
    col->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;

    int corrupt = 0;
    for (int k = 0, j = 0; k < col->size; k++) {
        memcpy(&pp->sizes[k], slot + (size_t)k * pp->stride, sizeof(int64_t));
        if (k == col->rank) continue;
        int got = 0;
        PMPI_Get_count(&pp->status[j++], MPI_BYTE, &got);
        const int64_t want = (int64_t)HEADER + (pp->sizes[k] > 0 ? pp->sizes[k] : 0);
        corrupt |= got < (int)HEADER || (int64_t)got < want || pp->sizes[k] > (int64_t)pp->bound;
    }
    if (corrupt) return MPI_ERR_OTHER;
    rc = gcmpi_coll_first_failure(pp->sizes, col->size);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    const gcmpi_gathered got = {.buf = slot, .len = pp->sizes, .off = pp->off};
    const size_t r = pp->ops->decode_all(col, &got, out, m);
    col->stats->decode_s += PMPI_Wtime() - t0;
    if (!gc_is_error(r)) keep_segment(pp, slot);
    return gcmpi_coll_mpi_error(gc_error_code(r));
}

/* The node's sum of segment cs/ds into hout: through the window while
 * *shm (given up for good where the node has no room: every rank of the
 * node sees that alike), else PMPI_Reduce_scatter from the segment's
 * pieces packed together. *finite: the sum holds no inf or NaN. */
static int node_sum(gcmpi_coll_ctx *ctx, gcmpi_nodes *n, int *shm, const float *hin, float *hout,
                    const int *cs, const int *ds, int *finite)
{
    const int q = n->node_size, me = n->node_rank;
    if (*shm) {
        /* The segment in one round where it fits (node_shm.h). */
        size_t round = 0;
        for (int i = 0; i < q; i++) round += (size_t)cs[i];
        if (round > GCMPI_NODE_SHM_PIPE_MAX_FLOATS) round = GCMPI_NODE_SHM_PIPE_MAX_FLOATS;
        const int rc =
            gcmpi_node_shm_reduce_scatter(&n->shm, n->node, hin, hout, cs, ds, round, finite);
        if (rc != GCMPI_NODE_SHM_NO_ROOM) return rc;
        *shm = gcmpi_hier_window_gone(n);
    }
    size_t total = 0;
    for (int i = 0; i < q; i++) total += (size_t)cs[i];
    float *packed = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_CHUNK, total * sizeof(float));
    if (!packed) return MPI_ERR_NO_MEM;
    for (int i = 0, at = 0; i < q; at += cs[i], i++)
        memcpy(packed + at, hin + ds[i], (size_t)cs[i] * sizeof(float));
    const int rc = PMPI_Reduce_scatter(packed, hout + ds[me], cs, MPI_FLOAT, MPI_SUM, n->node);
    *finite = rc == MPI_SUCCESS && gc_all_finite(hout + ds[me], (size_t)cs[me]);
    return rc;
}

int gcmpi_hier_pipeline(gcmpi_coll_ctx *ctx, gcmpi_nodes *n, const gcmpi_hier_vec_ops *ops,
                        const float *hin, float *hout, float *out, size_t count, int segs,
                        gcmpi_ef_slot *ef, int *shm, int *local, int *inner_rc,
                        gcmpi_hier_kept *kept)
{
    const int q = n->node_size, me = n->node_rank;
    *inner_rc = MPI_SUCCESS;
    pipe pp;
    int rc = pipe_open(&pp, ctx, n, ops, gcmpi_chunk_len(gcmpi_chunk_len(count, q, 0), segs, 0), q,
                       kept);
    if (rc != MPI_SUCCESS) return rc;
    int *cs = pipe_counts(&pp), *ds = cs + q;
    const size_t lo = gcmpi_chunk_start(count, q, me), len = gcmpi_chunk_len(count, q, me);
    gcmpi_call_stats *st = ctx->stats;
    int first = MPI_SUCCESS; /* the first failure of a segment between nodes */
    int started = 0;
    for (int s = 0; s <= segs; s++) {
        if (s < segs) {
            /* Segment s of every chunk; segment 0 is the longest, so the
             * window made for it holds every later one. */
            for (int i = 0; i < q; i++) {
                const size_t c = gcmpi_chunk_len(count, q, i);
                cs[i] = (int)gcmpi_chunk_len(c, segs, s);
                ds[i] = (int)(gcmpi_chunk_start(count, q, i) + gcmpi_chunk_start(c, segs, s));
            }
            int finite = 0;
            double t0 = PMPI_Wtime();
            rc = node_sum(ctx, n, shm, hin, hout, cs, ds, &finite);
            st->comm_s += PMPI_Wtime() - t0;
            if (rc != MPI_SUCCESS) break;
            const size_t at = (size_t)ds[me], m = (size_t)cs[me];
            if (ops->stage && *local == MPI_SUCCESS)
                *local = ops->stage(out + at, hout + at, m * sizeof(float));
            rc = seg_start(&pp, s, out + at, m, finite,
                           ef && ef->residual ? ef->residual + at : NULL,
                           ef && ef->state ? ef->state + at : NULL);
            if (rc != MPI_SUCCESS) break;
            started = s + 1;
        }
        if (s > 0) { /* the segment before, in flight meanwhile */
            const size_t at = lo + gcmpi_chunk_start(len, segs, s - 1);
            const size_t m = gcmpi_chunk_len(len, segs, s - 1);
            const int r = seg_finish(&pp, s - 1, out + at, m);
            if (first == MPI_SUCCESS) first = r;
            if (ops->stage && *local == MPI_SUCCESS)
                *local = ops->stage(hout + at, out + at, m * sizeof(float));
        }
    }
    /* After a failure in the node, what was posted still completes, so no
     * request is left open. */
    if (rc != MPI_SUCCESS && started > 0) {
        const size_t at = lo + gcmpi_chunk_start(len, segs, started - 1);
        const int r = seg_finish(&pp, started - 1, out + at, gcmpi_chunk_len(len, segs, started - 1));
        if (first == MPI_SUCCESS) first = r;
    }
    st->bytes_sent += (uint64_t)(count - len) * sizeof(float);
    *inner_rc = first;
    return rc;
}

/* ---- the node's gather by kept payloads ----------------------------------- */

static int kept_mode = -1;

void gcmpi_hier_set_kept_mode(int mode)
{
    kept_mode = mode;
}

int gcmpi_hier_kept_room(gcmpi_coll_ctx *ctx, const gcmpi_nodes *n,
                         const gcmpi_hier_vec_ops *ops, size_t count, int segs, int shm,
                         gcmpi_hier_kept *kept)
{
    memset(kept, 0, sizeof *kept);
    const gcmpi_config *cfg = ctx->cfg;
    if (kept_mode == 0 || !shm || segs < 2) return 0;
    /* A dense body is decoded over every float of the chunk, once a
     * member: more than copying the chunk's sum. */
    if (kept_mode < 0 && !(gc_codec_flags(cfg->codec) & GC_SPARSE)) return 0;
    /* From the longest chunk and segment: the same room on every rank. */
    const size_t chunk = gcmpi_chunk_len(count, n->node_size, 0);
    const size_t bound = gc_bound(cfg->codec, gcmpi_chunk_len(chunk, segs, 0), &cfg->params);
    if (gc_is_error(bound)) return 0;
    const size_t cap = gcmpi_hier_kept_cap(segs, (size_t)n->n_nodes, bound);
    const size_t most = GCMPI_NODE_SHM_SHARE_MAX_BYTES;
    if (kept_mode < 0 ? !gcmpi_hier_kept_fits(cap, chunk * sizeof(float), most) : cap > most)
        return 0;
    /* The room the node's window is grown to: the same on every rank. */
    kept->cap = cap;
    /* Device vectors are decoded by the kernels: this rank keeps nothing,
     * and its node gathers floats. */
    if (!ops->stage) kept->buf = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_AUX, cap);
    return 1;
}

/* Decodes rank j's kept records (len bytes at rec, written by
 * keep_segment) into its chunk, out[0..chunk): segment by segment as the
 * pipeline cut it, each as its column decoded it (gcmpi_coll_decode_all:
 * the segment zeroed, which brings it into the cache, then every member's
 * payload added in column order). 0 where the records do not parse or a
 * payload does not decode. */
static int decode_kept(gcmpi_coll_ctx *col, const uint8_t *rec, size_t len, float *out,
                       size_t chunk, int segs, int64_t *sizes, size_t *off)
{
    const size_t members = (size_t)col->size, head = gcmpi_hier_kept_align(members * sizeof(int64_t));
    size_t at = 0;
    for (int s = 0; s < segs; s++) {
        if (head > len - at) return 0;
        memcpy(sizes, rec + at, members * sizeof(int64_t));
        size_t p = head;
        for (size_t k = 0; k < members; k++) {
            if (sizes[k] < 0 || gcmpi_hier_kept_align((size_t)sizes[k]) > len - at - p) return 0;
            off[k] = p;
            p += gcmpi_hier_kept_align((size_t)sizes[k]);
        }
        const gcmpi_gathered got = {.buf = rec + at, .len = sizes, .off = off};
        const size_t r = gcmpi_coll_decode_all(col, &got, out + gcmpi_chunk_start(chunk, segs, s),
                                               gcmpi_chunk_len(chunk, segs, s));
        if (gc_is_error(r)) return 0;
        at += p;
    }
    return at == len;
}

int gcmpi_hier_gather_kept(gcmpi_coll_ctx *ctx, gcmpi_nodes *n, const gcmpi_hier_kept *kept,
                           float *hout, size_t count, int segs, int inner_rc, int *worst,
                           int *gathered)
{
    const int q = n->node_size, me = n->node_rank;
    *gathered = 0;
    *worst = inner_rc;
    const size_t members = (size_t)n->n_nodes;
    const size_t meta = (size_t)q * (sizeof(const unsigned char *) + sizeof(int64_t)) +
                        members * (sizeof(int64_t) + sizeof(size_t));
    uint8_t *m = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_META, meta);
    if (!m) return MPI_ERR_NO_MEM;
    const unsigned char **from = (const unsigned char **)(void *)m;
    int64_t *lens = (int64_t *)(void *)(from + q);
    int64_t *sizes = lens + q;
    size_t *off = (size_t *)(void *)(sizes + members);

    /* Only a rank whose column succeeded has payloads worth decoding. */
    const int64_t len = kept && kept->buf && inner_rc == MPI_SUCCESS ? (int64_t)kept->len : -1;
    double t0 = PMPI_Wtime();
    int rc = gcmpi_node_shm_share(&n->shm, n->node, kept ? kept->cap : 0,
                                  len >= 0 ? kept->buf : NULL, len, inner_rc, from, lens, worst);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc; /* GCMPI_NODE_SHM_NO_ROOM included */
    int all = 1;
    for (int j = 0; j < q; j++) all &= lens[j] >= 0;
    int decoded = 1;
    if (all) {
        gcmpi_coll_ctx col = gcmpi_hier_column_ctx(ctx, n);
        t0 = PMPI_Wtime();
        for (int j = 0; j < q && decoded; j++)
            if (j != me)
                decoded = decode_kept(&col, from[j], (size_t)lens[j],
                                      hout + gcmpi_chunk_start(count, q, j),
                                      gcmpi_chunk_len(count, q, j), segs, sizes, off);
        ctx->stats->decode_s += PMPI_Wtime() - t0;
        ctx->stats->bytes_sent += (uint64_t)len;
    }
    t0 = PMPI_Wtime();
    rc = gcmpi_node_shm_release(n->shm, n->node);
    ctx->stats->comm_s += PMPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) return rc;
    *gathered = all;
    /* Records a rank of this node wrote and decoded itself: a failure here
     * is this library's fault, not the data's. */
    return decoded ? MPI_SUCCESS : MPI_ERR_INTERN;
}
