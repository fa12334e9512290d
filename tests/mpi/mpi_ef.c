/* mpi_ef.c — error feedback: the same gradient sent T times through the
 * same buffer. With residuals kept, what one call leaves out is sent by a
 * later one, so the running mean of the results approaches the true sum
 * with error ~ 1/T:
 *
 *   mpi_ef converges   error of the mean after 64 calls < error after 4 / 8
 *   mpi_ef stalls      (GCMPI_EF=0, deterministic codec) the mean does not
 *                      improve: error after 64 calls > error after 4 / 2
 */
#include "mpi_check.h"

enum { N = 20000, T = 64 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_library_preloaded();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int converges = argc < 2 || strcmp(argv[1], "stalls") != 0;

    float *g = alloc_floats(N), *buf = alloc_floats(N), *mean = alloc_floats(N);
    double *exact = alloc_doubles(N), *acc = alloc_doubles(N);
    fill_gradient(g, N, rank, 5);
    reference_sum(exact, N, size, 5, fill_gradient);

    double err4 = 0, err64 = 0;
    for (int t = 1; t <= T; t++) {
        memcpy(buf, g, sizeof(float) * N);
        MPI_Allreduce(MPI_IN_PLACE, buf, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++) acc[i] += buf[i];
        if (t == 4 || t == T) {
            for (int i = 0; i < N; i++) mean[i] = (float)(acc[i] / t);
            double err = relative_error(exact, mean, N);
            if (rank == 0) printf("error of the mean after %2d calls: %.4g\n", t, err);
            if (t == 4) err4 = err; else err64 = err;
        }
    }
    if (converges)
        CHECK(err64 < err4 / 8, "mean does not converge like 1/T: %g after 4, %g after %d",
              err4, err64, T);
    else
        CHECK(err64 > err4 / 2, "mean improved without error feedback: %g after 4, %g after %d",
              err4, err64, T);
    free(g);
    free(buf);
    free(mean);
    free(exact);
    free(acc);
    return check_finish("ef");
}
