/* train.c — gcmpi-train: data-parallel SGD on Fashion-MNIST, the workload
 * libgcmpi is measured on. Every rank holds the whole model, trains on its
 * own shard of each global minibatch, and averages gradients with
 * MPI_Allreduce, as Horovod or PyTorch DDP would. */
#include <errno.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TRAIN_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "dataset.h"
#include "exchange.h"
#include "mlp.h"
#include "options.h"
#include "report.h"
#include "rng.h"
#include "sgd.h"

/* ERR_LEN: room for a dataset path of PATH_MAX bytes and the message. */
enum { EVAL_CHUNK = 256, ERR_LEN = 4352 };

typedef struct {
    int rank, size;
    train_options opt;
    dataset train, test;
    size_t test_begin, test_end; /* this rank's slice of the test set */
    size_t steps;                /* global minibatches per epoch */
    float *params, *velocity, *grads;
    uint32_t *perm;              /* this epoch's order of the training set */
    uint32_t *eval_idx;
    uint8_t *batch_labels;
    mlp_work work;
    FILE *dump;                  /* rank 0, --dump-grads, until the first step */
    run_info info;
} trainer;

/* Every rank decides `failed` on its own; all learn whether any failed, and
 * only the lowest failing rank prints, so the user sees one message. */
static bool any_failed(const trainer *t, bool failed, const char *msg)
{
    int first = failed ? t->rank : t->size;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == t->rank) fprintf(stderr, "gcmpi-train: %s\n", msg);
    return first < t->size;
}

static int setup(trainer *t)
{
    char err[ERR_LEN] = "";
    bool failed = dataset_load(t->opt.data_dir, "train", t->opt.subset, &t->train, err,
                               sizeof err) != 0;
    if (!failed) {
        failed = dataset_load(t->opt.data_dir, "t10k", t->opt.test_subset, &t->test, err,
                              sizeof err) != 0;
    }
    if (any_failed(t, failed, err)) return -1;

    size_t global_batch = (size_t)t->opt.batch * (size_t)t->size;
    t->steps = t->train.n / global_batch;
    if (t->steps == 0) {
        snprintf(err, sizeof err,
                 "%zu training examples do not fill one global minibatch of %zu "
                 "(--batch %d x %d ranks)", t->train.n, global_batch, t->opt.batch, t->size);
        any_failed(t, true, err);
        return -1;
    }
    t->test_begin = t->test.n * (size_t)t->rank / (size_t)t->size;
    t->test_end = t->test.n * (size_t)(t->rank + 1) / (size_t)t->size;

    size_t rows = (size_t)t->opt.batch > EVAL_CHUNK ? (size_t)t->opt.batch : EVAL_CHUNK;
    t->params = malloc(MLP_PARAMS * sizeof(float));
    t->velocity = calloc(MLP_PARAMS, sizeof(float));
    t->grads = malloc(MLP_PARAMS * sizeof(float));
    t->perm = malloc(t->train.n * sizeof(uint32_t));
    t->eval_idx = malloc(EVAL_CHUNK * sizeof(uint32_t));
    t->batch_labels = malloc(rows);
    failed = !t->params || !t->velocity || !t->grads || !t->perm || !t->eval_idx ||
             !t->batch_labels || mlp_work_init(&t->work, rows) != 0;
    snprintf(err, sizeof err, "out of memory");
    if (any_failed(t, failed, err)) return -1;

    /* Output files are opened now, so a bad path stops the run before it
     * trains rather than after. */
    failed = false;
    if (t->opt.dump_grads && t->rank == 0) {
        t->dump = fopen(t->opt.dump_grads, "wb");
        failed = !t->dump;
        if (failed)
            snprintf(err, sizeof err, "cannot write --dump-grads %s: %s", t->opt.dump_grads,
                     strerror(errno));
    }
    t->info = (run_info){
        .options = &t->opt, .ranks = t->size, .train_examples = t->train.n,
        .test_examples = t->test.n, .steps_per_epoch = t->steps,
    };
    if (!failed && t->opt.json && t->rank == 0)
        failed = report_json(t->opt.json, &t->info, NULL, 0, err, sizeof err) != 0;
    if (any_failed(t, failed, err)) return -1;

    mlp_init(t->params, t->opt.seed);
    return 0;
}

static void teardown(trainer *t)
{
    if (t->dump) fclose(t->dump);
    mlp_work_free(&t->work);
    free(t->params);
    free(t->velocity);
    free(t->grads);
    free(t->perm);
    free(t->eval_idx);
    free(t->batch_labels);
    dataset_free(&t->train);
    dataset_free(&t->test);
}

