/* timeline.h — what the compressed allreduces of one communicator chose and
 * cost, call after call (the report's "timelines"). Kept by rank 0 of
 * MPI_COMM_WORLD only, for every codec, adaptive or not, in a fixed number
 * of points: each point aggregates `stride` consecutive calls, and when the
 * points are used up adjacent pairs merge and the stride doubles, so a run
 * of any length costs the same memory and keeps its whole history at an
 * even resolution. */
#ifndef GCMPI_TIMELINE_H
#define GCMPI_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "stats.h"

#define GCMPI_TL_POINTS 256

/* Quantities of one call; NaN where one does not apply. */
typedef enum gcmpi_tl_field {
    GCMPI_TL_RATIO = 0,   /* ratio used (adapted or configured)           */
    GCMPI_TL_RANK,        /* powersgd rank used                           */
    GCMPI_TL_BITS,        /* topkq: mean bit width                        */
    GCMPI_TL_LAMBDA,      /* gct                                          */
    GCMPI_TL_ENTROPY,     /* edgc: last window's agreed mean entropy       */
    GCMPI_TL_VARIANCE,    /* variance: fast / slow                         */
    GCMPI_TL_EG_BITS,     /* eg: code bits per element                     */
    GCMPI_TL_FL_BITS,     /* eg: fixed-length bits per element             */
    GCMPI_TL_SENT_BITS,   /* 8 * bytes sent / count                        */
    GCMPI_TL_COMM_MS,     /* communication milliseconds                    */
    GCMPI_TL_FIELDS
} gcmpi_tl_field;

/* JSON names of the fields, in gcmpi_tl_field order. */
extern const char *const gcmpi_tl_field_names[GCMPI_TL_FIELDS];

typedef struct gcmpi_tl_point {
    uint64_t first_call;              /* communicator's compressed call number */
    uint64_t calls;
    double sum[GCMPI_TL_FIELDS];      /* over the calls where the field applies */
    uint32_t n[GCMPI_TL_FIELDS];
} gcmpi_tl_point;

typedef struct gcmpi_timeline {
    char comm[GCMPI_LABEL_LEN];
    char codec[24];
    uint64_t stride;                  /* calls per point                       */
    size_t len;                       /* points in use                         */
    double first[GCMPI_TL_FIELDS];    /* the first call's values               */
    double last[GCMPI_TL_FIELDS];     /* the last call's values                */
    gcmpi_tl_point points[GCMPI_TL_POINTS];
    struct gcmpi_timeline *next;      /* process list of retired timelines     */
} gcmpi_timeline;

/* NULL when out of memory. */
gcmpi_timeline *gcmpi_timeline_create(const char *comm, const char *codec);
void gcmpi_timeline_add(gcmpi_timeline *t, uint64_t call, const double v[GCMPI_TL_FIELDS]);
/* The mean of field f over point p's calls, NaN when it never applied. */
double gcmpi_tl_point_mean(const gcmpi_tl_point *p, gcmpi_tl_field f);

/* Moves t (may be NULL) to the process list when its communicator is freed.
 * Thread-safe. Timelines without calls are freed. */
void gcmpi_timeline_retire(gcmpi_timeline *t);
/* The process list, oldest first; valid until gcmpi_timeline_clear. */
const gcmpi_timeline *gcmpi_timeline_list(void);
void gcmpi_timeline_clear(void);

#endif /* GCMPI_TIMELINE_H */
