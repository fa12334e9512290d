/* coll_device.c — the compressed collectives on device buffers
 * (DESIGN.md "GPU"). Same messages, in the same order, as the host
 * algorithms (coll_allgather.c, coll_rsag.c, coll_allgather_op.c), so a
 * rank on device buffers and a rank on host buffers can even meet in one
 * call: payloads are encoded by the GPU kernels (gcmpi_gpu_encode, reading
 * the device vector and residual) into page-locked host memory, exchanged
 * with PMPI_*, and decoded by the GPU (gcmpi_gpu_decode_add) into the
 * zeroed device output in rank order, so every rank ends bit-identical.
 * The host never reads or writes device memory.
 *
 * The native algorithm (none, int8, randk, powersgd) runs on the device too
 * (coll_device_native.c), hier (its node phases on a host copy, its call
 * between nodes by the kernels) and sparse_rd (its sets made and placed by
 * the kernels, its rounds merging them on the host). Where the GPU library
 * has no kernels (a codec it does not support, a zstd stage, DGC momentum
 * inside the encode (GCMPI_EF_MOMENTUM) of a codec without a sent set to
 * mask), the call is compressed on the host instead: the vector and the slot's
 * device state are copied to page-locked buffers, the host algorithm
 * runs, and output and state are copied back. The statistics count the
 * two kinds apart (device.h). */
#include "coll_device.h"

#include "coll_impl.h"
#include "device.h"
#include "device_stage.h"

static const gcmpi_gpu_table *gpu_of(gcmpi_gpu_ctx **ctx)
{
    *ctx = gcmpi_device_ctx();
    return *ctx ? gcmpi_device_gpu() : NULL;
}

int gcmpi_device_has_kernels(const gcmpi_config *cfg, gcmpi_algo algo)
{
    const gcmpi_gpu_table *g = gcmpi_device_gpu();
    if (g && algo == GCMPI_ALGO_NATIVE)
        return gcmpi_device_native_supports(cfg->codec) && !gcmpi_coll_momentum_on(cfg);
    return g &&
           (algo == GCMPI_ALGO_ALLGATHER || algo == GCMPI_ALGO_RSAG ||
            algo == GCMPI_ALGO_SPARSE_RD) &&
           g->supports(cfg->codec) && cfg->params.zstd_level == 0 &&
           (!gcmpi_coll_momentum_on(cfg) || g->encode_momentum_supports(cfg->codec));
}

/* Encode g[0..n) (device) with residual r (device or NULL) into dst
 * (host); with r and u (device) under GCMPI_EF_MOMENTUM, DGC's momentum
 * correction with u (gcmpi_coll_encode's choice, on the GPU). */
static size_t dev_encode(gcmpi_coll_ctx *ctx, const float *g, float *r, float *u, size_t n,
                         uint64_t seed, void *dst, size_t cap)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    if (!gpu) return GCMPI_GC_ERROR(GC_ERR_GENERIC);
    if (r && u && gcmpi_coll_momentum_on(cfg))
        return gpu->encode_momentum(gc, cfg->codec, g, u, r, n, gcmpi_coll_momentum(cfg),
                                    &cfg->params, seed, dst, cap);
    return gpu->encode(gc, cfg->codec, g, r, n, &cfg->params, seed, dst, cap);
}

/* acc[0..n) (device) = 0, then += each of the k payloads in order. */
static size_t dev_zero_and_decode(const gcmpi_gathered *got, const int *ranks, int k,
                                  float *acc, size_t n)
{
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    if (!gpu) return GCMPI_GC_ERROR(GC_ERR_GENERIC);
    size_t r = gpu->zero(gc, acc, n * sizeof(float));
    for (int i = 0; i < k && !gc_is_error(r); i++)
        r = gpu->decode_add(gc, got->buf + got->off[ranks[i]], (size_t)got->len[ranks[i]], acc, n);
    return r;
}

static size_t dev_decode_all(gcmpi_coll_ctx *ctx, const gcmpi_gathered *got, float *out,
                             size_t count)
{
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    if (!gpu) return GCMPI_GC_ERROR(GC_ERR_GENERIC);
    size_t r = gpu->zero(gc, out, count * sizeof(float));
    for (int k = 0; k < ctx->size && !gc_is_error(r); k++)
        r = gpu->decode_add(gc, got->buf + got->off[k], (size_t)got->len[k], out, count);
    return r;
}

