/* auto_report.h — what GCMPI_ALGO=auto chose, for the report: per
 * communicator and call size, the algorithm (for MPI_Allgather the way
 * its payloads travel), its predicted time and the time its calls took
 * (the communicator's rank 0 keeps them). */
#ifndef GCMPI_AUTO_REPORT_H
#define GCMPI_AUTO_REPORT_H

#include <stdio.h>

#include "coll.h"

/* Copies the choices of cache (its model's, for MPI_Allreduce, and its
 * MPI_Allgather trials'; either may be NULL) into the process list when
 * the communicator labelled comm is freed. Thread-safe. */
void gcmpi_auto_report_retire(const char *comm, const gcmpi_coll_cache *cache);
/* One line per (communicator, size) on f. */
void gcmpi_auto_report_print(FILE *f);
/* The JSON array's elements (without brackets). */
void gcmpi_auto_report_json(FILE *f);
/* The agreed figures of each communicator's model as link and codec
 * figures in gcmpi-scale-model's names (JSON array elements). */
void gcmpi_auto_report_models_json(FILE *f);
void gcmpi_auto_report_clear(void);

#endif /* GCMPI_AUTO_REPORT_H */
