/* report.h — what rank 0 tells the user: one line per epoch, the RESULT line
 * scripts parse, and the same records as JSON. */
#ifndef TRAIN_REPORT_H
#define TRAIN_REPORT_H

#include <stdio.h>

#include "options.h"

typedef struct {
    int epoch;
    double loss;          /* mean training loss of the epoch over all ranks */
    double accuracy;      /* on the (subset of the) test set after the epoch */
    double seconds;       /* wall time of the epoch: training and evaluation */
    double total_seconds; /* since training started */
} epoch_record;

typedef struct {
    const train_options *options;
    int ranks;
    size_t train_examples;
    size_t test_examples;
    size_t steps_per_epoch;
} run_info;

void report_header(FILE *out, const run_info *run);
void report_epoch(FILE *out, const epoch_record *e);
/* RESULT accuracy=0.8812 loss=0.3321 seconds=41.2 epochs=10 ranks=4 */
void report_result(FILE *out, const epoch_record *last, int ranks);

/* Writes the run and the epochs so far (n may be 0) to path (through a temporary file
 * renamed into place). Returns 0, or -1 with the reason in err. */
int report_json(const char *path, const run_info *run, const epoch_record *epochs, int n,
                char *err, size_t errlen);

#endif