static int encode_and_gather(gcmpi_coll_ctx *ctx, const float *in, size_t count,
                             gcmpi_ef_slot *ef, gcmpi_gathered *got)
{
    const gcmpi_config *cfg = ctx->cfg;
    const size_t bound = gc_bound(cfg->codec, count, &cfg->params);
    if (gc_is_error(bound)) return gcmpi_coll_mpi_error(gc_error_code(bound));
    const size_t unit = gcmpi_wire_unit(ctx->size, bound);
    uint8_t *send = gcmpi_device_host_buffer(GCMPI_DEV_HOST_PAYLOAD,
                                             gcmpi_wire_units(bound, unit) * unit);
    size_t len = GCMPI_GC_ERROR(GC_ERR_ALLOC);
    double t0 = PMPI_Wtime();
    if (send)
        len = dev_encode(ctx, in, ef ? ef->residual : NULL, ef ? ef->state : NULL, count,
                         gcmpi_coll_seed(ctx, GCMPI_STAGE_LOCAL, 0), send, bound);
    ctx->stats->encode_s += PMPI_Wtime() - t0;
    /* A failed allocation still takes part, sending its error as its size. */
    uint8_t none[8];
    return gcmpi_coll_allgather_payloads(ctx, send ? send : none, len, bound, got);
}

static int allreduce_allgather(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                               gcmpi_ef_slot *ef)
{
    gcmpi_gathered got;
    int rc = encode_and_gather(ctx, in, count, ef, &got);
    if (rc != MPI_SUCCESS) return rc;
    double t0 = PMPI_Wtime();
    size_t r = dev_decode_all(ctx, &got, out, count);
    ctx->stats->decode_s += PMPI_Wtime() - t0;
    return gcmpi_coll_mpi_error(gc_error_code(r));
}

/* ---- rsag (coll_rsag.c's exchange, GPU encode and decode) ---------------- */

static size_t chunk_bound(const gcmpi_config *cfg, size_t n)
{
    return n ? gc_bound(cfg->codec, n, &cfg->params) : 0;
}

