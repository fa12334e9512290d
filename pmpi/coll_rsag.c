/* coll_rsag.c — allreduce as a compressed reduce-scatter followed by a
 * compressed all-gather (CGX, DeepSpeed's compressed allreduce).
 *
 * The vector is cut into p balanced chunks (gcmpi_chunk_start/len, the same
 * on every rank). Each rank encodes its p chunks with the matching slices of
 * its residual; sizes go through PMPI_Alltoall and payloads through
 * PMPI_Alltoallv, so rank j receives every rank's chunk j. Rank j decodes
 * them in rank order into a zeroed chunk, re-encodes the sum with its
 * "server" residual, and the reduced chunks are all-gathered; every rank,
 * j included, decodes every reduced chunk into place. Each rank sends about
 * 2c(p-1)/p bytes for a payload of c. Chunks are empty when count < p: they
 * travel as zero-byte payloads and are not encoded. */
#include "coll_impl.h"

static size_t chunk_bound(const gcmpi_config *cfg, size_t n)
{
    return n ? gc_bound(cfg->codec, n, &cfg->params) : 0;
}

/* Phase-1 bookkeeping, in the META scratch slot. */
typedef struct rsag_meta {
    int64_t *send_size, *recv_size; /* bytes, or -(gc error) */
    int *scount, *sdispl, *rcount, *rdispl;
    size_t *roff;                   /* byte offset of each received payload */
} rsag_meta;

static int meta_get(gcmpi_coll_ctx *ctx, rsag_meta *m)
{
    const size_t p = (size_t)ctx->size;
    uint8_t *b = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_META,
                                   p * (2 * sizeof(int64_t) + sizeof(size_t) + 4 * sizeof(int)));
    if (!b) return MPI_ERR_NO_MEM;
    m->send_size = (int64_t *)b;
    m->recv_size = m->send_size + p;
    m->roff = (size_t *)(m->recv_size + p);
    m->scount = (int *)(m->roff + p);
    m->sdispl = m->scount + p;
    m->rcount = m->sdispl + p;
    m->rdispl = m->rcount + p;
    return MPI_SUCCESS;
}

/* Encode the p chunks of in into send, chunk j at sdispl[j] units. Returns
 * 0 or the first gc error (every send_size then carries it). */
static size_t encode_chunks(gcmpi_coll_ctx *ctx, const float *in, gcmpi_ef_slot *ef,
                            size_t count, uint8_t *send, size_t unit, rsag_meta *m)
{
    const int p = ctx->size;
    float *res = ef ? ef->residual : NULL;
    float *mom = ef ? ef->state : NULL;
    size_t at = 0, err = 0;
    for (int j = 0; j < p && !err; j++) {
        const size_t lo = gcmpi_chunk_start(count, p, j), n = gcmpi_chunk_len(count, p, j);
        const size_t cap = chunk_bound(ctx->cfg, n);
        size_t len = 0;
        if (n) {
            len = gcmpi_coll_encode(ctx, in + lo, res ? res + lo : NULL, mom ? mom + lo : NULL,
                                    n, gcmpi_coll_seed(ctx, GCMPI_STAGE_LOCAL, (size_t)j),
                                    send + at * unit, cap);
            if (gc_is_error(len)) {
                err = len;
                break;
            }
            gcmpi_wire_pad(send + at * unit, len, unit);
        }
        m->send_size[j] = (int64_t)len;
        m->sdispl[j] = (int)at;
        m->scount[j] = (int)gcmpi_wire_units(len, unit);
        at += gcmpi_wire_units(cap, unit);
    }
    if (err)
        for (int j = 0; j < p; j++) {
            m->send_size[j] = gcmpi_coll_wire_size(err);
            m->scount[j] = 0;
            m->sdispl[j] = 0;
        }
    return err;
}

