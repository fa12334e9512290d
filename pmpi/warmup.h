/* warmup.h — DGC's warm-up for sparse codecs (GCMPI_WARMUP=N): over the
 * first N compressed allreduce calls of each size on a communicator the
 * kept fraction decays exponentially from GCMPI_WARMUP_START (0.25, DGC's
 * first warm-up density) to the configured ratio:
 *     ratio_t = start * (R / start)^(t / N),  t = 0, 1, ..., N - 1.
 * The call position t is counted per (communicator, element count): all
 * ranks make the same eligible calls in the same order, so they agree on t
 * without exchanging anything (a buffer's address may differ by rank). */
#ifndef GCMPI_WARMUP_H
#define GCMPI_WARMUP_H

#include <stddef.h>
#include <stdint.h>

#define GCMPI_WARMUP_START 0.25
/* Distinct sizes counted per communicator; a size seen after the table is
 * full gets no warm-up (the same on every rank). */
#define GCMPI_WARMUP_SIZES 256

typedef struct gcmpi_warmup {
    struct {
        uint64_t count; /* elements; 0 = free */
        uint64_t calls; /* calls of this size so far, saturating at N */
    } slot[GCMPI_WARMUP_SIZES];
} gcmpi_warmup;

/* The ratio the call of count elements uses under warm-up (>= ratio), and
 * counts the call. n = GCMPI_WARMUP (0: off, returns ratio). */
double gcmpi_warmup_ratio(gcmpi_warmup *w, uint64_t count, double ratio, uint64_t n);

#endif /* GCMPI_WARMUP_H */
