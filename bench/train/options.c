/* options.c — parsing and validation; every message names the option, the
 * value given and what is allowed. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"

void options_usage(FILE *out)
{
    fputs(
        "usage: mpirun -np P gcmpi-train [options]\n"
        "Data-parallel training of a 784-512-256-10 MLP on Fashion-MNIST; gradients are\n"
        "averaged with MPI_Allreduce(MPI_IN_PLACE, ..., MPI_FLOAT, MPI_SUM) every step.\n"
        "  --epochs N         passes over the training set (default 10)\n"
        "  --batch N          minibatch per rank (default 64)\n"
        "  --lr X             learning rate (default 0.05)\n"
        "  --momentum X       SGD momentum in [0, 1) (default 0.9)\n"
        "  --weight-decay X   L2 penalty on weight matrices (default 0)\n"
        "  --seed N           initialisation and shuffling seed (default 1)\n"
        "  --subset N         train on the first N examples only\n"
        "  --test-subset N    evaluate on the first N test examples only\n"
        "  --per-tensor       one allreduce per tensor instead of one fused buffer\n"
        "  --dump-grads PATH  write rank 0's local gradient of the first step (the fused\n"
        "                     buffer before the allreduce) as raw little-endian float32\n"
        "  --json PATH        write the configuration and per-epoch records as JSON\n"
        "  --data DIR         dataset directory (default " DATASET_DEFAULT_DIR ")\n"
        "  --quiet            print only the RESULT line\n"
        "Last line: RESULT accuracy=A loss=L seconds=S epochs=E ranks=P\n",
        out);
}

typedef enum { VALUE_OK, VALUE_NOT_A_NUMBER, VALUE_OUT_OF_RANGE } value_check;

static value_check parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') return VALUE_NOT_A_NUMBER;
    if (errno || v < lo || v > hi) return VALUE_OUT_OF_RANGE;
    *out = v;
    return VALUE_OK;
}

/* Accepts [lo, hi], or [lo, hi) with hi_open, or (lo, hi] with lo_open. */
static value_check parse_double(const char *s, double lo, bool lo_open, double hi, bool hi_open,
                                double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || isnan(v)) return VALUE_NOT_A_NUMBER;
    if (errno || !isfinite(v) || v < lo || v > hi || (lo_open && v == lo) || (hi_open && v == hi))
        return VALUE_OUT_OF_RANGE;
    *out = v;
    return VALUE_OK;
}

enum {
    OPT_EPOCHS = 256, OPT_BATCH, OPT_LR, OPT_MOMENTUM, OPT_WD, OPT_SEED, OPT_SUBSET,
    OPT_TEST_SUBSET, OPT_PER_TENSOR, OPT_DUMP, OPT_JSON, OPT_DATA, OPT_QUIET, OPT_HELP,
};

options_result options_parse(int argc, char **argv, train_options *o, char *err, size_t errlen)
{
    *o = (train_options){
        .epochs = 10, .batch = 64, .lr = 0.05, .momentum = 0.9, .weight_decay = 0.0,
        .seed = 1, .data_dir = DATASET_DEFAULT_DIR,
    };
    static const struct option longopts[] = {
        { "epochs", required_argument, NULL, OPT_EPOCHS },
        { "batch", required_argument, NULL, OPT_BATCH },
        { "lr", required_argument, NULL, OPT_LR },
        { "momentum", required_argument, NULL, OPT_MOMENTUM },
        { "weight-decay", required_argument, NULL, OPT_WD },
        { "seed", required_argument, NULL, OPT_SEED },
        { "subset", required_argument, NULL, OPT_SUBSET },
        { "test-subset", required_argument, NULL, OPT_TEST_SUBSET },
        { "per-tensor", no_argument, NULL, OPT_PER_TENSOR },
        { "dump-grads", required_argument, NULL, OPT_DUMP },
        { "json", required_argument, NULL, OPT_JSON },
        { "data", required_argument, NULL, OPT_DATA },
        { "quiet", no_argument, NULL, OPT_QUIET },
        { "help", no_argument, NULL, OPT_HELP },
        { NULL, 0, NULL, 0 },
    };
    opterr = 0; /* every rank would print getopt's messages; rank 0 prints ours */
    optind = 1;
    int c;
    long long iv;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        const char *name = NULL, *allowed = NULL;
        value_check check = VALUE_OK;
        switch (c) {
        case OPT_EPOCHS:
            name = "epochs", allowed = "an integer from 1 to 100000";
            if (!(check = parse_long(optarg, 1, 100000, &iv))) o->epochs = (int)iv;
            break;
        case OPT_BATCH:
            name = "batch", allowed = "an integer from 1 to 65536";
            if (!(check = parse_long(optarg, 1, 65536, &iv))) o->batch = (int)iv;
            break;
        case OPT_LR:
            name = "lr", allowed = "a number in (0, 100]";
            check = parse_double(optarg, 0.0, true, 100.0, false, &o->lr);
            break;
        case OPT_MOMENTUM:
            name = "momentum", allowed = "a number in [0, 1)";
            check = parse_double(optarg, 0.0, false, 1.0, true, &o->momentum);
            break;
        case OPT_WD:
            name = "weight-decay", allowed = "a number in [0, 1]";
            check = parse_double(optarg, 0.0, false, 1.0, false, &o->weight_decay);
            break;
        case OPT_SEED:
            name = "seed", allowed = "a non-negative integer";
            if (!(check = parse_long(optarg, 0, INT64_MAX, &iv))) o->seed = (uint64_t)iv;
            break;
        case OPT_SUBSET:
            name = "subset", allowed = "an integer from 1 to 1000000000";
            if (!(check = parse_long(optarg, 1, 1000000000, &iv))) o->subset = (size_t)iv;
            break;
        case OPT_TEST_SUBSET:
            name = "test-subset", allowed = "an integer from 1 to 1000000000";
            if (!(check = parse_long(optarg, 1, 1000000000, &iv))) o->test_subset = (size_t)iv;
            break;
        case OPT_PER_TENSOR: o->per_tensor = true; break;
        case OPT_DUMP: o->dump_grads = optarg; break;
        case OPT_JSON: o->json = optarg; break;
        case OPT_DATA: o->data_dir = optarg; break;
        case OPT_QUIET: o->quiet = true; break;
        case OPT_HELP: return OPTIONS_HELP;
        case ':':
            snprintf(err, errlen, "%s needs a value; see --help", argv[optind - 1]);
            return OPTIONS_ERROR;
        default:
            snprintf(err, errlen, "unknown option %s; see --help", argv[optind - 1]);
            return OPTIONS_ERROR;
        }
        if (check != VALUE_OK) {
            snprintf(err, errlen, "--%s=%s is %s; expected %s", name, optarg,
                     check == VALUE_NOT_A_NUMBER ? "not a number" : "out of range", allowed);
            return OPTIONS_ERROR;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'; see --help", argv[optind]);
        return OPTIONS_ERROR;
    }
    return OPTIONS_RUN;
}