static int allreduce_rsag(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count,
                          gcmpi_ef_slot *ef)
{
    const gcmpi_config *cfg = ctx->cfg;
    gcmpi_call_stats *st = ctx->stats;
    const int p = ctx->size, me = ctx->rank;
    const size_t my_n = gcmpi_chunk_len(count, p, me);
    const size_t b_long = chunk_bound(cfg, count / (size_t)p + 1);
    const size_t b_short = chunk_bound(cfg, count / (size_t)p);
    if (gc_is_error(b_long)) return gcmpi_coll_mpi_error(gc_error_code(b_long));
    if (gc_is_error(b_short)) return gcmpi_coll_mpi_error(gc_error_code(b_short));
    const size_t b_max = b_long > b_short ? b_long : b_short;
    const size_t unit = gcmpi_wire_unit(p, b_max);

    uint8_t *meta = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_META,
                                      (size_t)p * (2 * sizeof(int64_t) + sizeof(size_t) +
                                                   4 * sizeof(int)));
    if (!meta) return MPI_ERR_NO_MEM;
    int64_t *send_size = (int64_t *)meta, *recv_size = send_size + p;
    size_t *roff = (size_t *)(recv_size + p);
    int *scount = (int *)(roff + p), *sdispl = scount + p, *rcount = sdispl + p,
        *rdispl = rcount + p;
    const size_t rem = count % (size_t)p;
    const size_t send_units = rem * gcmpi_wire_units(b_long, unit) +
                              ((size_t)p - rem) * gcmpi_wire_units(b_short, unit);
    uint8_t *send = gcmpi_device_host_buffer(GCMPI_DEV_HOST_PAYLOAD, send_units * unit);
    float *red = gcmpi_device_buffer(GCMPI_DEV_BUF_CHUNK, my_n * sizeof(float));
    if (!send || !red) return MPI_ERR_NO_MEM; /* local, as in coll_rsag.c */

    /* ---- reduce-scatter ---- */
    double t0 = PMPI_Wtime();
    float *res = ef ? ef->residual : NULL, *mom = ef ? ef->state : NULL;
    size_t at = 0, err = 0;
    for (int j = 0; j < p && !err; j++) {
        const size_t lo = gcmpi_chunk_start(count, p, j), n = gcmpi_chunk_len(count, p, j);
        const size_t cap = chunk_bound(cfg, n);
        size_t len = 0;
        if (n) {
            len = dev_encode(ctx, in + lo, res ? res + lo : NULL, mom ? mom + lo : NULL, n,
                             gcmpi_coll_seed(ctx, GCMPI_STAGE_LOCAL, (size_t)j),
                             send + at * unit, cap);
            if (gc_is_error(len)) {
                err = len;
                break;
            }
            gcmpi_wire_pad(send + at * unit, len, unit);
        }
        send_size[j] = (int64_t)len;
        sdispl[j] = (int)at;
        scount[j] = (int)gcmpi_wire_units(len, unit);
        at += gcmpi_wire_units(cap, unit);
    }
    if (err)
        for (int j = 0; j < p; j++) {
            send_size[j] = gcmpi_coll_wire_size(err);
            scount[j] = sdispl[j] = 0;
        }
    st->encode_s += PMPI_Wtime() - t0;

    t0 = PMPI_Wtime();
    int rc = PMPI_Alltoall(send_size, 1, MPI_INT64_T, recv_size, 1, MPI_INT64_T, ctx->comm);
    st->comm_s += PMPI_Wtime() - t0;
    st->bytes_sent += (uint64_t)p * sizeof(int64_t);
    if (rc != MPI_SUCCESS) return rc;
    rc = gcmpi_coll_first_failure(recv_size, p);
    if (rc != MPI_SUCCESS) return rc;

    const size_t my_bound = chunk_bound(cfg, my_n);
    size_t local_err = 0, total = 0;
    for (int r = 0; r < p; r++) {
        size_t sz = (size_t)recv_size[r];
        if (sz > my_bound || (sz == 0) != (my_n == 0)) local_err = GCMPI_GC_ERROR(GC_ERR_CORRUPT);
        rcount[r] = (int)gcmpi_wire_units(sz, unit);
        rdispl[r] = (int)total;
        roff[r] = total * unit;
        total += gcmpi_wire_units(sz, unit);
    }
    if (total > (size_t)INT_MAX) return MPI_ERR_COUNT;
    uint8_t *recv = gcmpi_scratch_get(ctx->scratch, GCMPI_SCR_RECV, total * unit);
    if (!recv) return MPI_ERR_NO_MEM;

    MPI_Datatype type;
    rc = gcmpi_wire_type(unit, &type);
    if (rc != MPI_SUCCESS) return rc;
    t0 = PMPI_Wtime();
    rc = PMPI_Alltoallv(send, scount, sdispl, type, recv, rcount, rdispl, type, ctx->comm);
    st->comm_s += PMPI_Wtime() - t0;
    for (int j = 0; j < p; j++) st->bytes_sent += (uint64_t)scount[j] * unit;
    gcmpi_wire_type_free(&type);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    if (my_n && !local_err) {
        gcmpi_gpu_ctx *gc;
        const gcmpi_gpu_table *gpu = gpu_of(&gc);
        size_t d = gpu ? gpu->zero(gc, red, my_n * sizeof(float)) : GCMPI_GC_ERROR(GC_ERR_GENERIC);
        for (int r = 0; r < p && !gc_is_error(d); r++)
            d = gpu->decode_add(gc, recv + roff[r], (size_t)recv_size[r], red, my_n);
        if (gc_is_error(d)) local_err = d;
    }
    st->decode_s += PMPI_Wtime() - t0;

    /* ---- all-gather of the reduced chunks (send is free again) ---- */
    size_t len = local_err;
    if (!local_err && my_n) {
        t0 = PMPI_Wtime();
        len = dev_encode(ctx, red, ef ? ef->server : NULL, NULL, my_n,
                         gcmpi_coll_seed(ctx, GCMPI_STAGE_SERVER, (size_t)me), send, my_bound);
        st->encode_s += PMPI_Wtime() - t0;
    }
    gcmpi_gathered got;
    rc = gcmpi_coll_allgather_payloads(ctx, send, len, b_max, &got);
    if (rc != MPI_SUCCESS) return rc;

    t0 = PMPI_Wtime();
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    size_t d = gpu ? gpu->zero(gc, out, count * sizeof(float)) : GCMPI_GC_ERROR(GC_ERR_GENERIC);
    for (int r = 0; r < p && !gc_is_error(d); r++) {
        const size_t lo = gcmpi_chunk_start(count, p, r), n = gcmpi_chunk_len(count, p, r);
        if (n == 0)
            d = got.len[r] == 0 ? 0 : GCMPI_GC_ERROR(GC_ERR_CORRUPT);
        else
            d = gpu->decode_add(gc, got.buf + got.off[r], (size_t)got.len[r], out + lo, n);
    }
    st->decode_s += PMPI_Wtime() - t0;
    return gcmpi_coll_mpi_error(gc_error_code(d));
}

