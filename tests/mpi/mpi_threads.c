/* mpi_threads.c — MPI_THREAD_MULTIPLE: two threads run compressed
 * allreduces at the same time, each on its own duplicate of
 * MPI_COMM_WORLD with its own buffers. Both stay within bound and
 * identical on all ranks. Run with a GCMPI_EF_MAX_BYTES that holds three of
 * the four residuals, so that the threads evict each other's while calls
 * are in flight and the hot keys are still reused (the runner checks both
 * in the statistics). */
#include <pthread.h>

#include "mpi_check.h"

enum { N = 20000, CALLS = 40, THREADS = 2 };
static double bound = 0.05;

typedef struct worker {
    MPI_Comm comm;
    int id, rank, size;
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    float *buf[2] = {alloc_floats(N), alloc_floats(N)};
    double *exact = alloc_doubles(N);
    for (int call = 0; call < CALLS; call++) {
        float *x = buf[call % 4 == 3]; /* a hot key and a cold one per thread */
        uint64_t seed = (uint64_t)(w->id * 1000 + call);
        fill_gradient(x, N, w->rank, seed);
        reference_sum(exact, N, w->size, seed, fill_gradient);
        MPI_Allreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, w->comm);
        double err = relative_error(exact, x, N);
        CHECK(err <= bound, "thread %d call %d: error %g > bound %g", w->id, call, err, bound);
        CHECK(same_on_all_ranks(x, N * sizeof *x, w->comm), "thread %d call %d: ranks differ",
              w->id, call);
    }
    free(buf[0]);
    free(buf[1]);
    free(exact);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    check_library_preloaded();
    bound = arg_double(argc, argv, 1, bound);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].id = i;
        MPI_Comm_dup(MPI_COMM_WORLD, &w[i].comm);
        MPI_Comm_rank(w[i].comm, &w[i].rank);
        MPI_Comm_size(w[i].comm, &w[i].size);
    }
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, run, &w[i]) != 0) abort();
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) MPI_Comm_free(&w[i].comm);
    return check_finish("threads");
}