int gcmpi_allreduce_rsag(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                         gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    const int p = ctx->size, me = ctx->rank;
    const size_t my_n = gcmpi_chunk_len(count, p, me);

    /* Chunks hold count/p or count/p + 1 elements. Their bounds depend only
     * on shared values, so a failure here is the same on all ranks. */
    const size_t b_long = chunk_bound(cfg, count / (size_t)p + 1);
    const size_t b_short = chunk_bound(cfg, count / (size_t)p);
    if (gc_is_error(b_long)) return gcmpi_coll_mpi_error(gc_error_code(b_long));
    if (gc_is_error(b_short)) return gcmpi_coll_mpi_error(gc_error_code(b_short));
    const size_t b_max = b_long > b_short ? b_long : b_short;
    const size_t unit = gcmpi_wire_unit(p, b_max);

    rsag_meta m;
    int rc = meta_get(ctx, &m);
    if (rc != MPI_SUCCESS) return rc;
    const size_t rem = count % (size_t)p;
    const size_t send_units = rem * gcmpi_wire_units(b_long, unit) +
                              ((size_t)p - rem) * gcmpi_wire_units(b_short, unit);
    uint8_t *send = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_SEND, send_units * unit);
    if (!send) return MPI_ERR_NO_MEM;

    /* ---- reduce-scatter ---- */
    double t0 = PMPI_Wtime();
    encode_chunks(ctx, in, ef, count, send, unit, &m);
    st->encode_s += PMPI_Wtime() - t0;

    t0 = PMPI_Wtime();
    rc = PMPI_Alltoall(m.send_size, 1, MPI_INT64_T, m.recv_size, 1, MPI_INT64_T, ctx->comm);
    st->comm_s += PMPI_Wtime() - t0;
    st->bytes_sent += (uint64_t)p * sizeof(int64_t);
    if (rc != MPI_SUCCESS) return rc;
    /* A rank whose encode failed sent its error to everyone. */
    rc = gcmpi_coll_first_failure(m.recv_size, p);
    if (rc != MPI_SUCCESS) return rc;

    /* Sizes that break the contract are noticed here by this rank alone; it
     * still takes part in the exchange and reports through phase 2. */
    const size_t my_bound = chunk_bound(cfg, my_n);
    size_t local_err = 0, total = 0;
    for (int r = 0; r < p; r++) {
        size_t sz = (size_t)m.recv_size[r];
        if (sz > my_bound || (sz == 0) != (my_n == 0)) local_err = GCMPI_GC_ERROR(GC_ERR_CORRUPT);
        m.rcount[r] = (int)gcmpi_wire_units(sz, unit);
        m.rdispl[r] = (int)total;
        m.roff[r] = total * unit;
        total += gcmpi_wire_units(sz, unit);
    }
    if (total > (size_t)INT_MAX) return MPI_ERR_COUNT; /* only with sizes already refused */
    uint8_t *recv = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_RECV, total * unit);
    float *red = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_CHUNK, my_n * sizeof(float));
    if (!recv || !red) return MPI_ERR_NO_MEM;

    MPI_Datatype type;
    rc = gcmpi_wire_type(unit, &type);
    if (rc != MPI_SUCCESS) return rc;
    t0 = PMPI_Wtime();
    rc = PMPI_Alltoallv(send, m.scount, m.sdispl, type, recv, m.rcount, m.rdispl, type,
                        ctx->comm);
    st->comm_s += PMPI_Wtime() - t0;
    for (int j = 0; j < p; j++) st->bytes_sent += (uint64_t)m.scount[j] * unit;
    gcmpi_wire_type_free(&type);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    memset(red, 0, my_n * sizeof(float));
    for (int r = 0; r < p && my_n && !local_err; r++) {
        size_t d = gc_decode_add_as(cfg->codec, recv + m.roff[r], (size_t)m.recv_size[r], red,
                                    my_n, ctx->ws);
        if (gc_is_error(d)) local_err = d;
    }
    st->decode_s += PMPI_Wtime() - t0;

    /* ---- all-gather of the reduced chunks ---- */
    uint8_t *send2 = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_SEND,
                                       gcmpi_wire_units(b_max, unit) * unit);
    if (!send2) return MPI_ERR_NO_MEM;
    size_t len = local_err;
    if (!local_err && my_n) {
        t0 = PMPI_Wtime();
        len = gcmpi_coll_encode(ctx, red, ef ? ef->server : NULL, NULL, my_n,
                                gcmpi_coll_seed(ctx, GCMPI_STAGE_SERVER, (size_t)me), send2,
                                my_bound);
        st->encode_s += PMPI_Wtime() - t0;
    }
    gcmpi_gathered got;
    rc = gcmpi_coll_allgather_payloads(ctx, send2, len, b_max, &got);
    if (rc != MPI_SUCCESS) return rc;

    /* in was consumed by the first encode: out may alias it. */
    t0 = PMPI_Wtime();
    memset(out, 0, count * sizeof(float));
    size_t d = 0;
    for (int r = 0; r < p && !gc_is_error(d); r++) {
        const size_t lo = gcmpi_chunk_start(count, p, r), n = gcmpi_chunk_len(count, p, r);
        if (n == 0)
            d = got.len[r] == 0 ? 0 : GCMPI_GC_ERROR(GC_ERR_CORRUPT);
        else
            d = gc_decode_add_as(cfg->codec, got.buf + got.off[r], (size_t)got.len[r], out + lo,
                                 n, ctx->ws);
    }
    st->decode_s += PMPI_Wtime() - t0;
    return gcmpi_coll_mpi_error(gc_error_code(d));
}