/* ---- sparse_rd (coll_sparse_rd.c's rounds, on host sets): this rank's set
 * made on the device from the decode of its payload, so only its entries
 * cross to the host (its n floats where it is dense), and the summed set
 * placed into the device output ------------------------------------------- */

static size_t sparse_encode(gcmpi_coll_ctx *ctx, const float *in, gcmpi_ef_slot *ef, size_t n,
                            void *dst, size_t cap)
{
    return dev_encode(ctx, in, ef ? ef->residual : NULL, ef ? ef->state : NULL, n,
                      gcmpi_coll_seed(ctx, GCMPI_STAGE_LOCAL, 0), dst, cap);
}

static int sparse_local_set(gcmpi_coll_ctx *ctx, const void *payload, size_t len, float *out,
                            size_t n, uint32_t *units, int64_t *m)
{
    (void)ctx;
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    if (!gpu) return GC_ERR_GENERIC;
    size_t r = gpu->zero(gc, out, n * sizeof(float));
    if (!gc_is_error(r)) r = gpu->decode_add(gc, payload, len, out, n);
    if (!gc_is_error(r)) r = gpu->sparse_rd_set(gc, out, n, units, n / 2);
    if (!gc_is_error(r) && 2 * r > n) {
        *m = GCMPI_SET_DENSE;
        r = gpu->copy(gc, units, out, n * sizeof(float));
    } else if (!gc_is_error(r)) {
        *m = (int64_t)r;
    }
    return gc_is_error(r) ? (int)gc_error_code(r) : 0;
}

static int sparse_place(const uint32_t *units, int64_t m, float *out, size_t n)
{
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    if (!gpu) return GC_ERR_GENERIC;
    const size_t r = m == GCMPI_SET_DENSE ? gpu->copy(gc, out, units, n * sizeof(float))
                                          : gpu->sparse_rd_out(gc, units, (size_t)m, n, out);
    return gc_is_error(r) ? (int)gc_error_code(r) : 0;
}

static const gcmpi_sparse_rd_ops device_sets = {
    .encode = sparse_encode,
    .local_set = sparse_local_set,
    .place = sparse_place,
};

/* ---- host fallback: the host algorithm on page-locked copies ------------- */

/* The slot's device floats: residual, server, state, GCMPI_MOMENTUM's u and m. */
enum { SLOT_PARTS = 4 };
typedef struct host_slot {
    gcmpi_ef_slot slot;
    float *dev[SLOT_PARTS];
    size_t floats[SLOT_PARTS];
} host_slot;

/* Host copies of the slot's device floats (in the STATE pool slot). */
static int slot_to_host(const gcmpi_ef_slot *ef, size_t count, size_t server, size_t state,
                        size_t momentum, host_slot *h)
{
    memset(h, 0, sizeof *h);
    if (!ef) return MPI_SUCCESS;
    h->slot = *ef;
    float *dev[SLOT_PARTS] = {ef->residual, ef->server, ef->state, ef->momentum};
    size_t n[SLOT_PARTS] = {ef->residual ? count : 0, ef->server ? server : 0,
                            ef->state ? state : 0, ef->momentum ? momentum : 0};
    float *buf = gcmpi_device_host_buffer(GCMPI_DEV_HOST_STATE,
                                          (n[0] + n[1] + n[2] + n[3]) * sizeof(float));
    if (!buf) return MPI_ERR_NO_MEM;
    float *at = buf;
    float **host[SLOT_PARTS] = {&h->slot.residual, &h->slot.server, &h->slot.state,
                                &h->slot.momentum};
    for (int i = 0; i < SLOT_PARTS; i++) {
        h->dev[i] = dev[i];
        h->floats[i] = n[i];
        *host[i] = n[i] ? at : NULL;
        if (n[i]) {
            int rc = gcmpi_device_copy(at, dev[i], n[i] * sizeof(float), 1);
            if (rc != MPI_SUCCESS) return rc;
        }
        at += n[i];
    }
    return MPI_SUCCESS;
}

static int slot_to_device(const host_slot *h)
{
    const float *host[SLOT_PARTS] = {h->slot.residual, h->slot.server, h->slot.state,
                                     h->slot.momentum};
    for (int i = 0; i < SLOT_PARTS; i++)
        if (h->floats[i]) {
            int rc = gcmpi_device_copy(h->dev[i], host[i], h->floats[i] * sizeof(float), 1);
            if (rc != MPI_SUCCESS) return rc;
        }
    return MPI_SUCCESS;
}

