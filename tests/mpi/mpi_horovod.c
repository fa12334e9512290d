/* mpi_horovod.c — the call pattern of Horovod: MPI is initialised and used
 * only by a background thread (MPI_THREAD_MULTIPLE) on a duplicate of
 * MPI_COMM_WORLD; every step it agrees on ready tensors with small integer
 * allreduces (MPI_BAND, MPI_BOR, MPI_MAX), then reduces groups of gradients
 * in place in ONE reused fusion buffer with a different count per group,
 * and broadcasts parameters.
 *
 * Checks: coordination results are exact, gradients are within bound of
 * the exact sums and identical on all ranks, broadcasts arrive intact. The
 * runner checks the statistics: one residual per (buffer, count) key,
 * reused on every later step. */
#include <pthread.h>

#include "mpi_check.h"

enum { STEPS = 12, GROUPS = 3, MAX_COUNT = 9000, FLAGS = 8, PARAMS = 256 };
static const int group_count[GROUPS] = {6000, 2500, 9000};
static double bound = 0.05;

static int step_flags(int rank, int step, int i)
{
    return (int)(0x9E3779B1u * (unsigned)(rank * 131 + step * 17 + i)) & 0x7fffffff;
}

static void coordinate(MPI_Comm comm, int rank, int size, int step)
{
    int mine[FLAGS], got[FLAGS];
    for (int i = 0; i < FLAGS; i++) mine[i] = step_flags(rank, step, i);
    const MPI_Op ops[3] = {MPI_BAND, MPI_BOR, MPI_MAX};
    for (int k = 0; k < 3; k++) {
        MPI_Allreduce(mine, got, FLAGS, MPI_INT, ops[k], comm);
        for (int i = 0; i < FLAGS; i++) {
            int want = step_flags(0, step, i);
            for (int r = 1; r < size; r++) {
                int v = step_flags(r, step, i);
                want = k == 0 ? (want & v) : k == 1 ? (want | v) : (v > want ? v : want);
            }
            CHECK(got[i] == want, "step %d: coordination op %d flag %d is %d, expected %d", step,
                  k, i, got[i], want);
        }
    }
}

static void *background(void *arg)
{
    (void)arg;
    int provided = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    check_library_preloaded();
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    int rank, size;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    float *fusion = alloc_floats(MAX_COUNT), *params = alloc_floats(PARAMS);
    double *exact = alloc_doubles(MAX_COUNT);
    for (int step = 0; step < STEPS; step++) {
        coordinate(comm, rank, size, step);
        for (int g = 0; g < GROUPS; g++) {
            size_t n = (size_t)group_count[g];
            uint64_t seed = (uint64_t)(step * GROUPS + g + 1);
            fill_gradient(fusion, n, rank, seed);
            reference_sum(exact, n, size, seed, fill_gradient);
            MPI_Allreduce(MPI_IN_PLACE, fusion, (int)n, MPI_FLOAT, MPI_SUM, comm);
            double err = relative_error(exact, fusion, n);
            CHECK(err <= bound, "step %d group %d: error %g > bound %g", step, g, err, bound);
            CHECK(same_on_all_ranks(fusion, n * sizeof *fusion, comm),
                  "step %d group %d: ranks differ", step, g);
        }
        for (int i = 0; i < PARAMS; i++) params[i] = rank == 0 ? (float)(step * 1000 + i) : -1.0f;
        MPI_Bcast(params, PARAMS, MPI_FLOAT, 0, comm);
        for (int i = 0; i < PARAMS; i++)
            CHECK(params[i] == (float)(step * 1000 + i), "step %d: broadcast damaged", step);
    }
    free(fusion);
    free(params);
    free(exact);
    MPI_Comm_free(&comm);
    int *status = malloc(sizeof *status);
    if (!status) abort();
    *status = check_finish("horovod");
    return status;
}

int main(int argc, char **argv)
{
    bound = arg_double(argc, argv, 1, bound);
    pthread_t t;
    if (pthread_create(&t, NULL, background, NULL) != 0) return 2;
    void *status = NULL;
    pthread_join(t, &status);
    int rc = status ? *(int *)status : 2;
    free(status);
    return rc;
}
