/* mpi_hello.c — the smallest program: MPI_Init, float sums, MPI_Finalize.
 * The runner checks what the library prints around it (configuration
 * errors, warnings, mismatches between ranks, the report) and the exit
 * status.
 *
 *   mpi_hello            one sum of a fixed buffer
 *   mpi_hello regroup    eight sums, each at another place of a fusion
 *                        buffer (as Horovod's timing-based fusion does): no
 *                        call finds the residual of an earlier one, which
 *                        the report must flag */
#include "mpi_check.h"

enum { N = 4096, CALLS = 8 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int regroup = argc > 1 && strcmp(argv[1], "regroup") == 0;
    float *fusion = alloc_floats((size_t)N * CALLS);
    double *exact = alloc_doubles(N);
    for (int call = 0; call < (regroup ? CALLS : 1); call++) {
        float *x = fusion + (size_t)call * N;
        fill_integers(x, N, rank, 1);
        reference_sum(exact, N, size, 1, fill_integers);
        MPI_Allreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        /* Whatever the codec, the sum of integers must be recognisable. */
        double err = relative_error(exact, x, N);
        CHECK(err < 0.5, "sum far from exact: %g", err);
    }
    free(fusion);
    free(exact);
    return check_finish("hello");
}