static void fail_hard(const char *what)
{
    fprintf(stderr, "gcmpi-train: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Raw little-endian float32, whatever the host byte order. */
static void dump_gradients(trainer *t)
{
    unsigned char le[4 * 1024];
    for (size_t i = 0; i < MLP_PARAMS; i += 1024) {
        size_t n = MLP_PARAMS - i < 1024 ? MLP_PARAMS - i : 1024;
        for (size_t j = 0; j < n; j++) {
            uint32_t u;
            memcpy(&u, &t->grads[i + j], 4);
            for (int b = 0; b < 4; b++) le[4 * j + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        if (fwrite(le, 4, n, t->dump) != n) fail_hard("writing --dump-grads failed");
    }
    int rc = fclose(t->dump);
    t->dump = NULL;
    if (rc != 0) fail_hard("writing --dump-grads failed");
}

/* One epoch of training; returns the summed loss of this rank's examples. */
static double train_epoch(trainer *t, int epoch)
{
    rng r = rng_stream(t->opt.seed, RNG_PURPOSE_EPOCH_BASE + (uint64_t)epoch);
    rng_permutation(&r, t->perm, t->train.n);
    const sgd_options sgd = {
        .lr = (float)t->opt.lr, .momentum = (float)t->opt.momentum,
        .weight_decay = (float)t->opt.weight_decay,
    };
    const size_t B = (size_t)t->opt.batch;
    double loss = 0.0;
    for (size_t s = 0; s < t->steps; s++) {
        /* Global minibatch s is perm[s*B*P, (s+1)*B*P); rank k takes its k-th B. */
        const uint32_t *idx = t->perm + (s * (size_t)t->size + (size_t)t->rank) * B;
        for (size_t i = 0; i < B; i++) t->batch_labels[i] = t->train.labels[idx[i]];
        mlp_load_batch(&t->work, t->train.images, idx, B);
        loss += mlp_forward(t->params, &t->work, B, t->batch_labels);
        mlp_backward(t->params, &t->work, B, t->batch_labels, t->grads);
        if (t->dump) dump_gradients(t);
        if (exchange_gradients(t->grads, t->opt.per_tensor, MPI_COMM_WORLD) != MPI_SUCCESS)
            fail_hard("MPI_Allreduce of the gradients failed");
        sgd_step(&sgd, t->params, t->velocity, t->grads);
    }
    return loss;
}

/* Correct predictions on this rank's slice of the test set. */
static long long evaluate(trainer *t)
{
    long long correct = 0;
    for (size_t begin = t->test_begin; begin < t->test_end; begin += EVAL_CHUNK) {
        size_t rows = t->test_end - begin < EVAL_CHUNK ? t->test_end - begin : EVAL_CHUNK;
        for (size_t i = 0; i < rows; i++) t->eval_idx[i] = (uint32_t)(begin + i);
        mlp_load_batch(&t->work, t->test.images, t->eval_idx, rows);
        correct += (long long)mlp_count_correct(t->params, &t->work, rows, t->test.labels + begin);
    }
    return correct;
}

static int run(trainer *t)
{
    const bool talk = t->rank == 0;
    if (talk && !t->opt.quiet) report_header(stdout, &t->info);
    epoch_record *records = talk ? calloc((size_t)t->opt.epochs, sizeof *records) : NULL;
    if (talk && !records) fail_hard("out of memory");
    int status = 0;

    MPI_Barrier(MPI_COMM_WORLD); /* start the clocks together */
    double start = MPI_Wtime();
    for (int epoch = 1; epoch <= t->opt.epochs; epoch++) {
        double epoch_start = MPI_Wtime();
        double sums[2] = { train_epoch(t, epoch), (double)(t->steps * (size_t)t->opt.batch) };
        long long counts[2] = { evaluate(t), (long long)(t->test_end - t->test_begin) };
        if (exchange_sum_doubles(sums, 2, MPI_COMM_WORLD) != MPI_SUCCESS ||
            exchange_sum_counts(counts, 2, MPI_COMM_WORLD) != MPI_SUCCESS)
            fail_hard("MPI_Allreduce of the epoch statistics failed");
        double now = MPI_Wtime();
        if (!talk) continue;
        epoch_record *e = &records[epoch - 1];
        *e = (epoch_record){
            .epoch = epoch, .loss = sums[0] / sums[1],
            .accuracy = (double)counts[0] / (double)counts[1],
            .seconds = now - epoch_start, .total_seconds = now - start,
        };
        if (!t->opt.quiet) report_epoch(stdout, e);
        char err[ERR_LEN];
        if (t->opt.json && status == 0 &&
            report_json(t->opt.json, &t->info, records, epoch, err, sizeof err) != 0) {
            fprintf(stderr, "gcmpi-train: %s\n", err);
            status = 1;
        }
    }
    if (talk) report_result(stdout, &records[t->opt.epochs - 1], t->size);
    free(records);
    return status;
}

int main(int argc, char **argv)
{
#ifdef TRAIN_HAVE_OPENBLAS
    /* One BLAS thread per rank: ranks already fill the cores, and a single
     * thread keeps sgemm's summation order, hence the run, deterministic. */
    openblas_set_num_threads(1);
#endif
    MPI_Init(&argc, &argv);
    trainer t = { 0 };
    MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t.size);

    char err[ERR_LEN];
    int status = 0;
    switch (options_parse(argc, argv, &t.opt, err, sizeof err)) {
    case OPTIONS_HELP:
        if (t.rank == 0) options_usage(stdout);
        break;
    case OPTIONS_ERROR:
        /* Every rank parsed the same arguments and failed the same way. */
        if (t.rank == 0) fprintf(stderr, "gcmpi-train: %s\n", err);
        status = 2;
        break;
    case OPTIONS_RUN:
        status = setup(&t) == 0 ? run(&t) : 1;
        break;
    }
    teardown(&t);
    MPI_Finalize();
    return status;
}
