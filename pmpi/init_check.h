/* init_check.h — what MPI_Init checks beyond the values themselves: that
 * the statistics file can be written, and, when the ranks' settings
 * differ, which ones and how (README "Configuration"). */
#ifndef GCMPI_INIT_CHECK_H
#define GCMPI_INIT_CHECK_H

#include <mpi.h>
#include <stddef.h>

#include "gcmpi_config.h"

/* 0 when the GCMPI_STATS file of cfg (if any) can be written where
 * MPI_Finalize will write it: a temporary file beside it is created and
 * removed. Otherwise -1 and msg holds one sentence naming the variable, the
 * path and the reason. */
int gcmpi_stats_path_check(const gcmpi_config *cfg, char *msg, size_t len);

/* Collective over comm, when the ranks' configuration hashes differ: rank 0
 * gathers every rank's settings and prints each variable that differs with
 * the value of each group of ranks, e.g.
 *   libgcmpi:   GCMPI_SEED=1 on rank 0; GCMPI_SEED=42 on ranks 1-3
 * Other ranks print nothing; the caller stops the job. */
void gcmpi_explain_mismatch(const gcmpi_config *cfg, MPI_Comm comm);

#endif /* GCMPI_INIT_CHECK_H */
