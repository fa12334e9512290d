/* comm_state.h — per-communicator state, kept on the communicator as an MPI
 * attribute (STYLE.md "Per-communicator state lives on the communicator"):
 * found in O(1), attached on first use, freed with the communicator. A
 * duplicate of a communicator starts without state (NULL copy function). */
#ifndef GCMPI_COMM_STATE_H
#define GCMPI_COMM_STATE_H

#include <mpi.h>
#include <stdint.h>

#include "coll.h"
#include "ef_store.h"
#include "eligible.h"
#include "stats.h"
#include "timeline.h"
#include "warmup.h"

typedef struct gcmpi_comm_state {
    MPI_Comm user;              /* the communicator the state is attached to  */
    MPI_Comm dup;               /* private duplicate for the library's own
                                   traffic; MPI_COMM_NULL when not compressed */
    gcmpi_skip skip;            /* cached communicator eligibility            */
    int rank, size;
    uint64_t calls;             /* compressed calls so far: the seed counter,
                                   equal on all ranks                         */
    gc_workspace *ws;           /* codec workspace                            */
    gcmpi_scratch scratch;      /* buffers: the algorithms' slots, then the
                                   shim's (GCMPI_SCRATCH_SHIM_FIRST on)       */
    gcmpi_coll_cache cache;     /* node split and auto's model, built on
                                   first use                                  */
    gcmpi_ef_store *ef;         /* per-buffer state: residuals and the
                                   adaptive layer's blocks; NULL when neither
                                   is needed                                  */
    int residuals;              /* error feedback on: GCMPI_EF=1 and a lossy
                                   codec                                      */
    int allgather_residuals;    /* the same for MPI_Allgather:
                                   GCMPI_ALLGATHER_EF=1 and a lossy
                                   GCMPI_ALLGATHER_CODEC                      */
    gcmpi_stats stats[GCMPI_KIND_COUNT];
    gcmpi_warmup warmup;        /* GCMPI_WARMUP: allreduce calls per size     */
    gcmpi_timeline *timeline;   /* allreduce calls; rank 0 of MPI_COMM_WORLD
                                   only, created on the first call            */
    char label[GCMPI_LABEL_LEN];
    struct gcmpi_comm_state *prev, *next; /* live states, for MPI_Finalize    */
} gcmpi_comm_state;

/* At MPI_Init: creates the keyval (so attaching never races on it).
 * cfg must outlive every state. Returns an MPI error code. */
int gcmpi_comm_state_setup(const gcmpi_config *cfg);

/* The state of comm, attached on first use. Collective on first use of a
 * compressed communicator (it is duplicated); the first use is the same
 * call on every rank because eligibility is. NULL when MPI refuses the
 * handle (PMPI_* then reports the error to the program). Stops the job
 * when memory runs out: ranks must not part ways. */
gcmpi_comm_state *gcmpi_comm_state_of(MPI_Comm comm);

/* Whether comm's float sums would be compressed (GCMPI_ELIGIBLE) or why
 * not, from its state when attached, else worked out with local calls
 * only (size, intercommunicator, congruence to MPI_COMM_WORLD, name): for
 * calls that must not attach a state, whose first use is collective. */
gcmpi_skip gcmpi_comm_decision(MPI_Comm comm);

/* Before PMPI_Finalize: frees every state still attached (MPI_COMM_WORLD,
 * MPI_COMM_SELF, communicators the program did not free), moving their
 * statistics into the process table, then frees the keyval. */
void gcmpi_comm_state_teardown(void);

#endif /* GCMPI_COMM_STATE_H */