static int allreduce_on_host(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                             size_t count, gcmpi_ef_slot *ef)
{
    const size_t bytes = count * sizeof(float);
    size_t server = 0, state = 0;
    gcmpi_coll_slot_sizes(ctx->cfg, algo, count, ctx->size, &server, &state);
    float *hin = gcmpi_device_host_buffer(GCMPI_DEV_HOST_IN, bytes);
    float *hout = gcmpi_device_host_buffer(GCMPI_DEV_HOST_OUT, bytes);
    host_slot h;
    /* A local failure here must not leave the other ranks waiting: the
     * host algorithm still runs, on a zero vector, and the error is
     * returned after it. */
    int local = hin && hout ? gcmpi_device_copy(hin, in, bytes, 1) : MPI_ERR_NO_MEM;
    const size_t momentum = gcmpi_coll_momentum_floats(ctx->cfg, count);
    if (local == MPI_SUCCESS) local = slot_to_host(ef, count, server, state, momentum, &h);
    if (local != MPI_SUCCESS) {
        if (!hin || !hout) return local;
        memset(hin, 0, bytes);
        memset(&h, 0, sizeof h);
    }
    int rc = gcmpi_allreduce_compressed(ctx, algo, hin, hout, count, ef ? &h.slot : NULL);
    if (rc == MPI_SUCCESS && local == MPI_SUCCESS) rc = gcmpi_device_copy(out, hout, bytes, 1);
    if (rc == MPI_SUCCESS && local == MPI_SUCCESS) rc = slot_to_device(&h);
    return local != MPI_SUCCESS ? local : rc;
}

static int allgather_on_host(gcmpi_coll_ctx *ctx, gcmpi_algo way, const float *block, float *out,
                             size_t count, gcmpi_ef_slot *ef)
{
    const size_t bytes = count * sizeof(float), total = bytes * (size_t)ctx->size;
    float *hin = gcmpi_device_host_buffer(GCMPI_DEV_HOST_IN, bytes);
    float *hout = gcmpi_device_host_buffer(GCMPI_DEV_HOST_OUT, total);
    host_slot h;
    int local = hin && hout ? gcmpi_device_copy(hin, block, bytes, 1) : MPI_ERR_NO_MEM;
    if (local == MPI_SUCCESS) local = slot_to_host(ef, count, 0, 0, 0, &h);
    if (local != MPI_SUCCESS) {
        if (!hin || !hout) return local;
        memset(hin, 0, bytes);
        memset(&h, 0, sizeof h);
    }
    int rc = gcmpi_allgather_compressed(ctx, way, hin, hout, count, ef ? &h.slot : NULL);
    if (rc == MPI_SUCCESS && local == MPI_SUCCESS) rc = gcmpi_device_copy(out, hout, total, 1);
    if (rc == MPI_SUCCESS && local == MPI_SUCCESS) rc = slot_to_device(&h);
    return local != MPI_SUCCESS ? local : rc;
}

/* ---- entry points --------------------------------------------------------- */

/* The kernels read and write device memory only: a call with one buffer
 * on the host goes through the host path (copies take either kind). */
static int both_on_device(const void *a, const void *b)
{
    const gcmpi_gpu_table *g = gcmpi_device_gpu();
    return g && g->is_device_pointer(a) && g->is_device_pointer(b);
}

static int dev_status(size_t r) { return gc_is_error(r) ? MPI_ERR_OTHER : MPI_SUCCESS; }

static int dev_finite(const float *g, size_t n, int *yes)
{
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    const size_t r = gpu ? gpu->all_finite(gc, g, n) : GCMPI_GC_ERROR(GC_ERR_GENERIC);
    *yes = r == 1;
    return dev_status(r);
}

static int run_kernels(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                       size_t count, gcmpi_ef_slot *ef);

/* ---- hier (coll_hier.c's): the node's phases on one page-locked host
 * copy of the vector (its window or MPI need host memory). By chunks,
 * only this rank's chunk of the node's sum goes to the device, where the
 * column's call between nodes encodes and decodes it with the kernels and
 * the chunk's slice of the device residual; in the leader style the
 * leader's node sum goes, for the leaders' call with the whole slot ------- */

static int stage_copy(void *dst, const void *src, size_t bytes)
{
    return gcmpi_device_copy(dst, src, bytes, 1);
}

static float *node_host_vector(size_t count)
{
    return gcmpi_device_host_buffer(GCMPI_DEV_HOST_NODE, count * sizeof(float));
}

