/* options.h — gcmpi-train's command line. */
#ifndef TRAIN_OPTIONS_H
#define TRAIN_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int epochs;
    int batch;           /* per rank */
    double lr;
    double momentum;
    double weight_decay;
    uint64_t seed;
    size_t subset;       /* first N training examples; 0 = all */
    size_t test_subset;  /* first N test examples; 0 = all */
    bool per_tensor;     /* one allreduce per tensor instead of one fused */
    const char *dump_grads;
    const char *json;
    const char *data_dir;
    bool quiet;
} train_options;

typedef enum { OPTIONS_RUN, OPTIONS_HELP, OPTIONS_ERROR } options_result;

/* Fills o from argv; on OPTIONS_ERROR err says which option and why. */
options_result options_parse(int argc, char **argv, train_options *o, char *err, size_t errlen);

void options_usage(FILE *out);

#endif
