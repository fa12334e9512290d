/* device_stage.c — staging of uncompressed calls on device buffers through
 * the page-locked pools of device.c (device_stage.h). A datatype's data
 * lies within [true_lb, true_lb + (n-1)*extent + true_extent) of the
 * buffer: that span is copied whole, so derived datatypes with holes work
 * (the receive span is fetched first then, so the holes keep their bytes). */
#include "device_stage.h"

#include "device.h"

#include <string.h>

typedef struct span { ptrdiff_t lb; size_t bytes; int contiguous; } span;

static int span_of(MPI_Datatype type, int64_t n, span *out)
{
    MPI_Aint lb, extent, tlb, textent;
    int size = 0;
    int rc = PMPI_Type_get_extent(type, &lb, &extent);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_get_true_extent(type, &tlb, &textent);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_size(type, &size);
    if (rc != MPI_SUCCESS) return rc;
    if (n < 0 || extent < 0 || textent < 0) return MPI_ERR_COUNT;
    out->lb = (ptrdiff_t)tlb;
    out->bytes = n ? (size_t)(n - 1) * (size_t)extent + (size_t)textent : 0;
    out->contiguous = (size_t)size * (size_t)n == out->bytes;
    return MPI_SUCCESS;
}

static int is_device(const void *p)
{
    const gcmpi_gpu_table *g = gcmpi_device_gpu();
    return g && p && p != MPI_IN_PLACE && g->is_device_pointer(p);
}

/* A host copy of buf's span (copied in when fetch) in pool slot; returns
 * the pointer PMPI_* gets (the host copy, shifted back by lb), or NULL. */
static void *host_copy(unsigned slot, const void *buf, const span *sp, int fetch, int *rc)
{
    char *h = gcmpi_device_host_buffer(slot, sp->bytes);
    if (!h) {
        *rc = MPI_ERR_NO_MEM;
        return NULL;
    }
    if (fetch && sp->bytes) {
        *rc = gcmpi_device_copy(h, (const char *)buf + sp->lb, sp->bytes, 1);
        if (*rc != MPI_SUCCESS) return NULL;
    }
    return h - sp->lb;
}

static int stage(gcmpi_stage *s, const void *sendbuf, const span *ssp, void *recvbuf,
                 const span *rsp)
{
    memset(s, 0, sizeof *s);
    s->send = sendbuf;
    s->recv = recvbuf;
    s->user_recv = recvbuf;
    gcmpi_device_stats *ds = gcmpi_device_stats_mut();
    if (gcmpi_device_cuda_aware()) {
        ds->passed++;
        return MPI_SUCCESS;
    }
    ds->staged++;
    int rc = MPI_SUCCESS;
    if (is_device(sendbuf)) {
        s->send = host_copy(GCMPI_DEV_HOST_IN, sendbuf, ssp, 1, &rc);
        if (!s->send) return rc;
    }
    if (is_device(recvbuf)) {
        const int fetch = sendbuf == MPI_IN_PLACE || !rsp->contiguous;
        s->recv = host_copy(GCMPI_DEV_HOST_OUT, recvbuf, rsp, fetch, &rc);
        if (!s->recv) return rc;
        s->host_recv = (char *)s->recv + rsp->lb;
        s->recv_lb = rsp->lb;
        s->recv_span = rsp->bytes;
    }
    return MPI_SUCCESS;
}

int gcmpi_stage_allreduce(gcmpi_stage *s, const void *sendbuf, void *recvbuf, int64_t count,
                          MPI_Datatype type)
{
    span sp;
    int rc = span_of(type, count, &sp);
    if (rc != MPI_SUCCESS) return rc;
    return stage(s, sendbuf, &sp, recvbuf, &sp);
}

int gcmpi_stage_allgather(gcmpi_stage *s, const void *sendbuf, int64_t sendcount,
                          MPI_Datatype sendtype, void *recvbuf, int64_t recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm)
{
    int size = 0;
    span ssp = {0, 0, 1}, rsp;
    int rc = PMPI_Comm_size(comm, &size);
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE) rc = span_of(sendtype, sendcount, &ssp);
    if (rc == MPI_SUCCESS) rc = span_of(recvtype, recvcount * size, &rsp);
    if (rc != MPI_SUCCESS) return rc;
    return stage(s, sendbuf, &ssp, recvbuf, &rsp);
}

int gcmpi_stage_peers(MPI_Comm comm, int *n)
{
    int inter = 0;
    int rc = PMPI_Comm_test_inter(comm, &inter);
    if (rc != MPI_SUCCESS) return rc;
    return inter ? PMPI_Comm_remote_size(comm, n) : PMPI_Comm_size(comm, n);
}

int gcmpi_stage_bcast(gcmpi_stage *s, void *buf, int64_t count, MPI_Datatype type, int root,
                      MPI_Comm comm)
{
    memset(s, 0, sizeof *s);
    s->send = s->recv = s->user_recv = buf;
    span sp;
    int inter = 0, rank = 0;
    int rc = span_of(type, count, &sp);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_test_inter(comm, &inter);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_rank(comm, &rank);
    if (rc != MPI_SUCCESS) return rc;
    gcmpi_device_stats *ds = gcmpi_device_stats_mut();
    if (gcmpi_device_cuda_aware()) {
        ds->passed++;
        return MPI_SUCCESS;
    }
    ds->staged++;
    if (!is_device(buf)) return MPI_SUCCESS;
    const int sends = inter ? root == MPI_ROOT : rank == root;
    const int receives = inter ? root >= 0 : rank != root;
    /* A receiver's type with holes: the span is fetched so they keep their bytes. */
    s->recv = host_copy(GCMPI_DEV_HOST_OUT, buf, &sp, sends || (receives && !sp.contiguous), &rc);
    if (!s->recv) return rc;
    s->send = s->recv;
    if (receives) {
        s->host_recv = (char *)s->recv + sp.lb;
        s->recv_lb = sp.lb;
        s->recv_span = sp.bytes;
    }
    return MPI_SUCCESS;
}

int gcmpi_stage_allgatherv(gcmpi_stage *s, const void *sendbuf, int64_t sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int64_t lo, int64_t hi,
                           int64_t total, MPI_Datatype recvtype)
{
    span ssp = {0, 0, 1}, rsp = {0, 0, 1};
    int rc = MPI_SUCCESS;
    if (sendbuf != MPI_IN_PLACE) rc = span_of(sendtype, sendcount, &ssp);
    if (rc == MPI_SUCCESS && hi > lo) {
        MPI_Aint lb, extent;
        rc = span_of(recvtype, hi - lo, &rsp);
        if (rc == MPI_SUCCESS) rc = PMPI_Type_get_extent(recvtype, &lb, &extent);
        if (rc != MPI_SUCCESS) return rc;
        rsp.lb += (ptrdiff_t)(lo * extent);
        /* Gaps between the blocks keep their bytes, as holes do. */
        rsp.contiguous = rsp.contiguous && total == hi - lo;
    }
    if (rc != MPI_SUCCESS) return rc;
    return stage(s, sendbuf, &ssp, recvbuf, &rsp);
}

int gcmpi_stage_finish(gcmpi_stage *s, int rc)
{
    if (rc != MPI_SUCCESS || !s->host_recv || s->recv_span == 0) return rc;
    return gcmpi_device_copy((char *)s->user_recv + s->recv_lb, s->host_recv, s->recv_span, 1);
}