/* The pipeline's payloads: page-locked, where the kernels write them. */
static uint8_t *pinned_payloads(gcmpi_coll_ctx *ctx, size_t bytes)
{
    (void)ctx;
    return gcmpi_device_host_buffer(GCMPI_DEV_HOST_PAYLOAD, bytes);
}

static const gcmpi_hier_vec_ops device_vectors = {
    .stage = stage_copy,
    .host_vector = node_host_vector,
    .run = run_kernels,
    .payloads = pinned_payloads,
    .encode = dev_encode,
    .decode_all = dev_decode_all,
};

/* 1 when hier on count floats runs here: kernels for the algorithm
 * between nodes (or none: one node). */
static int hier_has_kernels(gcmpi_coll_ctx *ctx, size_t count)
{
    gcmpi_algo inner;
    if (!gcmpi_device_gpu() || !gcmpi_hier_between(ctx, count, &inner)) return 0;
    return inner == GCMPI_ALGO_PASS || (gcmpi_coll_supports(ctx->cfg->codec, inner) &&
                                        gcmpi_device_has_kernels(ctx->cfg, inner));
}

/* The kernels' collective (allgather, rsag, sparse_rd, native or hier) on
 * device buffers; finite: the caller knows in holds no inf or NaN. An
 * encode of the whole vector (allgather, sparse_rd) sends such a gradient
 * without touching the residual (gcmpi_gpu_encode's own check); rsag
 * encodes it chunk by chunk, where a chunk's check would spare only its
 * own slice, and native makes its levels after the residual is added: for
 * those two, as gcmpi_coll_run does on the host, one check of the whole
 * vector first, and a gradient with inf or NaN goes without its residual
 * (its finite chunks included). */
static int run_kernels_as(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                          size_t count, gcmpi_ef_slot *ef, int finite)
{
    if (algo == GCMPI_ALGO_HIER)
        return gcmpi_hier_with(ctx, &device_vectors, in, out, count, ef);
    if (algo == GCMPI_ALGO_SPARSE_RD)
        return gcmpi_allreduce_sparse_rd_with(ctx, &device_sets, in, out, count, ef);
    if (algo == GCMPI_ALGO_ALLGATHER) return allreduce_allgather(ctx, in, out, count, ef);
    gcmpi_ef_slot bare;
    int local = MPI_SUCCESS;
    if (!finite) {
        const double t0 = PMPI_Wtime();
        int yes = 0;
        local = dev_finite(in, count, &yes);
        ctx->stats->encode_s += PMPI_Wtime() - t0;
        if (local == MPI_SUCCESS && !yes) ctx->stats->nonfinite_in = 1;
        /* A failed check still takes part, leaving the residual alone. */
        if (local != MPI_SUCCESS || !yes) ef = gcmpi_ef_without_state(ef, &bare);
    }
    const int rc = algo == GCMPI_ALGO_NATIVE ? gcmpi_device_allreduce_native(ctx, in, out, count, ef)
                                             : allreduce_rsag(ctx, in, out, count, ef);
    return local != MPI_SUCCESS ? local : rc;
}

static int run_kernels(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                       size_t count, gcmpi_ef_slot *ef)
{
    return run_kernels_as(ctx, algo, in, out, count, ef, 0);
}

static int run_kernels_finite(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in, float *out,
                              size_t count, gcmpi_ef_slot *ef)
{
    return run_kernels_as(ctx, algo, in, out, count, ef, 1);
}

/* ---- GCMPI_MOMENTUM on device vectors: coll_momentum.c's agreement,
 * with u, m and the sums in device memory and the GPU's kernels
 * (bit for bit the host's loops, gpu_momentum.cu) --------------------------- */

static int dev_accumulate(float *u, const float *g, size_t n, float beta)
{
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    return dev_status(gpu ? gpu->momentum_accumulate(gc, u, g, n, beta)
                          : GCMPI_GC_ERROR(GC_ERR_GENERIC));
}

static int dev_unfold(float *s, float *m, size_t n, float beta)
{
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    return dev_status(gpu ? gpu->momentum_unfold(gc, s, m, n, beta)
                          : GCMPI_GC_ERROR(GC_ERR_GENERIC));
}

static int dev_zero(float *x, size_t n)
{
    gcmpi_gpu_ctx *gc;
    const gcmpi_gpu_table *gpu = gpu_of(&gc);
    return dev_status(gpu ? gpu->zero(gc, x, n * sizeof(float)) : GCMPI_GC_ERROR(GC_ERR_GENERIC));
}

