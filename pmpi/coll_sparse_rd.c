/* coll_sparse_rd.c — sparse allreduce by recursive doubling (SparCML's
 * SSAR_Rec_Dbl switching to DSAR, Renggli et al., arXiv 1802.08021):
 * what each rank sends grows with the union of the sets it has summed, not
 * with p, so it scales where the allgather's (p - 1) payloads do not.
 *
 *   1. each rank encodes its vector with the codec (and its residual),
 *      decodes its own payload and keeps the non-zero entries as a sorted
 *      (index, value) set;
 *   2. in round k = 0, 1, ... ranks r and r ^ 2^k swap their sets and both
 *      merge them; a union with more than n/2 entries is kept and sent
 *      dense (n floats), which is then smaller;
 *   3. with p not a power of two, the ranks from p2 (the largest power of
 *      two <= p) on first hand their set to rank r - p2 and get the result
 *      back at the end.
 *
 * Every rank ends bit-identical: both partners of a round merge the same
 * two sets, the lower-ranked group's as the left operand, so after round k
 * every aligned block of 2^(k+1) ranks holds the same bytes (float addition
 * is commutative, and the dense/sparse choice depends only on the union).
 *
 * Sets travel as 4-byte units (MPI_UINT32_T): m indices then m value bit
 * patterns, or n values when dense; count is limited to INT_MAX / 2 so a
 * set always fits an int count. A failed encode is sent as a negative
 * header; errors merge like sets (the smaller code wins), so every rank
 * returns the same one. */
#include "coll_impl.h"

#include <stdint.h>

#define DENSE GCMPI_SET_DENSE

typedef struct set {
    uint32_t *u;   /* units: idx[0..m) then val bits[0..m), or n floats */
    int64_t m;     /* entries, or DENSE                                   */
} set;

static float *dense_of(set *s)
{
    return (float *)s->u;
}

static int64_t units_of(const set *s, size_t n)
{
    return s->m == DENSE ? (int64_t)n : 2 * s->m;
}

/* The union's size of two sparse sets. */
static int64_t union_size(const set *a, const set *b)
{
    const uint32_t *ia = a->u, *ib = b->u;
    int64_t i = 0, j = 0, k = 0;
    while (i < a->m && j < b->m) {
        const uint32_t x = ia[i], y = ib[j];
        i += x <= y;
        j += y <= x;
        k++;
    }
    return k + (a->m - i) + (b->m - j);
}

static void scatter_add(float *d, const set *s)
{
    const uint32_t *idx = s->u;
    const float *val = (const float *)(s->u + s->m);
    for (int64_t i = 0; i < s->m; i++) d[idx[i]] += val[i];
}

/* out = lo + hi (lo: the lower-ranked group's set). out differs from both. */
static void merge(const set *lo, const set *hi, set *out, size_t n)
{
    if (lo->m == DENSE || hi->m == DENSE) {
        const set *d = lo->m == DENSE ? lo : hi, *o = d == lo ? hi : lo;
        float *r = dense_of(out);
        memcpy(r, d->u, n * sizeof(float));
        if (o->m == DENSE) {
            const float *x = (const float *)o->u;
            for (size_t i = 0; i < n; i++) r[i] += x[i];
        } else {
            scatter_add(r, o);
        }
        out->m = DENSE;
        return;
    }
    const int64_t k = union_size(lo, hi);
    if (2 * k > (int64_t)n) {
        float *r = dense_of(out);
        memset(r, 0, n * sizeof(float));
        scatter_add(r, lo);
        scatter_add(r, hi);
        out->m = DENSE;
        return;
    }
    const uint32_t *ia = lo->u, *ib = hi->u;
    const float *va = (const float *)(lo->u + lo->m), *vb = (const float *)(hi->u + hi->m);
    uint32_t *io = out->u;
    float *vo = (float *)(out->u + k);
    int64_t i = 0, j = 0, o = 0;
    while (i < lo->m && j < hi->m) {
        if (ia[i] < ib[j]) {
            io[o] = ia[i];
            vo[o++] = va[i++];
        } else if (ib[j] < ia[i]) {
            io[o] = ib[j];
            vo[o++] = vb[j++];
        } else {
            io[o] = ia[i];
            vo[o++] = va[i++] + vb[j++];
        }
    }
    for (; i < lo->m; i++, o++) io[o] = ia[i], vo[o] = va[i];
    for (; j < hi->m; j++, o++) io[o] = ib[j], vo[o] = vb[j];
    out->m = k;
}

