/* stats.h — what the library did, per communicator, collective and codec
 * (DESIGN.md "Statistics"). A communicator's statistics live in its state
 * while it exists and move into the process table when it is freed; the
 * report at MPI_Finalize reads the table. */
#ifndef GCMPI_STATS_H
#define GCMPI_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"
#include "ef_store.h"
#include "eligible.h"

typedef struct gcmpi_stats {
    uint64_t calls_compressed;
    uint64_t calls_passed;      /* float sums on this communicator left to PMPI_* */
    uint64_t passed_by[GCMPI_SKIP_KINDS]; /* calls_passed by reason (gcmpi_skip_key) */
    uint64_t calls_failed;      /* compressed calls that returned an MPI error   */
    uint64_t calls_nonfinite;   /* compressed calls whose input on this rank held
                                   inf or NaN (sent without error feedback)     */
    uint64_t calls_node_payloads; /* hier: compressed calls whose node gathered
                                     the columns' payloads (not the floats)   */
    uint64_t bytes_offered;     /* count * sizeof(float) of compressed calls     */
    uint64_t bytes_sent;        /* what the algorithms handed to PMPI_*          */
    double encode_s, decode_s, comm_s;
    gcmpi_ef_counts ef;
    uint64_t verify_calls;      /* GCMPI_VERIFY: calls compared with PMPI_*      */
    double verify_err_sum, verify_err_max; /* ||exact - compressed|| / ||exact|| */
    double eg_code_bits, eg_fl_bits;       /* eg codec: summed bits               */
    uint64_t eg_elements;
} gcmpi_stats;

void gcmpi_stats_add_call(gcmpi_stats *s, const gcmpi_call_stats *call, int failed);
/* A float sum or gather on this communicator passed through, and why. */
void gcmpi_stats_add_passed(gcmpi_stats *s, gcmpi_skip why);
void gcmpi_stats_add_verify(gcmpi_stats *s, double rel_err);
/* Counters add up; maxima take the larger. */
void gcmpi_stats_merge(gcmpi_stats *into, const gcmpi_stats *from);
int gcmpi_stats_empty(const gcmpi_stats *s);

/* One row of the process table; plain bytes, gathered as MPI_BYTE. */
#define GCMPI_LABEL_LEN 64
typedef struct gcmpi_stats_row {
    char comm[GCMPI_LABEL_LEN];   /* "MPI_COMM_WORLD", "dup of MPI_COMM_WORLD", a
                                     name, or "size 4" */
    char codec[24];
    int32_t comm_size;
    int32_t kind;                 /* gcmpi_kind */
    int32_t ranks;                /* ranks whose rows were merged into this one */
    int32_t pad;
    gcmpi_stats s;
} gcmpi_stats_row;

/* Adds the statistics of a communicator being freed to the process table,
 * merged with rows of the same label, size, kind and codec. Thread-safe.
 * Returns 0, or -1 when out of memory (the row is then lost). */
int gcmpi_stats_retire(const char *comm, int comm_size, gcmpi_kind kind,
                       const char *codec, const gcmpi_stats *s);

/* The process table; valid until the next retire or clear. */
const gcmpi_stats_row *gcmpi_stats_table(size_t *n_rows);
void gcmpi_stats_clear(void);

/* Calls to the intercepted collectives that were not float sums (integer
 * and coordination traffic): counted per process, without a lock. */
void gcmpi_stats_count_other(void);
uint64_t gcmpi_stats_other(void);

/* MPI_Iallreduce and MPI_Iallgather calls the blocking forms would have
 * compressed, passed through uncompressed (bytes: one rank's vector or
 * block): counted per process, without a lock. */
void gcmpi_stats_count_nonblocking(uint64_t bytes);
void gcmpi_stats_nonblocking(uint64_t *calls, uint64_t *bytes);

const char *gcmpi_kind_name(gcmpi_kind kind);

#endif /* GCMPI_STATS_H */