/* The donor's device vector to every rank through page-locked memory (the
 * MPI library need not be CUDA-aware), in the pieces every rank uses. */
static int dev_bcast(float *x, size_t n, int root, size_t piece, MPI_Comm comm)
{
    int me;
    PMPI_Comm_rank(comm, &me);
    float *host = x ? gcmpi_device_host_buffer(GCMPI_DEV_HOST_OUT, n * sizeof(float)) : NULL;
    if (x && !host) return MPI_ERR_NO_MEM;
    int rc = me == root && x ? gcmpi_device_copy(host, x, n * sizeof(float), 1) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS) rc = gcmpi_coll_momentum_bcast_host(host, n, root, piece, comm);
    if (rc == MPI_SUCCESS && me != root && x) rc = gcmpi_device_copy(x, host, n * sizeof(float), 1);
    return rc;
}

static const gcmpi_momentum_ops device_ops = {
    .finite = dev_finite,
    .accumulate = dev_accumulate,
    .run = run_kernels,
    .run_finite = run_kernels_finite,
    .unfold = dev_unfold,
    .zero = dev_zero,
    .bcast = dev_bcast,
};

/* Passthrough on device buffers: MPI sums the floats, staged through
 * page-locked host memory unless the MPI is CUDA-aware (device_stage.h
 * counts which). */
static int dev_passthrough(gcmpi_coll_ctx *ctx, const float *in, float *out, size_t count)
{
    gcmpi_stage s;
    int rc = gcmpi_stage_allreduce(&s, in == out ? MPI_IN_PLACE : (const void *)in, out,
                                   (int64_t)count, MPI_FLOAT);
    if (rc != MPI_SUCCESS) return rc;
    float *recv = s.recv;
    const float *send = s.send == MPI_IN_PLACE ? recv : s.send;
    rc = gcmpi_coll_dispatch(ctx, GCMPI_ALGO_PASS, send, recv, count, NULL);
    return gcmpi_stage_finish(&s, rc);
}

int gcmpi_device_allreduce_compressed(gcmpi_coll_ctx *ctx, gcmpi_algo algo, const float *in,
                                      float *out, size_t count, gcmpi_ef_slot *ef)
{
    if (algo == GCMPI_ALGO_AUTO || algo == GCMPI_ALGO_RULE)
        algo = gcmpi_coll_choose(ctx->cfg, count, ctx->size);
    if (count == 0) return gcmpi_allreduce_compressed(ctx, algo, in, out, count, ef);
    gcmpi_device_stats *ds = gcmpi_device_stats_mut();
    const int kernels = algo == GCMPI_ALGO_HIER ? hier_has_kernels(ctx, count)
                                                : gcmpi_device_has_kernels(ctx->cfg, algo);
    const int on_gpu = algo != GCMPI_ALGO_PASS && gcmpi_coll_supports(ctx->cfg->codec, algo) &&
                       kernels && both_on_device(in, out);
    const int passthrough = algo == GCMPI_ALGO_PASS;
    gcmpi_call_stats scratch_stats;
    gcmpi_call_stats *caller_stats = ctx->stats;
    if (!ctx->stats) ctx->stats = &scratch_stats;
    if (on_gpu || passthrough) { /* the host algorithm resets its own */
        memset(ctx->stats, 0, sizeof *ctx->stats);
        ctx->stats->bytes_offered = (uint64_t)count * sizeof(float);
    }
    /* auto's trial times the whole call, as on the host from a barrier:
     * passthrough's staging and a host algorithm's copies included, which
     * the host paths inside (told by ctx->on_device) leave to this one. */
    const int on_device = ctx->on_device;
    ctx->on_device = 1;
    int rc = gcmpi_auto_in_trial(ctx, count) ? PMPI_Barrier(ctx->comm) : MPI_SUCCESS;
    const double t0 = PMPI_Wtime();
    if (rc == MPI_SUCCESS && passthrough) {
        rc = dev_passthrough(ctx, in, out, count);
    } else if (rc == MPI_SUCCESS && !on_gpu) {
        ds->compressed_host++;
        rc = allreduce_on_host(ctx, algo, in, out, count, ef);
    } else if (rc == MPI_SUCCESS) {
        ds->compressed++;
        if (gcmpi_coll_momentum_floats(ctx->cfg, count))
            rc = gcmpi_coll_momentum_with(ctx, &device_ops, algo, in, out, count, ef);
        else
            rc = run_kernels(ctx, algo, in, out, count, ef);
        ds->device_s += ctx->stats->encode_s + ctx->stats->decode_s;
    }
    if (rc == MPI_SUCCESS) gcmpi_auto_note(ctx, count, algo, PMPI_Wtime() - t0);
    ctx->on_device = on_device;
    ctx->stats = caller_stats;
    return rc;
}

