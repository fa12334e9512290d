/* eligible.h — which intercepted calls are compressed (DESIGN.md
 * "Eligibility"). Pure functions of the configuration and of what every rank
 * of the communicator shares, so all ranks take the same decision. */
#ifndef GCMPI_ELIGIBLE_H
#define GCMPI_ELIGIBLE_H

#include <mpi.h>
#include <stdint.h>

#include "gcmpi_config.h"

/* GCMPI_ELIGIBLE, or the first reason a call is handed to PMPI_* untouched. */
typedef enum gcmpi_skip {
    GCMPI_ELIGIBLE = 0,
    GCMPI_SKIP_DISABLED,   /* GCMPI_DISABLE=1                                  */
    GCMPI_SKIP_NO_CODEC,   /* codec none, no zstd stage, GCMPI_ALGO=auto       */
    GCMPI_SKIP_DATATYPE,   /* not MPI_FLOAT or a 4-byte MPI_REAL (derived float
                              types included)                                   */
    GCMPI_SKIP_OP,         /* not MPI_SUM                                      */
    GCMPI_SKIP_COUNT,      /* negative count: PMPI_* reports the error         */
    GCMPI_SKIP_SMALL,      /* fewer bytes than GCMPI_MIN_BYTES                 */
    GCMPI_SKIP_COMM,       /* intercommunicator, size < 2, or not selected by
                              GCMPI_COMM                                        */
    GCMPI_SKIP_LARGE,      /* more bytes than GCMPI_MAX_BYTES                  */
    GCMPI_SKIP_EXACT_COUNT, /* count listed in GCMPI_EXACT_COUNTS              */
    GCMPI_SKIP_NOT_IN_PLACE, /* GCMPI_IN_PLACE_ONLY=1 and sendbuf is not
                              MPI_IN_PLACE (allreduce only)                     */
    GCMPI_SKIP_COMM_EXCLUDED, /* named by a !NAME item of GCMPI_COMM           */
    GCMPI_SKIP_KINDS       /* the number of values above                       */
} gcmpi_skip;

/* What the shim learns once about a communicator (local queries only). */
typedef struct gcmpi_comm_facts {
    int inter;            /* PMPI_Comm_test_inter                              */
    int size;             /* PMPI_Comm_size (local group for intercomms)      */
    int world_relation;   /* PMPI_Comm_compare with MPI_COMM_WORLD:
                             MPI_IDENT, MPI_CONGRUENT, MPI_SIMILAR, MPI_UNEQUAL */
    const char *name;     /* PMPI_Comm_get_name, "" when unnamed               */
} gcmpi_comm_facts;

/* Fortran's MPI_REAL is compressed like MPI_FLOAT when it is 4 bytes
 * (MPICH's Fortran bindings reach the C entry points with it). The shim
 * tells at MPI_Init; until then only MPI_FLOAT counts. */
void gcmpi_eligible_accept_as_float(MPI_Datatype datatype);

/* Whether the configuration compresses anything at all (allreduce with
 * GCMPI_CODEC or allgather with GCMPI_ALLGATHER_CODEC). */
int gcmpi_compression_on(const gcmpi_config *cfg);

/* MPI_Allreduce(_c), from the call's own arguments. The checks run in the
 * order of the gcmpi_skip values a call can get: datatype, op, disabled,
 * codec none, count, GCMPI_MIN_BYTES, GCMPI_MAX_BYTES, GCMPI_EXACT_COUNTS,
 * GCMPI_IN_PLACE_ONLY. MPI requires MPI_IN_PLACE at all ranks or at none
 * (MPI-4.0 6.9.6; the same for allgather, 6.7), so the in-place rule is
 * the same decision everywhere. */
gcmpi_skip gcmpi_eligible_allreduce(const gcmpi_config *cfg, const void *sendbuf,
                                    MPI_Datatype datatype, MPI_Op op, int64_t count);

/* MPI_Allgather(_c): float blocks of one type and count on both sides, or
 * MPI_IN_PLACE (send count and type are then ignored, as MPI says), with
 * GCMPI_ALLGATHER_CODEC. The size and count rules apply to one rank's
 * block; GCMPI_IN_PLACE_ONLY does not apply (it selects gradient buckets). */
gcmpi_skip gcmpi_eligible_allgather(const gcmpi_config *cfg, const void *sendbuf,
                                    int64_t sendcount, MPI_Datatype sendtype,
                                    int64_t recvcount, MPI_Datatype recvtype);

/* The communicator part, decided once per communicator and cached. */
gcmpi_skip gcmpi_eligible_comm(const gcmpi_config *cfg, const gcmpi_comm_facts *facts);

/* "datatype is not MPI_FLOAT", for verbose output. */
const char *gcmpi_skip_reason(gcmpi_skip skip);

/* "min_bytes": the key of a pass-through reason in the statistics
 * (passed_by), for the reasons counted per communicator
 * (gcmpi_skip_counted); NULL for the others. */
const char *gcmpi_skip_key(gcmpi_skip skip);

/* The reasons counted per communicator, in the order a call is checked
 * (the call's own reasons first, then its communicator's): the order of
 * the report and of README. */
#define GCMPI_PASSED_REASONS 7
extern const gcmpi_skip gcmpi_passed_reasons[GCMPI_PASSED_REASONS];

/* Whether a call passed through for this reason is a float sum or gather
 * the library could have compressed, counted per communicator in
 * passed_by; the others (datatype, op, negative count) are counted once
 * per process, and nothing is counted while compression is off. */
int gcmpi_skip_counted(gcmpi_skip skip);

#endif /* GCMPI_ELIGIBLE_H */
