/* report.h — the statistics report at MPI_Finalize (DESIGN.md "Statistics",
 * STYLE.md "Reports"). */
#ifndef GCMPI_REPORT_H
#define GCMPI_REPORT_H

#include <mpi.h>
#include <stdio.h>

#include "gcmpi_config.h"

/* Collective over comm (the library's duplicate of MPI_COMM_WORLD), after
 * every communicator state has been freed: rank 0 merges the statistics
 * tables of all ranks, prints a table to stderr when GCMPI_STATS includes
 * stderr, writes JSON when GCMPI_STATS names a file (temporary name, then
 * rename), and always prints warnings (error feedback not taking effect,
 * evictions, failed calls). Rank 0's GCMPI_STATS decides. */
void gcmpi_report_finalize(const gcmpi_config *cfg, MPI_Comm comm);

/* s as a JSON string, quoted and escaped (the report's parts share it). */
void gcmpi_json_string(FILE *f, const char *s);

#endif /* GCMPI_REPORT_H */