/* The non-zero entries of d as a set in s (dense when more than n/2). */
static void set_from_dense(const float *d, size_t n, set *s)
{
    int64_t m = 0;
    for (size_t i = 0; i < n; i++) m += d[i] != 0.0f;
    if (2 * m > (int64_t)n) {
        memcpy(s->u, d, n * sizeof(float));
        s->m = DENSE;
        return;
    }
    uint32_t *idx = s->u;
    float *val = (float *)(s->u + m);
    int64_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i] != 0.0f) {
            idx[k] = (uint32_t)i;
            val[k++] = d[i];
        }
    s->m = m;
}

static void set_to_dense(const set *s, float *d, size_t n)
{
    if (s->m == DENSE) {
        memmove(d, s->u, n * sizeof(float));
        return;
    }
    memset(d, 0, n * sizeof(float));
    scatter_add(d, s);
}

/* Swap sets with partner: header (entries or DENSE, error code), then
 * units. Returns MPI_SUCCESS or an MPI error; *their_err is the partner's
 * gc error code (0: none). */
static int swap_sets(gcmpi_coll_ctx *ctx, int partner, const set *mine, int64_t my_err,
                     set *theirs, int64_t *their_err, size_t n)
{
    gcmpi_call_stats *st = ctx->stats;
    int64_t hs[2] = {my_err ? 0 : mine->m, my_err}, hr[2];
    double t0 = PMPI_Wtime();
    int rc = PMPI_Sendrecv(hs, 2, MPI_INT64_T, partner, 0, hr, 2, MPI_INT64_T, partner, 0,
                           ctx->comm, MPI_STATUS_IGNORE);
    st->bytes_sent += sizeof hs;
    if (rc == MPI_SUCCESS) {
        *their_err = hr[1];
        theirs->m = hr[0];
        const int64_t sn = my_err ? 0 : units_of(mine, n);
        const int64_t rn = hr[1] ? 0 : units_of(theirs, n);
        if (rn > (int64_t)n || (hr[0] < 0 && hr[0] != DENSE)) return MPI_ERR_OTHER;
        rc = PMPI_Sendrecv(mine->u, (int)sn, MPI_UINT32_T, partner, 1, theirs->u, (int)rn,
                           MPI_UINT32_T, partner, 1, ctx->comm, MPI_STATUS_IGNORE);
        st->bytes_sent += (uint64_t)sn * 4;
    }
    st->comm_s += PMPI_Wtime() - t0;
    return rc;
}

static int64_t merge_err(int64_t a, int64_t b)
{
    if (!a) return b;
    if (!b) return a;
    return a < b ? a : b;
}

/* ---- host vectors ---------------------------------------------------------- */

static size_t host_encode(gcmpi_coll_ctx *ctx, const float *in, gcmpi_ef_slot *ef, size_t n,
                          void *dst, size_t cap)
{
    return gcmpi_coll_encode(ctx, in, ef ? ef->residual : NULL, ef ? ef->state : NULL, n,
                             gcmpi_coll_seed(ctx, GCMPI_STAGE_LOCAL, 0), dst, cap);
}

static int host_local_set(gcmpi_coll_ctx *ctx, const void *payload, size_t len, float *out,
                          size_t n, uint32_t *units, int64_t *m)
{
    memset(out, 0, n * sizeof(float));
    size_t d = gc_decode_add_as(ctx->cfg->codec, payload, len, out, n, ctx->ws);
    if (gc_is_error(d)) return (int)gc_error_code(d);
    set s = {units, 0};
    set_from_dense(out, n, &s);
    *m = s.m;
    return 0;
}

static int host_place(const uint32_t *units, int64_t m, float *out, size_t n)
{
    const set s = {(uint32_t *)units, m};
    set_to_dense(&s, out, n);
    return 0;
}

const gcmpi_sparse_rd_ops gcmpi_sparse_rd_host = {
    .encode = host_encode,
    .local_set = host_local_set,
    .place = host_place,
};