/* Passthrough of an MPI_Allgather on device buffers: the floats, staged
 * through page-locked host memory unless the MPI is CUDA-aware. */
static int dev_gather_passthrough(gcmpi_coll_ctx *ctx, const float *block, float *out,
                                  size_t count)
{
    gcmpi_stage s;
    const int in_place = block == out + (size_t)ctx->rank * count;
    int rc = gcmpi_stage_allgather(&s, in_place ? MPI_IN_PLACE : (const void *)block,
                                   (int64_t)count, MPI_FLOAT, out, (int64_t)count, MPI_FLOAT,
                                   ctx->comm);
    if (rc != MPI_SUCCESS) return rc;
    float *recv = s.recv;
    const float *send = s.send == MPI_IN_PLACE ? recv + (size_t)ctx->rank * count : s.send;
    rc = gcmpi_allgather_compressed(ctx, GCMPI_ALGO_PASS, send, recv, count, NULL);
    return gcmpi_stage_finish(&s, rc);
}

/* Encoded and decoded by the kernels; the payloads travel as way says. */
static int allgather_kernels(gcmpi_coll_ctx *ctx, gcmpi_algo way, const float *block, float *out,
                             size_t count, gcmpi_ef_slot *ef)
{
    gcmpi_device_stats *ds = gcmpi_device_stats_mut();
    ds->compressed++;
    gcmpi_call_stats scratch_stats;
    gcmpi_call_stats *caller_stats = ctx->stats;
    if (!ctx->stats) ctx->stats = &scratch_stats;
    memset(ctx->stats, 0, sizeof *ctx->stats);
    ctx->stats->bytes_offered = (uint64_t)count * sizeof(float);
    gcmpi_gathered got;
    int rc = gcmpi_coll_gather_by_node(ctx, way);
    if (rc == MPI_SUCCESS) rc = encode_and_gather(ctx, block, count, ef, &got);
    ctx->gather_nodes = NULL;
    size_t d = 0;
    double t0 = PMPI_Wtime();
    for (int r = 0; rc == MPI_SUCCESS && r < ctx->size && !gc_is_error(d); r++)
        d = dev_zero_and_decode(&got, &r, 1, out + (size_t)r * count, count);
    ctx->stats->decode_s += PMPI_Wtime() - t0;
    if (rc == MPI_SUCCESS) rc = gcmpi_coll_mpi_error(gc_error_code(d));
    ds->device_s += ctx->stats->encode_s + ctx->stats->decode_s;
    ctx->stats = caller_stats;
    return rc;
}

int gcmpi_device_allgather_compressed(gcmpi_coll_ctx *ctx, gcmpi_algo way, const float *block,
                                      float *out, size_t count, gcmpi_ef_slot *ef)
{
    int rc = MPI_SUCCESS;
    if (way == GCMPI_ALGO_AUTO || way == GCMPI_ALGO_RULE) way = gcmpi_gather_pick(ctx, count, &rc);
    if (rc != MPI_SUCCESS) return rc;
    if (count == 0) return gcmpi_allgather_compressed(ctx, way, block, out, count, ef);
    /* auto's trial times the whole call (staging and host copies
     * included), which the host path inside leaves to this one. */
    const int on_device = ctx->on_device;
    ctx->on_device = 1;
    if (gcmpi_gather_in_trial(ctx, count)) rc = PMPI_Barrier(ctx->comm);
    const double t0 = PMPI_Wtime();
    if (rc == MPI_SUCCESS && way == GCMPI_ALGO_PASS) {
        rc = dev_gather_passthrough(ctx, block, out, count);
    } else if (rc == MPI_SUCCESS && (!gcmpi_device_has_kernels(ctx->cfg, GCMPI_ALGO_ALLGATHER) ||
                                     !both_on_device(block, out))) {
        gcmpi_device_stats_mut()->compressed_host++;
        rc = allgather_on_host(ctx, way, block, out, count, ef);
    } else if (rc == MPI_SUCCESS) {
        rc = allgather_kernels(ctx, way, block, out, count, ef);
    }
    if (rc == MPI_SUCCESS) gcmpi_gather_note(ctx, count, way, PMPI_Wtime() - t0);
    ctx->on_device = on_device;
    return rc;
}
