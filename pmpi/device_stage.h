/* device_stage.h — uncompressed calls on device buffers (DESIGN.md "GPU"):
 * an MPI library that is not CUDA-aware cannot take a device pointer, so
 * the shim copies device buffers into page-locked host buffers, calls
 * PMPI_* on those, and copies the result back. With a CUDA-aware MPI
 * (GCMPI_CUDA_AWARE, device.h) the pointers are handed over untouched.
 *
 * Staged: MPI_Allreduce and MPI_Allgather (the calls the shim compresses),
 * and MPI_Bcast and MPI_Allgatherv, which data-parallel jobs call on the
 * same tensors (a broadcast of the initial weights; Horovod's allgather);
 * each with its MPI-4 _c form. Every other MPI function still receives the
 * application's device pointers as they are.
 *
 * Use: begin, call PMPI_* with the pointers in the stage, end. Callers hold
 * the device lock. */
#ifndef GCMPI_DEVICE_STAGE_H
#define GCMPI_DEVICE_STAGE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gcmpi_stage {
    const void *send;      /* what PMPI_* gets */
    void *recv;
    void *user_recv;       /* the application's receive buffer   */
    char *host_recv;       /* its host copy (NULL: not staged)   */
    ptrdiff_t recv_lb;     /* true lower bound of the receive span */
    size_t recv_span;      /* bytes copied back                  */
} gcmpi_stage;

/* Fills stage for MPI_Allreduce(sendbuf, recvbuf, count, type). Returns
 * MPI_SUCCESS, or an MPI error code (the call must then not be made). */
int gcmpi_stage_allreduce(gcmpi_stage *s, const void *sendbuf, void *recvbuf, int64_t count,
                          MPI_Datatype type);
/* MPI_Allgather: sendcount of sendtype, recvcount of recvtype per rank of comm. */
int gcmpi_stage_allgather(gcmpi_stage *s, const void *sendbuf, int64_t sendcount,
                          MPI_Datatype sendtype, void *recvbuf, int64_t recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm);
/* MPI_Bcast: buf is the root's send buffer and every other rank's receive
 * buffer (intercommunicators: root is MPI_ROOT, MPI_PROC_NULL or a rank of
 * the remote group). PMPI_Bcast gets s->recv. */
int gcmpi_stage_bcast(gcmpi_stage *s, void *buf, int64_t count, MPI_Datatype type, int root,
                      MPI_Comm comm);
/* MPI_Allgatherv: the blocks received lie in elements [lo, hi) of recvbuf
 * (recvtype extents), total elements in all (hi - lo when they tile it). */
int gcmpi_stage_allgatherv(gcmpi_stage *s, const void *sendbuf, int64_t sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int64_t lo, int64_t hi,
                           int64_t total, MPI_Datatype recvtype);
/* The size of the group whose blocks a rank of comm receives (the remote
 * group of an intercommunicator). */
int gcmpi_stage_peers(MPI_Comm comm, int *n);
/* After PMPI_* returned rc: copies the result back (when rc is
 * MPI_SUCCESS) and returns rc or the copy's error. */
int gcmpi_stage_finish(gcmpi_stage *s, int rc);

#endif /* GCMPI_DEVICE_STAGE_H */