int gcmpi_allreduce_sparse_rd(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                              gcmpi_ef_slot *ef)
{
    return gcmpi_allreduce_sparse_rd_with(ctx, &gcmpi_sparse_rd_host, in, out, count, ef);
}

int gcmpi_allreduce_sparse_rd_with(gcmpi_coll_ctx *ctx, const gcmpi_sparse_rd_ops *ops,
                                   const float *in, float *out, size_t count, gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    const int p = ctx->size, me = ctx->rank;
    if (count > (size_t)INT_MAX / 2) return MPI_ERR_COUNT; /* same on every rank */
    const size_t n = count;
    const size_t bound = gc_bound(cfg->codec, n, &cfg->params);
    if (gc_is_error(bound)) return gcmpi_coll_mpi_error(gc_error_code(bound));

    /* Encode (the residual is consumed), decode this rank's payload (in
     * a slot of its own: the sets' slots are written as it is read). */
    uint8_t *payload = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_AUX, bound);
    if (!payload) return MPI_ERR_NO_MEM;
    double t0 = PMPI_Wtime();
    size_t len = ops->encode(ctx, in, ef, n, payload, bound);
    st->encode_s += PMPI_Wtime() - t0;
    int64_t err = gc_is_error(len) ? (int64_t)gc_error_code(len) : 0;

    const size_t bytes = n * sizeof(float);
    set a = {gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_SEND, bytes), 0};
    set b = {gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_RECV, bytes), 0};
    set c = {gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_CHUNK, bytes), 0};
    if (!a.u || !b.u || !c.u) return MPI_ERR_NO_MEM;
    t0 = PMPI_Wtime();
    if (!err) err = ops->local_set(ctx, payload, len, out, n, a.u, &a.m);
    st->decode_s += PMPI_Wtime() - t0;

    int p2 = 1;
    while (2 * p2 <= p) p2 *= 2;
    int rc = MPI_SUCCESS;
    set *mine = &a, *theirs = &b, *next = &c;

    /* Fold the ranks above the power of two in. */
    if (me >= p2) {
        int64_t none = 0;
        rc = swap_sets(ctx, me - p2, mine, err, theirs, &none, n);
    } else if (me + p2 < p) {
        int64_t their_err = 0;
        set empty = {NULL, 0};
        rc = swap_sets(ctx, me + p2, &empty, 0, theirs, &their_err, n);
        err = merge_err(err, their_err);
        if (rc == MPI_SUCCESS && !err) {
            t0 = PMPI_Wtime();
            merge(mine, theirs, next, n);
            set *x = mine;
            mine = next, next = x;
            st->decode_s += PMPI_Wtime() - t0;
        }
    }
    for (int mask = 1; mask < p2 && me < p2 && rc == MPI_SUCCESS; mask <<= 1) {
        const int partner = me ^ mask;
        int64_t their_err = 0;
        rc = swap_sets(ctx, partner, mine, err, theirs, &their_err, n);
        err = merge_err(err, their_err);
        if (rc != MPI_SUCCESS || err) continue;
        t0 = PMPI_Wtime();
        if (me < partner) merge(mine, theirs, next, n);
        else merge(theirs, mine, next, n);
        set *x = mine;
        mine = next, next = x;
        st->decode_s += PMPI_Wtime() - t0;
    }
    /* Hand the result to the ranks above the power of two. */
    if (rc == MPI_SUCCESS && me >= p2) {
        set empty = {NULL, 0};
        int64_t their_err = 0;
        rc = swap_sets(ctx, me - p2, &empty, 0, mine, &their_err, n);
        err = their_err;
    } else if (rc == MPI_SUCCESS && me + p2 < p) {
        int64_t none = 0;
        rc = swap_sets(ctx, me + p2, mine, err, theirs, &none, n);
    }
    if (rc != MPI_SUCCESS) return rc;
    if (err) return gcmpi_coll_mpi_error((gc_error)err);
    t0 = PMPI_Wtime();
    err = ops->place(mine->u, mine->m, out, n);
    st->decode_s += PMPI_Wtime() - t0;
    return err ? gcmpi_coll_mpi_error((gc_error)err) : MPI_SUCCESS;
}
